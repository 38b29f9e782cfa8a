//! The initialize era on stdio: `initialize` switches the connection, which then holds
//! the version, the declared capabilities and the log level.

use serde_json::{Value, json};

use crate::client::{Client, assert_error, assert_notification, assert_response};
use crate::support::{ALL, asking, builder};

const L: &str = "2025-11-25";

async fn initialize(c: &mut Client, version: &str, caps: Value) -> Value {
    c.request(
        json!(0),
        "initialize",
        json!({"protocolVersion":version,"capabilities":caps,"clientInfo":{"name":"t","version":"1"}}),
    )
    .await;
    let m = c.recv().await;
    c.send(&json!({"jsonrpc":"2.0","method":"notifications/initialized"}))
        .await;
    m
}

#[tokio::test]
async fn initialize_switches_the_connection_to_the_negotiated_version() {
    for version in ["2025-11-25", "2025-06-18"] {
        let mut c = Client::start(builder(&ALL).build().unwrap());
        let m = initialize(&mut c, version, json!({})).await;
        assert_eq!(m["result"]["protocolVersion"], version, "{m}");
        assert_response(version, "initialize", &m);
        for (i, (method, params)) in [
            ("ping", json!({})),
            ("tools/list", json!({})),
            (
                "tools/call",
                json!({"name":"echo","arguments":{"text":"x"}}),
            ),
            (
                "prompts/get",
                json!({"name":"greet","arguments":{"name":"Ada"}}),
            ),
            ("resources/read", json!({"uri":"test://static/readme"})),
            ("logging/setLevel", json!({"level":"error"})),
        ]
        .into_iter()
        .enumerate()
        {
            c.request(json!(i + 1), method, params).await;
            let m = c.recv().await;
            assert_eq!(m["id"], json!(i + 1));
            assert!(m.get("error").is_none(), "{method}: {m}");
            // No 2026 envelope on the initialize era.
            assert!(m["result"].get("resultType").is_none(), "{m}");
            assert!(m["result"].get("ttlMs").is_none(), "{m}");
            assert_response(version, method, &m);
        }
        // 2025-06-18 has no icons; the array-output tool is hidden on every legacy version.
        c.request(json!(20), "tools/list", json!({})).await;
        let tools = c.recv().await["result"]["tools"].clone();
        assert!(
            tools
                .as_array()
                .unwrap()
                .iter()
                .all(|t| t["name"] != "array_output")
        );
        if version == "2025-06-18" {
            assert!(
                tools
                    .as_array()
                    .unwrap()
                    .iter()
                    .all(|t| t.get("icons").is_none())
            );
        }
        // A second initialize is refused; 2026 requests still work beside it.
        let again = initialize(&mut c, version, json!({})).await;
        assert_error(&again, &json!(0), -32600);
        c.modern(json!(21), "server/discover", json!({}), json!({}))
            .await;
        assert_eq!(c.recv().await["result"]["resultType"], "complete");
        c.finish().await;
    }
}

#[tokio::test]
async fn set_level_holds_for_the_connection() {
    let mut c = Client::start(builder(&ALL).build().unwrap());
    initialize(&mut c, L, json!({})).await;
    c.request(json!(1), "logging/setLevel", json!({"level":"warning"}))
        .await;
    assert_eq!(c.recv().await["result"], json!({}));
    c.request(
        json!(2),
        "tools/call",
        json!({"name":"logs","arguments":{}}),
    )
    .await;
    for level in ["warning", "error"] {
        let n = c.recv().await;
        assert_eq!(n["params"]["level"], level, "{n}");
        assert_notification(L, &n);
    }
    assert_eq!(c.recv().await["id"], 2);
    c.request(json!(3), "logging/setLevel", json!({"level":"loud"}))
        .await;
    assert_error(&c.recv().await, &json!(3), -32602);
    c.finish().await;
}

#[tokio::test]
async fn server_requests_go_only_to_declared_capabilities_and_answers_match_by_id() {
    let mut c = Client::start(asking(&ALL).build().unwrap());
    initialize(&mut c, L, json!({"elicitation":{}})).await;
    c.request(
        json!(1),
        "tools/call",
        json!({"name":"ask_name","arguments":{}}),
    )
    .await;
    let ask = c.recv().await;
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    crate::support::assert_schema(L, "ElicitRequest", &ask);
    let id = ask["id"].clone();
    // An answer to another id is ignored; the right one completes the call.
    c.send(&json!({"jsonrpc":"2.0","id":"nobody","result":{"action":"decline"}}))
        .await;
    c.send(&json!({"jsonrpc":"2.0","id":id,"result":{"action":"accept","content":{"name":"Ada"}}}))
        .await;
    let m = c.recv().await;
    assert_eq!(m["id"], 1);
    assert_eq!(m["result"]["content"][0]["text"], "Hello, Ada!", "{m}");
    assert_response(L, "tools/call", &m);
    // Sampling was not declared: no request is written, the call fails.
    c.request(
        json!(2),
        "tools/call",
        json!({"name":"ask_all","arguments":{}}),
    )
    .await;
    let first = c.recv().await;
    assert_eq!(first["method"], "elicitation/create", "{first}");
    c.send(&json!({"jsonrpc":"2.0","id":first["id"],"result":{"action":"accept","content":{}}}))
        .await;
    let m = c.recv().await;
    assert_eq!(m["id"], 2, "{m}");
    assert!(
        m.get("error").is_some() || m["result"]["isError"] == true,
        "{m}"
    );
    c.finish().await;
}

#[tokio::test]
async fn without_capabilities_nothing_is_asked() {
    let mut c = Client::start(asking(&ALL).build().unwrap());
    initialize(&mut c, L, json!({})).await;
    c.request(
        json!(1),
        "tools/call",
        json!({"name":"ask_name","arguments":{}}),
    )
    .await;
    let m = c.recv().await;
    assert_eq!(m["id"], 1, "no server request: {m}");
    c.finish().await;
}

#[tokio::test]
async fn answers_are_read_while_requests_wait_for_a_slot() {
    // One request at a time: the asking call holds the slot; the next request waits;
    // the answer behind it must still be read.
    let config = snodo::stdio::StdioConfig::default().max_in_flight(1);
    let mut c = Client::start_with(asking(&ALL).build().unwrap(), config, 1 << 16);
    initialize(&mut c, L, json!({"elicitation":{}})).await;
    c.request(
        json!(1),
        "tools/call",
        json!({"name":"ask_name","arguments":{}}),
    )
    .await;
    let ask = c.recv().await;
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    c.request(
        json!(2),
        "tools/call",
        json!({"name":"echo","arguments":{"text":"next"}}),
    )
    .await;
    c.send(&json!({"jsonrpc":"2.0","id":ask["id"],"result":{"action":"accept","content":{"name":"Bo"}}}))
        .await;
    let first = c.recv().await;
    assert_eq!(first["id"], 1, "{first}");
    assert_eq!(first["result"]["content"][0]["text"], "Hello, Bo!");
    assert_eq!(c.recv().await["id"], 2);
    c.finish().await;
}
