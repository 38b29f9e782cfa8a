//! The metrics endpoint's listener ([`Metrics::serve`]): `GET /metrics` on a port of its
//! own, through the same accept loop and connection limits as the MCP endpoint
//! (`conn.rs`): a head timeout, a write timeout, a connection cap, and accept errors
//! (out of descriptors) survived.
//!
//! [`Metrics::serve`]: crate::metrics::Metrics::serve

use std::time::Duration;

use http::{Response, StatusCode};
use tokio::net::TcpListener;

use super::body::Body;
use super::config::HttpConfig;
use super::conn::{self, ConnLimits};
use crate::metrics::{METRICS_PATH, Metrics};

/// Connections open at once on the metrics listener (a scraper needs one; further
/// connections wait in the accept backlog): few, so that idle connections there cannot
/// take the descriptors the MCP listener needs.
pub(crate) const MAX_CONNECTIONS: usize = 16;

/// The metrics listener's limits: the MCP listener's defaults, with [`MAX_CONNECTIONS`].
fn limits() -> ConnLimits {
    let mcp = HttpConfig::default();
    ConnLimits {
        max_connections: MAX_CONNECTIONS,
        head_timeout: mcp.header_read_timeout,
        write_timeout: mcp.write_timeout,
        max_headers: mcp.max_headers,
    }
}

/// Serves `metrics` on `listener` until `shutdown` completes, then lets open scrapes
/// finish for a moment.
pub(crate) async fn serve(
    metrics: Metrics,
    listener: TcpListener,
    shutdown: impl std::future::Future<Output = ()>,
) {
    let handler = move |req: http::Request<hyper::body::Incoming>, answering| {
        let resp = if req.uri().path() == METRICS_PATH
            && matches!(*req.method(), http::Method::GET | http::Method::HEAD)
        {
            metrics.response()
        } else {
            let mut r = Response::new(Body::empty());
            *r.status_mut() = StatusCode::NOT_FOUND;
            r
        };
        std::future::ready(conn::answered(resp, answering))
    };
    let open = conn::accept(listener, limits(), handler, shutdown).await;
    open.drain(Duration::from_secs(1), || {}, Duration::ZERO)
        .await;
}
