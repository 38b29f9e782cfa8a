//! Typed annotations on the wire: tool hints, and audience/priority/lastModified on
//! content, resources and templates, in every dialect, each body validated against that
//! revision's official schema.

use serde_json::{Value, json};
use snodo::protocol::{Dialect, V2025_03_26, V2025_06_18, V2025_11_25, V2026_07_28};
use snodo::{Annotations, Role, ToolAnnotations};
use snodo::{Content, NoArguments, Resource, ResourceContents, ResourceTemplate, Tool, ToolResult};

use super::support::*;

const EVERY: [&Dialect; 4] = [&V2026_07_28, &V2025_11_25, &V2025_06_18, &V2025_03_26];

fn hints() -> Annotations {
    Annotations::new()
        .audience(Role::User)
        .priority(0.8)
        .last_modified("2026-07-28T09:00:00Z")
}

async fn annotated_server() -> TestServer {
    let runtime = builder(&EVERY)
        .tool(
            Tool::new("delete_file")
                .title("Delete a file")
                .description("Deletes a file")
                .destructive(true)
                .idempotent(true)
                .open_world(false)
                .handler(|_: NoArguments, _ctx| async {
                    ToolResult::new(vec![Content::text("deleted").with_annotations(hints())])
                }),
        )
        .tool(
            Tool::new("peek")
                .description("Looks")
                .annotations(ToolAnnotations::new().read_only(true))
                .annotation("x-vendor/cost", "low")
                .handler(|_: NoArguments, _ctx| async { ToolResult::text("ok") }),
        )
        .resource(
            Resource::new("test://annotated", "annotated")
                .annotations(hints())
                .static_text("text/plain", "hi"),
        )
        .resource_template(
            ResourceTemplate::new("test://annotated/{id}", "annotated-item")
                .annotations(Annotations::new().audience(Role::Assistant))
                .reader(
                    |req, _ctx| async move { Ok(vec![ResourceContents::text(req.uri, "item")]) },
                ),
        )
        .build()
        .unwrap();
    TestServer::start(runtime).await
}

/// Sends `method` in `dialect`'s way; asserts a schema-valid 200 result.
async fn call(s: &TestServer, d: &Dialect, method: &str, params: Value) -> Value {
    let r = if d.is_stateless() {
        s.modern(json!(1), method, params, json!({})).await
    } else if d.has_version_header() {
        s.legacy(d.version(), json!(1), method, Some(params)).await
    } else {
        let body = json!({"jsonrpc":"2.0","id":1,"method":method,"params":params});
        s.post(&[], &body.to_string()).await
    };
    assert_eq!(r.status, 200, "{d} {method}: {}", r.text());
    assert_valid(d.version(), method, &r);
    r.result()
}

fn tool<'a>(tools: &'a Value, name: &str) -> &'a Value {
    tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap()
}

#[tokio::test]
async fn tool_hints_in_every_dialect() {
    let s = annotated_server().await;
    for d in EVERY {
        let tools = call(&s, d, "tools/list", json!({})).await;
        let del = tool(&tools, "delete_file");
        let mut expected =
            json!({"destructiveHint": true, "idempotentHint": true, "openWorldHint": false});
        if d.version() == "2025-03-26" {
            // No tool `title` in this revision: it travels as `annotations.title`.
            assert!(del.get("title").is_none(), "{d}: {del}");
            expected["title"] = json!("Delete a file");
        } else {
            assert_eq!(del["title"], "Delete a file", "{d}");
        }
        assert_eq!(del["annotations"], expected, "{d}");
        let peek = tool(&tools, "peek");
        assert_eq!(
            peek["annotations"],
            json!({"readOnlyHint": true, "x-vendor/cost": "low"}),
            "{d}"
        );
    }
}

#[tokio::test]
async fn content_and_resource_hints_in_every_dialect() {
    let s = annotated_server().await;
    for d in EVERY {
        let with_date = d.version() != "2025-03-26";
        let mut full = json!({"audience": ["user"], "priority": 0.8});
        if with_date {
            full["lastModified"] = json!("2026-07-28T09:00:00Z");
        }
        let result = call(
            &s,
            d,
            "tools/call",
            json!({"name": "delete_file", "arguments": {}}),
        )
        .await;
        assert_eq!(result["content"][0]["annotations"], full, "{d}");

        let list = call(&s, d, "resources/list", json!({})).await;
        let r = list["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["uri"] == "test://annotated")
            .unwrap();
        assert_eq!(r["annotations"], full, "{d}");

        let templates = call(&s, d, "resources/templates/list", json!({})).await;
        let t = templates["resourceTemplates"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "annotated-item")
            .unwrap();
        assert_eq!(t["annotations"], json!({"audience": ["assistant"]}), "{d}");
    }
}
