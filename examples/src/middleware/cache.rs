//! A result cache that honours the result's own cache hint (`ttlMs`, `cacheScope`,
//! 2026-07-28): a result is kept for `ttlMs`, shared by every caller when its scope is
//! `public` and per principal otherwise; a result without a hint (or `ttlMs: 0`) is not
//! kept.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use serde_json::{Map, Value};
use snodo::middleware::{Middleware, Next, Outcome, Reply, Request};

/// What a result is keyed by: the dialect, method, target, arguments and (for a
/// private result) the principal.
type Key = (&'static str, String, Option<String>, String, Option<String>);

/// A kept result and when it goes stale.
type Entry = (Instant, Map<String, Value>);

/// Keeps cacheable results until their `ttlMs` runs out; holds at most `capacity`.
#[derive(Debug)]
pub struct ResultCache {
    entries: Mutex<HashMap<Key, Entry>>,
    capacity: usize,
}

impl ResultCache {
    /// A cache of at most `capacity` results.
    #[must_use]
    pub fn new(capacity: usize) -> Self {
        Self {
            entries: Mutex::new(HashMap::new()),
            capacity,
        }
    }

    fn lookup(&self, key: &Key) -> Option<Map<String, Value>> {
        let entries = self.entries.lock().ok()?;
        let (until, result) = entries.get(key)?;
        (Instant::now() < *until).then(|| result.clone())
    }

    fn keep(&self, key: Key, reply: &Reply) {
        let Some(ttl) = reply.ttl().filter(|t| !t.is_zero()) else {
            return;
        };
        let Ok(mut entries) = self.entries.lock() else {
            return;
        };
        let now = Instant::now();
        if entries.len() >= self.capacity {
            entries.retain(|_, (until, _)| *until > now);
        }
        if entries.len() < self.capacity {
            entries.insert(key, (now + ttl, reply.to_json()));
        }
    }
}

impl Middleware for ResultCache {
    async fn call(&self, request: Request<'_>, next: Next<'_>) -> Outcome {
        let base = (
            request.dialect().version(),
            request.method().to_owned(),
            request.target().map(str::to_owned),
            request
                .arguments()
                .map(Value::to_string)
                .unwrap_or_default(),
        );
        let principal = request.principal().map(|p| p.id().to_owned());
        let public = (base.0, base.1.clone(), base.2.clone(), base.3.clone(), None);
        let private = (base.0, base.1, base.2, base.3, principal);
        if let Some(hit) = self.lookup(&public).or_else(|| self.lookup(&private)) {
            return Ok(Reply::new(hit));
        }
        let reply = next.run(request).await?;
        let shared = reply.cache_scope().as_deref() == Some("public");
        self.keep(if shared { public } else { private }, &reply);
        Ok(reply)
    }
}
