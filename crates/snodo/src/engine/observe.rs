//! Request observation, for every transport: one structured `tracing` event per
//! request (target [`REQUEST_TARGET`], level `info`) and, with the `metrics` feature and
//! a [`RequestSink`] on the runtime (the metrics), its series.
//!
//! A transport opens a [`Record`] when a message arrives, says what it learnt (the
//! admitted call, the outcome, the HTTP status) and drops it when the answer is sent:
//! the drop emits the event and counts the request, so every request is seen once
//! whatever path it leaves by. When neither the event nor metrics are wanted, no record
//! is made: the disabled path is one filter check, with no allocation.
//!
//! Nothing secret is recorded: no argument values, no tokens, no `_meta` contents; the
//! principal's subject only.

use std::sync::Arc;

use tokio::time::Instant;

use crate::caller::Principal;
pub(crate) use crate::observation::{Outcome, Transport};
use crate::observation::{RequestSink, RequestSummary};
use crate::protocol::{Method, RequestId, RpcError};
use crate::router::Call;
use crate::runtime::Runtime;

/// The `tracing` target of the per-request events.
pub const REQUEST_TARGET: &str = "snodo::request";

/// Longest component name (or URI) a record keeps, in bytes.
const MAX_NAME: usize = 200;

/// Whether a subscriber wants the request event, decided as `tracing`'s event macros
/// decide it: by the call site's cached interest, asking the subscriber only when it
/// answered "sometimes". (`tracing::enabled!` asks the subscriber every time, about
/// 100 instructions on every request.)
fn request_event_wanted() -> bool {
    use tracing::callsite::DefaultCallsite;
    use tracing::level_filters::{LevelFilter, STATIC_MAX_LEVEL};
    use tracing::{Level, Metadata};

    static CALLSITE: DefaultCallsite = DefaultCallsite::new(&META);
    static META: Metadata<'static> = tracing_core::metadata! {
        name: "request",
        target: REQUEST_TARGET,
        level: Level::INFO,
        fields: &[],
        callsite: &CALLSITE,
        kind: tracing::metadata::Kind::HINT,
    };
    if Level::INFO > STATIC_MAX_LEVEL || Level::INFO > LevelFilter::current() {
        return false;
    }
    let interest = CALLSITE.interest();
    interest.is_always()
        || (!interest.is_never() && tracing::dispatcher::get_default(|d| d.enabled(&META)))
}

/// Serialises the unit tests that install a `tracing` subscriber or assert what
/// [`request_event_wanted`] answers: the interest `tracing` caches per call site and its
/// maximum level are global, rebuilt from every live subscriber, so one test's
/// subscriber, run in parallel, changes what another sees.
#[cfg(test)]
pub(crate) fn tracing_test_lock() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// What every request of one engine observes with.
#[derive(Clone, Default)]
pub(crate) struct Observe {
    sink: Option<Arc<dyn RequestSink>>,
}

impl std::fmt::Debug for Observe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Observe")
            .field("sink", &self.sink.is_some())
            .finish()
    }
}

impl Observe {
    pub(crate) fn new(runtime: &Runtime) -> Self {
        Self {
            sink: runtime.slots().get::<Arc<dyn RequestSink>>().cloned(),
        }
    }

    fn metrics_on(&self) -> bool {
        self.sink.is_some()
    }

    /// A record for a message that arrived at `start` (`bytes_in`: its size), or `None`
    /// when nothing observes requests.
    pub(crate) fn begin(
        &self,
        transport: Transport,
        bytes_in: usize,
        start: Instant,
    ) -> Option<Record> {
        let log = request_event_wanted();
        if !log && !self.metrics_on() {
            return None;
        }
        Some(Record {
            observe: self.clone(),
            log,
            start,
            known_name: false,
            summary: RequestSummary::new(transport, bytes_in),
        })
    }

    /// Gives the sink, if any, the gate's occupancy to read when scraped.
    pub(crate) fn watch_gate(&self, gate: &super::gate::Gate) {
        if let Some(sink) = &self.sink {
            sink.watch_gate(gate.watch());
        }
    }

    /// Counts a stream (`"sse"`, `"listen"`) open while the returned guard lives.
    pub(crate) fn stream(&self, kind: &'static str) -> Gauged {
        if let Some(sink) = &self.sink {
            sink.streams(kind, 1);
        }
        Gauged {
            sink: self.sink.clone().map(|s| (s, kind)),
        }
    }
}

/// A stream counted open while this lives (nothing without a sink).
#[must_use]
pub(crate) struct Gauged {
    sink: Option<(Arc<dyn RequestSink>, &'static str)>,
}

impl std::fmt::Debug for Gauged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gauged").finish_non_exhaustive()
    }
}

impl Drop for Gauged {
    fn drop(&mut self) {
        if let Some((sink, kind)) = &self.sink {
            sink.streams(kind, -1);
        }
    }
}

/// One request being observed; dropping it emits the event and counts the request.
///
/// What it learns goes straight into the summary the event's layers are lent.
#[derive(Debug)]
pub(crate) struct Record {
    observe: Observe,
    log: bool,
    start: Instant,
    /// Whether the summary's name is in the catalogue (only such names become metric
    /// labels).
    known_name: bool,
    pub(crate) summary: RequestSummary,
}

impl Record {
    /// The size of the message, once read (HTTP reads the body after admission).
    pub(crate) fn set_bytes_in(&mut self, n: usize) {
        self.summary.bytes_in = n as u64;
    }

    /// Bytes written for this request.
    pub(crate) fn add_bytes_out(&mut self, n: usize) {
        self.summary.bytes_out = self.summary.bytes_out.saturating_add(n as u64);
    }

    /// The method of a message that was not admitted (or not a request).
    pub(crate) fn method_name(&mut self, method: &str) {
        let parsed = Method::parse(method);
        self.summary.method = Some(parsed);
        if parsed == Method::Unknown {
            self.summary.method_name = Some(truncate(method).into());
        }
    }

    /// The admitted request.
    pub(crate) fn admitted(&mut self, id: &RequestId, call: &Call, principal: Option<&Principal>) {
        let s = &mut self.summary;
        s.method = Some(call.method);
        if call.method == Method::Unknown {
            s.method_name = Some(truncate(&call.method_name).into());
        }
        s.dialect = Some(call.dialect.version());
        s.id = Some(id.clone());
        s.principal = principal.cloned();
        if call.method.name_field().is_some() {
            if let Some(name) = call.target() {
                // Only metric labels need to know (a catalogue lookup per request).
                self.known_name = self.observe.metrics_on()
                    && match call.method {
                        Method::ToolsCall => call.catalogue.tool(name).is_some(),
                        Method::PromptsGet => call.catalogue.prompt(name).is_some(),
                        Method::ResourcesRead => call.catalogue.resource(name).is_some(),
                        _ => false,
                    };
                self.summary.name = Some(truncate(name).into());
            }
        }
    }

    /// Answered with this JSON-RPC error.
    pub(crate) fn error(&mut self, e: &RpcError) {
        self.summary.outcome = Outcome::Error;
        self.summary.code = Some(e.code().0);
    }

    /// Refused before execution, answered with this error.
    pub(crate) fn refused(&mut self, e: &RpcError) {
        self.summary.outcome = Outcome::Refused;
        self.summary.code = Some(e.code().0);
    }

    /// A request that got no result (refused, no capacity, deadline passed).
    pub(crate) fn failure(&mut self, failure: &super::Failure) {
        match failure {
            super::Failure::Error(e) => self.error(e),
            super::Failure::Overloaded(e) => self.refused(e),
            super::Failure::TimedOut => {
                self.refused(&super::failure::timeout_error());
                self.summary.outcome = Outcome::Timeout;
            }
        }
    }

    /// The HTTP status of the answer: a refusal when it is an error status and nothing
    /// more precise was said.
    pub(crate) fn http_status(&mut self, status: u16) {
        self.summary.status = Some(status);
        if status >= 400 && self.summary.outcome == Outcome::Ok {
            self.summary.outcome = Outcome::Refused;
        }
    }
}

impl Drop for Record {
    fn drop(&mut self) {
        let elapsed = self.start.elapsed();
        if let Some(sink) = &self.observe.sink {
            sink.observe(&self.summary, self.label_name(), elapsed);
        }
        if !self.log {
            return;
        }
        self.summary.duration_us = elapsed
            .as_secs()
            .saturating_mul(1_000_000)
            .saturating_add(u64::from(elapsed.subsec_micros()));
        self.summary.lend(|s| {
            // The id is one field, `id`, with the type the client sent: a number as a
            // number, a string as a string (two declarations of the same name, one of
            // them empty; both are cheaper to record than a `Display` value). The
            // message is a plain string field for the same reason (`format_args!` goes
            // through `fmt`). The order is `RequestSummary::for_each_field`'s.
            let (id_number, id_string) = match &s.id {
                Some(RequestId::Number(n)) => (Some(*n), None),
                Some(RequestId::String(s)) => (None, Some(&**s)),
                None => (None, None),
            };
            tracing::info!(
                target: REQUEST_TARGET,
                message = "request",
                transport = s.transport(),
                method = s.method_str(),
                name = s.name(),
                dialect = s.dialect,
                principal = s.principal(),
                id = id_number,
                id = id_string,
                outcome = s.outcome(),
                code = s.code,
                status = s.status,
                limit = s.limit,
                duration_us = s.duration_us,
                bytes_in = s.bytes_in,
                bytes_out = s.bytes_out,
            );
        });
    }
}

/// At most [`MAX_NAME`] bytes of `s`, cut at a character boundary.
fn truncate(s: &str) -> &str {
    if s.len() <= MAX_NAME {
        return s;
    }
    let mut end = MAX_NAME;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// The record's metric labels, for the request sink.
impl Record {
    /// The name label: the component's name when the catalogue has it, `None` for an
    /// unknown one (labelled empty).
    pub(crate) fn label_name(&self) -> Option<&str> {
        self.summary.name.as_deref().filter(|_| self.known_name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The disabled path: no subscriber wants the event and no metrics are configured,
    /// so no record (and no allocation) is made.
    #[test]
    fn nothing_is_recorded_when_nothing_observes() {
        let _alone = tracing_test_lock();
        // The cached interest may still count a subscriber an earlier test dropped.
        tracing::callsite::rebuild_interest_cache();
        let observe = Observe::default();
        assert!(observe.begin(Transport::Http, 10, Instant::now()).is_none());
        // A subscriber that wants everything but the request events.
        let quiet = tracing_subscriber_stub::OnlyWarnings;
        tracing::subscriber::with_default(quiet, || {
            assert!(
                observe
                    .begin(Transport::Stdio, 10, Instant::now())
                    .is_none()
            );
        });
    }

    /// A minimal subscriber enabled for `warn` and above only.
    mod tracing_subscriber_stub {
        use tracing::span::{Attributes, Id, Record};
        use tracing::{Event, Level, Metadata, Subscriber};

        pub(super) struct OnlyWarnings;

        impl Subscriber for OnlyWarnings {
            fn enabled(&self, metadata: &Metadata<'_>) -> bool {
                *metadata.level() <= Level::WARN
            }
            fn new_span(&self, _: &Attributes<'_>) -> Id {
                Id::from_u64(1)
            }
            fn record(&self, _: &Id, _: &Record<'_>) {}
            fn record_follows_from(&self, _: &Id, _: &Id) {}
            fn event(&self, _: &Event<'_>) {}
            fn enter(&self, _: &Id) {}
            fn exit(&self, _: &Id) {}
        }
    }
}
