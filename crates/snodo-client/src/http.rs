//! Streamable HTTP: one POST per message; JSON or SSE answers; `Mcp-Session-Id` from
//! servers that issue one (echoed, `DELETE` at close); a broken SSE answer resumed with
//! `GET` + `Last-Event-ID` after the server's `retry` delay (initialize era).
//!
//! The same code drives a real socket (hyper's client) and an in-process
//! [`McpService`](snodo::http::McpService): both are a [`Sender`].

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt as _;
use http::header::{ACCEPT, CONTENT_TYPE, HOST};
use http::{HeaderMap, HeaderName, HeaderValue, Method as HttpMethod, Request, Response, Uri};
use http_body_util::{BodyExt as _, Full, combinators::BoxBody};
use serde_json::Value;
use snodo::protocol::RequestId;
use tokio::sync::mpsc;

use crate::error::ClientError;
use crate::sse::{MAX_EVENT, SseReader};
use crate::transport::{BoxFuture, Message, Messages, Outgoing, Transport};

/// A response body from either sender.
pub(crate) type HttpBody = BoxBody<Bytes, Box<dyn std::error::Error + Send + Sync>>;

const SESSION: HeaderName = HeaderName::from_static("mcp-session-id");
const VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");
const ACCEPT_BOTH: &str = "application/json, text/event-stream";
/// How long opening the standalone stream may delay the first request.
const LISTEN_WAIT: Duration = Duration::from_secs(2);
/// How many same-origin redirects one request follows.
const MAX_REDIRECTS: usize = 3;
/// How many refusals one request may answer with new credentials (authorizations,
/// refreshes, DPoP nonces; the session bounds authorizations on its own).
const MAX_AUTH_ROUNDS: usize = 6;
/// How many times one broken SSE answer is resumed.
const MAX_RESUMES: usize = 5;

/// Sends one HTTP request and returns the response head and body.
pub(crate) trait Sender: Send + Sync + 'static {
    fn send(
        &self,
        req: Request<Full<Bytes>>,
    ) -> BoxFuture<'static, Result<Response<HttpBody>, ClientError>>;
}

/// An [`McpService`](snodo::http::McpService) called directly, no socket.
pub(crate) struct InProcess(pub(crate) snodo::http::McpService);

impl Sender for InProcess {
    fn send(
        &self,
        req: Request<Full<Bytes>>,
    ) -> BoxFuture<'static, Result<Response<HttpBody>, ClientError>> {
        let svc = self.0.clone();
        Box::pin(async move {
            let resp = svc.handle(req).await;
            Ok(resp.map(|b| b.map_err(|never| match never {}).boxed()))
        })
    }
}

/// The Streamable HTTP connector.
pub(crate) struct HttpTransport {
    sender: Arc<dyn Sender>,
    /// The endpoint; a same-origin `307`/`308` redirect moves it for good.
    url: Mutex<Uri>,
    host: Option<HeaderValue>,
    extra: HeaderMap,
    session: Mutex<Option<HeaderValue>>,
    version: Mutex<Option<String>>,
    /// Where the standalone `GET` stream's messages go.
    unsolicited_tx: mpsc::Sender<Value>,
    unsolicited_rx: Mutex<Option<mpsc::Receiver<Value>>>,
    /// The task reading the standalone stream.
    listener: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// The OAuth session, when the client was built with one.
    auth: Option<Arc<crate::auth::Session>>,
}

impl Drop for HttpTransport {
    fn drop(&mut self) {
        if let Some(task) = self.listener.get_mut().ok().and_then(Option::take) {
            task.abort();
        }
    }
}

impl HttpTransport {
    pub(crate) fn new(sender: Arc<dyn Sender>, url: Uri, extra: HeaderMap) -> Self {
        let (tx, rx) = mpsc::channel(256);
        let host = url
            .authority()
            .and_then(|a| HeaderValue::from_str(a.as_str()).ok());
        Self {
            sender,
            url: Mutex::new(url),
            host,
            extra,
            session: Mutex::new(None),
            version: Mutex::new(None),
            unsolicited_tx: tx,
            unsolicited_rx: Mutex::new(Some(rx)),
            listener: Mutex::new(None),
            auth: None,
        }
    }

    /// Puts `session`'s token on every request and lets it answer `401`/`403`.
    pub(crate) fn with_auth(mut self, session: crate::auth::Session) -> Self {
        self.auth = Some(Arc::new(session));
        self
    }

    fn session(&self) -> Option<HeaderValue> {
        self.session.lock().ok().and_then(|s| s.clone())
    }

    fn base(&self, method: HttpMethod, version: Option<&str>) -> http::request::Builder {
        let mut b = Request::builder().method(method).uri(self.url());
        if let Some(h) = &self.host {
            b = b.header(HOST, h.clone());
        }
        for (k, v) in &self.extra {
            b = b.header(k, v);
        }
        if let Some(v) = version.and_then(|v| HeaderValue::from_str(v).ok()) {
            b = b.header(VERSION, v);
        }
        if let Some(s) = self.session() {
            b = b.header(SESSION, s);
        }
        if let Some(auth) = &self.auth {
            for (k, v) in auth.credentials_now(&method_of(&b), &self.url().to_string()) {
                b = b.header(k, v);
            }
        }
        b
    }

    /// Sends `out`, with the OAuth session's credentials when there is one: a refusal
    /// the session can answer (a new or refreshed token, a DPoP nonce) is retried.
    async fn send_authorized(&self, out: &Outgoing) -> Result<Response<HttpBody>, ClientError> {
        let Some(auth) = &self.auth else {
            return self.sender.send(self.post(out)?).await;
        };
        for _ in 0..MAX_AUTH_ROUNDS {
            let url = self.url().to_string();
            let creds = auth.credentials(&HttpMethod::POST, &url).await?;
            let mut req = self.post(out)?;
            for (k, v) in creds.headers {
                req.headers_mut().insert(k, v);
            }
            let resp = self.sender.send(req).await?;
            let status = resp.status();
            if status == http::StatusCode::UNAUTHORIZED || status == http::StatusCode::FORBIDDEN {
                if auth
                    .refused(status, resp.headers(), &url, creds.token.as_deref())
                    .await?
                {
                    let _ = read_all(resp.into_body()).await;
                    continue;
                }
            } else if status.is_success() {
                auth.succeeded().await;
            }
            return Ok(resp);
        }
        Err(ClientError::Auth(
            "the server kept refusing fresh credentials".into(),
        ))
    }

    fn post(&self, out: &Outgoing) -> Result<Request<Full<Bytes>>, ClientError> {
        if let (Some(v), Ok(mut last)) = (&out.version, self.version.lock()) {
            *last = Some(v.clone());
        }
        let mut b = self
            .base(HttpMethod::POST, out.version.as_deref())
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, ACCEPT_BOTH);
        if out.mirrors {
            b = b.header("mcp-method", out.method.as_ref());
            if let Some(n) = &out.name {
                b = b.header("mcp-name", n);
            }
            for (k, v) in &out.param_headers {
                b = b.header(format!("mcp-param-{k}"), v);
            }
        }
        b.body(Full::new(out.body.clone()))
            .map_err(ClientError::transport)
    }

    fn url(&self) -> Uri {
        self.url
            .lock()
            .map(|u| u.clone())
            .unwrap_or_else(|e| e.into_inner().clone())
    }

    /// Where a `307`/`308` answer points, when it stays on the same origin (a POST is
    /// re-sent there as it was; other origins are not followed: the headers may carry
    /// credentials).
    fn redirect_target(&self, resp: &Response<HttpBody>) -> Option<Uri> {
        if !matches!(resp.status().as_u16(), 307 | 308) {
            return None;
        }
        let loc = resp.headers().get(http::header::LOCATION)?.to_str().ok()?;
        let cur = self.url();
        let target: Uri = if loc.starts_with('/') {
            let mut parts = cur.clone().into_parts();
            parts.path_and_query = Some(loc.parse().ok()?);
            Uri::from_parts(parts).ok()?
        } else {
            loc.parse().ok()?
        };
        (target.scheme() == cur.scheme() && target.authority() == cur.authority()).then_some(target)
    }

    async fn exchange(&self, out: &Outgoing) -> Result<Response<HttpBody>, ClientError> {
        let session = self.session();
        let mut resp = self.send_authorized(out).await?;
        for _ in 0..MAX_REDIRECTS {
            let Some(target) = self.redirect_target(&resp) else {
                break;
            };
            let _ = read_all(resp.into_body()).await;
            if let Ok(mut u) = self.url.lock() {
                *u = target;
            }
            resp = self.send_authorized(out).await?;
        }
        if resp.status() == http::StatusCode::NOT_FOUND && session.is_some() {
            // Only the session this request carried is forgotten.
            if let Ok(mut slot) = self.session.lock() {
                if *slot == session {
                    *slot = None;
                }
            }
            let _ = read_all(resp.into_body()).await;
            return Err(ClientError::SessionExpired);
        }
        if out.method == "initialize" {
            if let (Some(s), Ok(mut slot)) = (resp.headers().get(SESSION), self.session.lock()) {
                *slot = Some(s.clone());
            }
        }
        Ok(resp)
    }

    /// Opens the standalone `GET` stream: waits (at most [`LISTEN_WAIT`]) for its
    /// response head, then reads it in a task until close.
    async fn open_listener(&self) {
        let version = self.version.lock().ok().and_then(|v| v.clone());
        let Ok(req) = self
            .base(HttpMethod::GET, version.as_deref())
            .header(ACCEPT, "text/event-stream")
            .body(Full::new(Bytes::new()))
        else {
            return;
        };
        let sender = self.sender.clone();
        let tx = self.unsolicited_tx.clone();
        let (opened_tx, opened) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let resp = sender.send(req).await;
            let _ = opened_tx.send(());
            let Ok(resp) = resp else { return };
            if !resp.status().is_success() || !is_sse(resp.headers()) {
                tracing::debug!(status = %resp.status(), "no standalone stream");
                return;
            }
            let mut body = resp.into_body();
            let mut reader = SseReader::default();
            while let Some(Ok(frame)) = body.frame().await {
                let Ok(data) = frame.into_data() else {
                    continue;
                };
                let Ok(events) = reader.feed(&data) else {
                    return;
                };
                for e in events {
                    let Ok(v) = serde_json::from_str::<Value>(&e) else {
                        continue;
                    };
                    let mut q = VecDeque::new();
                    push_messages(v, &mut q);
                    for m in q {
                        if tx.send(m).await.is_err() {
                            return;
                        }
                    }
                }
            }
        });
        if let Ok(mut slot) = self.listener.lock() {
            if let Some(old) = slot.replace(task) {
                old.abort();
            }
        }
        let _ = tokio::time::timeout(LISTEN_WAIT, opened).await;
    }

    fn resumer(&self) -> Resumer {
        Resumer {
            sender: self.sender.clone(),
            base: {
                let b = self.base(
                    HttpMethod::GET,
                    self.version.lock().ok().and_then(|v| v.clone()).as_deref(),
                );
                b.header(ACCEPT, "text/event-stream")
            },
        }
    }
}

/// What a broken SSE answer needs to be resumed with `GET`.
struct Resumer {
    sender: Arc<dyn Sender>,
    base: http::request::Builder,
}

impl Resumer {
    async fn resume(&self, last_id: &str) -> Result<HttpBody, ClientError> {
        let mut b = Request::builder().method(HttpMethod::GET);
        if let Some(uri) = self.base.uri_ref() {
            b = b.uri(uri.clone());
        }
        if let Some(h) = self.base.headers_ref() {
            for (k, v) in h {
                b = b.header(k, v);
            }
        }
        let req = b
            .header(LAST_EVENT_ID, last_id)
            .body(Full::new(Bytes::new()))
            .map_err(ClientError::transport)?;
        let resp = self.sender.send(req).await?;
        if !resp.status().is_success() || !is_sse(resp.headers()) {
            return Err(ClientError::Transport(format!(
                "resuming the stream failed: HTTP {}",
                resp.status()
            )));
        }
        Ok(resp.into_body())
    }
}

fn method_of(b: &http::request::Builder) -> HttpMethod {
    b.method_ref().cloned().unwrap_or(HttpMethod::GET)
}

fn is_sse(h: &HeaderMap) -> bool {
    h.get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("text/event-stream"))
}

/// Reads a whole (non-SSE) body, at most [`MAX_EVENT`] bytes.
pub(crate) async fn read_all(mut body: HttpBody) -> Result<Bytes, ClientError> {
    let mut buf = bytes::BytesMut::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| ClientError::Transport(e.to_string()))?;
        if let Ok(data) = frame.into_data() {
            if buf.len() + data.len() > MAX_EVENT {
                return Err(ClientError::Transport(
                    "an HTTP answer exceeds the size limit".into(),
                ));
            }
            buf.extend_from_slice(&data);
        }
    }
    Ok(buf.freeze())
}

fn push_messages(v: Value, into: &mut VecDeque<Value>) {
    match v {
        Value::Array(items) => into.extend(items),
        other => into.push_back(other),
    }
}

fn answers(v: &Value, id: Option<&RequestId>) -> bool {
    let Some(id) = id else { return false };
    v.get("method").is_none()
        && (v.get("result").is_some() || v.get("error").is_some())
        && v.get("id")
            .and_then(|i| serde_json::from_value::<RequestId>(i.clone()).ok())
            .as_ref()
            == Some(id)
}

struct SseState {
    body: HttpBody,
    reader: SseReader,
    queue: VecDeque<Value>,
    id: Option<RequestId>,
    done: bool,
    resumer: Resumer,
    resumes: usize,
}

fn sse_messages(body: HttpBody, id: Option<RequestId>, resumer: Resumer) -> Messages {
    let st = SseState {
        body,
        reader: SseReader::default(),
        queue: VecDeque::new(),
        id,
        done: false,
        resumer,
        resumes: 0,
    };
    futures_util::stream::unfold(st, |mut st| async move {
        loop {
            if let Some(v) = st.queue.pop_front() {
                if answers(&v, st.id.as_ref()) {
                    st.done = true;
                    st.queue.clear();
                }
                return Some((Ok(Message::Tree(v)), st));
            }
            if st.done {
                return None;
            }
            let broken = match st.body.frame().await {
                Some(Ok(frame)) => {
                    let Ok(data) = frame.into_data() else {
                        continue;
                    };
                    match st.reader.feed(&data) {
                        Ok(events) => {
                            for e in events {
                                if e.trim().is_empty() {
                                    continue;
                                }
                                match serde_json::from_str::<Value>(&e) {
                                    Ok(v) => push_messages(v, &mut st.queue),
                                    Err(err) => {
                                        st.done = true;
                                        return Some((
                                            Err(ClientError::Transport(format!(
                                                "an SSE event is not JSON: {err}"
                                            ))),
                                            st,
                                        ));
                                    }
                                }
                            }
                            continue;
                        }
                        Err(e) => {
                            st.done = true;
                            return Some((Err(ClientError::Transport(e)), st));
                        }
                    }
                }
                Some(Err(e)) => Some(e.to_string()),
                None => None,
            };
            // The stream ended (or broke) before the answer: resume when the server
            // gave event ids, else end here (the caller reports the missing answer).
            let last = st.reader.last_id.clone();
            match last {
                Some(last) if st.id.is_some() && st.resumes < MAX_RESUMES => {
                    st.resumes += 1;
                    let delay = st.reader.retry.unwrap_or(Duration::from_secs(1));
                    tokio::time::sleep(delay).await;
                    match st.resumer.resume(&last).await {
                        Ok(body) => st.body = body,
                        Err(e) => {
                            st.done = true;
                            return Some((Err(e), st));
                        }
                    }
                }
                _ => {
                    st.done = true;
                    if let Some(e) = broken {
                        return Some((Err(ClientError::Transport(e)), st));
                    }
                    return None;
                }
            }
        }
    })
    .boxed()
}

impl Transport for HttpTransport {
    fn request(&self, out: Outgoing) -> BoxFuture<'_, Result<Messages, ClientError>> {
        Box::pin(async move {
            let resp = self.exchange(&out).await?;
            let status = resp.status();
            if status.is_success() && is_sse(resp.headers()) {
                return Ok(sse_messages(resp.into_body(), out.id, self.resumer()));
            }
            let bytes = read_all(resp.into_body()).await?;
            if bytes.is_empty() && status.is_success() {
                return Ok(futures_util::stream::empty().boxed());
            }
            match serde_json::from_slice::<Value>(&bytes) {
                Ok(v) if v.is_object() || v.is_array() => {
                    let mut q = VecDeque::new();
                    push_messages(v, &mut q);
                    Ok(
                        futures_util::stream::iter(q.into_iter().map(|v| Ok(Message::Tree(v))))
                            .boxed(),
                    )
                }
                _ => Err(ClientError::Http {
                    status: status.as_u16(),
                    body: String::from_utf8_lossy(&bytes[..bytes.len().min(512)]).into_owned(),
                }),
            }
        })
    }

    fn send(&self, out: Outgoing) -> BoxFuture<'_, Result<(), ClientError>> {
        Box::pin(async move {
            let resp = self.exchange(&out).await?;
            let status = resp.status();
            let bytes = read_all(resp.into_body()).await.unwrap_or_default();
            if status.is_success() {
                Ok(())
            } else {
                Err(ClientError::Http {
                    status: status.as_u16(),
                    body: String::from_utf8_lossy(&bytes[..bytes.len().min(512)]).into_owned(),
                })
            }
        })
    }

    fn unsolicited(&self) -> Option<mpsc::Receiver<Value>> {
        self.unsolicited_rx.lock().ok()?.take()
    }

    fn listen(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.open_listener())
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if let Some(task) = self.listener.lock().ok().and_then(|mut l| l.take()) {
                task.abort();
            }
            if self.session().is_none() {
                return;
            }
            let version = self.version.lock().ok().and_then(|v| v.clone());
            if let Ok(req) = self
                .base(HttpMethod::DELETE, version.as_deref())
                .body(Full::new(Bytes::new()))
            {
                if let Ok(resp) = self.sender.send(req).await {
                    let _ = read_all(resp.into_body()).await;
                }
            }
            if let Ok(mut s) = self.session.lock() {
                *s = None;
            }
        })
    }
}
