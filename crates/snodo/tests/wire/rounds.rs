//! Multi round-trip requests and `subscriptions/listen` (2026-07-28).

use std::time::Duration;

use serde_json::{Value, json};
use snodo::Tool;

use super::support::*;

const V: &str = "2026-07-28";

fn all_caps() -> Value {
    json!({"elicitation": {}, "sampling": {}, "roots": {}})
}

async fn round(s: &TestServer, id: i64, tool: &str, extra: Value, caps: Value) -> Reply {
    let mut params = json!({"name": tool, "arguments": {}});
    for (k, v) in extra.as_object().unwrap() {
        params[k] = v.clone();
    }
    s.modern(json!(id), "tools/call", params, caps).await
}

fn accept(content: Value) -> Value {
    json!({"action": "accept", "content": content})
}

#[tokio::test]
async fn a_single_input_round_trip() {
    let s = TestServer::start(asking(&MODERN).build().unwrap()).await;
    let r1 = round(&s, 1, "ask_name", json!({}), all_caps()).await;
    assert_eq!(r1.status, 200);
    assert_valid(V, "tools/call", &r1);
    let res = r1.result();
    assert_eq!(res["resultType"], "input_required");
    assert_schema(V, "InputRequiredResult", &res);
    let req = &res["inputRequests"]["user_name"];
    assert_eq!(req["method"], "elicitation/create");
    assert_eq!(
        req["params"]["requestedSchema"]["required"],
        json!(["name"])
    );
    assert!(req.get("jsonrpc").is_none() && req.get("id").is_none());
    let state = res["requestState"].as_str().unwrap().to_owned();
    assert!(
        res.get("ttlMs").is_none(),
        "input_required is not cacheable"
    );
    let r2 = round(&s, 2, "ask_name", json!({"inputResponses": {"user_name": accept(json!({"name":"Ada"}))}, "requestState": state}), all_caps()).await;
    assert_eq!(r2.result()["resultType"], "complete");
    assert_eq!(r2.result()["content"][0]["text"], "Hello, Ada!");
    assert_valid(V, "tools/call", &r2);
}

#[tokio::test]
async fn several_inputs_in_one_round() {
    let s = TestServer::start(asking(&MODERN).build().unwrap()).await;
    let res = round(&s, 1, "ask_all", json!({}), all_caps())
        .await
        .result();
    let methods: Vec<&str> = ["name", "sample", "roots"]
        .iter()
        .map(|k| res["inputRequests"][k]["method"].as_str().unwrap())
        .collect();
    assert_eq!(
        methods,
        ["elicitation/create", "sampling/createMessage", "roots/list"]
    );
    let answers = json!({
        "name": accept(json!({})),
        "sample": {"role": "assistant", "content": {"type": "text", "text": "hello"}, "model": "m"},
        "roots": {"roots": [{"uri": "file:///tmp", "name": "tmp"}]}
    });
    let r = round(
        &s,
        2,
        "ask_all",
        json!({"inputResponses": answers, "requestState": res["requestState"]}),
        all_caps(),
    )
    .await;
    assert_eq!(r.result()["content"][0]["text"], "3 answers");
}

#[tokio::test]
async fn three_rounds_with_changing_state() {
    let s = TestServer::start(asking(&MODERN).build().unwrap()).await;
    let r1 = round(&s, 1, "ask_twice", json!({}), all_caps())
        .await
        .result();
    assert!(r1["inputRequests"].get("first").is_some());
    let r2 = round(&s, 2, "ask_twice", json!({"inputResponses": {"first": accept(json!({"a":1}))}, "requestState": r1["requestState"]}), all_caps())
        .await
        .result();
    assert_eq!(r2["resultType"], "input_required");
    assert!(r2["inputRequests"].get("second").is_some());
    assert!(
        r2["inputRequests"].get("first").is_none(),
        "the first answer travels in the state"
    );
    assert_ne!(r2["requestState"], r1["requestState"]);
    // The retry carries only the latest round's answer; the first comes from the state.
    let r3 = round(&s, 3, "ask_twice", json!({"inputResponses": {"second": accept(json!({"b":2}))}, "requestState": r2["requestState"]}), all_caps()).await;
    assert_eq!(r3.result()["content"][0]["text"], r#"{"a":1} {"b":2}"#);
}

#[tokio::test]
async fn tampered_or_foreign_state_is_refused() {
    let s = TestServer::start(asking(&MODERN).build().unwrap()).await;
    let res = round(&s, 1, "ask_name", json!({}), all_caps())
        .await
        .result();
    let state = res["requestState"].as_str().unwrap();
    let answer = json!({"user_name": accept(json!({"name":"x"}))});
    let r = round(
        &s,
        2,
        "ask_name",
        json!({"inputResponses": answer, "requestState": format!("{state}-TAMPERED")}),
        all_caps(),
    )
    .await;
    assert_eq!((r.status, r.error_code()), (400, -32602));
    assert_eq!(r.json()["id"], 2);
    // A state minted for another tool is foreign here.
    let r = round(
        &s,
        3,
        "ask_twice",
        json!({"inputResponses": answer, "requestState": state}),
        all_caps(),
    )
    .await;
    assert_eq!(r.error_code(), -32602);
    // Another instance with another key refuses it; one with the same key accepts it.
    let other =
        TestServer::start(asking(&MODERN).request_state_key("other").build().unwrap()).await;
    let r = round(
        &other,
        4,
        "ask_name",
        json!({"inputResponses": answer, "requestState": state}),
        all_caps(),
    )
    .await;
    assert_eq!(r.error_code(), -32602);
    let a = TestServer::start(asking(&MODERN).request_state_key("shared").build().unwrap()).await;
    let b = TestServer::start(asking(&MODERN).request_state_key("shared").build().unwrap()).await;
    let res = round(&a, 5, "ask_name", json!({}), all_caps())
        .await
        .result();
    let r = round(
        &b,
        6,
        "ask_name",
        json!({"inputResponses": answer, "requestState": res["requestState"]}),
        all_caps(),
    )
    .await;
    assert_eq!(r.result()["content"][0]["text"], "Hello, x!");
}

#[tokio::test]
async fn a_missing_client_capability_is_32021() {
    let s = TestServer::start(asking(&MODERN).build().unwrap()).await;
    let r = round(&s, 1, "ask_name", json!({}), json!({"sampling": {}})).await;
    assert_eq!((r.status, r.error_code()), (400, -32021));
    assert_eq!(
        r.json()["error"]["data"]["requiredCapabilities"],
        json!({"elicitation": {}})
    );
    assert_valid(V, "tools/call", &r);
}

#[tokio::test]
async fn prompts_can_ask_too() {
    let s = TestServer::start(asking(&MODERN).build().unwrap()).await;
    let r1 = s
        .modern(
            json!(1),
            "prompts/get",
            json!({"name": "ask_prompt"}),
            all_caps(),
        )
        .await;
    assert_eq!(r1.result()["resultType"], "input_required");
    assert_valid(V, "prompts/get", &r1);
    let params = json!({"name": "ask_prompt", "inputResponses": {"topic": accept(json!({"topic": "rust"}))}, "requestState": r1.result()["requestState"]});
    let r2 = s.modern(json!(2), "prompts/get", params, all_caps()).await;
    assert_eq!(
        r2.result()["messages"][0]["content"]["text"],
        r#"About "rust""#
    );
    assert_valid(V, "prompts/get", &r2);
}

#[tokio::test]
async fn malformed_missing_or_extra_responses() {
    let s = TestServer::start(asking(&MODERN).build().unwrap()).await;
    let state = round(&s, 1, "ask_name", json!({}), all_caps())
        .await
        .result()["requestState"]
        .clone();
    for responses in [
        json!({"user_name": 12345}),
        json!({"wrong_key": accept(json!({}))}),
        Value::Null,
    ] {
        let r = round(
            &s,
            2,
            "ask_name",
            json!({"inputResponses": responses, "requestState": state}),
            all_caps(),
        )
        .await;
        assert_eq!(
            r.result()["resultType"],
            "input_required",
            "{responses}: asked again"
        );
    }
    let extra = json!({"user_name": accept(json!({"name": "Ada"})), "unexpected": {"x": 1}});
    let r = round(
        &s,
        3,
        "ask_name",
        json!({"inputResponses": extra, "requestState": state, "somethingElse": true}),
        all_caps(),
    )
    .await;
    assert_eq!(
        r.result()["content"][0]["text"],
        "Hello, Ada!",
        "unknown keys are ignored"
    );
    let r = round(
        &s,
        4,
        "ask_name",
        json!({"inputResponses": [1]}),
        all_caps(),
    )
    .await;
    assert_eq!(r.error_code(), -32602);
    // Lists never answer input_required.
    let r = s
        .modern(json!(5), "tools/list", json!({}), all_caps())
        .await;
    assert_eq!(r.result()["resultType"], "complete");
}

#[tokio::test]
async fn initialize_era_calls_never_see_input_required() {
    let s = TestServer::start(asking(&ALL).build().unwrap()).await;
    let r = s
        .legacy(
            "2025-11-25",
            json!(1),
            "tools/call",
            Some(json!({"name": "ask_name"})),
        )
        .await;
    assert_eq!(
        (r.status, r.error_code()),
        (200, -32603),
        "server requests are off on this runtime"
    );
    assert!(
        r.message()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not enabled")
    );
}

fn listen_body(id: Value, filter: Value) -> String {
    json!({"jsonrpc":"2.0","id":id,"method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":V,"io.modelcontextprotocol/clientCapabilities":{}},"notifications":filter}}).to_string()
}

fn listen_headers() -> [(&'static str, &'static str); 2] {
    [
        ("MCP-Protocol-Version", V),
        ("Mcp-Method", "subscriptions/listen"),
    ]
}

#[tokio::test]
async fn listen_streams_acknowledge_then_deliver_tagged_changes() {
    let rt = builder(&MODERN)
        .list_changed(true)
        .resource_subscriptions(true)
        .build()
        .unwrap();
    let s = TestServer::start(rt.clone()).await;
    let discover = s
        .modern(json!(0), "server/discover", json!({}), json!({}))
        .await
        .result();
    assert_eq!(
        discover["capabilities"]["tools"],
        json!({"listChanged": true})
    );
    assert_eq!(
        discover["capabilities"]["resources"],
        json!({"listChanged": true, "subscribe": true})
    );
    // Served (and its first page cached) before the catalogue changes.
    let before = s
        .modern(json!(1), "tools/list", json!({}), json!({}))
        .await
        .result();
    assert!(
        !before["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "added")
    );
    let filter =
        json!({"toolsListChanged": true, "resourceSubscriptions": ["test://static/readme"]});
    let mut stream = s
        .open(&listen_headers(), &listen_body(json!("listen-1"), filter))
        .await;
    assert_eq!(stream.status, 200);
    assert!(
        stream
            .head
            .to_ascii_lowercase()
            .contains("content-type: text/event-stream")
    );
    let ack = stream.next(Duration::from_secs(2)).await.unwrap();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "listen-1"
    );
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true, "resourceSubscriptions": ["test://static/readme"]})
    );
    assert_schema(V, "SubscriptionsAcknowledgedNotification", &ack);

    // A prompt change was not asked for; a tool change was.
    rt.update(|c| {
        c.remove_prompt("greet");
    })
    .unwrap();
    rt.update(|c| {
        c.add_tool(
            Tool::new("added")
                .description("new")
                .raw_handler(|_, _| async { "ok" }),
        )
    })
    .unwrap();
    let n = stream.next(Duration::from_secs(2)).await.unwrap();
    assert_eq!(n["method"], "notifications/tools/list_changed");
    assert_eq!(
        n["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "listen-1"
    );
    assert_schema(V, "ToolListChangedNotification", &n);
    // The catalogue really changed for new requests.
    let tools = s
        .modern(json!(2), "tools/list", json!({}), json!({}))
        .await
        .result();
    assert!(
        tools["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "added")
    );
    let prompts = s
        .modern(json!(3), "prompts/list", json!({}), json!({}))
        .await
        .result();
    assert!(prompts["prompts"].as_array().unwrap().is_empty());

    rt.notify_resource_updated("test://other");
    rt.notify_resource_updated("test://static/readme");
    let n = stream.next(Duration::from_secs(2)).await.unwrap();
    assert_eq!(n["method"], "notifications/resources/updated");
    assert_eq!(n["params"]["uri"], "test://static/readme");
    assert_schema(V, "ResourceUpdatedNotification", &n);
}

#[tokio::test]
async fn listen_needs_the_capability_and_is_bounded() {
    let s = server(&MODERN).await;
    let r = s
        .post(
            &listen_headers(),
            &listen_body(json!(1), json!({"toolsListChanged": true})),
        )
        .await;
    assert_eq!(
        (r.status, r.error_code()),
        (404, -32601),
        "not advertised, not served"
    );
    let rt = builder(&MODERN).list_changed(true).build().unwrap();
    let s =
        TestServer::start_with(rt, snodo::http::HttpConfig::default().max_listen_streams(1)).await;
    let r = s
        .post(&listen_headers(), &listen_body(json!(2), json!([])))
        .await;
    assert_eq!((r.status, r.error_code()), (400, -32602));
    let mut first = s
        .open(
            &listen_headers(),
            &listen_body(json!(3), json!({"toolsListChanged": true})),
        )
        .await;
    assert!(first.next(Duration::from_secs(2)).await.is_some());
    let r = s
        .post(
            &listen_headers(),
            &listen_body(json!(4), json!({"toolsListChanged": true})),
        )
        .await;
    assert_eq!(r.status, 503);
    assert_eq!(r.header("retry-after"), Some("1"));
}

#[tokio::test]
async fn listen_streams_end_with_a_result_on_shutdown() {
    let rt = builder(&MODERN).list_changed(true).build().unwrap();
    let mut s = TestServer::start(rt).await;
    let mut stream = s
        .open(
            &listen_headers(),
            &listen_body(json!(9), json!({"promptsListChanged": true})),
        )
        .await;
    assert!(stream.next(Duration::from_secs(2)).await.is_some());
    s.shutdown();
    let end = stream.next(Duration::from_secs(3)).await.unwrap();
    assert_eq!(end["id"], 9);
    assert_eq!(end["result"]["resultType"], "complete");
    assert_eq!(
        end["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        9
    );
    assert!(
        stream.next(Duration::from_secs(2)).await.is_none(),
        "then the stream closes"
    );
}

#[tokio::test]
async fn shutdown_ends_a_listen_stream_with_its_result() {
    let rt = builder(&MODERN).list_changed(true).build().unwrap();
    let mut s = TestServer::start(rt).await;
    let filter = json!({"toolsListChanged": true});
    let mut stream = s
        .open(&listen_headers(), &listen_body(json!("listen-end"), filter))
        .await;
    assert_eq!(stream.status, 200);
    let ack = stream.next(Duration::from_secs(2)).await.unwrap();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    s.shutdown();
    let end = stream.next(Duration::from_secs(5)).await.unwrap();
    assert_eq!(end["id"], "listen-end", "{end}");
    let result = &end["result"];
    assert_eq!(result["resultType"], "complete", "{end}");
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "listen-end"
    );
    assert!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"].is_object(),
        "the server info rides in the envelope: {end}"
    );
    assert_schema(V, "JSONRPCResultResponse", &end);
}

/// An idle listen stream sends a keep-alive comment every period, before and after a
/// change it delivered (the timer is re-armed after each tick and keeps firing while
/// the stream's task is woken by changes instead).
#[tokio::test]
async fn an_idle_listen_stream_sends_keep_alives_around_its_changes() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let rt = builder(&MODERN).list_changed(true).build().unwrap();
    let config = snodo::http::HttpConfig::default()
        .disconnect_probe(Some(Duration::from_secs(5)), Duration::from_millis(40));
    let s = TestServer::start_with(rt.clone(), config).await;
    let body = listen_body(json!("ka"), json!({"toolsListChanged": true}));
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: {V}\r\nMcp-Method: subscriptions/listen\r\nContent-Length: {}\r\n\r\n{body}",
        s.addr,
        body.len()
    );
    let mut io = tokio::net::TcpStream::connect(s.addr).await.unwrap();
    io.write_all(request.as_bytes()).await.unwrap();
    // Reads for `wait`: what arrived, as text.
    async fn read_for(io: &mut tokio::net::TcpStream, wait: Duration) -> String {
        let until = tokio::time::Instant::now() + wait;
        let mut got = Vec::new();
        let mut chunk = [0u8; 4096];
        while let Ok(Ok(n)) = tokio::time::timeout_at(until, io.read(&mut chunk)).await {
            assert!(n > 0, "the stream ended: {}", String::from_utf8_lossy(&got));
            got.extend_from_slice(&chunk[..n]);
        }
        String::from_utf8_lossy(&got).into_owned()
    }
    let before = read_for(&mut io, Duration::from_millis(400)).await;
    assert!(
        before.contains("notifications/subscriptions/acknowledged"),
        "{before}"
    );
    let ticks = before.matches(": keep-alive\n\n").count();
    // One a period: neither stopped nor spinning.
    assert!(
        (3..=15).contains(&ticks),
        "{ticks} keep-alives in 400 ms at 40 ms: {before}"
    );
    for i in 0..3 {
        rt.update(|c| {
            c.add_tool(
                Tool::new(format!("t{i}"))
                    .description("new")
                    .raw_handler(|_, _| async { "ok" }),
            )
        })
        .unwrap();
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let after = read_for(&mut io, Duration::from_millis(400)).await;
    assert!(
        after.contains("notifications/tools/list_changed"),
        "{after}"
    );
    let (_, tail) = after
        .rsplit_once("notifications/tools/list_changed")
        .unwrap();
    let ticks = tail.matches(": keep-alive\n\n").count();
    assert!(
        (3..=15).contains(&ticks),
        "{ticks} keep-alives after the changes: {after}"
    );
}
