//! MCP Apps on the wire: a `ui://` view (`text/html;profile=mcp-app`, CSP in
//! `_meta.ui`), a tool linked to it by `_meta.ui.resourceUri`, and the text result every
//! client gets, with or without the extension. Bodies validated against each revision's
//! schema.

use serde_json::{Value, json};
use snodo::apps::{AppView, Csp, MIME_TYPE, client_supports};
use snodo::protocol::{V2025_03_26, V2025_11_25, V2026_07_28};
use snodo::{NoArguments, Tool, ToolResult};

use super::support::*;

async fn apps_server() -> TestServer {
    let view = AppView::new(
        "ui://weather/view.html",
        "Weather view",
        "<!doctype html><p>weather</p>",
    )
    .csp(Csp::new().connect("https://api.example.com"))
    .prefers_border(true);
    let tool = Tool::new("weather")
        .description("Today's weather")
        .ui(&view)
        .handler(|_: NoArguments, ctx: snodo::RequestContext| async move {
            let text = if client_supports(&ctx) {
                "Sunny (see the view)"
            } else {
                "Sunny, 21 °C, light wind from the west"
            };
            ToolResult::structured(json!({"sky": "sunny", "celsius": 21}))
                .with_content(snodo::Content::text(text))
        });
    let runtime = builder(&[&V2026_07_28, &V2025_11_25, &V2025_03_26])
        .app(view)
        .tool(tool)
        .build()
        .unwrap();
    TestServer::start(runtime).await
}

fn weather(list: &Value) -> Value {
    list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "weather")
        .cloned()
        .unwrap()
}

#[tokio::test]
async fn view_and_link() {
    let s = apps_server().await;
    let r = s
        .modern(json!(1), "server/discover", json!({}), json!({}))
        .await;
    assert_valid("2026-07-28", "server/discover", &r);
    assert_eq!(
        r.result()["capabilities"]["extensions"]["io.modelcontextprotocol/ui"],
        json!({})
    );
    let r = s.modern(json!(2), "tools/list", json!({}), json!({})).await;
    assert_valid("2026-07-28", "tools/list", &r);
    assert_eq!(
        weather(&r.result())["_meta"]["ui"]["resourceUri"],
        "ui://weather/view.html"
    );
    let r = s
        .modern(
            json!(3),
            "resources/read",
            json!({"uri": "ui://weather/view.html"}),
            json!({}),
        )
        .await;
    assert_valid("2026-07-28", "resources/read", &r);
    let c = &r.result()["contents"][0];
    assert_eq!(c["mimeType"], MIME_TYPE);
    assert_eq!(
        c["_meta"]["ui"],
        json!({"csp": {"connectDomains": ["https://api.example.com"]}, "prefersBorder": true})
    );
    let r = s
        .modern(json!(4), "resources/list", json!({}), json!({}))
        .await;
    assert_valid("2026-07-28", "resources/list", &r);
}

#[tokio::test]
async fn text_for_clients_without_the_extension() {
    let s = apps_server().await;
    let call = json!({"name": "weather", "arguments": {}});
    let ui = json!({"extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": [MIME_TYPE]}}});
    let r = s.modern(json!(1), "tools/call", call.clone(), ui).await;
    assert_valid("2026-07-28", "tools/call", &r);
    assert_eq!(r.result()["content"][1]["text"], "Sunny (see the view)");
    let r = s
        .modern(json!(2), "tools/call", call.clone(), json!({}))
        .await;
    assert_eq!(
        r.result()["content"][1]["text"],
        "Sunny, 21 °C, light wind from the west"
    );
    // 2025-03-26 has no `_meta` on tools and no structured output: the text stands alone.
    let list = json!({"jsonrpc":"2.0","id":3,"method":"tools/list"});
    let r = s.post(&[], &list.to_string()).await;
    assert_valid("2025-03-26", "tools/list", &r);
    assert!(weather(&r.result()).get("_meta").is_none());
    let body = json!({"jsonrpc":"2.0","id":4,"method":"tools/call","params":call});
    let r = s.post(&[], &body.to_string()).await;
    assert_valid("2025-03-26", "tools/call", &r);
    assert!(r.result().get("structuredContent").is_none());
    assert_eq!(
        r.result()["content"][1]["text"],
        "Sunny, 21 °C, light wind from the west"
    );
}
