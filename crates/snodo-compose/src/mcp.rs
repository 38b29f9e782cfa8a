//! [`McpSource`]: an MCP server reached through `snodo-client` — over Streamable HTTP
//! (any revision, sessions included), a child's stdio, any byte stream, or a
//! [`Runtime`] in process — connected on first use, through a pool of warm
//! connections (see [`pool`](crate::pool)) started again after they fail.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use http::{HeaderName, HeaderValue};
use serde_json::Value;
use snodo::{RequestContext, Runtime};
use snodo_client::{Answer, ClientError, Protocol};
use tokio::sync::watch;

use crate::child::{self, ChildCommand};
use crate::pool::{Connect, Lease, Pool, PoolHealth, RestartPolicy};
use crate::relay;
use crate::source::{BoxFuture, Listing, Source, SourceError};

mod connect;
mod subscribe;
mod task;

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
    Stdio(ChildCommand),
    Runtime(Runtime),
    Stream(StreamFactory),
}

/// An MCP server behind `snodo-client`. Connects on first use through a pool of warm
/// connections ([`pool`](Self::pool), default 1: stdio children, HTTP sessions), each
/// started again after it fails ([`restart`](Self::restart)); concurrent calls are
/// multiplexed over each connection and spread over the pool (fewest in flight).
///
/// A stdio child runs in a process group of its own: when it exits, its own children
/// are killed with it and the calls in flight on it fail at once with an error naming
/// the backend; when the source is dropped the group gets `SIGTERM`, then `SIGKILL`.
/// Its stderr goes to the log (`tracing`, with the backend's name; lines cut at 4 KiB,
/// at most 50 a second on average).
///
/// Upstream credentials are the source's own ([`header`](Self::header),
/// [`bearer`](Self::bearer)): the front caller's token is never passed on.
///
/// ```no_run
/// # async fn f() {
/// use snodo_compose::McpSource;
/// let remote = McpSource::http("weather", "http://127.0.0.1:9000/mcp").bearer("s3cret");
/// let child = McpSource::stdio("everything", "npx", ["-y", "@modelcontextprotocol/server-everything"])
///     .pool(4);
/// # let _ = (remote, child);
/// # }
/// ```
pub struct McpSource {
    cfg: Config,
    size: usize,
    policy: RestartPolicy,
    pool: OnceLock<Pool>,
    /// A 2026-07-28 backend's listen stream per subscribed URI.
    listens: subscribe::Listens,
}

/// What a connection is made from (shared with the pool's supervisors).
#[derive(Clone)]
struct Config {
    name: String,
    target: Target,
    headers: Vec<(HeaderName, HeaderValue)>,
    protocol: Protocol,
    timeout: Option<Duration>,
    write_timeout: Option<Duration>,
    changes: watch::Sender<u64>,
    /// The backend's calls in flight and parked (its questions go to their callers).
    asker: Arc<crate::asking::Asker>,
    /// Resource updates from the backend (its URIs).
    updates: tokio::sync::broadcast::Sender<String>,
    /// Its children not reaped yet.
    reaped: child::Reaped,
}

impl std::fmt::Debug for McpSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpSource")
            .field("name", &self.cfg.name)
            .field("pool", &self.size)
            .finish_non_exhaustive()
    }
}

impl McpSource {
    fn new(name: impl Into<String>, target: Target) -> Self {
        let name = name.into();
        Self {
            cfg: Config {
                asker: crate::asking::Asker::new(&name),
                name,
                target,
                headers: Vec::new(),
                protocol: Protocol::Auto,
                timeout: None,
                write_timeout: None,
                changes: watch::channel(0).0,
                updates: tokio::sync::broadcast::channel(subscribe::BACKLOG).0,
                reaped: child::Reaped::default(),
            },
            size: 1,
            policy: RestartPolicy::default(),
            pool: OnceLock::new(),
            listens: subscribe::Listens::default(),
        }
    }

    /// Whether this source starts child processes (a stdio backend): stopping it sends
    /// their process groups `SIGTERM`, then `SIGKILL` a second later, from tasks of the
    /// runtime — an application that exits right after dropping its mounts should keep
    /// the runtime up that long.
    #[must_use]
    pub fn runs_children(&self) -> bool {
        matches!(self.cfg.target, Target::Stdio(_))
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
        let cmd = ChildCommand {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
            ..ChildCommand::default()
        };
        Self::new(name, Target::Stdio(cmd))
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
                self.cfg.headers.push((n, v));
            }
            _ => {
                tracing::warn!(source = %self.cfg.name, header = name, "invalid upstream header left out")
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
        self.cfg.protocol = protocol;
        self
    }

    /// A limit for every backend request (default none: the front's deadline applies).
    #[must_use]
    pub fn timeout(mut self, d: Duration) -> Self {
        self.cfg.timeout = Some(d);
        self
    }

    /// How many warm connections to keep (stdio children, HTTP sessions; default 1,
    /// at least 1). Calls go to the ready one with the fewest calls in flight.
    #[must_use]
    pub fn pool(mut self, size: usize) -> Self {
        self.size = size.max(1);
        self
    }

    /// How a failed connection is started again, and how long a start may take
    /// (default: 100 ms doubling to 10 s, reset after a healthy minute; 30 s).
    #[must_use]
    pub fn restart(mut self, policy: RestartPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Sets an environment variable of a stdio child (the gateway's own are inherited).
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
        if let Target::Stdio(c) = &mut self.cfg.target {
            c.env.push((key.into(), value.into()));
        }
        self
    }

    /// The working directory of a stdio child (default: the gateway's).
    #[must_use]
    pub fn current_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        if let Target::Stdio(c) = &mut self.cfg.target {
            c.cwd = Some(dir.into());
        }
        self
    }

    /// Over stdio and byte streams: how long a write to a backend that stopped reading
    /// may make no progress before its connection is dropped and started again, the
    /// calls in flight on it failing (default 10 s).
    #[must_use]
    pub fn write_timeout(mut self, d: Duration) -> Self {
        self.cfg.write_timeout = Some(d);
        self
    }

    /// The source's stdio children not reaped yet: an application that drops the
    /// source (unmounts) and then exits waits on it so that no child (nor its own
    /// children) outlives it.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// use snodo_compose::McpSource;
    /// let s = McpSource::stdio("ev", "server", ["--stdio"]);
    /// let reaped = s.reaped();
    /// drop(s);
    /// assert!(reaped.wait(std::time::Duration::from_secs(3)).await);
    /// # }
    /// ```
    #[must_use]
    pub fn reaped(&self) -> child::Reaped {
        self.cfg.reaped.clone()
    }

    /// The pool's state, for a health endpoint: keep it before mounting the source
    /// (call it after the builder methods, which it fixes).
    ///
    /// ```
    /// use snodo_compose::McpSource;
    /// let s = McpSource::stdio("ev", "server", ["--stdio"]).pool(2);
    /// let health = s.health();
    /// assert_eq!(health.children().len(), 2); // starting on first use
    /// ```
    #[must_use]
    pub fn health(&self) -> PoolHealth {
        self.the_pool().health()
    }

    fn the_pool(&self) -> &Pool {
        self.pool.get_or_init(|| {
            let cfg = Arc::new(self.cfg.clone());
            let connect: Connect = Arc::new(move || {
                let cfg = Arc::clone(&cfg);
                Box::pin(async move { cfg.connect().await })
            });
            // A connection that went (the mount lists again, and sees the backend
            // restarting when none serves), or came back (whatever changed while it
            // was away: list again).
            let changes = self.cfg.changes.clone();
            let on_change = Arc::new(move || changes.send_modify(|n| *n += 1));
            Pool::new(&self.cfg.name, self.size, self.policy, connect, on_change)
        })
    }

    async fn lease(&self) -> Result<Lease, SourceError> {
        self.the_pool().lease().await.map_err(|e| self.cfg.down(&e))
    }

    /// What a relayed call that stopped without a result answers the front. A failure
    /// of `held` (the connection the call held on this instance, if any) is reported
    /// to the pool; any other (a connection started again since, or the holder's on
    /// another instance) only names the backend. A cancelled call's connection is fine:
    /// the backend request was abandoned.
    async fn stopped(&self, held: Option<&Lease>, stop: relay::Stop) -> SourceError {
        match (stop, held) {
            (relay::Stop::Source(e), _) => e,
            (relay::Stop::Cancelled, _) => {
                SourceError::Rpc(snodo::RpcError::internal("the request was cancelled"))
            }
            (relay::Stop::Client(e), Some(lease)) => self.fail(lease, e).await,
            (relay::Stop::Elsewhere(e) | relay::Stop::Client(e), _) => {
                self.cfg.down(&e.to_string())
            }
        }
    }

    /// Maps a client error. Only a broken connection (a transport failure, which a
    /// child's exit is, or a session the server ended) is reported to its pool
    /// (started again, failing the calls in flight on it), the error saying why the
    /// child exited when it did; anything else (an HTTP status, a timeout, an
    /// unexpected answer, a refused authorization) fails this call alone.
    async fn fail(&self, lease: &Lease, e: ClientError) -> SourceError {
        let name = &self.cfg.name;
        match e {
            ClientError::Protocol(e) => SourceError::Rpc(e),
            e @ (ClientError::Transport(_) | ClientError::SessionExpired) => {
                match lease.broken().await {
                    Some(exit) => self.cfg.down(&format!("{e} ({exit})")),
                    None => self.cfg.down(&e.to_string()),
                }
            }
            e => SourceError::Rpc(snodo::RpcError::internal(format!(
                "backend \"{name}\": {e}"
            ))),
        }
    }

    /// How long a listing or a ping may go unanswered before the connection is
    /// taken for wedged (a child that reads but never answers): half a start's time,
    /// so that it is started again before the mount's own deadline (by default the
    /// start's time) gives up on the check.
    fn wedged_after(&self) -> Duration {
        self.policy.start_timeout / 2
    }

    /// A connection that did not answer `what` in time: started again.
    async fn wedged(&self, lease: &Lease, what: &str) -> SourceError {
        lease.broken().await;
        let limit = self.wedged_after();
        self.cfg
            .down(&format!("no answer to {what} within {limit:?}"))
    }

    async fn list_kind(
        &self,
        lease: &Lease,
        caps: &Value,
        kind: &str,
        method: &str,
    ) -> Result<Vec<Value>, SourceError> {
        if caps.get(kind).is_none() {
            return Ok(Vec::new());
        }
        let limit = self.wedged_after();
        let Ok(listed) = tokio::time::timeout(limit, lease.client.list_all(method)).await else {
            return Err(self.wedged(lease, method).await);
        };
        match listed {
            Ok(v) => Ok(v),
            Err(ClientError::Protocol(e))
                if e.code() == snodo::protocol::ErrorCode::METHOD_NOT_FOUND =>
            {
                Ok(Vec::new())
            }
            Err(ClientError::Timeout(_)) => Err(self.wedged(lease, method).await),
            Err(e) => Err(self.fail(lease, e).await),
        }
    }
}

impl McpSource {
    /// Relays one request to the backend: continued on the instance it is parked on,
    /// or sent on a leased connection; the result as it arrived.
    async fn relayed(
        &self,
        method: &str,
        params: Value,
        ctx: &RequestContext,
    ) -> Result<Answer, SourceError> {
        // Parked on another instance: continued there, no connection needed here.
        if let Some(r) = relay::elsewhere(ctx).await {
            // No connection of this instance's is held: the holder's backend failed.
            return match r {
                Ok(v) => Ok(v.into()),
                Err(stop) => Err(self.stopped(None, stop).await),
            };
        }
        let lease = self.lease().await?;
        match relay::call(
            &lease.client,
            lease.conn,
            &self.cfg.asker,
            method,
            params,
            ctx,
        )
        .await
        {
            Ok(a) => Ok(a),
            Err(stop) => Err(self.stopped(Some(&lease), stop).await),
        }
    }
}

/// A backend result that cannot be read as a tree (JSON nested deeper than it reads).
fn unreadable(source: &str, e: &ClientError) -> SourceError {
    SourceError::Rpc(snodo::RpcError::internal(format!(
        "backend \"{source}\" sent a result snodo cannot read: {e}"
    )))
}

impl Source for McpSource {
    fn name(&self) -> &str {
        &self.cfg.name
    }

    fn list(&self) -> BoxFuture<'_, Result<Listing, SourceError>> {
        Box::pin(async move {
            let lease = self.lease().await?;
            let caps = lease.client.server().capabilities;
            Ok(Listing {
                tools: self.list_kind(&lease, &caps, "tools", "tools/list").await?,
                prompts: self
                    .list_kind(&lease, &caps, "prompts", "prompts/list")
                    .await?,
                resources: self
                    .list_kind(&lease, &caps, "resources", "resources/list")
                    .await?,
                templates: self
                    .list_kind(&lease, &caps, "resources", "resources/templates/list")
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
            let answer = self.relayed(method, params, ctx).await?;
            answer
                .into_value()
                .map_err(|e| unreadable(&self.cfg.name, &e))
        })
    }

    fn call_tool<'a>(
        &'a self,
        params: Value,
        ctx: &'a RequestContext,
    ) -> BoxFuture<'a, Result<Answer, SourceError>> {
        Box::pin(self.relayed("tools/call", params, ctx))
    }

    fn call_task<'a>(
        &'a self,
        params: Value,
        ctx: &'a RequestContext,
    ) -> BoxFuture<'a, Result<Value, SourceError>> {
        Box::pin(self.run_task(params, ctx))
    }

    fn subscribe<'a>(&'a self, uri: &'a str) -> BoxFuture<'a, Result<(), SourceError>> {
        Box::pin(self.subscribe_to(uri))
    }

    fn unsubscribe<'a>(&'a self, uri: &'a str) -> BoxFuture<'a, Result<(), SourceError>> {
        Box::pin(self.unsubscribe_from(uri))
    }

    fn resource_updates(&self) -> Option<tokio::sync::broadcast::Receiver<String>> {
        Some(self.cfg.updates.subscribe())
    }

    fn changes(&self) -> watch::Receiver<u64> {
        self.cfg.changes.subscribe()
    }

    fn check(&self) -> BoxFuture<'_, Result<(), SourceError>> {
        Box::pin(async move {
            let lease = self.lease().await?;
            let limit = self.wedged_after();
            let Ok(pinged) =
                tokio::time::timeout(limit, lease.client.request("ping", Value::Null)).await
            else {
                return Err(self.wedged(&lease, "ping").await);
            };
            match pinged {
                Ok(_) => Ok(()),
                // A server that does not know ping is there all the same.
                Err(ClientError::Protocol(_)) => Ok(()),
                Err(ClientError::Timeout(_)) => Err(self.wedged(&lease, "ping").await),
                Err(e) => Err(self.fail(&lease, e).await),
            }
        })
    }

    fn restarting(&self) -> bool {
        self.pool.get().is_some_and(Pool::restarting)
    }
}
