//! HTTP transport settings.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::auth::Authenticator;

/// Host names that loopback servers accept by default.
pub const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// Settings of the Streamable HTTP transport, built with [`HttpConfig::default`] and the
/// setters. Defaults are safe for a server bound to loopback: Host and Origin must name
/// a loopback host.
#[derive(Clone)]
#[non_exhaustive]
pub struct HttpConfig {
    /// Host names (without port) the `Host` header may carry. `None` disables the check
    /// (for servers behind a proxy that rewrites Host).
    pub(crate) allowed_hosts: Option<Vec<String>>,
    /// Hosts (without port) a browser `Origin` may name; requests without `Origin` are
    /// not browser requests and are allowed.
    pub(crate) allowed_origins: Vec<String>,
    /// Largest request body accepted, in bytes (413 beyond).
    pub(crate) max_body_bytes: usize,
    /// Interval of SSE keep-alive comments on streamed responses.
    pub(crate) keep_alive: Duration,
    /// A request still silent after this long switches its answer to SSE and sends
    /// keep-alive comments, so that a client that went away is noticed (and its request
    /// cancelled). `None` keeps silent requests on plain JSON.
    pub(crate) disconnect_probe: Option<Duration>,
    /// Open `subscriptions/listen` streams at once (503 beyond).
    pub(crate) max_listen_streams: usize,
    /// Requests executing at once; more wait in the queue.
    pub(crate) max_concurrent: usize,
    /// Requests waiting for an execution slot; beyond, 503 with `Retry-After`.
    pub(crate) max_queued: usize,
    /// Deadline of one request, queueing included (then `-32603`, HTTP 504, and the
    /// handler is cancelled).
    pub(crate) request_timeout: Duration,
    /// Open connections at once; further connections wait to be accepted.
    pub(crate) max_connections: usize,
    /// Time a client has to send the request head (slow-header protection).
    pub(crate) header_read_timeout: Duration,
    /// Time a client has to send the whole body once the head arrived (408 beyond).
    pub(crate) body_read_timeout: Duration,
    /// Most request headers (431 beyond).
    pub(crate) max_headers: usize,
    /// Time a pending response write may go without progress (a client that stopped
    /// reading) before the connection is dropped.
    pub(crate) write_timeout: Duration,
    /// Largest single answer, in bytes (a JSON-RPC error in its place beyond).
    pub(crate) max_answer_bytes: usize,
    /// Largest sum of a JSON-RPC batch's answers, in bytes (the members past it are
    /// answered with an error).
    pub(crate) max_batch_answer_bytes: usize,
    /// Most bytes of large answers (64 KiB and more) built and not yet written to their
    /// clients, over all connections (503 beyond).
    pub(crate) max_buffered_answer_bytes: usize,
    /// Identifies the caller of every request (none: every caller is anonymous).
    pub(crate) authenticator: Option<Arc<dyn Authenticator>>,
    /// HTTP/2's own limits.
    pub(crate) http2: Http2Limits,
}

/// The limits of an HTTP/2 connection, beside those every request has (body size,
/// deadlines, header count, the connection cap): set with [`HttpConfig::http2_limits`].
///
/// ```
/// use std::time::Duration;
/// use snodo::http::{Http2Limits, HttpConfig};
/// let limits = Http2Limits::default()
///     .max_concurrent_streams(64)
///     .max_header_list_bytes(32 * 1024)
///     .keep_alive(Some(Duration::from_secs(20)), Duration::from_secs(10));
/// let config = HttpConfig::default().http2_limits(limits);
/// # let _ = config;
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Http2Limits {
    /// Streams (requests) open at once on one connection; the client is told in its
    /// SETTINGS, and a stream beyond is refused (`REFUSED_STREAM`). Default 200.
    pub(crate) max_concurrent_streams: u32,
    /// Largest request header block, in bytes, uncompressed (HPACK), as HTTP/2 counts
    /// it: 32 bytes a field plus name and value. Beyond, the request is refused (431).
    /// Default 64 KiB.
    pub(crate) max_header_list_bytes: u32,
    /// Interval of the server's keep-alive PINGs on a connection (`None`: none sent).
    /// Default none: an idle connection is closed after the header read timeout and
    /// one whose client stops reading after the write timeout, as over HTTP/1.1, and
    /// hyper's keep-alive costs a lock and a clock read on every frame received and
    /// every poll of the connection. Turn it on to notice, within the interval plus
    /// the timeout, a peer that vanished (no FIN, no RST) while streams stay open.
    pub(crate) keep_alive_interval: Option<Duration>,
    /// Time a keep-alive PING may go unanswered before the connection is closed.
    /// Default 20 s.
    pub(crate) keep_alive_timeout: Duration,
}

impl Http2Limits {
    /// Sets the streams open at once on one connection (at most 65 535: more is held
    /// to that).
    #[must_use]
    pub fn max_concurrent_streams(mut self, n: u32) -> Self {
        self.max_concurrent_streams = n.min(super::head_deadline::MAX_RESPONSES);
        self
    }

    /// Sets the largest request header block, in bytes (as HTTP/2 counts it).
    #[must_use]
    pub fn max_header_list_bytes(mut self, n: u32) -> Self {
        self.max_header_list_bytes = n;
        self
    }

    /// Sets the keep-alive PING interval (`None`, the default: no PINGs) and how long a
    /// PING may go unanswered (default 20 s).
    #[must_use]
    pub fn keep_alive(mut self, interval: Option<Duration>, timeout: Duration) -> Self {
        self.keep_alive_interval = interval;
        self.keep_alive_timeout = timeout;
        self
    }
}

impl Default for Http2Limits {
    fn default() -> Self {
        Self {
            max_concurrent_streams: 200,
            max_header_list_bytes: 64 * 1024,
            keep_alive_interval: None,
            keep_alive_timeout: Duration::from_secs(20),
        }
    }
}

impl fmt::Debug for HttpConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpConfig")
            .field("allowed_hosts", &self.allowed_hosts)
            .field("allowed_origins", &self.allowed_origins)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("disconnect_probe", &self.disconnect_probe)
            .field("max_concurrent", &self.max_concurrent)
            .field("max_queued", &self.max_queued)
            .field("request_timeout", &self.request_timeout)
            .field("keep_alive", &self.keep_alive)
            .field("max_connections", &self.max_connections)
            .field("header_read_timeout", &self.header_read_timeout)
            .field("body_read_timeout", &self.body_read_timeout)
            .field("max_headers", &self.max_headers)
            .field("write_timeout", &self.write_timeout)
            .field("max_answer_bytes", &self.max_answer_bytes)
            .field("max_batch_answer_bytes", &self.max_batch_answer_bytes)
            .field("max_buffered_answer_bytes", &self.max_buffered_answer_bytes)
            .field("authenticator", &self.authenticator.is_some())
            .field("http2", &self.http2)
            .finish_non_exhaustive()
    }
}

impl Default for HttpConfig {
    fn default() -> Self {
        let loopback: Vec<String> = LOOPBACK_HOSTS.iter().map(|h| (*h).to_owned()).collect();
        Self {
            allowed_hosts: Some(loopback.clone()),
            allowed_origins: loopback,
            max_body_bytes: 4 * 1024 * 1024,
            keep_alive: Duration::from_secs(15),
            disconnect_probe: Some(Duration::from_secs(5)),
            max_listen_streams: 256,
            max_concurrent: 256,
            max_queued: 1024,
            request_timeout: Duration::from_secs(120),
            max_connections: 1024,
            header_read_timeout: Duration::from_secs(10),
            max_headers: 100,
            body_read_timeout: Duration::from_secs(30),
            write_timeout: Duration::from_secs(30),
            max_answer_bytes: 64 * 1024 * 1024,
            max_batch_answer_bytes: 64 * 1024 * 1024,
            max_buffered_answer_bytes: 256 * 1024 * 1024,
            authenticator: None,
            http2: Http2Limits::default(),
        }
    }
}

impl HttpConfig {
    /// Allows these host names in `Host` and `Origin` in addition to nothing else:
    /// replaces both allow-lists.
    #[must_use]
    pub fn allow_hosts<I: IntoIterator<Item = S>, S: Into<String>>(mut self, hosts: I) -> Self {
        let hosts: Vec<String> = hosts.into_iter().map(Into::into).collect();
        self.allowed_origins.clone_from(&hosts);
        self.allowed_hosts = Some(hosts);
        self
    }

    /// Turns the `Host` check off (Origin is still checked).
    #[must_use]
    pub fn any_host(mut self) -> Self {
        self.allowed_hosts = None;
        self
    }

    /// Authenticates every request with `authenticator`.
    #[must_use]
    pub fn authenticator(mut self, authenticator: impl Authenticator) -> Self {
        self.authenticator = Some(Arc::new(authenticator));
        self
    }

    /// Sets the execution bounds: concurrent executions and queued requests.
    #[must_use]
    pub fn execution_limits(mut self, max_concurrent: usize, max_queued: usize) -> Self {
        self.max_concurrent = max_concurrent;
        self.max_queued = max_queued;
        self
    }

    /// Sets how long a silent request waits before switching to SSE keep-alives
    /// (`None`: never), and the keep-alive interval (at least 1 ms: a zero interval
    /// would send keep-alives as fast as the timer turns).
    #[must_use]
    pub fn disconnect_probe(mut self, after: Option<Duration>, keep_alive: Duration) -> Self {
        self.disconnect_probe = after;
        self.keep_alive = keep_alive.max(Duration::from_millis(1));
        self
    }

    /// Sets the most `subscriptions/listen` streams open at once.
    #[must_use]
    pub fn max_listen_streams(mut self, n: usize) -> Self {
        self.max_listen_streams = n;
        self
    }

    /// Sets the connection limits: open connections, time to send the head, time to
    /// send the body, and the most headers.
    #[must_use]
    pub fn connection_limits(
        mut self,
        max_connections: usize,
        header_read: Duration,
        body_read: Duration,
        max_headers: usize,
    ) -> Self {
        self.max_connections = max_connections;
        self.header_read_timeout = header_read;
        self.body_read_timeout = body_read;
        self.max_headers = max_headers;
        self
    }

    /// Sets the most connections open at once; further connections wait to be
    /// accepted.
    #[must_use]
    pub fn max_connections(mut self, n: usize) -> Self {
        self.max_connections = n;
        self
    }

    /// Sets the time a client has to send the request head (slow-header protection).
    #[must_use]
    pub fn header_read_timeout(mut self, timeout: Duration) -> Self {
        self.header_read_timeout = timeout;
        self
    }

    /// Sets the time a client has to send the whole body once the head arrived (408
    /// beyond).
    #[must_use]
    pub fn body_read_timeout(mut self, timeout: Duration) -> Self {
        self.body_read_timeout = timeout;
        self
    }

    /// Sets the most request headers (431 beyond).
    #[must_use]
    pub fn max_headers(mut self, n: usize) -> Self {
        self.max_headers = n;
        self
    }

    /// Allows browser `Origin`s naming these hosts (without port), leaving the `Host`
    /// allow-list as it is; requests without `Origin` are always allowed.
    #[must_use]
    pub fn allow_origins<I: IntoIterator<Item = S>, S: Into<String>>(mut self, hosts: I) -> Self {
        self.allowed_origins = hosts.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the per-request deadline.
    #[must_use]
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Sets the body limit.
    #[must_use]
    pub fn max_body_bytes(mut self, n: usize) -> Self {
        self.max_body_bytes = n;
        self
    }

    /// Sets the time a pending response write may go without progress before the
    /// connection is dropped (a client that stopped reading its answer). A client that
    /// reads slowly but steadily keeps its connection however long its answer takes.
    /// Default: 30 s.
    #[must_use]
    pub fn write_timeout(mut self, timeout: Duration) -> Self {
        self.write_timeout = timeout;
        self
    }

    /// Sets the answer budgets, in bytes: the largest single answer, the largest sum
    /// of one JSON-RPC batch's answers, and the most bytes of large answers (64 KiB
    /// and more) built and not yet written, over all connections. An answer past a
    /// budget is replaced by a JSON-RPC error (`-32603`; 503 with `Retry-After` for
    /// the total). Defaults: 64 MiB, 64 MiB, 256 MiB.
    #[must_use]
    pub fn answer_limits(mut self, answer: usize, batch: usize, buffered: usize) -> Self {
        self.max_answer_bytes = answer;
        self.max_batch_answer_bytes = batch;
        self.max_buffered_answer_bytes = buffered;
        self
    }

    /// Sets HTTP/2's own limits: concurrent streams per connection, the header block's
    /// size, keep-alive PINGs. Every other limit holds per request over HTTP/2 as over
    /// HTTP/1.1 (and the connection cap counts HTTP/2 connections, not streams).
    #[must_use]
    pub fn http2_limits(mut self, limits: Http2Limits) -> Self {
        self.http2 = limits;
        self
    }
}
