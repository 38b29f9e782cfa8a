//! The client against a hand-written initialize-era server of the kind snodo is not:
//! it refuses `server/discover` (with `-32022` or a plain 400), issues
//! `Mcp-Session-Id`, answers with SSE, and expects `DELETE` at close.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use snodo_client::Client;

#[derive(Clone, Default)]
struct Peer {
    /// `"-32022"` or `"400"`: how `server/discover` is refused.
    refuse: &'static str,
    /// Whether `/mcp` redirects to `/mcp/`.
    redirect: bool,
    /// Whether the first session ends (404) at the first tools/call; the next is sess-43.
    expire: bool,
    expired: Arc<std::sync::atomic::AtomicBool>,
    log: Arc<Mutex<Vec<String>>>,
}

const SESSION: &str = "sess-42";

fn sse(v: &Value) -> Response {
    let body = format!(
        "event: message\nid: 1\ndata: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{{\"level\":\"info\",\"data\":\"hi\"}}}}\n\nevent: message\nid: 2\ndata: {v}\n\n"
    );
    ([("content-type", "text/event-stream")], body).into_response()
}

fn json_answer(v: Value) -> Response {
    ([("content-type", "application/json")], v.to_string()).into_response()
}

async fn mcp(
    State(p): State<Peer>,
    method: Method,
    uri: axum::http::Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let h = |n: &str| {
        headers
            .get(n)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("-")
            .to_owned()
    };
    let push = |s: String| {
        if let Ok(mut g) = p.log.lock() {
            g.push(s);
        }
    };
    if method == Method::DELETE {
        push(format!("DELETE session={}", h("mcp-session-id")));
        return StatusCode::OK.into_response();
    }
    if uri.path() == "/mcp" && p.redirect {
        // FastMCP's habit: /mcp answers 307 to /mcp/.
        return (StatusCode::TEMPORARY_REDIRECT, [("location", "/mcp/")]).into_response();
    }
    if method != Method::POST {
        return StatusCode::METHOD_NOT_ALLOWED.into_response();
    }
    let Ok(msg) = serde_json::from_slice::<Value>(&body) else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let m = msg["method"].as_str().unwrap_or("(answer)").to_owned();
    push(format!(
        "{m} session={} version={}",
        h("mcp-session-id"),
        h("mcp-protocol-version")
    ));
    let id = msg["id"].clone();
    let current = if p.expired.load(Ordering::SeqCst) {
        "sess-43"
    } else {
        SESSION
    };
    match m.as_str() {
        "server/discover" if p.refuse == "-32022" => {
            json_answer(json!({"jsonrpc": "2.0", "id": id,
            "error": {"code": -32022, "message": "Unsupported protocol version",
                "data": {"supported": ["2025-06-18"], "requested": "2026-07-28"}}}))
            .into_response()
        }
        "server/discover" => (
            StatusCode::BAD_REQUEST,
            "Bad Request: Server not initialized",
        )
            .into_response(),
        "initialize" => {
            let v = msg["params"]["protocolVersion"]
                .as_str()
                .unwrap_or_default();
            let v = if v == "2025-11-25" { "2025-06-18" } else { v };
            let r = json!({"jsonrpc": "2.0", "id": id, "result": {"protocolVersion": v,
                "capabilities": {"tools": {}}, "serverInfo": {"name": "peer", "version": "9"}}});
            ([("mcp-session-id", current)], json_answer(r)).into_response()
        }
        "notifications/initialized" => StatusCode::ACCEPTED.into_response(),
        "tools/call" if p.expire && !p.expired.swap(true, Ordering::SeqCst) => {
            (StatusCode::NOT_FOUND, "session expired").into_response()
        }
        _ if h("mcp-session-id") != current => {
            (StatusCode::NOT_FOUND, "no session").into_response()
        }
        "tools/list" => sse(&json!({"jsonrpc": "2.0", "id": id, "result": {"tools": [
            {"name": "t", "inputSchema": {"type": "object"}}]}})),
        "tools/call" => sse(&json!({"jsonrpc": "2.0", "id": id, "result": {
            "content": [{"type": "text", "text": "peer says hi"}]}})),
        _ => json_answer(json!({"jsonrpc": "2.0", "id": id,
            "error": {"code": -32601, "message": "Method not found"}}))
        .into_response(),
    }
}

async fn run(refuse: &'static str, redirect: bool) -> Vec<String> {
    run_with(refuse, redirect, false).await
}

async fn run_with(refuse: &'static str, redirect: bool, expire: bool) -> Vec<String> {
    let peer = Peer {
        refuse,
        redirect,
        expire,
        ..Peer::default()
    };
    let log = peer.log.clone();
    let app = Router::new()
        .route("/mcp", axum::routing::any(mcp))
        .route("/mcp/", axum::routing::any(mcp))
        .with_state(peer);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    let logs = Arc::new(Mutex::new(Vec::new()));
    let l = logs.clone();
    let c = Client::builder("peer-test", "1")
        .on_log(move |m| {
            if let Ok(mut g) = l.lock() {
                g.push(m.data);
            }
        })
        .connect_http(&format!("http://{addr}/mcp"))
        .await
        .unwrap_or_else(|e| panic!("{refuse}: {e}"));
    assert_eq!(c.protocol_version(), "2025-06-18");
    assert_eq!(
        c.server().server_info,
        Some(json!({"name": "peer", "version": "9"}))
    );
    let tools = c.list_tools().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(tools[0].name, "t");
    let r = c
        .call_tool("t", json!({}))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.text(), "peer says hi");
    assert_eq!(
        logs.lock().map(|g| g.len()).unwrap_or(0),
        2,
        "SSE notifications delivered"
    );
    c.close().await;
    server.abort();
    log.lock().map(|g| g.clone()).unwrap_or_default()
}

#[tokio::test]
async fn unsupported_version_leads_to_initialize_with_a_listed_version() {
    let log = run("-32022", false).await;
    assert_eq!(
        log,
        [
            "server/discover session=- version=2026-07-28",
            "initialize session=- version=-",
            "notifications/initialized session=sess-42 version=2025-06-18",
            "tools/list session=sess-42 version=2025-06-18",
            "tools/call session=sess-42 version=2025-06-18",
            "DELETE session=sess-42",
        ]
    );
}

#[tokio::test]
async fn a_refused_probe_leads_to_initialize_and_the_answered_version() {
    let log = run("400", false).await;
    assert_eq!(log[0], "server/discover session=- version=2026-07-28");
    assert_eq!(log[1], "initialize session=- version=-");
    assert_eq!(
        log.last().map(String::as_str),
        Some("DELETE session=sess-42")
    );
}

#[tokio::test]
async fn a_same_origin_redirect_is_followed() {
    let log = run("400", true).await;
    assert_eq!(log[1], "initialize session=- version=-");
    assert_eq!(
        log.last().map(String::as_str),
        Some("DELETE session=sess-42")
    );
}

#[tokio::test]
async fn an_expired_session_is_renewed_once() {
    let log = run_with("400", false, true).await;
    let tail: Vec<&str> = log.iter().map(String::as_str).skip(3).collect();
    assert_eq!(
        tail,
        [
            "tools/list session=sess-42 version=2025-06-18",
            "tools/call session=sess-42 version=2025-06-18",
            "initialize session=- version=-",
            "notifications/initialized session=sess-43 version=2025-06-18",
            "tools/call session=sess-43 version=2025-06-18",
            "DELETE session=sess-43",
        ]
    );
}
