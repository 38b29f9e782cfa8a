//! The user-agent step of the authorization-code flow: take the user to the
//! authorization URL and bring back the redirect. [`LoopbackAgent`] (the default)
//! prints the URL and takes the redirect on a listener on 127.0.0.1 (RFC 8252 §7.3);
//! a headless client (the flow's `headless` option) follows the authorization
//! endpoint's own redirect instead, which is what test authorization servers that
//! approve at once expect.

use std::sync::Mutex;
use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::error::ClientError;
use crate::transport::BoxFuture;

/// Takes the user to an authorization URL and returns where the authorization server
/// sent the browser back (the redirect URI with `code`, `state`, `iss` or `error`).
pub trait UserAgent: Send + Sync + std::fmt::Debug {
    /// The redirect URI to register and to send in the authorization request.
    fn redirect_uri(&self) -> Result<String, ClientError>;
    /// Runs the interaction for `url`; returns the full redirect URL.
    fn authorize<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<String, ClientError>>;
}

/// Prints the authorization URL on stderr and waits (at most `timeout`) for the
/// browser's redirect to `http://127.0.0.1:PORT/callback`.
pub struct LoopbackAgent {
    port: u16,
    listener: Mutex<Option<std::net::TcpListener>>,
    timeout: Duration,
}

impl std::fmt::Debug for LoopbackAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoopbackAgent")
            .field("port", &self.port)
            .finish_non_exhaustive()
    }
}

impl LoopbackAgent {
    /// A listener on 127.0.0.1:`port` (0: any free port), bound at the first use.
    #[must_use]
    pub fn new(port: u16) -> Self {
        Self {
            port,
            listener: Mutex::new(None),
            timeout: Duration::from_secs(300),
        }
    }

    /// How long to wait for the redirect (default 5 minutes).
    #[must_use]
    pub fn timeout(mut self, d: Duration) -> Self {
        self.timeout = d;
        self
    }

    fn bound_port(&self) -> Result<u16, ClientError> {
        let mut g = self.listener.lock().unwrap_or_else(|e| e.into_inner());
        if g.is_none() {
            let l = std::net::TcpListener::bind(("127.0.0.1", self.port))
                .map_err(|e| ClientError::Auth(format!("loopback listener: {e}")))?;
            l.set_nonblocking(true)
                .map_err(|e| ClientError::Auth(format!("loopback listener: {e}")))?;
            *g = Some(l);
        }
        g.as_ref()
            .and_then(|l| l.local_addr().ok())
            .map(|a| a.port())
            .ok_or_else(|| ClientError::Auth("loopback listener has no address".into()))
    }

    async fn wait(&self) -> Result<String, ClientError> {
        let port = self.bound_port()?;
        let std_listener = {
            let g = self.listener.lock().unwrap_or_else(|e| e.into_inner());
            g.as_ref()
                .and_then(|l| l.try_clone().ok())
                .ok_or_else(|| ClientError::Auth("loopback listener lost".into()))?
        };
        let listener = tokio::net::TcpListener::from_std(std_listener)
            .map_err(|e| ClientError::Auth(format!("loopback listener: {e}")))?;
        loop {
            let (mut sock, _) = listener
                .accept()
                .await
                .map_err(|e| ClientError::Auth(format!("loopback listener: {e}")))?;
            let mut buf = vec![0u8; 8192];
            let mut n = 0;
            while n < buf.len() {
                match tokio::time::timeout(Duration::from_secs(10), sock.read(&mut buf[n..])).await
                {
                    Ok(Ok(0)) | Err(_) | Ok(Err(_)) => break,
                    Ok(Ok(k)) => n += k,
                }
                if buf[..n].windows(4).any(|w| w == b"\r\n\r\n") {
                    break;
                }
            }
            let head = String::from_utf8_lossy(&buf[..n]);
            let target = head
                .lines()
                .next()
                .and_then(|l| l.strip_prefix("GET "))
                .and_then(|l| l.split(' ').next())
                .unwrap_or_default()
                .to_owned();
            if !target.starts_with("/callback") {
                let _ = sock
                    .write_all(
                        b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                    )
                    .await;
                continue;
            }
            let page = "<!doctype html><title>snodo</title><p>Authorization finished; you can close this window.</p>";
            let resp = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{page}",
                page.len()
            );
            let _ = sock.write_all(resp.as_bytes()).await;
            return Ok(format!("http://127.0.0.1:{port}{target}"));
        }
    }
}

impl UserAgent for LoopbackAgent {
    fn redirect_uri(&self) -> Result<String, ClientError> {
        Ok(format!("http://127.0.0.1:{}/callback", self.bound_port()?))
    }

    fn authorize<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<String, ClientError>> {
        Box::pin(async move {
            eprintln!("Open this URL in a browser to authorize:\n\n  {url}\n");
            match tokio::time::timeout(self.timeout, self.wait()).await {
                Ok(r) => r,
                Err(_) => Err(ClientError::Auth(format!(
                    "no authorization redirect within {:?}",
                    self.timeout
                ))),
            }
        })
    }
}

/// The parameters of a redirect back to the client.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Callback {
    pub(crate) code: Option<String>,
    pub(crate) state: Option<String>,
    pub(crate) iss: Option<String>,
    pub(crate) error: Option<String>,
    pub(crate) error_description: Option<String>,
}

/// Reads `code`, `state`, `iss`, `error` from a redirect URL's query.
pub(crate) fn parse_callback(url: &str) -> Callback {
    let no_frag = url.split('#').next().unwrap_or_default();
    let query = no_frag.split_once('?').map(|(_, q)| q).unwrap_or_default();
    let mut c = Callback::default();
    for (k, v) in form_urlencoded::parse(query.as_bytes()) {
        let slot = match k.as_ref() {
            "code" => &mut c.code,
            "state" => &mut c.state,
            "iss" => &mut c.iss,
            "error" => &mut c.error,
            "error_description" => &mut c.error_description,
            _ => continue,
        };
        if slot.is_none() {
            *slot = Some(v.into_owned());
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn callback_query_is_read_without_normalisation() {
        let c = parse_callback(
            "http://127.0.0.1/callback?code=abc&state=s%2B1&iss=http%3A%2F%2Fa%2F#x",
        );
        assert_eq!(c.code.as_deref(), Some("abc"));
        assert_eq!(c.state.as_deref(), Some("s+1"));
        assert_eq!(c.iss.as_deref(), Some("http://a/"));
        assert_eq!(parse_callback("no query"), Callback::default());
    }

    #[tokio::test]
    async fn loopback_takes_the_redirect() {
        let agent = std::sync::Arc::new(LoopbackAgent::new(0).timeout(Duration::from_secs(10)));
        let uri = agent.redirect_uri().unwrap();
        let a = agent.clone();
        let waiting = tokio::spawn(async move { a.authorize("http://as/authorize").await });
        let addr = uri
            .trim_start_matches("http://")
            .trim_end_matches("/callback")
            .to_owned();
        // A stray request first, then the redirect.
        for path in ["/favicon.ico", "/callback?code=c1&state=s1"] {
            let mut s = loop {
                if let Ok(s) = tokio::net::TcpStream::connect(&addr).await {
                    break s;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            };
            s.write_all(format!("GET {path} HTTP/1.1\r\nhost: x\r\n\r\n").as_bytes())
                .await
                .unwrap();
            let mut out = String::new();
            s.read_to_string(&mut out).await.unwrap();
        }
        let got = waiting.await.unwrap().unwrap();
        assert_eq!(parse_callback(&got).code.as_deref(), Some("c1"));
    }
}
