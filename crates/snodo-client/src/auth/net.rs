//! The OAuth client's HTTP: metadata `GET`s, form and JSON `POST`s to the
//! authorization server, over the same [`Sender`] as the MCP connection. Redirects are
//! not followed (a metadata document must be where it was asked for); no request or
//! error text carries a credential.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{ACCEPT, CONTENT_TYPE};
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, StatusCode, Uri};
use http_body_util::Full;
use serde_json::Value;

use crate::error::ClientError;
use crate::http::{Sender, read_all};

/// How long one request to a metadata document or an authorization server may take.
const TIMEOUT: Duration = Duration::from_secs(30);

/// A response: status, headers, body.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
}

impl Answer {
    /// The body as a JSON object, if it is one.
    pub(crate) fn json(&self) -> Option<serde_json::Map<String, Value>> {
        match serde_json::from_slice::<Value>(&self.body) {
            Ok(Value::Object(m)) => Some(m),
            _ => None,
        }
    }

    /// An OAuth error answer as text (`error`: `error_description`), never the body
    /// of a success.
    pub(crate) fn oauth_error(&self) -> String {
        let j = self.json();
        let field = |k: &str| {
            j.as_ref()
                .and_then(|m| m.get(k))
                .and_then(Value::as_str)
                .map(|s| s.chars().take(200).collect::<String>())
        };
        match (field("error"), field("error_description")) {
            (Some(e), Some(d)) => format!("HTTP {}: {e}: {d}", self.status.as_u16()),
            (Some(e), None) => format!("HTTP {}: {e}", self.status.as_u16()),
            _ => format!("HTTP {}", self.status.as_u16()),
        }
    }
}

/// The OAuth client's HTTP client.
#[derive(Clone)]
pub(crate) struct Net {
    sender: Arc<dyn Sender>,
}

impl std::fmt::Debug for Net {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Net")
    }
}

fn parse_uri(url: &str) -> Result<Uri, ClientError> {
    let uri: Uri = url
        .parse()
        .map_err(|_| ClientError::Auth(format!("not a URL: {}", redact(url))))?;
    match (uri.scheme_str(), uri.authority()) {
        (Some("http" | "https"), Some(_)) => Ok(uri),
        _ => Err(ClientError::Auth(format!(
            "not an http(s) URL: {}",
            redact(url)
        ))),
    }
}

/// A URL for an error message: without its query (which may carry a code or state).
pub(crate) fn redact(url: &str) -> String {
    let base = url.split(['?', '#']).next().unwrap_or_default();
    base.chars().take(200).collect()
}

impl Net {
    pub(crate) fn new(sender: Arc<dyn Sender>) -> Self {
        Self { sender }
    }

    /// Sends a request and reads the whole answer.
    pub(crate) async fn send(
        &self,
        method: Method,
        url: &str,
        headers: &[(HeaderName, HeaderValue)],
        body: Option<(&'static str, Vec<u8>)>,
    ) -> Result<Answer, ClientError> {
        let uri = parse_uri(url)?;
        let mut b = Request::builder().method(method).uri(uri.clone());
        if let Some(a) = uri.authority() {
            if let Ok(h) = HeaderValue::from_str(a.as_str()) {
                b = b.header(http::header::HOST, h);
            }
        }
        b = b.header(ACCEPT, "application/json");
        for (k, v) in headers {
            b = b.header(k, v);
        }
        let body = match body {
            Some((ct, bytes)) => {
                b = b.header(CONTENT_TYPE, ct);
                Bytes::from(bytes)
            }
            None => Bytes::new(),
        };
        let req = b
            .body(Full::new(body))
            .map_err(|e| ClientError::Auth(format!("building a request: {e}")))?;
        let fut = async {
            let resp = self.sender.send(req).await?;
            let (parts, body) = resp.into_parts();
            let body = read_all(body).await?;
            Ok::<_, ClientError>(Answer {
                status: parts.status,
                headers: parts.headers,
                body,
            })
        };
        match tokio::time::timeout(TIMEOUT, fut).await {
            Ok(r) => r.map_err(|e| match e {
                ClientError::Transport(t) => {
                    ClientError::Auth(format!("{} unreachable: {t}", redact(url)))
                }
                other => other,
            }),
            Err(_) => Err(ClientError::Auth(format!(
                "{} did not answer within {TIMEOUT:?}",
                redact(url)
            ))),
        }
    }

    /// `GET url` for a JSON metadata document: `None` when it is not there (any non-2xx
    /// or a body that is not a JSON object).
    pub(crate) async fn metadata(
        &self,
        url: &str,
    ) -> Result<Option<serde_json::Map<String, Value>>, ClientError> {
        let a = self.send(Method::GET, url, &[], None).await?;
        if !a.status.is_success() {
            tracing::debug!(url = %redact(url), status = %a.status, "no metadata");
            return Ok(None);
        }
        Ok(a.json())
    }

    /// `POST url` with a form body.
    pub(crate) async fn post_form(
        &self,
        url: &str,
        form: &[(&str, &str)],
        headers: &[(HeaderName, HeaderValue)],
    ) -> Result<Answer, ClientError> {
        let body = {
            let mut s = form_urlencoded::Serializer::new(String::new());
            for (k, v) in form {
                s.append_pair(k, v);
            }
            s.finish().into_bytes()
        };
        self.send(
            Method::POST,
            url,
            headers,
            Some(("application/x-www-form-urlencoded", body)),
        )
        .await
    }

    /// `POST url` with a JSON body.
    pub(crate) async fn post_json(&self, url: &str, body: &Value) -> Result<Answer, ClientError> {
        let bytes = serde_json::to_vec(body).map_err(|e| ClientError::Auth(e.to_string()))?;
        self.send(Method::POST, url, &[], Some(("application/json", bytes)))
            .await
    }
}
