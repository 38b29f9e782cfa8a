//! Per-tool policy: a timeout, a concurrency limit and a rate limit keyed by principal,
//! each enforced on the tool's own calls (after its arguments validate).
//!
//! A call a limit stops is answered with a **tool error** (`isError: true`): a text the
//! model can read and act on, and `_meta["io.snodo/limit"]` =
//! `{"reason": "rate" | "concurrency" | "timeout", "retryAfterMs": N?}` for clients that
//! retry on their own. It is not a JSON-RPC error: the protocol worked, the tool
//! declined, exactly like a tool that fails.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

use futures_util::future::{BoxFuture, Either, Ready, ready};
use sha2::{Digest, Sha256};

use crate::bus::WhenDown;
use crate::bus::link::Link;
use crate::caller::Principal;
use crate::model::ToolResult;

/// The `_meta` key of a limit's details on the tool error it answers with.
pub const LIMIT_META_KEY: &str = "io.snodo/limit";

/// Most principals a rate limit tracks at once; past it, idle ones are forgotten.
const MAX_TRACKED: usize = 10_000;

/// The longest rate-limit window: a bus counter lasts at most a day.
const MAX_WINDOW: Duration = Duration::from_secs(86_400);

/// How long a caller refused while the bus is down (fail closed) is told to wait.
const CLOSED_RETRY: Duration = Duration::from_secs(1);

/// The bus counter of `who`'s calls to `tool`: readable while short, hashed when
/// the names would pass the bus's key limit.
fn counter_key(tool: &str, who: &str) -> String {
    let key = format!("rate:{tool}:{who}");
    if key.len() <= crate::bus::MAX_KEY {
        return key;
    }
    let digest = Sha256::digest(format!("{tool}\n{who}").as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("rate:#{hex}")
}

/// At most `calls` calls per `per`, for each principal (anonymous callers share one
/// budget), with bursts up to `calls`: a token bucket refilled continuously.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateLimit {
    calls: u32,
    per: Duration,
}

impl RateLimit {
    /// `calls` calls per `per` per principal (`calls` ≥ 1; `per` at least 1 ms).
    ///
    /// A window longer than a day (the longest a bus counter lasts,
    /// [`check_count`](crate::bus::check_count)) is held to one day, with `calls`
    /// scaled down in proportion (at least 1): 70 calls per 7 days is 10 per day, alike
    /// with and without a bus.
    #[must_use]
    pub fn per_principal(calls: u32, per: Duration) -> Self {
        let calls = calls.max(1);
        let per = per.max(Duration::from_millis(1));
        if per <= MAX_WINDOW {
            return Self { calls, per };
        }
        let scaled = u128::from(calls) * MAX_WINDOW.as_millis() / per.as_millis();
        Self {
            calls: u32::try_from(scaled).unwrap_or(u32::MAX).max(1),
            per: MAX_WINDOW,
        }
    }

    fn per_second(self) -> f64 {
        f64::from(self.calls) / self.per.as_secs_f64()
    }
}

/// What a tool's calls are held to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Policy {
    pub(crate) timeout: Option<Duration>,
    pub(crate) max_concurrent: Option<usize>,
    pub(crate) rate: Option<RateLimit>,
}

#[derive(Clone, Copy, Debug)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// A policy and its state, shared by every catalogue that holds the tool.
#[derive(Debug)]
pub(crate) struct Enforcer {
    policy: Policy,
    slots: Option<Arc<Semaphore>>,
    buckets: Mutex<HashMap<Arc<str>, Bucket>>,
}

/// Why a call was stopped.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Limited {
    Rate { retry_after: Duration },
    Concurrency { max: usize },
    Timeout { after: Duration },
}

/// What [`Enforcer::admit`] returns: the answer at once, or, for a rate limit counted on
/// the bus, a boxed wait for it.
pub(crate) type Admission<'a> =
    Either<Ready<Result<Admitted, Limited>>, BoxFuture<'a, Result<Admitted, Limited>>>;

/// Held while a call runs (its concurrency slot).
#[derive(Debug)]
pub(crate) struct Admitted {
    _slot: Option<OwnedSemaphorePermit>,
}

impl Enforcer {
    pub(crate) fn new(policy: Policy) -> Self {
        Self {
            policy,
            slots: policy
                .max_concurrent
                .map(|n| Arc::new(Semaphore::new(n.max(1)))),
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// The policy enforced.
    pub(crate) fn policy(&self) -> Policy {
        self.policy
    }

    /// The call's deadline, if the tool has one.
    pub(crate) fn timeout(&self) -> Option<Duration> {
        self.policy.timeout
    }

    /// Admits a call by `principal`, or says which limit stops it. The concurrency
    /// slot is taken before the rate budget, so a refused call spends no budget. With a
    /// bus (`shared`), the rate budget is the deployment's: [`Enforcer::spend_shared`].
    pub(crate) fn admit<'a>(
        &'a self,
        tool: &'a str,
        principal: Option<&'a Principal>,
        shared: Option<&'a Link>,
    ) -> Admission<'a> {
        let slot = match &self.slots {
            None => None,
            Some(s) => match Arc::clone(s).try_acquire_owned() {
                Ok(permit) => Some(permit),
                Err(_) => {
                    return Either::Left(ready(Err(Limited::Concurrency {
                        max: self.policy.max_concurrent.unwrap_or(1),
                    })));
                }
            },
        };
        let admitted = Admitted { _slot: slot };
        let who = principal.map_or("", Principal::id);
        match (self.policy.rate, shared) {
            (None, _) => Either::Left(ready(Ok(admitted))),
            (Some(rate), None) => Either::Left(ready(self.spend(rate, who).map(|()| admitted))),
            // Boxed: only a call with a bus waits here; inline, every tools/call would
            // carry the count's state.
            (Some(rate), Some(link)) => Either::Right(Box::pin(async move {
                self.spend_shared(link, rate, tool, who).await?;
                Ok(admitted)
            })),
        }
    }

    /// Spends from the deployment's budget: a fixed window of `per` counted on the bus
    /// (`calls` per window, for every instance together). While the bus is down, or
    /// when a count fails (bounded by the bus's deadline), the limit fails open (this
    /// instance's own bucket) or closed, as configured.
    async fn spend_shared(
        &self,
        link: &Link,
        rate: RateLimit,
        tool: &str,
        who: &str,
    ) -> Result<(), Limited> {
        let down = || match link.when_down {
            WhenDown::Open => self.spend(rate, who),
            WhenDown::Closed => Err(Limited::Rate {
                retry_after: CLOSED_RETRY,
            }),
        };
        if !link.is_up() {
            return down();
        }
        match link.bus().count(&counter_key(tool, who), 1, rate.per).await {
            Ok(count) if count.value <= u64::from(rate.calls) => Ok(()),
            Ok(count) => Err(Limited::Rate {
                retry_after: count.resets_in.max(Duration::from_millis(1)),
            }),
            Err(e) => {
                tracing::warn!(target: "snodo::bus", error = %e, tool, "rate limit not counted on the bus");
                down()
            }
        }
    }

    fn spend(&self, rate: RateLimit, key: &str) -> Result<(), Limited> {
        let now = Instant::now();
        let capacity = f64::from(rate.calls);
        let per_second = rate.per_second();
        let Ok(mut buckets) = self.buckets.lock() else {
            return Ok(());
        };
        if !buckets.contains_key(key) && buckets.len() >= MAX_TRACKED {
            // Forget the principals whose budget is whole again; if all are busy,
            // start over (briefly generous rather than unbounded).
            buckets.retain(|_, b| {
                b.tokens + now.duration_since(b.at).as_secs_f64() * per_second < capacity
            });
            if buckets.len() >= MAX_TRACKED {
                buckets.clear();
            }
        }
        let bucket = buckets.entry(key.into()).or_insert(Bucket {
            tokens: capacity,
            at: now,
        });
        let refilled = (bucket.tokens + now.duration_since(bucket.at).as_secs_f64() * per_second)
            .min(capacity);
        bucket.at = now;
        if refilled >= 1.0 {
            bucket.tokens = refilled - 1.0;
            Ok(())
        } else {
            bucket.tokens = refilled;
            let wait = (1.0 - refilled) / per_second;
            Err(Limited::Rate {
                retry_after: Duration::from_secs_f64(wait).max(Duration::from_millis(1)),
            })
        }
    }
}

impl Limited {
    /// The tool error a stopped call is answered with.
    pub(crate) fn tool_result(self, tool: &str) -> ToolResult {
        let (text, details) = match self {
            Self::Rate { retry_after } => {
                let ms = u64::try_from(retry_after.as_millis()).unwrap_or(u64::MAX);
                (
                    format!("Tool {tool} is rate limited for this caller: retry after {ms} ms."),
                    json!({"reason": "rate", "retryAfterMs": ms}),
                )
            }
            Self::Concurrency { max } => (
                format!(
                    "Tool {tool} is busy: it runs at most {max} call(s) at once. Retry shortly."
                ),
                json!({"reason": "concurrency"}),
            ),
            Self::Timeout { after } => {
                let ms = u64::try_from(after.as_millis()).unwrap_or(u64::MAX);
                (
                    format!("Tool {tool} did not finish within its {ms} ms limit."),
                    json!({"reason": "timeout", "timeoutMs": ms}),
                )
            }
        };
        ToolResult::error(text).with_meta(LIMIT_META_KEY, details)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn rate_buckets_refill_per_principal() {
        let e = Enforcer::new(Policy {
            rate: Some(RateLimit::per_principal(2, Duration::from_millis(200))),
            ..Policy::default()
        });
        let alice = Principal::new("alice");
        assert!(e.admit("t", Some(&alice), None).await.is_ok());
        assert!(e.admit("t", Some(&alice), None).await.is_ok());
        let Err(Limited::Rate { retry_after }) = e.admit("t", Some(&alice), None).await else {
            panic!("the third call in a second is limited");
        };
        assert!(retry_after <= Duration::from_millis(100), "{retry_after:?}");
        assert!(
            e.admit("t", Some(&Principal::new("bob")), None)
                .await
                .is_ok(),
            "per principal"
        );
        assert!(
            e.admit("t", None, None).await.is_ok(),
            "anonymous callers have their own budget"
        );
        tokio::time::sleep(Duration::from_millis(150)).await;
        assert!(e.admit("t", Some(&alice), None).await.is_ok(), "refilled");
    }

    /// A window over a day is held to a day (calls in proportion), so a bus counts it
    /// rather than refusing its window: with a bus and fail-closed, a 7-day limit is
    /// counted deployment-wide, not refused as if the bus were down.
    #[tokio::test]
    async fn windows_over_a_day_are_counted_on_the_bus() {
        let week = Duration::from_secs(7 * 86_400);
        assert_eq!(
            RateLimit::per_principal(70, week),
            RateLimit::per_principal(10, MAX_WINDOW)
        );
        assert_eq!(RateLimit::per_principal(2, week).calls, 1);
        let e = Enforcer::new(Policy {
            rate: Some(RateLimit::per_principal(14, week)),
            ..Policy::default()
        });
        let link = Link::new(
            Arc::new(crate::bus::MemoryBus::new()),
            crate::bus::InstanceId::random(),
            crate::bus::WhenDown::Closed,
        );
        let alice = Principal::new("alice");
        assert!(e.admit("t", Some(&alice), Some(&link)).await.is_ok());
        assert!(e.admit("t", Some(&alice), Some(&link)).await.is_ok());
        let Err(Limited::Rate { retry_after }) = e.admit("t", Some(&alice), Some(&link)).await
        else {
            panic!("the third call in a day is limited");
        };
        // Told the counter's reset, not the fail-closed retry of a bus that is down.
        assert!(retry_after > CLOSED_RETRY, "{retry_after:?}");
    }

    #[tokio::test]
    async fn concurrency_slots_are_released() {
        let e = Enforcer::new(Policy {
            max_concurrent: Some(1),
            ..Policy::default()
        });
        let first = e.admit("t", None, None).await;
        assert!(first.is_ok());
        assert_eq!(
            e.admit("t", None, None).await.err(),
            Some(Limited::Concurrency { max: 1 })
        );
        drop(first);
        assert!(e.admit("t", None, None).await.is_ok());
    }
}
