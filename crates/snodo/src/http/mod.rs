//! Streamable HTTP transport: admission, dialect selection, JSON and SSE responses.

mod auth;
mod batch;
mod body;
mod budget;
mod config;
mod conn;
mod exec;
mod guards;
mod head_deadline;
mod headers;
mod listen;
#[cfg(feature = "metrics")]
pub(crate) mod metrics;
mod negotiation;
mod response;
mod serve;
mod service;
mod sse;
mod status;

pub use auth::{AuthRejection, Authenticator, BearerTokens};
pub use body::Body;
pub use config::{HttpConfig, LOOPBACK_HOSTS};
pub use serve::{
    ENDPOINT_PATH, HEALTH_PATH, RouteHandler, ServeError, Server, serve, shutdown_signal,
};
pub use service::McpService;
