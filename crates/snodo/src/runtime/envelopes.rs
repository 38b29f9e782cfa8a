//! The 2026-07-28 result envelope: its [`ResultType`] (the one place `resultType` is
//! written) and its texts, `resultType` and, on cacheable results, the cache hint the
//! runtime was built with, serialised once per runtime beside the per-dialect view
//! (`view.rs`) of what the runtime publishes.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::Caches;
use crate::model::CacheHint;
use crate::protocol::Method;

/// What kind of result a 2026-07-28 result is (its `resultType` member).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ResultType {
    /// The request's own result.
    Complete,
    /// The server needs the client's answers first (`inputRequests`, `requestState`).
    InputRequired,
    /// A task was created to produce the result (tasks extension).
    Task,
}

impl ResultType {
    /// The member's key.
    pub(crate) const KEY: &'static str = "resultType";

    /// The wire spelling.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Complete => "complete",
            Self::InputRequired => "input_required",
            Self::Task => "task",
        }
    }

    /// Writes the member into `result`.
    pub(crate) fn write(self, result: &mut Map<String, Value>) {
        result.insert(Self::KEY.into(), Value::String(self.as_str().into()));
    }
}

/// `"resultType":"complete"` of a 2026-07-28 result ([`ResultType::Complete`], as text).
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
