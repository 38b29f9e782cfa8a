//! Bounded execution: at most `max_concurrent` requests execute at once, at most
//! `max_queued` wait for a slot; beyond that the server answers 503 at once.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The execution gate of one server.
#[derive(Debug)]
pub(crate) struct Gate {
    slots: Arc<Semaphore>,
    queued: AtomicUsize,
    max_queued: usize,
}

/// The queue is full.
#[derive(Debug)]
pub(crate) struct Overloaded;

impl Gate {
    pub(crate) fn new(max_concurrent: usize, max_queued: usize) -> Self {
        Self {
            slots: Arc::new(Semaphore::new(max_concurrent.max(1))),
            queued: AtomicUsize::new(0),
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
        let permit = Arc::clone(&self.slots).acquire_owned().await;
        self.queued.fetch_sub(1, Ordering::AcqRel);
        permit.map_err(|_| Overloaded)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn queues_then_refuses() {
        let gate = Gate::new(1, 1);
        let first = gate.enter().await;
        assert!(first.is_ok());
        let waiting = gate.enter();
        tokio::pin!(waiting);
        assert!(
            futures_util::poll!(&mut waiting).is_pending(),
            "the second waits"
        );
        assert!(gate.enter().await.is_err(), "the third is refused");
        drop(first);
        assert!(waiting.await.is_ok());
    }
}
