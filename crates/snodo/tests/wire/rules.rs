//! Rules that hold on every revision a server serves, each written once: a behaviour
//! run over a table of revisions, with what differs per revision (the status an error
//! travels with, the result envelope) taken from `Revision` and its assertions
//! (`assert_http_error`, `assert_ok`). Each test here replaces one written per file
//! for 2026-07-28 (`modern.rs`, `streams.rs`) and again for the initialize era
//! (`legacy.rs`).

use serde_json::{Value, json};

use super::support::*;

/// The revisions `server(&ALL)` serves, newest first.
const SERVED: [Revision; 3] = [R2026_07_28, R2025_11_25, R2025_06_18];

/// A 2026-only server and a server of every dialect, each with the revisions it serves:
/// a rule holds on both.
async fn servers() -> [(TestServer, &'static [Revision]); 2] {
    [
        (server(&MODERN).await, &SERVED[..1]),
        (server(&ALL).await, &SERVED[..]),
    ]
}

/// `tools/call` of `tool` with `arguments`, as a client of `revision` sends it.
fn call(revision: Revision, id: impl Into<Value>, tool: &str, arguments: Value) -> Request {
    revision
        .request("tools/call")
        .id(id)
        .params(json!({"name": tool, "arguments": arguments}))
}

#[tokio::test]
async fn a_panicking_tool_fails_alone() {
    for (s, revisions) in servers().await {
        for &rev in revisions {
            let r = s
                .send(
                    &rev.request("tools/call")
                        .id(17)
                        .params(json!({"name":"panics"})),
                )
                .await;
            // 500 on 2026-07-28, in band (200) before.
            assert_http_error(&r, rev, "tools/call", &json!(17), -32603);
            let r = s
                .send(&call(rev, 18, "echo", json!({"text": "still here"})))
                .await;
            assert_eq!(
                assert_ok(&r, rev, "tools/call"),
                json!({"content":[{"type":"text","text":"still here"}],"isError":false}),
                "{rev}"
            );
        }
    }
}

#[tokio::test]
async fn errors_take_the_status_of_their_revision_on_one_server() {
    let s = server(&ALL).await;
    let rows: [(&str, Option<Value>, i64, &str); 2] = [
        (
            "tools/call",
            Some(json!({"name":"x","arguments":{}})),
            -32602,
            "Unknown tool: x",
        ),
        (
            "unknown/method",
            None,
            -32601,
            "Method not found: unknown/method",
        ),
    ];
    for rev in SERVED {
        for (i, (method, params, code, says)) in rows.iter().enumerate() {
            let id = json!(7 + i);
            let r = s
                .send(
                    &rev.request(method)
                        .id(id.clone())
                        .params_opt(params.clone()),
                )
                .await;
            // 400 and 404 on 2026-07-28, 200 on the initialize-era dialects.
            let e = assert_http_error(&r, rev, method, &id, *code);
            assert_eq!(e["message"], *says, "{rev} {method}");
        }
    }
}

#[tokio::test]
async fn progress_streams_before_the_result() {
    for (s, revisions) in servers().await {
        for &rev in revisions {
            progress_streams_on(&s, rev).await;
        }
    }
}

/// A progress token of each JSON type a client may pick.
fn token(rev: Revision) -> Value {
    match rev {
        R2025_11_25 => json!("legacy-progress"),
        R2025_06_18 => json!(7),
        _ => json!("p-1"),
    }
}

/// One progress call of `rev`: three notifications, then the result, on one SSE answer.
async fn progress_streams_on(s: &TestServer, rev: Revision) {
    let token = token(rev);
    let r = s
        .send(&call(rev, "p1", "progress", json!({})).meta("progressToken", token.clone()))
        .await;
    assert_eq!(r.status, 200, "{rev}: {}", r.text());
    assert_eq!(r.header("content-type"), Some("text/event-stream"), "{rev}");
    assert_eq!(r.header("cache-control"), Some("no-cache"), "{rev}");
    assert_eq!(r.header("x-accel-buffering"), Some("no"), "{rev}");
    assert!(r.header("mcp-session-id").is_none(), "{rev}");
    assert_valid(rev.version(), "tools/call", &r);
    let events = r.events();
    assert_eq!(events.len(), 4, "{rev}: {events:?}");
    for (n, expected) in events[..3].iter().zip([0.0, 50.0, 100.0]) {
        assert_eq!(n["jsonrpc"], "2.0");
        assert_eq!(n["method"], "notifications/progress", "{n}");
        assert!(n.get("id").is_none(), "{n}");
        assert_eq!(n["params"]["progressToken"], token, "{n}");
        assert_eq!(n["params"]["progress"].as_f64(), Some(expected), "{n}");
        assert_eq!(n["params"]["total"].as_f64(), Some(100.0), "{n}");
    }
    let last = &events[3];
    assert_eq!(last["id"], "p1", "{rev}");
    assert_eq!(
        without_envelope(rev, &last["result"]),
        json!({"content":[{"type":"text","text":"done"}],"isError":false}),
        "{rev}"
    );
}

#[tokio::test]
async fn progress_without_a_token_is_plain_json() {
    for (s, revisions) in servers().await {
        for &rev in revisions {
            let r = s.send(&call(rev, 1, "progress", json!({}))).await;
            assert_eq!(
                assert_ok(&r, rev, "tools/call"),
                json!({"content":[{"type":"text","text":"done"}],"isError":false}),
                "{rev}"
            );
        }
    }
}

#[tokio::test]
async fn session_ids_are_ignored_and_never_issued() {
    for (s, revisions) in servers().await {
        for &rev in revisions {
            if !rev.is_stateless() {
                let r = s.send(&Request::initialize(rev, "wire-client").id(1)).await;
                assert_eq!(r.status, 200, "{rev}");
                assert!(r.header("mcp-session-id").is_none(), "{rev}");
            }
            let list = rev.request("tools/list").id(2);
            let plain = assert_ok(&s.send(&list).await, rev, "tools/list");
            for session in ["abc", "legacy", "expired-or-unknown"] {
                let r = s
                    .send(&list.clone().header("Mcp-Session-Id", session))
                    .await;
                assert_eq!(assert_ok(&r, rev, "tools/list"), plain, "{rev} {session}");
            }
        }
    }
}

#[tokio::test]
async fn client_notifications_and_responses_are_accepted_with_202() {
    let notification =
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#;
    let response = r#"{"jsonrpc":"2.0","id":9,"result":{}}"#;
    for (s, revisions) in servers().await {
        for &rev in revisions {
            let header = [("MCP-Protocol-Version", rev.version())];
            let mut accepted = vec![notification];
            if rev.has_server_requests() {
                accepted.push(response);
            } else {
                // No server requests, so no client responses: refused before a dialect.
                let r = s.post(&header, response).await;
                let e = assert_refused(&r, 400, -32600, &Value::Null);
                assert_says(&e, "clients do not send JSON-RPC responses");
            }
            for body in accepted {
                let r = s.post(&header, body).await;
                assert_eq!(r.status, 202, "{rev} {body}: {}", r.text());
                assert!(r.body.is_empty(), "{rev} {body}");
                assert!(r.header("mcp-session-id").is_none(), "{rev} {body}");
            }
        }
    }
}
