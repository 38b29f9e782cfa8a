//! The 2025-03-26 wire: the opt-in dialect of clients that send no
//! `MCP-Protocol-Version` header, and its JSON-RPC batches. Literal requests; status,
//! headers and body asserted; every body validated against the official 2025-03-26
//! schema.

use std::time::Duration;

use serde_json::{Value, json};
use snodo::http::HttpConfig;
use snodo::protocol::{Dialect, V2025_03_26, V2025_06_18, V2025_11_25, V2026_07_28};
use snodo::{Content, NoArguments, Tool, ToolResult};

use super::support::*;

const V03: &str = "2025-03-26";
/// Every dialect, newest first.
const EVERY: [&Dialect; 4] = [&V2026_07_28, &V2025_11_25, &V2025_06_18, &V2025_03_26];

/// A tool that links a resource (content 2025-03-26 lacks).
fn linker() -> Tool {
    Tool::new("linker")
        .title("Linker")
        .description("Links the readme")
        .handler(|_: NoArguments, _ctx| async {
            ToolResult::text("see the link")
                .with_content(Content::resource_link("test://static/readme", "readme"))
        })
}

async fn march_server(protocols: &[&'static Dialect]) -> TestServer {
    TestServer::start(builder(protocols).tool(linker()).build().unwrap()).await
}

/// A header-less request (what a 2025-03-26 client sends after initialize).
async fn bare(s: &TestServer, id: Value, method: &str, params: Option<Value>) -> Reply {
    let mut body = json!({"jsonrpc":"2.0","id":id,"method":method});
    if let Some(p) = params {
        body["params"] = p;
    }
    s.post(&[], &body.to_string()).await
}

/// Asserts a 200 JSON result valid for 2025-03-26; returns the result.
fn ok_03(r: &Reply, method: &str) -> Value {
    assert_eq!(r.status, 200, "{method}: {}", r.text());
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_valid(V03, method, r);
    let m = r.json();
    assert!(m.get("error").is_none(), "{method}: {m}");
    m["result"].clone()
}

/// Asserts that no member of `items` has `keys`.
fn lacks(items: &Value, keys: &[&str]) {
    for item in items.as_array().unwrap() {
        for k in keys {
            assert!(item.get(k).is_none(), "{k} in {item}");
        }
    }
}

#[tokio::test]
async fn initialize_proposing_2025_03_26_selects_it() {
    let s = march_server(&EVERY).await;
    let body = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion": V03, "capabilities": {}, "clientInfo": {"name":"old","version":"1"}}});
    let r = s.post(&[], &body.to_string()).await;
    let result = ok_03(&r, "initialize");
    assert_eq!(result["protocolVersion"], V03);
    let info = &result["serverInfo"];
    assert_eq!(info["name"], "wire-fixture");
    for k in ["title", "icons", "description", "websiteUrl"] {
        assert!(info.get(k).is_none(), "{k} in {info}");
    }
    assert!(result.get("resultType").is_none(), "{result}");
}

#[tokio::test]
async fn a_header_less_request_is_served_as_2025_03_26_when_enabled() {
    let s = march_server(&EVERY).await;
    let result = ok_03(&bare(&s, json!(1), "tools/list", None).await, "tools/list");
    let tools = &result["tools"];
    lacks(tools, &["title", "outputSchema", "_meta", "icons"]);
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    // No outputSchema in this revision: an array-output tool is listed with its text.
    assert!(names.contains(&"array_output"), "{names:?}");
    for t in tools.as_array().unwrap() {
        assert!(t["inputSchema"].get("$schema").is_none(), "{t}");
    }
    let prompts = ok_03(
        &bare(&s, json!(2), "prompts/list", None).await,
        "prompts/list",
    );
    lacks(&prompts["prompts"], &["title", "icons", "_meta"]);
    for p in prompts["prompts"].as_array().unwrap() {
        lacks(&p["arguments"], &["title"]);
    }
    ok_03(
        &bare(&s, json!(3), "resources/list", None).await,
        "resources/list",
    );
    ok_03(
        &bare(&s, json!(4), "resources/templates/list", None).await,
        "resources/templates/list",
    );
    let read = ok_03(
        &bare(
            &s,
            json!(5),
            "resources/read",
            Some(json!({"uri":"test://static/readme"})),
        )
        .await,
        "resources/read",
    );
    assert_eq!(read["contents"][0]["text"], "# Static resource\n");
    let prompt = ok_03(
        &bare(
            &s,
            json!(6),
            "prompts/get",
            Some(json!({"name":"greet","arguments":{"name":"Ada"}})),
        )
        .await,
        "prompts/get",
    );
    assert_eq!(prompt["messages"][0]["content"]["text"], "Hello, Ada!");
    let pong = ok_03(&bare(&s, json!(7), "ping", None).await, "ping");
    assert_eq!(pong, json!({}));
}

#[tokio::test]
async fn structured_output_is_dropped_and_its_text_stays() {
    let s = march_server(&EVERY).await;
    for (tool, args) in [
        ("structured", json!({"value": {"a": 1}})),
        ("array_output", json!({})),
    ] {
        let r = bare(
            &s,
            json!(1),
            "tools/call",
            Some(json!({"name": tool, "arguments": args})),
        )
        .await;
        let result = ok_03(&r, "tools/call");
        assert!(result.get("structuredContent").is_none(), "{result}");
        assert_eq!(result["content"][0]["type"], "text", "{result}");
        assert!(!result["content"][0]["text"].as_str().unwrap().is_empty());
    }
    // A header naming 2025-06-18 still wins: structured output is back.
    let r = s
        .legacy(
            "2025-06-18",
            json!(2),
            "tools/call",
            Some(json!({"name":"structured","arguments":{"value":{"a":1}}})),
        )
        .await;
    assert_eq!(r.status, 200);
    assert_valid("2025-06-18", "tools/call", &r);
    assert_eq!(r.json()["result"]["structuredContent"], json!({"a": 1}));
}

#[tokio::test]
async fn a_resource_link_becomes_a_text_block_naming_it() {
    let s = march_server(&EVERY).await;
    let r = bare(
        &s,
        json!(1),
        "tools/call",
        Some(json!({"name":"linker","arguments":{}})),
    )
    .await;
    let result = ok_03(&r, "tools/call");
    assert_eq!(
        result["content"],
        json!([
            {"type":"text","text":"see the link"},
            {"type":"text","text":"Resource readme: test://static/readme"}
        ])
    );
    // 2025-06-18 keeps the link.
    let r = s
        .legacy(
            "2025-06-18",
            json!(2),
            "tools/call",
            Some(json!({"name":"linker","arguments":{}})),
        )
        .await;
    assert_eq!(r.json()["result"]["content"][1]["type"], "resource_link");
}

#[tokio::test]
async fn elicitation_is_refused_with_a_readable_error() {
    let rt = asking(&EVERY)
        .legacy_server_requests(Duration::from_secs(5))
        .build()
        .unwrap();
    let s = TestServer::start(rt).await;
    let r = bare(
        &s,
        json!(1),
        "tools/call",
        Some(json!({"name":"ask_name","arguments":{}})),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_valid(V03, "tools/call", &r);
    let m = r.message();
    assert_eq!(m["error"]["code"], -32603, "{m}");
    assert!(
        m["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no elicitation"),
        "{m}"
    );
}

#[tokio::test]
async fn header_less_notifications_and_responses_are_accepted() {
    let s = march_server(&EVERY).await;
    for body in [
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":"srv-1","result":{}}"#,
    ] {
        let r = s.post(&[], body).await;
        assert_eq!(r.status, 202, "{body}: {}", r.text());
        assert!(r.body.is_empty());
    }
}

#[tokio::test]
async fn without_2025_03_26_a_header_less_request_keeps_its_400() {
    let s = server(&[&V2026_07_28, &V2025_11_25, &V2025_06_18]).await;
    let r = bare(&s, json!(1), "tools/list", None).await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(r.json()["error"]["code"], -32020);
}

#[tokio::test]
async fn a_header_less_request_with_2026_meta_is_still_a_missing_header() {
    let s = march_server(&EVERY).await;
    let body = json!({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{
        "io.modelcontextprotocol/protocolVersion":"2026-07-28",
        "io.modelcontextprotocol/clientCapabilities":{}}}});
    let r = s.post(&[], &body.to_string()).await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(r.json()["error"]["code"], -32020);
}

// ---- batches -----------------------------------------------------------------------

/// Asserts a 200 batch answer valid for 2025-03-26; returns its members.
fn batch_ok(r: &Reply) -> Vec<Value> {
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("content-type"), Some("application/json"));
    let answer = r.json();
    assert_schema(V03, "JSONRPCBatchResponse", &answer);
    answer.as_array().unwrap().clone()
}

#[tokio::test]
async fn a_batch_is_answered_by_an_array_of_its_requests_responses() {
    let s = march_server(&EVERY).await;
    let batch = json!([
        {"jsonrpc":"2.0","id":1,"method":"tools/list"},
        {"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}},
        {"jsonrpc":"2.0","id":"two","method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}},
        {"jsonrpc":"2.0","id":3,"method":"ping"}
    ]);
    assert_schema(V03, "JSONRPCBatchRequest", &batch);
    let members = batch_ok(&s.post(&[], &batch.to_string()).await);
    let ids: Vec<&Value> = members.iter().map(|m| &m["id"]).collect();
    assert_eq!(ids, [&json!(1), &json!("two"), &json!(3)]);
    assert_schema(V03, "ListToolsResult", &members[0]["result"]);
    assert_eq!(members[1]["result"]["content"][0]["text"], "hi");
    assert_eq!(members[2]["result"], json!({}));
    // The same batch with the version header named explicitly.
    let r = s
        .post(&[("MCP-Protocol-Version", V03)], &batch.to_string())
        .await;
    assert_eq!(batch_ok(&r).len(), 3);
}

#[tokio::test]
async fn a_bad_member_is_answered_in_place_and_the_others_are_kept() {
    let s = march_server(&EVERY).await;
    let batch = r#"[
        {"jsonrpc":"2.0","id":1,"method":"ping"},
        {"jsonrpc":"1.0","id":2,"method":"ping"},
        5,
        {"jsonrpc":"2.0","id":4,"method":"no/such"},
        {"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"nope"}},
        {"jsonrpc":"2.0","id":6,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"c","version":"1"}}},
        {"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"kept"}}}
    ]"#;
    let r = s.post(&[], batch).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let members = r.json().as_array().unwrap().clone();
    assert_eq!(members.len(), 7, "{members:?}");
    // JSON-RPC answers an unreadable member with a null id, which the 2025-03-26
    // schema's RequestId does not admit: every other member is validated.
    let readable: Vec<Value> = members
        .iter()
        .filter(|m| !m["id"].is_null())
        .cloned()
        .collect();
    assert_eq!(readable.len(), 6);
    assert_schema(V03, "JSONRPCBatchResponse", &Value::Array(readable));
    let code = |i: usize| members[i]["error"]["code"].as_i64();
    assert_eq!(members[0]["result"], json!({}));
    assert_eq!(
        (members[1]["id"].clone(), code(1)),
        (json!(2), Some(-32600))
    );
    assert_eq!(
        (members[2]["id"].clone(), code(2)),
        (Value::Null, Some(-32600))
    );
    assert_eq!(code(3), Some(-32601));
    assert_eq!(code(4), Some(-32602));
    assert_eq!(
        (members[5]["id"].clone(), code(5)),
        (json!(6), Some(-32600))
    );
    assert!(
        members[5]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("initialize must not be part of a JSON-RPC batch")
    );
    assert_eq!(members[6]["result"]["content"][0]["text"], "kept");
}

#[tokio::test]
async fn empty_and_notification_only_batches() {
    let s = march_server(&EVERY).await;
    let r = s.post(&[], "[]").await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(r.json()["error"]["code"], -32600);
    assert_eq!(r.json()["id"], Value::Null);
    let r = s
        .post(
            &[],
            r#"[{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}]"#,
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.text());
    assert!(r.body.is_empty());
    let r = s.post(&[], "[{\"jsonrpc\":").await;
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["code"], -32700);
}

#[tokio::test]
async fn batches_are_refused_on_revisions_without_them() {
    let batch = r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#;
    // No 2025-03-26 on this runtime.
    let s = server(&[&V2026_07_28, &V2025_06_18]).await;
    let r = s.post(&[], batch).await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(r.json()["error"]["code"], -32600);
    // 2025-03-26 enabled, but the header names a revision without batches.
    let s = march_server(&EVERY).await;
    for v in ["2025-06-18", "2025-11-25", "2026-07-28"] {
        let r = s.post(&[("MCP-Protocol-Version", v)], batch).await;
        assert_eq!(r.status, 400, "{v}: {}", r.text());
        let e = r.json();
        assert_eq!(e["error"]["code"], -32600, "{v}: {e}");
        assert!(
            e["error"]["message"].as_str().unwrap().contains("batches"),
            "{e}"
        );
    }
}

#[tokio::test]
async fn execution_limits_count_every_member() {
    let rt = builder(&EVERY).build().unwrap();
    let s = TestServer::start_with(rt, HttpConfig::default().execution_limits(1, 0)).await;
    let call = |id: u32| {
        json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
               "params":{"name":"wait","arguments":{"tag":format!("batch-{id}"),"ms":200}}})
    };
    let batch = json!([call(1), call(2), call(3)]);
    let members = batch_ok(&s.post(&[], &batch.to_string()).await);
    assert_eq!(members.len(), 3);
    assert_eq!(members[0]["result"]["content"][0]["text"], "waited 200");
    for m in &members[1..] {
        assert_eq!(m["error"]["code"], -32603, "{m}");
        assert!(
            m["error"]["message"]
                .as_str()
                .unwrap()
                .contains("overloaded"),
            "{m}"
        );
    }
}

#[tokio::test]
async fn the_body_limit_counts_the_whole_batch() {
    let rt = builder(&EVERY).build().unwrap();
    let s = TestServer::start_with(rt, HttpConfig::default().max_body_bytes(1024)).await;
    let members: Vec<Value> = (0..40)
        .map(|i| json!({"jsonrpc":"2.0","id":i,"method":"ping"}))
        .collect();
    let body = Value::Array(members).to_string();
    assert!(body.len() > 1024);
    let r = s.post(&[], &body).await;
    assert_eq!(r.status, 413, "{}", r.text());
}
