//! The HTTP client for the authorization server's documents (metadata, JWKS) and its
//! introspection endpoint: hyper-util's client (the transport snodo already uses),
//! with a timeout and a size limit on every answer.

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
    /// The URL is not a plain `http://` URL this client can reach (`https://` needs a
    /// TLS-terminating proxy or a custom [`crate::OAuthConfig::jwks_url`] over http).
    #[error("unsupported URL {0}: only http:// is supported by the built-in client")]
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

/// A small JSON-over-HTTP client.
#[derive(Clone)]
pub(crate) struct Fetcher {
    client: Client<HttpConnector, Full<Bytes>>,
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
    pub(crate) fn new(timeout: Duration) -> Self {
        let mut connector = HttpConnector::new();
        connector.set_connect_timeout(Some(timeout));
        connector.set_nodelay(true);
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .build(connector);
        Self { client, timeout }
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

fn checked(url: &str) -> Result<http::Uri, FetchError> {
    let uri: http::Uri = url
        .parse()
        .map_err(|_| FetchError::Unsupported(url.to_owned()))?;
    if uri.scheme_str() != Some("http") || uri.authority().is_none() {
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
        assert!(checked("https://as.example/jwks").is_err());
        assert!(checked("http://127.0.0.1:9/jwks").is_ok());
        assert!(checked("/relative").is_err());
    }
}
