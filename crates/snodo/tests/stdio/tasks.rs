//! The tasks extension on stdio: the same engine path as HTTP, no header layer.

use std::time::Duration;

use serde_json::{Value, json};
use snodo::tasks::TaskSupport;
use snodo::{HandlerError, InputRequest, NoArguments, Runtime, Tool, ToolResult};

use crate::client::{Client, V, assert_error, assert_response};
use crate::support::assert_schema;

fn runtime() -> Runtime {
    Runtime::builder("stdio-tasks", "1.0.0")
        .tool(
            Tool::new("ask")
                .description("Asks a question inside its task")
                .task(TaskSupport::Optional)
                .handler(|_: NoArguments, ctx: snodo::RequestContext| async move {
                    let form = InputRequest::elicit(
                        "Name?",
                        json!({"type": "object", "properties": {"name": {"type": "string"}}}),
                    );
                    let a = ctx.ask("name", form).await?;
                    Ok::<_, HandlerError>(ToolResult::text(format!(
                        "Hello, {}",
                        a["content"]["name"].as_str().unwrap_or_default()
                    )))
                }),
        )
        .build()
        .unwrap()
}

fn caps() -> Value {
    json!({"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}})
}

async fn get(c: &mut Client, id: &str) -> Value {
    c.modern(json!("g"), "tasks/get", json!({"taskId": id}), caps())
        .await;
    let m = c.recv().await;
    assert_schema("ext-tasks", "GetTaskResult", &m["result"]);
    m["result"].clone()
}

async fn until(c: &mut Client, id: &str, status: &str) -> Value {
    for _ in 0..200 {
        let t = get(c, id).await;
        if t["status"] == status {
            return t;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("task {id} never reached {status}");
}

#[tokio::test]
async fn a_task_over_stdio() {
    let mut c = Client::start(runtime());
    c.modern(
        json!(1),
        "tools/call",
        json!({"name": "ask", "arguments": {}}),
        caps(),
    )
    .await;
    let created = c.recv().await;
    assert_schema("ext-tasks", "CreateTaskResult", &created["result"]);
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    let parked = until(&mut c, &id, "input_required").await;
    assert!(parked["inputRequests"]["name"].is_object(), "{parked}");
    c.modern(
        json!(2),
        "tasks/update",
        json!({"taskId": id, "inputResponses": {"name": {"action": "accept", "content": {"name": "Ada"}}}}),
        caps(),
    )
    .await;
    let ack = c.recv().await;
    assert_schema("ext-tasks", "UpdateTaskResult", &ack["result"]);
    let done = until(&mut c, &id, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "Hello, Ada");
    // Without the extension on the request: -32021.
    c.modern(json!(3), "tasks/get", json!({"taskId": id}), json!({}))
        .await;
    let m = c.recv().await;
    assert_error(&m, &json!(3), -32021);
    assert_response(V, "tasks/get", &m);
    assert!(c.finish().await.is_empty());
}
