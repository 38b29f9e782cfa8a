//! A ready listener: hyper over TCP, `/mcp` and `/healthz`, graceful shutdown.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;

use super::body::Body;
use super::config::HttpConfig;
use super::head_deadline::{HeadDeadline, Tracked};
use super::response;
use super::service::McpService;
use crate::runtime::Runtime;

/// The path of the MCP endpoint.
pub const ENDPOINT_PATH: &str = "/mcp";
/// The path of the health endpoint (no MCP admission).
pub const HEALTH_PATH: &str = "/healthz";

/// Why the listener could not start or stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// Binding or accepting failed.
    #[error("listener error: {0}")]
    Io(#[from] io::Error),
    /// The configuration is unsafe for the address.
    #[error("{0}")]
    Config(String),
}

/// The handler of an extra route: the request head in (the body is not read), the
/// response out.
pub type RouteHandler =
    Arc<dyn Fn(http::request::Parts) -> BoxFuture<'static, http::Response<Body>> + Send + Sync>;

/// A bound server, ready to run.
pub struct Server {
    listener: TcpListener,
    service: McpService,
    drain: Duration,
    routes: Arc<HashMap<String, RouteHandler>>,
}

impl fmt::Debug for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Server")
            .field("listener", &self.listener)
            .field("service", &self.service)
            .field("drain", &self.drain)
            .field("routes", &self.routes.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Server {
    /// Binds `addr` (port 0 picks a free port). A non-loopback address needs an explicit
    /// Host/Origin allow-list: the loopback defaults would refuse every real client.
    pub async fn bind(
        runtime: Runtime,
        addr: SocketAddr,
        config: HttpConfig,
    ) -> Result<Self, ServeError> {
        if !addr.ip().is_loopback() && config.allowed_hosts == HttpConfig::default().allowed_hosts {
            return Err(ServeError::Config(format!(
                "refusing to serve on non-loopback address {addr} with the loopback-only Host/Origin allow-list: \
                 configure HttpConfig::allow_hosts([...]) with the names clients use (or any_host() behind a proxy that checks Host)"
            )));
        }
        let listener = TcpListener::bind(addr).await?;
        Ok(Self {
            listener,
            service: McpService::with_config(runtime, config),
            drain: Duration::from_secs(10),
            routes: Arc::default(),
        })
    }

    /// Serves `handler` at `path` (exact match) beside the MCP endpoint, e.g. a
    /// `/.well-known/…` document. The MCP and health paths cannot be replaced.
    #[must_use]
    pub fn route<F, Fut>(mut self, path: impl Into<String>, handler: F) -> Self
    where
        F: Fn(http::request::Parts) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = http::Response<Body>> + Send + 'static,
    {
        let handler: RouteHandler = Arc::new(move |parts| Box::pin(handler(parts)));
        Arc::make_mut(&mut self.routes).insert(path.into(), handler);
        self
    }

    /// The address actually bound.
    pub fn local_addr(&self) -> Result<SocketAddr, ServeError> {
        Ok(self.listener.local_addr()?)
    }

    /// How long shutdown waits for in-flight requests (default 10 s).
    #[must_use]
    pub fn drain_timeout(mut self, d: Duration) -> Self {
        self.drain = d;
        self
    }

    /// Serves until `shutdown` completes, then stops accepting and drains open
    /// connections for up to the drain timeout.
    pub async fn run_until<F: Future<Output = ()>>(self, shutdown: F) -> Result<(), ServeError> {
        let graceful = GracefulShutdown::new();
        let cfg = self.service.config();
        let connections =
            std::sync::Arc::new(tokio::sync::Semaphore::new(cfg.max_connections.max(1)));
        // HTTP/1.1 only: every limit below applies to it (MCP clients speak HTTP/1.1;
        // put a proxy in front for HTTP/2 or TLS).
        let mut builder = http1::Builder::new();
        // The head read deadline is the connection's own (`head_deadline`), not hyper's
        // `header_read_timeout`, which arms a timer per request.
        builder.max_headers(cfg.max_headers);
        let head_timeout = cfg.header_read_timeout;
        tokio::pin!(shutdown);
        loop {
            let permit = tokio::select! {
                p = std::sync::Arc::clone(&connections).acquire_owned() => match p {
                    Ok(p) => p,
                    Err(_) => break,
                },
                () = &mut shutdown => break,
            };
            let (stream, _peer) = tokio::select! {
                accepted = self.listener.accept() => match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                },
                () = &mut shutdown => break,
            };
            let _ = stream.set_nodelay(true);
            let service = self.service.clone();
            let routes = Arc::clone(&self.routes);
            let deadline = HeadDeadline::new(head_timeout);
            let svc = {
                let deadline = Arc::clone(&deadline);
                service_fn(move |req: http::Request<hyper::body::Incoming>| {
                    let service = service.clone();
                    let routes = Arc::clone(&routes);
                    let answering = deadline.begin();
                    async move {
                        let resp = match req.uri().path() {
                            ENDPOINT_PATH => service.handle(req).await,
                            HEALTH_PATH => response::healthy(),
                            path => match routes.get(path) {
                                Some(route) => route(req.into_parts().0).await,
                                None => response::not_found(),
                            },
                        };
                        Ok::<_, std::convert::Infallible>(
                            resp.map(|body| Tracked::new(body, answering)),
                        )
                    }
                })
            };
            let builder = builder.clone();
            let watcher = graceful.watcher();
            tokio::spawn(async move {
                // A client that sends nothing at all must not hold a connection slot.
                let mut first = [0u8; 1];
                match tokio::time::timeout(head_timeout, stream.peek(&mut first)).await {
                    Ok(Ok(n)) if n > 0 => {}
                    _ => return,
                }
                let conn = watcher.watch(builder.serve_connection(TokioIo::new(stream), svc));
                // The connection runs in a task of its own, so that its requests never
                // poll the deadline; this task wakes only at the deadline or at its end.
                let mut serving = tokio::spawn(async move {
                    if let Err(e) = conn.await {
                        tracing::debug!(error = %e, "connection ended with an error");
                    }
                });
                tokio::select! {
                    _ = &mut serving => {}
                    () = deadline.expired() => {
                        tracing::debug!("closing a connection that sent no request head in time");
                        serving.abort();
                        let _ = serving.await;
                    }
                }
                drop(permit);
            });
        }
        drop(self.listener);
        self.service.begin_shutdown();
        if tokio::time::timeout(self.drain, graceful.shutdown())
            .await
            .is_err()
        {
            tracing::warn!(
                "shutdown: in-flight requests did not finish within the drain timeout; cancelling them"
            );
            self.service.cancel_all();
        }
        Ok(())
    }

    /// Serves until Ctrl-C (SIGINT) or SIGTERM.
    pub async fn run(self) -> Result<(), ServeError> {
        self.run_until(shutdown_signal()).await
    }
}

/// Completes on Ctrl-C or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
}

/// Serves `runtime` on `addr` at `/mcp` with default settings until Ctrl-C or SIGTERM.
pub async fn serve(runtime: Runtime, addr: SocketAddr) -> Result<(), ServeError> {
    Server::bind(runtime, addr, HttpConfig::default())
        .await?
        .run()
        .await
}
