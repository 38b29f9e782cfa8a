//! Middleware around the dispatch of every request.
//!
//! The mental model, as in tower: `async fn(Request) -> Result<Reply, HandlerError>`,
//! wrapped by layers. A [`Middleware`] sees each admitted request (its method, target,
//! principal, dialect and arguments, through [`Request`]) and either passes it on with
//! [`Next::run`] or answers it itself, with a [`Reply`] or an error.
//!
//! Install layers on the whole runtime with
//! [`RuntimeBuilder::layer`](crate::RuntimeBuilder::layer), or on one component with
//! [`Tool::layer`](crate::Tool::layer), [`Prompt::layer`](crate::Prompt::layer) and
//! [`Resource::layer`](crate::Resource::layer). **The first layer installed is the
//! outermost**: it sees the request first and the reply last. Every runtime layer runs
//! outside every component layer. A mounted source (or any code that forwards requests)
//! can run its own stack with [`Next::run`].
//!
//! An empty stack costs nothing: no allocation, no boxed future and no dynamic call
//! is added to a request when no layer is installed. See `docs/middleware.md`.
//!
//! ```
//! use snodo::middleware::{Middleware, Next, Outcome, Request};
//! use snodo::{HandlerError, RpcError, Runtime, Tool, ToolResult};
//!
//! /// Refuses every call that has no principal.
//! struct SignedInOnly;
//!
//! impl Middleware for SignedInOnly {
//!     async fn call(&self, request: Request<'_>, next: Next<'_>) -> Outcome {
//!         if request.principal().is_none() && request.method() == "tools/call" {
//!             return Err(HandlerError::Protocol(RpcError::invalid_params("sign in first")));
//!         }
//!         next.run(request).await
//!     }
//! }
//!
//! let runtime = Runtime::builder("demo", "1.0.0")
//!     .layer(SignedInOnly)
//!     .tool(Tool::new("hello").handler(|_: snodo::NoArguments| async { ToolResult::text("hi") }))
//!     .build();
//! assert!(runtime.is_ok());
//! ```

mod install;
mod layers;
mod reply;
mod request;

pub use layers::{Layers, Next};
pub use reply::Reply;
pub use request::Request;

pub(crate) use layers::{dispatch, layered};

use std::future::Future;

use crate::runtime::error::HandlerError;

/// What a layer answers: a result, or an error mapped to its JSON-RPC code (and HTTP
/// status) where every handler error is ([`HandlerError::Protocol`] is sent as is;
/// [`HandlerError::Failed`] becomes `-32603`).
pub type Outcome = Result<Reply, HandlerError>;

/// A layer around request dispatch (the shape of a tower `Service` that is handed its
/// inner service, [`Next`], with each request).
///
/// Implement it with an `async fn`:
///
/// ```
/// use snodo::middleware::{Middleware, Next, Outcome, Request};
///
/// struct Noop;
///
/// impl Middleware for Noop {
///     async fn call(&self, request: Request<'_>, next: Next<'_>) -> Outcome {
///         next.run(request).await
///     }
/// }
/// ```
///
/// A panic in a layer is answered `-32603` for that request only, like a panic in a
/// handler.
pub trait Middleware: Send + Sync + 'static {
    /// Handles one request: pass it on with [`Next::run`], or answer it.
    fn call(&self, request: Request<'_>, next: Next<'_>) -> impl Future<Output = Outcome> + Send;
}
