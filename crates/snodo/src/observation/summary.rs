//! The typed view of a request event, for `tracing` layers that format request lines
//! without visiting the event's fields one by one.
//!
//! While a `snodo::request` event is dispatched, [`RequestSummary::with_current`] lends
//! the layers the same facts the event's fields carry, in the same order, as plain
//! values. Visiting fields goes through `dyn Visit` calls per field; a log formatter
//! that reads the summary instead writes the same line for less (the request
//! log is on every request). Any other subscriber sees an ordinary event.

use super::{Name, Outcome, Transport};
use crate::caller::Principal;
use crate::protocol::{Method, RequestId};

scoped_tls::scoped_thread_local! {
    /// The summary of the request event being dispatched on this thread: the record's
    /// own, lent by reference (nothing of it is copied).
    static CURRENT: RequestSummary
}

/// One value of a request event's field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FieldValue<'a> {
    /// Text (`message`, `transport`, `method`, `name`, `dialect`, `principal`, a string
    /// `id`, `outcome`, `limit`).
    Str(&'a str),
    /// A signed integer (`code`, a numeric `id`).
    I64(i64),
    /// An unsigned integer (`status`, `duration_us`, `bytes_in`, `bytes_out`).
    U64(u64),
}

/// What one `snodo::request` event says, as typed values.
#[derive(Debug)]
pub struct RequestSummary {
    pub(crate) transport: Transport,
    pub(crate) method: Option<Method>,
    pub(crate) method_name: Option<Box<str>>,
    pub(crate) name: Option<Name>,
    pub(crate) dialect: Option<&'static str>,
    pub(crate) principal: Option<Principal>,
    pub(crate) id: Option<RequestId>,
    pub(crate) outcome: Outcome,
    pub(crate) code: Option<i64>,
    pub(crate) status: Option<u16>,
    pub(crate) limit: Option<&'static str>,
    pub(crate) duration_us: u64,
    pub(crate) bytes_in: u64,
    pub(crate) bytes_out: u64,
}

impl RequestSummary {
    /// Calls `f` with the summary of the request event being dispatched on this thread,
    /// if there is one (only from a layer's or subscriber's `on_event` for an event of
    /// target [`REQUEST_TARGET`](crate::REQUEST_TARGET)).
    ///
    /// ```
    /// // Outside a request event there is none.
    /// assert!(snodo::RequestSummary::with_current(|_| ()).is_none());
    /// ```
    pub fn with_current<R>(f: impl FnOnce(&RequestSummary) -> R) -> Option<R> {
        CURRENT.is_set().then(|| CURRENT.with(f))
    }

    /// The event's fields in the order the event declares them, the absent ones left
    /// out: `message`, `transport`, `method`, `name`, `dialect`, `principal`, `id`,
    /// `outcome`, `code`, `status`, `limit`, `duration_us`, `bytes_in`, `bytes_out`.
    pub fn for_each_field(&self, mut f: impl FnMut(&'static str, FieldValue<'_>)) {
        use FieldValue::{I64, Str, U64};
        f("message", Str("request"));
        f("transport", Str(self.transport()));
        f("method", Str(self.method_str()));
        if let Some(name) = &self.name {
            f("name", Str(name.as_str()));
        }
        if let Some(dialect) = self.dialect {
            f("dialect", Str(dialect));
        }
        if let Some(p) = &self.principal {
            f("principal", Str(p.id()));
        }
        match &self.id {
            Some(RequestId::Number(n)) => f("id", I64(*n)),
            Some(RequestId::String(s)) => f("id", Str(s)),
            None => {}
        }
        f("outcome", Str(self.outcome()));
        if let Some(code) = self.code {
            f("code", I64(code));
        }
        if let Some(status) = self.status {
            f("status", U64(u64::from(status)));
        }
        if let Some(limit) = self.limit {
            f("limit", Str(limit));
        }
        f("duration_us", U64(self.duration_us));
        f("bytes_in", U64(self.bytes_in));
        f("bytes_out", U64(self.bytes_out));
    }

    /// The transport: `http` or `stdio`.
    #[must_use]
    pub fn transport(&self) -> &'static str {
        self.transport.as_str()
    }

    /// The method, when the message had one ([`Method::Unknown`] for one snodo does not
    /// serve: [`method_str`](Self::method_str) says what was sent).
    #[must_use]
    pub fn method(&self) -> Option<Method> {
        self.method
    }

    /// The tool or prompt name, or the resource URI (truncated), as the client sent it.
    #[must_use]
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// The protocol revision the request was answered in.
    #[must_use]
    pub fn dialect(&self) -> Option<&'static str> {
        self.dialect
    }

    /// The authenticated principal's subject.
    #[must_use]
    pub fn principal(&self) -> Option<&str> {
        self.principal.as_ref().map(Principal::id)
    }

    /// The request's id, as the client sent it.
    #[must_use]
    pub fn id(&self) -> Option<&RequestId> {
        self.id.as_ref()
    }

    /// `ok`, `tool_error`, `error`, `refused`, `timeout` or `cancelled`.
    #[must_use]
    pub fn outcome(&self) -> &'static str {
        self.outcome.as_str()
    }

    /// The JSON-RPC error code of the answer, if it was an error.
    #[must_use]
    pub fn code(&self) -> Option<i64> {
        self.code
    }

    /// The HTTP status of the answer (HTTP only).
    #[must_use]
    pub fn status(&self) -> Option<u16> {
        self.status
    }

    /// Which of a tool's own limits stopped the call (`rate`, `concurrency`, `timeout`).
    #[must_use]
    pub fn limit(&self) -> Option<&'static str> {
        self.limit
    }

    /// Microseconds from the message's arrival to its answer.
    #[must_use]
    pub fn duration_us(&self) -> u64 {
        self.duration_us
    }

    /// Bytes of the message.
    #[must_use]
    pub fn bytes_in(&self) -> u64 {
        self.bytes_in
    }

    /// Bytes written for the answer.
    #[must_use]
    pub fn bytes_out(&self) -> u64 {
        self.bytes_out
    }

    /// The method as sent (`-` when the message had none).
    #[must_use]
    pub fn method_str(&self) -> &str {
        match (&self.method_name, self.method) {
            (Some(name), _) => name,
            (None, Some(m)) => m.as_str(),
            (None, None) => "-",
        }
    }

    /// The summary of a message of `bytes_in` bytes that arrived on `transport`, before
    /// anything else is known of it.
    pub(crate) fn new(transport: Transport, bytes_in: usize) -> Self {
        Self {
            transport,
            method: None,
            method_name: None,
            name: None,
            dialect: None,
            principal: None,
            id: None,
            outcome: Outcome::Ok,
            code: None,
            status: None,
            limit: None,
            duration_us: 0,
            bytes_in: bytes_in as u64,
            bytes_out: 0,
        }
    }

    /// Lends this summary to the layers while `emit` dispatches its event.
    pub(crate) fn lend(&self, emit: impl FnOnce(&RequestSummary)) {
        CURRENT.set(self, || emit(self));
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use tracing::field::{Field, Visit};
    use tracing_subscriber::layer::{Context, Layer, SubscriberExt as _};

    use super::*;
    use crate::engine::observe::{Observe, Outcome, Transport};

    type Seen = Arc<Mutex<Vec<(Vec<String>, Option<Vec<String>>)>>>;

    /// Keeps, per request event, its fields as visited and as the summary lists them.
    struct Both(Seen);

    struct Visited(Vec<String>);

    impl Visit for Visited {
        fn record_str(&mut self, f: &Field, v: &str) {
            self.0
                .push(format!("{}={:?}", f.name(), FieldValue::Str(v)));
        }
        fn record_i64(&mut self, f: &Field, v: i64) {
            self.0
                .push(format!("{}={:?}", f.name(), FieldValue::I64(v)));
        }
        fn record_u64(&mut self, f: &Field, v: u64) {
            self.0
                .push(format!("{}={:?}", f.name(), FieldValue::U64(v)));
        }
        fn record_debug(&mut self, f: &Field, v: &dyn std::fmt::Debug) {
            self.0.push(format!("{}=Debug({v:?})", f.name()));
        }
    }

    impl<S: tracing::Subscriber> Layer<S> for Both {
        fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
            let mut visited = Visited(Vec::new());
            event.record(&mut visited);
            let listed = RequestSummary::with_current(|s| {
                let mut v = Vec::new();
                s.for_each_field(|name, value| v.push(format!("{name}={value:?}")));
                v
            });
            if let Ok(mut seen) = self.0.lock() {
                seen.push((visited.0, listed));
            }
        }
    }

    /// The summary lists exactly the fields the event carries, in the same order and
    /// with the same types, so a formatter reading it writes the same line.
    #[test]
    fn the_summary_says_what_the_event_says() {
        let _alone = crate::engine::observe::tracing_test_lock();
        let seen = Seen::default();
        let subscriber = tracing_subscriber::registry().with(Both(Arc::clone(&seen)));
        tracing::subscriber::with_default(subscriber, || {
            // A call site another test registered while this subscriber was being set
            // may have cached "never": ask every live subscriber again.
            tracing::callsite::rebuild_interest_cache();
            let observe = Observe::default();
            let mut r = observe
                .begin(Transport::Http, 10, tokio::time::Instant::now())
                .unwrap_or_else(|| panic!("no record"));
            r.method_name("tools/call");
            r.summary.name = Some("say \"hi\"".into());
            r.summary.dialect = Some("2026-07-28");
            r.summary.id = Some(RequestId::Number(7));
            r.summary.status = Some(200);
            drop(r);
            let mut r = observe
                .begin(Transport::Stdio, 3, tokio::time::Instant::now())
                .unwrap_or_else(|| panic!("no record"));
            r.method_name("no/such");
            r.summary.id = Some(RequestId::String("a b".into()));
            r.summary.outcome = Outcome::Refused;
            r.summary.code = Some(-32601);
            r.summary.limit = Some("rate");
            r.add_bytes_out(5);
            drop(r);
        });
        let seen = seen.lock().map(|s| s.clone()).unwrap_or_default();
        assert_eq!(seen.len(), 2);
        for (visited, listed) in &seen {
            let listed = listed.as_ref().unwrap_or_else(|| panic!("no summary lent"));
            // The duration differs by nothing: both read the same summary.
            assert_eq!(visited, listed);
        }
        assert!(
            seen[0].0.contains(&"id=I64(7)".to_string()),
            "{:?}",
            seen[0].0
        );
        assert!(
            seen[1].0.contains(&r#"id=Str("a b")"#.to_string()),
            "{:?}",
            seen[1].0
        );
        assert!(seen[1].0.contains(&r#"method=Str("no/such")"#.to_string()));
        // Outside the event, nothing is lent.
        assert!(RequestSummary::with_current(|_| ()).is_none());
    }
}
