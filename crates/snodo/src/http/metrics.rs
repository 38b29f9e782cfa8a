//! The metrics endpoint's listener ([`Metrics::serve`]): `GET /metrics` on a port of its
//! own, through the same accept loop and connection limits as the MCP endpoint
//! (`conn.rs`): a head timeout, a write timeout, a connection cap, and accept errors
//! (out of descriptors) survived.
//!
//! [`Metrics::serve`]: crate::metrics::Metrics::serve

use std::time::Duration;

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use tokio::net::TcpListener;

use super::body::Body;
use super::config::HttpConfig;
use super::conn::{self, ConnLimits};
use crate::metrics::{CONTENT_TYPE, METRICS_PATH, Metrics};

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
        http2: mcp.http2,
    }
}

/// The metrics' HTTP side: an answer to mount, and a listener of their own.
impl Metrics {
    /// A `200` answer carrying [`encode`](Self::encode): mount it at `/metrics` in your
    /// own router.
    #[must_use]
    pub fn response(&self) -> Response<Body> {
        let mut r = Response::new(Body::full(Bytes::from(self.encode())));
        r.headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
        r
    }

    /// Serves [`METRICS_PATH`] on `listener` (GET; any other path is 404) for the rest
    /// of the process, under the MCP listener's connection limits (a head timeout of
    /// 10 s, a write timeout of 30 s, at most 16 connections open at once, further ones
    /// waiting in the accept backlog); a failed `accept` (out of descriptors) is
    /// retried, never fatal.
    pub async fn serve(self, listener: tokio::net::TcpListener) -> std::io::Result<()> {
        serve(self, listener, std::future::pending()).await;
        Ok(())
    }

    /// [`serve`](Self::serve) until `shutdown` completes.
    pub async fn serve_until(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl std::future::Future<Output = ()>,
    ) {
        serve(self, listener, shutdown).await;
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
    let open = conn::accept(listener, limits(), None, handler, shutdown).await;
    open.drain(Duration::from_secs(1), || {}, Duration::ZERO)
        .await;
}
