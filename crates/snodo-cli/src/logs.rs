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

use std::cell::RefCell;
use std::fmt::Write as _;
use std::io::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::{Context, Layer};

use crate::LogFormat;

/// Request-log lines queued for the writer thread before new ones are dropped.
const LOG_QUEUE_LINES: usize = 4096;

/// A line longer than this is not kept in the per-thread buffer once written.
const KEEP_BUFFER: usize = 4096;

thread_local! {
    static LINE: RefCell<String> = RefCell::new(String::with_capacity(512));
    /// The second last formatted and its `YYYY-MM-DDTHH:MM:SS` text.
    static SECOND: RefCell<(u64, String)> = const { RefCell::new((u64::MAX, String::new())) };
}

/// What must be flushed at exit.
pub(crate) struct Telemetry {
    /// The stderr writer's thread: dropping it flushes what is queued.
    _logs: tracing_appender::non_blocking::WorkerGuard,
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
    // One write per event would be one syscall on a worker thread per request: the
    // lines are queued to a writer thread instead, which writes what it has queued
    // through one buffer and flushes when the queue is empty (one syscall per batch
    // under load). When stderr stops draining (a client that pipes it and never reads)
    // and the queue fills, lines are dropped: logs never stall the protocol.
    // The queue holds 4096 lines (the default of 128 000 preallocates ~4 MiB, all of it
    // touched at start: cold start and first-answer RSS, issue 15).
    let (writer, guard) = tracing_appender::non_blocking::NonBlockingBuilder::default()
        .buffered_lines_limit(LOG_QUEUE_LINES)
        .lossy(true)
        .finish(std::io::BufWriter::with_capacity(
            16 * 1024,
            std::io::stderr(),
        ));
    let lines = Lines { format, writer };
    let registry = tracing_subscriber::registry().with(lines.with_filter(filter));
    match otlp_endpoint {
        None => {
            registry.init();
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
            registry
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

/// The layer: formats each event into one line and writes it in one call.
struct Lines<W> {
    format: LogFormat,
    writer: W,
}

impl<S, W> Layer<S> for Lines<W>
where
    S: Subscriber,
    W: for<'w> MakeWriter<'w> + 'static,
{
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let write = |line: &mut String| {
            line.clear();
            format_line(self.format, SystemTime::now(), event, line);
            // Lossy queue: a full queue drops the line, which is the point.
            let _ = self
                .writer
                .make_writer_for(event.metadata())
                .write_all(line.as_bytes());
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

/// One event as one line (with its `\n`).
fn format_line(format: LogFormat, now: SystemTime, event: &Event<'_>, line: &mut String) {
    let meta = event.metadata();
    match format {
        LogFormat::Human => {
            push_timestamp(line, now);
            line.push_str(match *meta.level() {
                Level::ERROR => " ERROR ",
                Level::WARN => "  WARN ",
                Level::INFO => "  INFO ",
                Level::DEBUG => " DEBUG ",
                Level::TRACE => " TRACE ",
            });
            line.push_str(meta.target());
            line.push(':');
            event.record(&mut Fields::<Human>::new(line));
        }
        LogFormat::Json => {
            line.push_str("{\"timestamp\":\"");
            push_timestamp(line, now);
            line.push_str("\",\"level\":\"");
            line.push_str(meta.level().as_str());
            line.push('"');
            event.record(&mut Fields::<Json>::new(line));
            line.push_str(",\"target\":");
            push_json_str(line, meta.target());
            line.push('}');
        }
    }
    line.push('\n');
}

/// How one format writes a field's name and the values that are not plain numbers.
trait Style {
    /// Before a value: ` key=` (human) or `,"key":` (JSON).
    fn key(line: &mut String, field: &Field);
    fn str(line: &mut String, field: &Field, value: &str);
    fn debug(line: &mut String, value: &dyn std::fmt::Debug);
}

/// `key=value` pairs after the message; strings quoted and escaped like `Debug` does.
struct Human;

impl Style for Human {
    fn key(line: &mut String, field: &Field) {
        line.push(' ');
        if field.name() != "message" {
            line.push_str(field.name());
            line.push('=');
        }
    }

    fn str(line: &mut String, field: &Field, value: &str) {
        if field.name() == "message" {
            line.push_str(value);
        } else {
            push_json_str(line, value);
        }
    }

    fn debug(line: &mut String, value: &dyn std::fmt::Debug) {
        let _ = write!(line, "{value:?}");
    }
}

/// `,"key":value` members, flattened into the event object.
struct Json;

impl Style for Json {
    fn key(line: &mut String, field: &Field) {
        line.push(',');
        push_json_str(line, field.name());
        line.push(':');
    }

    fn str(line: &mut String, _field: &Field, value: &str) {
        push_json_str(line, value);
    }

    fn debug(line: &mut String, value: &dyn std::fmt::Debug) {
        push_json_str(line, &format!("{value:?}"));
    }
}

/// An event's fields written into `line` in style `S`.
struct Fields<'a, S> {
    line: &'a mut String,
    style: std::marker::PhantomData<S>,
}

impl<'a, S: Style> Fields<'a, S> {
    fn new(line: &'a mut String) -> Self {
        Self {
            line,
            style: std::marker::PhantomData,
        }
    }
}

impl<S: Style> Visit for Fields<'_, S> {
    fn record_str(&mut self, field: &Field, value: &str) {
        S::key(self.line, field);
        S::str(self.line, field, value);
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        S::key(self.line, field);
        self.line.push_str(itoa::Buffer::new().format(value));
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        S::key(self.line, field);
        self.line.push_str(itoa::Buffer::new().format(value));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        S::key(self.line, field);
        self.line.push_str(if value { "true" } else { "false" });
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        S::key(self.line, field);
        if value.is_finite() {
            let _ = write!(self.line, "{value}");
        } else {
            self.line.push_str("null");
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        S::key(self.line, field);
        S::debug(self.line, value);
    }
}

/// `s` as a JSON string literal (which is also how `Debug` quotes plain text).
fn push_json_str(line: &mut String, s: &str) {
    line.push('"');
    // Names, methods and versions need no escape: one pass to know, one copy.
    if !s
        .bytes()
        .any(|b| b < 0x20 || b == b'"' || b == b'\\' || b == 0x7f)
    {
        line.push_str(s);
        line.push('"');
        return;
    }
    let mut start = 0;
    for (i, b) in s.bytes().enumerate() {
        let escape = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0..=0x1f | 0x7f => "",
            _ => continue,
        };
        line.push_str(&s[start..i]);
        if escape.is_empty() {
            let _ = write!(line, "\\u{b:04x}");
        } else {
            line.push_str(escape);
        }
        start = i + 1;
    }
    line.push_str(&s[start..]);
    line.push('"');
}

/// RFC 3339 UTC with microseconds: `2026-12-03T08:50:00.123456Z`.
fn push_timestamp(line: &mut String, now: SystemTime) {
    let since = now.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    // Requests come many per second: the date and time are formatted once a second.
    let cached = SECOND.with(|cell| match cell.try_borrow_mut() {
        Ok(mut second) => {
            if second.0 != secs {
                second.1.clear();
                push_second(&mut second.1, secs);
                second.0 = secs;
            }
            line.push_str(&second.1);
            true
        }
        Err(_) => false,
    });
    if !cached {
        push_second(line, secs);
    }
    line.push('.');
    push_digits(line, u64::from(since.subsec_micros()), 6);
    line.push('Z');
}

/// `n` in decimal, zero-padded to `width`.
fn push_digits(line: &mut String, n: u64, width: usize) {
    let mut b = itoa::Buffer::new();
    let s = b.format(n);
    for _ in s.len()..width {
        line.push('0');
    }
    line.push_str(s);
}

/// `YYYY-MM-DDTHH:MM:SS` of `secs` after the epoch.
fn push_second(line: &mut String, secs: u64) {
    let (year, month, day) = civil_from_days(secs / 86_400);
    let rem = secs % 86_400;
    let digits = push_digits;
    digits(line, year, 4);
    line.push('-');
    digits(line, month, 2);
    line.push('-');
    digits(line, day, 2);
    line.push('T');
    digits(line, rem / 3600, 2);
    line.push(':');
    digits(line, rem % 3600 / 60, 2);
    line.push(':');
    digits(line, rem % 60, 2);
}

/// Year, month, day of the `days`-th day after 1970-01-01 (proleptic Gregorian; Howard
/// Hinnant's `civil_from_days`, for days on or after the epoch).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    #[test]
    fn dates_are_civil() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(59), (1970, 3, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(20_790), (2026, 12, 3));
        let mut s = String::new();
        push_timestamp(
            &mut s,
            UNIX_EPOCH + Duration::from_micros(1_796_287_800_123_456),
        );
        assert_eq!(s, "2026-12-03T08:50:00.123456Z");
        // The same second again (from the cache), then the next one.
        for (micros, text) in [
            (1_796_287_800_000_007, "2026-12-03T08:50:00.000007Z"),
            (1_796_287_801_999_999, "2026-12-03T08:50:01.999999Z"),
        ] {
            s.clear();
            push_timestamp(&mut s, UNIX_EPOCH + Duration::from_micros(micros));
            assert_eq!(s, text);
        }
    }

    #[test]
    fn strings_are_escaped_as_json() {
        let mut s = String::new();
        push_json_str(&mut s, "a\"b\\c\nd\u{1}é");
        assert_eq!(s, r#""a\"b\\c\nd\u0001é""#);
        let back: String = serde_json::from_str(&s).unwrap_or_default();
        assert_eq!(back, "a\"b\\c\nd\u{1}é");
    }

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

    impl<'a> MakeWriter<'a> for Capture {
        type Writer = Capture;
        fn make_writer(&'a self) -> Capture {
            self.clone()
        }
    }

    fn capture(format: LogFormat, f: impl FnOnce()) -> String {
        use tracing_subscriber::layer::SubscriberExt as _;
        let out = Capture::default();
        let subscriber = tracing_subscriber::registry().with(Lines {
            format,
            writer: out.clone(),
        });
        tracing::subscriber::with_default(subscriber, f);
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
