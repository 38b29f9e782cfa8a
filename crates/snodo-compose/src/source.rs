//! What a mount takes components from: the [`Source`] trait and its shared types.

use std::fmt;
use std::future::Future;
use std::pin::Pin;

use serde_json::Value;
use snodo::{RequestContext, RpcError};
use snodo_client::Answer;
use tokio::sync::watch;

/// A boxed, sendable future (the trait's methods return one so that sources are
/// object-safe: a mount holds an `Arc<dyn Source>`).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A source's components as the backend lists them: wire definitions (`Tool`,
/// `Prompt`, `Resource`, `ResourceTemplate` objects of the MCP schema).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Listing {
    /// `tools/list` items.
    pub tools: Vec<Value>,
    /// `prompts/list` items.
    pub prompts: Vec<Value>,
    /// `resources/list` items.
    pub resources: Vec<Value>,
    /// `resources/templates/list` items.
    pub templates: Vec<Value>,
}

/// Why a source could not answer.
#[derive(Debug, Clone)]
pub enum SourceError {
    /// The backend answered with a JSON-RPC error: passed on with its code.
    Rpc(RpcError),
    /// The backend could not be reached or broke the protocol (it is then down).
    Down(String),
    /// The backend asked questions the front caller answers first (a 2026-07-28 front
    /// caller gets them as `input_required`, its `requestState` carrying this state).
    InputRequired(snodo::InputRequired),
}

impl fmt::Display for SourceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Rpc(e) => write!(f, "{} ({})", e.message(), e.code().0),
            Self::Down(m) => f.write_str(m),
            Self::InputRequired(_) => f.write_str("input required"),
        }
    }
}

impl std::error::Error for SourceError {}

/// A provider of components: a remote MCP server ([`McpSource`](crate::McpSource)), a
/// runtime mounted in process, or anything the application computes.
///
/// A source speaks the MCP wire model: [`list`](Self::list) returns the wire
/// definitions, [`request`](Self::request) answers `tools/call`, `prompts/get`,
/// `resources/read` and `completion/complete` with the result object as the backend
/// sends it. The mount turns each listed item into a component of the front runtime
/// whose handler calls `request`; names and URIs are the backend's own (the mount's
/// [`Transforms`](crate::Transforms) map them).
///
/// ```
/// use serde_json::{Value, json};
/// use snodo::{RequestContext, RpcError};
/// use snodo_compose::{BoxFuture, Listing, Source, SourceError};
/// use tokio::sync::watch;
///
/// /// One tool whose answer is computed by the application.
/// struct Clock(watch::Sender<u64>);
///
/// impl Source for Clock {
///     fn name(&self) -> &str { "clock" }
///     fn list(&self) -> BoxFuture<'_, Result<Listing, SourceError>> {
///         Box::pin(async {
///             Ok(Listing {
///                 tools: vec![json!({"name": "now", "inputSchema": {"type": "object"}})],
///                 ..Listing::default()
///             })
///         })
///     }
///     fn request<'a>(&'a self, method: &'a str, _params: Value, _ctx: &'a RequestContext)
///         -> BoxFuture<'a, Result<Value, SourceError>> {
///         Box::pin(async move {
///             match method {
///                 "tools/call" => Ok(json!({"content": [{"type": "text", "text": "noon"}]})),
///                 m => Err(SourceError::Rpc(RpcError::method_not_found(m))),
///             }
///         })
///     }
///     fn changes(&self) -> watch::Receiver<u64> { self.0.subscribe() }
/// }
/// # let _ = Clock(watch::channel(0).0);
/// ```
pub trait Source: Send + Sync + 'static {
    /// A short name for logs and errors (`backend "NAME" is unavailable`).
    fn name(&self) -> &str;

    /// The components the source offers now.
    fn list(&self) -> BoxFuture<'_, Result<Listing, SourceError>>;

    /// Answers one request for a listed component, with the front request's context
    /// (progress, logs and cancellation are relayed through it).
    fn request<'a>(
        &'a self,
        method: &'a str,
        params: Value,
        ctx: &'a RequestContext,
    ) -> BoxFuture<'a, Result<Value, SourceError>>;

    /// Answers a `tools/call` with the result as it arrived ([`Answer`]): JSON text
    /// the mount reads straight into its tool result when nothing in it needs
    /// rewriting (an [`McpSource`](crate::McpSource) over stdio), or a tree. The
    /// default: [`request`](Self::request)'s tree.
    fn call_tool<'a>(
        &'a self,
        params: Value,
        ctx: &'a RequestContext,
    ) -> BoxFuture<'a, Result<Answer, SourceError>> {
        Box::pin(async move {
            self.request("tools/call", params, ctx)
                .await
                .map(Answer::from)
        })
    }

    /// Answers a `tools/call` of a tool whose definition declares task support
    /// (`execution.taskSupport` `"optional"` or `"required"`), with its final result:
    /// the front serves such a tool as a task of its own (its store, its `tasks/*`),
    /// and this is that task's work. An [`McpSource`](crate::McpSource) runs it as a
    /// task of the backend when the backend offers tasks (created, watched, its result
    /// fetched; the front's cancellation cancels it). The default: [`request`](Self::request).
    fn call_task<'a>(
        &'a self,
        params: Value,
        ctx: &'a RequestContext,
    ) -> BoxFuture<'a, Result<Value, SourceError>> {
        self.request("tools/call", params, ctx)
    }

    /// Asks the backend to report changes of the resource at backend URI `uri` on
    /// [`resource_updates`](Self::resource_updates) (the front's listen streams watch
    /// it). The mount calls it again after each listing (a new connection may have
    /// forgotten it). The default: nothing.
    fn subscribe<'a>(&'a self, uri: &'a str) -> BoxFuture<'a, Result<(), SourceError>> {
        let _ = uri;
        Box::pin(async { Ok(()) })
    }

    /// Undoes [`subscribe`](Self::subscribe) (no front stream watches `uri` any more).
    /// The default: nothing.
    fn unsubscribe<'a>(&'a self, uri: &'a str) -> BoxFuture<'a, Result<(), SourceError>> {
        let _ = uri;
        Box::pin(async { Ok(()) })
    }

    /// The backend URIs of resources that changed, as the backend reports them; the
    /// mount announces them to the front's listen streams under the front's URIs.
    /// The default: `None` (no updates; the mount subscribes to nothing).
    fn resource_updates(&self) -> Option<tokio::sync::broadcast::Receiver<String>> {
        None
    }

    /// Bumped whenever the source's lists change: the mount lists again.
    fn changes(&self) -> watch::Receiver<u64>;

    /// Whether the source is reachable (the mount asks between lists to notice a
    /// backend that went away). The default lists.
    fn check(&self) -> BoxFuture<'_, Result<(), SourceError>> {
        Box::pin(async { self.list().await.map(|_| ()) })
    }

    /// Whether a source that cannot be listed is being started again (a stdio child
    /// that exited, backing off before its restart): the mount then reports
    /// [`Status::Restarting`](crate::Status::Restarting) rather than `Down`. The
    /// default: never.
    fn restarting(&self) -> bool {
        false
    }
}
