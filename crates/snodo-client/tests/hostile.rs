//! Bad answers get clear errors, never a panic or a hang: non-JSON bodies, broken SSE,
//! streams that end before the answer, oversized events, a stdio peer writing garbage.

use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use snodo_client::{Client, ClientError};

const DISCOVER: &str = r#"{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"serverInfo":{"name":"h","version":"1"}}"#;

/// Answers `server/discover` properly and everything else with `mode`'s bad answer.
async fn hostile(State(mode): State<&'static str>, body: Bytes) -> Response {
    let msg: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let id = msg["id"].clone();
    if msg["method"] == "server/discover" {
        let r = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{DISCOVER}}}"#);
        return ([("content-type", "application/json")], r).into_response();
    }
    let sse = |body: String| ([("content-type", "text/event-stream")], body).into_response();
    match mode {
        "text" => (StatusCode::OK, "hello, not JSON").into_response(),
        "500" => (StatusCode::INTERNAL_SERVER_ERROR, "boom").into_response(),
        "sse-not-json" => sse("data: {nope\n\n".into()),
        "sse-ends-early" => sse(": nothing here\n\n".into()),
        "sse-other-id" => sse(format!(
            "data: {}\n\n",
            json!({"jsonrpc":"2.0","id":"someone-else","result":{}})
        )),
        "sse-huge" => sse(format!("data: \"{}", "x".repeat(17 * 1024 * 1024))),
        "json-huge" => (
            [("content-type", "application/json")],
            format!("[\"{}\"]", "x".repeat(17 * 1024 * 1024)),
        )
            .into_response(),
        "wrong-shape" => (
            [("content-type", "application/json")],
            json!({"jsonrpc":"2.0","id":id,"result":{"tools":"not a list"}}).to_string(),
        )
            .into_response(),
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}

async fn client_for(mode: &'static str) -> (Client, tokio::task::JoinHandle<()>) {
    let app = Router::new()
        .route("/mcp", axum::routing::post(hostile))
        .with_state(mode);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let c = Client::builder("t", "1")
        .timeout(Duration::from_secs(10))
        .connect_http(&format!("http://{addr}/mcp"))
        .await
        .unwrap_or_else(|e| panic!("{mode}: {e}"));
    (c, server)
}

#[tokio::test]
async fn bad_http_answers_are_typed_errors() {
    for (mode, want) in [
        ("text", "http"),
        ("500", "http"),
        ("sse-not-json", "transport"),
        ("sse-ends-early", "transport"),
        ("sse-other-id", "transport"),
        ("sse-huge", "transport"),
        ("json-huge", "transport"),
        ("wrong-shape", "unexpected"),
    ] {
        let (c, server) = client_for(mode).await;
        let err = c
            .list_tools()
            .await
            .err()
            .unwrap_or_else(|| panic!("{mode}: answered"));
        let kind = match err {
            ClientError::Http { .. } => "http",
            ClientError::Transport(_) => "transport",
            ClientError::Unexpected(_) => "unexpected",
            ref other => panic!("{mode}: {other:?}"),
        };
        assert_eq!(kind, want, "{mode}: {err}");
        server.abort();
    }
}

#[tokio::test]
async fn a_byte_stream_peer_writing_garbage_then_nothing_times_out() {
    use tokio::io::AsyncWriteExt as _;
    let (client_end, mut server_end) = tokio::io::duplex(1 << 16);
    let (cr, cw) = tokio::io::split(client_end);
    // Garbage lines, a JSON value that is no message, then silence (the peer keeps the
    // stream open): the probe times out and initialize is tried, which times out too.
    tokio::spawn(async move {
        let _ = server_end
            .write_all(b"not json\n[1,2]\n\n{\"jsonrpc\":\"2.0\"}\n")
            .await;
        tokio::time::sleep(Duration::from_secs(30)).await;
        drop(server_end);
    });
    let started = std::time::Instant::now();
    let err = Client::builder("t", "1")
        .probe_timeout(Duration::from_millis(300))
        .timeout(Duration::from_millis(300))
        .connect_stream(cr, cw)
        .await
        .err();
    assert!(matches!(err, Some(ClientError::Timeout(_))), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(5));
}
