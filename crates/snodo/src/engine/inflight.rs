//! In-flight requests that `notifications/cancelled` may cancel: keyed by principal,
//! its cancellation scope and the request id, so that a principal can never cancel
//! another's request, even one with the same id. Anonymous requests are never
//! registered (nothing could tell their callers apart).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

use crate::protocol::RequestId;
use crate::runtime::context::Principal;

type Key = (Principal, RequestId);

/// The registry of one server (shared by its connections).
#[derive(Debug, Default)]
pub(crate) struct InFlight {
    map: Mutex<HashMap<Key, CancellationToken>>,
}

/// Removes its entry when the request ends.
#[derive(Debug)]
pub(crate) struct Registration {
    registry: Arc<InFlight>,
    key: Key,
}

impl Drop for Registration {
    fn drop(&mut self) {
        // The entry is ours: a duplicate id is never registered over it.
        if let Ok(mut map) = self.registry.map.lock() {
            map.remove(&self.key);
        }
    }
}

impl InFlight {
    /// Registers a request; `None` when anonymous or when the id is already in flight
    /// in this scope (the first one stays cancellable).
    pub(crate) fn register(
        registry: &Arc<Self>,
        principal: Option<&Principal>,
        id: &RequestId,
        token: &CancellationToken,
    ) -> Option<Registration> {
        let key = (principal?.clone(), id.clone());
        let mut map = registry.map.lock().ok()?;
        if map.contains_key(&key) {
            return None;
        }
        map.insert(key.clone(), token.clone());
        Some(Registration {
            registry: Arc::clone(registry),
            key,
        })
    }

    /// Cancels the caller's own in-flight request `id`; `false` if there is none.
    pub(crate) fn cancel(&self, principal: &Principal, id: &RequestId) -> bool {
        let token = self
            .map
            .lock()
            .ok()
            .and_then(|m| m.get(&(principal.clone(), id.clone())).cloned());
        token.map(|t| t.cancel()).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_owner_cancels() {
        let reg = Arc::new(InFlight::default());
        let (alice, bob) = (Principal::new("alice"), Principal::new("bob"));
        let id = RequestId::Number(7);
        let token = CancellationToken::new();
        let r = InFlight::register(&reg, Some(&alice), &id, &token);
        assert!(r.is_some());
        assert!(
            InFlight::register(&reg, None, &id, &token).is_none(),
            "anonymous requests are not registered"
        );
        assert!(!reg.cancel(&bob, &id));
        assert!(!token.is_cancelled());
        assert!(!reg.cancel(&alice.clone().with_scope("other-client"), &id));
        assert!(reg.cancel(&alice, &id));
        assert!(token.is_cancelled());
        drop(r);
        assert!(!reg.cancel(&alice, &id), "removed when the request ends");
    }
}
