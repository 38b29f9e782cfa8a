//! Building a client: identity, protocol choice, handlers and callbacks, limits, then a
//! connector (HTTP, a child process, a byte stream, or in process).

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::AtomicI64;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use http::{HeaderMap, HeaderName, HeaderValue, Uri};
use serde_json::{Value, json};

use crate::client::{Client, Inner, State, unsolicited_loop};
use crate::error::ClientError;
use crate::handlers::{CallHandler, EventFn, Handler, Handlers, LogFn, ProgressFn};
use crate::http::{HttpTransport, InProcess};
use crate::hyper_client::{HTTPS, Hyper, SocketOrigin};
use crate::stdio::StdioTransport;
use crate::transport::Transport;

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
    pub(crate) log: Option<LogFn>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) questions: Option<CallHandler>,
    pub(crate) keep_rounds: bool,
}

impl std::fmt::Debug for CallOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallOptions")
            .field("progress", &self.progress.is_some())
            .field("log", &self.log.is_some())
            .field("timeout", &self.timeout)
            .field("questions", &self.questions.is_some())
            .field("keep_rounds", &self.keep_rounds)
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

    /// Receive the log messages the server sends on this call's own stream (HTTP
    /// answers as SSE); the others, and every log message over stdio (which ties none
    /// to a request), still go to [`ClientBuilder::on_log`].
    #[must_use]
    pub fn on_log(mut self, f: impl Fn(crate::LogMessage) + Send + Sync + 'static) -> Self {
        self.log = Some(Arc::new(f));
        self
    }

    /// Answer the server requests that arrive on this call's own stream (an
    /// initialize-era HTTP server asking during the call, on the call's SSE answer)
    /// with `f` instead of the client's handlers. Only the questions the client
    /// declared (registered with [`ClientBuilder::on_elicitation`] and the like) reach
    /// `f`; over stdio a server request names no call and goes to the client's handlers.
    #[must_use]
    pub fn on_server_request<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(String, Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, snodo::RpcError>> + Send + 'static,
    {
        self.questions = Some(Arc::new(move |m, p| Box::pin(f(m, p))));
        self
    }

    /// Return a 2026-07-28 `input_required` result as it is, instead of answering its
    /// requests and retrying (for a caller that relays the rounds, e.g. a proxy).
    #[must_use]
    pub fn keep_input_required(mut self) -> Self {
        self.keep_rounds = true;
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
    pub(crate) name: String,
    pub(crate) version: String,
    pub(crate) protocol: Protocol,
    pub(crate) handlers: Handlers,
    pub(crate) headers: HeaderMap,
    pub(crate) probe_timeout: Duration,
    pub(crate) timeout: Option<Duration>,
    pub(crate) max_rounds: usize,
    pub(crate) log_level: Option<String>,
    pub(crate) cache: bool,
    pub(crate) oauth: Option<crate::auth::OAuthConfig>,
    pub(crate) http: crate::hyper_client::HttpOptions,
    pub(crate) stdio_write_timeout: Duration,
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

    /// Authorize with OAuth when the server asks (HTTP connections): see
    /// [`auth`](crate::auth).
    #[must_use]
    pub fn oauth(mut self, config: crate::auth::OAuthConfig) -> Self {
        self.oauth = Some(config);
        self
    }

    /// Speak HTTP/2 from the first byte to an `http://` URL (or over a Unix socket):
    /// every call then shares one connection, as streams. `https://` URLs choose
    /// HTTP/2 by ALPN without this.
    #[must_use]
    pub fn http2_prior_knowledge(mut self) -> Self {
        self.http.http2_prior_knowledge = true;
        self
    }

    /// Reach the server through the Unix socket at `path` (HTTP over a local byte
    /// stream): [`connect_http`](Self::connect_http)'s URL then gives only the path
    /// and the `Host` sent, e.g. `http://localhost/mcp`. With [`oauth`](Self::oauth),
    /// only requests to that URL's origin go to the socket; authorization servers are
    /// reached over TCP (TLS for `https://`).
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), snodo_client::ClientError> {
    /// let client = snodo_client::Client::builder("me", "1.0")
    ///     .unix_socket("/run/snodo.sock")
    ///     .connect_http("http://localhost/mcp")
    ///     .await?;
    /// # let _ = client; Ok(()) }
    /// ```
    #[must_use]
    pub fn unix_socket(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.http.unix_socket = Some(path.into());
        self
    }

    /// Trust the certificates in `pem` for `https://` servers, beside the system's
    /// trust anchors (e.g. a private CA, or a test's self-signed certificate).
    #[must_use]
    pub fn root_certificates_pem(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.http.root_certificates_pem = Some(pem.into());
        self
    }

    /// Connects over Streamable HTTP to `url` (`http://`, and `https://` with the default
    /// `https` feature: the system's trust anchors verify the server).
    pub async fn connect_http(self, url: &str) -> Result<Client, ClientError> {
        let uri: Uri = url
            .parse()
            .map_err(|e| ClientError::Transport(format!("bad URL {url:?}: {e}")))?;
        let ok = match uri.scheme_str() {
            Some("http") => uri.authority().is_some(),
            Some("https") => HTTPS && uri.authority().is_some() && self.http.unix_socket.is_none(),
            _ => false,
        };
        if !ok {
            let want = if HTTPS {
                "http:// or https://"
            } else {
                "http://"
            };
            return Err(ClientError::Transport(format!(
                "{url:?} is not an {want} URL (this build speaks {want})"
            )));
        }
        let headers = self.headers.clone();
        let sender: Arc<dyn crate::http::Sender> = Arc::new(Hyper::new(&self.http)?);
        let mut t = HttpTransport::new(sender.clone(), uri.clone(), headers);
        if let Some(cfg) = self.oauth.clone() {
            // Over a socket only the MCP URL's origin is the socket's.
            let auth: Arc<dyn crate::http::Sender> = if self.http.unix_socket.is_some() {
                Arc::new(SocketOrigin::new(&uri, sender, &self.http)?)
            } else {
                sender
            };
            t = t.with_auth(crate::auth::Session::new(cfg, auth, url));
        }
        self.finish(Arc::new(t)).await
    }

    /// Over stdio and byte streams: how long a write may make no progress (the peer
    /// stopped reading its input) before the connection breaks and every request in
    /// flight fails (default 10 s). What waits to be written is bounded either way.
    #[must_use]
    pub fn stdio_write_timeout(mut self, d: Duration) -> Self {
        self.stdio_write_timeout = d;
        self
    }

    /// Starts `program args…` and speaks newline-delimited JSON-RPC on its stdio.
    pub async fn connect_stdio(
        self,
        program: &str,
        args: &[String],
    ) -> Result<Client, ClientError> {
        let mut command = std::process::Command::new(program);
        command.args(args);
        self.connect_command(command).await
    }

    /// Starts `command` (its program, arguments, environment and working directory as
    /// set) and speaks newline-delimited JSON-RPC on its stdio; stdin and stdout are
    /// piped, stderr is inherited, and the child is killed when the client goes.
    ///
    /// ```no_run
    /// # async fn f() -> Result<(), snodo_client::ClientError> {
    /// let mut command = std::process::Command::new("npx");
    /// command.args(["-y", "@modelcontextprotocol/server-filesystem", "."])
    ///     .env("NODE_ENV", "production")
    ///     .current_dir("/srv/data");
    /// let client = snodo_client::Client::builder("me", "1").connect_command(command).await?;
    /// # let _ = client; Ok(()) }
    /// ```
    pub async fn connect_command(
        self,
        command: std::process::Command,
    ) -> Result<Client, ClientError> {
        let t = StdioTransport::spawn(command, self.stdio_write_timeout)?;
        self.finish(t).await
    }

    /// Speaks newline-delimited JSON-RPC on a byte stream the caller set up, e.g. one end
    /// of a [`tokio::io::duplex`] whose other end runs [`snodo::stdio::serve_stream`].
    pub async fn connect_stream<R, W>(self, reader: R, writer: W) -> Result<Client, ClientError>
    where
        R: tokio::io::AsyncRead + Send + Unpin + 'static,
        W: tokio::io::AsyncWrite + Send + Unpin + 'static,
    {
        let t = StdioTransport::over(reader, writer, None, self.stdio_write_timeout);
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
        let client_info = json!({"name": self.name, "version": self.version});
        let meta_json = crate::client::MetaJson::of(&capabilities, &client_info);
        let inner = Arc::new(Inner {
            transport,
            next_id: AtomicI64::new(1),
            state: RwLock::new(State::default()),
            client_info,
            capabilities,
            meta_json,
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
