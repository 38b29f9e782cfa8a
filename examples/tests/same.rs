//! The builder and the macro servers are the same server: identical `tools/list`, and
//! identical answers to the same calls (in process, through the real HTTP service).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};
use snodo_client::Client;

async fn client(runtime: snodo::Runtime) -> Client {
    Client::builder("same-test", "1.0.0")
        .connect_runtime(runtime)
        .await
        .unwrap()
}

#[tokio::test]
async fn identical_tools_list_and_answers() {
    let by_builder = client(snodo_examples::builder::runtime().unwrap()).await;
    let by_macros = client(snodo_examples::macros::runtime().unwrap()).await;
    let list = |c: &Client| {
        let c = c.clone();
        async move { c.request("tools/list", json!({})).await.unwrap() }
    };
    let (a, b) = (list(&by_builder).await, list(&by_macros).await);
    assert_eq!(a["tools"], b["tools"]);
    assert_eq!(a["tools"].as_array().map(Vec::len), Some(5));
    // Spot-check the wire shape the macros produced.
    let add = &b["tools"][0];
    assert_eq!(add["name"], "add");
    assert_eq!(add["description"], "Adds two numbers.");
    assert_eq!(
        add["annotations"],
        json!({"readOnlyHint": true, "idempotentHint": true, "openWorldHint": false})
    );
    assert_eq!(add["inputSchema"]["required"], json!(["a", "b"]));
    assert!(add["outputSchema"]["properties"]["sum"].is_object());

    for (name, args) in [
        ("add", json!({"a": 2, "b": 3.5})),
        ("echo", json!({"text": "hi"})),
        ("word_count", json!({"text": "two words"})),
        ("repeat", json!({"text": "ab", "times": 3})),
        ("repeat", json!({"text": "ab"})),
        ("whoami", json!({})),
        ("echo", json!({})),
    ] {
        let call = |c: &Client| {
            let c = c.clone();
            let params = json!({"name": name, "arguments": args});
            async move {
                c.request("tools/call", params)
                    .await
                    .map_err(|e| e.to_string())
            }
        };
        let (x, y): (Result<Value, _>, Result<Value, _>) =
            (call(&by_builder).await, call(&by_macros).await);
        let strip = |r: Result<Value, String>| {
            r.map(|mut v| {
                if let Some(m) = v.as_object_mut() {
                    m.remove("_meta");
                }
                v
            })
        };
        assert_eq!(strip(x), strip(y), "{name} {args}");
    }
}
