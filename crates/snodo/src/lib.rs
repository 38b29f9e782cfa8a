//! # snodo
//!
//! A stateless [Model Context Protocol](https://modelcontextprotocol.io) server runtime.
//!
//! Mental model: `async fn(HTTP POST) -> JSON or SSE`, with no session anywhere. snodo
//! serves the stateless **2026-07-28** revision by default; an application can opt into
//! the initialize-era revisions **2025-11-25**, **2025-06-18** and **2025-03-26** on the
//! same endpoint, still without session IDs, so any number of instances can sit behind a
//! plain load balancer.
//!
//! Describe tools, resources and prompts once in a [`Runtime`]; serve it with
//! [`serve`](http::serve), or mount [`McpService`](http::McpService) in your own
//! tower/axum stack. The same runtime also speaks newline-delimited JSON-RPC on
//! stdin/stdout ([`stdio::serve`]) or any byte stream ([`stdio::serve_stream`]), for
//! clients that launch their servers as child processes.
//!
//! ```no_run
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//! use snodo::{Runtime, Tool, ToolResult};
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Echo {
//!     /// The text to send back.
//!     text: String,
//! }
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let runtime = Runtime::builder("echo-server", "1.0.0")
//!     .tool(
//!         Tool::new("echo")
//!             .description("Returns its text")
//!             .handler(|args: Echo| async move { ToolResult::text(args.text) }),
//!     )
//!     .build()?;
//! snodo::http::serve(runtime, "127.0.0.1:8080".parse()?).await?;
//! # Ok(())
//! # }
//! ```
//!
//! A handler is any async function of its arguments; it may also take the
//! [`RequestContext`] after them and shared [`State`] before them (registered once with
//! [`RuntimeBuilder::with_state`]): see [`Handler`].
//!
//! ## Where things live
//!
//! The crate root holds the description ([`Runtime`], [`Tool`], [`Prompt`],
//! [`Resource`], their results and errors). Namespaces: [`http`] and [`stdio`]
//! (transports), [`protocol`] (dialects, methods, wire identifiers), [`tasks`] (the tasks
//! extension), [`apps`] (MCP Apps), `skills`, `metrics`, `otlp` (features of the same
//! names). Each item has one path.
//!
//! ## Dialects
//!
//! | revision | enabled | how a request selects it |
//! |---|---|---|
//! | 2026-07-28 | by default | `MCP-Protocol-Version: 2026-07-28` + `params._meta` |
//! | 2025-11-25 | [`RuntimeBuilder::protocols`] | `initialize`, then the version header |
//! | 2025-06-18 | [`RuntimeBuilder::protocols`] | `initialize`, then the version header |
//! | 2025-03-26 | [`RuntimeBuilder::protocols`] | `initialize`, then no version header (a request without one is served as 2025-03-26); JSON-RPC batches |

#![forbid(unsafe_code)]

pub mod apps;
pub mod bus;
mod caller;
mod engine;
pub mod http;
#[cfg(feature = "metrics")]
pub mod metrics;
pub mod middleware;
mod model;
mod observation;
#[cfg(feature = "otlp")]
pub mod otlp;
pub mod protocol;
mod router;
mod runtime;
#[cfg(feature = "skills")]
pub mod skills;
pub mod stdio;
pub mod tasks;

pub use caller::Principal;
pub use engine::observe::REQUEST_TARGET;
pub use engine::trace::SPAN_TARGET;
pub use model::{
    Annotations, CacheHint, CacheScope, Content, Icon, PromptMessage, PromptResult,
    ResourceContents, Role, ServerInfo, ToolAnnotations, ToolResult,
};
pub use observation::{FieldValue, RequestSummary};
pub use protocol::error::RpcError;
pub use protocol::trace::TraceContext;
pub use runtime::authz::{Authorizer, Component, Refusal};
pub use runtime::completion::{CompletionRequest, MAX_COMPLETION_VALUES};
pub use runtime::components::{Components, IntoResource};
pub use runtime::context::RequestContext;
pub use runtime::error::HandlerError;
pub use runtime::handler::{Handler, State};
pub use runtime::input::{InputRequest, InputRequired};
pub use runtime::param_headers::{ParamHeader, ParamHeaderError};
pub use runtime::policy::{LIMIT_META_KEY, RateLimit};
pub use runtime::prompt::{IntoPromptResult, Prompt, PromptArgument, PromptArguments};
pub use runtime::resource::{
    IntoResourceContents, ListRequest, ReadRequest, Resource, ResourceInfo, ResourceTemplate,
};
pub use runtime::tool::{IntoToolResult, Json, NoArguments, Tool, ToolLimits, schema_for};
pub use runtime::uri_template::UriTemplate;
pub use runtime::{BuildError, DEFAULT_PAGE_SIZE, Runtime, RuntimeBuilder};

/// `#[snodo::tool]`, `#[snodo::prompt]` and `#[snodo::resource]`: attribute macros that
/// expand to the builder API (feature `macros`, on by default). See `docs/authoring.md`.
#[cfg(feature = "macros")]
pub use snodo_macros::{prompt, resource, tool};

/// The Rust snippets of `README.md`, compiled as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeSnippets;

/// The Rust snippets of `docs/authoring.md`, compiled as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/authoring.md")]
struct AuthoringSnippets;

/// What the macros' expansions name (not a stable API).
#[doc(hidden)]
pub mod __private {
    pub use schemars;
    pub use serde;
}

/// Entry points for the fuzz targets in `fuzz/`, the property tests and the hot-path
/// benchmarks: internals, re-exported here only (not a stable API).
#[doc(hidden)]
pub mod fuzzing {
    pub use crate::protocol::jsonrpc::{Incoming, MAX_STRING_ID_LEN, ReadError, result_message};
    pub use crate::runtime::uri_template::UriTemplate;

    /// Decodes a pagination cursor as the router does, for a list of `len` items.
    pub fn decode_cursor(cursor: &str, len: usize) -> Result<usize, crate::RpcError> {
        crate::runtime::cursor::decode(cursor, "2026-07-28", "tools/list", 0, len)
    }

    /// Reads a message and its params in one pass as the server does; `true` for a
    /// request (used by the hot-path benchmarks).
    #[must_use]
    pub fn parse_request(body: &[u8]) -> bool {
        matches!(
            crate::protocol::jsonrpc::Incoming::<crate::protocol::params::SplitParams<'_>>::parse_as(
                body
            ),
            Ok(crate::protocol::jsonrpc::Incoming::Request { .. })
        )
    }

    /// Matches a URI against a URI template (both parsed as the runtime does).
    #[must_use]
    pub fn match_template(template: &str, uri: &str) -> Option<usize> {
        let t = crate::runtime::uri_template::UriTemplate::parse(template).ok()?;
        t.matches(uri).map(|v| v.len())
    }
}
