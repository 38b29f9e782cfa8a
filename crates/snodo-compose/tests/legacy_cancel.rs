//! A front cancellation reaches an initialize-era HTTP backend as a POSTed
//! `notifications/cancelled` for the abandoned request: closing the response tells such
//! a server nothing. The backend is a bare HTTP/1.1 JSON-RPC server on a real socket
//! that never answers `tools/call` and records every notification it receives.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use snodo::Runtime;
use snodo::protocol::ALL;
use snodo_client::{CallOptions, Client, Protocol};
use snodo_compose::{McpSource, Mount, Status, Transforms};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

type Log = Arc<Mutex<Vec<Value>>>;

async fn reply(w: &mut (impl AsyncWriteExt + Unpin), status: &str, body: &str) {
    let head = format!(
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    let _ = w.write_all(head.as_bytes()).await;
    let _ = w.write_all(body.as_bytes()).await;
}

/// One connection: requests until it closes; `tools/call` is never answered.
async fn connection(sock: TcpStream, log: Log) {
    let (r, mut w) = sock.into_split();
    let mut r = BufReader::new(r);
    loop {
        let (mut len, mut line, mut get) = (0usize, String::new(), false);
        loop {
            line.clear();
            if r.read_line(&mut line).await.unwrap_or(0) == 0 {
                return;
            }
            let l = line.trim_end().to_ascii_lowercase();
            if l.starts_with("get ") || l.starts_with("delete ") {
                get = true;
            }
            if let Some(v) = l.strip_prefix("content-length:") {
                len = v.trim().parse().unwrap_or(0);
            }
            if l.is_empty() {
                break;
            }
        }
        let mut body = vec![0; len];
        if r.read_exact(&mut body).await.is_err() {
            return;
        }
        if get {
            reply(&mut w, "405 Method Not Allowed", "").await;
            continue;
        }
        let msg: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let method = msg["method"].as_str().unwrap_or_default().to_owned();
        let answer = |result: Value| {
            json!({"jsonrpc": "2.0", "id": msg["id"], "result": result}).to_string()
        };
        match method.as_str() {
            "initialize" => {
                let r = answer(
                    json!({"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                    "serverInfo": {"name": "bare", "version": "1"}}),
                );
                reply(&mut w, "200 OK", &r).await;
            }
            "tools/list" => {
                let tools = json!({"tools": [{"name": "wait", "inputSchema": {"type": "object"}}]});
                reply(&mut w, "200 OK", &answer(tools)).await;
            }
            "tools/call" => {
                log.lock().unwrap().push(msg.clone());
                // Never answered: the connection stays until the client closes it.
                let _ = r.read(&mut [0u8; 1]).await;
                return;
            }
            m if msg.get("id").is_none() => {
                let _ = m;
                log.lock().unwrap().push(msg.clone());
                reply(&mut w, "202 Accepted", "").await;
            }
            _ => reply(&mut w, "200 OK", &answer(json!({}))).await,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_front_cancellation_is_posted_to_an_initialize_era_http_backend() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let log: Log = Arc::default();
    let l = log.clone();
    let server = tokio::spawn(async move {
        while let Ok((sock, _)) = listener.accept().await {
            tokio::spawn(connection(sock, l.clone()));
        }
    });
    let front = Runtime::builder("front", "1")
        .protocols(ALL.iter().copied())
        .declare_all_kinds()
        .build()
        .unwrap();
    let source = McpSource::http("bare", format!("http://{addr}/mcp"))
        .protocol(Protocol::Pinned("2025-06-18".into()));
    let mount = Mount::new(&front, source, Transforms::new().namespace("b"));
    assert!(matches!(
        mount.ready(Duration::from_secs(10)).await,
        Status::Up { .. }
    ));
    for v in ["2026-07-28", "2025-06-18"] {
        log.lock().unwrap().clear();
        let c = Client::builder("t", "1")
            .protocol(Protocol::Pinned(v.into()))
            .connect_runtime(front.clone())
            .await
            .unwrap();
        let opts = CallOptions::default().timeout(Duration::from_millis(300));
        assert!(
            c.call_tool_with("b_wait", json!({}), &opts).await.is_err(),
            "{v}"
        );
        let mut cancelled = None;
        for _ in 0..200 {
            let seen = log.lock().unwrap().clone();
            let call = seen
                .iter()
                .find(|m| m["method"] == "tools/call")
                .map(|m| m["id"].clone());
            cancelled = seen
                .iter()
                .find(|m| m["method"] == "notifications/cancelled")
                .map(|m| (call, m["params"]["requestId"].clone()));
            if cancelled.is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        let (call, cancelled) = cancelled
            .unwrap_or_else(|| panic!("front {v}: no notifications/cancelled reached the backend"));
        assert_eq!(
            call,
            Some(cancelled),
            "front {v}: the cancellation names the backend call"
        );
        assert_eq!(
            mount.down_count(),
            0,
            "front {v}: a cancellation is not an outage"
        );
    }
    server.abort();
}
