//! What the gateway observes of its backends: each proxied request is logged (target
//! `snodo::backend`, with the backend's name) and counted in Prometheus series labelled
//! `backend` — a name from the configuration, so the label set is bounded by it.
//!
//! | series | kind | labels |
//! |---|---|---|
//! | `snodo_backend_requests_total` | counter | `backend`, `method`, `outcome` (`ok`, `tool_error`, `error`, `down`, `input_required`, `cancelled`) |
//! | `snodo_backend_request_duration_seconds` | histogram | `backend`, `method` |
//! | `snodo_backend_up` | gauge | `backend` (1 up, 0 not) |
//! | `snodo_backend_outages_total` | counter | `backend` |

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use serde_json::Value;
use snodo::RequestContext;
use snodo_compose::{Answer, BoxFuture, Listing, McpSource, Source, SourceError};
use tokio::sync::watch;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    backend: Arc<str>,
    method: &'static str,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MethodLabels {
    backend: Arc<str>,
    method: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct BackendLabel {
    backend: Arc<str>,
}

/// The per-backend series (cheap to clone).
#[derive(Clone, Debug)]
pub(crate) struct Series {
    requests: Family<CallLabels, Counter>,
    duration: Family<MethodLabels, Histogram>,
    up: Family<BackendLabel, Gauge>,
    outages: Family<BackendLabel, Counter>,
}

impl Series {
    /// The series, and a registry holding them (for `Metrics::with_registry`).
    pub(crate) fn new() -> (Self, Registry) {
        let series = Self {
            requests: Family::default(),
            duration: Family::new_with_constructor(|| {
                Histogram::new(exponential_buckets(0.000_25, 2.0, 16))
            }),
            up: Family::default(),
            outages: Family::default(),
        };
        let mut registry = Registry::default();
        registry.register(
            "snodo_backend_requests",
            "Requests the gateway forwarded to a backend, by backend, method and outcome",
            series.requests.clone(),
        );
        registry.register(
            "snodo_backend_request_duration_seconds",
            "Time a backend took to answer a forwarded request",
            series.duration.clone(),
        );
        registry.register(
            "snodo_backend_up",
            "Whether the backend is mounted (1) or not (0)",
            series.up.clone(),
        );
        registry.register(
            "snodo_backend_outages",
            "Times the backend went away",
            series.outages.clone(),
        );
        (series, registry)
    }

    /// Records whether `backend` is up, and `outages` more times it went away.
    pub(crate) fn state(&self, backend: &Arc<str>, up: bool, outages: u64) {
        let label = BackendLabel {
            backend: Arc::clone(backend),
        };
        self.up.get_or_create(&label).set(i64::from(up));
        self.outages.get_or_create(&label).inc_by(outages);
    }
}

/// The `method` label values, in the order of [`Cells`]' rows.
const METHODS: [&str; 5] = [
    "tools/call",
    "prompts/get",
    "resources/read",
    "completion/complete",
    "other",
];

/// The `outcome` label values, in the order of [`Cells`]' columns.
const OUTCOMES: [&str; 6] = [
    "ok",
    "tool_error",
    "error",
    "down",
    "input_required",
    "cancelled",
];

/// One backend's series, resolved in its families the first time each is used: a
/// request then counts without building, hashing or cloning labels (a family's entry
/// and the handle kept here share one value). Resolved lazily, so a series appears in
/// `/metrics` only once something happened on it, as before.
struct Cells {
    requests: [[OnceLock<Counter>; OUTCOMES.len()]; METHODS.len()],
    duration: [OnceLock<Histogram>; METHODS.len()],
}

impl Cells {
    fn new() -> Self {
        Self {
            requests: std::array::from_fn(|_| std::array::from_fn(|_| OnceLock::new())),
            duration: std::array::from_fn(|_| OnceLock::new()),
        }
    }

    /// Counts one request of `method` (a row of [`METHODS`]) that ended as `outcome`
    /// (a column of [`OUTCOMES`]) and took `seconds`.
    fn record(&self, of: &Observed, method: usize, outcome: usize, seconds: f64) {
        let (Some(row), Some(duration)) = (self.requests.get(method), self.duration.get(method))
        else {
            return;
        };
        let Some(cell) = row.get(outcome) else {
            return;
        };
        cell.get_or_init(|| {
            of.series
                .requests
                .get_or_create(&CallLabels {
                    backend: Arc::clone(&of.backend),
                    method: METHODS[method],
                    outcome: OUTCOMES[outcome],
                })
                .clone()
        })
        .inc();
        duration
            .get_or_init(|| {
                of.series
                    .duration
                    .get_or_create(&MethodLabels {
                        backend: Arc::clone(&of.backend),
                        method: METHODS[method],
                    })
                    .clone()
            })
            .observe(seconds);
    }
}

/// A backend source whose requests are logged and counted under its name.
pub(crate) struct Observed {
    inner: McpSource,
    backend: Arc<str>,
    series: Series,
    cells: Cells,
}

impl Observed {
    pub(crate) fn new(inner: McpSource, backend: Arc<str>, series: Series) -> Self {
        Self {
            inner,
            backend,
            series,
            cells: Cells::new(),
        }
    }
}

/// The most of a component name a log line carries.
const MAX_NAME: usize = 256;

/// The component a request names: `name` (tools, prompts), `uri` (resources), or the
/// reference of a completion.
fn target(params: &Value) -> String {
    let r = params.get("ref").unwrap_or(params);
    let name = r
        .get("name")
        .or_else(|| r.get("uri"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let mut end = name.len().min(MAX_NAME);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    name[..end].to_owned()
}

/// The row of [`METHODS`] that labels `method`.
fn method_label(method: &str) -> usize {
    METHODS[..METHODS.len() - 1]
        .iter()
        .position(|m| *m == method)
        .unwrap_or(METHODS.len() - 1)
}

/// The columns of [`OUTCOMES`].
const OK: usize = 0;
const TOOL_ERROR: usize = 1;
const ERROR: usize = 2;
const DOWN: usize = 3;
const INPUT_REQUIRED: usize = 4;
const CANCELLED: usize = 5;

/// One forwarded request: recorded when it ends, or as `cancelled` when its front
/// request is abandoned before (the future is dropped).
struct Call<'a> {
    of: &'a Observed,
    /// A row of [`METHODS`].
    method: usize,
    name: String,
    started: Instant,
    /// A column of [`OUTCOMES`].
    outcome: usize,
    code: Option<i64>,
}

impl Drop for Call<'_> {
    fn drop(&mut self) {
        let elapsed = self.started.elapsed();
        tracing::info!(
            target: "snodo::backend",
            message = "backend request",
            backend = &*self.of.backend,
            method = METHODS[self.method],
            name = self.name.as_str(),
            outcome = OUTCOMES[self.outcome],
            code = self.code,
            duration_us = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX),
        );
        self.of
            .cells
            .record(self.of, self.method, self.outcome, elapsed.as_secs_f64());
    }
}

impl Observed {
    /// Runs one forwarded request, recorded when it ends (or dropped).
    async fn record<T: Reported>(
        &self,
        method: &str,
        name: String,
        ctx: &RequestContext,
        request: BoxFuture<'_, Result<T, SourceError>>,
    ) -> Result<T, SourceError> {
        let mut call = Call {
            of: self,
            method: method_label(method),
            name,
            started: Instant::now(),
            outcome: CANCELLED,
            code: None,
        };
        let r = request.await;
        (call.outcome, call.code) = match &r {
            Ok(v) if v.is_tool_error() => (TOOL_ERROR, None),
            Ok(_) => (OK, None),
            // The front request was cancelled and the backend request abandoned.
            Err(_) if ctx.is_cancelled() => (CANCELLED, None),
            Err(SourceError::Rpc(e)) => (ERROR, Some(e.code().0)),
            Err(SourceError::Down(_)) => (DOWN, None),
            Err(SourceError::InputRequired(_)) => (INPUT_REQUIRED, None),
        };
        r
    }
}

/// A source's answer, as the log and the series tell it.
trait Reported {
    /// Whether it is a tool result that reports an error (`"isError": true`).
    fn is_tool_error(&self) -> bool;
}

impl Reported for Value {
    fn is_tool_error(&self) -> bool {
        self.get("isError") == Some(&Value::Bool(true))
    }
}

/// Only the member `isError` of a result read from its text (the rest is skipped).
#[derive(serde::Deserialize)]
struct ErrorFlag {
    #[serde(rename = "isError", default)]
    is_error: Option<Value>,
}

impl Reported for Answer {
    fn is_tool_error(&self) -> bool {
        match (self.as_value(), self.as_text()) {
            (Some(v), _) => v.is_tool_error(),
            // (A struct also reads from an array: only an object has members.)
            (None, Some(t)) => {
                // (`true` is spelt out: a text without it holds no `isError: true`.)
                self.may_hold("true")
                    && t.get().trim_start().starts_with('{')
                    && match self.read::<ErrorFlag>() {
                        Ok(f) => f.is_error == Some(Value::Bool(true)),
                        // (Members twice, say: the tree, which the front gets, decides.)
                        Err(_) => self.read::<Value>().is_ok_and(|v| v.is_tool_error()),
                    }
            }
            (None, None) => false,
        }
    }
}

impl Source for Observed {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn list(&self) -> BoxFuture<'_, Result<Listing, SourceError>> {
        self.inner.list()
    }

    fn request<'a>(
        &'a self,
        method: &'a str,
        params: Value,
        ctx: &'a RequestContext,
    ) -> BoxFuture<'a, Result<Value, SourceError>> {
        let name = target(&params);
        Box::pin(self.record(method, name, ctx, self.inner.request(method, params, ctx)))
    }

    fn call_tool<'a>(
        &'a self,
        params: Value,
        ctx: &'a RequestContext,
    ) -> BoxFuture<'a, Result<Answer, SourceError>> {
        let name = target(&params);
        Box::pin(self.record("tools/call", name, ctx, self.inner.call_tool(params, ctx)))
    }

    fn call_task<'a>(
        &'a self,
        params: Value,
        ctx: &'a RequestContext,
    ) -> BoxFuture<'a, Result<Value, SourceError>> {
        let name = target(&params);
        Box::pin(self.record("tools/call", name, ctx, self.inner.call_task(params, ctx)))
    }

    fn subscribe<'a>(&'a self, uri: &'a str) -> BoxFuture<'a, Result<(), SourceError>> {
        self.inner.subscribe(uri)
    }

    fn unsubscribe<'a>(&'a self, uri: &'a str) -> BoxFuture<'a, Result<(), SourceError>> {
        self.inner.unsubscribe(uri)
    }

    fn resource_updates(&self) -> Option<tokio::sync::broadcast::Receiver<String>> {
        self.inner.resource_updates()
    }

    fn changes(&self) -> watch::Receiver<u64> {
        self.inner.changes()
    }

    fn check(&self) -> BoxFuture<'_, Result<(), SourceError>> {
        self.inner.check()
    }

    fn restarting(&self) -> bool {
        self.inner.restarting()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(json: &str) -> Answer {
        let raw = serde_json::value::RawValue::from_string(json.to_owned())
            .unwrap_or_else(|e| panic!("{e}"));
        Answer::from_text(raw)
    }

    /// A result read from its text reports an error exactly when its tree does (the
    /// tree is what the front gets).
    #[test]
    fn a_text_result_is_an_error_as_its_tree_says() {
        for (json, error) in [
            (r#"{"content":[],"isError":true}"#, true),
            (r#"{"content":[],"isError":false}"#, false),
            (r#"{"content":[{"type":"text","text":"true"}]}"#, false),
            (r#"{"content":[], "isError" : true }"#, true),
            (r#"{"content":[],"is\u0045rror":true}"#, true),
            (r#"{"isError":false,"isError":true}"#, true),
            (r#"{"isError":true,"isError":false}"#, false),
            (r#"{"isError":"true"}"#, false),
            (r#"[{"isError":true}]"#, false),
        ] {
            let tree: Value = serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(text(json).is_tool_error(), error, "{json}");
            assert_eq!(tree.is_tool_error(), error, "{json} (tree)");
        }
    }
}
