//! Wire tests of every limit and refusal of the HTTP transport: literal HTTP/1.1 bytes
//! over real loopback sockets against a real `Server`, the status, the body and the
//! connection's fate asserted. See `docs/limits.md` for the limits themselves.

// Tests panic on purpose when an expectation fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "wire/support.rs"]
#[allow(dead_code, unused_imports)]
mod support;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use snodo::http::{HttpConfig, Server};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use support::{MODERN, R2026_07_28, Reply, TestServer, builder};

const V: &str = "2026-07-28";

fn echo_body(id: i64, text: &str) -> String {
    R2026_07_28
        .request("tools/call")
        .id(id)
        .params(json!({"name":"echo","arguments":{"text":text}}))
        .body()
}

fn discover_body(id: i64) -> String {
    R2026_07_28.request("server/discover").id(id).body()
}

const ECHO_HEADERS: [(&str, &str); 3] = [
    ("MCP-Protocol-Version", V),
    ("Mcp-Method", "tools/call"),
    ("Mcp-Name", "echo"),
];
const DISCOVER_HEADERS: [(&str, &str); 2] = [
    ("MCP-Protocol-Version", V),
    ("Mcp-Method", "server/discover"),
];

/// The head of an echo call, without Content-Length / Transfer-Encoding or the final CRLF.
fn echo_head(addr: SocketAddr) -> String {
    format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: {V}\r\nMcp-Method: tools/call\r\nMcp-Name: echo\r\n"
    )
}

async fn start(config: HttpConfig) -> TestServer {
    TestServer::start_with(builder(&MODERN).build().unwrap(), config).await
}

/// Reads one HTTP/1.1 response (Content-Length bodies only) off a kept-alive connection.
async fn read_response(stream: &mut TcpStream) -> Option<(u16, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let status: u16 = head.split(' ').nth(1)?.parse().ok()?;
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map_or(0, |v| v.trim().parse().unwrap());
            while buf.len() < end + 4 + len {
                let n = stream.read(&mut chunk).await.ok()?;
                if n == 0 {
                    return None;
                }
                buf.extend_from_slice(&chunk[..n]);
            }
            return Some((status, buf[end + 4..end + 4 + len].to_vec()));
        }
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// Reads until the server closes the connection; returns what it sent and how long it took.
async fn read_until_closed(stream: &mut TcpStream, limit: Duration) -> (Vec<u8>, Duration) {
    let started = Instant::now();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        match tokio::time::timeout(
            limit.saturating_sub(started.elapsed()),
            stream.read(&mut chunk),
        )
        .await
        {
            Err(_) => panic!("the server kept the connection open for more than {limit:?}"),
            Ok(Ok(0) | Err(_)) => return (buf, started.elapsed()),
            Ok(Ok(n)) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

fn status_of(raw: &[u8]) -> Option<u16> {
    let line = raw.split(|&b| b == b'\r').next()?;
    std::str::from_utf8(line)
        .ok()?
        .split(' ')
        .nth(1)?
        .parse()
        .ok()
}

fn assert_rpc_error(r: &Reply, status: u16, code: i64) -> Value {
    assert_eq!(r.status, status, "{}", r.text());
    assert_eq!(r.header("content-type"), Some("application/json"));
    let m = r.json();
    assert_eq!(m["error"]["code"], code, "{m}");
    m
}

// ---- body size: 413 --------------------------------------------------------------------

#[tokio::test]
async fn a_content_length_over_the_limit_is_413_before_the_body_is_read() {
    let s = start(HttpConfig::default().max_body_bytes(1024)).await;
    let big = echo_body(1, &"x".repeat(4096));
    let m = assert_rpc_error(&s.post(&ECHO_HEADERS, &big).await, 413, -32600);
    assert_eq!(m["id"], Value::Null);
    assert!(
        m["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Payload Too Large")
    );

    // Only the head is sent, declaring 10 MB: the refusal comes without waiting for it.
    let mut c = TcpStream::connect(s.addr).await.unwrap();
    let head = format!("{}Content-Length: 10000000\r\n\r\n", echo_head(s.addr));
    c.write_all(head.as_bytes()).await.unwrap();
    let started = Instant::now();
    let (status, body) = tokio::time::timeout(Duration::from_secs(5), read_response(&mut c))
        .await
        .expect("answered without the body")
        .unwrap();
    assert_eq!(status, 413);
    assert!(started.elapsed() < Duration::from_secs(2));
    let m: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(m["error"]["code"], -32600);
}

#[tokio::test]
async fn expect_100_continue_over_the_limit_gets_413_and_no_continue() {
    let s = start(HttpConfig::default().max_body_bytes(1024)).await;
    let mut c = TcpStream::connect(s.addr).await.unwrap();
    let head = format!(
        "{}Expect: 100-continue\r\nContent-Length: 5000\r\n\r\n",
        echo_head(s.addr)
    );
    c.write_all(head.as_bytes()).await.unwrap();
    let (status, _) = tokio::time::timeout(Duration::from_secs(5), read_response(&mut c))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        status, 413,
        "the first answer is the refusal, not 100 Continue"
    );
}

/// The echo request with `body` sent in chunks of `size` bytes.
fn chunked(addr: SocketAddr, body: &str, size: usize) -> String {
    let mut req = format!(
        "{}Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
        echo_head(addr)
    );
    for piece in body.as_bytes().chunks(size) {
        req.push_str(&format!(
            "{:x}\r\n{}\r\n",
            piece.len(),
            std::str::from_utf8(piece).unwrap()
        ));
    }
    req.push_str("0\r\n\r\n");
    req
}

#[tokio::test]
async fn a_chunked_body_over_the_limit_is_413() {
    let s = start(HttpConfig::default().max_body_bytes(1024)).await;
    let body = echo_body(2, &"y".repeat(3000));
    let r = s.raw(&chunked(s.addr, &body, 300)).await;
    assert_rpc_error(&r, 413, -32600);

    // The same body under the limit, chunked, is served.
    let small = echo_body(3, "chunked ok");
    let r = s.raw(&chunked(s.addr, &small, 7)).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.result()["content"][0]["text"], "chunked ok");
}

#[tokio::test]
async fn a_body_of_exactly_the_limit_is_accepted() {
    let limit = 2048;
    let s = start(HttpConfig::default().max_body_bytes(limit)).await;
    let mut body = echo_body(4, "edge");
    let pad = limit - body.len();
    body.push_str(&" ".repeat(pad));
    assert_eq!(body.len(), limit);
    let r = s.post(&ECHO_HEADERS, &body).await;
    assert_eq!(r.status, 200, "{}", r.text());
    body.push(' ');
    assert_rpc_error(&s.post(&ECHO_HEADERS, &body).await, 413, -32600);
}

// ---- headers: 431 ----------------------------------------------------------------------

#[tokio::test]
async fn too_many_headers_is_431() {
    let config = HttpConfig::default().max_headers(16);
    let s = start(config).await;
    // Host, Content-Type, Accept, 2 MCP headers, Content-Length, Connection = 7.
    let fillers: Vec<(String, String)> = (0..9)
        .map(|i| (format!("X-Filler-{i}"), "v".to_owned()))
        .collect();
    let mut headers: Vec<(&str, &str)> = DISCOVER_HEADERS.to_vec();
    headers.extend(fillers.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let r = s.post(&headers, &discover_body(1)).await;
    assert_eq!(r.status, 200, "16 headers are fine: {}", r.text());
    headers.push(("X-One-Too-Many", "v"));
    let r = s.post(&headers, &discover_body(2)).await;
    assert_eq!(r.status, 431, "{}", r.text());

    // The default (100) refuses a flood of headers too.
    let s = start(HttpConfig::default()).await;
    let fillers: Vec<(String, String)> = (0..150)
        .map(|i| (format!("X-F-{i}"), "v".to_owned()))
        .collect();
    let mut headers: Vec<(&str, &str)> = DISCOVER_HEADERS.to_vec();
    headers.extend(fillers.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    assert_eq!(s.post(&headers, &discover_body(3)).await.status, 431);
}

#[tokio::test]
async fn an_oversized_head_is_431() {
    let s = start(HttpConfig::default()).await;
    // hyper's read buffer bounds a request head (408 KiB by default, plus what the
    // last read brought; not configurable through HttpConfig): 1 MiB is refused.
    let huge = "a".repeat(1024 * 1024);
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nX-Huge: {huge}\r\nContent-Length: 0\r\n\r\n",
        s.addr
    );
    let c = TcpStream::connect(s.addr).await.unwrap();
    let (mut rd, mut wr) = c.into_split();
    let writer = tokio::spawn(async move {
        let _ = wr.write_all(head.as_bytes()).await;
        wr
    });
    let mut buf = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), rd.read_to_end(&mut buf)).await;
    drop(writer.await);
    assert_eq!(
        status_of(&buf),
        Some(431),
        "{}",
        String::from_utf8_lossy(&buf)
    );
    // The server is unharmed.
    assert_eq!(
        s.post(&DISCOVER_HEADERS, &discover_body(1)).await.status,
        200
    );
}

// ---- slow clients ----------------------------------------------------------------------

#[tokio::test]
async fn a_client_that_stalls_mid_head_is_disconnected() {
    let config = HttpConfig::default().header_read_timeout(Duration::from_millis(500));
    let s = start(config).await;
    let mut c = TcpStream::connect(s.addr).await.unwrap();
    c.write_all(format!("POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Ty", s.addr).as_bytes())
        .await
        .unwrap();
    let (_, took) = read_until_closed(&mut c, Duration::from_secs(5)).await;
    assert!(
        took >= Duration::from_millis(400),
        "closed too early: {took:?}"
    );
    assert!(took < Duration::from_secs(3), "closed too late: {took:?}");
    // A client that trickles its head one byte at a time is cut off by the same deadline.
    let mut c = TcpStream::connect(s.addr).await.unwrap();
    let head = echo_head(s.addr);
    let started = Instant::now();
    let mut cut_off = false;
    for b in head.as_bytes() {
        if c.write_all(&[*b]).await.is_err() {
            cut_off = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        if started.elapsed() > Duration::from_secs(4) {
            break;
        }
    }
    if !cut_off {
        let (_, _) = read_until_closed(&mut c, Duration::from_secs(3)).await;
    }
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn an_idle_keep_alive_connection_is_closed_after_the_header_timeout() {
    let config = HttpConfig::default().header_read_timeout(Duration::from_millis(500));
    let s = start(config).await;
    let mut c = TcpStream::connect(s.addr).await.unwrap();
    let body = discover_body(1);
    let req = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: {V}\r\nMcp-Method: server/discover\r\nContent-Length: {}\r\n\r\n{body}",
        s.addr,
        body.len()
    );
    c.write_all(req.as_bytes()).await.unwrap();
    let (status, _) = read_response(&mut c).await.unwrap();
    assert_eq!(status, 200);
    // Kept alive: a second request on the same connection is served.
    c.write_all(req.as_bytes()).await.unwrap();
    assert_eq!(read_response(&mut c).await.unwrap().0, 200);
    // Then silence: the server closes the idle connection.
    let (rest, took) = read_until_closed(&mut c, Duration::from_secs(5)).await;
    assert!(
        took < Duration::from_secs(3),
        "idle connection kept {took:?}"
    );
    assert!(rest.is_empty() || status_of(&rest) == Some(408), "{rest:?}");
}

// ---- JSON shape: nesting and long strings ----------------------------------------------

#[tokio::test]
async fn deep_nesting_is_a_clear_400_and_the_server_survives() {
    let s = start(HttpConfig::default()).await;
    let h = [("MCP-Protocol-Version", V), ("Mcp-Method", "tools/list")];
    let deep_arrays = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let deep_objects = format!("{}1{}", r#"{"a":"#.repeat(10_000), "}".repeat(10_000));

    // The whole body nested 10 000 deep: not a JSON-RPC object.
    let r = s.post(&h, &deep_arrays).await;
    let m = assert_rpc_error(&r, 400, -32600);
    assert_eq!(m["id"], Value::Null);
    // Unterminated nesting: a parse error.
    let r = s.post(&h, &"[".repeat(10_000)).await;
    assert_rpc_error(&r, 400, -32700);

    // Nesting inside params (past serde_json's recursion limit of 128): -32602, id echoed.
    for (i, nested) in [&deep_arrays, &deep_objects].into_iter().enumerate() {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/list","params":{{"_meta":{},"deep":{nested}}}}}"#,
            R2026_07_28.meta()
        );
        let r = s.post(&h, &body).await;
        let m = assert_rpc_error(&r, 400, -32602);
        assert_eq!(m["id"], i);
        assert!(!m["error"]["message"].as_str().unwrap().is_empty());
    }
    // Nesting inside a tool argument value: refused the same way.
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"echo","arguments":{{"text":{deep_arrays}}},"_meta":{}}}}}"#,
        R2026_07_28.meta()
    );
    assert_rpc_error(&s.post(&ECHO_HEADERS, &body).await, 400, -32602);

    // An unknown envelope member is skipped without recursion: the request is served.
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":8,"method":"tools/list","x":{deep_arrays},"params":{{"_meta":{}}}}}"#,
        R2026_07_28.meta()
    );
    let r = s.post(&h, &body).await;
    assert_eq!(r.status, 200, "{}", r.text());

    // Moderate nesting (100 levels) in an argument the tool accepts is fine.
    let ok = R2026_07_28
        .request("tools/call")
        .id(9)
        .params(json!({"name":"structured","arguments":{"value": nest(100)}}))
        .body();
    let r = s
        .post(
            &[
                ("MCP-Protocol-Version", V),
                ("Mcp-Method", "tools/call"),
                ("Mcp-Name", "structured"),
            ],
            &ok,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());

    // And the server is still healthy.
    assert_eq!(
        s.post(&DISCOVER_HEADERS, &discover_body(10)).await.status,
        200
    );
}

fn nest(depth: usize) -> Value {
    (0..depth).fold(json!(1), |v, _| json!([v]))
}

#[tokio::test]
async fn long_strings_are_bounded_by_the_body_limit() {
    let s = start(HttpConfig::default().max_body_bytes(1024 * 1024)).await;
    // A 900 KiB argument fits the 1 MiB body limit and is echoed whole.
    let text = "z".repeat(900 * 1024);
    let r = s.post(&ECHO_HEADERS, &echo_body(1, &text)).await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.result()["content"][0]["text"].as_str().map(str::len),
        Some(text.len())
    );
    // 1.1 MiB does not.
    let text = "z".repeat(1100 * 1024);
    assert_rpc_error(
        &s.post(&ECHO_HEADERS, &echo_body(2, &text)).await,
        413,
        -32600,
    );
    // String ids are bounded separately (256 bytes).
    let id = "i".repeat(300);
    let body = R2026_07_28.request("server/discover").id(id).body();
    let m = assert_rpc_error(&s.post(&DISCOVER_HEADERS, &body).await, 400, -32600);
    assert_eq!(m["id"], Value::Null);
    // A long method name is refused by the header mirror check, not echoed into a header.
    let method = "m".repeat(64 * 1024);
    let body = R2026_07_28.request(&method).id(3).body();
    let r = s
        .post(
            &[
                ("MCP-Protocol-Version", V),
                ("Mcp-Method", "server/discover"),
            ],
            &body,
        )
        .await;
    assert_rpc_error(&r, 400, -32020);
    // Invalid UTF-8 inside a string is a parse error.
    let mut raw = echo_body(4, "AB").into_bytes();
    let at = raw.windows(2).position(|w| w == b"AB").unwrap();
    raw[at] = 0xff;
    let req = format!(
        "{}Content-Length: {}\r\nConnection: close\r\n\r\n",
        echo_head(s.addr),
        raw.len()
    );
    let mut c = TcpStream::connect(s.addr).await.unwrap();
    c.write_all(req.as_bytes()).await.unwrap();
    c.write_all(&raw).await.unwrap();
    let (status, body) = read_response(&mut c).await.unwrap();
    assert_eq!(status, 400);
    let m: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(m["error"]["code"], -32700);
}

// ---- connections and executions --------------------------------------------------------

#[tokio::test]
async fn max_connections_holds_further_connections_until_one_closes() {
    let config = HttpConfig::default().max_connections(2);
    let s = start(config).await;
    let body = discover_body(1);
    let req = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: {V}\r\nMcp-Method: server/discover\r\nContent-Length: {}\r\n\r\n{body}",
        s.addr,
        body.len()
    );
    // Two kept-alive connections, both served.
    let mut a = TcpStream::connect(s.addr).await.unwrap();
    let mut b = TcpStream::connect(s.addr).await.unwrap();
    for c in [&mut a, &mut b] {
        c.write_all(req.as_bytes()).await.unwrap();
        assert_eq!(read_response(c).await.unwrap().0, 200);
    }
    // A third connects (the kernel backlog takes it) but is not served.
    let mut third = TcpStream::connect(s.addr).await.unwrap();
    third.write_all(req.as_bytes()).await.unwrap();
    let waited = tokio::time::timeout(Duration::from_millis(700), read_response(&mut third)).await;
    assert!(waited.is_err(), "a third connection was served: {waited:?}");
    // The first two still are.
    a.write_all(req.as_bytes()).await.unwrap();
    assert_eq!(read_response(&mut a).await.unwrap().0, 200);
    // Closing one lets the third in.
    drop(a);
    let (status, _) = tokio::time::timeout(Duration::from_secs(3), read_response(&mut third))
        .await
        .expect("served once a slot freed")
        .unwrap();
    assert_eq!(status, 200);
}

#[tokio::test]
async fn a_full_execution_queue_is_503_and_queued_requests_are_served() {
    let s = std::sync::Arc::new(start(HttpConfig::default().execution_limits(1, 1)).await);
    let wait = |id: i64, ms: u64| {
        let s = s.clone();
        tokio::spawn(async move {
            let body = R2026_07_28
                .request("tools/call")
                .id(id)
                .params(json!({"name":"wait","arguments":{"tag":format!("limits-{id}"),"ms":ms}}))
                .body();
            s.post(
                &[
                    ("MCP-Protocol-Version", V),
                    ("Mcp-Method", "tools/call"),
                    ("Mcp-Name", "wait"),
                ],
                &body,
            )
            .await
        })
    };
    let running = wait(1, 600);
    tokio::time::sleep(Duration::from_millis(150)).await;
    let queued = wait(2, 10);
    tokio::time::sleep(Duration::from_millis(150)).await;
    let r = s.post(&ECHO_HEADERS, &echo_body(3, "x")).await;
    let m = assert_rpc_error(&r, 503, -32603);
    assert_eq!(m["id"], 3);
    assert_eq!(r.header("retry-after"), Some("1"));
    assert_eq!(running.await.unwrap().status, 200);
    assert_eq!(queued.await.unwrap().status, 200, "the queued request ran");
}

#[tokio::test]
async fn the_request_deadline_covers_queueing() {
    // A handler that ignores its cancellation keeps its slot for the cancel grace period
    // after its own deadline; a request queued behind it times out in the queue.
    let rt = builder(&MODERN)
        .tool(
            snodo::Tool::new("stubborn")
                .description("Sleeps 2 s, ignoring cancellation")
                .handler(|_: snodo::NoArguments, _ctx| async {
                    tokio::time::sleep(Duration::from_secs(2)).await;
                    snodo::ToolResult::text("done")
                }),
        )
        .build()
        .unwrap();
    let config = HttpConfig::default()
        .execution_limits(1, 4)
        .request_timeout(Duration::from_millis(400));
    let s = std::sync::Arc::new(TestServer::start_with(rt, config).await);
    let busy = {
        let s = s.clone();
        tokio::spawn(async move {
            let body = R2026_07_28
                .request("tools/call")
                .id(1)
                .params(json!({"name":"stubborn","arguments":{}}))
                .body();
            s.post(
                &[
                    ("MCP-Protocol-Version", V),
                    ("Mcp-Method", "tools/call"),
                    ("Mcp-Name", "stubborn"),
                ],
                &body,
            )
            .await
        })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    let started = Instant::now();
    let r = s.post(&ECHO_HEADERS, &echo_body(2, "late")).await;
    let m = assert_rpc_error(&r, 504, -32603);
    assert_eq!(m["id"], 2);
    assert_eq!(m["error"]["message"], "Request execution timed out");
    assert!(started.elapsed() < Duration::from_secs(2));
    let busy = busy.await.unwrap();
    assert_eq!(busy.status, 504, "{}", busy.text());
}

// ---- binding and DNS rebinding ---------------------------------------------------------

#[tokio::test]
async fn a_non_loopback_bind_needs_an_explicit_allow_list() {
    let rt = || builder(&MODERN).build().unwrap();
    let any: SocketAddr = "0.0.0.0:0".parse().unwrap();
    let err = Server::bind(rt(), any, HttpConfig::default())
        .await
        .expect_err("refused with the loopback allow-list");
    let msg = err.to_string();
    assert!(msg.contains("allow_hosts"), "{msg}");
    assert!(msg.contains("non-loopback"), "{msg}");
    assert!(
        Server::bind(
            rt(),
            any,
            HttpConfig::default().allow_hosts(["mcp.example.com"])
        )
        .await
        .is_ok()
    );
    assert!(
        Server::bind(rt(), any, HttpConfig::default().any_host())
            .await
            .is_ok()
    );
    // Loopback needs nothing.
    assert!(
        Server::bind(rt(), "127.0.0.1:0".parse().unwrap(), HttpConfig::default())
            .await
            .is_ok()
    );
}

/// A discover request with this Host and extra header lines.
fn with_host(host: Option<&str>, extra: &str) -> String {
    let body = discover_body(1);
    let host = host.map(|h| format!("Host: {h}\r\n")).unwrap_or_default();
    format!(
        "POST /mcp HTTP/1.1\r\n{host}Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: {V}\r\nMcp-Method: server/discover\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

#[tokio::test]
async fn dns_rebinding_hosts_and_origins_are_refused() {
    let s = start(HttpConfig::default()).await;
    let port = s.addr.port();
    let refused = [
        (Some("evil.example.com".to_owned()), ""),
        (Some(format!("evil.example.com:{port}")), ""),
        (Some("localhost.evil.example.com".to_owned()), ""),
        (Some("127.0.0.1.nip.io".to_owned()), ""),
        (Some("user@localhost".to_owned()), ""),
        (Some("localhost:http".to_owned()), ""),
        (Some("0.0.0.0".to_owned()), ""),
        (None, ""),
        (
            Some(s.addr.to_string()),
            "Origin: http://evil.example.com\r\n",
        ),
        (
            Some(s.addr.to_string()),
            "Origin: http://localhost.evil.example.com\r\n",
        ),
        (
            Some(s.addr.to_string()),
            "Origin: http://127.0.0.1@evil.example.com\r\n",
        ),
        (Some(s.addr.to_string()), "Origin: null\r\n"),
        (Some(s.addr.to_string()), "Origin: file://localhost\r\n"),
        (
            Some(s.addr.to_string()),
            "Origin: http://localhost\r\nOrigin: http://localhost\r\n",
        ),
        (
            Some(format!("localhost:{port}")),
            "Host: evil.example.com\r\n",
        ),
    ];
    for (host, extra) in &refused {
        let r = s.raw(&with_host(host.as_deref(), extra)).await;
        assert_eq!(r.status, 403, "{host:?} {extra:?}: {}", r.text());
        let m = r.json();
        assert_eq!(m["error"]["code"], -32600, "{m}");
        assert!(
            m["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with("Forbidden")
        );
    }
    let allowed = [
        (format!("localhost:{port}"), ""),
        (format!("LOCALHOST:{port}"), ""),
        (format!("[::1]:{port}"), ""),
        (s.addr.to_string(), "Origin: http://localhost:5173\r\n"),
        (s.addr.to_string(), "Origin: https://127.0.0.1\r\n"),
        (s.addr.to_string(), "Origin: http://[::1]:8080\r\n"),
    ];
    for (host, extra) in &allowed {
        let r = s.raw(&with_host(Some(host), extra)).await;
        assert_eq!(r.status, 200, "{host} {extra:?}: {}", r.text());
    }
}

#[tokio::test]
async fn an_explicit_allow_list_replaces_the_loopback_names() {
    let s = start(HttpConfig::default().allow_hosts(["mcp.example.com"])).await;
    let ok = s
        .raw(&with_host(
            Some("mcp.example.com:443"),
            "Origin: https://mcp.example.com\r\n",
        ))
        .await;
    assert_eq!(ok.status, 200, "{}", ok.text());
    let r = s.raw(&with_host(Some(&s.addr.to_string()), "")).await;
    assert_eq!(r.status, 403);
    let r = s
        .raw(&with_host(
            Some("mcp.example.com"),
            "Origin: http://localhost\r\n",
        ))
        .await;
    assert_eq!(r.status, 403);

    // any_host(): Host is not checked, Origin still is.
    let s = start(HttpConfig::default().any_host()).await;
    assert_eq!(
        s.raw(&with_host(Some("whatever.example"), "")).await.status,
        200
    );
    assert_eq!(
        s.raw(&with_host(
            Some("whatever.example"),
            "Origin: http://evil.example.com\r\n"
        ))
        .await
        .status,
        403
    );
}

#[tokio::test]
async fn a_connection_that_sends_nothing_does_not_hold_a_slot() {
    let config = HttpConfig::default().connection_limits(
        2,
        Duration::from_millis(300),
        Duration::from_secs(5),
        100,
    );
    let s = start(config).await;
    let _silent_a = TcpStream::connect(s.addr).await.unwrap();
    let _silent_b = TcpStream::connect(s.addr).await.unwrap();
    tokio::time::sleep(Duration::from_millis(800)).await;
    let r = tokio::time::timeout(
        Duration::from_secs(3),
        s.raw("GET /healthz HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"),
    )
    .await
    .expect("served once the silent connections were dropped");
    assert_eq!(r.status, 200);
}

#[tokio::test]
async fn a_stalled_body_is_408() {
    let config = HttpConfig::default().connection_limits(
        16,
        Duration::from_secs(5),
        Duration::from_millis(300),
        100,
    );
    let s = start(config).await;
    let mut stream = TcpStream::connect(s.addr).await.unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n{{\"jsonrpc\"",
        s.addr
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let started = Instant::now();
    let (status, _) = read_response(&mut stream).await.expect("an answer");
    assert_eq!(status, 408);
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn positional_arrays_are_not_requests() {
    let s = start(HttpConfig::default()).await;
    let body = r#"["2.0",7,"tools/call",{"name":"echo","arguments":{"text":"positional"}}]"#;
    let r = s
        .post(&[("MCP-Protocol-Version", "2025-11-25")], body)
        .await;
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["code"], -32600);
}

// ---- no timeout: Duration::MAX ----------------------------------------------------------

/// A timeout of `Duration::MAX` ("none") is served, not an overflow: the request's
/// deadline, the body's and the connection's head deadline all lie past what an instant
/// holds.
#[tokio::test]
async fn timeouts_of_duration_max_mean_none() {
    let config = HttpConfig::default()
        .request_timeout(Duration::MAX)
        .connection_limits(64, Duration::MAX, Duration::MAX, 100);
    let s = start(config).await;
    for n in 1..=3 {
        let r = s.post(&DISCOVER_HEADERS, &discover_body(n)).await;
        assert_eq!(r.status, 200, "{}", r.text());
    }
}
