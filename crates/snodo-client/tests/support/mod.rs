//! A small server for the client's tests: tools that echo, report progress, log, wait
//! to be cancelled, and ask the client (elicitation, sampling, roots); a prompt with a
//! completer; resources and a template; two items per list page.

#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use snodo::protocol::{ALL, Dialect, LogLevel};
use snodo::{
    Content, HandlerError, InputRequest, NoArguments, Prompt, PromptMessage, PromptResult,
    Resource, ResourceContents, ResourceTemplate, Runtime, Tool, ToolResult,
};

#[derive(Deserialize, JsonSchema)]
struct Echo {
    /// The text to send back.
    text: String,
}

#[derive(Deserialize, JsonSchema)]
struct Region {
    /// Mirrored into `Mcp-Param-Region` on 2026-07-28.
    region: String,
}

/// Flags a test reads: the `wait` tool started, and saw its cancellation.
#[derive(Clone, Debug, Default)]
pub struct Flags {
    pub started: Arc<AtomicBool>,
    pub cancelled: Arc<AtomicBool>,
}

impl Flags {
    pub async fn wait_started(&self) {
        for _ in 0..200 {
            if self.started.load(Ordering::SeqCst) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the wait tool never started");
    }

    /// Runs `call` (of the `wait` tool) until the tool started, drops it, and asserts
    /// that the server saw the cancellation.
    pub async fn drop_once_started<T: std::fmt::Debug>(
        &self,
        call: impl std::future::Future<Output = T>,
        what: &str,
    ) {
        tokio::select! {
            r = call => panic!("{what}: the wait tool answered: {r:?}"),
            () = self.wait_started() => {}
        }
        assert!(
            self.saw_cancel().await,
            "{what}: the server saw no cancellation"
        );
    }

    pub async fn saw_cancel(&self) -> bool {
        for _ in 0..300 {
            if self.cancelled.load(Ordering::SeqCst) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        false
    }
}

/// Sets its flag when dropped.
struct OnDrop(Arc<AtomicBool>);

impl Drop for OnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

fn text_of(answer: &Value) -> String {
    answer["content"]["text"]
        .as_str()
        .map_or_else(|| answer["content"].to_string(), str::to_owned)
}

fn tools(flags: &Flags) -> Vec<Tool> {
    let f = flags.clone();
    vec![
        Tool::new("echo")
            .description("Returns its text")
            .handler(|a: Echo, _ctx| async move { ToolResult::text(a.text) }),
        Tool::new("fail")
            .description("Always reports failure")
            .handler(|_: NoArguments, _ctx| async move { ToolResult::error("it failed") }),
        Tool::new("region")
            .description("Returns its region (mirrored into a header)")
            .input_schema(json!({"type": "object", "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"}}, "required": ["region"]}))
            .handler(|a: Region, _ctx| async move { ToolResult::text(a.region) }),
        Tool::new("progress")
            .description("Reports progress twice")
            .handler(|_: NoArguments, ctx: snodo::RequestContext| async move {
                ctx.progress(1.0, Some(2.0), Some("half")).await;
                ctx.progress(2.0, Some(2.0), Some("done")).await;
                ToolResult::text("finished")
            }),
        Tool::new("log").description("Logs one message").handler(
            |_: NoArguments, ctx: snodo::RequestContext| async move {
                ctx.log(LogLevel::Warning, Some("test"), "careful").await;
                ToolResult::text("logged")
            },
        ),
        Tool::new("wait")
            .description("Waits until it is cancelled")
            .handler(move |_: NoArguments, ctx: snodo::RequestContext| {
                let f = f.clone();
                async move {
                    // Dropped (the server abandoned the handler) counts as cancelled.
                    let _guard = OnDrop(f.cancelled.clone());
                    f.started.store(true, Ordering::SeqCst);
                    ctx.progress(0.0, None, Some("waiting")).await;
                    for _ in 0..1000 {
                        if ctx.is_cancelled() {
                            f.cancelled.store(true, Ordering::SeqCst);
                            return ToolResult::text("cancelled");
                        }
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                    ToolResult::text("never cancelled")
                }
            }),
        Tool::new("ask_name")
            .description("Asks the user's name")
            .handler(|_: NoArguments, ctx: snodo::RequestContext| async move {
                let schema = json!({"type": "object", "properties": {
                    "name": {"type": "string", "default": "Ada"}}, "required": ["name"]});
                let a = ctx
                    .ask("name", InputRequest::elicit("Your name?", schema))
                    .await?;
                Ok::<_, HandlerError>(ToolResult::text(format!(
                    "Hello, {}!",
                    a["content"]["name"].as_str().unwrap_or("?")
                )))
            }),
        Tool::new("sample")
            .description("Asks the client's model")
            .handler(|_: NoArguments, ctx: snodo::RequestContext| async move {
                let a = ctx
                    .ask("s", InputRequest::sample("Capital of France?", 10))
                    .await?;
                Ok::<_, HandlerError>(ToolResult::text(format!("model: {}", text_of(&a))))
            }),
        Tool::new("roots")
            .description("Counts the client's roots")
            .handler(|_: NoArguments, ctx: snodo::RequestContext| async move {
                let a = ctx.ask("r", InputRequest::list_roots()).await?;
                let n = a["roots"].as_array().map_or(0, Vec::len);
                Ok::<_, HandlerError>(ToolResult::text(format!("{n} root(s)")))
            }),
    ]
}

fn prompt() -> Prompt {
    Prompt::new("greet")
        .description("Greets someone")
        .argument("who", "Whom to greet", true)
        .handler(|args, _| async move {
            let who = args.get("who").cloned().unwrap_or_default();
            Ok(PromptResult::new(vec![PromptMessage::user(Content::text(
                format!("Hello, {who}!"),
            ))]))
        })
        .completer(|req, _| async move {
            Ok(["alice", "alan", "bob"]
                .iter()
                .filter(|c| c.starts_with(&req.value))
                .map(|c| (*c).to_owned())
                .collect())
        })
}

/// The test server for these versions.
pub fn runtime_for(versions: &[&str], flags: &Flags) -> Runtime {
    let dialects: Vec<&'static Dialect> = versions
        .iter()
        .map(|v| Dialect::by_version(v).unwrap_or_else(|| panic!("unknown version {v}")))
        .collect();
    let mut b = Runtime::builder("client-test-server", "1.0.0")
        .instructions("Test server for snodo-client.")
        .protocols(dialects)
        .page_size(2)
        .logging()
        .legacy_server_requests(Duration::from_secs(5));
    for t in tools(flags) {
        b = b.tool(t);
    }
    for (i, uri) in ["test://a", "test://b", "test://c"].iter().enumerate() {
        b = b.resource(
            Resource::new(*uri, format!("res{i}"))
                .static_text("text/plain", format!("content {i}")),
        );
    }
    b.prompt(prompt())
        .prompt(Prompt::new("plain").handler(|_, _| async {
            Ok(PromptResult::new(vec![PromptMessage::user(Content::text(
                "plain",
            ))]))
        }))
        .resource_template(ResourceTemplate::new("test://item/{id}", "item").reader(
            |req, _ctx| async move {
                let id = req.variables.get("id").cloned().unwrap_or_default();
                Ok(vec![ResourceContents::text(req.uri, format!("item {id}"))])
            },
        ))
        .build()
        .unwrap_or_else(|e| panic!("build: {e}"))
}

/// Every version snodo serves.
pub fn all_versions() -> Vec<&'static str> {
    ALL.iter().map(|d| d.version()).collect()
}

/// A client builder that answers every question the test server asks.
pub fn builder() -> snodo_client::ClientBuilder {
    snodo_client::Client::builder("client-tests", "0.0.1")
        .probe_timeout(Duration::from_secs(5))
        .timeout(Duration::from_secs(20))
        .on_elicitation(|p| async move { Ok(snodo_client::accept_with_defaults(&p)) })
        .on_sampling(|_| async move {
            Ok(
                json!({"role": "assistant", "content": {"type": "text", "text": "Paris"},
                "model": "test-model", "stopReason": "endTurn"}),
            )
        })
        .on_roots(|_| async move {
            Ok(json!({"roots": [{"uri": "file:///tmp", "name": "tmp"}, {"uri": "file:///home"}]}))
        })
}

/// The calls every connector and version must get right.
pub async fn exercise(client: &snodo_client::Client) {
    use std::sync::Mutex;
    let v = client.protocol_version();
    let tools = client
        .list_tools()
        .await
        .unwrap_or_else(|e| panic!("{v} tools/list: {e}"));
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names.len(), 9, "{v}: every page followed: {names:?}");
    assert!(
        names.contains(&"echo") && names.contains(&"roots"),
        "{names:?}"
    );

    let r = client
        .call_tool("echo", json!({"text": "hi"}))
        .await
        .unwrap_or_else(|e| panic!("{v} echo: {e}"));
    assert_eq!((r.text().as_str(), r.is_error), ("hi", false), "{v}");
    let r = client
        .call_tool("fail", json!({}))
        .await
        .unwrap_or_else(|e| panic!("{v} fail: {e}"));
    assert!(r.is_error, "{v}: a failed tool is a value");
    let r = client
        .call_tool("region", json!({"region": "eu west"}))
        .await
        .unwrap_or_else(|e| panic!("{v} region: {e}"));
    assert_eq!(r.text(), "eu west", "{v}");
    let err = client
        .call_tool("nope", json!({}))
        .await
        .err()
        .unwrap_or_else(|| panic!("{v}: nope answered"));
    assert!(err.code().is_some(), "{v}: a JSON-RPC error: {err}");

    let resources = client
        .list_resources()
        .await
        .unwrap_or_else(|e| panic!("{v} resources/list: {e}"));
    assert_eq!(resources.len(), 3, "{v}");
    let templates = client
        .list_resource_templates()
        .await
        .unwrap_or_else(|e| panic!("{v} templates: {e}"));
    assert_eq!(templates.len(), 1, "{v}");
    let read = client
        .read_resource("test://b")
        .await
        .unwrap_or_else(|e| panic!("{v} read: {e}"));
    assert_eq!(read.contents[0].text.as_deref(), Some("content 1"), "{v}");
    let read = client
        .read_resource("test://item/7")
        .await
        .unwrap_or_else(|e| panic!("{v} read: {e}"));
    assert_eq!(read.contents[0].text.as_deref(), Some("item 7"), "{v}");

    let prompts = client
        .list_prompts()
        .await
        .unwrap_or_else(|e| panic!("{v} prompts/list: {e}"));
    assert_eq!(prompts.len(), 2, "{v}");
    let p = client
        .get_prompt("greet", json!({"who": "you"}))
        .await
        .unwrap_or_else(|e| panic!("{v} get: {e}"));
    assert_eq!(p.messages[0].content.as_text(), Some("Hello, you!"), "{v}");
    let c = client
        .complete(json!({"type": "ref/prompt", "name": "greet"}), "who", "al")
        .await
        .unwrap_or_else(|e| panic!("{v} complete: {e}"));
    assert_eq!(c.values, vec!["alice".to_owned(), "alan".to_owned()], "{v}");

    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let opts = snodo_client::CallOptions::default().on_progress(move |p| {
        if let Ok(mut g) = s.lock() {
            g.push(p.progress);
        }
    });
    let r = client
        .call_tool_with("progress", json!({}), &opts)
        .await
        .unwrap_or_else(|e| panic!("{v} progress: {e}"));
    assert_eq!(r.text(), "finished");
    assert_eq!(
        *seen.lock().unwrap_or_else(|e| panic!("{e}")),
        vec![1.0, 2.0],
        "{v}: progress"
    );

    for (tool, want) in [
        ("ask_name", "Hello, Ada!"),
        ("sample", "model: Paris"),
        ("roots", "2 root(s)"),
    ] {
        if tool == "ask_name" && v == "2025-03-26" {
            continue; // 2025-03-26 has no elicitation
        }
        let r = client
            .call_tool(tool, json!({}))
            .await
            .unwrap_or_else(|e| panic!("{v} {tool}: {e}"));
        assert_eq!(r.text(), want, "{v} {tool}");
    }
}
