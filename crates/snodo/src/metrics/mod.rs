//! Prometheus metrics (feature `metrics`), in the text exposition format.
//!
//! Give a [`Metrics`] handle to the runtime ([`RuntimeBuilder::metrics`]) and every
//! transport (HTTP, stdio) counts into it; expose it with [`Metrics::serve`] on a port of
//! its own, or mount [`Metrics::response`] in your own router.
//!
//! | series | kind | labels |
//! |---|---|---|
//! | `snodo_requests_total` | counter | `transport`, `method`, `name`, `outcome` |
//! | `snodo_request_duration_seconds` | histogram | `transport`, `method` |
//! | `snodo_requests_in_flight` | gauge | |
//! | `snodo_requests_queued` | gauge | |
//! | `snodo_refusals_total` | counter | `transport`, `reason` (the HTTP status, or the JSON-RPC code on stdio; `tool_rate`, `tool_concurrency`, `tool_timeout` for a tool's own limits) |
//! | `snodo_open_streams` | gauge | `kind` (`sse`, `listen`) |
//! | `snodo_tasks_running` | gauge | `status` (`working`, `input_required`) |
//! | `snodo_tasks_ended_total` | counter | `status` (`completed`, `failed`, `cancelled`, `lost`) |
//!
//! `name` is the tool or prompt name, or the resource URI, only when the catalogue holds
//! it (else empty): a client cannot grow the label set with names it makes up. `outcome`
//! is `ok`, `tool_error` (a tool result with `isError`, a tool's own limits included),
//! `error`, `refused`, `timeout` or `cancelled`.
//!
//! The task series count the tasks whose work runs in this process (tasks extension):
//! with a shared task store, each instance counts its own and Prometheus sums them. A
//! task ends `lost` when its worker stops without storing an outcome: the task expired
//! and was deleted, or another instance took it over.
//!
//! [`RuntimeBuilder::metrics`]: crate::RuntimeBuilder::metrics

mod durations;
mod gates;
mod series;
mod shards;

use std::sync::Arc;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::observation::{GateWatch, Outcome, RequestSink, RequestSummary, TaskSink};
use crate::protocol::Method;
use durations::Durations;
use gates::{GateGauge, Gates};
use series::Labels;
use shards::{Count, Sharded};

/// The content type of [`Metrics::encode`]'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The path [`Metrics::serve`] answers on.
pub const METRICS_PATH: &str = "/metrics";

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    transport: &'static str,
    method: &'static str,
    /// Shared by the label sets that have it.
    name: Arc<str>,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DurationLabels {
    transport: &'static str,
    method: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RefusalLabels {
    transport: &'static str,
    reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StreamLabels {
    kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TaskLabels {
    status: &'static str,
}

#[derive(Debug)]
struct Inner {
    registry: Registry,
    requests: Family<RequestLabels, Sharded<Count>>,
    duration: Family<DurationLabels, Durations>,
    /// The execution gates of the endpoints counting into these series.
    gates: Gates,
    refusals: Family<RefusalLabels, Counter>,
    streams: Family<StreamLabels, Gauge>,
    tasks_running: Family<TaskLabels, Gauge>,
    tasks_ended: Family<TaskLabels, Counter>,
    /// Whether the shared bus is up (1) or down (0), and how often it went down.
    bus_up: Gauge,
    bus_outages: Counter,
    /// The name label of requests without a known component name.
    no_name: Arc<str>,
}

/// The Prometheus series of one server (cheap to clone: a shared handle).
#[derive(Clone, Debug)]
pub struct Metrics {
    inner: Arc<Inner>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// A fresh set of series in a registry of its own.
    #[must_use]
    pub fn new() -> Self {
        Self::with_registry(Registry::default())
    }

    /// The series of [`new`](Self::new) added to `registry`, which may hold an
    /// application's own (encoded and served with them), e.g. a gateway's per-backend
    /// series.
    ///
    /// ```
    /// use prometheus_client::metrics::counter::Counter;
    /// use prometheus_client::registry::Registry;
    /// let mut registry = Registry::default();
    /// let restarts = Counter::<u64>::default();
    /// registry.register("app_restarts", "Child restarts", restarts.clone());
    /// let metrics = snodo::metrics::Metrics::with_registry(registry);
    /// restarts.inc();
    /// assert!(metrics.encode().contains("app_restarts_total 1"));
    /// ```
    #[must_use]
    pub fn with_registry(mut registry: Registry) -> Self {
        let requests = Family::<RequestLabels, Sharded<Count>>::default();
        let duration = Family::<DurationLabels, Durations>::default();
        let gates = Gates::default();
        let refusals = Family::<RefusalLabels, Counter>::default();
        let streams = Family::<StreamLabels, Gauge>::default();
        let tasks_running = Family::<TaskLabels, Gauge>::default();
        let tasks_ended = Family::<TaskLabels, Counter>::default();
        registry.register(
            "snodo_requests",
            "MCP requests answered, by transport, method, component name and outcome",
            requests.clone(),
        );
        registry.register(
            "snodo_request_duration_seconds",
            "Time from a request's arrival to its answer (queueing included)",
            duration.clone(),
        );
        registry.register(
            "snodo_requests_in_flight",
            "Requests executing now",
            GateGauge::executing(&gates),
        );
        registry.register(
            "snodo_requests_queued",
            "Requests waiting for an execution slot",
            GateGauge::queued(&gates),
        );
        registry.register(
            "snodo_refusals",
            "Requests refused, by reason (HTTP status; JSON-RPC code on stdio)",
            refusals.clone(),
        );
        registry.register(
            "snodo_open_streams",
            "Open response streams: SSE answers and subscriptions/listen",
            streams.clone(),
        );
        registry.register(
            "snodo_tasks_running",
            "Tasks whose work runs in this process, by status",
            tasks_running.clone(),
        );
        registry.register(
            "snodo_tasks_ended",
            "Tasks whose work ran in this process and ended, by final status (lost: expired or taken over)",
            tasks_ended.clone(),
        );
        let (bus_up, bus_outages) = (Gauge::default(), Counter::default());
        registry.register(
            "snodo_bus_up",
            "Whether the shared bus is connected (1) or this instance serves alone (0)",
            bus_up.clone(),
        );
        registry.register(
            "snodo_bus_outages",
            "Times the shared bus went down",
            bus_outages.clone(),
        );
        Self {
            inner: Arc::new(Inner {
                registry,
                bus_up,
                bus_outages,
                requests,
                duration,
                gates,
                refusals,
                streams,
                tasks_running,
                tasks_ended,
                no_name: Arc::from(""),
            }),
        }
    }

    /// The series in the text exposition format ([`CONTENT_TYPE`]).
    #[must_use]
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.inner.registry);
        out
    }

    /// The gauge of running tasks in `status` (`working`, `input_required`).
    pub(crate) fn task_gauge(&self, status: &'static str) -> Gauge {
        self.inner
            .tasks_running
            .get_or_create(&TaskLabels { status })
            .clone()
    }

    /// Counts a task that ended in `status`.
    pub(crate) fn task_ended(&self, status: &'static str) {
        self.inner
            .tasks_ended
            .get_or_create(&TaskLabels { status })
            .inc();
    }

    /// Records the shared bus going up or down.
    pub(crate) fn bus_state(&self, up: bool) {
        self.inner.bus_up.set(i64::from(up));
        if !up {
            self.inner.bus_outages.inc();
        }
    }

    /// Reads an endpoint's in-flight and queued requests from its gate, at each scrape.
    pub(crate) fn watch_gate(&self, gate: GateWatch) {
        self.inner.gates.add(gate);
    }

    pub(crate) fn stream_gauge(&self, kind: &'static str) -> Gauge {
        self.inner
            .streams
            .get_or_create(&StreamLabels { kind })
            .clone()
    }

    /// Counts a finished request; `name` is its component's name when the catalogue
    /// holds it (the name label).
    pub(crate) fn observe(&self, summary: &RequestSummary, name: Option<&str>, elapsed: Duration) {
        let transport = summary.transport.as_str();
        let method = summary.method.map_or("-", Method::as_str);
        let outcome = summary.outcome.as_str();
        let name = name.unwrap_or("");
        let labels = Labels {
            transport,
            method,
            outcome,
            name,
        };
        series::count(&self.inner, &labels, elapsed);
        if let Some(limit) = summary.limit {
            // A tool's own limit: the answer is a tool error, the refusal is counted.
            self.inner
                .refusals
                .get_or_create(&RefusalLabels {
                    transport,
                    reason: format!("tool_{limit}"),
                })
                .inc();
        } else if matches!(summary.outcome, Outcome::Refused | Outcome::Timeout) {
            let reason = match (summary.status, summary.code) {
                (Some(status), _) => status.to_string(),
                (None, Some(code)) => code.to_string(),
                (None, None) => outcome.to_owned(),
            };
            self.inner
                .refusals
                .get_or_create(&RefusalLabels { transport, reason })
                .inc();
        }
    }
}

impl crate::RuntimeBuilder {
    /// Counts every request, on every transport, into `metrics` (feature `metrics`).
    pub fn metrics(self, metrics: Metrics) -> Self {
        let sink = Arc::new(metrics.clone());
        self.attach(metrics)
            .attach(Arc::clone(&sink) as Arc<dyn TaskSink>)
            .attach(sink as Arc<dyn RequestSink>)
    }
}

/// Every transport counts its requests into the request series.
impl RequestSink for Metrics {
    fn observe(&self, summary: &RequestSummary, name: Option<&str>, elapsed: Duration) {
        Metrics::observe(self, summary, name, elapsed);
    }

    fn watch_gate(&self, gate: GateWatch) {
        Metrics::watch_gate(self, gate);
    }

    fn streams(&self, kind: &'static str, by: i64) {
        self.stream_gauge(kind).inc_by(by);
    }

    fn bus_state(&self, up: bool) {
        Metrics::bus_state(self, up);
    }
}

/// The task workers count into the task series.
impl TaskSink for Metrics {
    fn running(&self, status: &'static str, by: i64) {
        self.task_gauge(status).inc_by(by);
    }

    fn ended(&self, status: &'static str) {
        self.task_ended(status);
    }
}

impl Inner {
    /// The calling thread's shards of the counter and histogram of a label set, from
    /// the families.
    fn series(&self, labels: &Labels<'_>) -> (Arc<Count>, durations::DurationsShard) {
        let &Labels {
            transport,
            method,
            outcome,
            name,
        } = labels;
        let name = if name.is_empty() {
            Arc::clone(&self.no_name)
        } else {
            Arc::from(name)
        };
        let requests = self
            .requests
            .get_or_create(&RequestLabels {
                transport,
                method,
                name,
                outcome,
            })
            .mine();
        let duration = self
            .duration
            .get_or_create(&DurationLabels { transport, method })
            .mine();
        (requests, duration)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observation::Transport;

    /// Counts a `tools/list` request as a record of it would when dropped.
    fn answer_list(metrics: &Metrics) {
        let mut summary = RequestSummary::new(Transport::Http, 10);
        summary.method = Some(Method::ToolsList);
        metrics.observe(&summary, None, Duration::from_micros(1));
    }

    fn listed(metrics: &Metrics) -> String {
        let text = metrics.encode();
        let line = text
            .lines()
            .find(|l| l.starts_with("snodo_requests_total{") && l.contains("tools/list"))
            .unwrap_or_default();
        line.rsplit(' ').next().unwrap_or_default().to_owned()
    }

    /// The per-thread series belong to their registry: two registries on one thread
    /// count apart, and a registry made after another was dropped starts at zero.
    #[test]
    fn cached_series_stay_with_their_registry() {
        let a = Metrics::new();
        let b = Metrics::new();
        for _ in 0..3 {
            answer_list(&a);
        }
        answer_list(&b);
        assert_eq!(listed(&a), "3");
        assert_eq!(listed(&b), "1");
        drop(a);
        for _ in 0..100 {
            let c = Metrics::new();
            answer_list(&c);
            assert_eq!(listed(&c), "1");
        }
        answer_list(&b);
        assert_eq!(listed(&b), "2");
        let text = b.encode();
        assert!(
            text.contains(
                "snodo_request_duration_seconds_count{transport=\"http\",method=\"tools/list\"} 2"
            ),
            "{text}"
        );
    }
}
