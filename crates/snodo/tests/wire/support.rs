//! Wire-test support: a real server on an ephemeral loopback port, a raw HTTP/1.1
//! client that sends literal requests, and JSON Schema validation of every body
//! against the official schema of the revision it was sent in.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, OnceLock};
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
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::oneshot;

pub const ALL: [&Dialect; 3] = [&V2026_07_28, &V2025_11_25, &V2025_06_18];
pub const MODERN: [&Dialect; 1] = [&V2026_07_28];

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
        send(self.addr, &raw.replace("{host}", &self.addr.to_string())).await
    }

    /// POSTs `body` to /mcp with the standard media headers plus `headers`.
    pub async fn post(&self, headers: &[(&str, &str)], body: &str) -> Reply {
        let mut req = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n",
            self.addr
        );
        for (k, v) in headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        req.push_str(&format!(
            "Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        ));
        send(self.addr, &req).await
    }

    /// A 2026-07-28 request with correct headers and `_meta` (capabilities `caps`).
    pub async fn modern(&self, id: Value, method: &str, mut params: Value, caps: Value) -> Reply {
        let meta = params
            .as_object_mut()
            .unwrap()
            .entry("_meta")
            .or_insert_with(|| json!({}));
        meta["io.modelcontextprotocol/protocolVersion"] = json!("2026-07-28");
        meta["io.modelcontextprotocol/clientCapabilities"] = caps;
        let name = params
            .get("name")
            .or_else(|| params.get("uri"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let body = json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}).to_string();
        let mut headers = vec![
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", method),
        ];
        if let Some(n) = &name {
            if matches!(method, "tools/call" | "prompts/get" | "resources/read") {
                headers.push(("Mcp-Name", n.as_str()));
            }
        }
        self.post(&headers, &body).await
    }

    /// An initialize-era request with the version header.
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
}

/// An open SSE response read frame by frame.
pub struct Stream {
    pub status: u16,
    pub head: String,
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Stream {
    /// The next `data:` event (skipping comments), or `None` after `wait`.
    pub async fn next(&mut self, wait: Duration) -> Option<Value> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let text = String::from_utf8_lossy(&self.buf).into_owned();
            if let Some(end) = text.find("\n\n") {
                let frame = text[..end].to_owned();
                let consumed = frame.len() + 2;
                // Drop the frame and any chunk-size lines around it.
                self.buf.drain(..consumed);
                if let Some(data) = frame.lines().find_map(|l| l.strip_prefix("data: ")) {
                    return Some(serde_json::from_str(data).unwrap());
                }
                continue;
            }
            let mut chunk = [0u8; 4096];
            let n = tokio::time::timeout_at(deadline, self.stream.read(&mut chunk))
                .await
                .ok()?
                .ok()?;
            if n == 0 {
                return None;
            }
            // Remove chunked-encoding size lines (hex digits alone on a line).
            let piece = String::from_utf8_lossy(&chunk[..n]).into_owned();
            let cleaned: String = piece
                .split("\r\n")
                .filter(|l| {
                    !(l.len() <= 6 && !l.is_empty() && l.bytes().all(|b| b.is_ascii_hexdigit()))
                })
                .collect::<Vec<_>>()
                .join("");
            self.buf.extend_from_slice(cleaned.as_bytes());
        }
    }
}

impl TestServer {
    /// POSTs and keeps the response open as a stream.
    pub async fn open(&self, headers: &[(&str, &str)], body: &str) -> Stream {
        let mut req = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n",
            self.addr
        );
        for (k, v) in headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        req.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
        let mut stream = TcpStream::connect(self.addr).await.unwrap();
        stream.write_all(req.as_bytes()).await.unwrap();
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        let split = loop {
            let n = stream.read(&mut chunk).await.unwrap();
            assert!(n > 0, "connection closed before the head");
            buf.extend_from_slice(&chunk[..n]);
            if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break p;
            }
        };
        let head = String::from_utf8_lossy(&buf[..split]).into_owned();
        let status = head.split(' ').nth(1).unwrap().parse().unwrap();
        let rest = String::from_utf8_lossy(&buf[split + 4..]).into_owned();
        let cleaned: String = rest
            .split("\r\n")
            .filter(|l| {
                !(l.len() <= 6 && !l.is_empty() && l.bytes().all(|b| b.is_ascii_hexdigit()))
            })
            .collect::<Vec<_>>()
            .join("");
        Stream {
            status,
            head,
            stream,
            buf: cleaned.into_bytes(),
        }
    }
}

/// A parsed HTTP response.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("body is not JSON ({e}): {}", self.text()))
    }

    /// The `data:` payloads of an SSE body, parsed.
    pub fn events(&self) -> Vec<Value> {
        assert_eq!(
            self.header("content-type"),
            Some("text/event-stream"),
            "not SSE: {}",
            self.text()
        );
        self.text()
            .split("\n\n")
            .filter_map(|frame| frame.lines().find_map(|l| l.strip_prefix("data: ")))
            .map(|d| serde_json::from_str(d).unwrap())
            .collect()
    }

    /// The final JSON-RPC message: the JSON body, or the last SSE event.
    pub fn message(&self) -> Value {
        if self.header("content-type") == Some("text/event-stream") {
            self.events()
                .pop()
                .expect("an SSE response carries a final message")
        } else {
            self.json()
        }
    }

    pub fn result(&self) -> Value {
        let m = self.message();
        assert!(m.get("error").is_none(), "expected a result, got {m}");
        m["result"].clone()
    }

    pub fn error_code(&self) -> i64 {
        self.message()["error"]["code"]
            .as_i64()
            .unwrap_or_else(|| panic!("expected an error: {}", self.text()))
    }
}

async fn send(addr: SocketAddr, raw: &str) -> Reply {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(raw.as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), stream.read_to_end(&mut buf))
        .await
        .expect("the server answers within 20 s")
        .unwrap();
    parse(&buf)
}

fn parse(buf: &[u8]) -> Reply {
    let split = buf
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a complete response head");
    let head = String::from_utf8_lossy(&buf[..split]).into_owned();
    let mut lines = head.split("\r\n");
    let status: u16 = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let rest = &buf[split + 4..];
    let chunked = headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked {
        dechunk(rest)
    } else {
        rest.to_vec()
    };
    Reply {
        status,
        headers,
        body,
    }
}

fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(eol) = data.windows(2).position(|w| w == b"\r\n") {
        let size =
            usize::from_str_radix(std::str::from_utf8(&data[..eol]).unwrap().trim(), 16).unwrap();
        data = &data[eol + 2..];
        if size == 0 {
            break;
        }
        out.extend_from_slice(&data[..size]);
        data = &data[size + 2..];
    }
    out
}

// ---- schema validation -----------------------------------------------------------

type Cache = Mutex<HashMap<(String, String), Arc<jsonschema::Validator>>>;

fn validator(revision: &str, definition: &str) -> Arc<jsonschema::Validator> {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let key = (revision.to_owned(), definition.to_owned());
    if let Some(v) = cache.lock().unwrap().get(&key) {
        return Arc::clone(v);
    }
    let path = format!(
        "{}/tests/schema/{revision}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let defs = if doc.get("$defs").is_some() {
        "$defs"
    } else {
        "definitions"
    };
    assert!(
        doc[defs].get(definition).is_some(),
        "{revision} schema has no {definition}"
    );
    doc["$ref"] = json!(format!("#/{defs}/{definition}"));
    let v = Arc::new(
        jsonschema::options()
            .should_validate_formats(true)
            .build(&doc)
            .unwrap(),
    );
    cache.lock().unwrap().insert(key, Arc::clone(&v));
    v
}

/// Asserts that `instance` validates against `definition` of `revision`'s schema.
pub fn assert_schema(revision: &str, definition: &str, instance: &Value) {
    let v = validator(revision, definition);
    let errors: Vec<String> = v
        .iter_errors(instance)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{revision} {definition} violated: {errors:?}\n{instance}"
    );
}

/// The result definition of a method.
pub fn result_definition(method: &str) -> &'static str {
    match method {
        "initialize" => "InitializeResult",
        "server/discover" => "DiscoverResult",
        "tools/list" => "ListToolsResult",
        "tools/call" => "CallToolResult",
        "prompts/list" => "ListPromptsResult",
        "prompts/get" => "GetPromptResult",
        "resources/list" => "ListResourcesResult",
        "resources/templates/list" => "ListResourceTemplatesResult",
        "resources/read" => "ReadResourceResult",
        "completion/complete" => "CompleteResult",
        _ => "EmptyResult",
    }
}

/// Validates a reply's final message (result or error) and every streamed notification.
pub fn assert_valid(revision: &str, method: &str, reply: &Reply) {
    if reply.header("content-type") == Some("text/event-stream") {
        let events = reply.events();
        for n in &events[..events.len() - 1] {
            let def = match n["method"].as_str() {
                Some("notifications/progress") => "ProgressNotification",
                Some("notifications/message") => "LoggingMessageNotification",
                other => panic!("unexpected streamed message {other:?}"),
            };
            assert_schema(revision, def, n);
        }
    }
    let m = reply.message();
    if m.get("error").is_some() {
        let def = match revision {
            "2025-06-18" | "2025-03-26" => "JSONRPCError",
            _ => "JSONRPCErrorResponse",
        };
        assert_schema(revision, def, &m);
    } else if m["result"]["resultType"] == "input_required" {
        assert_schema(revision, "InputRequiredResult", &m["result"]);
    } else {
        assert_schema(revision, result_definition(method), &m["result"]);
    }
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
