//! The socket half of the HTTP connector: hyper's pooled client (the stack the server
//! uses), HTTP/1.1 and HTTP/2, with TLS for `https://` URLs when the `https` feature is
//! on (rustls with the ring provider and the system's trust anchors, through
//! hyper-rustls — the same choice as snodo-oauth; ALPN offers `h2` and `http/1.1`).
//!
//! HTTP/2 carries every call of a client on one connection (hyper multiplexes them as
//! streams); in cleartext it is spoken only when asked ([`HttpOptions::http2_prior_knowledge`]),
//! since an `http://` server need not know it. Over a Unix socket the URL's authority
//! is only the `Host` sent; a socket client's OAuth traffic to any other origin
//! (authorization servers, their metadata) goes over TCP, with TLS for `https://`
//! ([`SocketOrigin`]).

use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{Request, Response, Uri};
use http_body_util::{BodyExt as _, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::{Connected, Connection, HttpConnector};
use hyper_util::rt::TokioIo;

use crate::error::ClientError;
use crate::http::{HttpBody, Sender};
use crate::transport::BoxFuture;

#[cfg(feature = "https")]
type Connector = hyper_rustls::HttpsConnector<HttpConnector>;
#[cfg(not(feature = "https"))]
type Connector = HttpConnector;

/// How the HTTP connector reaches the server.
#[derive(Clone, Debug, Default)]
pub(crate) struct HttpOptions {
    /// Speak HTTP/2 from the first byte over cleartext (and over a Unix socket).
    pub(crate) http2_prior_knowledge: bool,
    /// Connect to this Unix socket instead of the URL's host.
    pub(crate) unix_socket: Option<PathBuf>,
    /// Trust anchors (PEM) in addition to the system's, for `https://`.
    pub(crate) root_certificates_pem: Option<Vec<u8>>,
}

/// hyper's pooled client, over TCP (and TLS) or a Unix socket.
pub(crate) enum Hyper {
    Tcp(Client<Connector, Full<Bytes>>),
    Unix(Client<UnixConnector, Full<Bytes>>),
}

impl Hyper {
    pub(crate) fn new(options: &HttpOptions) -> Result<Self, ClientError> {
        let mut builder = Client::builder(hyper_util::rt::TokioExecutor::new());
        if options.http2_prior_knowledge {
            builder.http2_only(true);
        }
        Ok(match &options.unix_socket {
            Some(path) => Self::Unix(builder.build(UnixConnector(path.clone()))),
            None => Self::Tcp(builder.build(connector(options)?)),
        })
    }
}

/// Whether this build reaches `https://` URLs.
pub(crate) const HTTPS: bool = cfg!(feature = "https");

#[cfg(not(feature = "https"))]
fn connector(_options: &HttpOptions) -> Result<Connector, ClientError> {
    Ok(HttpConnector::new())
}

#[cfg(feature = "https")]
fn connector(options: &HttpOptions) -> Result<Connector, ClientError> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject as _;
    let mut roots = rustls::RootCertStore::empty();
    let found = rustls_native_certs::load_native_certs();
    let (mut added, _ignored) = roots.add_parsable_certificates(found.certs);
    if let Some(pem) = &options.root_certificates_pem {
        let certs = CertificateDer::pem_slice_iter(pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| ClientError::Transport(format!("trust anchors (PEM): {e}")))?;
        let (ok, _) = roots.add_parsable_certificates(certs);
        if ok == 0 {
            return Err(ClientError::Transport(
                "trust anchors (PEM): no certificate found".into(),
            ));
        }
        added += ok;
    }
    if added == 0 {
        tracing::warn!("no system TLS trust anchors: https:// servers cannot be verified");
    }
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| ClientError::Transport(format!("TLS setup: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    Ok(hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(config)
        .https_or_http()
        .enable_all_versions()
        .wrap_connector(http))
}

impl Sender for Hyper {
    fn send(
        &self,
        req: Request<Full<Bytes>>,
    ) -> BoxFuture<'static, Result<Response<HttpBody>, ClientError>> {
        let fut = match self {
            Self::Tcp(c) => c.request(req),
            Self::Unix(c) => c.request(req),
        };
        Box::pin(async move {
            fut.await
                .map(|r| r.map(|b| b.map_err(Into::into).boxed()))
                .map_err(|e| {
                    let mut text = e.to_string();
                    let mut cause = std::error::Error::source(&e);
                    while let Some(c) = cause {
                        text.push_str(": ");
                        text.push_str(&c.to_string());
                        cause = c.source();
                    }
                    ClientError::Transport(text)
                })
        })
    }
}

/// The sender of a Unix-socket client's OAuth requests: those to the MCP URL's origin
/// (its protected-resource metadata) go to the socket, every other one (authorization
/// servers, their metadata, token requests) over TCP, with TLS for `https://`, exactly
/// as a client without a socket would send them, never in plaintext to the socket.
pub(crate) struct SocketOrigin {
    origin: (Option<http::uri::Scheme>, Option<http::uri::Authority>),
    socket: Arc<dyn Sender>,
    network: Hyper,
}

impl SocketOrigin {
    /// Routes `mcp`'s origin to `socket` and the rest over the network, with
    /// `options`' trust anchors.
    pub(crate) fn new(
        mcp: &Uri,
        socket: Arc<dyn Sender>,
        options: &HttpOptions,
    ) -> Result<Self, ClientError> {
        let network = Hyper::new(&HttpOptions {
            http2_prior_knowledge: false,
            unix_socket: None,
            root_certificates_pem: options.root_certificates_pem.clone(),
        })?;
        Ok(Self {
            origin: (mcp.scheme().cloned(), mcp.authority().cloned()),
            socket,
            network,
        })
    }
}

impl Sender for SocketOrigin {
    fn send(
        &self,
        req: Request<Full<Bytes>>,
    ) -> BoxFuture<'static, Result<Response<HttpBody>, ClientError>> {
        let uri = req.uri();
        if uri.scheme() == self.origin.0.as_ref() && uri.authority() == self.origin.1.as_ref() {
            self.socket.send(req)
        } else {
            self.network.send(req)
        }
    }
}

/// Connects every URL to one Unix socket.
#[derive(Clone, Debug)]
pub(crate) struct UnixConnector(PathBuf);

impl tower_service::Service<Uri> for UnixConnector {
    type Response = UnixIo;
    type Error = std::io::Error;
    type Future = BoxFuture<'static, Result<UnixIo, std::io::Error>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _uri: Uri) -> Self::Future {
        let path = self.0.clone();
        Box::pin(async move {
            let stream = tokio::net::UnixStream::connect(&path).await.map_err(|e| {
                std::io::Error::new(e.kind(), format!("unix:{}: {e}", path.display()))
            })?;
            Ok(UnixIo(TokioIo::new(stream)))
        })
    }
}

/// A connection over a Unix socket, as hyper's client reads and writes it.
#[derive(Debug)]
pub(crate) struct UnixIo(TokioIo<tokio::net::UnixStream>);

impl Connection for UnixIo {
    fn connected(&self) -> Connected {
        Connected::new()
    }
}

impl hyper::rt::Read for UnixIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl hyper::rt::Write for UnixIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}
