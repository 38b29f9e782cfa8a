//! The 2026-07-28 result envelope's texts: `resultType` and, on cacheable results, the
//! cache hint the runtime was built with, serialised once per runtime beside the
//! per-dialect view (`view.rs`) of what the runtime publishes.

use std::sync::Arc;

use super::Caches;
use crate::model::CacheHint;
use crate::protocol::Method;

/// `"resultType":"complete"` of a 2026-07-28 result.
pub(crate) const COMPLETE: &str = r#""resultType":"complete""#;

/// The 2026-07-28 `resultType` member with each cacheable kind's hint, serialised once
/// per runtime.
#[derive(Debug)]
pub(crate) struct Envelopes {
    discover: Arc<str>,
    lists: Arc<str>,
    reads: Arc<str>,
}

impl Envelopes {
    pub(crate) fn new(caches: &Caches) -> Self {
        let hinted = |hint: CacheHint| -> Arc<str> {
            let scope = serde_json::to_string(&hint.scope).unwrap_or_else(|_| "\"private\"".into());
            Arc::from(format!(
                r#"{COMPLETE},"ttlMs":{},"cacheScope":{scope}"#,
                hint.ttl_ms
            ))
        };
        Self {
            discover: hinted(caches.discover),
            lists: hinted(caches.lists),
            reads: hinted(caches.reads),
        }
    }

    /// `resultType` and the cache hint of a cacheable result of `method`; `None` when
    /// `method`'s results are not cacheable (their envelope is [`COMPLETE`] alone).
    pub(crate) fn hinted(&self, method: Method) -> Option<&Arc<str>> {
        if !method.is_cacheable() {
            return None;
        }
        Some(match method {
            Method::Discover => &self.discover,
            Method::ResourcesRead => &self.reads,
            _ => &self.lists,
        })
    }
}
