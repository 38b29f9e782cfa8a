//! Bounded execution: at most `max_concurrent` requests execute at once, at most
//! `max_queued` wait for a slot; beyond that the server answers 503 at once.
//!
//! The gate is also where the `in flight` and `queued` gauges read from (a scrape asks
//! the gate; a request pays nothing for them).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::observation::GateWatch;

/// The execution gate of one server.
#[derive(Debug)]
pub(crate) struct Gate {
    slots: Arc<Semaphore>,
    capacity: usize,
    queued: Arc<AtomicUsize>,
    max_queued: usize,
}

/// The queue is full.
#[derive(Debug)]
pub(crate) struct Overloaded;

impl Gate {
    pub(crate) fn new(max_concurrent: usize, max_queued: usize) -> Self {
        let capacity = max_concurrent.clamp(1, Semaphore::MAX_PERMITS);
        Self {
            slots: Arc::new(Semaphore::new(capacity)),
            capacity,
            queued: Arc::new(AtomicUsize::new(0)),
            max_queued,
        }
    }

    /// A free execution slot, if there is one now.
    pub(crate) fn try_enter(&self) -> Option<OwnedSemaphorePermit> {
        Arc::clone(&self.slots).try_acquire_owned().ok()
    }

    /// Waits for an execution slot, or refuses when too many already wait.
    pub(crate) async fn enter(&self) -> Result<OwnedSemaphorePermit, Overloaded> {
        if let Some(permit) = self.try_enter() {
            return Ok(permit);
        }
        if self.queued.fetch_add(1, Ordering::AcqRel) >= self.max_queued {
            self.queued.fetch_sub(1, Ordering::AcqRel);
            return Err(Overloaded);
        }
        // Counted out however the wait ends: a slot, the semaphore closed, or the
        // waiting future dropped (the deadline passed, the client went away).
        let _waiting = Unqueue(&self.queued);
        let permit = Arc::clone(&self.slots).acquire_owned().await;
        permit.map_err(|_| Overloaded)
    }

    /// A view of this gate's occupancy that does not keep it alive.
    #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
    pub(crate) fn watch(&self) -> GateWatch {
        GateWatch::new(&self.slots, self.capacity, &self.queued)
    }
}

/// Takes a waiting request off the queue count when dropped.
struct Unqueue<'a>(&'a AtomicUsize);

impl Drop for Unqueue<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn queues_then_refuses() {
        let gate = Gate::new(1, 1);
        let watch = gate.watch();
        assert_eq!(watch.read(), Some((0, 0)));
        {
            let first = gate.enter().await;
            assert!(first.is_ok());
            assert_eq!(watch.read(), Some((1, 0)));
            let waiting = gate.enter();
            tokio::pin!(waiting);
            assert!(
                futures_util::poll!(&mut waiting).is_pending(),
                "the second waits"
            );
            assert_eq!(watch.read(), Some((1, 1)));
            assert!(gate.enter().await.is_err(), "the third is refused");
            assert_eq!(watch.read(), Some((1, 1)), "a refusal is not counted");
            drop(first);
            let second = waiting.await;
            assert!(second.is_ok());
            assert_eq!(watch.read(), Some((1, 0)));
            drop(second);
            assert_eq!(watch.read(), Some((0, 0)));
        }
        drop(gate);
        assert_eq!(watch.read(), None);
        assert!(watch.is_gone());
    }

    /// A wait given up (its future dropped) leaves the queue.
    #[tokio::test]
    async fn an_abandoned_wait_leaves_the_queue() {
        let gate = Gate::new(1, 4);
        let watch = gate.watch();
        let _first = gate.enter().await;
        {
            let waiting = gate.enter();
            tokio::pin!(waiting);
            assert!(futures_util::poll!(&mut waiting).is_pending());
            assert_eq!(watch.read(), Some((1, 1)));
        }
        assert_eq!(watch.read(), Some((1, 0)));
    }
}
