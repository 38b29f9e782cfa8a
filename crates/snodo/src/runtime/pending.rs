//! Server-to-client requests of initialize-era dialects that wait for the client's
//! answer, which arrives as a separate POST. Routed by a server-minted id, not by a
//! session: the answer must reach the same process.

use std::collections::HashMap;
use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;
use tokio::sync::oneshot;

use crate::bus::InstanceId;

/// What the client answered: its `result`, or its `error` object.
pub(crate) type Answer = Result<Value, Value>;

/// Outstanding server-to-client requests of this process.
#[derive(Debug, Default)]
pub(crate) struct PendingRequests {
    waiting: Mutex<HashMap<String, oneshot::Sender<Answer>>>,
    counter: AtomicU64,
    seed: RandomState,
    /// With a bus, this instance's id, put in every id minted: an answer that lands on
    /// another instance is forwarded here.
    holder: Option<InstanceId>,
}

impl PendingRequests {
    /// Requests whose ids name `holder` (the instance, on a shared bus).
    pub(crate) fn held_by(holder: InstanceId) -> Self {
        Self {
            holder: Some(holder),
            ..Self::default()
        }
    }

    /// Mints an id no other request of this process uses, hard to guess from outside.
    pub(crate) fn mint(&self) -> String {
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        let id = format!("snodo-{n:x}-{:016x}", self.seed.hash_one(n));
        match &self.holder {
            None => id,
            Some(me) => crate::bus::link::with_holder(id, me),
        }
    }

    /// Whether a request of this process waits for `id`.
    pub(crate) fn has(&self, id: &str) -> bool {
        self.waiting.lock().is_ok_and(|w| w.contains_key(id))
    }

    /// Starts waiting for the answer to `id`.
    pub(crate) fn register(&self, id: &str) -> oneshot::Receiver<Answer> {
        let (tx, rx) = oneshot::channel();
        if let Ok(mut w) = self.waiting.lock() {
            w.insert(id.to_owned(), tx);
        }
        rx
    }

    /// Stops waiting (answered, cancelled or timed out).
    pub(crate) fn forget(&self, id: &str) {
        if let Ok(mut w) = self.waiting.lock() {
            w.remove(id);
        }
    }

    /// Delivers a client's answer; `false` if nothing waits for that id.
    pub(crate) fn deliver(&self, id: &str, answer: Answer) -> bool {
        let tx = self.waiting.lock().ok().and_then(|mut w| w.remove(id));
        tx.is_some_and(|tx| tx.send(answer).is_ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn routes_answers_by_id() {
        let p = PendingRequests::default();
        let (a, b) = (p.mint(), p.mint());
        assert_ne!(a, b);
        let rx = p.register(&a);
        assert!(!p.deliver(&b, Ok(Value::Null)));
        assert!(p.deliver(&a, Ok(Value::Bool(true))));
        assert_eq!(rx.await.ok(), Some(Ok(Value::Bool(true))));
        assert!(!p.deliver(&a, Ok(Value::Null)), "delivered once");
    }
}
