//! An HTTP backend that answers one call with `429 Too Many Requests`: that call fails
//! with an error naming the backend, and the shared session is kept (no new
//! `initialize`, no restart), so the next call goes through on it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use snodo_client::Protocol;
use snodo_compose::{McpSource, Mount, MountOptions, Source, Status, Transforms};
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// Answers one HTTP/1.1 request after another on `stream`; counts `initialize`s.
async fn serve(stream: TcpStream, inits: Arc<AtomicUsize>) {
    let (r, mut w) = stream.into_split();
    let mut r = BufReader::new(r);
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).await.unwrap_or(0) == 0 {
            return;
        }
        let post = line.starts_with("POST");
        let mut length = 0;
        loop {
            let mut h = String::new();
            if r.read_line(&mut h).await.unwrap_or(0) == 0 {
                return;
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                if k.eq_ignore_ascii_case("content-length") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
        }
        let mut body = vec![0; length];
        if r.read_exact(&mut body).await.is_err() {
            return;
        }
        let msg: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let id = msg.get("id").cloned();
        let method = msg.get("method").and_then(Value::as_str).unwrap_or("");
        let ok = |result: Value| (200, json!({"jsonrpc": "2.0", "id": id, "result": result}));
        let (status, answer) = match (post, method) {
            (false, _) => (405, Value::Null),
            (true, "initialize") => {
                inits.fetch_add(1, Ordering::SeqCst);
                ok(json!({
                    "protocolVersion": "2025-06-18",
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "raw", "version": "1"},
                }))
            }
            (true, _) if id.is_none() => (202, Value::Null),
            (true, "tools/list") => ok(json!({"tools": [
                {"name": "busy", "inputSchema": {"type": "object"}},
                {"name": "fine", "inputSchema": {"type": "object"}},
            ]})),
            (true, "tools/call") if msg.pointer("/params/name") == Some(&json!("busy")) => {
                (429, json!("slow down"))
            }
            (true, "tools/call") => ok(json!({"content": [{"type": "text", "text": "fine"}]})),
            (true, _) => ok(json!({})),
        };
        let body = if answer.is_null() {
            String::new()
        } else {
            answer.to_string()
        };
        let reason = match status {
            200 => "OK",
            202 => "Accepted",
            405 => "Method Not Allowed",
            _ => "Too Many Requests",
        };
        let head = format!(
            "HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
            body.len()
        );
        if w.write_all(head.as_bytes()).await.is_err()
            || w.write_all(body.as_bytes()).await.is_err()
        {
            return;
        }
    }
}

#[tokio::test]
async fn an_http_status_fails_one_call_and_keeps_the_session() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let inits = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&inits);
    let server = tokio::spawn(async move {
        while let Ok((s, _)) = listener.accept().await {
            tokio::spawn(serve(s, Arc::clone(&counted)));
        }
    });
    let src = McpSource::http("raw", format!("http://{addr}/mcp"))
        .protocol(Protocol::Pinned("2025-06-18".into()));
    let health = src.health();
    let front = support::front().build().unwrap();
    let options = MountOptions {
        health_interval: Duration::from_secs(600),
        ..MountOptions::default()
    };
    let src: Arc<dyn Source> = Arc::new(src);
    let m = Mount::with_options(&front, src, Transforms::new().namespace("raw"), options);
    let status = m.ready(Duration::from_secs(10)).await;
    assert!(matches!(status, Status::Up { .. }), "{status:?}");
    let c = support::client(&front, "2025-06-18").await;
    let err = c.call_tool("raw_busy", json!({})).await.unwrap_err();
    let err = err.to_string();
    assert!(err.contains("backend \"raw\""), "{err}");
    assert!(err.contains("429"), "{err}");
    let r = c.call_tool("raw_fine", json!({})).await.unwrap();
    assert_eq!(r.text(), "fine");
    assert_eq!(
        inits.load(Ordering::SeqCst),
        1,
        "the session was made again"
    );
    assert_eq!(health.restarts(), 0, "{health:?}");
    assert!(matches!(m.status(), Status::Up { generation: 1, .. }));
    server.abort();
}
