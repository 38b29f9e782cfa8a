//! Property tests: wire types round-trip, and any byte string sent as a body gets a
//! well-formed HTTP answer. Also replays the fuzz seed corpus and every fuzz regression
//! (`fuzz/corpus/<target>/`, `fuzz/regressions/<target>/`) with the fuzz targets' checks.
//!
//! Case counts are modest so that this file stays well under 20 s in a debug build.

// Tests panic on purpose when an expectation fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use http::{HeaderName, HeaderValue, Method, Request};
use http_body_util::{BodyExt as _, Full};
use proptest::prelude::*;
use proptest::sample::Index;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use snodo::fuzzing::{Incoming, MAX_STRING_ID_LEN, ReadError, UriTemplate};
use snodo::http::{HttpConfig, McpService};
use snodo::protocol::{RequestId, V2025_06_18, V2025_11_25, V2026_07_28};
use snodo::{Runtime, Tool, ToolResult};

// ---- strategies ------------------------------------------------------------------------

fn arb_string(max: usize) -> impl Strategy<Value = String> {
    prop::collection::vec(any::<char>(), 0..max).prop_map(String::from_iter)
}

fn arb_id() -> impl Strategy<Value = RequestId> {
    prop_oneof![
        any::<i64>().prop_map(RequestId::Number),
        arb_string(40)
            .prop_filter("within the id bound", |s| s.len() <= MAX_STRING_ID_LEN)
            .prop_map(|s| RequestId::String(Arc::from(s))),
    ]
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        arb_string(12).prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(arb_string(8), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn arb_object() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::btree_map(arb_string(8), arb_json(), 0..6)
        .prop_map(|m| m.into_iter().collect())
}

fn to_json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap()
}

/// Joins envelope members in the given order.
fn object_text(members: &[(&str, String)]) -> String {
    let inner: Vec<String> = members
        .iter()
        .map(|(k, v)| format!("{}:{v}", to_json(k)))
        .collect();
    format!("{{{}}}", inner.join(","))
}

fn permute<T: Clone>(items: &[T], order: &[Index]) -> Vec<T> {
    let mut pool = items.to_vec();
    let mut out = Vec::new();
    for ix in order {
        if pool.is_empty() {
            break;
        }
        out.push(pool.remove(ix.index(pool.len())));
    }
    out.extend(pool);
    out
}

fn code_of(r: &Result<Incoming<'_>, ReadError>) -> i64 {
    match r {
        Ok(_) => 0,
        Err(e) => e.error.code().0,
    }
}

// ---- wire types round-trip -------------------------------------------------------------

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn request_ids_round_trip(id in arb_id()) {
        let text = to_json(&id);
        let back: RequestId = serde_json::from_str(&text).unwrap();
        prop_assert_eq!(&back, &id);
        let body = format!(r#"{{"jsonrpc":"2.0","id":{text},"method":"m"}}"#);
        match Incoming::parse(body.as_bytes()) {
            Ok(Incoming::Request { id: parsed, .. }) => prop_assert_eq!(parsed, id),
            other => prop_assert!(false, "{body}: {other:?}"),
        }
    }

    #[test]
    fn string_ids_over_the_bound_are_invalid_requests(len in (MAX_STRING_ID_LEN + 1)..1024) {
        let body = format!(r#"{{"jsonrpc":"2.0","id":"{}","method":"m"}}"#, "i".repeat(len));
        prop_assert_eq!(code_of(&Incoming::parse(body.as_bytes())), -32600);
    }

    #[test]
    fn envelopes_round_trip(
        id in prop::option::of(arb_id()),
        method in arb_string(24),
        params in prop::option::of(arb_object()),
        extra in prop::collection::btree_map("[a-z]{1,6}".prop_map(|s| format!("x-{s}")), arb_json(), 0..3),
        order in prop::collection::vec(any::<Index>(), 8),
    ) {
        let params_text = params.as_ref().map(to_json);
        let mut members = vec![("jsonrpc", to_json(&"2.0")), ("method", to_json(&method))];
        if let Some(id) = &id {
            members.push(("id", to_json(id)));
        }
        if let Some(p) = &params_text {
            members.push(("params", p.clone()));
        }
        let extra: Vec<(String, String)> = extra.iter().map(|(k, v)| (k.clone(), to_json(v))).collect();
        members.extend(extra.iter().map(|(k, v)| (k.as_str(), v.clone())));
        let body = object_text(&permute(&members, &order));
        match (Incoming::parse(body.as_bytes()), &id) {
            (Ok(Incoming::Request { id: got, method: m, params: p }), Some(want)) => {
                prop_assert_eq!(&got, want);
                prop_assert_eq!(m.as_ref(), method.as_str());
                prop_assert_eq!(p.map(|p| p.get().to_owned()), params_text);
            }
            (Ok(Incoming::Notification { method: m, params: p }), None) => {
                prop_assert_eq!(m.as_ref(), method.as_str());
                prop_assert_eq!(p.map(|p| p.get().to_owned()), params_text);
            }
            (other, _) => prop_assert!(false, "{body}: {other:?}"),
        }
    }

    #[test]
    fn responses_round_trip(id in arb_id(), value in arb_json(), is_error in any::<bool>()) {
        let key = if is_error { "error" } else { "result" };
        let text = to_json(&value);
        let body = format!(r#"{{"jsonrpc":"2.0","id":{},"{key}":{text}}}"#, to_json(&id));
        match Incoming::parse(body.as_bytes()) {
            Ok(Incoming::Response { id: got, result, error }) => {
                prop_assert_eq!(got, Some(id));
                let raw = if is_error { error } else { result };
                prop_assert_eq!(raw.map(|r| r.get().to_owned()), Some(text));
            }
            other => prop_assert!(false, "{body}: {other:?}"),
        }
    }

    #[test]
    fn params_that_are_not_objects_are_invalid_params(id in arb_id(), value in arb_json()) {
        prop_assume!(!value.is_object());
        let body = format!(r#"{{"jsonrpc":"2.0","id":{},"method":"m","params":{}}}"#, to_json(&id), to_json(&value));
        match Incoming::parse(body.as_bytes()) {
            Err(e) => {
                prop_assert_eq!(e.error.code().0, -32602);
                prop_assert_eq!(e.id.as_ref(), Some(&id));
            }
            Ok(m) => prop_assert!(false, "accepted {body}: {m:?}"),
        }
    }

    #[test]
    fn arbitrary_bytes_decode_without_panicking(data in prop::collection::vec(any::<u8>(), 0..256)) {
        let r = Incoming::parse(&data);
        let code = code_of(&r);
        prop_assert!([0, -32700, -32600, -32602].contains(&code), "code {code}");
        let strict_json = std::str::from_utf8(&data).is_ok()
            && serde_json::from_slice::<serde::de::IgnoredAny>(&data).is_ok();
        if code == -32700 {
            prop_assert!(!strict_json, "valid JSON refused as a parse error");
        }
    }
}

// ---- cursors ---------------------------------------------------------------------------

fn cursor(version: &str, method: &str, offset: usize, hash: u64) -> String {
    let raw = format!("{version}|{method}|{offset}|{hash:016x}");
    format!(
        "c1.{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(raw)
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn cursors_round_trip(len in 2usize..100_000, pick in any::<Index>()) {
        let offset = 1 + pick.index(len - 1);
        let c = cursor("2026-07-28", "tools/list", offset, 0);
        prop_assert_eq!(snodo::fuzzing::decode_cursor(&c, len).ok(), Some(offset));
    }

    #[test]
    fn cursors_outside_their_list_or_scope_are_refused(len in 0usize..1000, extra in 0usize..1000, hash in 1u64..) {
        let past = cursor("2026-07-28", "tools/list", len + extra, 0);
        prop_assert!(snodo::fuzzing::decode_cursor(&past, len).is_err());
        let zero = cursor("2026-07-28", "tools/list", 0, 0);
        prop_assert!(snodo::fuzzing::decode_cursor(&zero, len).is_err());
        let other_hash = cursor("2026-07-28", "tools/list", 1, hash);
        prop_assert!(snodo::fuzzing::decode_cursor(&other_hash, len + 2).is_err());
        let other_method = cursor("2026-07-28", "prompts/list", 1, 0);
        prop_assert!(snodo::fuzzing::decode_cursor(&other_method, len + 2).is_err());
        let other_version = cursor("2025-11-25", "tools/list", 1, 0);
        prop_assert!(snodo::fuzzing::decode_cursor(&other_version, len + 2).is_err());
    }

    #[test]
    fn arbitrary_cursors_are_refused_cleanly(s in arb_string(80), len in 0usize..1000) {
        match snodo::fuzzing::decode_cursor(&s, len) {
            Ok(0) => prop_assert!(s.is_empty()),
            Ok(off) => prop_assert!(off < len),
            Err(e) => prop_assert_eq!(e.code().0, -32602),
        }
    }
}

// ---- URI templates ---------------------------------------------------------------------

/// Percent-encodes every byte outside RFC 3986's unreserved set.
fn pct(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

#[derive(Clone, Copy, Debug)]
enum Op {
    Simple,
    Reserved,
    Fragment,
    Path,
}

fn arb_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        Just(Op::Simple),
        Just(Op::Reserved),
        Just(Op::Fragment),
        Just(Op::Path)
    ]
}

/// Separators that never occur in a percent-encoded value.
fn arb_separator() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec![
            '/', ':', '?', '=', '&', '!', '$', ',', ';', '@', '(', ')', '*', '+', '\'',
        ]),
        1..4,
    )
    .prop_map(String::from_iter)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn uri_templates_round_trip_percent_encoded_values(
        scheme in "[a-z]{1,8}",
        vars in prop::collection::vec((arb_op(), arb_string(16).prop_filter("non-empty", |s| !s.is_empty()), arb_separator()), 1..5),
        trailing in any::<bool>(),
    ) {
        let mut template = format!("{scheme}://h");
        let mut uri = template.clone();
        let mut want = HashMap::new();
        let n = vars.len();
        for (i, (op, value, sep)) in vars.iter().enumerate() {
            let name = format!("v{i}");
            let enc = pct(value);
            let (expr, expansion) = match op {
                Op::Simple => (format!("{{{name}}}"), enc),
                Op::Reserved => (format!("{{+{name}}}"), enc),
                Op::Fragment => (format!("{{#{name}}}"), format!("#{enc}")),
                Op::Path => (format!("{{/{name}}}"), format!("/{enc}")),
            };
            // A separator between expressions (adjacent ones are refused), and at the end
            // when asked.
            template.push_str(&expr);
            uri.push_str(&expansion);
            if i + 1 < n || trailing {
                template.push_str(sep);
                uri.push_str(sep);
            }
            want.insert(name, value.clone());
        }
        let t = UriTemplate::parse(&template).unwrap();
        prop_assert_eq!(t.variables().count(), n);
        prop_assert_eq!(t.matches(&uri), Some(want), "{} vs {}", template, uri);
        prop_assert_eq!(snodo::fuzzing::match_template(&template, &uri), Some(n));
    }

    #[test]
    fn arbitrary_templates_and_uris_never_panic(template in arb_string(40), uri in arb_string(60)) {
        if let Some(n) = snodo::fuzzing::match_template(&template, &uri) {
            let open = template.matches('{').count();
            prop_assert!(n <= open, "{} variables from {:?}", n, template);
        }
    }
}

// ---- any body gets a well-formed HTTP answer ---------------------------------------

#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    /// Text to echo.
    text: String,
}

const BODY_LIMIT: usize = 4096;

fn service() -> &'static (tokio::runtime::Runtime, McpService) {
    static S: OnceLock<(tokio::runtime::Runtime, McpService)> = OnceLock::new();
    S.get_or_init(|| {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let runtime = Runtime::builder("props", "0.0.0")
            .protocols([&V2026_07_28, &V2025_11_25, &V2025_06_18])
            .tool(
                Tool::new("echo")
                    .description("Echoes text")
                    .handler(|a: EchoArgs, _ctx| async move { ToolResult::text(a.text) }),
            )
            .build()
            .unwrap();
        let config = HttpConfig::default()
            .max_body_bytes(BODY_LIMIT)
            .disconnect_probe(None, Duration::from_secs(15))
            .request_timeout(Duration::from_secs(5));
        (rt, McpService::with_config(runtime, config))
    })
}

const STATUSES: [u16; 13] = [
    200, 202, 204, 400, 403, 404, 405, 406, 413, 415, 500, 503, 504,
];
const CODES: [i64; 9] = [
    -32700, -32600, -32601, -32602, -32603, -32002, -32020, -32021, -32022,
];

/// Sends one request through `McpService::handle` and checks the answer: a status of
/// the expected set; 202/204 empty; otherwise one JSON-RPC message (JSON, or SSE frames
/// ending with it), an error with a known code and a message whenever the status is
/// 4xx/5xx, and an id that is null or the request's.
fn answer_is_well_formed(request: Request<Full<Bytes>>, body: &[u8]) -> Result<u16, TestCaseError> {
    let (rt, svc) = service();
    let (status, ct, bytes) = rt.block_on(async {
        let resp = tokio::time::timeout(Duration::from_secs(10), svc.handle(request))
            .await
            .expect("answered within 10 s");
        let status = resp.status().as_u16();
        let ct = resp
            .headers()
            .get(http::header::CONTENT_TYPE)
            .map(|v| v.to_str().unwrap().to_owned());
        let bytes = match resp.into_body().collect().await {
            Ok(c) => c.to_bytes(),
            Err(e) => match e {},
        };
        (status, ct, bytes)
    });
    // The id the answer may carry: the request's, or the one an envelope error echoes.
    let request_id = match Incoming::parse(body) {
        Ok(Incoming::Request { id, .. }) => Some(id),
        Ok(_) => None,
        Err(e) => e.id,
    };
    prop_assert!(STATUSES.contains(&status), "status {status}");
    if status == 202 || status == 204 {
        prop_assert!(bytes.is_empty());
        return Ok(status);
    }
    let message: Value = match ct.as_deref() {
        Some("application/json") => serde_json::from_slice(&bytes).map_err(|e| {
            TestCaseError::fail(format!("{status} body is not JSON ({e}): {bytes:?}"))
        })?,
        Some("text/event-stream") => {
            let text = std::str::from_utf8(&bytes).unwrap();
            let frames: Vec<Value> = text
                .split("\n\n")
                .filter_map(|f| f.lines().find_map(|l| l.strip_prefix("data: ")))
                .map(|d| serde_json::from_str(d).unwrap())
                .collect();
            frames
                .last()
                .cloned()
                .ok_or_else(|| TestCaseError::fail("empty SSE"))?
        }
        other => return Err(TestCaseError::fail(format!("{status} with {other:?}"))),
    };
    prop_assert_eq!(&message["jsonrpc"], "2.0");
    let error = message.get("error");
    prop_assert!(
        error.is_some() != message.get("result").is_some(),
        "{message}"
    );
    if status >= 400 {
        let e = error.ok_or_else(|| TestCaseError::fail(format!("{status} without error")))?;
        let code = e["code"].as_i64().unwrap_or_default();
        prop_assert!(CODES.contains(&code), "{status}: code {code}");
        prop_assert!(e["message"].as_str().is_some_and(|m| !m.is_empty()));
        if (400..500).contains(&status) && status != 404 {
            prop_assert!(
                [-32700, -32600, -32602, -32020, -32021, -32022].contains(&code),
                "{status}: {code}"
            );
        }
    }
    match (&message["id"], &request_id) {
        (Value::Null, _) => prop_assert!(error.is_some(), "a result without an id"),
        (got, Some(want)) => prop_assert_eq!(got, &serde_json::to_value(want).unwrap()),
        (got, None) => prop_assert!(false, "id {got} invented"),
    }
    Ok(status)
}

fn post(headers: &[(&str, &str)], body: Vec<u8>) -> Request<Full<Bytes>> {
    let mut b = Request::builder()
        .method(Method::POST)
        .uri("/mcp")
        .header("host", "127.0.0.1:3000")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    b.body(Full::new(Bytes::from(body))).unwrap()
}

const HEADER_SETS: [&[(&str, &str)]; 5] = [
    &[
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "echo"),
    ],
    &[
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/list"),
    ],
    &[("MCP-Protocol-Version", "2025-11-25")],
    &[("MCP-Protocol-Version", "2025-06-18")],
    &[],
];

fn valid_bodies() -> Vec<String> {
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}});
    vec![
        json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":meta}}).to_string(),
        json!({"jsonrpc":"2.0","id":"s","method":"tools/list","params":{"_meta":meta}}).to_string(),
        json!({"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"p","version":"1"}}}).to_string(),
        json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"legacy"}}}).to_string(),
        json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}).to_string(),
        json!({"jsonrpc":"2.0","id":9,"result":{}}).to_string(),
    ]
}

/// A valid body with a few byte edits and maybe truncated.
fn arb_mutated_body() -> impl Strategy<Value = Vec<u8>> {
    let n = valid_bodies().len();
    (
        0..n,
        prop::collection::vec((any::<Index>(), any::<u8>()), 0..4),
        prop::option::of(any::<Index>()),
    )
        .prop_map(|(i, edits, cut)| {
            let mut b = valid_bodies()[i].clone().into_bytes();
            for (at, byte) in edits {
                let at = at.index(b.len());
                b[at] = byte;
            }
            if let Some(c) = cut {
                b.truncate(c.index(b.len() + 1));
            }
            b
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(192))]

    #[test]
    fn any_body_gets_a_well_formed_answer(
        body in prop_oneof![
            prop::collection::vec(any::<u8>(), 0..512),
            arb_mutated_body(),
            prop::collection::vec(any::<u8>(), BODY_LIMIT - 8..BODY_LIMIT + 64),
        ],
        headers in 0..HEADER_SETS.len(),
    ) {
        answer_is_well_formed(post(HEADER_SETS[headers], body.clone()), &body)?;
    }

    #[test]
    fn valid_bodies_in_any_header_set_get_a_well_formed_answer(
        body in 0..6usize,
        headers in 0..HEADER_SETS.len(),
    ) {
        let body = valid_bodies()[body].clone().into_bytes();
        answer_is_well_formed(post(HEADER_SETS[headers], body.clone()), &body)?;
    }
}

#[test]
fn every_body_size_around_the_limit_is_answered() {
    let prefix = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#;
    for size in [
        0,
        1,
        BODY_LIMIT - 1,
        BODY_LIMIT,
        BODY_LIMIT + 1,
        4 * BODY_LIMIT,
    ] {
        let mut body = prefix.to_vec();
        body.resize(size.max(prefix.len()), b' ');
        body.truncate(size);
        let status = answer_is_well_formed(post(HEADER_SETS[3], body.clone()), &body).unwrap();
        assert_eq!(status == 413, size > BODY_LIMIT, "size {size}: {status}");
    }
}

// ---- fuzz corpus and regressions ---------------------------------------------------

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

fn files(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for kind in ["corpus", "regressions"] {
        let Ok(dir) = std::fs::read_dir(fuzz_dir().join(kind).join(target)) else {
            continue;
        };
        for e in dir.flatten() {
            if e.path().is_file() {
                out.push((e.path(), std::fs::read(e.path()).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// The http_admission target's input format: a lenient HTTP/1.1 message (see
/// `fuzz/src/lib.rs`; the `x-fuzz-chunks` pseudo header is dropped here).
fn lenient_request(data: &[u8]) -> Option<(Request<Full<Bytes>>, Vec<u8>)> {
    let find = |n: &[u8]| {
        data.windows(n.len())
            .position(|w| w == n)
            .map(|i| (i, n.len()))
    };
    let (head, body) = match find(b"\r\n\r\n").or_else(|| find(b"\n\n")) {
        Some((i, n)) => (&data[..i], &data[i + n..]),
        None => (data, &[][..]),
    };
    let mut lines = head
        .split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l));
    let first = lines.next()?;
    let mut words = first.split(|&b| b == b' ');
    let method = Method::from_bytes(words.next()?).ok()?;
    let uri = words
        .next()
        .and_then(|t| http::Uri::try_from(t).ok())
        .unwrap_or_else(|| http::Uri::from_static("/mcp"));
    let mut b = Request::builder().method(method).uri(uri);
    for line in lines {
        let Some(colon) = line.iter().position(|&c| c == b':') else {
            continue;
        };
        let (Ok(n), Ok(v)) = (
            HeaderName::from_bytes(&line[..colon]),
            HeaderValue::from_bytes(line[colon + 1..].trim_ascii()),
        ) else {
            continue;
        };
        if n.as_str() != "x-fuzz-chunks" {
            b = b.header(n, v);
        }
    }
    Some((
        b.body(Full::new(Bytes::copy_from_slice(body))).ok()?,
        body.to_vec(),
    ))
}

#[test]
fn fuzz_corpus_and_regressions_replay_cleanly() {
    let decode = files("decode_message");
    assert!(!decode.is_empty(), "fuzz/corpus/decode_message is missing");
    for (path, data) in &decode {
        let r = Incoming::parse(data);
        assert!(
            [0, -32700, -32600, -32602].contains(&code_of(&r)),
            "{}",
            path.display()
        );
    }
    let cursors = files("cursor");
    assert!(!cursors.is_empty(), "fuzz/corpus/cursor is missing");
    for (_, data) in &cursors {
        let Some((&len, rest)) = data.split_first() else {
            continue;
        };
        let text = String::from_utf8_lossy(rest);
        let _ = snodo::fuzzing::decode_cursor(&text, usize::from(len));
        let (t, u) = text.split_once('\n').unwrap_or((&text, ""));
        let _ = snodo::fuzzing::match_template(t, u);
    }
    let http = files("http_admission");
    assert!(!http.is_empty(), "fuzz/corpus/http_admission is missing");
    for (path, data) in &http {
        if let Some((req, body)) = lenient_request(data) {
            if let Err(e) = answer_is_well_formed(req, &body) {
                panic!("{}: {e}", path.display());
            }
        }
    }
}
