//! Writes the seed corpora `fuzz/corpus/<target>/` from the literal requests of the wire
//! tests (`crates/snodo/tests/wire/*.rs`): valid 2026-07-28 and initialize-era requests,
//! notifications, client responses and the malformed bodies and heads those tests send.
//! Re-run after changing the wire tests: `cargo run --no-default-features --bin seed`.

use std::path::Path;

use serde_json::{Value, json};

const V: &str = "2026-07-28";
const HOST: &str = "127.0.0.1:3000";
const JSON_SSE: &str = "application/json, text/event-stream";

fn meta() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": V, "io.modelcontextprotocol/clientCapabilities": {}})
}

fn body(id: Value, method: &str, params: Value) -> String {
    json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}).to_string()
}

fn call(id: Value, tool: &str, args: Value, extra_meta: Value) -> String {
    let mut m = meta();
    for (k, v) in extra_meta.as_object().into_iter().flatten() {
        m[k] = v.clone();
    }
    body(
        id,
        "tools/call",
        json!({"name":tool,"arguments":args,"_meta":m}),
    )
}

fn legacy(id: Value, method: &str, params: Option<Value>) -> String {
    let mut b = json!({"jsonrpc":"2.0","id":id,"method":method});
    if let Some(p) = params {
        b["params"] = p;
    }
    b.to_string()
}

fn initialize(id: Value, proposed: &str) -> String {
    json!({"jsonrpc":"2.0","id":id,"method":"initialize","params":{
        "protocolVersion": proposed, "capabilities": {},
        "clientInfo": {"name": "wire-client", "version": "1.0.0"}}})
    .to_string()
}

/// A literal POST like the wire tests' `TestServer::post` / `raw_post`.
fn post(
    host: &str,
    content_type: &str,
    accept: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> String {
    let mut req = format!(
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: {content_type}\r\nAccept: {accept}\r\n"
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    ));
    req
}

fn std_post(headers: &[(&str, &str)], body: &str) -> String {
    post(HOST, "application/json", JSON_SSE, headers, body)
}

fn modern_headers<'a>(method: &'a str, name: Option<&'a str>) -> Vec<(&'a str, &'a str)> {
    let mut h = vec![("MCP-Protocol-Version", V), ("Mcp-Method", method)];
    if let Some(n) = name {
        h.push(("Mcp-Name", n));
    }
    h
}

/// The JSON-RPC bodies: (name, body).
fn bodies() -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut add = |name: &str, b: String| out.push((name.to_owned(), b));
    // 2026-07-28 requests.
    add(
        "discover",
        body(json!(1), "server/discover", json!({"_meta": meta()})),
    );
    add(
        "tools-list",
        body(json!(2), "tools/list", json!({"_meta": meta()})),
    );
    add(
        "tools-list-cursor",
        body(
            json!(3),
            "tools/list",
            json!({"cursor":"c1.MjAyNi0wNy0yOHx0b29scy9saXN0fDJ8MDAwMDAwMDAwMDAwMDAwMA","_meta": meta()}),
        ),
    );
    add(
        "echo",
        call(json!(41), "echo", json!({"text":"hi"}), json!({})),
    );
    add(
        "echo-string-id",
        call(json!("req-a"), "echo", json!({"text":"hi"}), json!({})),
    );
    add(
        "progress",
        call(
            json!(7),
            "progress",
            json!({}),
            json!({"progressToken":"p-1"}),
        ),
    );
    add(
        "logs",
        call(
            json!(3),
            "logs",
            json!({}),
            json!({"io.modelcontextprotocol/logLevel":"warning"}),
        ),
    );
    add(
        "logs-bad-level",
        call(
            json!(4),
            "logs",
            json!({}),
            json!({"io.modelcontextprotocol/logLevel":"loud"}),
        ),
    );
    add(
        "wait",
        call(json!(9), "wait", json!({"tag":"t","ms":5}), json!({})),
    );
    add("unknown-tool", call(json!(4), "x", json!({}), json!({})));
    add(
        "meta-missing",
        body(json!(101), "server/discover", json!({})),
    );
    add(
        "meta-no-version",
        body(
            json!(102),
            "server/discover",
            json!({"_meta":{"io.modelcontextprotocol/clientCapabilities":{}}}),
        ),
    );
    add(
        "meta-no-caps",
        body(
            json!(104),
            "server/discover",
            json!({"_meta":{"io.modelcontextprotocol/protocolVersion":V}}),
        ),
    );
    add(
        "no-params",
        r#"{"jsonrpc":"2.0","id":103,"method":"server/discover"}"#.to_owned(),
    );
    add(
        "v999",
        body(
            json!(301),
            "server/discover",
            json!({"_meta":{"io.modelcontextprotocol/protocolVersion":"v999.0.0","io.modelcontextprotocol/clientCapabilities":{}}}),
        ),
    );
    add(
        "removed-ping",
        body(json!(500), "ping", json!({"_meta": meta()})),
    );
    add(
        "prompt-get",
        body(
            json!(8),
            "prompts/get",
            json!({"name":"greet","arguments":{"name":"ada"},"_meta": meta()}),
        ),
    );
    add(
        "resource-read",
        body(
            json!(9),
            "resources/read",
            json!({"uri":"test://packages/snodo","_meta": meta()}),
        ),
    );
    add(
        "complete",
        body(
            json!(10),
            "completion/complete",
            json!({"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"name","value":"al"},"_meta": meta()}),
        ),
    );
    // Initialize-era requests.
    for v in ["2025-11-25", "2025-06-18"] {
        add(&format!("init-{v}"), initialize(json!(1), v));
        add(
            &format!("legacy-list-{v}"),
            legacy(json!(2), "tools/list", None),
        );
        add(
            &format!("legacy-echo-{v}"),
            legacy(
                json!(18),
                "tools/call",
                Some(json!({"name":"echo","arguments":{"text":"still here"}})),
            ),
        );
        add(
            &format!("legacy-setlevel-{v}"),
            legacy(json!(5), "logging/setLevel", Some(json!({"level":"loud"}))),
        );
    }
    add("ping", legacy(json!(6), "ping", None));
    // Notifications and client responses.
    add(
        "initialized",
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned(),
    );
    add("cancelled", json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":77,"reason":"user"}}).to_string());
    add(
        "cancelled-legacy",
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#
            .to_owned(),
    );
    add(
        "response",
        r#"{"jsonrpc":"2.0","id":9,"result":{}}"#.to_owned(),
    );
    add(
        "response-error",
        r#"{"jsonrpc":"2.0","id":"s-1","error":{"code":-1,"message":"no"}}"#.to_owned(),
    );
    // Malformed.
    add("not-json", "{not-json".to_owned());
    add("empty", String::new());
    add(
        "batch",
        format!(
            "[{}]",
            body(json!(1), "tools/list", json!({"_meta": meta()}))
        ),
    );
    add(
        "jsonrpc-1",
        r#"{"jsonrpc":"1.0","id":1,"method":"x"}"#.to_owned(),
    );
    add(
        "id-null",
        r#"{"jsonrpc":"2.0","id":null,"method":"x"}"#.to_owned(),
    );
    add(
        "id-float",
        r#"{"jsonrpc":"2.0","id":1.5,"method":"x"}"#.to_owned(),
    );
    add(
        "method-number",
        r#"{"jsonrpc":"2.0","id":1,"method":3}"#.to_owned(),
    );
    add(
        "params-array",
        r#"{"jsonrpc":"2.0","id":1,"method":"x","params":[]}"#.to_owned(),
    );
    add(
        "id-long",
        format!(
            r#"{{"jsonrpc":"2.0","id":"{}","method":"x"}}"#,
            "a".repeat(300)
        ),
    );
    add(
        "nested",
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{"a":{}1{}}}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        ),
    );
    add(
        "dup-key",
        r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"x"}"#.to_owned(),
    );
    out
}

fn b64url(data: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut s = String::new();
    for chunk in data.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            s.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
        }
    }
    s
}

fn write(dir: &Path, name: &str, data: &[u8]) {
    std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    std::fs::write(dir.join(name), data).unwrap_or_else(|e| panic!("{name}: {e}"));
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    let bodies = bodies();

    let dm = root.join("decode_message");
    for (name, b) in &bodies {
        write(&dm, name, b.as_bytes());
    }

    let ha = root.join("http_admission");
    for (name, b) in &bodies {
        let req = if name.starts_with("init-") {
            std_post(&[], b)
        } else if name.starts_with("legacy-")
            || name == "ping"
            || name.ends_with("-legacy")
            || name.starts_with("response")
        {
            std_post(&[("MCP-Protocol-Version", "2025-11-25")], b)
        } else {
            let v: Value = serde_json::from_str(b).unwrap_or(Value::Null);
            let method = v["method"].as_str().unwrap_or("tools/list");
            let name_h = v["params"]["name"]
                .as_str()
                .or_else(|| v["params"]["uri"].as_str());
            std_post(&modern_headers(method, name_h), b)
        };
        write(&ha, name, req.as_bytes());
    }
    let echo = call(json!(41), "echo", json!({"text":"hi"}), json!({}));
    let discover = body(json!(1), "server/discover", json!({"_meta": meta()}));
    let heads: Vec<(&str, String)> = vec![
        ("get", "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:3000\r\nAccept: text/event-stream\r\nConnection: close\r\n\r\n".to_owned()),
        ("delete-session", "DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1:3000\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\nMcp-Session-Id: legacy\r\nConnection: close\r\n\r\n".to_owned()),
        ("text-plain", post(HOST, "text/plain", JSON_SSE, &modern_headers("tools/list", None), &discover)),
        ("accept-json-only", post(HOST, "application/json", "application/json", &modern_headers("tools/list", None), &discover)),
        ("accept-q0", post(HOST, "application/json", "application/json, text/event-stream;q=0", &modern_headers("server/discover", None), &discover)),
        ("origin-evil", std_post(&[("MCP-Protocol-Version", V), ("Mcp-Method", "server/discover"), ("Origin", "http://evil.example.com")], &discover)),
        ("origin-loopback", std_post(&[("MCP-Protocol-Version", V), ("Mcp-Method", "server/discover"), ("Origin", "http://localhost:9999")], &discover)),
        ("host-evil", post("evil.example.com", "application/json", JSON_SSE, &modern_headers("server/discover", None), &discover)),
        ("host-localhost", post("localhost:1234", "application/json", JSON_SSE, &modern_headers("server/discover", None), &discover)),
        ("host-ipv6", post("[::1]:3000", "application/json", JSON_SSE, &modern_headers("server/discover", None), &discover)),
        ("no-version-header", std_post(&[("Mcp-Method", "tools/call"), ("Mcp-Name", "echo")], &echo)),
        ("no-method-header", std_post(&[("MCP-Protocol-Version", V), ("Mcp-Name", "echo")], &echo)),
        ("wrong-method-header", std_post(&[("MCP-Protocol-Version", V), ("Mcp-Method", "tools/list"), ("Mcp-Name", "echo")], &echo)),
        ("no-name-header", std_post(&[("MCP-Protocol-Version", V), ("Mcp-Method", "tools/call")], &echo)),
        ("name-case", std_post(&[("MCP-Protocol-Version", V), ("Mcp-Method", "tools/call"), ("Mcp-Name", "Echo")], &echo)),
        ("name-ws", std_post(&[("MCP-Protocol-Version", V), ("Mcp-Method", " tools/call "), ("Mcp-Name", "  echo\t")], &echo)),
        ("name-base64", std_post(&[("MCP-Protocol-Version", V), ("Mcp-Method", "tools/call"), ("Mcp-Name", "=?base64?ZWNobw==?=")], &echo)),
        ("name-base64-bad", std_post(&[("MCP-Protocol-Version", V), ("Mcp-Method", "tools/call"), ("Mcp-Name", "=?base64?%%%?=")], &echo)),
        ("repeated-version", std_post(&[("MCP-Protocol-Version", V), ("MCP-Protocol-Version", V), ("Mcp-Method", "tools/call"), ("Mcp-Name", "echo")], &echo)),
        ("content-length-huge", format!("POST /mcp HTTP/1.1\r\nHost: {HOST}\r\nContent-Type: application/json\r\nAccept: {JSON_SSE}\r\nMCP-Protocol-Version: {V}\r\nMcp-Method: tools/call\r\nMcp-Name: echo\r\nContent-Length: 99999999\r\n\r\n{echo}")),
        ("oversized", std_post(&modern_headers("tools/call", Some("echo")), &call(json!(1), "echo", json!({"text": "x".repeat(20_000)}), json!({})))),
        ("chunked-frames", format!("POST /mcp HTTP/1.1\r\nHost: {HOST}\r\nContent-Type: application/json\r\nAccept: {JSON_SSE}\r\nMCP-Protocol-Version: {V}\r\nMcp-Method: tools/call\r\nMcp-Name: echo\r\nx-fuzz-chunks: 5\r\n\r\n{echo}")),
        ("version-conflict-init", std_post(&[("MCP-Protocol-Version", "2025-06-18")], &initialize(json!(1), "2025-11-25"))),
        ("modern-init-probe", std_post(&modern_headers("initialize", None), &body(json!(500), "initialize", json!({"_meta": meta()})))),
        ("regional", std_post(&[("MCP-Protocol-Version", V), ("Mcp-Method", "tools/call"), ("Mcp-Name", "regional"), ("Mcp-Param-Region", "eu")], &call(json!(5), "regional", json!({"region":"eu"}), json!({})))),
    ];
    for (name, req) in &heads {
        write(&ha, name, req.as_bytes());
    }

    let cu = root.join("cursor");
    let mut cursors: Vec<(String, Vec<u8>)> = Vec::new();
    for (len, off) in [(4u8, 2usize), (10, 1), (10, 9), (3, 3), (200, 100)] {
        let c = format!(
            "c1.{}",
            b64url(format!("2026-07-28|tools/list|{off}|0000000000000000").as_bytes())
        );
        let mut d = vec![len];
        d.extend_from_slice(c.as_bytes());
        cursors.push((format!("cursor-{len}-{off}"), d));
    }
    let other = format!(
        "c1.{}",
        b64url(b"2025-11-25|prompts/list|2|00000000000000ff")
    );
    for (name, text) in [
        ("cursor-other-scope", other.as_str()),
        ("cursor-garbage", "garbage"),
        ("cursor-bad-b64", "c1.!!"),
        ("cursor-empty", ""),
        (
            "template-simple",
            "test://template/{id}/data\ntest://template/123/data",
        ),
        (
            "template-package",
            "test://packages/{name}\ntest://packages/snodo",
        ),
        (
            "template-reserved",
            "file:///root/{+path}\nfile:///root/a/b%20c.txt",
        ),
        ("template-fragment", "x://doc{#frag}\nx://doc#sec%2F1"),
        ("template-path", "x://api{/seg}/v\nx://api/one/v"),
        ("template-pct-bad", "x://{a}\nx://%zz"),
        ("template-adjacent", "x://{a}{b}\nx://ab"),
        ("template-multi", "x://{a,b}\nx://a,b"),
        ("template-unclosed", "x://{a\nx://a"),
    ] {
        let mut d = vec![8u8];
        d.extend_from_slice(text.as_bytes());
        cursors.push((name.to_owned(), d));
    }
    for (name, d) in &cursors {
        write(&cu, name, d);
    }
    println!(
        "wrote {} decode_message, {} http_admission and {} cursor seeds under {}",
        bodies.len(),
        bodies.len() + heads.len(),
        cursors.len(),
        root.display()
    );
}
