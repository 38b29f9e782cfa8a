//! `snodo serve`: a useful demo server that exposes one folder read-only.
//!
//! - every file is a resource addressed by the template `file://<root>/{+path}` and
//!   listed (paginated) by `resources/list`;
//! - `snodo://demo/about` describes the server;
//! - the `search` tool finds text across files and returns structured matches, held to
//!   its own limits (a walk of a large folder is the expensive call here): 10 s, 4 at
//!   once, 30 calls per 10 s per caller;
//! - the `index_folder` tool (a task for clients with the tasks extension) walks the
//!   folder, reports its progress and returns totals per extension and the largest files;
//!   it reads every file whole, so it is held tighter: 60 s, 2 at once (a task holds its
//!   slot until it ends), 6 calls per 60 s per caller;
//! - both tools declare every hint: read-only, not destructive, idempotent, closed world;
//! - the `review_file` prompt embeds a file and asks for a review;
//! - file paths complete in the prompt argument and in the template variable.

mod errors;
mod fs;
mod index;
mod search;

use std::path::Path;
use std::time::Duration;

use serde_json::json;
use snodo::protocol::Dialect;
use snodo::{
    CacheHint, CacheScope, CompletionRequest, Content, HandlerError, ListRequest, Prompt,
    PromptArguments, PromptMessage, PromptResult, RateLimit, ReadRequest, RequestContext, Resource,
    ResourceContents, ResourceInfo, ResourceTemplate, RpcError, Runtime, RuntimeBuilder, State,
    Tool,
};

use self::errors::handler_error;
use self::fs::{Refusal, Root, mime_type};
use self::search::{SearchArgs, SearchOutput};

fn read(root: &Root, relative: &str, uri: String) -> Result<Vec<ResourceContents>, HandlerError> {
    let path = root
        .resolve(relative)
        .map_err(|r| handler_error(r, relative))?;
    let bytes = std::fs::read(&path).map_err(|e| handler_error(Refusal::from_io(&e), relative))?;
    let mime = mime_type(relative);
    Ok(vec![match String::from_utf8(bytes) {
        Ok(text) => {
            ResourceContents::text(uri, text).mime_type(if mime == "application/octet-stream" {
                "text/plain"
            } else {
                mime
            })
        }
        Err(e) => ResourceContents::blob(uri, e.as_bytes()).mime_type(mime),
    }])
}

fn complete_path(root: &Root, req: &CompletionRequest) -> Result<Vec<String>, HandlerError> {
    let files = root.files().map_err(|r| handler_error(r, "the folder"))?;
    Ok(files
        .into_iter()
        .filter(|f| f.starts_with(&req.value))
        .collect())
}

fn list(root: &Root) -> Result<Vec<ResourceInfo>, HandlerError> {
    let files = root.files().map_err(|r| handler_error(r, "the folder"))?;
    Ok(files
        .into_iter()
        .map(|f| ResourceInfo::new(root.uri(&f), f.clone()).mime_type(mime_type(&f)))
        .collect())
}

/// Builds the demo runtime over `dir`.
#[cfg(test)]
pub(crate) fn runtime(
    dir: &Path,
    protocols: Vec<&'static Dialect>,
    state_key: Option<Vec<u8>>,
) -> Result<Runtime, String> {
    builder(dir, protocols, state_key)?
        .build()
        .map_err(|e| e.to_string())
}

/// The demo before it is built (e.g. to add an authorizer).
pub(crate) fn builder(
    dir: &Path,
    protocols: Vec<&'static Dialect>,
    state_key: Option<Vec<u8>>,
) -> Result<RuntimeBuilder, String> {
    let root = Root::new(dir).map_err(|e| format!("cannot serve {}: {e}", dir.display()))?;
    let base = root.base_uri();

    // Every handler takes the root as its state (`with_state` below): no clones here.
    let template =
        ResourceTemplate::new(format!("{base}/{{+path}}"), "file")
            .title("Files")
            .description(format!("Files under {} (read-only)", root.dir().display()))
            .on_read(|State(root): State<Root>, req: ReadRequest| async move {
                let rel = req.variables.get("path").cloned().unwrap_or_default();
                tokio::task::spawn_blocking(move || read(&root, &rel, req.uri))
                    .await
                    .map_err(|_| HandlerError::Failed("read failed".into()))?
            })
            .on_list(|State(root): State<Root>, _: ListRequest| async move {
                let files = tokio::task::spawn_blocking(move || list(&root));
                files
                    .await
                    .map_err(|_| HandlerError::Failed("listing failed".into()))?
            })
            .on_complete(
                |State(root): State<Root>, req: CompletionRequest| async move {
                    complete_path(&root, &req)
                },
            );

    let about = Resource::new("snodo://demo/about", "about")
        .title("About this server")
        .static_text(
            "application/json",
            json!({
                "server": "snodo demo",
                "root": root.dir().display().to_string(),
                "template": format!("{base}/{{+path}}"),
                "tools": ["search", "index_folder"],
                "prompts": ["review_file"],
            })
            .to_string(),
        );

    let search_tool = Tool::new("search")
        .title("Search files")
        .description("Case-insensitive text search across the files of the served folder. Returns matching lines with their file path and line number.")
        .read_only()
        .destructive(false)
        .idempotent(true)
        .open_world(false)
        .timeout(Duration::from_secs(10))
        .max_concurrent(4)
        .rate_limit(RateLimit::per_principal(30, Duration::from_secs(10)))
        .output::<SearchOutput>()
        .handler(|State(root): State<Root>, args: SearchArgs, ctx: RequestContext| search::run(root, args, ctx));

    let index_tool = Tool::new("index_folder")
        .title("Index the folder")
        .description("Walks the served folder and summarises it: files, bytes and lines per extension, the largest files. Runs as a task for clients that support the tasks extension (progress in the task's status message).")
        .read_only()
        .destructive(false)
        .idempotent(true)
        .open_world(false)
        .timeout(Duration::from_secs(60))
        .max_concurrent(2)
        .rate_limit(RateLimit::per_principal(6, Duration::from_secs(60)))
        .task(snodo::tasks::TaskSupport::Optional)
        .output::<index::IndexOutput>()
        .handler(|State(root): State<Root>, args: index::IndexArgs, ctx: RequestContext| index::index(root, args, ctx));

    let review = Prompt::new("review_file")
        .title("Review a file")
        .description("Embeds a file from the served folder and asks for a code review")
        .argument("path", "File path relative to the served folder", true)
        .on_get(|State(root): State<Root>, args: PromptArguments| async move {
            let rel = args.get("path").cloned().unwrap_or_default();
            let uri = root.uri(&rel);
            let contents = tokio::task::spawn_blocking(move || read(&root, &rel, uri))
                .await
                .map_err(|_| HandlerError::new("read failed"))?;
            let contents = match contents {
                Ok(mut c) if !c.is_empty() => c.remove(0),
                Ok(_) | Err(HandlerError::NotFound) => {
                    let path = args.get("path").map_or("", String::as_str);
                    return Err(RpcError::invalid_params(format!("No such file: {path}")).into());
                }
                Err(e) => return Err(e),
            };
            Ok(PromptResult::new(vec![
                PromptMessage::user(Content::resource(contents)),
                PromptMessage::user(Content::text(
                    "Please review the file above: point out bugs, unclear code and missing tests, most important first.",
                )),
            ])
            .description("Code review of one file"))
        })
        .on_complete(|State(root): State<Root>, req: CompletionRequest| async move {
            complete_path(&root, &req)
        });

    let mut builder = Runtime::builder("snodo-demo", env!("CARGO_PKG_VERSION"));
    if let Some(key) = state_key {
        builder = builder.request_state_key(key);
    }
    Ok(builder
        .title("snodo folder server")
        .description("Serves one folder read-only: files as resources, text search, review prompts")
        .instructions("Use resources/list to browse files, the search tool to find text, and the review_file prompt to review a file.")
        .protocols(protocols)
        .page_size(50)
        .list_cache(CacheHint::new(5_000, CacheScope::Private))
        .read_cache(CacheHint::new(1_000, CacheScope::Private))
        .discover_cache(CacheHint::new(60_000, CacheScope::Public))
        .tool(search_tool)
        .tool(index_tool)
        .resource(about)
        .resource_template(template)
        .prompt(review)
        .with_state(root)
        // Every SKILL.md under the root, as `skill://` resources (Skills extension).
        .skills_dir(dir))
}

#[cfg(test)]
mod tests {
    use super::*;
    use snodo::http::McpService;
    use snodo::protocol::V2026_07_28;

    async fn read(service: &McpService, uri: &str) -> serde_json::Value {
        let body = json!({"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":uri,
            "_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}});
        let name = format!(
            "=?base64?{}?=",
            base64::Engine::encode(&base64::engine::general_purpose::STANDARD, uri)
        );
        let req = http::Request::post("/mcp")
            .header("host", "localhost")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "resources/read")
            .header("mcp-name", name)
            .body(http_body_util::Full::new(bytes::Bytes::from(
                body.to_string(),
            )))
            .unwrap_or_default();
        let resp = service.handle(req).await;
        let bytes = http_body_util::BodyExt::collect(resp.into_body())
            .await
            .map(|c| c.to_bytes())
            .unwrap_or_default();
        serde_json::from_slice(&bytes).unwrap_or_default()
    }

    #[test]
    fn refuses_everything_outside_the_root() {
        crate::logs::block_on_alone(async {
            let dir = std::env::temp_dir().join(format!("snodo-demo-test-{}", std::process::id()));
            let _ = std::fs::create_dir_all(dir.join("inner"));
            let _ = std::fs::write(dir.join("inner/ok.txt"), "fine");
            #[cfg(unix)]
            let _ = std::os::unix::fs::symlink("/etc", dir.join("inner/escape"));
            let runtime = runtime(&dir.join("inner"), vec![&V2026_07_28], None)
                .unwrap_or_else(|e| panic!("{e}"));
            let service = McpService::new(runtime);
            let base = Root::new(&dir.join("inner"))
                .unwrap_or_else(|e| panic!("{e}"))
                .base_uri();
            let ok = read(&service, &format!("{base}/ok.txt")).await;
            assert_eq!(ok["result"]["contents"][0]["text"], "fine");
            for tricky in [
                "../ok.txt",
                "%2e%2e/%2e%2e/etc/passwd",
                "..%2fetc%2fpasswd",
                "escape/hostname",
                "ok.txt%00",
                "%ff%fe",
                "sub\\..\\ok.txt",
                "/etc/passwd",
            ] {
                let r = read(&service, &format!("{base}/{tricky}")).await;
                assert_eq!(r["error"]["code"], -32602, "{tricky}: {r}");
                assert_eq!(r["error"]["message"], "Resource not found", "{tricky}");
            }
        });
    }

    async fn post(
        service: &McpService,
        method: &str,
        name: &str,
        params: serde_json::Value,
    ) -> serde_json::Value {
        let mut params = params;
        params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}});
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let req = http::Request::post("/mcp")
            .header("host", "localhost")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", method)
            .header("mcp-name", name)
            .body(http_body_util::Full::new(bytes::Bytes::from(
                body.to_string(),
            )))
            .unwrap_or_default();
        let resp = service.handle(req).await;
        let bytes = http_body_util::BodyExt::collect(resp.into_body())
            .await
            .map(|c| c.to_bytes())
            .unwrap_or_default();
        serde_json::from_slice(&bytes).unwrap_or_default()
    }

    #[test]
    fn index_folder_runs_as_a_task() {
        crate::logs::block_on_alone(async {
            let dir = std::env::temp_dir().join(format!("snodo-index-test-{}", std::process::id()));
            let _ = std::fs::create_dir_all(dir.join("src"));
            let _ = std::fs::write(dir.join("src/a.rs"), "fn a() {}\nfn b() {}\n");
            let _ = std::fs::write(dir.join("notes.md"), "# notes\n");
            let runtime = runtime(&dir, vec![&V2026_07_28], None).unwrap_or_else(|e| panic!("{e}"));
            let service = McpService::new(runtime);
            let created = post(
                &service,
                "tools/call",
                "index_folder",
                json!({"name": "index_folder", "arguments": {}}),
            )
            .await;
            assert_eq!(created["result"]["resultType"], "task", "{created}");
            let id = created["result"]["taskId"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let mut task = json!(null);
            for _ in 0..200 {
                task = post(&service, "tasks/get", &id, json!({"taskId": id})).await;
                if task["result"]["status"] == "completed" {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
            let summary = &task["result"]["result"]["structuredContent"];
            assert_eq!(summary["files"], 2, "{task}");
            assert_eq!(summary["lines"], 3);
            assert_eq!(summary["by_extension"]["rs"]["lines"], 2);
            assert_eq!(summary["largest"][0]["path"], "src/a.rs");
            let _ = std::fs::remove_dir_all(&dir);
        });
    }
}
