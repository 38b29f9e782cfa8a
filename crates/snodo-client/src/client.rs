//! The client: a connector, the negotiated protocol, and the request core (metadata,
//! mirror headers, `input_required` rounds, server questions, callbacks, retries on
//! `-32022`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::{Duration, Instant};

use futures_util::StreamExt as _;
use http::HeaderMap;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use snodo::ParamHeader;
use snodo::protocol::{Dialect, ErrorCode, Method, RequestId};

use crate::answer::Answer;
use crate::builder::{CallOptions, ClientBuilder, Protocol};
use crate::error::ClientError;
use crate::handlers::Handlers;
use crate::headers;
use crate::message::{self, Borrowed, Incoming};
use crate::transport::{Message, Outgoing, Transport};
use crate::types::ServerDetails;

pub(crate) const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
pub(crate) const META_CAPS: &str = "io.modelcontextprotocol/clientCapabilities";
pub(crate) const META_INFO: &str = "io.modelcontextprotocol/clientInfo";
pub(crate) const META_LOG: &str = "io.modelcontextprotocol/logLevel";

/// The negotiated protocol.
#[derive(Clone, Debug, Default)]
pub(crate) struct State {
    pub(crate) version: String,
    pub(crate) stateless: bool,
    pub(crate) pinned: bool,
    pub(crate) details: ServerDetails,
}

impl State {
    /// This state without the server's details.
    fn wire(&self) -> Self {
        Self {
            version: self.version.clone(),
            stateless: self.stateless,
            pinned: self.pinned,
            details: ServerDetails::default(),
        }
    }
}

/// The client's capabilities and info, serialised once (they never change), for the
/// `_meta` of every request in the stateless revision.
pub(crate) struct MetaJson {
    capabilities: Box<RawValue>,
    client_info: Box<RawValue>,
}

impl MetaJson {
    pub(crate) fn of(capabilities: &Value, client_info: &Value) -> Self {
        // A JSON value always serialises.
        let raw = |v: &Value| serde_json::value::to_raw_value(v).unwrap_or_default();
        Self {
            capabilities: raw(capabilities),
            client_info: raw(client_info),
        }
    }
}

pub(crate) struct Inner {
    pub(crate) transport: Arc<dyn Transport>,
    pub(crate) next_id: AtomicI64,
    pub(crate) state: RwLock<State>,
    pub(crate) client_info: Value,
    pub(crate) capabilities: Value,
    /// The same two as JSON text, written into every 2026-07-28 request's `_meta`.
    pub(crate) meta_json: MetaJson,
    pub(crate) handlers: Handlers,
    pub(crate) tools: Mutex<HashMap<String, Vec<ParamHeader>>>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) max_rounds: usize,
    pub(crate) log_level: Option<String>,
    pub(crate) cache: Option<Mutex<HashMap<String, (Instant, Value)>>>,
}

/// An MCP client over one connection. Cheap to clone; every clone shares it.
#[derive(Clone)]
pub struct Client {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("protocol", &self.protocol_version())
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A builder for a client that introduces itself as `name` `version`.
    #[must_use]
    pub fn builder(name: impl Into<String>, version: impl Into<String>) -> ClientBuilder {
        ClientBuilder {
            name: name.into(),
            version: version.into(),
            protocol: Protocol::Auto,
            handlers: Handlers::default(),
            headers: HeaderMap::new(),
            probe_timeout: Duration::from_secs(10),
            timeout: None,
            max_rounds: 8,
            log_level: None,
            cache: false,
            oauth: None,
            http: crate::hyper_client::HttpOptions::default(),
            stdio_write_timeout: crate::stdio::WRITE_TIMEOUT,
        }
    }

    /// The protocol version in use.
    #[must_use]
    pub fn protocol_version(&self) -> String {
        self.state().version
    }

    /// What the server said about itself.
    #[must_use]
    pub fn server(&self) -> ServerDetails {
        self.state().details
    }

    pub(crate) fn state(&self) -> State {
        self.inner
            .state
            .read()
            .map(|s| s.clone())
            .unwrap_or_default()
    }

    /// What a request needs of the state (version, mode), without copying the
    /// server's details (capabilities, info, instructions) on every call.
    pub(crate) fn wire(&self) -> State {
        self.inner
            .state
            .read()
            .map(|s| s.wire())
            .unwrap_or_default()
    }

    pub(crate) fn set_state(&self, f: impl FnOnce(&mut State)) {
        if let Ok(mut s) = self.inner.state.write() {
            f(&mut s);
        }
    }

    /// Ends the connection: `DELETE` of an HTTP session, the child's exit on stdio.
    pub async fn close(&self) {
        self.inner.transport.close().await;
    }

    /// Sends any request and returns its result (the `input_required` rounds, server
    /// questions and version retries handled). `params` must be an object or null.
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, ClientError> {
        self.request_with(method, params, &CallOptions::default())
            .await
    }

    /// [`request`](Self::request) with options.
    pub async fn request_with(
        &self,
        method: &str,
        params: Value,
        opts: &CallOptions,
    ) -> Result<Value, ClientError> {
        let params = match params {
            Value::Object(m) => m,
            Value::Null => Map::new(),
            other => {
                return Err(ClientError::Unexpected(format!(
                    "params must be a JSON object, not {other}"
                )));
            }
        };
        self.call(method, params, opts).await
    }

    /// [`request_with`](Self::request_with) with params shared with the caller: they
    /// are written into the request from the shared map, never copied (an
    /// `input_required` round the client continues itself changes its own copy). A
    /// caller that may send the same params again (a proxy relaying rounds) keeps them
    /// without cloning them per call.
    pub async fn request_shared(
        &self,
        method: &str,
        params: Arc<Map<String, Value>>,
        opts: &CallOptions,
    ) -> Result<Value, ClientError> {
        self.call_shared(method, params, opts).await
    }

    /// [`request_shared`](Self::request_shared) with the result as it arrived
    /// ([`Answer`]): a stdio server's result is still JSON text, for a caller that
    /// reads it straight into its own type (a proxy passing a tool result on).
    pub async fn request_answer(
        &self,
        method: &str,
        params: Arc<Map<String, Value>>,
        opts: &CallOptions,
    ) -> Result<Answer, ClientError> {
        self.call_answer(method, params, opts).await
    }

    /// Sends a notification.
    pub async fn notify(&self, method: &str, params: Option<Value>) -> Result<(), ClientError> {
        let st = self.wire();
        let mut out = Outgoing {
            body: message::notification(method, params),
            method: method.to_owned().into(),
            mirrors: st.stateless,
            ..Outgoing::default()
        };
        out.version = header_version(&st, method);
        self.inner.transport.send(out).await
    }

    fn cache_key(method: &str, params: &Map<String, Value>) -> Option<String> {
        Method::parse(method)
            .is_cacheable()
            .then(|| format!("{method} {}", Value::Object(params.clone())))
    }

    pub(crate) async fn call(
        &self,
        method: &str,
        params: Map<String, Value>,
        opts: &CallOptions,
    ) -> Result<Value, ClientError> {
        self.call_shared(method, Arc::new(params), opts).await
    }

    async fn call_shared(
        &self,
        method: &str,
        params: Arc<Map<String, Value>>,
        opts: &CallOptions,
    ) -> Result<Value, ClientError> {
        self.call_answer(method, params, opts).await?.into_value()
    }

    async fn call_answer(
        &self,
        method: &str,
        mut params: Arc<Map<String, Value>>,
        opts: &CallOptions,
    ) -> Result<Answer, ClientError> {
        let key = self
            .inner
            .cache
            .as_ref()
            .and_then(|_| Self::cache_key(method, &params));
        if let (Some(k), Some(cache)) = (&key, &self.inner.cache) {
            if let Some((until, v)) = cache.lock().ok().and_then(|c| c.get(k).cloned()) {
                if Instant::now() < until {
                    return Ok(v.into());
                }
            }
        }
        let mut rounds = 0;
        let mut retried_version = false;
        let mut renewed_session = false;
        loop {
            let st = self.wire();
            let (out, id) = self.outgoing(&st, method, &params, opts);
            let result = match opts.timeout.or(self.inner.timeout) {
                Some(t) => tokio::time::timeout(t, self.exchange(out, &id, opts))
                    .await
                    .unwrap_or(Err(ClientError::Timeout(t))),
                None => self.exchange(out, &id, opts).await,
            };
            match result {
                Err(ClientError::Protocol(e))
                    if st.stateless
                        && !retried_version
                        && e.code() == ErrorCode::UNSUPPORTED_PROTOCOL_VERSION =>
                {
                    // Retry once with the newest version both sides list (a pinned
                    // client only with its own version, e.g. after a transient refusal).
                    retried_version = true;
                    match crate::negotiate::pick_modern(e.data()) {
                        Some(v) if !st.pinned || v == st.version => {
                            self.set_state(|s| s.version = v);
                        }
                        _ => return Err(ClientError::Protocol(e)),
                    }
                }
                Err(ClientError::SessionExpired) if !renewed_session && method != "initialize" => {
                    // The server forgot the session (404): a new one, then this again.
                    renewed_session = true;
                    let (version, pinned) = (st.version.clone(), st.pinned);
                    Box::pin(self.initialize(&version, pinned)).await?;
                }
                Err(e) => return Err(e),
                Ok(answer) => {
                    let rounds_here = st.stateless && !opts.keep_rounds;
                    if !rounds_here && key.is_none() {
                        // Nothing here reads the result: it goes as it came.
                        return Ok(answer);
                    }
                    let result = answer.into_value()?;
                    if rounds_here
                        && result.get("resultType").and_then(Value::as_str)
                            == Some("input_required")
                    {
                        rounds += 1;
                        if rounds > self.inner.max_rounds {
                            return Err(ClientError::TooManyRounds(rounds - 1));
                        }
                        self.next_round(&result, Arc::make_mut(&mut params)).await?;
                        continue;
                    }
                    if let (Some(k), Some(cache)) = (key, &self.inner.cache) {
                        let ttl = result.get("ttlMs").and_then(Value::as_u64).unwrap_or(0);
                        if ttl > 0 {
                            if let Ok(mut c) = cache.lock() {
                                c.insert(
                                    k,
                                    (Instant::now() + Duration::from_millis(ttl), result.clone()),
                                );
                            }
                        }
                    }
                    return Ok(result.into());
                }
            }
        }
    }

    /// Fulfils an `input_required` result's requests into the retry's params.
    async fn next_round(
        &self,
        result: &Value,
        params: &mut Map<String, Value>,
    ) -> Result<(), ClientError> {
        let mut responses = Map::new();
        if let Some(reqs) = result.get("inputRequests").and_then(Value::as_object) {
            for (k, req) in reqs {
                let method = req
                    .get("method")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let p = req.get("params").cloned().unwrap_or(Value::Null);
                if method != "ping" && self.inner.handlers.for_method(method).is_none() {
                    return Err(ClientError::NoHandler(method.to_owned()));
                }
                let answer = self
                    .inner
                    .handlers
                    .answer(method, p)
                    .await
                    .map_err(ClientError::Protocol)?;
                responses.insert(k.clone(), answer);
            }
        }
        if responses.is_empty() {
            params.remove("inputResponses");
        } else {
            params.insert("inputResponses".into(), Value::Object(responses));
        }
        match result.get("requestState") {
            Some(s) => params.insert("requestState".into(), s.clone()),
            None => params.remove("requestState"),
        };
        Ok(())
    }

    fn outgoing(
        &self,
        st: &State,
        method: &str,
        params: &Map<String, Value>,
        opts: &CallOptions,
    ) -> (Outgoing, RequestId) {
        let id = RequestId::Number(self.inner.next_id.fetch_add(1, Ordering::Relaxed));
        let progress_token = (opts.progress.is_some() || self.inner.handlers.progress.is_some())
            .then(|| json!(format!("p{id}")));
        // The `_meta` members this client adds, written over the caller's own: the
        // params are serialised borrowed, never copied (they may be large arguments).
        let mut added = Vec::new();
        if st.stateless {
            added.reserve(5);
            added.push((META_VERSION, Borrowed::Str(&st.version)));
            added.push((META_CAPS, Borrowed::Raw(&self.inner.meta_json.capabilities)));
            added.push((META_INFO, Borrowed::Raw(&self.inner.meta_json.client_info)));
            if let Some(l) = &self.inner.log_level {
                added.push((META_LOG, Borrowed::Str(l)));
            }
        }
        if let Some(t) = &progress_token {
            added.push(("progressToken", Borrowed::Json(t)));
        }
        let m = Method::parse(method);
        // Header values only for a transport that sends headers (not stdio).
        let headers = self.inner.transport.has_headers();
        let name = m
            .name_field()
            .filter(|_| headers)
            .and_then(|f| params.get(f))
            .and_then(Value::as_str)
            .map(headers::encode);
        let param_headers = if headers && m == Method::ToolsCall && st.stateless {
            let tool = params
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let args = params.get("arguments").unwrap_or(&Value::Null);
            self.inner
                .tools
                .lock()
                .ok()
                .and_then(|t| t.get(tool).map(|h| headers::param_values(h, args)))
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        let body = message::request_with(
            &id,
            method,
            message::Params {
                params,
                added: &added,
            },
        );
        let out = Outgoing {
            body,
            id: Some(id.clone()),
            method: match m {
                Method::Unknown => method.to_owned().into(),
                known => known.as_str().into(),
            },
            // Only a transport with headers sends it (stdio cancels by itself).
            version: headers.then(|| header_version(st, method)).flatten(),
            mirrors: st.stateless,
            name,
            param_headers,
            progress_token,
        };
        (out, id)
    }

    /// Sends one request and waits for its answer.
    async fn exchange(
        &self,
        out: Outgoing,
        id: &RequestId,
        opts: &CallOptions,
    ) -> Result<Answer, ClientError> {
        // An initialize-era server learns of an abandoned request only by a
        // `notifications/cancelled` (2026-07-28: closing the response is enough).
        let mut abandon = (!out.mirrors
            && out.method != "initialize"
            && !self.inner.transport.cancels_abandoned())
        .then(|| Abandon {
            transport: Arc::clone(&self.inner.transport),
            id: id.clone(),
            version: out.version.clone(),
            answered: false,
        });
        let r = self.messages(out, id, opts).await;
        // Answered, refused or failed: only a request dropped while waiting is cancelled.
        if let Some(a) = &mut abandon {
            a.answered = true;
        }
        r
    }

    /// Sends one request and reads its messages until the answer.
    async fn messages(
        &self,
        out: Outgoing,
        id: &RequestId,
        opts: &CallOptions,
    ) -> Result<Answer, ClientError> {
        let mut msgs = self.inner.transport.request(out).await?;
        while let Some(m) = msgs.next().await {
            let m = match m? {
                Message::Answer(rid, result) if &rid == id => return Ok(Answer::from_text(result)),
                Message::Answer(..) => continue,
                Message::Tree(v) => v,
            };
            match Incoming::classify(m) {
                Some(Incoming::Response {
                    id: Some(rid),
                    outcome,
                }) if &rid == id => {
                    return outcome.map(Answer::from).map_err(ClientError::Protocol);
                }
                Some(Incoming::Response {
                    id: None,
                    outcome: Err(e),
                }) => {
                    // An error the server could not tie to an id (e.g. a refused body).
                    return Err(ClientError::Protocol(e));
                }
                Some(Incoming::Request { id, method, params }) => {
                    answer_server(&self.inner, id, &method, params, opts.questions.as_ref()).await;
                }
                Some(Incoming::Notification { method, params }) => {
                    self.inner.handlers.notify(
                        &method,
                        &params,
                        opts.progress.as_ref(),
                        opts.log.as_ref(),
                    );
                }
                _ => {}
            }
        }
        Err(ClientError::Transport(
            "the connection ended before the answer".into(),
        ))
    }

    /// Remembers the mirrored arguments of a listed tool; `false` when its
    /// annotations are invalid (the tool is then left out).
    pub(crate) fn learn_tool(&self, name: &str, input_schema: &Value) -> bool {
        match headers::tool_headers(input_schema) {
            Ok(h) => {
                if let Ok(mut t) = self.inner.tools.lock() {
                    t.insert(name.to_owned(), h);
                }
                true
            }
            Err(reason) => {
                tracing::warn!(tool = name, %reason, "leaving out a tool with an invalid x-mcp-header");
                false
            }
        }
    }
}

/// Sends `notifications/cancelled` for a request dropped before its answer.
struct Abandon {
    transport: Arc<dyn Transport>,
    id: RequestId,
    version: Option<String>,
    answered: bool,
}

impl Drop for Abandon {
    fn drop(&mut self) {
        if self.answered || std::thread::panicking() {
            return;
        }
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let out = Outgoing {
            body: message::notification(
                "notifications/cancelled",
                Some(json!({"requestId": self.id, "reason": "the client abandoned the request"})),
            ),
            method: "notifications/cancelled".into(),
            version: self.version.take(),
            ..Outgoing::default()
        };
        let t = Arc::clone(&self.transport);
        rt.spawn(async move {
            let _ = t.send(out).await;
        });
    }
}

/// The `MCP-Protocol-Version` header for a message: every 2026 message; initialize-era
/// messages after `initialize`, in the dialects that have the header (the dialect says).
pub(crate) fn header_version(st: &State, method: &str) -> Option<String> {
    let has_header = Dialect::by_version(&st.version).is_none_or(Dialect::has_version_header);
    if st.version.is_empty() || (!st.stateless && (method == "initialize" || !has_header)) {
        None
    } else {
        Some(st.version.clone())
    }
}

async fn answer_server(
    inner: &Inner,
    id: RequestId,
    method: &str,
    params: Value,
    call: Option<&crate::handlers::CallHandler>,
) {
    let outcome = inner.handlers.answer_for(method, params, call).await;
    let st = inner.state.read().map(|s| s.wire()).unwrap_or_default();
    let out = Outgoing {
        body: message::response(&id, &outcome),
        version: header_version(&st, ""),
        ..Outgoing::default()
    };
    if let Err(e) = inner.transport.send(out).await {
        tracing::warn!(%e, "could not answer the server's {method} request");
    }
}

pub(crate) async fn unsolicited_loop(
    inner: Weak<Inner>,
    mut rx: tokio::sync::mpsc::Receiver<Value>,
) {
    while let Some(v) = rx.recv().await {
        let Some(inner) = inner.upgrade() else { return };
        match Incoming::classify(v) {
            Some(Incoming::Request { id, method, params }) => {
                tokio::spawn(async move { answer_server(&inner, id, &method, params, None).await });
            }
            Some(Incoming::Notification { method, params }) => {
                inner.handlers.notify(&method, &params, None, None);
            }
            _ => {}
        }
    }
}
