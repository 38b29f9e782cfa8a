//! Per-tool policy at the wire: a call a limit stops is a tool error (`isError`) the
//! model can read, with `_meta["io.snodo/limit"]` for clients that retry.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use snodo::http::{BearerTokens, HttpConfig};
use snodo::{LIMIT_META_KEY, NoArguments, Principal, RateLimit, Runtime, Tool, ToolResult};

use crate::client::{Client, assert_response};
use crate::support::{MODERN, R2026_07_28, TestServer, WaitArgs, assert_valid, builder};

fn runtime() -> Runtime {
    builder(&MODERN)
        .tool(
            Tool::new("metered")
                .rate_limit(RateLimit::per_principal(2, Duration::from_secs(60)))
                .handler(|_: NoArguments, _ctx| async { ToolResult::text("metered ok") }),
        )
        .tool(
            Tool::new("single")
                .max_concurrent(1)
                .handler(|a: WaitArgs, _ctx| async move {
                    tokio::time::sleep(Duration::from_millis(a.ms)).await;
                    ToolResult::text("single done")
                }),
        )
        .tool(
            Tool::new("bounded")
                .timeout(Duration::from_millis(50))
                .handler(|a: WaitArgs, _ctx| async move {
                    tokio::time::sleep(Duration::from_millis(a.ms)).await;
                    ToolResult::text("bounded done")
                }),
        )
        .build()
        .unwrap()
}

fn call_body(id: u64, tool: &str, arguments: Value) -> String {
    R2026_07_28
        .request("tools/call")
        .id(id)
        .params(json!({"name": tool, "arguments": arguments}))
        .body()
}

fn limit(result: &Value) -> &Value {
    assert_eq!(result["isError"], true, "{result}");
    &result["_meta"][LIMIT_META_KEY]
}

#[tokio::test]
async fn rate_limits_are_per_principal_and_say_when_to_retry() {
    let (captured, _guard) = crate::capture::Captured::start();
    let auth = BearerTokens::new("https://example.com/.well-known/oauth-protected-resource")
        .token("tok-alice", Principal::new("alice"))
        .token("tok-bob", Principal::new("bob"));
    let server = TestServer::start_with(runtime(), HttpConfig::default().authenticator(auth)).await;
    let post = |token: &'static str, id: u64| {
        let server = &server;
        async move {
            let bearer = format!("Bearer {token}");
            let headers = [
                ("MCP-Protocol-Version", "2026-07-28"),
                ("Mcp-Method", "tools/call"),
                ("Mcp-Name", "metered"),
                ("Authorization", bearer.as_str()),
            ];
            server
                .post(&headers, &call_body(id, "metered", json!({})))
                .await
        }
    };
    for id in 1..=2 {
        let r = post("tok-alice", id).await;
        assert_eq!(r.status, 200);
        assert_eq!(r.json()["result"]["isError"], false);
    }
    let r = post("tok-alice", 3).await;
    assert_eq!(r.status, 200, "a tool error, not a protocol error");
    assert_valid("2026-07-28", "tools/call", &r);
    let result = &r.json()["result"];
    let details = limit(result);
    assert_eq!(details["reason"], "rate");
    let retry = details["retryAfterMs"].as_u64().unwrap();
    assert!(retry > 0 && retry <= 30_000, "{details}");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("rate limited") && text.contains("retry after"),
        "{text}"
    );
    // Bob has a budget of his own.
    let r = post("tok-bob", 4).await;
    assert_eq!(r.json()["result"]["isError"], false);

    // The request log says which limit answered.
    let events = captured.wait_for(4).await;
    let outcomes: Vec<(&str, &str, Option<&str>)> = events
        .iter()
        .map(|e| {
            (
                e["principal"].as_str(),
                e["outcome"].as_str(),
                e.get("limit").map(String::as_str),
            )
        })
        .collect();
    assert_eq!(
        outcomes,
        [
            ("alice", "ok", None),
            ("alice", "ok", None),
            ("alice", "tool_error", Some("rate")),
            ("bob", "ok", None),
        ]
    );
}

#[tokio::test]
async fn concurrency_and_timeout_limits() {
    let server = Arc::new(TestServer::start(runtime()).await);
    let headers = |tool: &'static str| {
        [
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", tool),
        ]
    };
    let busy = {
        let server = Arc::clone(&server);
        tokio::spawn(async move {
            server
                .post(
                    &headers("single"),
                    &call_body(1, "single", json!({"tag":"p1","ms":300})),
                )
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    let r = server
        .post(
            &headers("single"),
            &call_body(2, "single", json!({"tag":"p2","ms":1})),
        )
        .await;
    assert_valid("2026-07-28", "tools/call", &r);
    assert_eq!(limit(&r.json()["result"])["reason"], "concurrency");
    let first = busy.await.unwrap();
    assert_eq!(first.json()["result"]["isError"], false);
    // The slot is free again.
    let r = server
        .post(
            &headers("single"),
            &call_body(3, "single", json!({"tag":"p3","ms":1})),
        )
        .await;
    assert_eq!(r.json()["result"]["isError"], false);

    let r = server
        .post(
            &headers("bounded"),
            &call_body(4, "bounded", json!({"tag":"t","ms":2000})),
        )
        .await;
    assert_valid("2026-07-28", "tools/call", &r);
    let details = limit(&r.json()["result"]).clone();
    assert_eq!(details["reason"], "timeout");
    assert_eq!(details["timeoutMs"], 50);
    let r = server
        .post(
            &headers("bounded"),
            &call_body(5, "bounded", json!({"tag":"t","ms":1})),
        )
        .await;
    assert_eq!(r.json()["result"]["isError"], false);
}

#[tokio::test]
async fn stdio_callers_share_the_anonymous_budget() {
    let mut client = Client::start(runtime());
    for id in 1..=3 {
        client.line(&call_body(id, "metered", json!({}))).await;
    }
    let mut answers: Vec<Value> = Vec::new();
    for _ in 0..3 {
        answers.push(client.recv().await);
    }
    for a in &answers {
        assert_response("2026-07-28", "tools/call", a);
    }
    // Two calls fit the budget; one of the three (they run concurrently) is limited.
    let limited: Vec<&Value> = answers
        .iter()
        .filter(|a| a["result"]["isError"] == true)
        .collect();
    assert_eq!(limited.len(), 1, "{answers:?}");
    assert_eq!(limit(&limited[0]["result"])["reason"], "rate");
    let _ = client.finish().await;
}
