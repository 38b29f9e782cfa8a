//! Per thread, the series of the kinds of request it answered, as this thread's shards
//! of them: counting a request is then a short scan and three plain updates, instead of
//! two family lookups that hash the labels and take a lock, and three atomic additions
//! (metrics are on every request).

use std::cell::RefCell;
use std::sync::{Arc, Weak};
use std::time::Duration;

use super::Inner;
use super::durations::DurationsShard;
use super::shards::Count;

/// How many request series a thread keeps at hand.
const MAX_SERIES: usize = 64;

thread_local! {
    static SERIES: RefCell<Vec<Series>> = const { RefCell::new(Vec::new()) };
}

/// The labels of one finished request.
#[derive(Clone, Copy, Debug)]
pub(super) struct Labels<'a> {
    pub(super) transport: &'static str,
    pub(super) method: &'static str,
    pub(super) outcome: &'static str,
    pub(super) name: &'a str,
}

/// This thread's shards of the counter and histogram of one label set of one registry.
struct Series {
    /// Whose series these are; a weak handle keeps the address from being reused.
    owner: Weak<Inner>,
    transport: &'static str,
    method: &'static str,
    outcome: &'static str,
    name: Arc<str>,
    requests: Arc<Count>,
    duration: DurationsShard,
}

impl Series {
    /// Whether these are `inner`'s series of this label set. The `'static` labels are
    /// compared by address: two equal texts at two addresses are two entries for the
    /// same series, which only costs a slot.
    fn is(&self, inner: &Arc<Inner>, labels: &Labels<'_>) -> bool {
        std::ptr::eq(self.transport, labels.transport)
            && std::ptr::eq(self.method, labels.method)
            && std::ptr::eq(self.outcome, labels.outcome)
            && std::ptr::eq(self.owner.as_ptr(), Arc::as_ptr(inner))
            && *self.name == *labels.name
    }

    fn count(&self, elapsed: Duration) {
        self.requests.inc_own();
        self.duration.observe(elapsed);
    }
}

/// Counts a request of `inner`'s into the series of its labels, through this thread's
/// kept series (the registry's families only when a label set is new to the thread).
pub(super) fn count(inner: &Arc<Inner>, labels: &Labels<'_>, elapsed: Duration) {
    let counted = SERIES.with(|cell| {
        let Ok(mut series) = cell.try_borrow_mut() else {
            return false;
        };
        if let Some(s) = series.iter().find(|s| s.is(inner, labels)) {
            s.count(elapsed);
            return true;
        }
        let (requests, duration) = inner.series(labels);
        let s = Series {
            owner: Arc::downgrade(inner),
            transport: labels.transport,
            method: labels.method,
            outcome: labels.outcome,
            name: labels.name.into(),
            requests,
            duration,
        };
        s.count(elapsed);
        if series.len() == MAX_SERIES {
            // Series of dropped registries first; else start over.
            series.retain(|s| s.owner.strong_count() > 0);
            if series.len() == MAX_SERIES {
                series.clear();
            }
        }
        series.push(s);
        true
    });
    if !counted {
        // This thread's shards still (found again: the cache is unavailable).
        let (requests, duration) = inner.series(labels);
        requests.inc_own();
        duration.observe(elapsed);
    }
}
