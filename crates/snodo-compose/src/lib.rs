//! Composition for snodo: a front [`Runtime`](snodo::Runtime) serves, beside its own
//! components, those of other MCP servers and runtimes.
//!
//! A [`Source`] provides components: [`McpSource`] reaches an MCP server through
//! `snodo-client` (Streamable HTTP of any revision with or without sessions, a stdio
//! child, any byte stream, or a `Runtime` in process); the application implements
//! [`Source`] for anything else. A [`Mount`] mirrors a source's tools, prompts,
//! resources and templates into the front catalogue (through
//! [`Runtime::update`](snodo::Runtime::update)), each handler forwarding to the source;
//! so pagination, cache hints, `listChanged`, dialect shaping (initialize-era clients do
//! not see tools whose schemas are not objects) and authorization are the front's own
//! on every dialect. [`Transforms`] rename, filter, describe, hide and limit what a
//! source shows.
//!
//! Through a mount: the backend's progress and log notifications for a call go out on
//! the front request's stream; a front cancellation abandons the backend request (which
//! the client turns into the backend's cancellation); the backend's questions (a
//! 2026-07-28 backend's `input_required`, an initialize-era backend's server requests)
//! reach the front caller in its own form; the backend's JSON-RPC errors
//! keep their codes; a backend that is down leaves the lists (logged, counted in
//! [`Mount::down_count`]) and a call that finds it down fails with an error naming it.
//! See `docs/composition.md`.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! use std::time::Duration;
//! use serde_json::json;
//! use snodo::{NoArguments, Runtime, Tool};
//! use snodo_compose::{McpSource, Mount, Transforms};
//!
//! let backend = Runtime::builder("backend", "1")
//!     .tool(Tool::new("hello").description("Says hi").handler(|_: NoArguments| async { "hi" }))
//!     .build().unwrap();
//! let front = Runtime::builder("front", "1")
//!     .tool(Tool::new("local").description("Here").handler(|_: NoArguments| async { "here" }))
//!     .build().unwrap();
//! let mount = Mount::new(&front, McpSource::runtime("b", backend), Transforms::new().namespace("b"));
//! mount.ready(Duration::from_secs(5)).await;
//!
//! let client = snodo_client::Client::builder("t", "1").connect_runtime(front).await.unwrap();
//! assert_eq!(client.call_tool("b_hello", json!({})).await.unwrap().text(), "hi");
//! # }
//! ```

#![forbid(unsafe_code)]

mod asking;
mod child;
mod elsewhere;
mod follow;
mod mcp;
mod mirror;
mod mount;
mod outage;
mod plain;
mod pool;
mod relay;
mod source;
mod transform;
mod visibility;

pub use child::Reaped;
pub use mcp::{McpSource, StreamFactory};
pub use mount::{Mount, MountOptions, Status};
pub use outage::Outages;
pub use pool::{ChildState, PoolHealth, RestartPolicy};
pub use snodo_client::Answer;
pub use source::{BoxFuture, Listing, Source, SourceError};
pub use transform::{ToolPolicy, Transforms};
pub use visibility::Gate;
