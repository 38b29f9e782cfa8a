//! # snodo-client
//!
//! An MCP client for every revision snodo knows — 2026-07-28 (stateless, `_meta` on
//! every request) and the initialize era (2025-11-25, 2025-06-18, 2025-03-26) — over
//! three connectors:
//!
//! - **Streamable HTTP** ([`ClientBuilder::connect_http`]) on hyper's client: JSON and
//!   SSE answers, `Mcp-Session-Id` from servers that issue one (echoed, `DELETE` at
//!   close), SSE resumption with `Last-Event-ID`, the initialize era's standalone `GET`
//!   stream, same-origin redirects, the `MCP-Protocol-Version`, `Mcp-Method`,
//!   `Mcp-Name` and `Mcp-Param-*` headers;
//! - **a child process over stdio** ([`ClientBuilder::connect_stdio`]), or the same
//!   newline-delimited framing on any byte stream ([`ClientBuilder::connect_stream`]);
//! - **in process** ([`ClientBuilder::connect_runtime`],
//!   [`ClientBuilder::connect_in_process`]): a [`snodo::Runtime`] or
//!   [`McpService`](snodo::http::McpService) driven directly, no socket — for tests.
//!
//! A server that asks for a token (`401`) gets one with [`ClientBuilder::oauth`]: the
//! [`auth`] module discovers the authorization server, registers or identifies the
//! client, runs the authorization code flow with PKCE (or client credentials, a
//! JWT-bearer or enterprise-managed grant), steps up scopes, refreshes and stores
//! tokens, and binds them with DPoP on request.
//!
//! The calls: [`Client::list_tools`] and the other lists (every page followed, or
//! [`Client::list_stream`]), [`Client::call_tool`], [`Client::read_resource`],
//! [`Client::get_prompt`], [`Client::complete`], [`Client::listen`] (2026-07-28 change
//! events), [`Client::request`] for anything else. Dropping a call's future cancels it
//! (HTTP: the response is closed; stdio: `notifications/cancelled`).
//!
//! Version negotiation follows the 2026-07-28 `basic/versioning` page for a dual-era
//! client ([`Protocol`]): pinned, or auto — probe `server/discover`; a modern `-32022`
//! retries with a version the server lists; any other answer or a timeout falls back to
//! `initialize`.
//!
//! ## Testing a server in process
//!
//! ```
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//! use serde_json::json;
//! use snodo::{Runtime, Tool, ToolResult};
//! use snodo_client::Client;
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Echo {
//!     /// The text to send back.
//!     text: String,
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let runtime = Runtime::builder("echo-server", "1.0.0")
//!     .tool(
//!         Tool::new("echo")
//!             .description("Returns its text")
//!             .handler(|args: Echo| async move { ToolResult::text(args.text) }),
//!     )
//!     .build()?;
//!
//! let client = Client::builder("my-test", "1.0.0").connect_runtime(runtime).await?;
//! assert_eq!(client.protocol_version(), "2026-07-28");
//!
//! let tools = client.list_tools().await?;
//! assert_eq!(tools[0].name, "echo");
//!
//! let result = client.call_tool("echo", json!({ "text": "hello" })).await?;
//! assert_eq!(result.text(), "hello");
//! assert!(!result.is_error);
//!
//! // A JSON-RPC error is typed: code, message, data.
//! let err = client.call_tool("nope", json!({})).await.unwrap_err();
//! assert_eq!(err.code().map(|c| c.0), Some(-32602));
//! # Ok(())
//! # }
//! ```
//!
//! ## Errors
//!
//! [`ClientError`] separates the transport, the server's JSON-RPC errors (code, message,
//! data) and version trouble; a tool that ran and failed is a value
//! ([`CallToolResult::is_error`]).
//!
//! ## Server questions
//!
//! Register [`ClientBuilder::on_elicitation`], [`ClientBuilder::on_sampling`] and
//! [`ClientBuilder::on_roots`]: they answer both the 2026 `input_required` rounds
//! (`inputResponses` + `requestState`, at most [`ClientBuilder::max_rounds`]) and the
//! initialize era's server requests on a call's SSE stream.

#![forbid(unsafe_code)]

mod answer;
mod api;
pub mod auth;
mod builder;
mod client;
mod error;
mod handlers;
mod headers;
mod http;
mod hyper_client;
mod message;
mod negotiate;
mod sse;
mod stall;
mod stdio;
mod transport;
mod types;

pub use answer::Answer;
pub use builder::{CallOptions, ClientBuilder, Protocol};
pub use client::Client;
pub use error::ClientError;
pub use handlers::{CallHandler, EventFn, Handler, LogFn, ProgressFn, accept_with_defaults};
pub use types::{
    CallToolResult, Completion, Content, GetPromptResult, LogMessage, Progress, Prompt,
    PromptArgument, PromptMessage, ReadResourceResult, Resource, ResourceContents,
    ResourceTemplate, ServerDetails, ServerEvent, Subscriptions, Tool,
};

/// Every protocol version this client speaks, newest first.
#[must_use]
pub fn known_versions() -> Vec<&'static str> {
    negotiate::known_versions()
}
