//! The per-request context a handler receives: who asked, in which dialect, with which
//! capabilities, and the channels back to the caller (progress, logs, cancellation).

use std::fmt;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use serde::Serialize;
use serde_json::{Map, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::protocol::jsonrpc::notification_message;
use crate::protocol::{Dialect, LogLevel, ProgressToken, RequestId, RequestMeta};

/// The authenticated caller of a request, as the application's authenticator named it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Principal(Arc<str>);

impl Principal {
    /// A principal with this identifier.
    pub fn new(id: impl Into<Arc<str>>) -> Self {
        Self(id.into())
    }

    /// The identifier.
    #[must_use]
    pub fn id(&self) -> &str {
        &self.0
    }
}

/// Where a request's notifications go: the response stream of that request.
pub(crate) type Sink = mpsc::Sender<Bytes>;

/// What a handler knows about the request it serves. Cheap to clone.
#[derive(Clone)]
pub struct RequestContext {
    inner: Arc<Inner>,
}

struct Inner {
    dialect: &'static Dialect,
    id: RequestId,
    meta: RequestMeta,
    principal: Option<Principal>,
    cancel: CancellationToken,
    sink: Option<Sink>,
    log_threshold: Option<LogLevel>,
    last_progress: Mutex<Option<f64>>,
}

impl fmt::Debug for RequestContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestContext")
            .field("dialect", &self.inner.dialect.version())
            .field("id", &self.inner.id)
            .field("principal", &self.inner.principal)
            .finish_non_exhaustive()
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ProgressParams<'a> {
    progress_token: &'a ProgressToken,
    progress: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    total: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<&'a str>,
}

#[derive(Serialize)]
struct LogParams<'a, D> {
    level: LogLevel,
    #[serde(skip_serializing_if = "Option::is_none")]
    logger: Option<&'a str>,
    data: D,
}

impl RequestContext {
    pub(crate) fn new(
        dialect: &'static Dialect,
        id: RequestId,
        meta: RequestMeta,
        principal: Option<Principal>,
        cancel: CancellationToken,
        sink: Option<Sink>,
        log_threshold: Option<LogLevel>,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                dialect,
                id,
                meta,
                principal,
                cancel,
                sink,
                log_threshold,
                last_progress: Mutex::new(None),
            }),
        }
    }

    /// The dialect the request was made in.
    #[must_use]
    pub fn dialect(&self) -> &'static Dialect {
        self.inner.dialect
    }

    /// The protocol version of the request.
    #[must_use]
    pub fn protocol_version(&self) -> &'static str {
        self.inner.dialect.version()
    }

    /// The JSON-RPC id of the request.
    #[must_use]
    pub fn request_id(&self) -> &RequestId {
        &self.inner.id
    }

    /// The authenticated caller, if the application installed an authenticator.
    #[must_use]
    pub fn principal(&self) -> Option<&Principal> {
        self.inner.principal.as_ref()
    }

    /// The client capabilities declared on this request (2026-07-28). Initialize-era
    /// requests carry none: a stateless server keeps nothing from `initialize`.
    #[must_use]
    pub fn client_capabilities(&self) -> Option<&Map<String, Value>> {
        self.inner.meta.client_capabilities.as_ref()
    }

    /// Whether the client declared capability `name` (e.g. `"sampling"`) on this request.
    #[must_use]
    pub fn client_has(&self, name: &str) -> bool {
        self.client_capabilities()
            .is_some_and(|c| c.contains_key(name))
    }

    /// The client info sent with this request (2026-07-28), if any. Never an identity.
    #[must_use]
    pub fn client_info(&self) -> Option<&Value> {
        self.inner.meta.client_info.as_ref()
    }

    /// The parsed request `_meta`.
    #[must_use]
    pub fn meta(&self) -> &RequestMeta {
        &self.inner.meta
    }

    /// The cancellation token of this execution: cancelled when the client disconnects,
    /// cancels the request, the deadline passes or the server shuts down.
    #[must_use]
    pub fn cancellation(&self) -> &CancellationToken {
        &self.inner.cancel
    }

    /// Whether this execution has been cancelled.
    #[must_use]
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancel.is_cancelled()
    }

    /// Whether progress reports reach the client (it sent a `progressToken`).
    #[must_use]
    pub fn wants_progress(&self) -> bool {
        self.inner.sink.is_some() && self.inner.meta.progress_token.is_some()
    }

    /// Reports progress. A no-op unless the request carried a `progressToken`; values
    /// that do not strictly increase are dropped, as the protocol requires.
    pub async fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        let (Some(sink), Some(token)) = (&self.inner.sink, &self.inner.meta.progress_token) else {
            return;
        };
        {
            let Ok(mut last) = self.inner.last_progress.lock() else {
                return;
            };
            if last.is_some_and(|l| progress <= l) || !progress.is_finite() {
                return;
            }
            *last = Some(progress);
        }
        let params = ProgressParams {
            progress_token: token,
            progress,
            total,
            message,
        };
        self.send(
            sink,
            notification_message("notifications/progress", &params),
        )
        .await;
    }

    /// Sends a log message (`notifications/message`) on this request's stream, if the
    /// request asked for logs at or below `level` (2026-07-28: per-request
    /// `io.modelcontextprotocol/logLevel`; initialize era: the runtime's legacy level).
    pub async fn log(&self, level: LogLevel, logger: Option<&str>, data: impl Serialize) {
        let Some(sink) = &self.inner.sink else { return };
        if self.inner.log_threshold.is_none_or(|t| level < t) {
            return;
        }
        let params = LogParams {
            level,
            logger,
            data,
        };
        self.send(sink, notification_message("notifications/message", &params))
            .await;
    }

    async fn send(&self, sink: &Sink, message: Bytes) {
        if self.inner.cancel.is_cancelled() {
            return;
        }
        // A closed stream means the client went away: that is a cancellation.
        if sink.send(message).await.is_err() {
            self.inner.cancel.cancel();
        }
    }
}
