//! A backend runtime with one component of each kind and the tools the relay tests
//! need, and helpers to reach a front runtime as a client.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde::Deserialize;
use snodo::protocol::{ALL, ErrorCode, LogLevel};
use snodo::{
    NoArguments, Prompt, RequestContext, Resource, ResourceContents, ResourceTemplate, RpcError,
    Runtime, Tool,
};
use snodo_client::{Client, Protocol};
use snodo_compose::{McpSource, Mount, Status, Transforms};

#[derive(Deserialize, schemars::JsonSchema)]
pub struct Echo {
    pub text: String,
}

/// What the backend saw.
#[derive(Clone, Default)]
pub struct Seen {
    pub started: Arc<AtomicBool>,
    pub cancelled: Arc<AtomicBool>,
}

impl Seen {
    pub async fn wait(flag: &AtomicBool) -> bool {
        for _ in 0..500 {
            if flag.load(Ordering::SeqCst) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        false
    }
}

struct OnDrop(Arc<AtomicBool>);
impl Drop for OnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// A backend named `name` serving every dialect.
pub fn backend(name: &str, seen: &Seen) -> Runtime {
    let s = seen.clone();
    Runtime::builder(name, "1")
        .protocols(ALL.iter().copied())
        .logging()
        .tool(
            Tool::new("echo")
                .description("Echoes the text")
                .handler(|a: Echo| async move { a.text }),
        )
        .tool(
            Tool::new("slow")
                .description("Reports progress and a log line")
                .handler(|_: NoArguments, ctx: RequestContext| async move {
                    ctx.log(LogLevel::Warning, Some("slow"), "halfway").await;
                    for i in 1..=3 {
                        ctx.progress(f64::from(i), Some(3.0), Some("step")).await;
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                    "done"
                }),
        )
        .tool(
            Tool::new("wait")
                .description("Waits until cancelled")
                .handler(move |_: NoArguments| {
                    let s = s.clone();
                    async move {
                        s.started.store(true, Ordering::SeqCst);
                        let _guard = OnDrop(s.cancelled.clone());
                        tokio::time::sleep(Duration::from_secs(60)).await;
                        "late"
                    }
                }),
        )
        .tool(
            Tool::new("fail")
                .description("Fails with an application code")
                .handler(|_: NoArguments| async move {
                    Err::<String, _>(RpcError::new(ErrorCode(-32042), "custom failure"))
                }),
        )
        .prompt(
            Prompt::new("greet")
                .description("A greeting")
                .argument("name", "who", true)
                .handler(|args, _ctx| async move {
                    let n = args.get("name").cloned().unwrap_or_default();
                    Ok(snodo::PromptResult::new(vec![snodo::PromptMessage::user(
                        snodo::Content::text(format!("Hello {n}")),
                    )]))
                }),
        )
        .resource(Resource::new("note://readme", "readme").static_text("text/plain", "read me"))
        .resource(
            ResourceTemplate::new("note://{id}", "note").reader(|req, _ctx| async move {
                let id = req.variables.get("id").cloned().unwrap_or_default();
                Ok(vec![ResourceContents::text(req.uri, format!("note {id}"))])
            }),
        )
        .build()
        .unwrap()
}

/// A front runtime with one local tool, every dialect enabled.
pub fn front() -> snodo::RuntimeBuilder {
    Runtime::builder("front", "1")
        .protocols(ALL.iter().copied())
        .declare_all_kinds()
        .tool(
            Tool::new("local")
                .description("A local tool")
                .handler(|_: NoArguments| async { "local" }),
        )
}

/// A client of `front` speaking `version`.
pub async fn client(front: &Runtime, version: &str) -> Client {
    Client::builder("test", "1")
        .protocol(Protocol::Pinned(version.to_owned()))
        .connect_runtime(front.clone())
        .await
        .unwrap()
}

pub async fn tool_names(c: &Client) -> Vec<String> {
    let mut v: Vec<String> = c
        .list_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    v.sort();
    v
}

pub const VERSIONS: [&str; 4] = ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"];

/// Mounts the backend `name` (see [`backend`]) in `front` with `transforms`, and waits
/// for its first listing.
pub async fn mount(
    front: &Runtime,
    name: &str,
    seen: &Seen,
    transforms: Transforms,
) -> (Mount, Status) {
    let m = Mount::new(
        front,
        McpSource::runtime(name, backend(name, seen)),
        transforms,
    );
    let st = m.ready(Duration::from_secs(10)).await;
    (m, st)
}

/// Calls `tool` with no arguments, keeping a 2026-07-28 `input_required` answer as it
/// is (not answered by the client's round driver), and checks that it is one.
pub async fn first_round_of(c: &Client, tool: &str) -> serde_json::Value {
    let keep = snodo_client::CallOptions::default().keep_input_required();
    let r = c
        .request_with(
            "tools/call",
            serde_json::json!({"name": tool, "arguments": {}}),
            &keep,
        )
        .await
        .unwrap();
    assert_eq!(r["resultType"], "input_required", "{r}");
    r
}

/// The params that continue `round` (a kept `input_required` of `tool`, called with no
/// arguments), its one question accepted with `{"v": answer}`.
#[allow(dead_code)] // not every test binary that includes this module continues rounds
pub fn continuation(round: &serde_json::Value, tool: &str, answer: &str) -> serde_json::Value {
    let key = round["inputRequests"]
        .as_object()
        .and_then(|q| q.keys().next())
        .expect("a question")
        .clone();
    serde_json::json!({
        "name": tool, "arguments": {},
        "inputResponses": {key: {"action": "accept", "content": {"v": answer}}},
        "requestState": round["requestState"],
    })
}
