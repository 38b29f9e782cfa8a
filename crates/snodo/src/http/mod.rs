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
mod listener;
#[cfg(feature = "metrics")]
pub(crate) mod metrics;
mod negotiation;
mod response;
mod serve;
mod service;
mod sse;
mod status;
#[cfg(feature = "tls")]
mod tls;

pub use auth::{AuthRejection, Authenticator, BearerTokens};
pub use body::Body;
pub use config::{Http2Limits, HttpConfig, LOOPBACK_HOSTS};
pub use listener::ListenAddr;
pub use serve::{
    ENDPOINT_PATH, HEALTH_PATH, RouteHandler, ServeError, Server, serve, shutdown_signal,
};
pub use service::McpService;
#[cfg(feature = "tls")]
pub use tls::{TlsCertificates, TlsError};
