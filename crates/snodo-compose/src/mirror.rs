//! A source's listing turned into front components: each definition as the
//! transforms show it, each handler forwarding to the source with the backend's name
//! or URI, and the answer read back into snodo's model (resource URIs mapped to the
//! front's).

use std::sync::Arc;

use serde_json::{Map, Value, json};
use snodo::tasks::TaskSupport;
use snodo::{
    Annotations, CompletionRequest, Content, HandlerError, Prompt, PromptArgument, PromptArguments,
    PromptResult, ReadRequest, RequestContext, Resource, ResourceContents, ResourceTemplate,
    RpcError, Tool, ToolResult,
};
use snodo_client::Answer;
use tokio::sync::Notify;

use crate::source::{Listing, Source, SourceError};
use crate::transform::Transforms;

/// What every handler of one mount shares.
pub(crate) struct Forward {
    pub(crate) source: Arc<dyn Source>,
    pub(crate) transforms: Transforms,
    /// Wakes the mount when a call found the backend down.
    pub(crate) poke: Arc<Notify>,
    /// The state of each backend tool's limits (by backend name), kept across the
    /// mount's listings: a re-list must not start rate budgets and concurrency slots
    /// over.
    pub(crate) limits: std::sync::Mutex<std::collections::HashMap<String, snodo::ToolLimits>>,
}

/// One front component and its front name (URI for resources and templates).
pub(crate) enum Item {
    Tool(String, Tool),
    Prompt(String, Prompt),
    Resource(String, Resource),
    Template(String, ResourceTemplate),
}

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

impl Forward {
    /// `tool` (the backend's `backend`, limits applied) with the limits' state of its
    /// earlier listings.
    fn keep_limits(&self, backend: &str, tool: Tool) -> Tool {
        let Ok(mut kept) = self.limits.lock() else {
            return tool;
        };
        match kept.get(backend) {
            Some(l) => tool.share_limits(l),
            None => {
                if let Some(l) = tool.limits() {
                    kept.insert(backend.to_owned(), l);
                }
                tool
            }
        }
    }

    /// Forgets the limits' state of the tools `listing` no longer has: the map holds
    /// at most the tools of the latest listing, however many names a backend goes
    /// through (a tool that comes back starts its budget again).
    fn forget_limits(&self, listing: &Listing) {
        let Ok(mut kept) = self.limits.lock() else {
            return;
        };
        if kept.is_empty() {
            return;
        }
        let listed: std::collections::HashSet<&str> = listing
            .tools
            .iter()
            .filter_map(|d| str_of(d, "name"))
            .collect();
        kept.retain(|name, _| listed.contains(name.as_str()));
    }

    /// Sends a request to the source; errors keep their codes, a down backend is named.
    async fn send(
        &self,
        method: &str,
        params: Value,
        ctx: &RequestContext,
    ) -> Result<Value, HandlerError> {
        self.answer(self.source.request(method, params, ctx).await, method)
    }

    /// A source's answer for the front: errors keep their codes, a down backend is
    /// named (and the mount lists again).
    fn answer<T>(&self, r: Result<T, SourceError>, method: &str) -> Result<T, HandlerError> {
        match r {
            Ok(v) => Ok(v),
            Err(SourceError::Rpc(e)) => Err(HandlerError::Protocol(e)),
            Err(SourceError::InputRequired(i)) => Err(HandlerError::InputRequired(i)),
            Err(SourceError::Down(m)) => {
                tracing::warn!(source = %self.source.name(), %method, error = %m, "backend call failed");
                self.poke.notify_one();
                Err(HandlerError::Protocol(RpcError::internal(m)))
            }
        }
    }

    fn unreadable(&self, what: &str, e: &serde_json::Error) -> HandlerError {
        HandlerError::Protocol(RpcError::internal(format!(
            "backend \"{}\" sent a {what} snodo cannot read: {e}",
            self.source.name()
        )))
    }

    /// Rewrites the backend URIs in content blocks to the front's.
    fn map_content(&self, blocks: Option<&mut Value>) {
        let Some(Value::Array(blocks)) = blocks else {
            return;
        };
        for b in blocks {
            let slot = match str_of(b, "type") {
                Some("resource_link") => b.get_mut("uri"),
                Some("resource") => b.pointer_mut("/resource/uri"),
                _ => None,
            };
            if let Some(Value::String(u)) = slot {
                *u = self.transforms.front_uri(u);
            }
        }
    }

    async fn call_tool(
        &self,
        backend: &str,
        args: Value,
        ctx: RequestContext,
        task: bool,
    ) -> Result<ToolResult, HandlerError> {
        let mut p = Map::new();
        p.insert("name".into(), json!(backend));
        if !args.is_null() {
            p.insert("arguments".into(), args);
        }
        let p = Value::Object(p);
        let answer = if task {
            Answer::from(self.answer(self.source.call_task(p, &ctx).await, "tools/call")?)
        } else {
            self.answer(self.source.call_tool(p, &ctx).await, "tools/call")?
        };
        // Plain text blocks, still JSON text: nothing in them to rewrite.
        if let Some(r) = crate::plain::from_text(&answer) {
            return Ok(r);
        }
        let mut r = answer.into_value().map_err(|e| {
            HandlerError::Protocol(RpcError::internal(format!(
                "backend \"{}\" sent a tool result snodo cannot read: {e}",
                self.source.name()
            )))
        })?;
        self.map_content(r.get_mut("content"));
        tool_result(r).map_err(|e| self.unreadable("tool result", &e))
    }

    async fn get_prompt(
        &self,
        backend: &str,
        args: PromptArguments,
        ctx: RequestContext,
    ) -> Result<PromptResult, HandlerError> {
        let p = json!({"name": backend, "arguments": args});
        let mut r = self.send("prompts/get", p, &ctx).await?;
        if let Some(Value::Array(msgs)) = r.get_mut("messages") {
            for m in msgs {
                if let Some(c) = m.get_mut("content") {
                    let mut one = Value::Array(vec![c.take()]);
                    self.map_content(Some(&mut one));
                    if let Value::Array(mut v) = one {
                        *c = v.pop().unwrap_or(Value::Null);
                    }
                }
            }
        }
        serde_json::from_value(r).map_err(|e| self.unreadable("prompt", &e))
    }

    async fn read(
        &self,
        req: ReadRequest,
        ctx: RequestContext,
    ) -> Result<Vec<ResourceContents>, HandlerError> {
        let backend = self
            .transforms
            .backend_uri(&req.uri)
            .ok_or(HandlerError::NotFound)?;
        let r = self
            .send("resources/read", json!({"uri": backend}), &ctx)
            .await?;
        let mut contents = r.get("contents").cloned().unwrap_or_else(|| json!([]));
        if let Value::Array(items) = &mut contents {
            for c in items {
                if let Some(Value::String(u)) = c.get_mut("uri") {
                    *u = self.transforms.front_uri(u);
                }
            }
        }
        serde_json::from_value(contents).map_err(|e| self.unreadable("resource", &e))
    }

    async fn complete(
        &self,
        reference: Value,
        req: CompletionRequest,
        ctx: RequestContext,
    ) -> Result<Vec<String>, HandlerError> {
        let p = json!({
            "ref": reference,
            "argument": {"name": req.argument, "value": req.value},
            "context": {"arguments": req.context},
        });
        let r = self.send("completion/complete", p, &ctx).await?;
        Ok(r.pointer("/completion/values")
            .and_then(Value::as_array)
            .map(|v| {
                v.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default())
    }
}

/// A backend's tool result as [`ToolResult`]: what `serde_json::from_value` makes of
/// it, built by moving the texts of plain text blocks out of the tree when the result
/// is only such blocks (with `isError: false` or none, a non-empty `_meta` or none):
/// the derived reader of the tagged `Content` copies each block into a buffer first.
/// Any other result goes through `from_value`, as do blocks with annotations.
pub(crate) fn tool_result(r: Value) -> Result<ToolResult, serde_json::Error> {
    if !plain(&r) {
        return serde_json::from_value(r);
    }
    let Value::Object(mut m) = r else {
        return serde_json::from_value(r);
    };
    let mut result = ToolResult::default();
    if let Some(Value::Array(blocks)) = m.remove("content") {
        for block in blocks {
            result = result.with_content(match block {
                Value::Object(mut b) if !b.contains_key("annotations") => match b.remove("text") {
                    Some(Value::String(text)) => Content::text(text),
                    other => {
                        if let Some(t) = other {
                            b.insert("text".into(), t);
                        }
                        serde_json::from_value(Value::Object(b))?
                    }
                },
                other => serde_json::from_value(other)?,
            });
        }
    }
    if let Some(Value::Object(meta)) = m.remove("_meta") {
        for (k, v) in meta {
            result = result.with_meta(k, v);
        }
    }
    Ok(result)
}

/// Whether [`tool_result`] may build `r` itself: an object whose `content` (if any) is
/// an array of `"type": "text"` blocks with a string `text`, whose `isError` (if any)
/// is `false`, whose `_meta` (if any) is a non-empty object, without
/// `structuredContent`. Other members are ignored, as `from_value` ignores them.
fn plain(r: &Value) -> bool {
    let Value::Object(m) = r else {
        return false;
    };
    let blocks = match m.get("content") {
        None => true,
        Some(Value::Array(blocks)) => blocks.iter().all(|b| {
            str_of(b, "type") == Some("text") && b.get("text").is_some_and(Value::is_string)
        }),
        Some(_) => false,
    };
    blocks
        && matches!(m.get("isError"), None | Some(Value::Bool(false)))
        && !m.contains_key("structuredContent")
        && match m.get("_meta") {
            None => true,
            Some(Value::Object(meta)) => !meta.is_empty(),
            Some(_) => false,
        }
}

/// Whether a backend tool definition declares task support (2025-11-25
/// `execution.taskSupport`: `"optional"` or `"required"`).
fn declares_task(def: &Value) -> bool {
    matches!(
        def.pointer("/execution/taskSupport")
            .and_then(Value::as_str),
        Some("optional" | "required")
    )
}

fn tool(fwd: &Arc<Forward>, def: &Value) -> Option<Item> {
    let backend = str_of(def, "name")?.to_owned();
    let t = &fwd.transforms;
    let front = t.front_name(&backend)?;
    let schema = def
        .get("inputSchema")
        .cloned()
        .unwrap_or_else(|| json!({"type": "object"}));
    let mut tool = Tool::new(front.clone()).input_schema(schema);
    if let Some(s) = def.get("outputSchema").filter(|s| s.is_object()) {
        tool = tool.output_schema(s.clone());
    }
    if let Some(title) = str_of(def, "title") {
        tool = tool.title(title);
    }
    if let Some(d) = t
        .description_of(&backend)
        .or_else(|| str_of(def, "description"))
    {
        tool = tool.description(d);
    }
    let own = def
        .get("annotations")
        .and_then(Value::as_object)
        .into_iter()
        .flatten();
    for (k, v) in own.chain(t.annotations_of(&backend).into_iter().flatten()) {
        tool = tool.annotation(k.clone(), v.clone());
    }
    if let Some(meta) = def.get("_meta").and_then(Value::as_object) {
        for (k, v) in meta {
            tool = tool.meta(k.clone(), v.clone());
        }
    }
    if let Some(p) = t.policy_of(&backend) {
        tool = fwd.keep_limits(&backend, p.apply(tool));
    }
    // A backend task tool is a task at the front (for callers with the tasks
    // extension; the others wait for its result, whatever the backend requires).
    let task = declares_task(def);
    if task {
        tool = tool.task(TaskSupport::Optional);
    }
    let f = Arc::clone(fwd);
    let tool = tool.raw_handler(move |args, ctx| {
        let (f, backend) = (Arc::clone(&f), backend.clone());
        async move { f.call_tool(&backend, args, ctx, task).await }
    });
    Some(Item::Tool(front, tool))
}

fn prompt(fwd: &Arc<Forward>, def: &Value) -> Option<Item> {
    let backend = str_of(def, "name")?.to_owned();
    let t = &fwd.transforms;
    let front = t.front_name(&backend)?;
    let mut p = Prompt::new(front.clone());
    if let Some(title) = str_of(def, "title") {
        p = p.title(title);
    }
    if let Some(d) = t
        .description_of(&backend)
        .or_else(|| str_of(def, "description"))
    {
        p = p.description(d);
    }
    for a in def
        .get("arguments")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(name) = str_of(a, "name") else {
            continue;
        };
        let mut arg = PromptArgument::new(name);
        if let Some(d) = str_of(a, "description") {
            arg = arg.description(d);
        }
        if a.get("required") == Some(&Value::Bool(true)) {
            arg = arg.required();
        }
        p = p.arg(arg);
    }
    let (f, b) = (Arc::clone(fwd), backend.clone());
    let p = p.handler(move |args, ctx| {
        let (f, b) = (Arc::clone(&f), b.clone());
        async move { f.get_prompt(&b, args, ctx).await }
    });
    let f = Arc::clone(fwd);
    let p = p.completer(move |req, ctx| {
        let (f, r) = (
            Arc::clone(&f),
            json!({"type": "ref/prompt", "name": backend}),
        );
        async move { f.complete(r, req, ctx).await }
    });
    Some(Item::Prompt(front, p))
}

fn annotations(def: &Value) -> Option<Annotations> {
    def.get("annotations")
        .and_then(|a| serde_json::from_value(a.clone()).ok())
}

/// What resources and templates share: their listed details and a reader.
trait ResourceLike: Sized {
    fn title(self, t: &str) -> Self;
    fn description(self, d: &str) -> Self;
    fn mime_type(self, m: &str) -> Self;
    fn annotations(self, a: Annotations) -> Self;
    fn forward_reads(self, fwd: &Arc<Forward>) -> Self;
}

macro_rules! resource_like {
    ($t:ty) => {
        impl ResourceLike for $t {
            fn title(self, t: &str) -> Self {
                <$t>::title(self, t)
            }
            fn description(self, d: &str) -> Self {
                <$t>::description(self, d)
            }
            fn mime_type(self, m: &str) -> Self {
                <$t>::mime_type(self, m)
            }
            fn annotations(self, a: Annotations) -> Self {
                <$t>::annotations(self, a)
            }
            fn forward_reads(self, fwd: &Arc<Forward>) -> Self {
                let f = Arc::clone(fwd);
                self.reader(move |req, ctx| {
                    let f = Arc::clone(&f);
                    async move { f.read(req, ctx).await }
                })
            }
        }
    };
}
resource_like!(Resource);
resource_like!(ResourceTemplate);

/// The backend definition `def` (at backend URI `uri`) on `r`, reads forwarded.
fn described<R: ResourceLike>(fwd: &Arc<Forward>, def: &Value, uri: &str, mut r: R) -> R {
    if let Some(title) = str_of(def, "title") {
        r = r.title(title);
    }
    let t = &fwd.transforms;
    if let Some(d) = t.description_of(uri).or_else(|| str_of(def, "description")) {
        r = r.description(d);
    }
    if let Some(m) = str_of(def, "mimeType") {
        r = r.mime_type(m);
    }
    if let Some(a) = annotations(def) {
        r = r.annotations(a);
    }
    r.forward_reads(fwd)
}

fn resource(fwd: &Arc<Forward>, def: &Value) -> Option<Item> {
    let uri = str_of(def, "uri")?;
    if !fwd.transforms.admits_uri(uri) {
        return None;
    }
    let front = fwd.transforms.front_uri(uri);
    let r = Resource::new(front.clone(), str_of(def, "name").unwrap_or(uri));
    Some(Item::Resource(front, described(fwd, def, uri, r)))
}

fn template(fwd: &Arc<Forward>, def: &Value) -> Option<Item> {
    let uri = str_of(def, "uriTemplate")?.to_owned();
    if !fwd.transforms.admits_uri(&uri) {
        return None;
    }
    let front = fwd.transforms.front_uri(&uri);
    let r = ResourceTemplate::new(front.clone(), str_of(def, "name").unwrap_or(&uri));
    let r = described(fwd, def, &uri, r);
    let f = Arc::clone(fwd);
    let r = r.completer(move |req, ctx| {
        let (f, r) = (Arc::clone(&f), json!({"type": "ref/resource", "uri": uri}));
        async move { f.complete(r, req, ctx).await }
    });
    Some(Item::Template(front, r))
}

/// The front components for `listing` (what the transforms filter out is left out).
pub(crate) fn items(fwd: &Arc<Forward>, listing: &Listing) -> Vec<Item> {
    let mut out = Vec::new();
    out.extend(listing.tools.iter().filter_map(|d| tool(fwd, d)));
    fwd.forget_limits(listing);
    out.extend(listing.prompts.iter().filter_map(|d| prompt(fwd, d)));
    out.extend(listing.resources.iter().filter_map(|d| resource(fwd, d)));
    out.extend(listing.templates.iter().filter_map(|d| template(fwd, d)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_results_are_read_as_from_value_reads_them() {
        let cases = [
            json!({}),
            json!({"content": []}),
            json!({"content": [{"type": "text", "text": "hi"}], "isError": false}),
            json!({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b", "x": 1}],
                   "resultType": "complete",
                   "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s"}, "k": [1]}}),
            json!({"content": [{"type": "text", "text": "a", "annotations": {"priority": 0.5}}]}),
            json!({"content": [{"type": "image", "data": "AA==", "mimeType": "image/png"}]}),
            json!({"content": [{"type": "text", "text": "e"}], "isError": true}),
            json!({"content": [{"type": "text", "text": "s"}], "structuredContent": {"a": 1}}),
            json!({"content": [{"type": "text", "text": "s"}], "structuredContent": null}),
            json!({"content": [{"type": "text", "text": "m"}], "_meta": {}}),
            json!({"content": [{"type": "text", "text": "m"}], "_meta": null}),
            // Unreadable: the same error either way.
            json!({"content": [{"type": "text", "text": 3}]}),
            json!({"content": [{"type": "text"}]}),
            json!({"content": {"type": "text", "text": "x"}}),
            json!({"content": null}),
            json!({"content": [], "isError": "no"}),
            json!({"content": [], "_meta": 1}),
            json!([1]),
            json!("text"),
        ];
        for v in cases {
            let ours = tool_result(v.clone()).map_err(|e| e.to_string());
            let theirs = serde_json::from_value::<ToolResult>(v.clone()).map_err(|e| e.to_string());
            assert_eq!(ours, theirs, "{v}");
        }
        // The fast path is taken for the usual result (and reads it whole).
        let usual = json!({"content": [{"type": "text", "text": "a"}],
                           "_meta": {"k": 1}, "resultType": "complete"});
        assert!(plain(&usual));
        assert_eq!(
            tool_result(usual).ok(),
            Some(ToolResult::text("a").with_meta("k", json!(1)))
        );
    }
}
