//! The HTTP client for the authorization server's documents (metadata, JWKS) and its
//! introspection endpoint: hyper-util's client (the transport snodo already uses), over
//! rustls for https:// (feature `https`), with a timeout and a size limit on every
//! answer.

use std::fmt;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, StatusCode, header};
use http_body_util::{BodyExt as _, Full, Limited};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;

/// Largest document accepted from the authorization server.
const MAX_DOCUMENT: usize = 1 << 20;

/// Why a document could not be fetched.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FetchError {
    /// The URL is not an absolute `http://` (or, with the `https` feature, `https://`)
    /// URL.
    #[error("unsupported URL {0}: expected an absolute {SCHEMES} URL")]
    Unsupported(String),
    /// Connecting, sending or reading failed.
    #[error("request to {url} failed: {reason}")]
    Transport {
        /// The URL.
        url: String,
        /// What failed.
        reason: String,
    },
    /// The server answered with a non-success status.
    #[error("{url} answered {status}")]
    Status {
        /// The URL.
        url: String,
        /// The status.
        status: StatusCode,
    },
    /// The answer was not a JSON object.
    #[error("{url} did not answer a JSON object")]
    NotJson {
        /// The URL.
        url: String,
    },
}

#[cfg(feature = "https")]
type Connector = hyper_rustls::HttpsConnector<HttpConnector>;
#[cfg(not(feature = "https"))]
type Connector = HttpConnector;

#[cfg(feature = "https")]
const SCHEMES: &str = "http:// or https://";
#[cfg(not(feature = "https"))]
const SCHEMES: &str = "http:// (https:// needs the `https` feature)";

/// A small JSON-over-HTTP client.
#[derive(Clone)]
pub(crate) struct Fetcher {
    client: Client<Connector, Full<Bytes>>,
    timeout: Duration,
}

impl fmt::Debug for Fetcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fetcher")
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl Fetcher {
    /// A client with `timeout` on every request, trusting the system's anchors and
    /// `roots_pem` (PEM CA certificates) for https://.
    pub(crate) fn new(timeout: Duration, roots_pem: &[Vec<u8>]) -> Result<Self, String> {
        let mut connector = HttpConnector::new();
        connector.set_connect_timeout(Some(timeout));
        connector.set_nodelay(true);
        let connector = tls(connector, roots_pem)?;
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .build(connector);
        Ok(Self { client, timeout })
    }

    /// GETs `url` and reads a JSON object.
    pub(crate) async fn get_json(&self, url: &str) -> Result<Value, FetchError> {
        let req = Request::builder()
            .method(Method::GET)
            .uri(checked(url)?)
            .header(header::ACCEPT, "application/json")
            .body(Full::new(Bytes::new()));
        self.send(url, req).await
    }

    /// POSTs a form to `url` (optionally with HTTP Basic client credentials) and reads
    /// a JSON object.
    pub(crate) async fn post_form(
        &self,
        url: &str,
        form: &[(&str, &str)],
        basic: Option<(&str, &str)>,
    ) -> Result<Value, FetchError> {
        let body = form_encode(form);
        let mut req = Request::builder()
            .method(Method::POST)
            .uri(checked(url)?)
            .header(header::ACCEPT, "application/json")
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
        if let Some((id, secret)) = basic {
            use base64::Engine as _;
            // RFC 6749 2.3.1: the credentials are form-encoded before Basic encoding.
            let pair = format!("{}:{}", form_component(id), form_component(secret));
            let b64 = base64::engine::general_purpose::STANDARD.encode(pair);
            req = req.header(header::AUTHORIZATION, format!("Basic {b64}"));
        }
        self.send(url, req.body(Full::new(Bytes::from(body)))).await
    }

    async fn send(
        &self,
        url: &str,
        req: Result<Request<Full<Bytes>>, http::Error>,
    ) -> Result<Value, FetchError> {
        let transport = |reason: String| FetchError::Transport {
            url: url.to_owned(),
            reason,
        };
        let req = req.map_err(|e| transport(e.to_string()))?;
        let work = async {
            let resp = self
                .client
                .request(req)
                .await
                .map_err(|e| transport(e.to_string()))?;
            let status = resp.status();
            if !status.is_success() {
                return Err(FetchError::Status {
                    url: url.to_owned(),
                    status,
                });
            }
            let body = Limited::new(resp.into_body(), MAX_DOCUMENT)
                .collect()
                .await
                .map_err(|e| transport(e.to_string()))?
                .to_bytes();
            match serde_json::from_slice::<Value>(&body) {
                Ok(v @ Value::Object(_)) => Ok(v),
                _ => Err(FetchError::NotJson {
                    url: url.to_owned(),
                }),
            }
        };
        tokio::time::timeout(self.timeout, work)
            .await
            .map_err(|_| transport("timed out".into()))?
    }
}

#[cfg(not(feature = "https"))]
#[allow(clippy::unnecessary_wraps)]
fn tls(connector: HttpConnector, _roots_pem: &[Vec<u8>]) -> Result<Connector, String> {
    Ok(connector)
}

/// rustls (ring provider) over `connector`: the system's trust anchors plus `roots_pem`.
#[cfg(feature = "https")]
fn tls(mut connector: HttpConnector, roots_pem: &[Vec<u8>]) -> Result<Connector, String> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject as _;
    connector.enforce_http(false);
    let mut roots = rustls::RootCertStore::empty();
    let native = system_roots();
    let (added, _ignored) = roots.add_parsable_certificates(native);
    for pem in roots_pem {
        let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(pem)
            .collect::<Result<_, _>>()
            .map_err(|e| format!("a TLS root certificate PEM is unreadable: {e}"))?;
        if certs.is_empty() {
            return Err("a TLS root certificate PEM holds no certificate".into());
        }
        for cert in certs {
            roots
                .add(cert)
                .map_err(|e| format!("a TLS root certificate is unusable: {e}"))?;
        }
    }
    if roots.is_empty() {
        tracing::warn!("no TLS trust anchors: https:// authorization servers cannot be reached");
    }
    tracing::debug!(system = added, "TLS trust anchors loaded");
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(config)
        .https_or_http()
        .enable_http1()
        .wrap_connector(connector))
}

/// The system's trust anchors (those that cannot be read are skipped).
#[cfg(feature = "https")]
fn system_roots() -> Vec<rustls::pki_types::CertificateDer<'static>> {
    let found = rustls_native_certs::load_native_certs();
    for e in &found.errors {
        tracing::debug!(error = %e, "a system trust anchor could not be read");
    }
    found.certs
}

fn checked(url: &str) -> Result<http::Uri, FetchError> {
    let uri: http::Uri = url
        .parse()
        .map_err(|_| FetchError::Unsupported(url.to_owned()))?;
    let scheme = uri.scheme_str();
    let scheme_ok = scheme == Some("http") || (cfg!(feature = "https") && scheme == Some("https"));
    if !scheme_ok || uri.authority().is_none() {
        return Err(FetchError::Unsupported(url.to_owned()));
    }
    Ok(uri)
}

/// `application/x-www-form-urlencoded` for one component.
fn form_component(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'*' => {
                out.push(char::from(b));
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

fn form_encode(form: &[(&str, &str)]) -> String {
    form.iter()
        .map(|(k, v)| format!("{}={}", form_component(k), form_component(v)))
        .collect::<Vec<_>>()
        .join("&")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms() {
        assert_eq!(
            form_encode(&[("token", "a b+c/="), ("x", "é")]),
            "token=a+b%2Bc%2F%3D&x=%C3%A9"
        );
        assert_eq!(
            checked("https://as.example/jwks").is_ok(),
            cfg!(feature = "https")
        );
        assert!(checked("ftp://as.example/jwks").is_err());
        assert!(checked("http://127.0.0.1:9/jwks").is_ok());
        assert!(checked("/relative").is_err());
    }
}
