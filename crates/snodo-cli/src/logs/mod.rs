//! The binary's logs: one line per `tracing` event on stderr, human or JSON, written
//! by a thread of its own.
//!
//! Every request is an event (target `snodo::request`), so formatting is on the hot
//! path. `tracing_subscriber::fmt` formats every field through `Debug` (each string
//! escaped character by character) and styles each part with `nu-ansi-term` even when
//! colours are off: about 18 000 instructions per request, 40 % of a `tools/call`
//! (issue 19). This layer writes the same lines with `str` pushes and `itoa`, into one
//! buffer per thread, and hands them to the writer thread in one piece.
//!
//! Span context is not printed: a request event carries everything about its request.

mod format;
mod request;
mod sink;

use std::cell::RefCell;
use std::time::SystemTime;

use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer};

use crate::LogFormat;
use format::format_line;
pub(crate) use sink::{Sink, SinkGuard};

/// A line longer than this is not kept in the per-thread buffer once written.
const KEEP_BUFFER: usize = 4096;

thread_local! {
    static LINE: RefCell<String> = RefCell::new(String::with_capacity(512));
}

/// What must be flushed at exit.
pub(crate) struct Telemetry {
    /// The stderr writer's thread: dropping it writes what is queued.
    _logs: SinkGuard,
    #[cfg(feature = "otlp")]
    provider: Option<snodo::otlp::SdkTracerProvider>,
}

impl Telemetry {
    /// Flushes the span exporter (the log queue flushes when this is dropped).
    pub(crate) fn shutdown(self) {
        #[cfg(feature = "otlp")]
        if let Some(p) = self.provider {
            if let Err(e) = p.shutdown() {
                eprintln!("snodo: flushing spans failed: {e}");
            }
        }
    }
}

/// Logs go to stderr always (stdout carries the stdio transport's messages); with
/// `--otlp-endpoint`, request spans also go to the OTLP exporter.
pub(crate) fn init(format: LogFormat, otlp_endpoint: Option<&str>) -> Result<Telemetry, String> {
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;

    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| "snodo=info,warn".into());
    // One write per event would be one system call on a worker thread per request: the
    // lines go to a writer thread that writes them in batches (see `sink`).
    sink::grow_pipe(std::io::stderr());
    let (sink, guard) =
        Sink::spawn(std::io::stderr()).map_err(|e| format!("cannot start the log writer: {e}"))?;
    let lines = Lines { format, sink };
    match otlp_endpoint {
        None => {
            // One layer: the filter is global, so `tracing` caches each call site's
            // verdict and an enabled event costs no filter call (a per-layer filter is
            // asked again at every event: ~100 instructions per request).
            tracing_subscriber::registry()
                .with(filter)
                .with(lines)
                .init();
            Ok(Telemetry {
                _logs: guard,
                #[cfg(feature = "otlp")]
                provider: None,
            })
        }
        #[cfg(feature = "otlp")]
        Some(endpoint) => {
            let provider = snodo::otlp::provider(endpoint, "snodo")
                .map_err(|e| format!("cannot export to {endpoint}: {e}"))?;
            let spans = tracing_subscriber::filter::Targets::new()
                .with_target(snodo::SPAN_TARGET, tracing::Level::DEBUG);
            tracing_subscriber::registry()
                .with(lines.with_filter(filter))
                .with(snodo::otlp::layer(&provider).with_filter(spans))
                .init();
            Ok(Telemetry {
                _logs: guard,
                provider: Some(provider),
            })
        }
        #[cfg(not(feature = "otlp"))]
        Some(_) => Err("--otlp-endpoint needs a snodo built with the otlp feature \
             (cargo build -p snodo-cli --features otlp)"
            .into()),
    }
}

/// The layer: formats each event into one line and queues it in one piece.
struct Lines {
    format: LogFormat,
    sink: Sink,
}

impl<S: Subscriber> Layer<S> for Lines {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let now = SystemTime::now();
        // A request line is written by our code alone (no field's `Debug`, nothing that
        // logs), so it may be written straight into the queue, under its lock: one copy
        // of the line fewer. When another thread holds the queue it goes the other way.
        let written = format::with_summary(event, |s| {
            self.sink
                .write_in_place(|queue| request::write_request(self.format, now, s, queue))
        });
        if written == Some(true) {
            return;
        }
        let write = |line: &mut String| {
            line.clear();
            format_line(self.format, now, event, line);
            self.sink.push(line);
        };
        // An event emitted while a line is being written on this thread (none is, but a
        // writer could log) gets a buffer of its own.
        let done = LINE.with(|cell| match cell.try_borrow_mut() {
            Ok(mut line) => {
                write(&mut line);
                if line.capacity() > KEEP_BUFFER {
                    *line = String::with_capacity(512);
                }
                true
            }
            Err(_) => false,
        });
        if !done {
            write(&mut String::new());
        }
    }
}

/// Serializes the tests that install a tracing subscriber and rebuilds the callsites'
/// cached interest for the caller's: run in parallel, one test's subscriber (or none)
/// can otherwise leave a callsite's interest cached as "never" for another's.
#[cfg(test)]
pub(crate) fn with_test_subscriber<S, R>(subscriber: S, f: impl FnOnce() -> R) -> R
where
    S: tracing::Subscriber + Send + Sync + 'static,
{
    let _alone = test_lock();
    tracing::subscriber::with_default(subscriber, || {
        tracing::callsite::rebuild_interest_cache();
        f()
    })
}

/// Runs `future` on a fresh current-thread runtime while no test holds a subscriber
/// ([`with_test_subscriber`]): its requests may be the first to reach the request log's
/// call sites, and a call site registered in parallel with another test's subscriber
/// can keep "never" as its interest (seen under load: no request line in that test).
#[cfg(test)]
pub(crate) fn block_on_alone<F: std::future::Future>(future: F) -> F::Output {
    let _alone = test_lock();
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"))
        .block_on(future)
}

#[cfg(test)]
fn test_lock() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// Captures what the layer writes.
    #[derive(Clone, Default)]
    struct Capture(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Capture {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if let Ok(mut v) = self.0.lock() {
                v.extend_from_slice(buf);
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn capture(format: LogFormat, f: impl FnOnce()) -> String {
        use tracing_subscriber::layer::SubscriberExt as _;
        let out = Capture::default();
        let (sink, guard) = Sink::spawn(out.clone()).unwrap_or_else(|e| panic!("{e}"));
        let subscriber = tracing_subscriber::registry().with(Lines { format, sink });
        super::with_test_subscriber(subscriber, f);
        drop(guard); // writes what is queued
        let bytes = out.0.lock().map(|v| v.clone()).unwrap_or_default();
        String::from_utf8(bytes).unwrap_or_default()
    }

    fn request_event() {
        tracing::info!(
            target: "snodo::request",
            transport = "http",
            method = "tools/call",
            name = Some("say \"hi\""),
            principal = None::<&str>,
            id = tracing::field::display(7),
            code = -32602i64,
            status = 200u16,
            ok = true,
            "request"
        );
    }

    #[test]
    fn human_lines_read_like_fmt() {
        let out = capture(LogFormat::Human, request_event);
        let line = out.strip_suffix('\n').unwrap_or_default();
        assert_eq!(out.matches('\n').count(), 1, "{out}");
        let (stamp, rest) = line.split_once(' ').unwrap_or_default();
        assert_eq!(stamp.len(), "2026-12-03T08:50:00.123456Z".len(), "{line}");
        assert_eq!(
            rest,
            r#" INFO snodo::request: request transport="http" method="tools/call" name="say \"hi\"" id=7 code=-32602 status=200 ok=true"#
        );
    }

    #[test]
    fn json_lines_are_json_objects() {
        let out = capture(LogFormat::Json, request_event);
        let v: serde_json::Value = serde_json::from_str(out.trim_end()).unwrap_or_default();
        assert_eq!(v["level"], "INFO");
        assert_eq!(v["target"], "snodo::request");
        assert_eq!(v["message"], "request");
        assert_eq!(v["name"], "say \"hi\"");
        assert_eq!(v["id"], "7");
        assert_eq!(v["code"], -32602);
        assert_eq!(v["status"], 200);
        assert_eq!(v["ok"], true);
        assert!(v.get("principal").is_none(), "{v}");
        assert!(v["timestamp"].as_str().is_some_and(|t| t.ends_with('Z')));
    }
}
