//! The socket half of the HTTP connector: hyper's pooled HTTP/1.1 client (the stack
//! the server uses), with TLS for `https://` URLs when the `https` feature is on
//! (rustls with the ring provider and the system's trust anchors, through
//! hyper-rustls — the same choice as snodo-oauth).

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt as _, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;

use crate::error::ClientError;
use crate::http::{HttpBody, Sender};
use crate::transport::BoxFuture;

#[cfg(feature = "https")]
type Connector = hyper_rustls::HttpsConnector<HttpConnector>;
#[cfg(not(feature = "https"))]
type Connector = HttpConnector;

/// hyper's pooled HTTP/1.1 client.
pub(crate) struct Hyper(Client<Connector, Full<Bytes>>);

impl Hyper {
    pub(crate) fn new() -> Result<Self, ClientError> {
        let builder = Client::builder(hyper_util::rt::TokioExecutor::new());
        Ok(Self(builder.build(connector()?)))
    }
}

/// Whether this build reaches `https://` URLs.
pub(crate) const HTTPS: bool = cfg!(feature = "https");

#[cfg(not(feature = "https"))]
fn connector() -> Result<Connector, ClientError> {
    Ok(HttpConnector::new())
}

#[cfg(feature = "https")]
fn connector() -> Result<Connector, ClientError> {
    let mut roots = rustls::RootCertStore::empty();
    let found = rustls_native_certs::load_native_certs();
    let (added, _ignored) = roots.add_parsable_certificates(found.certs);
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
        .enable_http1()
        .wrap_connector(http))
}

impl Sender for Hyper {
    fn send(
        &self,
        req: Request<Full<Bytes>>,
    ) -> BoxFuture<'static, Result<Response<HttpBody>, ClientError>> {
        let fut = self.0.request(req);
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
