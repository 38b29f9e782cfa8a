//! Wire-test support of the snodo crate: a real server on an ephemeral loopback port
//! and the fixture runtime. The raw HTTP/1.1 client, the requests per revision, the
//! error assertions and the schema validation are the workspace's one test-support
//! layer, `snodo-testkit`, re-exported here.

use std::net::SocketAddr;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use snodo::http::{HttpConfig, Server};
use snodo::protocol::{Dialect, LogLevel, V2025_06_18, V2025_11_25, V2026_07_28};
use snodo::{
    Content, Json, NoArguments, Prompt, PromptMessage, PromptResult, Resource, ResourceContents,
    ResourceTemplate, Runtime, RuntimeBuilder, Tool, ToolResult,
};
use tokio::sync::oneshot;

pub use snodo_testkit::errors::{assert_error, assert_http_error, assert_refused, assert_says};
pub use snodo_testkit::schema::{
    assert_notification, assert_response, assert_schema, assert_valid, result_definition,
};
pub use snodo_testkit::{
    INITIALIZE_ERA, R2025_03_26, R2025_06_18, R2025_11_25, R2026_07_28, Reply, Request, Revision,
    Stream,
};

pub const ALL: [&Dialect; 3] = [&V2026_07_28, &V2025_11_25, &V2025_06_18];
pub const MODERN: [&Dialect; 1] = [&V2026_07_28];

/// Every tool of the fixture, in registration order.
pub const ALL_TOOLS: [&str; 10] = [
    "echo",
    "structured",
    "failing",
    "array_output",
    "panics",
    "progress",
    "regional",
    "wait",
    "caller",
    "logs",
];

/// A server running in the background of the test; stopped on drop.
pub struct TestServer {
    pub addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
    }
}

impl TestServer {
    pub async fn start(runtime: Runtime) -> Self {
        Self::start_with(runtime, HttpConfig::default()).await
    }

    pub async fn start_with(runtime: Runtime, config: HttpConfig) -> Self {
        let server = Server::bind(runtime, "127.0.0.1:0".parse().unwrap(), config)
            .await
            .unwrap();
        let addr = server.local_addr().unwrap();
        let (tx, rx) = oneshot::channel::<()>();
        tokio::spawn(
            server
                .drain_timeout(Duration::from_secs(2))
                .run_until(async {
                    let _ = rx.await;
                }),
        );
        Self {
            addr,
            stop: Some(tx),
        }
    }

    /// Asks the server to shut down gracefully (stop accepting, drain, then cancel).
    pub fn shutdown(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
    }

    /// Sends `raw` (a literal HTTP/1.1 request; `{host}` is replaced by the address).
    pub async fn raw(&self, raw: &str) -> Reply {
        snodo_testkit::http::send(self.addr, &raw.replace("{host}", &self.addr.to_string())).await
    }

    /// POSTs `body` to /mcp with the standard media headers plus `headers`.
    pub async fn post(&self, headers: &[(&str, &str)], body: &str) -> Reply {
        snodo_testkit::http::post(self.addr, headers, body).await
    }

    /// Sends `request` (its revision's headers and `_meta`).
    pub async fn send(&self, request: &Request) -> Reply {
        request.post(self.addr).await
    }

    /// A 2026-07-28 request with correct headers and `_meta` (capabilities `caps`).
    pub async fn modern(&self, id: Value, method: &str, params: Value, caps: Value) -> Reply {
        self.send(
            &R2026_07_28
                .request(method)
                .id(id)
                .params(params)
                .capabilities(caps),
        )
        .await
    }

    /// An initialize-era request with the version header (any version string).
    pub async fn legacy(
        &self,
        version: &str,
        id: Value,
        method: &str,
        params: Option<Value>,
    ) -> Reply {
        let mut body = json!({"jsonrpc":"2.0","id":id,"method":method});
        if let Some(p) = params {
            body["params"] = p;
        }
        self.post(&[("MCP-Protocol-Version", version)], &body.to_string())
            .await
    }

    /// POSTs and keeps the response open as a stream.
    pub async fn open(&self, headers: &[(&str, &str)], body: &str) -> Stream {
        Stream::open(self.addr, headers, body).await
    }
}

// ---- results per revision ------------------------------------------------------------

/// Asserts that `result` carries none of the 2026 result envelope.
pub fn assert_no_envelope(result: &Value, what: &str) {
    for key in ["resultType", "ttlMs", "cacheScope"] {
        assert!(result.get(key).is_none(), "{what}: {key} in {result}");
    }
    assert!(
        result
            .get("_meta")
            .and_then(|m| m.get("io.modelcontextprotocol/serverInfo"))
            .is_none(),
        "{what}: _meta serverInfo in {result}"
    );
}

/// Asserts the result envelope of `revision` on `result` and returns the result without
/// it: on 2026-07-28 `resultType` "complete" and the server's `_meta` serverInfo are
/// there (and are dropped with the cache hints), before it none of them is.
pub fn without_envelope(revision: Revision, result: &Value) -> Value {
    let what = format!("{revision} result");
    if !revision.is_stateless() {
        assert_no_envelope(result, &what);
        return result.clone();
    }
    assert_eq!(result["resultType"], "complete", "{what}: {result}");
    assert!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"].is_object(),
        "{what}: no serverInfo in {result}"
    );
    let mut plain = result.clone();
    let o = plain.as_object_mut().unwrap();
    for key in ["resultType", "ttlMs", "cacheScope"] {
        o.remove(key);
    }
    let meta = o["_meta"].as_object_mut().unwrap();
    meta.remove("io.modelcontextprotocol/serverInfo");
    if meta.is_empty() {
        o.remove("_meta");
    }
    plain
}

/// Asserts a success answered in plain JSON in `revision`, valid for its schema, without
/// a session id; returns the result without its envelope ([`without_envelope`]).
pub fn assert_ok(r: &Reply, revision: Revision, method: &str) -> Value {
    let what = format!("{revision} {method}");
    assert_eq!(r.status, 200, "{what}: {}", r.text());
    assert_eq!(r.header("content-type"), Some("application/json"), "{what}");
    assert!(r.header("mcp-session-id").is_none(), "{what}");
    assert_valid(revision.version(), method, r);
    without_envelope(revision, &r.result())
}

// ---- a test runtime ----------------------------------------------------------------

#[derive(Deserialize, JsonSchema)]
pub struct EchoArgs {
    /// Text to echo.
    pub text: String,
}

#[derive(Deserialize, JsonSchema)]
pub struct WaitArgs {
    /// A name the test uses to observe this call.
    pub tag: String,
    /// How long to work, in milliseconds.
    pub ms: u64,
}

/// Tags of `wait` calls whose handler saw its cancellation.
pub fn cancelled_tags() -> &'static Mutex<Vec<String>> {
    static TAGS: OnceLock<Mutex<Vec<String>>> = OnceLock::new();
    TAGS.get_or_init(Default::default)
}

/// Polls until `tag` was cancelled (up to 3 s).
pub async fn saw_cancellation(tag: &str) -> bool {
    for _ in 0..60 {
        if cancelled_tags().lock().unwrap().iter().any(|t| t == tag) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

#[derive(Deserialize, JsonSchema)]
pub struct StructuredArgs {
    /// Value to return as structured content.
    pub value: Value,
}

/// Tools, prompts and resources exercising every path, on `protocols`.
pub fn builder(protocols: &[&'static Dialect]) -> RuntimeBuilder {
    Runtime::builder("wire-fixture", "1.0.0")
        .title("Wire fixture")
        .description("Runtime used by the wire tests")
        .website_url("https://example.com/wire")
        .icon(
            snodo::Icon::new("https://example.com/icon.png")
                .mime_type("image/png")
                .size("48x48"),
        )
        .instructions("Use the fixture.")
        .protocols(protocols.iter().copied())
        .logging()
        .tool(
            Tool::new("echo")
                .description("Echoes text")
                .icon(snodo::Icon::new("https://example.com/echo.png"))
                .handler(|a: EchoArgs, _ctx| async move { ToolResult::text(a.text) }),
        )
        .tool(
            Tool::new("structured")
                .description("Returns its value as structured content")
                .handler(|a: StructuredArgs, _ctx| async move { Json(a.value) }),
        )
        .tool(Tool::new("failing").description("Always fails").handler(
            |_: NoArguments, _ctx| async { ToolResult::error("Actionable domain failure") },
        ))
        .tool(
            Tool::new("array_output")
                .description("Has an array output schema")
                .output_schema(json!({"type":"array","items":{"type":"string"}}))
                .handler(|_: NoArguments, _ctx| async { Json(json!(["a", "b"])) }),
        )
        .tool(
            Tool::new("panics")
                .description("Panics")
                .handler(|_: NoArguments, _ctx| async {
                    if true {
                        panic!("boom");
                    }
                    ToolResult::text("unreachable")
                }),
        )
        .tool(
            Tool::new("progress")
                .description("Reports progress 0/50/100")
                .handler(|_: NoArguments, ctx: snodo::RequestContext| async move {
                    for p in [0.0, 50.0, 100.0] {
                        ctx.progress(p, Some(100.0), None).await;
                    }
                    ToolResult::text("done")
                }),
        )
        .tool(
            Tool::new("regional")
                .description("Mirrors region and count into Mcp-Param headers")
                .input_schema(json!({"type":"object","properties":{
                    "region":{"type":"string","x-mcp-header":"Region"},
                    "count":{"type":"integer","x-mcp-header":"Count"}}}))
                .raw_handler(|args, _ctx| async move { ToolResult::text(args.to_string()) }),
        )
        .tool(
            Tool::new("wait")
                .description("Works for ms milliseconds, watching cancellation")
                .handler(|a: WaitArgs, ctx: snodo::RequestContext| async move {
                    tokio::select! {
                        () = tokio::time::sleep(Duration::from_millis(a.ms)) => ToolResult::text(format!("waited {}", a.ms)),
                        () = ctx.cancellation().cancelled() => {
                            cancelled_tags().lock().unwrap().push(a.tag);
                            ToolResult::text("cancelled")
                        }
                    }
                }),
        )
        .tool(Tool::new("caller").description("Names the caller").handler(|_: NoArguments, ctx: snodo::RequestContext| async move {
            ToolResult::text(ctx.principal().map_or("anonymous".to_owned(), |p| p.id().to_owned()))
        }))
        .tool(
            Tool::new("logs")
                .description("Logs at every level")
                .handler(|_: NoArguments, ctx: snodo::RequestContext| async move {
                    for level in [
                        LogLevel::Debug,
                        LogLevel::Info,
                        LogLevel::Warning,
                        LogLevel::Error,
                    ] {
                        ctx.log(level, Some("wire"), format!("{level:?}")).await;
                    }
                    ToolResult::text("logged")
                }),
        )
        .prompt(
            Prompt::new("greet")
                .description("Greets someone")
                .icon(snodo::Icon::new("https://example.com/p.png"))
                .argument("name", "Who", true)
                .handler(|args, _ctx| async move {
                    let name = args.get("name").cloned().unwrap_or_default();
                    Ok(PromptResult::new(vec![PromptMessage::user(Content::text(
                        format!("Hello, {name}!"),
                    ))]))
                })
                .completer(|req, _ctx| async move {
                    Ok(["alice", "albert", "bob"]
                        .iter()
                        .filter(|n| n.starts_with(&req.value))
                        .map(|n| (*n).to_owned())
                        .collect())
                }),
        )
        .resource(
            Resource::new("test://static/readme", "readme")
                .description("Readme")
                .static_text("text/plain", "# Static resource\n"),
        )
        .resource(
            Resource::new("test://static/blob", "blob")
                .static_blob("application/octet-stream", vec![0u8, 1, 2]),
        )
        .resource_template(
            ResourceTemplate::new("test://packages/{name}", "package")
                .description("A package")
                .mime_type("application/json")
                .reader(|req, _ctx| async move {
                    let name = req.variables.get("name").cloned().unwrap_or_default();
                    if name == "missing" {
                        return Err(snodo::HandlerError::NotFound);
                    }
                    Ok(vec![
                        ResourceContents::text(req.uri, json!({"name": name}).to_string())
                            .mime_type("application/json"),
                    ])
                }),
        )
}

pub async fn server(protocols: &[&'static Dialect]) -> TestServer {
    TestServer::start(builder(protocols).build().unwrap()).await
}

/// `builder` plus tools and a prompt that ask the client for input.
pub fn asking(protocols: &[&'static Dialect]) -> RuntimeBuilder {
    builder(protocols)
        .tool(Tool::new("ask_name").description("Asks the user's name").handler(|_: NoArguments, ctx: snodo::RequestContext| async move {
            let answer = ctx
                .ask("user_name", snodo::InputRequest::elicit("Your name?", json!({"type":"object","properties":{"name":{"type":"string"}},"required":["name"]})))
                .await?;
            Ok::<_, snodo::HandlerError>(ToolResult::text(format!("Hello, {}!", answer["content"]["name"].as_str().unwrap_or("?"))))
        }))
        .tool(Tool::new("ask_twice").description("Needs three rounds").handler(|_: NoArguments, ctx: snodo::RequestContext| async move {
            let first = ctx.ask("first", snodo::InputRequest::elicit("First?", json!({"type":"object"}))).await?;
            let second = ctx.ask("second", snodo::InputRequest::elicit("Second?", json!({"type":"object"}))).await?;
            Ok::<_, snodo::HandlerError>(ToolResult::text(format!("{} {}", first["content"], second["content"])))
        }))
        .tool(Tool::new("ask_all").description("Asks three things at once").handler(|_: NoArguments, ctx: snodo::RequestContext| async move {
            let answers = ctx
                .ask_all([
                    ("name".to_owned(), snodo::InputRequest::elicit("Name?", json!({"type":"object"}))),
                    ("sample".to_owned(), snodo::InputRequest::sample("Hi?", 10)),
                    ("roots".to_owned(), snodo::InputRequest::list_roots()),
                ])
                .await?;
            Ok::<_, snodo::HandlerError>(ToolResult::text(format!("{} answers", answers.len())))
        }))
        .prompt(Prompt::new("ask_prompt").description("Asks before answering").handler(|_, ctx| async move {
            let a = ctx.ask("topic", snodo::InputRequest::elicit("Topic?", json!({"type":"object"}))).await?;
            Ok(PromptResult::new(vec![PromptMessage::user(Content::text(format!("About {}", a["content"]["topic"])))]))
        }))
}
