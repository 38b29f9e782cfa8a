//! Wire tests of the output side of the HTTP transport (issue 37): the byte budgets of
//! answers and batches, what a connection holds for a client that reads slowly or not
//! at all, and the answers of requests still running when the shutdown drain ends.
//! Real loopback sockets against a real `Server`; see `docs/limits.md`.

// Tests panic on purpose when an expectation fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "wire/support.rs"]
#[allow(dead_code, unused_imports)]
mod support;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use snodo::http::{HttpConfig, Server};
use snodo::protocol::{V2025_03_26, V2025_11_25};
use snodo::{NoArguments, Runtime, Tool, ToolResult};
use snodo_testkit::assert_error;
use snodo_testkit::errors::assert_says;
use snodo_testkit::http::{literal_post, parse};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

use support::{TestServer, builder};

const V: &str = "2025-11-25";
const MIB: usize = 1024 * 1024;

#[derive(Deserialize, JsonSchema)]
struct BigArgs {
    /// Bytes of text to return.
    size: usize,
}

/// The fixture plus `big` (a text of `size` bytes) and `stall` (one progress
/// notification, then waits until cancelled).
fn runtime() -> Runtime {
    builder(&[&V2025_11_25, &V2025_03_26])
        .tool(
            Tool::new("big")
                .description("Returns size bytes of text")
                .handler(|a: BigArgs| async move { ToolResult::text("x".repeat(a.size)) }),
        )
        .tool(
            Tool::new("stall")
                .description("Reports progress, then waits until cancelled")
                .handler(|_: NoArguments, ctx: snodo::RequestContext| async move {
                    ctx.progress(0.0, Some(1.0), None).await;
                    ctx.cancellation().cancelled().await;
                    ToolResult::text("cancelled")
                }),
        )
        .build()
        .unwrap()
}

async fn start(config: HttpConfig) -> TestServer {
    TestServer::start_with(runtime(), config).await
}

fn call(id: i64, tool: &str, arguments: &Value) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":tool,"arguments":arguments}})
}

/// A 2025-11-25 `tools/call`, as literal HTTP/1.1 (connection closed after it).
fn request(addr: SocketAddr, body: &Value) -> String {
    literal_post(
        &addr.to_string(),
        &[("MCP-Protocol-Version", V)],
        &body.to_string(),
        true,
    )
}

/// A connection whose receive buffer is small, so that the server's writes stay
/// pending until the test reads.
async fn narrow(addr: SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(16 * 1024).unwrap();
    socket.connect(addr).await.unwrap()
}

/// Reads to the end (or `limit`), `pace` bytes at most every `every`.
async fn read_paced(
    stream: &mut TcpStream,
    pace: usize,
    every: Duration,
    limit: Duration,
) -> Vec<u8> {
    let start = Instant::now();
    let mut buf = Vec::new();
    let mut chunk = vec![0u8; pace];
    while start.elapsed() < limit {
        match tokio::time::timeout(limit, stream.read(&mut chunk)).await {
            Ok(Ok(n)) if n > 0 => buf.extend_from_slice(&chunk[..n]),
            _ => break,
        }
        if !every.is_zero() {
            tokio::time::sleep(every).await;
        }
    }
    buf
}

/// Whether `raw` is a whole response with a Content-Length body.
fn complete(raw: &[u8]) -> bool {
    let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") else {
        return false;
    };
    let head = String::from_utf8_lossy(&raw[..end]).to_ascii_lowercase();
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map_or(usize::MAX, |v| v.trim().parse().unwrap());
    raw.len() - end - 4 == len
}

// ---- byte budgets ----------------------------------------------------------------------

#[tokio::test]
async fn a_batch_past_its_budget_fails_the_members_past_it_and_keeps_the_others() {
    let s = start(HttpConfig::default().answer_limits(MIB, MIB, 64 * MIB)).await;
    let size = json!({"size": 300_000});
    let batch = json!([
        call(1, "big", &size),
        call(2, "big", &size),
        call(3, "big", &size),
        call(4, "big", &size),
        {"jsonrpc":"2.0","id":5,"method":"ping"},
    ]);
    // Header-less: a 2025-03-26 client.
    let raw = literal_post(&s.addr.to_string(), &[], &batch.to_string(), true);
    let r = s.raw(&raw).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(
        r.header("content-length").is_some(),
        "a whole body, its length known"
    );
    let answers = r.json();
    let answers = answers.as_array().unwrap();
    let ids: Vec<&Value> = answers.iter().map(|a| &a["id"]).collect();
    assert_eq!(ids, [&json!(1), &json!(2), &json!(3), &json!(4), &json!(5)]);
    for a in &answers[..3] {
        let text = a["result"]["content"][0]["text"].as_str().unwrap();
        assert_eq!(text.len(), 300_000);
    }
    assert_eq!(answers[3]["error"]["code"], -32603, "{}", answers[3]);
    let message = answers[3]["error"]["message"].as_str().unwrap();
    assert!(message.contains("batch"), "{message}");
    assert_eq!(
        answers[4]["result"],
        json!({}),
        "a small member after it still fits"
    );
}

#[tokio::test]
async fn an_answer_past_its_budget_is_an_error_in_its_place() {
    let s = start(HttpConfig::default().answer_limits(MIB, MIB, 64 * MIB)).await;
    let r = s
        .raw(&request(s.addr, &call(1, "big", &json!({"size": 2 * MIB}))))
        .await;
    // Initialize-era errors travel in a 200.
    assert_eq!(r.status, 200, "{}", r.text());
    let m = r.json();
    let error = assert_error(&m, &json!(1), -32603);
    assert_says(&error, "one answer");
    let r = s
        .raw(&request(s.addr, &call(2, "big", &json!({"size": MIB / 2}))))
        .await;
    assert_eq!(
        r.json()["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .len(),
        MIB / 2
    );
}

#[tokio::test]
async fn answers_not_yet_written_are_bounded_in_total() {
    let s = start(HttpConfig::default().answer_limits(16 * MIB, 16 * MIB, 12 * MIB)).await;
    let big = call(1, "big", &json!({"size": 8 * MIB}));
    // A client that does not read: its 8 MiB answer stays held (more than the kernel's
    // buffers take).
    let mut held = narrow(s.addr).await;
    held.write_all(request(s.addr, &big).as_bytes())
        .await
        .unwrap();
    let mut first = [0u8; 1024];
    let _ = held.read(&mut first).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    // A second 8 MiB answer would pass the 12 MiB total: refused, retry later.
    let r = s.raw(&request(s.addr, &big)).await;
    assert_eq!(r.status, 503, "{}", r.text().get(..200).unwrap_or_default());
    assert_eq!(r.header("retry-after"), Some("1"));
    assert_eq!(r.json()["error"]["code"], -32603);
    assert!(
        r.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("retry later")
    );
    // Small answers are not held back.
    let r = s
        .raw(&request(s.addr, &call(2, "big", &json!({"size": 10}))))
        .await;
    assert_eq!(r.status, 200);
    // Once the first client has read its answer, the budget is free again.
    let mut rest = first.to_vec();
    rest.extend(
        read_paced(
            &mut held,
            64 * 1024,
            Duration::ZERO,
            Duration::from_secs(20),
        )
        .await,
    );
    assert!(complete(&rest), "the held answer arrived whole");
    tokio::time::sleep(Duration::from_millis(100)).await;
    let r = s.raw(&request(s.addr, &big)).await;
    assert_eq!(r.status, 200, "{}", r.text().get(..200).unwrap_or_default());
}

// ---- slow and stopped readers ----------------------------------------------------------

#[tokio::test]
async fn a_slow_steady_reader_gets_its_whole_answer() {
    // A head deadline much shorter than the answer takes to read.
    let s = start(HttpConfig::default().header_read_timeout(Duration::from_millis(500))).await;
    let mut c = narrow(s.addr).await;
    let big = call(1, "big", &json!({"size": 12 * MIB}));
    c.write_all(request(s.addr, &big).as_bytes()).await.unwrap();
    let started = Instant::now();
    // About 3 MiB/s: four seconds for the answer.
    let raw = read_paced(
        &mut c,
        32 * 1024,
        Duration::from_millis(10),
        Duration::from_secs(30),
    )
    .await;
    assert!(
        started.elapsed() > Duration::from_secs(2),
        "the reading was slow ({:?})",
        started.elapsed()
    );
    assert!(complete(&raw), "{} bytes of a 12 MiB answer", raw.len());
    let r = parse(&raw);
    assert_eq!(
        r.json()["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .len(),
        12 * MIB
    );
}

#[tokio::test]
async fn a_client_that_stops_reading_is_dropped_by_the_write_deadline() {
    let config = HttpConfig::default()
        .header_read_timeout(Duration::from_secs(60))
        .write_timeout(Duration::from_secs(1));
    let s = start(config).await;
    let mut c = narrow(s.addr).await;
    let big = call(1, "big", &json!({"size": 12 * MIB}));
    c.write_all(request(s.addr, &big).as_bytes()).await.unwrap();
    // Stop reading for longer than the write deadline (far less than the head one).
    tokio::time::sleep(Duration::from_secs(3)).await;
    let raw = read_paced(&mut c, 256 * 1024, Duration::ZERO, Duration::from_secs(10)).await;
    assert!(
        !complete(&raw),
        "the connection was dropped: {} bytes of a 12 MiB answer",
        raw.len()
    );
    // The server is fine.
    let r = s
        .raw(&request(s.addr, &call(2, "big", &json!({"size": 10}))))
        .await;
    assert_eq!(r.status, 200);
}

// ---- shutdown -------------------------------------------------------------------------

#[tokio::test]
async fn a_request_running_when_the_drain_ends_gets_a_final_error() {
    let config = HttpConfig::default().disconnect_probe(None, Duration::from_secs(15));
    let mut s = start(config).await;
    let wait = call(1, "wait", &json!({"tag": "drain-json", "ms": 60_000}));
    let addr = s.addr;
    let answer =
        tokio::spawn(async move { snodo_testkit::http::send(addr, &request(addr, &wait)).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = Instant::now();
    // The test server drains for 2 s.
    s.shutdown();
    let r = answer.await.unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(r.status, 503, "{}", r.text());
    assert_eq!(r.header("retry-after"), Some("1"));
    let m = r.json();
    let error = assert_error(&m, &json!(1), -32603);
    assert_says(&error, "shutting down");
}

#[tokio::test]
async fn an_sse_stream_running_when_the_drain_ends_ends_with_a_final_error() {
    let mut s = start(HttpConfig::default()).await;
    let body = json!({"jsonrpc":"2.0","id":7,"method":"tools/call",
        "params":{"name":"stall","arguments":{},"_meta":{"progressToken":"p"}}});
    let mut c = TcpStream::connect(s.addr).await.unwrap();
    c.write_all(request(s.addr, &body).as_bytes())
        .await
        .unwrap();
    // The progress notification opens the stream.
    let mut raw = Vec::new();
    let mut chunk = [0u8; 4096];
    while !String::from_utf8_lossy(&raw).contains("notifications/progress") {
        let n = tokio::time::timeout(Duration::from_secs(5), c.read(&mut chunk))
            .await
            .unwrap()
            .unwrap();
        assert!(n > 0, "closed before the progress event");
        raw.extend_from_slice(&chunk[..n]);
    }
    s.shutdown();
    tokio::time::timeout(Duration::from_secs(10), c.read_to_end(&mut raw))
        .await
        .expect("the stream ends")
        .unwrap();
    assert!(
        raw.ends_with(b"0\r\n\r\n"),
        "a clean end of the chunked stream: {:?}",
        String::from_utf8_lossy(&raw)
    );
    let r = parse(&raw);
    let events = r.events();
    let last = events.last().unwrap();
    let error = assert_error(last, &json!(7), -32603);
    assert_says(&error, "shutting down");
}

#[tokio::test]
async fn connections_between_requests_do_not_delay_shutdown() {
    let server = Server::bind(
        runtime(),
        "127.0.0.1:0".parse().unwrap(),
        HttpConfig::default(),
    )
    .await
    .unwrap();
    let addr = server.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(server.run_until(async {
        let _ = stopped.await;
    }));
    // One connection that sends nothing, one that sent half a head, one kept alive
    // after an answer.
    let _silent = TcpStream::connect(addr).await.unwrap();
    let mut half = TcpStream::connect(addr).await.unwrap();
    half.write_all(b"POST /mcp HTTP/1.1\r\nHost: loc")
        .await
        .unwrap();
    let mut kept = TcpStream::connect(addr).await.unwrap();
    let ping = json!({"jsonrpc":"2.0","id":1,"method":"ping"}).to_string();
    kept.write_all(
        literal_post(
            &addr.to_string(),
            &[("MCP-Protocol-Version", V)],
            &ping,
            false,
        )
        .as_bytes(),
    )
    .await
    .unwrap();
    let mut chunk = [0u8; 1024];
    assert!(kept.read(&mut chunk).await.unwrap() > 0);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = Instant::now();
    stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(5), running)
        .await
        .expect("the server stops")
        .unwrap()
        .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "stopped after {:?} with nothing running",
        started.elapsed()
    );
}
