//! 2026-07-28 on stdio: per-request `_meta`, no header layer, request-bound
//! notifications, cancellation by id, subscriptions, input_required rounds.

use std::time::Duration;

use serde_json::{Value, json};
use snodo::Tool;

use crate::client::{Client, V, assert_error, assert_notification, assert_response};
use crate::support::{MODERN, builder, saw_cancellation};

#[tokio::test]
async fn operations_answer_in_the_2026_shape() {
    let mut c = Client::start(builder(&MODERN).build().unwrap());
    let calls = [
        ("server/discover", json!({})),
        ("tools/list", json!({})),
        (
            "tools/call",
            json!({"name":"echo","arguments":{"text":"hi"}}),
        ),
        (
            "prompts/get",
            json!({"name":"greet","arguments":{"name":"Ada"}}),
        ),
        ("resources/list", json!({})),
        ("resources/read", json!({"uri":"test://static/readme"})),
        ("resources/templates/list", json!({})),
    ];
    for (i, (method, params)) in calls.iter().enumerate() {
        c.modern(json!(i), method, params.clone(), json!({})).await;
        let m = c.recv().await;
        assert_eq!(m["id"], json!(i), "{m}");
        assert_eq!(m["result"]["resultType"], "complete", "{method}: {m}");
        assert!(
            m["result"]["_meta"]["io.modelcontextprotocol/serverInfo"].is_object(),
            "{m}"
        );
        assert_response(V, method, &m);
    }
    assert!(c.finish().await.is_empty());
}

#[tokio::test]
async fn requests_need_their_meta_and_a_known_version() {
    let mut c = Client::start(builder(&MODERN).build().unwrap());
    c.request(json!(1), "tools/list", json!({})).await;
    let m = c.recv().await;
    assert_error(&m, &json!(1), -32602);
    assert_response(V, "tools/list", &m);
    c.send(
        &json!({"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{
        "io.modelcontextprotocol/protocolVersion":"2099-01-01",
        "io.modelcontextprotocol/clientCapabilities":{}}}}),
    )
    .await;
    let m = c.recv().await;
    assert_error(&m, &json!(2), -32022);
    assert_eq!(m["error"]["data"]["supported"], json!(["2026-07-28"]));
    assert_schema_error(&m);
    // A modern-only server answers a legacy initialize with the versions it speaks.
    c.request(
        json!(3),
        "initialize",
        json!({"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"old","version":"1"}}),
    )
    .await;
    let m = c.recv().await;
    assert_error(&m, &json!(3), -32022);
    // Removed methods are not found.
    c.modern(json!(4), "ping", json!({}), json!({})).await;
    assert_error(&c.recv().await, &json!(4), -32601);
    // The server never writes a request in 2026-07-28: asking is an input_required result.
    c.finish().await;
}

fn assert_schema_error(m: &Value) {
    assert_response(V, "tools/list", m);
}

#[tokio::test]
async fn requests_run_concurrently_and_answer_by_id() {
    let mut c = Client::start(builder(&MODERN).build().unwrap());
    c.modern(
        json!("slow"),
        "tools/call",
        json!({"name":"wait","arguments":{"tag":"stdio-concurrent","ms":400}}),
        json!({}),
    )
    .await;
    c.modern(
        json!("fast"),
        "tools/call",
        json!({"name":"echo","arguments":{"text":"quick"}}),
        json!({}),
    )
    .await;
    let first = c.recv().await;
    assert_eq!(first["id"], "fast");
    let second = c.recv().await;
    assert_eq!(second["id"], "slow");
    assert_eq!(second["result"]["content"][0]["text"], "waited 400");
    c.finish().await;
}

#[tokio::test]
async fn progress_and_logs_precede_their_result() {
    let mut c = Client::start(builder(&MODERN).build().unwrap());
    c.modern(
        json!(1),
        "tools/call",
        json!({"name":"progress","arguments":{},"_meta":{"progressToken":"p1"}}),
        json!({}),
    )
    .await;
    for expected in [0.0, 50.0, 100.0] {
        let n = c.recv().await;
        assert_eq!(n["method"], "notifications/progress", "{n}");
        assert_eq!(n["params"]["progressToken"], "p1");
        assert_eq!(n["params"]["progress"].as_f64(), Some(expected));
        assert_notification(V, &n);
    }
    let m = c.recv().await;
    assert_eq!(m["id"], 1);
    assert_response(V, "tools/call", &m);

    c.modern(
        json!(2),
        "tools/call",
        json!({"name":"logs","arguments":{},"_meta":{"io.modelcontextprotocol/logLevel":"warning"}}),
        json!({}),
    )
    .await;
    for level in ["warning", "error"] {
        let n = c.recv().await;
        assert_eq!(n["method"], "notifications/message", "{n}");
        assert_eq!(n["params"]["level"], level);
        assert_notification(V, &n);
    }
    assert_eq!(c.recv().await["id"], 2);
    // Without a log level, no log messages.
    c.modern(
        json!(3),
        "tools/call",
        json!({"name":"logs","arguments":{}}),
        json!({}),
    )
    .await;
    assert_eq!(c.recv().await["id"], 3);
    c.finish().await;
}

#[tokio::test]
async fn a_cancelled_request_writes_nothing_more() {
    let mut c = Client::start(builder(&MODERN).build().unwrap());
    c.modern(
        json!(7),
        "tools/call",
        json!({"name":"wait","arguments":{"tag":"stdio-cancel","ms":5000},"_meta":{"progressToken":"t"}}),
        json!({}),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    // Another id, and a string "7", do not cancel it.
    c.cancel(json!(8)).await;
    c.cancel(json!("7")).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        !crate::support::cancelled_tags()
            .lock()
            .unwrap()
            .iter()
            .any(|t| t == "stdio-cancel")
    );
    c.cancel(json!(7)).await;
    assert!(saw_cancellation("stdio-cancel").await);
    c.silent(Duration::from_millis(400)).await;
    c.modern(
        json!(9),
        "tools/call",
        json!({"name":"echo","arguments":{"text":"after"}}),
        json!({}),
    )
    .await;
    assert_eq!(c.recv().await["id"], 9);
    assert!(c.finish().await.is_empty());
}

#[tokio::test]
async fn input_required_rounds_complete_on_retry() {
    let mut c = Client::start(crate::support::asking(&MODERN).build().unwrap());
    let caps = json!({"elicitation":{}});
    c.modern(
        json!(1),
        "tools/call",
        json!({"name":"ask_name","arguments":{}}),
        caps.clone(),
    )
    .await;
    let m = c.recv().await;
    assert_eq!(m["result"]["resultType"], "input_required", "{m}");
    assert_response(V, "tools/call", &m);
    let key = m["result"]["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();
    let mut params = json!({"name":"ask_name","arguments":{},
        "inputResponses":{key: {"action":"accept","content":{"name":"Ada"}}}});
    if let Some(state) = m["result"].get("requestState") {
        params["requestState"] = state.clone();
    }
    c.modern(json!(2), "tools/call", params, caps).await;
    let m = c.recv().await;
    assert_eq!(m["result"]["content"][0]["text"], "Hello, Ada!", "{m}");
    assert_response(V, "tools/call", &m);
    // Without the capability: -32021, never a server request.
    c.modern(
        json!(3),
        "tools/call",
        json!({"name":"ask_name","arguments":{}}),
        json!({}),
    )
    .await;
    assert_error(&c.recv().await, &json!(3), -32021);
    c.finish().await;
}

#[tokio::test]
async fn subscriptions_deliver_tagged_changes_until_cancelled() {
    let rt = builder(&MODERN)
        .list_changed(true)
        .resource_subscriptions(true)
        .build()
        .unwrap();
    let mut c = Client::start(rt.clone());
    let filter =
        json!({"toolsListChanged": true, "resourceSubscriptions": ["test://static/readme"]});
    c.modern(
        json!("sub-1"),
        "subscriptions/listen",
        json!({"notifications": filter}),
        json!({}),
    )
    .await;
    let ack = c.recv().await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "sub-1"
    );
    assert_notification(V, &ack);
    // Requests go on beside the subscription.
    c.modern(json!(1), "tools/list", json!({}), json!({})).await;
    assert_eq!(c.recv().await["id"], 1);
    rt.update(|comp| {
        comp.add_tool(
            Tool::new("added")
                .description("new")
                .raw_handler(|_, _| async { "ok" }),
        );
    })
    .unwrap();
    let n = c.recv().await;
    assert_eq!(n["method"], "notifications/tools/list_changed");
    assert_eq!(
        n["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "sub-1"
    );
    assert_notification(V, &n);
    rt.notify_resource_updated("test://static/readme");
    let n = c.recv().await;
    assert_eq!(n["method"], "notifications/resources/updated");
    assert_notification(V, &n);

    // The client ends it; then nothing more arrives for it.
    c.cancel(json!("sub-1")).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    rt.notify_resource_updated("test://static/readme");
    c.silent(Duration::from_millis(300)).await;

    // A second subscription is ended by the server at EOF: a result, then cancelled.
    c.modern(
        json!("sub-2"),
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
        json!({}),
    )
    .await;
    assert_eq!(
        c.recv().await["method"],
        "notifications/subscriptions/acknowledged"
    );
    let rest = c.finish().await;
    assert_eq!(rest.len(), 2, "{rest:?}");
    assert_eq!(rest[0]["id"], "sub-2");
    assert_eq!(rest[0]["result"]["resultType"], "complete");
    crate::support::assert_schema(V, "SubscriptionsListenResult", &rest[0]["result"]);
    assert_eq!(rest[1]["method"], "notifications/cancelled");
    assert_eq!(rest[1]["params"]["requestId"], "sub-2");
    assert_notification(V, &rest[1]);
}

#[tokio::test]
async fn end_of_input_waits_for_in_flight_requests() {
    let mut c = Client::start(builder(&MODERN).build().unwrap());
    c.modern(
        json!(1),
        "tools/call",
        json!({"name":"wait","arguments":{"tag":"stdio-drain","ms":300}}),
        json!({}),
    )
    .await;
    let rest = c.finish().await;
    assert_eq!(rest.len(), 1);
    assert_eq!(rest[0]["result"]["content"][0]["text"], "waited 300");
}
