//! [`McpSource`]: an MCP server reached through `snodo-client` — over Streamable HTTP
//! (any revision, sessions included), a child's stdio, any byte stream, or a
//! [`Runtime`] in process — connected on first use and again after it went away.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt as _;
use http::{HeaderName, HeaderValue};
use serde_json::{Value, json};
use snodo::{RequestContext, Runtime};
use snodo_client::{Client, ClientBuilder, ClientError, Protocol, ServerEvent, Subscriptions};
use tokio::sync::{Mutex, watch};

use crate::relay;
use crate::source::{BoxFuture, Listing, Source, SourceError};

/// Makes the two ends of a byte stream for [`McpSource::stream`] (called at every
/// (re)connection).
pub type StreamFactory = Arc<
    dyn Fn() -> BoxFuture<
            'static,
            std::io::Result<(
                Box<dyn tokio::io::AsyncRead + Send + Unpin>,
                Box<dyn tokio::io::AsyncWrite + Send + Unpin>,
            )>,
        > + Send
        + Sync,
>;

#[derive(Clone)]
enum Target {
    Http(String),
    Stdio(String, Vec<String>),
    Runtime(Runtime),
    Stream(StreamFactory),
}

/// An MCP server behind `snodo-client`. Cheap to share (`Arc`); connects lazily, and
/// after a transport failure drops the connection so that the next use connects
/// again (a stdio child is started again).
///
/// Upstream credentials are the source's own ([`header`](Self::header),
/// [`bearer`](Self::bearer)): the front caller's token is never passed on.
///
/// ```no_run
/// # async fn f() {
/// use snodo_compose::McpSource;
/// let remote = McpSource::http("weather", "http://127.0.0.1:9000/mcp").bearer("s3cret");
/// let child = McpSource::stdio("everything", "npx", ["-y", "@modelcontextprotocol/server-everything"]);
/// # let _ = (remote, child);
/// # }
/// ```
pub struct McpSource {
    name: String,
    target: Target,
    headers: Vec<(HeaderName, HeaderValue)>,
    protocol: Protocol,
    timeout: Option<Duration>,
    /// A stdio child's extra environment and working directory.
    env: Vec<(String, String)>,
    current_dir: Option<std::path::PathBuf>,
    client: Mutex<Option<Client>>,
    /// Connections made so far (a reconnection lists again).
    connections: std::sync::atomic::AtomicU64,
    changes: watch::Sender<u64>,
}

impl std::fmt::Debug for McpSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpSource")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl McpSource {
    fn new(name: impl Into<String>, target: Target) -> Self {
        Self {
            name: name.into(),
            target,
            headers: Vec::new(),
            protocol: Protocol::Auto,
            timeout: None,
            env: Vec::new(),
            current_dir: None,
            client: Mutex::new(None),
            connections: std::sync::atomic::AtomicU64::new(0),
            changes: watch::channel(0).0,
        }
    }

    /// A server at a Streamable HTTP URL (`http://` or `https://`).
    pub fn http(name: impl Into<String>, url: impl Into<String>) -> Self {
        Self::new(name, Target::Http(url.into()))
    }

    /// A child process speaking newline-delimited JSON-RPC on its stdio.
    pub fn stdio<I, S>(name: impl Into<String>, program: impl Into<String>, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let args = args.into_iter().map(Into::into).collect();
        Self::new(name, Target::Stdio(program.into(), args))
    }

    /// A runtime in this process, driven through its own HTTP service (no socket).
    pub fn runtime(name: impl Into<String>, runtime: Runtime) -> Self {
        Self::new(name, Target::Runtime(runtime))
    }

    /// Newline-delimited JSON-RPC on any byte stream, opened by `factory` at every
    /// connection (e.g. a Unix socket, or one end of a `tokio::io::duplex` whose other
    /// end runs `snodo::stdio::serve_stream`).
    pub fn stream(name: impl Into<String>, factory: StreamFactory) -> Self {
        Self::new(name, Target::Stream(factory))
    }

    /// A source from a command-line spec: `NAME=URL` (`http://`, `https://`) or
    /// `NAME=stdio:PROGRAM ARGS...` (words split on spaces). The name is the
    /// source's; whether it is also a namespace is the caller's choice.
    ///
    /// ```
    /// use snodo_compose::{McpSource, Source};
    /// let s = McpSource::from_spec("ev=stdio:npx -y @modelcontextprotocol/server-everything").unwrap();
    /// assert_eq!(s.name(), "ev");
    /// assert!(McpSource::from_spec("py=http://127.0.0.1:8000/mcp").is_ok());
    /// assert!(McpSource::from_spec("nothing").is_err());
    /// assert!(McpSource::from_spec("x=ftp://host").is_err());
    /// ```
    pub fn from_spec(spec: &str) -> Result<Self, String> {
        let (name, target) = spec
            .split_once('=')
            .ok_or_else(|| format!("{spec:?}: expected NAME=URL or NAME=stdio:COMMAND"))?;
        if name.is_empty() {
            return Err(format!("{spec:?}: the backend needs a name before '='"));
        }
        if let Some(cmd) = target.strip_prefix("stdio:") {
            let mut words = cmd.split_whitespace().map(str::to_owned);
            let program = words
                .next()
                .ok_or_else(|| format!("{spec:?}: stdio: needs a command"))?;
            return Ok(Self::stdio(name, program, words));
        }
        if target.starts_with("http://") || target.starts_with("https://") {
            return Ok(Self::http(name, target));
        }
        Err(format!(
            "{spec:?}: the target must be an http:// or https:// URL or stdio:COMMAND"
        ))
    }

    /// Sends this header on every HTTP request to the backend (upstream credentials).
    /// An invalid name or value is left out, with a warning.
    #[must_use]
    pub fn header(mut self, name: &str, value: &str) -> Self {
        match (HeaderName::try_from(name), HeaderValue::try_from(value)) {
            (Ok(n), Ok(mut v)) => {
                v.set_sensitive(true);
                self.headers.push((n, v));
            }
            _ => {
                tracing::warn!(source = %self.name, header = name, "invalid upstream header left out")
            }
        }
        self
    }

    /// `Authorization: Bearer TOKEN` on every HTTP request to the backend.
    #[must_use]
    pub fn bearer(self, token: &str) -> Self {
        self.header("authorization", &format!("Bearer {token}"))
    }

    /// The protocol to speak to the backend (default: negotiated).
    #[must_use]
    pub fn protocol(mut self, protocol: Protocol) -> Self {
        self.protocol = protocol;
        self
    }

    /// A limit for every backend request (default none: the front's deadline applies).
    #[must_use]
    pub fn timeout(mut self, d: Duration) -> Self {
        self.timeout = Some(d);
        self
    }

    /// Sets an environment variable of a stdio child (beside those it inherits).
    ///
    /// ```
    /// use snodo_compose::McpSource;
    /// let fs = McpSource::stdio("fs", "npx", ["-y", "@modelcontextprotocol/server-filesystem", "."])
    ///     .env("NODE_ENV", "production")
    ///     .current_dir("/srv/data");
    /// # let _ = fs;
    /// ```
    #[must_use]
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// The working directory of a stdio child (default: the gateway's).
    #[must_use]
    pub fn current_dir(mut self, dir: impl Into<std::path::PathBuf>) -> Self {
        self.current_dir = Some(dir.into());
        self
    }

    fn builder(&self) -> ClientBuilder {
        let changes = self.changes.clone();
        let name = self.name.clone();
        let log_name = self.name.clone();
        let mut b = Client::builder("snodo-compose", env!("CARGO_PKG_VERSION"))
            .protocol(self.protocol.clone())
            .probe_timeout(Duration::from_secs(5))
            // Every level from the backend: the front request's own level filters them.
            .log_level("debug")
            .on_event(move |e| {
                if matches!(
                    e,
                    ServerEvent::ToolsChanged
                        | ServerEvent::PromptsChanged
                        | ServerEvent::ResourcesChanged
                ) {
                    tracing::debug!(source = %name, "backend lists changed");
                    changes.send_modify(|n| *n += 1);
                }
            })
            .on_log(move |m| {
                tracing::debug!(source = %log_name, level = %m.level, data = %m.data, "backend log");
            });
        for (n, v) in &self.headers {
            b = b.header(n.clone(), v.clone());
        }
        if let Some(t) = self.timeout {
            b = b.timeout(t);
        }
        b
    }

    async fn connect(&self) -> Result<Client, ClientError> {
        let b = self.builder();
        match &self.target {
            Target::Http(url) => b.connect_http(url).await,
            Target::Stdio(p, args) => {
                let mut command = std::process::Command::new(p);
                command
                    .args(args)
                    .envs(self.env.iter().map(|(k, v)| (k, v)));
                if let Some(dir) = &self.current_dir {
                    command.current_dir(dir);
                }
                b.connect_command(command).await
            }
            Target::Runtime(rt) => b.connect_runtime(rt.clone()).await,
            Target::Stream(f) => {
                let (r, w) = f()
                    .await
                    .map_err(|e| ClientError::Transport(e.to_string()))?;
                b.connect_stream(r, w).await
            }
        }
    }

    /// The connection, made now if there is none.
    async fn client(&self) -> Result<Client, SourceError> {
        let mut guard = self.client.lock().await;
        if let Some(c) = guard.as_ref() {
            return Ok(c.clone());
        }
        let c = self.connect().await.map_err(|e| self.down(&e))?;
        tracing::info!(source = %self.name, protocol = %c.protocol_version(), "backend connected");
        if c.server().stateless {
            self.spawn_listener(&c);
        }
        *guard = Some(c.clone());
        // A reconnection: whatever changed while there was no connection, list again.
        if self
            .connections
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            > 0
        {
            self.changes.send_modify(|n| *n += 1);
        }
        Ok(c)
    }

    /// 2026-07-28 backends announce list changes on `subscriptions/listen`.
    fn spawn_listener(&self, c: &Client) {
        let (c, changes, name) = (c.clone(), self.changes.clone(), self.name.clone());
        let caps = c.server().capabilities;
        let wants = |k: &str| caps.pointer(&format!("/{k}/listChanged")) == Some(&json!(true));
        let subs = Subscriptions {
            tools_list_changed: wants("tools"),
            prompts_list_changed: wants("prompts"),
            resources_list_changed: wants("resources"),
            ..Subscriptions::default()
        };
        if !(subs.tools_list_changed || subs.prompts_list_changed || subs.resources_list_changed) {
            return;
        }
        tokio::spawn(async move {
            let Ok(mut events) = c.listen(&subs).await else {
                return;
            };
            loop {
                let e = tokio::select! {
                    // Nobody mounts the source any more: the stream (and the connection
                    // this clone keeps open) goes now, not at the backend's next event.
                    () = changes.closed() => return,
                    e = events.next() => e,
                };
                let Some(Ok(e)) = e else { return };
                if !matches!(e, ServerEvent::Other(..) | ServerEvent::ResourceUpdated(_)) {
                    tracing::debug!(source = %name, "backend lists changed");
                    changes.send_modify(|n| *n += 1);
                }
            }
        });
    }

    /// A transport failure: the connection is dropped (the next use connects again).
    fn down(&self, e: &ClientError) -> SourceError {
        SourceError::Down(format!("backend \"{}\" is unavailable: {e}", self.name))
    }

    async fn forget(&self) {
        if let Some(c) = self.client.lock().await.take() {
            c.close().await;
        }
    }

    /// Maps a client error; a broken connection is forgotten.
    async fn fail(&self, e: ClientError) -> SourceError {
        match e {
            ClientError::Protocol(e) => SourceError::Rpc(e),
            ClientError::Timeout(_) | ClientError::TooManyRounds(_) | ClientError::NoHandler(_) => {
                SourceError::Down(format!("backend \"{}\": {e}", self.name))
            }
            e => {
                let err = self.down(&e);
                self.forget().await;
                err
            }
        }
    }

    async fn list_kind(
        &self,
        c: &Client,
        caps: &Value,
        kind: &str,
        method: &str,
    ) -> Result<Vec<Value>, SourceError> {
        if caps.get(kind).is_none() {
            return Ok(Vec::new());
        }
        match c.list_all(method).await {
            Ok(v) => Ok(v),
            Err(ClientError::Protocol(e))
                if e.code() == snodo::protocol::ErrorCode::METHOD_NOT_FOUND =>
            {
                Ok(Vec::new())
            }
            Err(e) => Err(self.fail(e).await),
        }
    }
}

impl Source for McpSource {
    fn name(&self) -> &str {
        &self.name
    }

    fn list(&self) -> BoxFuture<'_, Result<Listing, SourceError>> {
        Box::pin(async move {
            let c = self.client().await?;
            let caps = c.server().capabilities;
            Ok(Listing {
                tools: self.list_kind(&c, &caps, "tools", "tools/list").await?,
                prompts: self.list_kind(&c, &caps, "prompts", "prompts/list").await?,
                resources: self
                    .list_kind(&c, &caps, "resources", "resources/list")
                    .await?,
                templates: self
                    .list_kind(&c, &caps, "resources", "resources/templates/list")
                    .await?,
            })
        })
    }

    fn request<'a>(
        &'a self,
        method: &'a str,
        params: Value,
        ctx: &'a RequestContext,
    ) -> BoxFuture<'a, Result<Value, SourceError>> {
        Box::pin(async move {
            let c = self.client().await?;
            match relay::call(&c, method, params, ctx).await {
                Ok(v) => Ok(v),
                // The front gave up: the backend request was abandoned, the connection
                // is fine.
                Err(_) if ctx.is_cancelled() => Err(SourceError::Rpc(snodo::RpcError::internal(
                    "the request was cancelled",
                ))),
                Err(e) => Err(self.fail(e).await),
            }
        })
    }

    fn changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    fn check(&self) -> BoxFuture<'_, Result<(), SourceError>> {
        Box::pin(async move {
            let c = self.client().await?;
            match c.request("ping", Value::Null).await {
                Ok(_) => Ok(()),
                // A server that does not know ping is there all the same.
                Err(ClientError::Protocol(_)) => Ok(()),
                Err(e) => Err(self.fail(e).await),
            }
        })
    }
}
