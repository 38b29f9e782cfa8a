//! The per-request context a handler receives: who asked, in which dialect, with which
//! capabilities, and the channels back to the caller (progress, logs, cancellation).

use std::fmt;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use serde::Serialize;
use serde_json::{Map, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use std::time::Duration;

use super::error::HandlerError;
use super::input::{InputRequest, InputRequired};
use super::pending::PendingRequests;
use crate::protocol::jsonrpc::{notification_message, request_message};
use crate::protocol::{Asking, Dialect, LogLevel, ProgressToken, RequestId, RequestMeta, RpcError};

pub(crate) use crate::caller::Principal;

/// Where a request's notifications go: the response stream of that request.
pub(crate) type Sink = mpsc::Sender<Bytes>;

/// What a handler knows about the request it serves. Cheap to clone.
#[derive(Clone)]
pub struct RequestContext {
    inner: Arc<Inner>,
}

/// Everything a context is built from.
#[derive(Clone)]
pub(crate) struct ContextInit {
    pub(crate) dialect: &'static Dialect,
    pub(crate) id: RequestId,
    pub(crate) meta: RequestMeta,
    pub(crate) principal: Option<Principal>,
    pub(crate) cancel: CancellationToken,
    pub(crate) sink: Option<Sink>,
    pub(crate) log_threshold: Option<LogLevel>,
    /// Initialize era: where answers to server requests arrive (None: disabled).
    pub(crate) server_requests: Option<(Arc<PendingRequests>, Duration)>,
    /// The runtime serving the request.
    pub(crate) runtime: super::Runtime,
    /// The caller's W3C trace parent (`_meta`, or the transport's headers).
    pub(crate) trace: Option<crate::protocol::trace::TraceContext>,
}

struct Inner {
    init: ContextInit,
    last_progress: Mutex<Option<f64>>,
    /// 2026-07-28: answers from `inputResponses` and earlier rounds (`None` until there
    /// are any: most requests have none, and an empty map costs a drop).
    answers: Mutex<Option<Map<String, Value>>>,
    /// 2026-07-28: the application state of an earlier round.
    app_state: Option<Value>,
    /// The job (a task) this context runs as the worker of.
    task: Option<Arc<dyn super::worker::Worker>>,
    /// When the task's status message was last set (progress is throttled).
    last_status: Mutex<Option<std::time::Instant>>,
}

/// Least time between two status messages a task's progress sets.
const STATUS_EVERY: Duration = Duration::from_millis(200);

impl fmt::Debug for RequestContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestContext")
            .field("dialect", &self.inner.init.dialect.version())
            .field("id", &self.inner.init.id)
            .field("principal", &self.inner.init.principal)
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
    pub(crate) fn new(init: ContextInit) -> Self {
        Self::with_answers(init, None, None)
    }

    pub(crate) fn with_answers(
        init: ContextInit,
        answers: Option<Map<String, Value>>,
        app_state: Option<Value>,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                init,
                last_progress: Mutex::new(None),
                answers: Mutex::new(answers),
                app_state,
                task: None,
                last_status: Mutex::new(None),
            }),
        }
    }

    /// This context with a round's answers and application state (2026-07-28 multi
    /// round-trip), set before any handler holds it.
    pub(crate) fn with_round(
        mut self,
        answers: Map<String, Value>,
        app_state: Option<Value>,
    ) -> Self {
        match Arc::get_mut(&mut self.inner) {
            Some(inner) => {
                inner.answers = Mutex::new(Some(answers));
                inner.app_state = app_state;
                self
            }
            // Shared already (not on the router's path): a context of its own.
            None => Self::with_answers(self.inner.init.clone(), Some(answers), app_state),
        }
    }

    /// The context of the worker of `link` (a task), made from the context of the request
    /// that created it: same dialect, id, `_meta`, principal, answers and state; its
    /// own cancellation; no response stream (progress becomes the task's status
    /// message, questions park the task in `input_required`).
    pub(crate) fn for_worker(
        &self,
        link: Arc<dyn super::worker::Worker>,
        cancel: CancellationToken,
    ) -> Self {
        let init = &self.inner.init;
        Self {
            inner: Arc::new(Inner {
                init: ContextInit {
                    dialect: init.dialect,
                    id: init.id.clone(),
                    meta: init.meta.clone(),
                    principal: init.principal.clone(),
                    cancel,
                    sink: None,
                    log_threshold: None,
                    server_requests: None,
                    runtime: init.runtime.clone(),
                    trace: init.trace.clone(),
                },
                last_progress: Mutex::new(None),
                answers: Mutex::new(Some(self.answers())),
                app_state: self.inner.app_state.clone(),
                task: Some(link),
                last_status: Mutex::new(None),
            }),
        }
    }

    /// Adds answers (a task's handler that asked by returning `InputRequired`).
    pub(crate) fn add_answers(&self, more: Map<String, Value>) {
        if let Ok(mut answers) = self.inner.answers.lock() {
            answers.get_or_insert_with(Map::new).extend(more);
        }
    }

    /// The id of the task this handler runs as (tasks extension), if it does.
    #[must_use]
    pub fn task_id(&self) -> Option<&str> {
        self.inner.task.as_ref().map(|t| t.id())
    }

    /// Answers collected so far (2026-07-28), to carry into the next round's state.
    pub(crate) fn answers(&self) -> Map<String, Value> {
        self.inner
            .answers
            .lock()
            .ok()
            .and_then(|a| a.clone())
            .unwrap_or_default()
    }

    /// The runtime serving this request: change its catalogue
    /// ([`Runtime::update`](super::Runtime::update)) or publish resource updates.
    #[must_use]
    pub fn runtime(&self) -> &super::Runtime {
        &self.inner.init.runtime
    }

    /// The dialect the request was made in.
    #[must_use]
    pub fn dialect(&self) -> &'static Dialect {
        self.inner.init.dialect
    }

    /// The protocol version of the request.
    #[must_use]
    pub fn protocol_version(&self) -> &'static str {
        self.inner.init.dialect.version()
    }

    /// The caller's W3C Trace Context parent: `params._meta.traceparent`/`tracestate`
    /// (over HTTP, the `traceparent`/`tracestate` headers when `_meta` has none).
    #[must_use]
    pub fn trace_context(&self) -> Option<&crate::TraceContext> {
        self.inner.init.trace.as_ref()
    }

    /// The JSON-RPC id of the request.
    #[must_use]
    pub fn request_id(&self) -> &RequestId {
        &self.inner.init.id
    }

    /// The authenticated caller, if the application installed an authenticator.
    #[must_use]
    pub fn principal(&self) -> Option<&Principal> {
        self.inner.init.principal.as_ref()
    }

    /// The client capabilities declared on this request (2026-07-28), or at `initialize`
    /// on a connection that holds them (stdio). Initialize-era requests over HTTP carry
    /// none: a stateless server keeps nothing from `initialize`.
    #[must_use]
    pub fn client_capabilities(&self) -> Option<&Map<String, Value>> {
        self.inner.init.meta.client_capabilities.as_ref()
    }

    /// Whether the client declared capability `name` (e.g. `"sampling"`) on this request.
    #[must_use]
    pub fn client_has(&self, name: &str) -> bool {
        self.client_capabilities()
            .is_some_and(|c| c.contains_key(name))
    }

    /// The client info sent with this request (2026-07-28), if any. Never an identity.
    #[must_use]
    pub fn client_info(&self) -> Option<&serde_json::value::RawValue> {
        self.inner.init.meta.client_info.as_deref()
    }

    /// The parsed request `_meta`.
    #[must_use]
    pub fn meta(&self) -> &RequestMeta {
        &self.inner.init.meta
    }

    /// The cancellation token of this execution: cancelled when the client disconnects,
    /// cancels the request, the deadline passes or the server shuts down.
    #[must_use]
    pub fn cancellation(&self) -> &CancellationToken {
        &self.inner.init.cancel
    }

    /// Whether this execution has been cancelled.
    #[must_use]
    pub fn is_cancelled(&self) -> bool {
        self.inner.init.cancel.is_cancelled()
    }

    /// Whether a question asked here ([`ask_all`](Self::ask_all)) may end this request
    /// with a round of the client's own (`input_required`: a 2026-07-28 request outside
    /// a task). `false` when every question is answered while the request waits (an
    /// initialize-era server request, or a task's `input_required` status).
    #[must_use]
    pub fn asks_in_rounds(&self) -> bool {
        self.inner.init.dialect.asking() == Asking::Rounds && self.inner.task.is_none()
    }

    /// Whether progress reports reach the client (it sent a `progressToken`).
    #[must_use]
    pub fn wants_progress(&self) -> bool {
        self.inner.init.sink.is_some() && self.inner.init.meta.progress_token.is_some()
    }

    /// Reports progress. A no-op unless the request carried a `progressToken`; values
    /// that do not strictly increase are dropped, as the protocol requires.
    ///
    /// In a task (which sends no progress notifications) the progress becomes the
    /// task's `statusMessage` (at most five updates a second): `message`, else
    /// `"progress/total"`.
    pub async fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        if let Some(task) = &self.inner.task {
            let due = self.inner.last_status.lock().is_ok_and(|mut last| {
                let due = last.is_none_or(|l| l.elapsed() >= STATUS_EVERY);
                if due {
                    *last = Some(std::time::Instant::now());
                }
                due
            });
            if due {
                let text = message.map_or_else(
                    || match total {
                        Some(t) => format!("{progress}/{t}"),
                        None => format!("{progress}"),
                    },
                    str::to_owned,
                );
                task.status(text).await;
            }
            return;
        }
        let (Some(sink), Some(token)) =
            (&self.inner.init.sink, &self.inner.init.meta.progress_token)
        else {
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
        let Some(sink) = &self.inner.init.sink else {
            return;
        };
        if self.inner.init.log_threshold.is_none_or(|t| level < t) {
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

    /// The application state attached to the previous round's
    /// [`InputRequired`] (2026-07-28), verified by the runtime.
    #[must_use]
    pub fn request_state(&self) -> Option<&Value> {
        self.inner.app_state.as_ref()
    }

    /// The client's answer to `request`, asked under `key`.
    ///
    /// - 2026-07-28: the answer from `inputResponses` (or an earlier round); when it is
    ///   missing or malformed this returns [`HandlerError::InputRequired`], which the
    ///   handler passes on with `?` so the client asks the user and retries. A client
    ///   that did not declare the needed capability gets `-32021`.
    /// - initialize era: a JSON-RPC request on this request's SSE stream; the client's
    ///   POSTed answer is awaited (only when the runtime enables server requests).
    pub async fn ask(&self, key: &str, request: InputRequest) -> Result<Value, HandlerError> {
        let mut answers = self.ask_all([(key.to_owned(), request)]).await?;
        answers
            .remove(key)
            .ok_or_else(|| HandlerError::Protocol(RpcError::internal("missing answer")))
    }

    /// Asks several questions at once (one round on 2026-07-28).
    pub async fn ask_all(
        &self,
        requests: impl IntoIterator<Item = (String, InputRequest)>,
    ) -> Result<Map<String, Value>, HandlerError> {
        let requests: Vec<(String, InputRequest)> = requests.into_iter().collect();
        if self.inner.init.dialect.asking() == Asking::ServerRequests {
            let mut out = Map::new();
            for (key, request) in requests {
                let answer = self.ask_client(&request).await?;
                out.insert(key, answer);
            }
            return Ok(out);
        }
        let caps = self.client_capabilities();
        let mut out = Map::new();
        let mut missing = InputRequired::new();
        let mut asked = Vec::new();
        let answers = self.answers();
        for (key, request) in requests {
            if !request.allowed_by(caps) {
                let (_, required) = request.required_capability();
                return Err(RpcError::missing_client_capability(required).into());
            }
            match answers.get(&key) {
                Some(answer) if request.accepts(answer) => {
                    out.insert(key, answer.clone());
                }
                _ => {
                    missing = missing.ask(key.clone(), request.clone());
                    asked.push((key, request));
                }
            }
        }
        if missing.requests.is_empty() {
            return Ok(out);
        }
        let Some(task) = &self.inner.task else {
            return Err(missing.into());
        };
        // In a task: park it in `input_required` until `tasks/update` answers.
        let accepts =
            |key: &str, answer: &Value| asked.iter().any(|(k, r)| k == key && r.accepts(answer));
        let got = task
            .collect(missing.requests, &accepts, &self.inner.init.cancel)
            .await?;
        self.add_answers(got.clone());
        out.extend(got);
        Ok(out)
    }

    /// Initialize era: sends `request` to the client and waits for its answer.
    async fn ask_client(&self, request: &InputRequest) -> Result<Value, HandlerError> {
        let unavailable = |why: &str| {
            HandlerError::Protocol(RpcError::internal(format!(
                "Cannot send {} to the client: {why}",
                request.method()
            )))
        };
        let (Some((pending, timeout)), Some(sink)) =
            (&self.inner.init.server_requests, &self.inner.init.sink)
        else {
            return Err(unavailable(
                "server-to-client requests are not enabled on this server",
            ));
        };
        // A connection that knows what the client declared at `initialize` (stdio) asks
        // only for what it declared.
        if let Some(caps) = self.client_capabilities() {
            if !request.allowed_by(Some(caps)) {
                let (name, _) = request.required_capability();
                return Err(unavailable(&format!(
                    "the client did not declare the {name} capability"
                )));
            }
        }
        let mut params = request.params().clone();
        self.inner
            .init
            .dialect
            .shape_server_request(request.method(), &mut params)
            .map_err(unavailable)?;
        let id = pending.mint();
        let rx = pending.register(&id);
        let message = request_message(
            &RequestId::String(id.as_str().into()),
            request.method(),
            &params,
        );
        if sink.send(message).await.is_err() {
            pending.forget(&id);
            self.inner.init.cancel.cancel();
            return Err(unavailable("the client went away"));
        }
        let outcome = tokio::select! {
            answer = rx => answer.ok(),
            () = self.inner.init.cancel.cancelled() => None,
            () = tokio::time::sleep(*timeout) => None,
        };
        pending.forget(&id);
        match outcome {
            Some(Ok(result)) => Ok(result),
            Some(Err(error)) => Err(HandlerError::Protocol(RpcError::internal(format!(
                "The client refused {}: {}",
                request.method(),
                error
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("no message")
            )))),
            None => Err(unavailable("no answer arrived in time")),
        }
    }

    async fn send(&self, sink: &Sink, message: Bytes) {
        if self.inner.init.cancel.is_cancelled() {
            return;
        }
        // A closed stream means the client went away: that is a cancellation.
        if sink.send(message).await.is_err() {
            self.inner.init.cancel.cancel();
        }
    }
}
