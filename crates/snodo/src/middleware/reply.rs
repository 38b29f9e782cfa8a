//! [`Reply`]: a result on its way back through the layers.

use std::time::Duration;

use serde_json::{Map, Value};

use crate::router::{ResultObject, Router};
use crate::runtime::catalogue::Catalogue;

/// A result object, as the router produced it or as a layer made it.
///
/// A reply from [`Next::run`](super::Next::run) is complete: on 2026-07-28 it carries
/// `resultType` and the cache hint (`ttlMs`, `cacheScope`) where the result has one. A
/// reply made by a layer ([`Reply::new`]) gets the dialect's envelope added on its way
/// out, like a handler's result.
#[derive(Debug)]
pub struct Reply {
    pub(super) object: ResultObject,
    /// The dialect's envelope is already added.
    pub(super) finished: bool,
}

impl Reply {
    /// A reply made of these result members.
    #[must_use]
    pub fn new(result: Map<String, Value>) -> Self {
        Self {
            object: result.into(),
            finished: false,
        }
    }

    /// The result object as JSON.
    #[must_use]
    pub fn to_json(&self) -> Map<String, Value> {
        if self.object.members.is_empty() {
            return self.object.fields.clone();
        }
        match serde_json::from_str(&self.object.to_json()) {
            Ok(Value::Object(m)) => m,
            _ => Map::new(),
        }
    }

    /// Whether this is a tool result that reports an error (`isError: true`).
    #[must_use]
    pub fn is_tool_error(&self) -> bool {
        self.object.is_tool_error()
    }

    /// The result's cache hint (`ttlMs`, 2026-07-28): how long a client may reuse it.
    #[must_use]
    pub fn ttl(&self) -> Option<Duration> {
        if let Some(ms) = self.object.fields.get("ttlMs").and_then(Value::as_u64) {
            return Some(Duration::from_millis(ms));
        }
        if self.object.members.is_empty() {
            return None;
        }
        self.to_json()
            .get("ttlMs")
            .and_then(Value::as_u64)
            .map(Duration::from_millis)
    }

    /// The result `cacheScope` (2026-07-28), e.g. `"private"`: reuse for the same
    /// principal only.
    #[must_use]
    pub fn cache_scope(&self) -> Option<String> {
        self.to_json()
            .get("cacheScope")
            .and_then(Value::as_str)
            .map(str::to_owned)
    }

    /// The result object with the dialect's envelope, added once.
    pub(super) fn finish(
        self,
        router: Router<'_>,
        catalogue: &Catalogue,
        request: (&'static crate::protocol::Dialect, crate::protocol::Method),
    ) -> ResultObject {
        if self.finished {
            return self.object;
        }
        router.finish(catalogue, request.0, request.1, self.object)
    }
}
