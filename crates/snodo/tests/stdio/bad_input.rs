//! Bad input on stdio: a clear error or a closed stream, never a panic, a hang or
//! unbounded memory; the stream goes on after every bad line.

use std::time::Duration;

use serde_json::json;
use snodo::stdio::StdioConfig;
use tokio::io::AsyncWriteExt;

use crate::client::{Client, V, assert_error, assert_response};
use crate::support::{MODERN, builder};

async fn echo_works(c: &mut Client, id: i64) {
    c.modern(
        json!(id),
        "tools/call",
        json!({"name":"echo","arguments":{"text":"ok"}}),
        json!({}),
    )
    .await;
    let m = c.recv().await;
    assert_eq!(m["id"], id, "{m}");
    assert_eq!(m["result"]["content"][0]["text"], "ok");
}

#[tokio::test]
async fn garbage_lines_get_parse_errors_and_the_stream_goes_on() {
    let mut c = Client::start(builder(&MODERN).build().unwrap());
    for line in ["garbage", "{\"jsonrpc\":", "{]", "\u{1}\u{2}", "nul\0l"] {
        c.line(line).await;
        let m = c.recv().await;
        assert_eq!(m["id"], json!(null), "{line}: {m}");
        assert_eq!(m["error"]["code"], -32700, "{line}: {m}");
        assert_response(V, "tools/list", &m);
    }
    // Invalid UTF-8.
    c.raw(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\xfe\"}\n")
        .await;
    assert_eq!(c.recv().await["error"]["code"], -32700);
    // Well-formed JSON that is no message: -32600.
    for line in [
        "[]",
        "42",
        "{\"jsonrpc\":\"1.0\",\"id\":3,\"method\":\"x\"}",
    ] {
        c.line(line).await;
        assert_eq!(c.recv().await["error"]["code"], -32600, "{line}");
    }
    // Blank lines are skipped; CRLF is accepted.
    c.raw(b"\n   \n\r\n").await;
    c.raw(
        format!(
            "{}\r\n",
            json!({"jsonrpc":"2.0","id":5,"method":"tools/list","params":{"_meta":{
                "io.modelcontextprotocol/protocolVersion":V,
                "io.modelcontextprotocol/clientCapabilities":{}}}})
        )
        .as_bytes(),
    )
    .await;
    assert_eq!(c.recv().await["id"], 5);
    echo_works(&mut c, 6).await;
    c.finish().await;
}

#[tokio::test]
async fn a_leading_bom_is_tolerated() {
    let mut c = Client::start(builder(&MODERN).build().unwrap());
    c.raw(b"\xEF\xBB\xBF").await;
    echo_works(&mut c, 1).await;
    c.finish().await;
}

#[tokio::test]
async fn over_long_lines_are_refused_and_skipped() {
    let config = StdioConfig::default().max_line_bytes(1024);
    let mut c = Client::start_with(builder(&MODERN).build().unwrap(), config, 1 << 16);
    let long = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{{\"text\":\"{}\"}}}}",
        "x".repeat(5000)
    );
    c.line(&long).await;
    let m = c.recv().await;
    assert_eq!(m["id"], json!(null));
    assert_eq!(m["error"]["code"], -32600);
    assert!(
        m["error"]["message"].as_str().unwrap().contains("1024"),
        "{m}"
    );
    echo_works(&mut c, 2).await;
    c.finish().await;
}

#[tokio::test]
async fn a_100_mib_line_is_refused_with_bounded_memory() {
    let mut c = Client::start(builder(&MODERN).build().unwrap());
    let chunk = vec![b'a'; 1 << 20];
    c.raw(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"").await;
    for _ in 0..100 {
        c.raw(&chunk).await;
    }
    c.raw(b"\"}\n").await;
    let m = c.recv().await;
    assert_eq!(m["error"]["code"], -32600, "{m}");
    echo_works(&mut c, 2).await;
    c.finish().await;
}

#[tokio::test]
async fn a_truncated_last_line_is_answered_then_the_stream_ends() {
    let mut c = Client::start(builder(&MODERN).build().unwrap());
    c.raw(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/li")
        .await;
    let rest = c.finish().await;
    assert_eq!(rest.len(), 1, "{rest:?}");
    assert_eq!(rest[0]["error"]["code"], -32700);
    // A complete last message without its newline is served.
    let mut c = Client::start(builder(&MODERN).build().unwrap());
    c.raw(
        json!({"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{
            "io.modelcontextprotocol/protocolVersion":V,
            "io.modelcontextprotocol/clientCapabilities":{}}}})
        .to_string()
        .as_bytes(),
    )
    .await;
    let rest = c.finish().await;
    assert_eq!(rest[0]["id"], 2);
}

#[tokio::test]
async fn a_flood_of_cancellations_for_unknown_ids_changes_nothing() {
    let mut c = Client::start(builder(&MODERN).build().unwrap());
    let mut flood = String::new();
    for i in 0..20_000 {
        flood.push_str(
            &json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":i}})
                .to_string(),
        );
        flood.push('\n');
    }
    flood.push_str("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":null}}\n");
    flood.push_str("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":7}\n");
    c.raw(flood.as_bytes()).await;
    // The last line is no valid message (params must be an object): refused, no id.
    let m = c.recv().await;
    assert_eq!(
        (m["id"].clone(), m["error"]["code"].clone()),
        (json!(null), json!(-32602))
    );
    c.silent(Duration::from_millis(200)).await;
    echo_works(&mut c, 1).await;
    c.finish().await;
}

#[tokio::test]
async fn unexpected_responses_and_notifications_are_ignored() {
    let mut c = Client::start(builder(&MODERN).build().unwrap());
    c.line(r#"{"jsonrpc":"2.0","id":"x","result":{}}"#).await;
    c.line(r#"{"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"m"}}"#)
        .await;
    c.line(r#"{"jsonrpc":"2.0","method":"notifications/whatever"}"#)
        .await;
    c.silent(Duration::from_millis(200)).await;
    c.request(json!(9), "tools/list", json!(null)).await;
    assert_error(&c.recv().await, &json!(9), -32602);
    echo_works(&mut c, 1).await;
    c.finish().await;
}

/// A 2026-07-28 `echo` call with id 1 and a text of `len` bytes, as one line.
fn echo_line(len: usize) -> String {
    json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{
        "name":"echo","arguments":{"text":"y".repeat(len)},"_meta":{
        "io.modelcontextprotocol/protocolVersion":V,
        "io.modelcontextprotocol/clientCapabilities":{}}}})
    .to_string()
        + "\n"
}

/// Writes `request` up to 1000 times without reading; asserts the writes block within
/// 2 s (the server stopped reading) and returns how many went through.
async fn write_until_blocked(c: &mut Client, request: &str) -> usize {
    let mut written = 0;
    let blocked = tokio::time::timeout(Duration::from_secs(2), async {
        for _ in 0..1000 {
            c.write.write_all(request.as_bytes()).await.unwrap();
            written += 1;
        }
    })
    .await
    .is_err();
    assert!(blocked, "the server kept reading: {written} requests taken");
    written
}

#[tokio::test]
async fn a_client_that_stops_reading_stops_the_server_reading() {
    // Small pipes and queues: the server must stop reading rather than buffer.
    let config = StdioConfig::default().outbound_queue(2).max_in_flight(2);
    let mut c = Client::start_with(builder(&MODERN).build().unwrap(), config, 4096);
    let request = echo_line(2000);
    // Without reading, writing 1000 requests (2 MB) cannot finish: the server stops.
    let written = write_until_blocked(&mut c, &request).await;
    assert!(written < 100, "{written} requests taken without reading");
    // Reading again lets everything through.
    for _ in 0..written {
        let m = c.recv().await;
        assert_eq!(m["id"], 1);
    }
    c.finish().await;
}

#[tokio::test]
async fn the_outbound_queue_is_bounded_in_bytes() {
    // Room for 1000 messages but 64 KiB: 20 KB answers fill the bytes long before the
    // count, and the server stops reading (it took every request before, 20 MB queued).
    let config = StdioConfig::default()
        .outbound_queue(1000)
        .outbound_bytes(64 * 1024)
        .max_in_flight(2);
    let mut c = Client::start_with(builder(&MODERN).build().unwrap(), config, 4096);
    let request = echo_line(20_000);
    let written = write_until_blocked(&mut c, &request).await;
    assert!(written < 16, "{written} requests taken without reading");
    // Reading again lets everything through, nothing dropped.
    for _ in 0..written {
        let m = c.recv().await;
        assert_eq!(m["id"], 1);
        assert_eq!(
            m["result"]["content"][0]["text"].as_str().map(str::len),
            Some(20_000)
        );
    }
    c.finish().await;
}
