//! A ready listener: hyper (HTTP/1.1 and HTTP/2, optionally over TLS) on TCP or a Unix
//! socket, `/mcp` and `/healthz`, graceful shutdown.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;

use tokio::net::TcpListener;
use tokio::time::Instant;

use super::body::Body;
use super::config::HttpConfig;
use super::conn::{self, ConnLimits};
use super::listener::ListenAddr;
#[cfg(unix)]
use super::listener::UnixSocket;
use super::response;
use super::service::McpService;
use crate::engine::observe::REQUEST_TARGET;
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
    /// The address is not a loopback address and the Host/Origin allow-list is still
    /// the loopback default, which would refuse every real client: configure
    /// [`HttpConfig::allow_hosts`] with the names clients use (or
    /// [`HttpConfig::any_host`] behind a proxy that checks Host).
    #[error(
        "refusing to serve on non-loopback address {addr} with the loopback-only Host/Origin allow-list: \
         configure HttpConfig::allow_hosts([...]) with the names clients use (or any_host() behind a proxy that checks Host)"
    )]
    NonLoopback {
        /// The address asked for.
        addr: SocketAddr,
    },
    /// The TLS certificate and key cannot be used (feature `tls`).
    #[cfg(feature = "tls")]
    #[error("TLS: {0}")]
    Tls(#[from] super::tls::TlsError),
}

/// The handler of an extra route: the request head in (the body is not read), the
/// response out.
pub type RouteHandler =
    Arc<dyn Fn(http::request::Parts) -> BoxFuture<'static, http::Response<Body>> + Send + Sync>;

/// What a server is bound to.
#[derive(Debug)]
enum Bound {
    Tcp(TcpListener),
    #[cfg(unix)]
    Unix(UnixSocket),
}

/// A bound server, ready to run.
pub struct Server {
    listener: Bound,
    tls: Option<conn::TlsAcceptor>,
    #[cfg(feature = "tls")]
    certificates: Option<super::tls::TlsCertificates>,
    /// SIGHUP, listened for from the moment TLS is set (a SIGHUP's default action ends
    /// the process: one sent between start-up and `run` must not).
    #[cfg(all(feature = "tls", unix))]
    hup: Option<tokio::signal::unix::Signal>,
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
            return Err(ServeError::NonLoopback { addr });
        }
        let listener = TcpListener::bind(addr).await?;
        Ok(Self::bound(Bound::Tcp(listener), runtime, config))
    }

    /// Binds a Unix socket at `path` (HTTP over a local byte stream), with the file mode
    /// `mode` (e.g. `0o660`; `None`: the umask's). The file is removed when the server
    /// stops; a file left by a server that died (no one listening) is replaced, and a
    /// socket another server listens on is refused. There is no TCP peer: the Host and
    /// Origin rules are those of the configuration (the loopback names by default, which
    /// is what local clients send).
    #[cfg(unix)]
    pub fn bind_unix(
        runtime: Runtime,
        path: impl AsRef<Path>,
        mode: Option<u32>,
        config: HttpConfig,
    ) -> Result<Self, ServeError> {
        let socket = UnixSocket::bind(path.as_ref(), mode)?;
        Ok(Self::bound(Bound::Unix(socket), runtime, config))
    }

    /// Binds `addr`: [`bind`](Self::bind) for a TCP address, [`bind_unix`](Self::bind_unix)
    /// for a Unix socket (with `mode`; ignored for TCP).
    pub async fn bind_to(
        runtime: Runtime,
        addr: &ListenAddr,
        mode: Option<u32>,
        config: HttpConfig,
    ) -> Result<Self, ServeError> {
        match addr {
            ListenAddr::Tcp(a) => Self::bind(runtime, *a, config).await,
            #[cfg(unix)]
            ListenAddr::Unix(path) => Self::bind_unix(runtime, path, mode, config),
            #[cfg(not(unix))]
            ListenAddr::Unix(_) => {
                let _ = mode;
                Err(ServeError::Config("Unix sockets need a Unix system".into()))
            }
        }
    }

    fn bound(listener: Bound, runtime: Runtime, config: HttpConfig) -> Self {
        Self {
            listener,
            tls: None,
            #[cfg(feature = "tls")]
            certificates: None,
            #[cfg(all(feature = "tls", unix))]
            hup: None,
            service: McpService::with_config(runtime, config),
            drain: Duration::from_secs(10),
            routes: Arc::default(),
        }
    }

    /// Terminates TLS with `certificates` (feature `tls`): HTTP/2 and HTTP/1.1 by ALPN.
    /// [`run`](Self::run) reloads them on SIGHUP; with
    /// [`run_until`](Self::run_until), call [`TlsCertificates::reload`] yourself.
    ///
    /// [`TlsCertificates::reload`]: super::TlsCertificates::reload
    #[cfg(feature = "tls")]
    #[must_use]
    pub fn tls(mut self, certificates: super::tls::TlsCertificates) -> Self {
        self.tls = Some(certificates.acceptor());
        self.certificates = Some(certificates);
        // Inside a runtime (as after `bind`): SIGHUP is caught from now on, so one sent
        // before `run` reloads instead of ending the process.
        #[cfg(unix)]
        if tokio::runtime::Handle::try_current().is_ok() {
            self.hup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()).ok();
        }
        self
    }

    /// Serves `handler` at `path` (exact match) beside the MCP endpoint, e.g. a
    /// `/.well-known/…` document. The MCP and health paths cannot be replaced (see
    /// [`health`](Self::health)).
    #[must_use]
    pub fn route<F, Fut>(mut self, path: impl Into<String>, handler: F) -> Self
    where
        F: Fn(http::request::Parts) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = http::Response<Body>> + Send + 'static,
    {
        let path = path.into();
        if path == HEALTH_PATH {
            tracing::warn!("a route at {HEALTH_PATH} is ignored: use Server::health");
            return self;
        }
        let handler: RouteHandler = Arc::new(move |parts| Box::pin(handler(parts)));
        Arc::make_mut(&mut self.routes).insert(path, handler);
        self
    }

    /// Answers [`HEALTH_PATH`] with `handler` instead of the fixed `200
    /// {"status":"ok"}`, e.g. a report of the backends an application depends on with a
    /// status an orchestrator acts on (`snodo gateway` does).
    ///
    /// ```no_run
    /// # async fn f(runtime: snodo::Runtime) -> Result<(), snodo::http::ServeError> {
    /// use snodo::http::{Body, HttpConfig, Server};
    /// let addr = "127.0.0.1:0".parse().expect("an address");
    /// let server = Server::bind(runtime, addr, HttpConfig::default()).await?
    ///     .health(|_parts| async {
    ///         let body = Body::full(r#"{"status":"degraded"}"#.into());
    ///         let mut r = http::Response::new(body);
    ///         *r.status_mut() = http::StatusCode::SERVICE_UNAVAILABLE;
    ///         r
    ///     });
    /// # let _ = server; Ok(()) }
    /// ```
    #[must_use]
    pub fn health<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(http::request::Parts) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = http::Response<Body>> + Send + 'static,
    {
        let handler: RouteHandler = Arc::new(move |parts| Box::pin(handler(parts)));
        Arc::make_mut(&mut self.routes).insert(HEALTH_PATH.to_owned(), handler);
        self
    }

    /// The TCP address actually bound (an error for a Unix socket: see
    /// [`listen_addr`](Self::listen_addr)).
    pub fn local_addr(&self) -> Result<SocketAddr, ServeError> {
        match &self.listener {
            Bound::Tcp(l) => Ok(l.local_addr()?),
            #[cfg(unix)]
            Bound::Unix(_) => Err(ServeError::Config(
                "the server listens on a Unix socket, not a TCP address".into(),
            )),
        }
    }

    /// What the server is bound to: the TCP address actually bound, or the socket's
    /// path.
    pub fn listen_addr(&self) -> Result<ListenAddr, ServeError> {
        match &self.listener {
            Bound::Tcp(l) => Ok(ListenAddr::Tcp(l.local_addr()?)),
            #[cfg(unix)]
            Bound::Unix(u) => Ok(ListenAddr::Unix(u.path().to_owned())),
        }
    }

    /// How long shutdown waits for in-flight requests (default 10 s).
    #[must_use]
    pub fn drain_timeout(mut self, d: Duration) -> Self {
        self.drain = d;
        self
    }

    /// Serves until `shutdown` completes, then stops accepting, closes the connections
    /// that are between requests, and drains the others for up to the drain timeout.
    /// Requests still running then end with a final JSON-RPC error (`-32603`, HTTP 503
    /// when nothing was sent yet; the last event of an SSE stream), given a moment to
    /// be written.
    pub async fn run_until<F: Future<Output = ()>>(self, shutdown: F) -> Result<(), ServeError> {
        let cfg = self.service.config();
        // HTTP/1.1 and HTTP/2: every limit applies to both (per stream and per
        // connection); nothing past this point learns the HTTP version.
        let limits = ConnLimits {
            max_connections: cfg.max_connections,
            head_timeout: cfg.header_read_timeout,
            write_timeout: cfg.write_timeout,
            max_headers: cfg.max_headers,
            http2: cfg.http2,
        };
        let service = self.service.clone();
        let routes = Arc::clone(&self.routes);
        let handler = move |req: http::Request<hyper::body::Incoming>, answering| {
            let service = service.clone();
            let routes = Arc::clone(&routes);
            async move {
                let resp = match req.uri().path() {
                    ENDPOINT_PATH => service.handle(req).await,
                    _ => other_path(req, &routes).await,
                };
                conn::answered(resp, answering)
            }
        };
        let tls = self.tls;
        let open = match self.listener {
            Bound::Tcp(l) => conn::accept(l, limits, tls, handler, shutdown).await,
            #[cfg(unix)]
            Bound::Unix(l) => conn::accept(l, limits, tls, handler, shutdown).await,
        };
        self.service.begin_shutdown();
        let service = self.service.clone();
        let in_time = open
            .drain(self.drain, move || service.stop_all(), FINAL_WRITE_GRACE)
            .await;
        if !in_time {
            tracing::warn!(
                "shutdown: in-flight requests did not finish within the drain timeout; they were ended with an error"
            );
        }
        Ok(())
    }

    /// Serves until Ctrl-C (SIGINT) or SIGTERM; with TLS, reloads the certificate and
    /// key on SIGHUP (a bad pair is logged and the old one kept).
    pub async fn run(self) -> Result<(), ServeError> {
        #[cfg(all(feature = "tls", unix))]
        let (this, _reloading) = {
            let mut this = self;
            let hup = this.hup.take();
            let reloading = this
                .certificates
                .as_ref()
                .map(|c| c.reload_on_sighup(hup))
                .transpose()?;
            (this, reloading)
        };
        #[cfg(not(all(feature = "tls", unix)))]
        let this = self;
        this.run_until(shutdown_signal()).await
    }
}

/// Answers a path other than the MCP endpoint (the health check, an extra route, or
/// 404), and logs it.
async fn other_path(
    req: http::Request<hyper::body::Incoming>,
    routes: &HashMap<String, RouteHandler>,
) -> http::Response<Body> {
    let started = Instant::now();
    let (parts, _body) = req.into_parts();
    // (Both cheap to clone: a small enum and shared bytes.)
    let (method, uri) = (parts.method.clone(), parts.uri.clone());
    let resp = match routes.get(uri.path()) {
        Some(route) => route(parts).await,
        None if uri.path() == HEALTH_PATH => response::healthy(),
        None => response::not_found(),
    };
    log_other_path(&method, uri.path(), resp.status(), started);
    resp
}

/// How long requests ended at the end of the drain have to write their final message.
const FINAL_WRITE_GRACE: Duration = Duration::from_secs(1);

/// The request log's line for a path other than the MCP endpoint (a health check, an
/// extra route, a client's `.well-known` probe): the MCP fields do not apply.
fn log_other_path(method: &http::Method, path: &str, status: http::StatusCode, started: Instant) {
    let elapsed = started.elapsed();
    tracing::info!(
        target: REQUEST_TARGET,
        message = "request",
        transport = "http",
        method = "-",
        http_method = method.as_str(),
        path = path.get(..200).unwrap_or(path),
        status = status.as_u16(),
        duration_us = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX),
    );
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
