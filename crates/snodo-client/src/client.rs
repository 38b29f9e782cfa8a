//! The client: a connector, the negotiated protocol, and the request core (metadata,
//! mirror headers, `input_required` rounds, server questions, callbacks, retries on
//! `-32022`).

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::{Duration, Instant};

use futures_util::StreamExt as _;
use http::{HeaderMap, HeaderName, HeaderValue, Uri};
use serde_json::{Map, Value, json};
use snodo::protocol::{ErrorCode, Method, RequestId};
use snodo::runtime::param_headers::ParamHeader;

use crate::error::ClientError;
use crate::handlers::{EventFn, Handler, Handlers, LogFn, ProgressFn};
use crate::headers;
use crate::http::{HttpTransport, Hyper, InProcess};
use crate::message::{self, Incoming};
use crate::stdio::StdioTransport;
use crate::transport::{Outgoing, Transport};
use crate::types::ServerDetails;

pub(crate) const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
pub(crate) const META_CAPS: &str = "io.modelcontextprotocol/clientCapabilities";
pub(crate) const META_INFO: &str = "io.modelcontextprotocol/clientInfo";
pub(crate) const META_LOG: &str = "io.modelcontextprotocol/logLevel";

/// Which protocol version to speak.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Protocol {
    /// Probe `server/discover`; a modern `-32022` retries with a version the server
    /// lists; any other answer or a timeout falls back to `initialize`.
    #[default]
    Auto,
    /// Exactly this version (stateless without a probe fallback, or `initialize` that
    /// must answer with it).
    Pinned(String),
}

impl std::str::FromStr for Protocol {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(Self::Auto),
            v if crate::negotiate::is_known(v) => Ok(Self::Pinned(v.to_owned())),
            v => Err(format!(
                "unknown protocol version {v:?} (auto, {})",
                crate::negotiate::known_versions().join(", ")
            )),
        }
    }
}

/// Per-call options.
#[derive(Clone, Default)]
pub struct CallOptions {
    pub(crate) progress: Option<ProgressFn>,
    pub(crate) timeout: Option<Duration>,
}

impl std::fmt::Debug for CallOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallOptions")
            .field("progress", &self.progress.is_some())
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl CallOptions {
    /// Receive this call's progress notifications (a progress token is sent).
    #[must_use]
    pub fn on_progress(mut self, f: impl Fn(crate::Progress) + Send + Sync + 'static) -> Self {
        self.progress = Some(Arc::new(f));
        self
    }

    /// Give up after `d` (the request is then abandoned: cancelled).
    #[must_use]
    pub fn timeout(mut self, d: Duration) -> Self {
        self.timeout = Some(d);
        self
    }
}

/// Builds a [`Client`]: identity, protocol choice, handlers, then a connector.
#[derive(Debug)]
pub struct ClientBuilder {
    name: String,
    version: String,
    protocol: Protocol,
    handlers: Handlers,
    headers: HeaderMap,
    probe_timeout: Duration,
    timeout: Option<Duration>,
    max_rounds: usize,
    log_level: Option<String>,
    cache: bool,
}

impl ClientBuilder {
    /// Speak `protocol` (default [`Protocol::Auto`]).
    #[must_use]
    pub fn protocol(mut self, protocol: Protocol) -> Self {
        self.protocol = protocol;
        self
    }

    /// Answer `elicitation/create` (declares the `elicitation` capability).
    #[must_use]
    pub fn on_elicitation<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, snodo::RpcError>> + Send + 'static,
    {
        self.handlers.elicitation = Some(boxed(f));
        self
    }

    /// Answer `sampling/createMessage` (declares the `sampling` capability).
    #[must_use]
    pub fn on_sampling<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, snodo::RpcError>> + Send + 'static,
    {
        self.handlers.sampling = Some(boxed(f));
        self
    }

    /// Answer `roots/list` (declares the `roots` capability).
    #[must_use]
    pub fn on_roots<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, snodo::RpcError>> + Send + 'static,
    {
        self.handlers.roots = Some(boxed(f));
        self
    }

    /// Receive every request's progress (a progress token is sent on each request).
    #[must_use]
    pub fn on_progress(mut self, f: impl Fn(crate::Progress) + Send + Sync + 'static) -> Self {
        self.handlers.progress = Some(Arc::new(f) as ProgressFn);
        self
    }

    /// Receive the server's log messages.
    #[must_use]
    pub fn on_log(mut self, f: impl Fn(crate::LogMessage) + Send + Sync + 'static) -> Self {
        self.handlers.log = Some(Arc::new(f) as LogFn);
        self
    }

    /// Receive change notifications that arrive outside `listen` (stdio).
    #[must_use]
    pub fn on_event(mut self, f: impl Fn(crate::ServerEvent) + Send + Sync + 'static) -> Self {
        self.handlers.event = Some(Arc::new(f) as EventFn);
        self
    }

    /// Ask for log messages at `level` and above (2026: per request; else
    /// `logging/setLevel` after `initialize`).
    #[must_use]
    pub fn log_level(mut self, level: impl Into<String>) -> Self {
        self.log_level = Some(level.into());
        self
    }

    /// Add a header to every HTTP request (e.g. `Authorization`).
    #[must_use]
    pub fn header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.headers.append(name, value);
        self
    }

    /// How long the `server/discover` probe may take before the client assumes an
    /// initialize-era server (default 10 s).
    #[must_use]
    pub fn probe_timeout(mut self, d: Duration) -> Self {
        self.probe_timeout = d;
        self
    }

    /// A limit for every call (default none).
    #[must_use]
    pub fn timeout(mut self, d: Duration) -> Self {
        self.timeout = Some(d);
        self
    }

    /// How many `input_required` rounds one call may take (default 8).
    #[must_use]
    pub fn max_rounds(mut self, n: usize) -> Self {
        self.max_rounds = n;
        self
    }

    /// Keep results the server marks cacheable (`ttlMs` > 0) for that long.
    #[must_use]
    pub fn cache(mut self, on: bool) -> Self {
        self.cache = on;
        self
    }

    /// Connects over Streamable HTTP to `url` (`http://` only).
    pub async fn connect_http(self, url: &str) -> Result<Client, ClientError> {
        let uri: Uri = url
            .parse()
            .map_err(|e| ClientError::Transport(format!("bad URL {url:?}: {e}")))?;
        if uri.scheme_str() != Some("http") {
            return Err(ClientError::Transport(format!(
                "only http:// URLs are supported (got {url:?})"
            )));
        }
        let headers = self.headers.clone();
        let t = HttpTransport::new(Arc::new(Hyper::new()), uri, headers);
        self.finish(Arc::new(t)).await
    }

    /// Starts `program args…` and speaks newline-delimited JSON-RPC on its stdio.
    pub async fn connect_stdio(
        self,
        program: &str,
        args: &[String],
    ) -> Result<Client, ClientError> {
        let t = StdioTransport::spawn(program, args)?;
        self.finish(t).await
    }

    /// Speaks newline-delimited JSON-RPC on a byte stream the caller set up, e.g. one end
    /// of a [`tokio::io::duplex`] whose other end runs [`snodo::stdio::serve_stream`].
    pub async fn connect_stream<R, W>(self, reader: R, writer: W) -> Result<Client, ClientError>
    where
        R: tokio::io::AsyncRead + Send + Unpin + 'static,
        W: tokio::io::AsyncWrite + Send + Unpin + 'static,
    {
        let t = StdioTransport::over(reader, writer, None);
        self.finish(t).await
    }

    /// Drives `service` directly, in process: real HTTP semantics, no socket.
    pub async fn connect_in_process(
        self,
        service: snodo::http::McpService,
    ) -> Result<Client, ClientError> {
        let uri = Uri::from_static("http://localhost/mcp");
        let headers = self.headers.clone();
        let t = HttpTransport::new(Arc::new(InProcess(service)), uri, headers);
        self.finish(Arc::new(t)).await
    }

    /// [`connect_in_process`](Self::connect_in_process) for a runtime with default
    /// settings.
    pub async fn connect_runtime(self, runtime: snodo::Runtime) -> Result<Client, ClientError> {
        self.connect_in_process(snodo::http::McpService::new(runtime))
            .await
    }

    async fn finish(self, transport: Arc<dyn Transport>) -> Result<Client, ClientError> {
        let unsolicited = transport.unsolicited();
        let capabilities = self.handlers.capabilities();
        let inner = Arc::new(Inner {
            transport,
            next_id: AtomicI64::new(1),
            state: RwLock::new(State::default()),
            client_info: json!({"name": self.name, "version": self.version}),
            capabilities,
            handlers: self.handlers,
            tools: Mutex::new(HashMap::new()),
            timeout: self.timeout,
            max_rounds: self.max_rounds,
            log_level: self.log_level,
            cache: self.cache.then(|| Mutex::new(HashMap::new())),
        });
        if let Some(rx) = unsolicited {
            tokio::spawn(unsolicited_loop(Arc::downgrade(&inner), rx));
        }
        let client = Client { inner };
        if let Err(e) = client.negotiate(&self.protocol, self.probe_timeout).await {
            client.close().await;
            return Err(e);
        }
        Ok(client)
    }
}

fn boxed<F, Fut>(f: F) -> Handler
where
    F: Fn(Value) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value, snodo::RpcError>> + Send + 'static,
{
    Arc::new(move |v| Box::pin(f(v)))
}

/// The negotiated protocol.
#[derive(Clone, Debug, Default)]
pub(crate) struct State {
    pub(crate) version: String,
    pub(crate) stateless: bool,
    pub(crate) pinned: bool,
    pub(crate) details: ServerDetails,
}

pub(crate) struct Inner {
    pub(crate) transport: Arc<dyn Transport>,
    next_id: AtomicI64,
    pub(crate) state: RwLock<State>,
    pub(crate) client_info: Value,
    pub(crate) capabilities: Value,
    pub(crate) handlers: Handlers,
    pub(crate) tools: Mutex<HashMap<String, Vec<ParamHeader>>>,
    timeout: Option<Duration>,
    max_rounds: usize,
    pub(crate) log_level: Option<String>,
    cache: Option<Mutex<HashMap<String, (Instant, Value)>>>,
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

    /// Sends a notification.
    pub async fn notify(&self, method: &str, params: Option<Value>) -> Result<(), ClientError> {
        let st = self.state();
        let mut out = Outgoing {
            body: message::notification(method, params),
            method: method.to_owned(),
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
        mut params: Map<String, Value>,
        opts: &CallOptions,
    ) -> Result<Value, ClientError> {
        let key = self
            .inner
            .cache
            .as_ref()
            .and_then(|_| Self::cache_key(method, &params));
        if let (Some(k), Some(cache)) = (&key, &self.inner.cache) {
            if let Some((until, v)) = cache.lock().ok().and_then(|c| c.get(k).cloned()) {
                if Instant::now() < until {
                    return Ok(v);
                }
            }
        }
        let mut rounds = 0;
        let mut retried_version = false;
        loop {
            let st = self.state();
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
                Err(e) => return Err(e),
                Ok(result) => {
                    if st.stateless
                        && result.get("resultType").and_then(Value::as_str)
                            == Some("input_required")
                    {
                        rounds += 1;
                        if rounds > self.inner.max_rounds {
                            return Err(ClientError::TooManyRounds(rounds - 1));
                        }
                        self.next_round(&result, &mut params).await?;
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
                    return Ok(result);
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
        let mut p = params.clone();
        let mut meta = match p.remove("_meta") {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        };
        if st.stateless {
            meta.insert(META_VERSION.into(), json!(st.version));
            meta.insert(META_CAPS.into(), self.inner.capabilities.clone());
            meta.insert(META_INFO.into(), self.inner.client_info.clone());
            if let Some(l) = &self.inner.log_level {
                meta.insert(META_LOG.into(), json!(l));
            }
        }
        let progress_token = (opts.progress.is_some() || self.inner.handlers.progress.is_some())
            .then(|| json!(format!("p{id}")));
        if let Some(t) = &progress_token {
            meta.insert("progressToken".into(), t.clone());
        }
        if !meta.is_empty() {
            p.insert("_meta".into(), Value::Object(meta));
        }
        let m = Method::parse(method);
        let name = m
            .name_field()
            .and_then(|f| p.get(f))
            .and_then(Value::as_str)
            .map(headers::encode);
        let param_headers = if m == Method::ToolsCall && st.stateless {
            let tool = p.get("name").and_then(Value::as_str).unwrap_or_default();
            let args = p.get("arguments").cloned().unwrap_or(Value::Null);
            self.inner
                .tools
                .lock()
                .ok()
                .and_then(|t| t.get(tool).map(|h| headers::param_values(h, &args)))
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        let out = Outgoing {
            body: message::request(&id, method, &p),
            id: Some(id.clone()),
            method: method.to_owned(),
            version: header_version(st, method),
            mirrors: st.stateless,
            name,
            param_headers,
            progress_token,
        };
        (out, id)
    }

    /// Sends one request and reads its messages until the answer.
    async fn exchange(
        &self,
        out: Outgoing,
        id: &RequestId,
        opts: &CallOptions,
    ) -> Result<Value, ClientError> {
        let mut msgs = self.inner.transport.request(out).await?;
        while let Some(m) = msgs.next().await {
            match Incoming::classify(m?) {
                Some(Incoming::Response {
                    id: Some(rid),
                    outcome,
                }) if &rid == id => {
                    return outcome.map_err(ClientError::Protocol);
                }
                Some(Incoming::Response {
                    id: None,
                    outcome: Err(e),
                }) => {
                    // An error the server could not tie to an id (e.g. a refused body).
                    return Err(ClientError::Protocol(e));
                }
                Some(Incoming::Request { id, method, params }) => {
                    answer_server(&self.inner, id, &method, params).await;
                }
                Some(Incoming::Notification { method, params }) => {
                    self.inner
                        .handlers
                        .notify(&method, &params, opts.progress.as_ref());
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

/// The `MCP-Protocol-Version` header for a message: every 2026 message; initialize-era
/// messages after `initialize` (2025-03-26 had no such header).
pub(crate) fn header_version(st: &State, method: &str) -> Option<String> {
    if st.version.is_empty()
        || (!st.stateless && (method == "initialize" || st.version == "2025-03-26"))
    {
        None
    } else {
        Some(st.version.clone())
    }
}

async fn answer_server(inner: &Inner, id: RequestId, method: &str, params: Value) {
    let outcome = inner.handlers.answer(method, params).await;
    let st = inner.state.read().map(|s| s.clone()).unwrap_or_default();
    let out = Outgoing {
        body: message::response(&id, &outcome),
        version: header_version(&st, ""),
        ..Outgoing::default()
    };
    if let Err(e) = inner.transport.send(out).await {
        tracing::warn!(%e, "could not answer the server's {method} request");
    }
}

async fn unsolicited_loop(inner: Weak<Inner>, mut rx: tokio::sync::mpsc::Receiver<Value>) {
    while let Some(v) = rx.recv().await {
        let Some(inner) = inner.upgrade() else { return };
        match Incoming::classify(v) {
            Some(Incoming::Request { id, method, params }) => {
                tokio::spawn(async move { answer_server(&inner, id, &method, params).await });
            }
            Some(Incoming::Notification { method, params }) => {
                inner.handlers.notify(&method, &params, None);
            }
            _ => {}
        }
    }
}
