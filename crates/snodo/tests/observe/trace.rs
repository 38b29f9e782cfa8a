//! The caller's W3C trace parent reaches the handler: `params._meta.traceparent` on
//! every transport, the `traceparent` header over HTTP when `_meta` has none.

use serde_json::{Value, json};
use snodo::{NoArguments, Runtime, Tool, ToolResult};

use crate::client::Client;
use crate::support::{MODERN, R2026_07_28, TestServer, builder};

pub const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
/// Sampled (flags 01): the SDK's parent-based sampler drops spans of unsampled parents.
pub const HEADER_PARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

/// The fixture plus `trace`, which answers with the trace context it was given.
pub fn runtime() -> Runtime {
    builder(&MODERN)
        .tool(
            Tool::new("trace").handler(|_: NoArguments, ctx: snodo::RequestContext| async move {
                ToolResult::text(ctx.trace_context().map_or("none".to_owned(), |t| {
                    format!("{} {}", t.traceparent(), t.tracestate().unwrap_or("-"))
                }))
            }),
        )
        .build()
        .unwrap()
}

pub fn call_body(id: u64, meta: Value) -> String {
    R2026_07_28
        .request("tools/call")
        .id(id)
        .params(json!({"name": "trace", "arguments": {}}))
        .meta_members(&meta)
        .body()
}

pub const HEADERS: [(&str, &str); 3] = [
    ("MCP-Protocol-Version", "2026-07-28"),
    ("Mcp-Method", "tools/call"),
    ("Mcp-Name", "trace"),
];

fn text(answer: &Value) -> String {
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {answer}"))
        .to_owned()
}

#[tokio::test]
async fn http_takes_the_parent_from_meta_then_from_the_header() {
    let server = TestServer::start(runtime()).await;
    let meta = json!({"traceparent": PARENT, "tracestate": "congo=t61rcWkgMzE"});
    let r = server.post(&HEADERS, &call_body(1, meta.clone())).await;
    assert_eq!(text(&r.json()), format!("{PARENT} congo=t61rcWkgMzE"));

    let mut with_header = HEADERS.to_vec();
    with_header.push(("traceparent", HEADER_PARENT));
    with_header.push(("tracestate", "rojo=00f067aa0ba902b7"));
    let r = server.post(&with_header, &call_body(2, json!({}))).await;
    assert_eq!(
        text(&r.json()),
        format!("{HEADER_PARENT} rojo=00f067aa0ba902b7")
    );
    // `_meta` wins over the header.
    let r = server.post(&with_header, &call_body(3, meta)).await;
    assert_eq!(text(&r.json()), format!("{PARENT} congo=t61rcWkgMzE"));
    // A malformed parent is no parent (and no error).
    let r = server
        .post(
            &HEADERS,
            &call_body(4, json!({"traceparent": "00-zz-00f067aa0ba902b7-01"})),
        )
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(text(&r.json()), "none");
}

#[tokio::test]
async fn stdio_takes_the_parent_from_meta() {
    let mut client = Client::start(runtime());
    client
        .line(&call_body(1, json!({"traceparent": PARENT})))
        .await;
    assert_eq!(text(&client.recv().await), format!("{PARENT} -"));
    client.line(&call_body(2, json!({}))).await;
    assert_eq!(text(&client.recv().await), "none");
    let _ = client.finish().await;
}
