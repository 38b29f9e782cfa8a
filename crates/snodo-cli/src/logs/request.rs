//! The request line, written straight from the request's typed summary.
//!
//! A request line has the same shape every time: the same fields in the same order,
//! most of them texts snodo chose (transport, method, dialect, outcome). So its fixed
//! parts — each key with its punctuation and opening quote — are constants of the
//! format, and each field costs two or three copies: the key, the value, the closing
//! quote. Only text a client chose (a name, an unknown method, a string id, a subject)
//! is checked for characters to escape. The line is byte for byte the one the generic
//! path writes by visiting the event's fields (a test holds them equal).

use std::cell::RefCell;
use std::time::SystemTime;

use snodo::RequestSummary;
use snodo::protocol::{Method, RequestId};

use super::format::{push_json_body, push_time};
use crate::LogFormat;

/// The fixed text of one format's request line: what comes before the timestamp,
/// after it (from its `Z`), each field's key (for a text value, with its opening
/// quote) and the end. Constants of a type, so each copy of one has a length known
/// when compiling (no copy call).
trait Frame {
    const JSON: bool;
    const OPEN: &'static str;
    const HEAD: &'static str;
    const TRANSPORT: &'static str;
    const METHOD: &'static str;
    const NAME: &'static str;
    const DIALECT: &'static str;
    const PRINCIPAL: &'static str;
    const ID_NUMBER: &'static str;
    const ID_TEXT: &'static str;
    const OUTCOME: &'static str;
    const CODE: &'static str;
    const STATUS: &'static str;
    const LIMIT: &'static str;
    const DURATION_US: &'static str;
    const BYTES_IN: &'static str;
    const BYTES_OUT: &'static str;
    const CLOSE: &'static str;
}

/// `TIMESTAMP  INFO snodo::request: request transport="http" … bytes_out=256`.
struct Human;

impl Frame for Human {
    const JSON: bool = false;
    const OPEN: &'static str = "";
    const HEAD: &'static str = "Z  INFO snodo::request: request";
    const TRANSPORT: &'static str = " transport=\"";
    const METHOD: &'static str = " method=\"";
    const NAME: &'static str = " name=\"";
    const DIALECT: &'static str = " dialect=\"";
    const PRINCIPAL: &'static str = " principal=\"";
    const ID_NUMBER: &'static str = " id=";
    const ID_TEXT: &'static str = " id=\"";
    const OUTCOME: &'static str = " outcome=\"";
    const CODE: &'static str = " code=";
    const STATUS: &'static str = " status=";
    const LIMIT: &'static str = " limit=\"";
    const DURATION_US: &'static str = " duration_us=";
    const BYTES_IN: &'static str = " bytes_in=";
    const BYTES_OUT: &'static str = " bytes_out=";
    const CLOSE: &'static str = "\n";
}

/// `{"timestamp":"…","level":"INFO","message":"request","transport":"http",…}`.
struct Json;

impl Frame for Json {
    const JSON: bool = true;
    const OPEN: &'static str = "{\"timestamp\":\"";
    const HEAD: &'static str = "Z\",\"level\":\"INFO\",\"message\":\"request\"";
    const TRANSPORT: &'static str = ",\"transport\":\"";
    const METHOD: &'static str = ",\"method\":\"";
    const NAME: &'static str = ",\"name\":\"";
    const DIALECT: &'static str = ",\"dialect\":\"";
    const PRINCIPAL: &'static str = ",\"principal\":\"";
    const ID_NUMBER: &'static str = ",\"id\":";
    const ID_TEXT: &'static str = ",\"id\":\"";
    const OUTCOME: &'static str = ",\"outcome\":\"";
    const CODE: &'static str = ",\"code\":";
    const STATUS: &'static str = ",\"status\":";
    const LIMIT: &'static str = ",\"limit\":\"";
    const DURATION_US: &'static str = ",\"duration_us\":";
    const BYTES_IN: &'static str = ",\"bytes_in\":";
    const BYTES_OUT: &'static str = ",\"bytes_out\":";
    const CLOSE: &'static str = ",\"target\":\"snodo::request\"}\n";
}

thread_local! {
    /// This thread's last "what" and "how it ended" parts, as written.
    static RECENT: RefCell<Recent> = RefCell::new(Recent::default());
}

/// A server answers the same few kinds of request over and over: the part of a line
/// that says what was asked (transport, method, name, dialect, principal) and the part
/// that says how it ended (outcome, code, status, limit) are kept as written for the
/// last request, and copied whole when the next one has the same.
#[derive(Default)]
struct Recent {
    what: Part<What>,
    end: Part<End>,
}

/// One kept part: the facts it was written from and its text.
#[derive(Default)]
struct Part<K> {
    key: Option<K>,
    text: String,
}

/// The facts of the "what" part (the `'static` texts compared by address: a miss only
/// costs writing the part again).
#[derive(Default)]
struct What {
    json: bool,
    transport: &'static str,
    method: &'static str,
    name: Option<String>,
    dialect: Option<&'static str>,
    principal: Option<String>,
}

/// The facts of the "how it ended" part.
#[derive(Default, Clone, Copy)]
struct End {
    json: bool,
    outcome: &'static str,
    code: Option<i64>,
    status: Option<u16>,
    limit: Option<&'static str>,
}

fn same_static(a: Option<&'static str>, b: Option<&'static str>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => std::ptr::eq(a, b),
        (None, None) => true,
        _ => false,
    }
}

impl What {
    fn is(&self, json: bool, method: &'static str, s: &RequestSummary) -> bool {
        self.json == json
            && std::ptr::eq(self.transport, s.transport())
            && std::ptr::eq(self.method, method)
            && self.name.as_deref() == s.name()
            && same_static(self.dialect, s.dialect())
            && self.principal.as_deref() == s.principal()
    }

    fn keep(&mut self, json: bool, method: &'static str, s: &RequestSummary) {
        fn set(slot: &mut Option<String>, value: Option<&str>) {
            match (slot.as_mut(), value) {
                (Some(kept), Some(v)) => {
                    kept.clear();
                    kept.push_str(v);
                }
                (_, v) => *slot = v.map(str::to_owned),
            }
        }
        self.json = json;
        self.transport = s.transport();
        self.method = method;
        set(&mut self.name, s.name());
        self.dialect = s.dialect();
        set(&mut self.principal, s.principal());
    }
}

impl End {
    fn of(json: bool, s: &RequestSummary) -> Self {
        Self {
            json,
            outcome: s.outcome(),
            code: s.code(),
            status: s.status(),
            limit: s.limit(),
        }
    }

    fn is(&self, other: &End) -> bool {
        self.json == other.json
            && std::ptr::eq(self.outcome, other.outcome)
            && self.code == other.code
            && self.status == other.status
            && same_static(self.limit, other.limit)
    }
}

/// Writes the `info` request event summarised by `s` as one line (with its `\n`).
pub(super) fn write_request(
    format: LogFormat,
    now: SystemTime,
    s: &RequestSummary,
    line: &mut String,
) {
    match format {
        LogFormat::Human => write::<Human>(now, s, line),
        LogFormat::Json => write::<Json>(now, s, line),
    }
}

fn write<F: Frame>(now: SystemTime, s: &RequestSummary, line: &mut String) {
    line.push_str(F::OPEN);
    push_time(line, now);
    let method = s
        .method()
        .filter(|m| *m != Method::Unknown)
        .map(Method::as_str);
    let kept = RECENT.with(|cell| {
        let Ok(mut recent) = cell.try_borrow_mut() else {
            return false;
        };
        let recent = &mut *recent;
        match method {
            Some(method) => {
                let what = &mut recent.what;
                if !what.key.as_ref().is_some_and(|k| k.is(F::JSON, method, s)) {
                    what.text.clear();
                    write_what::<F>(&mut what.text, s);
                    what.key
                        .get_or_insert_with(What::default)
                        .keep(F::JSON, method, s);
                }
                line.push_str(&what.text);
            }
            None => write_what::<F>(line, s),
        }
        write_id::<F>(line, s);
        let end = End::of(F::JSON, s);
        if !recent.end.key.is_some_and(|k| k.is(&end)) {
            recent.end.text.clear();
            write_end::<F>(&mut recent.end.text, s);
            recent.end.key = Some(end);
        }
        line.push_str(&recent.end.text);
        true
    });
    if !kept {
        write_what::<F>(line, s);
        write_id::<F>(line, s);
        write_end::<F>(line, s);
    }
    let mut digits = itoa::Buffer::new();
    line.push_str(digits.format(s.duration_us()));
    number(line, F::BYTES_IN, digits.format(s.bytes_in()));
    number(line, F::BYTES_OUT, digits.format(s.bytes_out()));
    line.push_str(F::CLOSE);
}

/// The timestamp's end and what the line is, then transport, method, name, dialect,
/// principal.
fn write_what<F: Frame>(line: &mut String, s: &RequestSummary) {
    line.push_str(F::HEAD);
    ours(line, F::TRANSPORT, s.transport());
    match s.method() {
        Some(m) if m != Method::Unknown => ours(line, F::METHOD, m.as_str()),
        _ => theirs(line, F::METHOD, s.method_str()),
    }
    if let Some(name) = s.name() {
        theirs(line, F::NAME, name);
    }
    if let Some(dialect) = s.dialect() {
        ours(line, F::DIALECT, dialect);
    }
    if let Some(subject) = s.principal() {
        theirs(line, F::PRINCIPAL, subject);
    }
}

fn write_id<F: Frame>(line: &mut String, s: &RequestSummary) {
    match s.id() {
        Some(RequestId::Number(n)) => number(line, F::ID_NUMBER, itoa::Buffer::new().format(*n)),
        Some(RequestId::String(id)) => theirs(line, F::ID_TEXT, id),
        None => {}
    }
}

/// Outcome, code, status, limit, and the duration's key (it always follows).
fn write_end<F: Frame>(line: &mut String, s: &RequestSummary) {
    ours(line, F::OUTCOME, s.outcome());
    if let Some(code) = s.code() {
        number(line, F::CODE, itoa::Buffer::new().format(code));
    }
    if let Some(status) = s.status() {
        number(line, F::STATUS, itoa::Buffer::new().format(status));
    }
    if let Some(limit) = s.limit() {
        ours(line, F::LIMIT, limit);
    }
    line.push_str(F::DURATION_US);
}

/// A text snodo chose (nothing to escape), after its key and opening quote.
#[inline(always)]
fn ours(line: &mut String, key: &str, value: &str) {
    line.push_str(key);
    line.push_str(value);
    line.push('"');
}

/// A text the client chose, escaped as a JSON string.
#[inline(always)]
fn theirs(line: &mut String, key: &str, value: &str) {
    line.push_str(key);
    push_json_body(line, value);
    line.push('"');
}

#[inline(always)]
fn number(line: &mut String, key: &str, digits: &str) {
    line.push_str(key);
    line.push_str(digits);
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use serde_json::json;
    use snodo_testkit::R2026_07_28;
    use tracing::{Event, Subscriber};
    use tracing_subscriber::layer::{Context, Layer, SubscriberExt as _};

    use super::super::format::{format_line, format_visited};
    use super::*;

    type Pairs = Arc<Mutex<Vec<(String, String, bool)>>>;

    /// Formats every event twice: as the layer does, and by visiting its fields.
    struct Both(LogFormat, Pairs);

    impl<S: Subscriber> Layer<S> for Both {
        fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
            let now = SystemTime::now();
            let (mut fast, mut visited) = (String::new(), String::new());
            format_line(self.0, now, event, &mut fast);
            format_visited(self.0, now, event, &mut visited);
            let lent = snodo::RequestSummary::with_current(|_| ()).is_some();
            if let Ok(mut pairs) = self.1.lock() {
                pairs.push((fast, visited, lent));
            }
        }
    }

    /// Real requests through the stdio transport, each format: the line written from
    /// the summary is the line written from the event's fields, escapes included.
    #[test]
    fn request_lines_are_the_visited_lines() {
        let call = |id: serde_json::Value, name: &str| {
            R2026_07_28
                .request("tools/call")
                .id(id)
                .params(json!({"name": name, "arguments": {"text": "hi"}}))
                .body()
        };
        // Repeats (the kept parts copied) and changes (written again) of either part.
        let input = [
            call(json!(1), "echo"),
            call(json!(2), "echo"),
            call(json!("x \"y\"\n"), "no \"such\" tool\u{1}"),
            call(json!(4), "echo"),
            R2026_07_28.request("frob/\u{7f}").id(json!(-3)).body(),
            R2026_07_28.request("frob/\u{7f}").id(json!(-4)).body(),
            R2026_07_28.request("tools/list").id(json!(5)).body(),
            R2026_07_28.request("tools/list").id(json!(6)).body(),
        ]
        .join("\n")
            + "\n";
        for format in [LogFormat::Human, LogFormat::Json] {
            let pairs = Pairs::default();
            let subscriber = tracing_subscriber::registry().with(Both(format, Arc::clone(&pairs)));
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap_or_else(|e| panic!("{e}"));
            crate::logs::with_test_subscriber(subscriber, || {
                rt.block_on(async {
                    let runtime = crate::fixture::runtime(
                        vec![&snodo::protocol::V2026_07_28],
                        crate::Profile::Echo,
                        None,
                        50,
                        None,
                        None,
                        |b| b,
                    )
                    .unwrap_or_else(|e| panic!("{e}"));
                    let served = snodo::stdio::serve_stream(
                        runtime,
                        input.as_bytes(),
                        tokio::io::sink(),
                        snodo::stdio::StdioConfig::default(),
                    )
                    .await;
                    assert!(served.is_ok(), "{served:?}");
                });
            });
            let pairs = pairs.lock().map(|p| p.clone()).unwrap_or_default();
            let requests: Vec<_> = pairs
                .iter()
                .filter(|(_, v, _)| v.contains("snodo::request"))
                .collect();
            assert_eq!(requests.len(), 8, "{pairs:#?}");
            // The summary was lent, so the first line came from it.
            assert!(requests.iter().all(|(_, _, lent)| *lent), "{pairs:#?}");
            for (fast, visited, _) in &pairs {
                assert_eq!(fast, visited);
            }
            let all: String = requests.iter().map(|(f, _, _)| f.as_str()).collect();
            let (id, name, method) = match format {
                LogFormat::Human => (
                    r#"id="x \"y\"\n""#,
                    r#"name="no \"such\" tool\u0001""#,
                    r#"method="frob/\u007f""#,
                ),
                LogFormat::Json => (
                    r#""id":"x \"y\"\n""#,
                    r#""name":"no \"such\" tool\u0001""#,
                    r#""method":"frob/\u007f""#,
                ),
            };
            for fragment in [id, name, method, "-32601", "-3"] {
                assert!(all.contains(fragment), "{fragment} not in {all}");
            }
        }
    }
}
