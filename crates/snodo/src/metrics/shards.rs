//! Per-thread shards of a request series: the thread that answers a request counts it
//! into cells that only it writes, so counting is a plain load and store per cell
//! instead of a locked read-modify-write (an atomic add costs ~20 cycles even
//! uncontended, and a request moves three: its counter and two histogram cells; issue
//! 19: metrics are on every request). A scrape sums the shards.
//!
//! A thread finds its shard once per label set (the thread's series cache keeps it), by
//! its [`ThreadId`], which is never reused: a shard is written by one thread only, for
//! the life of the process, and a thread that ended leaves its counts in the sum.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::ThreadId;

use prometheus_client::encoding::{EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::{MetricType, TypedMetric};

/// Each counting thread's shard, by thread.
type ByThread<C> = Vec<(ThreadId, Arc<C>)>;

/// One metric of a label set, as one shard per thread that counted into it.
///
/// Cheap to clone: clones share the shards.
#[derive(Debug)]
pub(crate) struct Sharded<C> {
    shards: Arc<Mutex<ByThread<C>>>,
}

impl<C> Clone for Sharded<C> {
    fn clone(&self) -> Self {
        Self {
            shards: Arc::clone(&self.shards),
        }
    }
}

impl<C> Default for Sharded<C> {
    fn default() -> Self {
        Self {
            shards: Arc::default(),
        }
    }
}

impl<C: Default> Sharded<C> {
    /// The calling thread's shard, made on its first call. Only this thread may count
    /// into it.
    pub(crate) fn mine(&self) -> Arc<C> {
        let me = std::thread::current().id();
        let mut shards = self.shards.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, shard)) = shards.iter().find(|(id, _)| *id == me) {
            return Arc::clone(shard);
        }
        let shard = Arc::new(C::default());
        shards.push((me, Arc::clone(&shard)));
        shard
    }

    /// Calls `f` with every shard (for a scrape).
    fn each(&self, mut f: impl FnMut(&C)) {
        let shards = self.shards.lock().unwrap_or_else(PoisonError::into_inner);
        for (_, shard) in shards.iter() {
            f(shard);
        }
    }
}

/// Adds `n` to a cell that only the calling thread writes (readers see the old or the
/// new value, never a torn one).
fn add_own(cell: &AtomicU64, n: u64) {
    // Relaxed: a scrape reads each cell on its own; nothing orders them.
    cell.store(
        cell.load(Ordering::Relaxed).wrapping_add(n),
        Ordering::Relaxed,
    );
}

/// A counter's shard.
#[derive(Debug, Default)]
pub(crate) struct Count(AtomicU64);

impl Count {
    /// Counts one (only from the thread that owns this shard).
    pub(crate) fn inc_own(&self) {
        add_own(&self.0, 1);
    }
}

impl TypedMetric for Sharded<Count> {
    const TYPE: MetricType = MetricType::Counter;
}

impl EncodeMetric for Sharded<Count> {
    fn encode(&self, mut encoder: MetricEncoder<'_>) -> Result<(), std::fmt::Error> {
        let mut total = 0u64;
        self.each(|c| total = total.wrapping_add(c.0.load(Ordering::Relaxed)));
        encoder.encode_counter::<NoLabelSet, _, u64>(&total, None)
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }
}

/// Cells of one shard of a histogram: one per bucket (not cumulative) and the sum.
#[derive(Debug)]
pub(crate) struct Buckets<const N: usize> {
    counts: [AtomicU64; N],
    sum: AtomicU64,
}

impl<const N: usize> Default for Buckets<N> {
    fn default() -> Self {
        Self {
            counts: std::array::from_fn(|_| AtomicU64::new(0)),
            sum: AtomicU64::new(0),
        }
    }
}

impl<const N: usize> Buckets<N> {
    /// Counts one observation of `value` in bucket `k` (only from the thread that owns
    /// this shard; `k` past the last bucket counts in the last).
    pub(crate) fn observe_own(&self, k: usize, value: u64) {
        if let Some(cell) = self.counts.get(k).or(self.counts.last()) {
            add_own(cell, 1);
        }
        add_own(&self.sum, value);
    }
}

impl<const N: usize> Sharded<Buckets<N>> {
    /// Per bucket, the counts over every shard, and the sum.
    pub(crate) fn totals(&self) -> ([u64; N], u64) {
        let mut counts = [0u64; N];
        let mut sum = 0u64;
        self.each(|b| {
            for (total, cell) in counts.iter_mut().zip(&b.counts) {
                *total = total.wrapping_add(cell.load(Ordering::Relaxed));
            }
            sum = sum.wrapping_add(b.sum.load(Ordering::Relaxed));
        });
        (counts, sum)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each thread counts into its own shard; the scrape sees the sum, threads that ended
    /// included, and a thread asking again gets the same shard.
    #[test]
    fn threads_count_apart_and_sum() {
        let counter = Sharded::<Count>::default();
        let hist = Sharded::<Buckets<3>>::default();
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let (counter, hist) = (counter.clone(), hist.clone());
                std::thread::spawn(move || {
                    let (c, h) = (counter.mine(), hist.mine());
                    for i in 0..1000u64 {
                        c.inc_own();
                        h.observe_own((i % 4) as usize, t);
                    }
                    assert!(Arc::ptr_eq(&c, &counter.mine()));
                })
            })
            .collect();
        for t in threads {
            t.join()
                .unwrap_or_else(|_| panic!("a counting thread panicked"));
        }
        let mut total = 0;
        counter.each(|c| total += c.0.load(Ordering::Relaxed));
        assert_eq!(total, 4000);
        let (counts, sum) = hist.totals();
        // Bucket 3 does not exist: those observations count in the last one.
        assert_eq!(counts, [1000, 1000, 2000]);
        assert_eq!(sum, 1000 * (1 + 2 + 3));
        let mut shards = 0;
        counter.each(|_| shards += 1);
        assert_eq!(shards, 4);
    }
}
