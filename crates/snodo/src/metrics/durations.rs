//! The request-duration histogram: fixed buckets, counted without a lock or a locked
//! instruction.
//!
//! `prometheus_client`'s histogram takes a mutex on every observation (and finds the
//! bucket by a linear scan of `f64` bounds); this one is counted by each thread into
//! its own shard (see [`shards`](super::shards)), the bucket found by arithmetic on the
//! duration's nanoseconds (metrics are on every request).

use std::sync::Arc;
use std::time::Duration;

use prometheus_client::encoding::{EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::{MetricType, TypedMetric};

use super::shards::{Buckets, Sharded};

/// The first bucket's upper bound, in nanoseconds (100 µs).
const FIRST_NS: u64 = 100_000;

/// Buckets with a finite bound: 100 µs, doubling, up to 100 µs × 2¹⁶ ≈ 6.55 s.
const FINITE: usize = 17;

/// Durations of requests, in buckets 100 µs × 2ᵏ (k = 0‥16) and `+Inf`; the sum in
/// nanoseconds (exact; 584 years before it wraps).
///
/// Cheap to clone: clones count into the same buckets.
#[derive(Clone, Debug, Default)]
pub(crate) struct Durations {
    shards: Sharded<Buckets<{ FINITE + 1 }>>,
}

/// The calling thread's shard of a [`Durations`].
#[derive(Debug)]
pub(crate) struct DurationsShard(Arc<Buckets<{ FINITE + 1 }>>);

/// The bucket of a duration of `ns` nanoseconds: the first whose bound is at least `ns`.
fn bucket(ns: u64) -> usize {
    if ns <= FIRST_NS {
        return 0;
    }
    // ns ∈ (FIRST·2ᵏ⁻¹, FIRST·2ᵏ] ⇔ ⌊(ns−1)/FIRST⌋ ∈ [2ᵏ⁻¹, 2ᵏ) ⇔ that quotient has k bits.
    let k = (u64::BITS - ((ns - 1) / FIRST_NS).leading_zeros()) as usize;
    k.min(FINITE)
}

/// The upper bound of finite bucket `k`, in seconds.
fn bound_secs(k: usize) -> f64 {
    (FIRST_NS << k) as f64 / 1e9
}

impl Durations {
    /// The calling thread's shard: only this thread may observe into it.
    pub(crate) fn mine(&self) -> DurationsShard {
        DurationsShard(self.shards.mine())
    }
}

impl DurationsShard {
    /// Counts one request that took `elapsed`.
    pub(crate) fn observe(&self, elapsed: Duration) {
        let ns = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        self.0.observe_own(bucket(ns), ns);
    }
}

impl TypedMetric for Durations {
    const TYPE: MetricType = MetricType::Histogram;
}

impl EncodeMetric for Durations {
    fn encode(&self, mut encoder: MetricEncoder<'_>) -> Result<(), std::fmt::Error> {
        let (counted, sum_ns) = self.shards.totals();
        let mut buckets = [(0.0, 0); FINITE + 1];
        let mut count = 0;
        for (k, (slot, n)) in buckets.iter_mut().zip(counted).enumerate() {
            count += n;
            let bound = if k < FINITE {
                bound_secs(k)
            } else {
                f64::INFINITY
            };
            *slot = (bound, n);
        }
        let sum = sum_ns as f64 / 1e9;
        encoder.encode_histogram::<NoLabelSet>(sum, count, &buckets, None)
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each bound belongs to its own bucket, a nanosecond more to the next one.
    #[test]
    fn buckets_are_upper_inclusive_powers_of_two() {
        assert_eq!(bucket(0), 0);
        assert_eq!(bucket(FIRST_NS), 0);
        assert_eq!(bucket(FIRST_NS + 1), 1);
        for k in 1..FINITE {
            let bound = FIRST_NS << k;
            assert_eq!(bucket(bound), k, "bound of bucket {k}");
            assert_eq!(bucket(bound + 1), k + 1, "just past bucket {k}");
            assert_eq!(bucket((FIRST_NS << (k - 1)) + 1), k, "just into bucket {k}");
        }
        assert_eq!(bucket(u64::MAX), FINITE, "+Inf");
    }

    /// The exposition: cumulative buckets ending in `+Inf`, the count and the sum.
    #[test]
    fn encodes_cumulative_buckets_count_and_sum() {
        let d = Durations::default();
        let mine = d.mine();
        mine.observe(Duration::from_micros(50));
        mine.observe(Duration::from_micros(150));
        mine.observe(Duration::from_secs(60));
        let mut registry = prometheus_client::registry::Registry::default();
        registry.register("d", "durations", d.clone());
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry)
            .unwrap_or_else(|e| panic!("{e}"));
        for line in [
            "d_bucket{le=\"0.0001\"} 1",
            "d_bucket{le=\"0.0002\"} 2",
            "d_bucket{le=\"6.5536\"} 2",
            "d_bucket{le=\"+Inf\"} 3",
            "d_count 3",
            "d_sum 60.0002",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
        }
    }
}
