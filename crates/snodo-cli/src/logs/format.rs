//! One `tracing` event as one line: human (`fmt`-like) or JSON, written with `str`
//! pushes and `itoa` instead of `Debug`.

use std::fmt::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

use snodo::FieldValue;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Metadata};

use super::request::write_request;
use crate::LogFormat;

thread_local! {
    /// The second last formatted and its `YYYY-MM-DDTHH:MM:SS.` text.
    static SECOND: std::cell::RefCell<(u64, String)> =
        const { std::cell::RefCell::new((u64::MAX, String::new())) };
}

/// One event as one line (with its `\n`). A request event whose typed summary is
/// lent (see [`snodo::RequestSummary`]) is written from it by [`write_request`];
/// any other event by visiting its fields. Both write the same line for a request.
pub(super) fn format_line(
    format: LogFormat,
    now: SystemTime,
    event: &Event<'_>,
    line: &mut String,
) {
    if with_summary(event, |s| write_request(format, now, s, line)).is_some() {
        return;
    }
    format_visited(format, now, event, line);
}

/// Calls `f` with the typed summary of `event` when it is a request event that lends
/// one (see [`snodo::RequestSummary::with_current`]).
pub(super) fn with_summary<R>(
    event: &Event<'_>,
    f: impl FnOnce(&snodo::RequestSummary) -> R,
) -> Option<R> {
    let meta = event.metadata();
    if meta.target() != snodo::REQUEST_TARGET || *meta.level() != Level::INFO {
        return None;
    }
    snodo::RequestSummary::with_current(f)
}

/// One event as one line, from its fields as `tracing` visits them.
pub(super) fn format_visited(
    format: LogFormat,
    now: SystemTime,
    event: &Event<'_>,
    line: &mut String,
) {
    match format {
        LogFormat::Human => write_line::<Human>(now, event, line),
        LogFormat::Json => write_line::<Json>(now, event, line),
    }
}

fn write_line<S: Style>(now: SystemTime, event: &Event<'_>, line: &mut String) {
    let meta = event.metadata();
    S::begin(line, now, meta);
    event.record(&mut Fields::<S>::new(line));
    S::end(line, meta);
    line.push('\n');
}

/// How one format writes a line around its fields, and each field.
trait Style {
    /// What comes before the fields.
    fn begin(line: &mut String, now: SystemTime, meta: &Metadata<'_>);
    /// What comes after the fields.
    fn end(line: &mut String, meta: &Metadata<'_>);
    /// One field.
    fn field(line: &mut String, name: &str, value: FieldValue<'_>);
    /// A field whose value only has a `Debug` form.
    fn debug(line: &mut String, name: &str, value: &dyn std::fmt::Debug);
    /// A field written as given (booleans and numbers).
    fn raw(line: &mut String, name: &str, text: &str);
}

/// `TIMESTAMP  LEVEL target: message key=value…`; strings quoted and escaped like
/// `Debug` does.
struct Human;

impl Human {
    fn key(line: &mut String, name: &str) {
        line.push(' ');
        if name != "message" {
            line.push_str(name);
            line.push('=');
        }
    }
}

impl Style for Human {
    fn begin(line: &mut String, now: SystemTime, meta: &Metadata<'_>) {
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
    }

    fn end(_line: &mut String, _meta: &Metadata<'_>) {}

    fn field(line: &mut String, name: &str, value: FieldValue<'_>) {
        Self::key(line, name);
        match value {
            FieldValue::Str(v) if name == "message" => line.push_str(v),
            other => push_value(line, other),
        }
    }

    fn debug(line: &mut String, name: &str, value: &dyn std::fmt::Debug) {
        Self::key(line, name);
        let _ = write!(line, "{value:?}");
    }

    fn raw(line: &mut String, name: &str, text: &str) {
        Self::key(line, name);
        line.push_str(text);
    }
}

/// One JSON object: timestamp and level, the fields flattened into it, the target.
struct Json;

impl Json {
    fn key(line: &mut String, name: &str) {
        line.push(',');
        push_json_str(line, name);
        line.push(':');
    }
}

impl Style for Json {
    fn begin(line: &mut String, now: SystemTime, meta: &Metadata<'_>) {
        line.push_str("{\"timestamp\":\"");
        push_timestamp(line, now);
        line.push_str("\",\"level\":\"");
        line.push_str(meta.level().as_str());
        line.push('"');
    }

    fn end(line: &mut String, meta: &Metadata<'_>) {
        line.push_str(",\"target\":");
        push_json_str(line, meta.target());
        line.push('}');
    }

    fn field(line: &mut String, name: &str, value: FieldValue<'_>) {
        Self::key(line, name);
        push_value(line, value);
    }

    fn debug(line: &mut String, name: &str, value: &dyn std::fmt::Debug) {
        Self::key(line, name);
        push_json_str(line, &format!("{value:?}"));
    }

    fn raw(line: &mut String, name: &str, text: &str) {
        Self::key(line, name);
        line.push_str(text);
    }
}

/// A value as both formats write it: strings as JSON string literals, numbers plain.
fn push_value(line: &mut String, value: FieldValue<'_>) {
    match value {
        FieldValue::Str(v) => push_json_str(line, v),
        FieldValue::I64(n) => line.push_str(itoa::Buffer::new().format(n)),
        FieldValue::U64(n) => line.push_str(itoa::Buffer::new().format(n)),
        _ => line.push_str("null"),
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
        S::field(self.line, field.name(), FieldValue::Str(value));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        S::field(self.line, field.name(), FieldValue::U64(value));
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        S::field(self.line, field.name(), FieldValue::I64(value));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        S::raw(
            self.line,
            field.name(),
            if value { "true" } else { "false" },
        );
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        if value.is_finite() {
            S::raw(self.line, field.name(), &value.to_string());
        } else {
            S::raw(self.line, field.name(), "null");
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        S::debug(self.line, field.name(), value);
    }
}

/// `s` as a JSON string literal (which is also how `Debug` quotes plain text).
fn push_json_str(line: &mut String, s: &str) {
    line.push('"');
    push_json_body(line, s);
    line.push('"');
}

/// `s` escaped as the inside of a JSON string literal.
pub(super) fn push_json_body(line: &mut String, s: &str) {
    // Names, methods and versions need no escape: one pass to know, one copy.
    if !s
        .bytes()
        .any(|b| b < 0x20 || b == b'"' || b == b'\\' || b == 0x7f)
    {
        line.push_str(s);
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
}

/// RFC 3339 UTC with microseconds: `2026-12-03T08:50:00.123456Z`.
pub(super) fn push_timestamp(line: &mut String, now: SystemTime) {
    push_time(line, now);
    line.push('Z');
}

/// The timestamp without its `Z`: `2026-12-03T08:50:00.123456`.
pub(super) fn push_time(line: &mut String, now: SystemTime) {
    let since = now.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    // Requests come many per second: the date and time are formatted once a second.
    let cached = SECOND.with(|cell| match cell.try_borrow_mut() {
        Ok(mut second) => {
            if second.0 != secs {
                second.1.clear();
                push_second(&mut second.1, secs);
                second.1.push('.');
                second.0 = secs;
            }
            // Always this long until the year 10000: a copy of known length (no call).
            match second.1.get(..SECOND_TEXT) {
                Some(text) => line.push_str(text),
                None => line.push_str(&second.1),
            }
            true
        }
        Err(_) => false,
    });
    if !cached {
        push_second(line, secs);
        line.push('.');
    }
    // Six digits, always, two at a time from a table (no text to check as UTF-8, no
    // copy call).
    let micros = since.subsec_micros() as usize;
    for pair in [micros / 10_000, micros / 100 % 100, micros % 100] {
        let [tens, ones] = PAIRS[pair % 100];
        line.push(char::from(tens));
        line.push(char::from(ones));
    }
}

/// The length of `YYYY-MM-DDTHH:MM:SS.`.
const SECOND_TEXT: usize = 20;

/// `"00"` to `"99"`.
const PAIRS: [[u8; 2]; 100] = {
    let mut pairs = [[0; 2]; 100];
    let mut i = 0;
    while i < 100 {
        pairs[i] = [b'0' + (i / 10) as u8, b'0' + (i % 10) as u8];
        i += 1;
    }
    pairs
};

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
}
