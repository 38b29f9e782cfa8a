//! Request-bound streams, cancellation by principal, per-request authentication and
//! bounded execution.

use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use snodo::Principal;
use snodo::http::{AuthRejection, Authenticator, BearerTokens, HttpConfig};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use super::support::*;

const V: &str = "2026-07-28";

fn call_body(id: Value, tool: &str, args: Value, extra_meta: Value) -> String {
    R2026_07_28
        .request("tools/call")
        .id(id)
        .params(json!({"name": tool, "arguments": args}))
        .meta_members(&extra_meta)
        .body()
}

fn call_headers<'a>(tool: &'a str, auth: Option<&'a str>) -> Vec<(&'a str, &'a str)> {
    let mut h = vec![
        ("MCP-Protocol-Version", V),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", tool),
    ];
    if let Some(a) = auth {
        h.push(("Authorization", a));
    }
    h
}

fn cancel_body(id: Value) -> String {
    json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":id,"reason":"user"}}).to_string()
}

fn bearer() -> BearerTokens {
    BearerTokens::new("https://mcp.example.com/.well-known/oauth-protected-resource")
        .token("alpha", Principal::new("alice"))
        .token("beta", Principal::new("bob"))
}

#[tokio::test]
async fn nothing_streamed_means_plain_json() {
    let s = server(&MODERN).await;
    let r = s
        .post(
            &call_headers("progress", None),
            &call_body(json!(1), "progress", json!({}), json!({})),
        )
        .await;
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.result()["content"][0]["text"], "done");
    // Logs without a requested level are never sent.
    let r = s
        .post(
            &call_headers("logs", None),
            &call_body(json!(2), "logs", json!({}), json!({})),
        )
        .await;
    assert_eq!(r.header("content-type"), Some("application/json"));
}

#[tokio::test]
async fn logs_stream_at_or_above_the_requested_level() {
    let s = server(&MODERN).await;
    let body = call_body(
        json!(3),
        "logs",
        json!({}),
        json!({"io.modelcontextprotocol/logLevel": "warning"}),
    );
    let r = s.post(&call_headers("logs", None), &body).await;
    let events = r.events();
    let levels: Vec<&str> = events[..events.len() - 1]
        .iter()
        .map(|e| e["params"]["level"].as_str().unwrap())
        .collect();
    assert_eq!(levels, ["warning", "error"]);
    assert!(
        events
            .iter()
            .all(|e| e["method"] != "notifications/progress")
    );
    assert_valid(V, "tools/call", &r);
    let bad = call_body(
        json!(4),
        "logs",
        json!({}),
        json!({"io.modelcontextprotocol/logLevel": "loud"}),
    );
    let r = s.post(&call_headers("logs", None), &bad).await;
    assert_eq!((r.status, r.error_code()), (400, -32602));
}

#[tokio::test]
async fn a_client_disconnect_cancels_the_handler() {
    let config = HttpConfig::default()
        .disconnect_probe(Some(Duration::from_millis(100)), Duration::from_millis(100));
    let s = TestServer::start_with(builder(&MODERN).build().unwrap(), config).await;
    let body = call_body(
        json!(1),
        "wait",
        json!({"tag": "disconnect-1", "ms": 10_000}),
        json!({}),
    );
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: {V}\r\nMcp-Method: tools/call\r\nMcp-Name: wait\r\nContent-Length: {}\r\n\r\n{body}",
        s.addr,
        body.len()
    );
    let mut stream = TcpStream::connect(s.addr).await.unwrap();
    stream.write_all(head.as_bytes()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    drop(stream);
    assert!(
        saw_cancellation("disconnect-1").await,
        "the handler saw its cancellation"
    );
}

#[tokio::test]
async fn only_the_same_principal_cancels_a_request() {
    let rt = builder(&MODERN).build().unwrap();
    let s = std::sync::Arc::new(
        TestServer::start_with(rt, HttpConfig::default().authenticator(bearer())).await,
    );
    let a = {
        let s = s.clone();
        tokio::spawn(async move {
            let body = call_body(
                json!(77),
                "wait",
                json!({"tag": "principal-77", "ms": 5_000}),
                json!({}),
            );
            s.post(&call_headers("wait", Some("Bearer alpha")), &body)
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let h = [
        ("MCP-Protocol-Version", V),
        ("Authorization", "Bearer beta"),
    ];
    let r = s.post(&h, &cancel_body(json!(77))).await;
    assert_eq!(r.status, 202);
    assert!(r.body.is_empty());
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !cancelled_tags()
            .lock()
            .unwrap()
            .iter()
            .any(|t| t == "principal-77"),
        "bob cannot cancel alice's request"
    );
    let h = [
        ("MCP-Protocol-Version", V),
        ("Authorization", "Bearer alpha"),
    ];
    assert_eq!(s.post(&h, &cancel_body(json!(77))).await.status, 202);
    let r = a.await.unwrap();
    assert_eq!(
        r.status,
        204,
        "a cancelled request sends no result: {}",
        r.text()
    );
    assert!(r.body.is_empty());
    assert!(saw_cancellation("principal-77").await);
}

/// Principal from the bearer token; cancellation scope from the client instance header.
struct ScopedAuth;

impl Authenticator for ScopedAuth {
    fn authenticate<'a>(
        &'a self,
        request: &'a http::request::Parts,
    ) -> BoxFuture<'a, Result<Option<Principal>, AuthRejection>> {
        let instance = request
            .headers
            .get("x-client-instance")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("default");
        let principal = Principal::new("alice").with_scope(instance.to_owned());
        Box::pin(async move { Ok(Some(principal)) })
    }
}

#[tokio::test]
async fn an_application_scope_separates_request_id_namespaces() {
    let rt = builder(&MODERN).build().unwrap();
    let s = std::sync::Arc::new(
        TestServer::start_with(rt, HttpConfig::default().authenticator(ScopedAuth)).await,
    );
    let start = |instance: &'static str, tag: &'static str| {
        let s = s.clone();
        tokio::spawn(async move {
            let body = call_body(
                json!(5),
                "wait",
                json!({"tag": tag, "ms": 3_000}),
                json!({}),
            );
            let mut h = call_headers("wait", None);
            h.push(("X-Client-Instance", instance));
            s.post(&h, &body).await
        })
    };
    let one = start("one", "scope-one");
    let two = start("two", "scope-two");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let h = [("MCP-Protocol-Version", V), ("X-Client-Instance", "two")];
    assert_eq!(s.post(&h, &cancel_body(json!(5))).await.status, 202);
    assert_eq!(two.await.unwrap().status, 204);
    let r = one.await.unwrap();
    assert_eq!(
        r.status, 200,
        "the other namespace's request 5 runs to completion"
    );
    assert_eq!(r.result()["content"][0]["text"], "waited 3000");
}

#[tokio::test]
async fn the_deadline_cancels_and_answers_504() {
    let rt = builder(&MODERN).build().unwrap();
    let s = TestServer::start_with(
        rt,
        HttpConfig::default().request_timeout(Duration::from_millis(300)),
    )
    .await;
    let body = call_body(
        json!(9),
        "wait",
        json!({"tag": "deadline-9", "ms": 5_000}),
        json!({}),
    );
    let r = s.post(&call_headers("wait", None), &body).await;
    assert_eq!((r.status, r.error_code()), (504, -32603));
    assert_eq!(r.json()["error"]["message"], "Request execution timed out");
    assert_eq!(r.json()["id"], 9);
    assert!(saw_cancellation("deadline-9").await);
}

#[tokio::test]
async fn a_full_queue_answers_503_with_retry_after() {
    let rt = builder(&MODERN).build().unwrap();
    let s = std::sync::Arc::new(
        TestServer::start_with(rt, HttpConfig::default().execution_limits(1, 0)).await,
    );
    let busy = {
        let s = s.clone();
        tokio::spawn(async move {
            let body = call_body(
                json!(1),
                "wait",
                json!({"tag": "busy", "ms": 800}),
                json!({}),
            );
            s.post(&call_headers("wait", None), &body).await
        })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    let r = s
        .post(
            &call_headers("echo", None),
            &call_body(json!(2), "echo", json!({"text": "x"}), json!({})),
        )
        .await;
    assert_eq!((r.status, r.error_code()), (503, -32603));
    assert_eq!(r.header("retry-after"), Some("1"));
    assert_eq!(busy.await.unwrap().status, 200);
    let r = s
        .post(
            &call_headers("echo", None),
            &call_body(json!(3), "echo", json!({"text": "x"}), json!({})),
        )
        .await;
    assert_eq!(r.status, 200, "served again once the slot is free");
}

#[tokio::test]
async fn shutdown_drains_in_flight_requests() {
    let mut s = server(&MODERN).await;
    let addr = s.addr;
    let body = call_body(
        json!(1),
        "wait",
        json!({"tag": "drain", "ms": 600}),
        json!({}),
    );
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: {V}\r\nMcp-Method: tools/call\r\nMcp-Name: wait\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let in_flight = tokio::spawn(async move {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream.write_all(head.as_bytes()).await.unwrap();
        let mut buf = Vec::new();
        tokio::io::AsyncReadExt::read_to_end(&mut stream, &mut buf)
            .await
            .unwrap();
        String::from_utf8_lossy(&buf).into_owned()
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    s.shutdown();
    let answer = in_flight.await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("waited 600"), "{answer}");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        TcpStream::connect(addr).await.is_err(),
        "no longer accepting"
    );
}

#[tokio::test]
async fn authentication_runs_on_every_request() {
    let rt = builder(&ALL).build().unwrap();
    let s = TestServer::start_with(rt, HttpConfig::default().authenticator(bearer())).await;
    let body = call_body(json!(1), "caller", json!({}), json!({}));
    let r = s.post(&call_headers("caller", None), &body).await;
    assert_eq!(r.status, 401);
    assert_eq!(
        r.header("www-authenticate"),
        Some(
            "Bearer resource_metadata=\"https://mcp.example.com/.well-known/oauth-protected-resource\""
        )
    );
    let r = s
        .post(&call_headers("caller", Some("Bearer nope")), &body)
        .await;
    assert_eq!(r.status, 401);
    assert!(
        r.header("www-authenticate")
            .unwrap()
            .contains("error=\"invalid_token\"")
    );
    let r = s
        .post(&call_headers("caller", Some("Bearer alpha")), &body)
        .await;
    assert_eq!(r.result()["content"][0]["text"], "alice");
    let r = s
        .post(&call_headers("caller", Some("Bearer beta")), &body)
        .await;
    assert_eq!(r.result()["content"][0]["text"], "bob");
    // Legacy requests are authenticated the same way, each on its own.
    let legacy = json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"caller"}})
        .to_string();
    let r = s
        .post(
            &[
                ("MCP-Protocol-Version", "2025-11-25"),
                ("Authorization", "Bearer alpha"),
            ],
            &legacy,
        )
        .await;
    assert_eq!(r.result()["content"][0]["text"], "alice");
    let r = s
        .post(&[("MCP-Protocol-Version", "2025-11-25")], &legacy)
        .await;
    assert_eq!(r.status, 401);
    let init = json!({"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"alice","version":"1"}}}).to_string();
    assert_eq!(
        s.post(&[], &init).await.status,
        401,
        "client metadata never becomes an identity"
    );
}

fn not_for_bob(refusal: snodo::Refusal) -> snodo::Runtime {
    builder(&ALL)
        .authorizer(
            |p: Option<&Principal>, c: snodo::Component<'_>| {
                let bob = p.is_some_and(|p| p.id() == "bob");
                !(bob
                    && matches!(
                        c,
                        snodo::Component::Tool("echo")
                            | snodo::Component::Prompt("greet")
                            | snodo::Component::Resource("test://static/readme")
                    ))
            },
            refusal,
        )
        .build()
        .unwrap()
}

fn tool_names(r: &Reply) -> Vec<String> {
    r.result()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn authorization_hides_from_lists_and_refuses_calls() {
    let refusal = snodo::Refusal::Error(snodo::RpcError::new(
        snodo::protocol::ErrorCode(-32003),
        "Not authorized",
    ));
    let s = TestServer::start_with(
        not_for_bob(refusal),
        HttpConfig::default().authenticator(bearer()),
    )
    .await;
    let list = json!({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion": V, "io.modelcontextprotocol/clientCapabilities": {}}}}).to_string();
    let lh = |token| {
        vec![
            ("MCP-Protocol-Version", V),
            ("Mcp-Method", "tools/list"),
            ("Authorization", token),
        ]
    };
    let alice = s.post(&lh("Bearer alpha"), &list).await;
    assert!(tool_names(&alice).contains(&"echo".to_owned()));
    let bob = s.post(&lh("Bearer beta"), &list).await;
    assert!(!tool_names(&bob).contains(&"echo".to_owned()));
    assert_eq!(tool_names(&bob).len() + 1, tool_names(&alice).len());
    let body = call_body(json!(2), "echo", json!({"text": "hi"}), json!({}));
    let r = s
        .post(&call_headers("echo", Some("Bearer beta")), &body)
        .await;
    assert_eq!((r.status, r.error_code()), (200, -32003));
    assert_valid(V, "tools/call", &r);
    let r = s
        .post(&call_headers("echo", Some("Bearer alpha")), &body)
        .await;
    assert_eq!(r.result()["content"][0]["text"], "hi");
    // The same on an initialize-era request.
    let legacy = json!({"jsonrpc":"2.0","id":3,"method":"prompts/get","params":{"name":"greet","arguments":{"name":"x"}}}).to_string();
    let r = s
        .post(
            &[
                ("MCP-Protocol-Version", "2025-11-25"),
                ("Authorization", "Bearer beta"),
            ],
            &legacy,
        )
        .await;
    assert_eq!((r.status, r.error_code()), (200, -32003));
}

#[tokio::test]
async fn concealed_refusals_look_like_unknown_components() {
    let s = TestServer::start_with(
        not_for_bob(snodo::Refusal::Conceal),
        HttpConfig::default().authenticator(bearer()),
    )
    .await;
    let body = call_body(json!(2), "echo", json!({"text": "hi"}), json!({}));
    let r = s
        .post(&call_headers("echo", Some("Bearer beta")), &body)
        .await;
    assert_eq!(r.error_code(), -32602);
    assert_eq!(r.message()["error"]["message"], "Unknown tool: echo");
    let read = json!({"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"test://static/readme"}}).to_string();
    let r = s
        .post(
            &[
                ("MCP-Protocol-Version", "2025-06-18"),
                ("Authorization", "Bearer beta"),
            ],
            &read,
        )
        .await;
    assert_eq!((r.status, r.error_code()), (200, -32002));
    assert_eq!(r.message()["error"]["data"]["uri"], "test://static/readme");
    let r = s
        .post(
            &[
                ("MCP-Protocol-Version", "2025-06-18"),
                ("Authorization", "Bearer alpha"),
            ],
            &read,
        )
        .await;
    assert_eq!(r.result()["contents"][0]["text"], "# Static resource\n");
}
