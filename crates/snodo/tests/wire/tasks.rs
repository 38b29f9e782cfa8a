//! The tasks extension (SEP-2663) on the wire: literal requests, task bodies validated
//! against the extension's schema (`tests/schema/ext-tasks.json`), the others against
//! the 2026-07-28 schema.

use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use snodo::http::{BearerTokens, HttpConfig};
use snodo::protocol::V2026_07_28;
use snodo::tasks::{MemoryStore, TaskOptions, TaskSupport};
use snodo::{
    HandlerError, InputRequest, NoArguments, Principal, RpcError, Runtime, Tool, ToolResult,
};

use crate::support::{ALL, Reply, TestServer, assert_schema, assert_valid};

const EXT: &str = "ext-tasks";
const V: &str = "2026-07-28";

#[derive(Deserialize, JsonSchema)]
struct SleepArgs {
    /// Milliseconds to work.
    ms: u64,
}

fn form(message: &str, field: &str) -> InputRequest {
    InputRequest::elicit(
        message,
        json!({"type": "object", "properties": {field: {"type": "string"}}}),
    )
}

fn tools() -> Vec<Tool> {
    vec![
        Tool::new("sleep")
            .description("Works for ms milliseconds")
            .task(TaskSupport::Optional)
            .handler(|a: SleepArgs, ctx: snodo::RequestContext| async move {
                ctx.progress(1.0, Some(2.0), Some("half way")).await;
                tokio::time::sleep(Duration::from_millis(a.ms)).await;
                ToolResult::text(format!("slept {}", a.ms))
            }),
        Tool::new("required")
            .description("Always a task")
            .task(TaskSupport::Required)
            .handler(|_: NoArguments, _ctx| async move { ToolResult::text("done") }),
        Tool::new("two_questions")
            .description("Asks two questions at once inside the task")
            .task(TaskSupport::Optional)
            .handler(|_: NoArguments, ctx: snodo::RequestContext| async move {
                let a = ctx
                    .ask_all([
                        ("city".to_owned(), form("City?", "city")),
                        ("color".to_owned(), form("Color?", "color")),
                    ])
                    .await?;
                Ok::<_, HandlerError>(ToolResult::text(format!(
                    "{} / {}",
                    a["city"]["content"]["city"], a["color"]["content"]["color"]
                )))
            }),
        Tool::new("protocol_error")
            .description("Ends with a JSON-RPC error")
            .task(TaskSupport::Optional)
            .handler(|_: NoArguments, _ctx| async move {
                Err::<ToolResult, _>(HandlerError::Protocol(RpcError::internal(
                    "broken on purpose",
                )))
            }),
        Tool::new("panics")
            .description("Panics")
            .task(TaskSupport::Optional)
            .handler(|_: NoArguments, _ctx| async move {
                if true {
                    panic!("on purpose");
                }
                ToolResult::text("never")
            }),
        Tool::new("tool_error")
            .description("Ends with a tool error")
            .task(TaskSupport::Optional)
            .handler(|_: NoArguments, _ctx| async move { ToolResult::error("no luck") }),
        Tool::new("plain")
            .description("Not a task tool")
            .handler(|_: NoArguments, _ctx| async move { ToolResult::text("plain") }),
    ]
}

pub fn runtime(options: TaskOptions, protocols: &[&'static snodo::protocol::Dialect]) -> Runtime {
    let mut b = Runtime::builder("tasks-test", "1.0.0")
        .protocols(protocols.iter().copied())
        .tasks(options);
    for t in tools() {
        b = b.tool(t);
    }
    b.build().unwrap()
}

fn options() -> TaskOptions {
    TaskOptions::new(Arc::new(MemoryStore::new())).poll_interval(Duration::from_millis(50))
}

fn caps() -> Value {
    json!({"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}})
}

/// A 2026-07-28 request; `name` is sent as `Mcp-Name` when given.
async fn request(
    s: &TestServer,
    auth: Option<&str>,
    method: &str,
    mut params: Value,
    caps: Value,
    name: Option<&str>,
) -> Reply {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": V,
        "io.modelcontextprotocol/clientCapabilities": caps,
    });
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
    let mut headers = vec![("MCP-Protocol-Version", V), ("Mcp-Method", method)];
    if let Some(n) = name {
        headers.push(("Mcp-Name", n));
    }
    let bearer;
    if let Some(a) = auth {
        bearer = format!("Bearer {a}");
        headers.push(("Authorization", bearer.as_str()));
    }
    s.post(&headers, &body).await
}

async fn call(s: &TestServer, auth: Option<&str>, tool: &str, args: Value, caps: Value) -> Reply {
    request(
        s,
        auth,
        "tools/call",
        json!({"name": tool, "arguments": args}),
        caps,
        Some(tool),
    )
    .await
}

async fn task_op(s: &TestServer, auth: Option<&str>, method: &str, params: Value) -> Reply {
    let id = params["taskId"].as_str().unwrap_or_default().to_owned();
    request(s, auth, method, params, caps(), Some(&id)).await
}

/// Creates a task and checks the `CreateTaskResult`.
async fn create(s: &TestServer, auth: Option<&str>, tool: &str, args: Value) -> String {
    let r = call(s, auth, tool, args, caps()).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let result = r.result();
    assert_schema(EXT, "CreateTaskResult", &result);
    assert_eq!(result["resultType"], "task", "{result}");
    assert_eq!(result["status"], "working");
    assert!(result.get("task").is_none() && result.get("result").is_none());
    let id = result["taskId"].as_str().unwrap().to_owned();
    assert!(id.len() >= 32, "128 random bits: {id}");
    id
}

async fn get(s: &TestServer, auth: Option<&str>, id: &str) -> Value {
    let r = task_op(s, auth, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let result = r.result();
    assert_schema(EXT, "GetTaskResult", &result);
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["taskId"], id);
    result
}

/// Polls until the task's status is `want` (or terminal).
async fn until(s: &TestServer, auth: Option<&str>, id: &str, want: &str) -> Value {
    for _ in 0..200 {
        let t = get(s, auth, id).await;
        let status = t["status"].as_str().unwrap_or_default().to_owned();
        if status == want || matches!(status.as_str(), "completed" | "failed" | "cancelled") {
            return t;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("task {id} never reached {want}");
}

#[tokio::test]
async fn create_poll_complete() {
    let s = TestServer::start(runtime(options(), &[&V2026_07_28])).await;
    let r = request(&s, None, "server/discover", json!({}), json!({}), None).await;
    assert_valid(V, "server/discover", &r);
    assert_eq!(
        r.result()["capabilities"]["extensions"],
        json!({"io.modelcontextprotocol/tasks": {}})
    );
    let id = create(&s, None, "sleep", json!({"ms": 150})).await;
    // Durable before the answer: an immediate tasks/get resolves.
    let first = get(&s, None, &id).await;
    assert_eq!(first["pollIntervalMs"], 50);
    assert!(first["ttlMs"].as_u64().is_some_and(|t| t > 0));
    assert!(first["createdAt"].as_str().unwrap().ends_with('Z'));
    let done = until(&s, None, &id, "completed").await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "slept 150");
    assert_eq!(done["result"]["isError"], false);
    assert!(done.get("error").is_none());
    // The worker's progress became the status message.
    assert!(done.get("statusMessage").is_none() || done["statusMessage"].is_string());
    // A tool error is a completed task with isError.
    let id = create(&s, None, "tool_error", json!({})).await;
    let done = until(&s, None, &id, "completed").await;
    assert_eq!(done["result"]["isError"], true, "{done}");
}

#[tokio::test]
async fn without_the_extension() {
    let s = TestServer::start(runtime(options(), &[&V2026_07_28])).await;
    // An optional task tool runs synchronously.
    let r = call(&s, None, "sleep", json!({"ms": 1}), json!({})).await;
    assert_valid(V, "tools/call", &r);
    assert_eq!(r.result()["content"][0]["text"], "slept 1");
    assert!(r.result().get("taskId").is_none());
    // A required one is refused, naming the extension.
    let r = call(&s, None, "required", json!({}), json!({})).await;
    assert_eq!(r.status, 400);
    assert_eq!(r.error_code(), -32021);
    assert_eq!(
        r.message()["error"]["data"]["requiredCapabilities"]["extensions"],
        json!({"io.modelcontextprotocol/tasks": {}})
    );
    assert_valid(V, "tools/call", &r);
    // tasks/* need the extension on the request itself.
    for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
        let r = request(
            &s,
            None,
            method,
            json!({"taskId": "x", "inputResponses": {}}),
            json!({}),
            Some("x"),
        )
        .await;
        assert_eq!(r.error_code(), -32021, "{method}: {}", r.text());
    }
    // A plain tool never becomes a task, extension or not.
    let r = call(&s, None, "plain", json!({}), caps()).await;
    assert_eq!(r.result()["resultType"], "complete");
}

#[tokio::test]
async fn input_required_then_update_then_completed() {
    let s = TestServer::start(runtime(options(), &[&V2026_07_28])).await;
    let id = create(&s, None, "two_questions", json!({})).await;
    let parked = until(&s, None, &id, "input_required").await;
    assert_eq!(parked["status"], "input_required", "{parked}");
    let mut keys: Vec<&String> = parked["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    keys.sort();
    assert_eq!(keys, ["city", "color"]);
    assert_eq!(
        parked["inputRequests"]["city"]["method"],
        "elicitation/create"
    );
    // A partial answer (plus an unknown key, ignored) narrows the outstanding set.
    let r = task_op(
        &s,
        None,
        "tasks/update",
        json!({"taskId": id, "inputResponses": {
            "city": {"action": "accept", "content": {"city": "Lyon"}},
            "unknown": {"action": "accept", "content": {}}
        }}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_schema(EXT, "UpdateTaskResult", &r.result());
    assert!(r.result().get("taskId").is_none());
    let mut narrowed = json!(null);
    for _ in 0..100 {
        narrowed = get(&s, None, &id).await;
        if narrowed["inputRequests"].get("city").is_none() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(narrowed["status"], "input_required", "{narrowed}");
    assert_eq!(
        narrowed["inputRequests"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["color"]
    );
    // Repeating an answered key is tolerated.
    let r = task_op(
        &s,
        None,
        "tasks/update",
        json!({"taskId": id, "inputResponses": {
            "city": {"action": "accept", "content": {"city": "Paris"}},
            "color": {"action": "accept", "content": {"color": "blue"}}
        }}),
    )
    .await;
    assert_eq!(r.status, 200);
    let done = until(&s, None, &id, "completed").await;
    assert_eq!(
        done["result"]["content"][0]["text"], "\"Lyon\" / \"blue\"",
        "{done}"
    );
    // inputResponses must be an object.
    let r = task_op(
        &s,
        None,
        "tasks/update",
        json!({"taskId": id, "inputResponses": 5}),
    )
    .await;
    assert_eq!(r.error_code(), -32602);
}

#[tokio::test]
async fn cancel_and_unknown_ids() {
    let s = TestServer::start(runtime(options(), &[&V2026_07_28])).await;
    let id = create(&s, None, "sleep", json!({"ms": 60_000})).await;
    let r = task_op(&s, None, "tasks/cancel", json!({"taskId": id})).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_schema(EXT, "CancelTaskResult", &r.result());
    assert_eq!(r.result()["resultType"], "complete");
    let done = until(&s, None, &id, "cancelled").await;
    assert_eq!(done["status"], "cancelled", "{done}");
    assert!(done.get("result").is_none() && done.get("error").is_none());
    // Cancelling a terminal task is the same empty ack.
    let r = task_op(&s, None, "tasks/cancel", json!({"taskId": id})).await;
    assert_eq!(r.status, 200);
    for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
        let r = task_op(
            &s,
            None,
            method,
            json!({"taskId": "no-such-task", "inputResponses": {}}),
        )
        .await;
        assert_eq!(r.error_code(), -32602, "{method}");
        assert_valid(V, method, &r);
    }
    // tasks/list and tasks/result do not exist in this extension.
    for method in ["tasks/list", "tasks/result"] {
        let r = request(&s, None, method, json!({"taskId": id}), caps(), None).await;
        assert_eq!(r.status, 404, "{method}");
        assert_eq!(r.error_code(), -32601, "{method}");
    }
}

#[tokio::test]
async fn failed_tasks_carry_the_error() {
    let s = TestServer::start(runtime(options(), &[&V2026_07_28])).await;
    let id = create(&s, None, "protocol_error", json!({})).await;
    let done = until(&s, None, &id, "failed").await;
    assert_eq!(done["status"], "failed", "{done}");
    assert_eq!(done["error"]["code"], -32603);
    assert_eq!(done["error"]["message"], "broken on purpose");
    assert_eq!(done["statusMessage"], "broken on purpose");
    assert!(done.get("result").is_none());
    let id = create(&s, None, "panics", json!({})).await;
    let done = until(&s, None, &id, "failed").await;
    assert_eq!(done["error"]["code"], -32603, "{done}");
}

#[tokio::test]
async fn another_caller_sees_an_unknown_task() {
    let auth = BearerTokens::new("https://mcp.example.com/.well-known/oauth-protected-resource")
        .token("alpha", Principal::new("alice"))
        .token("beta", Principal::new("bob"));
    let s = TestServer::start_with(
        runtime(options(), &[&V2026_07_28]),
        HttpConfig::default().authenticator(auth),
    )
    .await;
    let id = create(&s, Some("alpha"), "sleep", json!({"ms": 60_000})).await;
    let unknown = task_op(&s, Some("beta"), "tasks/get", json!({"taskId": "nope"})).await;
    for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
        let r = task_op(
            &s,
            Some("beta"),
            method,
            json!({"taskId": id, "inputResponses": {}}),
        )
        .await;
        assert_eq!(r.error_code(), -32602, "{method}");
        assert_eq!(
            r.message()["error"]["message"],
            unknown.message()["error"]["message"],
            "{method}: indistinguishable from an unknown id"
        );
    }
    // Bob's cancel did nothing; Alice still owns a working task.
    assert_eq!(get(&s, Some("alpha"), &id).await["status"], "working");
    let r = task_op(&s, Some("alpha"), "tasks/cancel", json!({"taskId": id})).await;
    assert_eq!(r.status, 200);
}

#[tokio::test]
async fn mcp_name_must_be_the_task_id() {
    let s = TestServer::start(runtime(options(), &[&V2026_07_28])).await;
    let id = create(&s, None, "sleep", json!({"ms": 10})).await;
    let params = json!({"taskId": id});
    let r = request(
        &s,
        None,
        "tasks/get",
        params.clone(),
        caps(),
        Some("another-task"),
    )
    .await;
    assert_eq!(r.status, 400);
    assert_eq!(r.error_code(), -32020);
    let r = request(&s, None, "tasks/get", params, caps(), None).await;
    assert_eq!(r.status, 400);
    assert_eq!(r.error_code(), -32020);
}

#[tokio::test]
async fn initialize_era_dialects_refuse_tasks() {
    let s = TestServer::start(runtime(options(), &ALL)).await;
    let init = s
        .legacy(
            "2025-11-25",
            json!(1),
            "initialize",
            Some(json!({"protocolVersion": "2025-11-25", "capabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
                "clientInfo": {"name": "t", "version": "1"}})),
        )
        .await;
    assert_valid("2025-11-25", "initialize", &init);
    assert!(init.result()["capabilities"].get("extensions").is_none());
    assert!(init.result()["capabilities"].get("tasks").is_none());
    for method in ["tasks/get", "tasks/cancel"] {
        let r = s
            .legacy("2025-11-25", json!(2), method, Some(json!({"taskId": "x"})))
            .await;
        assert_eq!(r.error_code(), -32601, "{method}: {}", r.text());
    }
    // An optional task tool is an ordinary call there.
    let r = s
        .legacy(
            "2025-11-25",
            json!(3),
            "tools/call",
            Some(json!({"name": "sleep", "arguments": {"ms": 1}})),
        )
        .await;
    assert_valid("2025-11-25", "tools/call", &r);
    assert_eq!(r.result()["content"][0]["text"], "slept 1");
}

#[tokio::test]
async fn expired_tasks_are_gone() {
    let opts = options()
        .ttl(Some(Duration::from_millis(150)))
        .sweep_interval(Duration::from_millis(50));
    let s = TestServer::start(runtime(opts, &[&V2026_07_28])).await;
    let id = create(&s, None, "sleep", json!({"ms": 1})).await;
    assert_eq!(get(&s, None, &id).await["ttlMs"], 150);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let r = task_op(&s, None, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(r.error_code(), -32602, "{}", r.text());
}

#[tokio::test]
async fn status_notifications_through_listen() {
    let s = TestServer::start(runtime(options(), &[&V2026_07_28])).await;
    let id = create(&s, None, "sleep", json!({"ms": 200})).await;
    let listen = |caps: Value, ids: Value| {
        json!({"jsonrpc": "2.0", "id": 9, "method": "subscriptions/listen", "params": {
            "notifications": {"taskIds": ids},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": V,
                "io.modelcontextprotocol/clientCapabilities": caps,
            }
        }})
        .to_string()
    };
    let headers = [
        ("MCP-Protocol-Version", V),
        ("Mcp-Method", "subscriptions/listen"),
    ];
    // Without the extension: -32021.
    let r = s.post(&headers, &listen(json!({}), json!([id]))).await;
    assert_eq!(r.error_code(), -32021, "{}", r.text());
    let mut stream = s
        .open(&headers, &listen(caps(), json!([id, "not-mine"])))
        .await;
    assert_eq!(stream.status, 200);
    let ack = stream.next(Duration::from_secs(5)).await.unwrap();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["notifications"]["taskIds"],
        json!([id]),
        "{ack}"
    );
    let mut last = json!(null);
    while let Some(n) = stream.next(Duration::from_secs(5)).await {
        assert_eq!(n["method"], "notifications/tasks", "{n}");
        assert_schema(EXT, "TaskStatusNotification", &n);
        assert_eq!(n["params"]["taskId"], id.as_str());
        last = n;
        if last["params"]["status"] == "completed" {
            break;
        }
    }
    assert_eq!(last["params"]["status"], "completed", "{last}");
    assert_eq!(last["params"]["result"]["content"][0]["text"], "slept 200");
}

/// The task series move as tasks run, wait for input and end (feature `metrics`).
#[cfg(feature = "metrics")]
#[tokio::test]
async fn task_metrics_by_status() {
    let metrics = snodo::metrics::Metrics::new();
    let mut b = Runtime::builder("tasks-test", "1.0.0")
        .protocols([&V2026_07_28])
        .tasks(options())
        .metrics(metrics.clone());
    for t in tools() {
        b = b.tool(t);
    }
    let s = TestServer::start(b.build().unwrap()).await;
    let value = |series: &str| -> f64 {
        let text = metrics.encode();
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
            .map_or(0.0, |v| v.trim().parse().unwrap())
    };
    let working = r#"snodo_tasks_running{status="working"}"#;
    let waiting = r#"snodo_tasks_running{status="input_required"}"#;
    let ended = |status: &str| format!("snodo_tasks_ended_total{{status=\"{status}\"}}");
    // The gauges follow the worker, a moment after the store: poll them.
    let settle = |series: String, want: f64| {
        let value = &value;
        async move {
            for _ in 0..200 {
                if value(&series) == want {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            panic!("{series} = {} (want {want})", value(&series));
        }
    };

    let sleeping = create(&s, None, "sleep", json!({"ms": 60_000})).await;
    settle(working.into(), 1.0).await;
    let asking = create(&s, None, "two_questions", json!({})).await;
    until(&s, None, &asking, "input_required").await;
    settle(waiting.into(), 1.0).await;
    assert_eq!(value(working), 1.0, "a parked task is not working");

    let r = task_op(
        &s,
        None,
        "tasks/update",
        json!({"taskId": asking, "inputResponses": {
            "city": {"action": "accept", "content": {"city": "Lyon"}},
            "color": {"action": "accept", "content": {"color": "blue"}}
        }}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    until(&s, None, &asking, "completed").await;
    settle(ended("completed"), 1.0).await;
    assert_eq!(value(waiting), 0.0);

    let r = task_op(&s, None, "tasks/cancel", json!({"taskId": sleeping})).await;
    assert_eq!(r.status, 200, "{}", r.text());
    settle(ended("cancelled"), 1.0).await;
    let failing = create(&s, None, "protocol_error", json!({})).await;
    until(&s, None, &failing, "failed").await;
    settle(ended("failed"), 1.0).await;
    settle(working.into(), 0.0).await;
    assert_eq!(value(&ended("lost")), 0.0);
}
