//! One stdio connection: lines in, the engine's executions and subscriptions, whole
//! messages out. The connection is the only holder of initialize-era state (the
//! negotiated dialect, the client's capabilities, the log level) and the scope of
//! request ids (cancellation, answers to server requests).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::config::StdioConfig;
use super::drive::drive;
use super::framing::{Frame, Lines};
use super::outbox::{Outbox, write_loop};
use crate::engine::admission::{self, Admission, Refused};
use crate::engine::negotiation::Negotiated;
use crate::engine::observe::{Outcome, Record, Transport};
use crate::engine::{
    self, Engine, Execution, Held, InFlight, Limits, ListenStep, Options, Registration,
    Subscription,
};
use crate::protocol::jsonrpc::{Incoming, error_message, notification_message};
use crate::protocol::params::SplitParams;
use crate::protocol::{Dialect, ErrorCode, LogLevel, Method, RequestId, RpcError};
use crate::router::Call;
use crate::runtime::Runtime;
use crate::runtime::context::Principal;
use crate::runtime::pending::PendingRequests;

/// How long cancelled work gets to end after the drain period, and the writer to flush.
const LAST_WORDS: Duration = Duration::from_secs(1);

/// Client capabilities that server-to-client requests need.
const ASKABLE: [&str; 3] = ["sampling", "elicitation", "roots"];

/// Why a connection ended with an error.
pub(super) type Ended = std::io::Result<()>;

/// Serves one connection until end of input, `shutdown`, or the writer failing; then
/// drains in-flight requests (bounded) and flushes.
pub(super) async fn run<R, W, F>(
    runtime: Runtime,
    mut reader: R,
    writer: W,
    config: StdioConfig,
    shutdown: F,
) -> Ended
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
    F: Future<Output = ()>,
{
    let limits = Limits {
        max_concurrent: config.max_in_flight,
        max_queued: config.max_in_flight,
        request_timeout: config.request_timeout,
        max_listen_streams: config.max_listen_streams,
    };
    let (out, rx) = Outbox::new(config.outbound_queue, config.outbound_bytes);
    let writer_gone = CancellationToken::new();
    let mut writer_task = tokio::spawn(write_loop(writer, rx, writer_gone.clone()));
    let mut conn = Connection {
        engine: Arc::new(Engine::new(runtime, limits)),
        permits: Arc::new(Semaphore::new(config.max_in_flight)),
        lines: Lines::new(config.max_line_bytes),
        config,
        out,
        tasks: TaskTracker::new(),
        inflight: Arc::new(InFlight::default()),
        pending: Arc::new(PendingRequests::default()),
        cut: CancellationToken::new(),
        key: Principal::new("stdio-connection"),
        negotiated: None,
        client_caps: None,
        log_level: None,
    };
    conn.log_level = conn.engine.runtime.legacy_log_level();
    tracing::debug!("stdio connection open");
    let stop = async {
        tokio::select! {
            () = shutdown => {}
            () = writer_gone.cancelled() => {}
        }
    };
    let result = conn.read_loop(&mut reader, stop).await;

    // Subscriptions end at once; requests get the drain period, then are cancelled.
    let Connection {
        engine,
        tasks,
        out,
        config,
        cut,
        ..
    } = conn;
    engine.begin_shutdown();
    tasks.close();
    if tokio::time::timeout(config.drain_timeout, tasks.wait())
        .await
        .is_err()
    {
        tracing::warn!(
            "stdio: in-flight requests did not finish within the drain timeout; cancelling them"
        );
        cut.cancel();
        engine.cancel_all();
        let _ = tokio::time::timeout(LAST_WORDS, tasks.wait()).await;
    }
    drop(out);
    if tokio::time::timeout(LAST_WORDS, &mut writer_task)
        .await
        .is_err()
    {
        // The client stopped reading: what is still queued is dropped.
        writer_task.abort();
    }
    tracing::debug!("stdio connection closed");
    result
}

/// A request's cancellation, registered under its id on the connection as soon as it
/// is read (`None`: the id is already in flight, and that one stays cancellable).
struct Cancellable {
    cancel: CancellationToken,
    registration: Option<Registration>,
}

impl Cancellable {
    fn register(inflight: &Arc<InFlight>, key: &Principal, id: &RequestId) -> Self {
        let cancel = CancellationToken::new();
        let registration = InFlight::register(inflight, Some(key), id, &cancel);
        Self {
            cancel,
            registration,
        }
    }
}

/// The input side: the reader, whether it ended, and a frame read ahead.
struct Input<'r, R> {
    reader: &'r mut R,
    eof: bool,
    held: Option<Frame>,
}

struct Connection {
    engine: Arc<Engine>,
    config: StdioConfig,
    lines: Lines,
    /// Whole messages to write, in order (bounded in messages and bytes: a client that
    /// stops reading stops the server reading).
    out: Outbox,
    tasks: TaskTracker,
    /// One per executing request: without a free one, the connection stops reading.
    permits: Arc<Semaphore>,
    /// This connection's cancellable requests, all under one key: ids are scoped to the
    /// connection.
    inflight: Arc<InFlight>,
    key: Principal,
    /// This connection's server-to-client requests waiting for answers.
    pending: Arc<PendingRequests>,
    /// Cancelled when the drain period ended: requests still running get an error.
    cut: CancellationToken,
    /// The initialize-era dialect `initialize` negotiated (held by the connection only).
    negotiated: Option<&'static Dialect>,
    /// The capabilities the client declared at `initialize`.
    client_caps: Option<Map<String, Value>>,
    /// The level `logging/setLevel` set (initially the runtime's).
    log_level: Option<LogLevel>,
}

impl Connection {
    async fn read_loop<R: AsyncRead + Unpin>(
        &mut self,
        reader: &mut R,
        stop: impl Future<Output = ()>,
    ) -> Ended {
        tokio::pin!(stop);
        let mut input = Input {
            reader,
            eof: false,
            held: None,
        };
        loop {
            let frame = match input.held.take() {
                Some(frame) => Some(frame),
                None => tokio::select! {
                    biased;
                    () = stop.as_mut() => return Ok(()),
                    frame = self.next_frame(&mut input) => frame?,
                },
            };
            let Some(frame) = frame else {
                return Ok(());
            };
            if !self.frame(frame, &mut input, stop.as_mut()).await? {
                return Ok(());
            }
        }
    }

    /// The next frame; `None` after the end of input (a last line without its newline
    /// is still a frame).
    async fn next_frame<R: AsyncRead + Unpin>(
        &mut self,
        input: &mut Input<'_, R>,
    ) -> std::io::Result<Option<Frame>> {
        loop {
            if let Some(frame) = self.lines.next() {
                return Ok(Some(frame));
            }
            if input.eof {
                return Ok(None);
            }
            if input.reader.read_buf(self.lines.buffer()).await? == 0 {
                input.eof = true;
                return Ok(self.lines.finish());
            }
        }
    }

    /// Handles one frame; `false` when the connection stops.
    async fn frame<R: AsyncRead + Unpin>(
        &mut self,
        frame: Frame,
        input: &mut Input<'_, R>,
        stop: Pin<&mut impl Future<Output = ()>>,
    ) -> std::io::Result<bool> {
        let Some(line) = self.line(frame).await else {
            return Ok(true);
        };
        let mut record =
            self.engine
                .observe
                .begin(Transport::Stdio, line.len(), tokio::time::Instant::now());
        match admission::read_message(&line) {
            Ok(Incoming::Request { id, method, params }) => {
                // Cancellable from here on, before anything after it is read: a
                // `notifications/cancelled` right behind it (even while it waits for a
                // permit) finds it.
                let handle = Cancellable::register(&self.inflight, &self.key, &id);
                let Some(permit) = self.permit(input, stop).await? else {
                    return Ok(false);
                };
                if handle.cancel.is_cancelled() {
                    if let Some(r) = record.as_mut() {
                        r.method_name(&method);
                        r.summary.outcome = Outcome::Cancelled;
                    }
                    return Ok(true);
                }
                self.request(id, &method, params, (permit, handle), record)
                    .await;
            }
            Err(e) => {
                if let Some(r) = record.as_mut() {
                    r.refused(&e.error);
                }
                self.not_a_request(Err(e)).await;
            }
            other => {
                // A notification is logged by its method, as on HTTP.
                if let (Ok(Incoming::Notification { method, .. }), Some(r)) =
                    (&other, record.as_mut())
                {
                    r.method_name(method);
                }
                self.not_a_request(other).await;
            }
        }
        Ok(true)
    }

    /// The line of a frame, unless it needs no answer or was too long (answered here).
    async fn line(&self, frame: Frame) -> Option<Bytes> {
        match frame {
            Frame::Line(line) if line.iter().all(u8::is_ascii_whitespace) => None,
            Frame::Line(line) => Some(line),
            Frame::TooLong => {
                let e = RpcError::new(
                    ErrorCode::INVALID_REQUEST,
                    format!(
                        "Invalid Request: the message exceeds the line limit of {} bytes",
                        self.config.max_line_bytes
                    ),
                );
                self.send(error_message(None, &e)).await;
                None
            }
        }
    }

    /// A permit for a request (back-pressure): a free execution slot, and room in the
    /// outbound budget. While there is none, the answers and notifications that follow
    /// are still read, since an executing request may wait for an answer behind this
    /// one; a second request is held back and reading stops.
    async fn permit<R: AsyncRead + Unpin>(
        &mut self,
        input: &mut Input<'_, R>,
        mut stop: Pin<&mut impl Future<Output = ()>>,
    ) -> std::io::Result<Option<OwnedSemaphorePermit>> {
        loop {
            if self.out.has_room() {
                if let Ok(p) = Arc::clone(&self.permits).try_acquire_owned() {
                    return Ok(Some(p));
                }
            }
            if input.held.is_some() || input.eof {
                return Ok(tokio::select! {
                    biased;
                    () = stop.as_mut() => None,
                    p = self.ready() => p,
                });
            }
            let frame = tokio::select! {
                biased;
                () = stop.as_mut() => return Ok(None),
                p = self.ready() => return Ok(p),
                frame = self.next_frame(input) => frame?,
            };
            let Some(line) = (match frame {
                Some(frame) => self.line(frame).await,
                None => None,
            }) else {
                continue;
            };
            let parsed = admission::read_message(&line);
            if matches!(parsed, Ok(Incoming::Request { .. })) {
                drop(parsed);
                input.held = Some(Frame::Line(line));
            } else {
                self.not_a_request(parsed).await;
            }
        }
    }

    /// Waits for room in the outbound budget, then for an execution slot (a future that
    /// borrows nothing of the connection, so that reading can go on beside it).
    fn ready(&self) -> impl Future<Output = Option<OwnedSemaphorePermit>> + use<> {
        let out = self.out.clone();
        let permits = Arc::clone(&self.permits);
        async move {
            out.room().await;
            permits.acquire_owned().await.ok()
        }
    }

    async fn not_a_request(&self, parsed: Result<Incoming<'_, SplitParams<'_>>, Refused>) {
        match parsed {
            Err(e) => self.send(error_message(e.id.as_ref(), &e.error)).await,
            Ok(Incoming::Notification { method, params }) => self.notification(&method, params),
            Ok(Incoming::Response { id, result, error }) => self.response(id, result, error),
            Ok(Incoming::Request { .. }) => {}
        }
    }

    async fn send(&self, message: Bytes) {
        let _ = self.out.send(message).await;
    }

    async fn request(
        &mut self,
        id: RequestId,
        method: &str,
        params: Option<SplitParams<'_>>,
        (permit, handle): (OwnedSemaphorePermit, Cancellable),
        mut record: Option<Record>,
    ) {
        let runtime = &self.engine.runtime;
        let mut connection = Negotiated::new(self.negotiated);
        let admitted = admission::admit(
            runtime,
            &mut connection,
            &id,
            (method, params),
            record.as_mut(),
        );
        let mut admitted = match admitted {
            Ok(a) => a,
            Err(refused) => return self.send(error_message(Some(&id), &refused.error)).await,
        };
        let call = admitted.call_mut();
        if let Some(dialect) = connection.negotiating {
            self.negotiated = Some(dialect);
            self.client_caps = call
                .params
                .initialize()
                .ok()
                .and_then(|p| p.capabilities.clone());
        }
        if self.negotiated == Some(call.dialect) {
            // What the connection holds applies to its requests.
            if call.method == Method::LoggingSetLevel {
                if let Ok(p) = call.params.set_level() {
                    self.log_level = Some(p.level);
                }
            }
            if call.meta.client_capabilities.is_none() {
                call.meta.client_capabilities.clone_from(&self.client_caps);
            }
        }
        match admitted {
            Admission::Listen(call) => {
                if let Some(r) = record.as_mut() {
                    r.admitted(&id, &call, None);
                }
                self.listen(id, &call, handle, &mut record).await;
            }
            Admission::Execute(call) => self.execute(id, call, permit, handle, record),
        }
    }

    fn execute(
        &self,
        id: RequestId,
        call: Call,
        permit: OwnedSemaphorePermit,
        Cancellable {
            cancel,
            registration,
        }: Cancellable,
        mut record: Option<Record>,
    ) {
        let engine = Arc::clone(&self.engine);
        let out = self.out.clone();
        let cut = self.cut.clone();
        let log_level = self.log_level;
        let askable = self
            .client_caps
            .as_ref()
            .is_some_and(|c| ASKABLE.iter().any(|k| c.contains_key(*k)));
        let pending = askable.then(|| Arc::clone(&self.pending));
        let ask_timeout = self.config.server_request_timeout;
        self.tasks.spawn(async move {
            let _held = (permit, registration);
            let options = Options {
                principal: None,
                cancel_by: None,
                held: Held::Connection {
                    log_level,
                    server_requests: pending.as_ref().map(|p| (p, ask_timeout)),
                },
                record: &mut record,
                trace: None,
            };
            let exec = match Execution::start(&engine, id.clone(), call, options).await {
                Ok(exec) => exec,
                Err(failure) => {
                    let e = failure.into_error();
                    let _ = out.send(error_message(Some(&id), &e)).await;
                    return;
                }
            };
            if cancel.is_cancelled() {
                // Cancelled before it ran: dropped unpolled (recorded as cancelled).
                return;
            }
            drive(exec, &id, &out, &cancel, &cut).await;
        });
    }

    /// Opens a subscription whose messages share the connection; the client ends it
    /// with `notifications/cancelled`, the server with a result and a cancellation.
    async fn listen(
        &self,
        id: RequestId,
        call: &Call,
        Cancellable {
            cancel,
            registration,
        }: Cancellable,
        record: &mut Option<Record>,
    ) {
        let mut subscription = match Subscription::open(&self.engine, id.clone(), call, None) {
            Ok(s) => s,
            Err(failure) => {
                if let Some(r) = record.as_mut() {
                    r.failure(&failure);
                }
                let e = failure.into_error();
                return self.send(error_message(Some(&id), &e)).await;
            }
        };
        let engine = Arc::clone(&self.engine);
        let out = self.out.clone();
        self.tasks.spawn(async move {
            let _registration = registration;
            loop {
                let step = tokio::select! {
                    biased;
                    () = cancel.cancelled() => return,
                    step = subscription.next(&engine) => step,
                };
                let (messages, last) = match step {
                    ListenStep::Messages(ms) => (ms, false),
                    ListenStep::Closing(result) => {
                        let teardown = notification_message(
                            "notifications/cancelled",
                            &json!({"requestId": subscription.id(), "reason": "The server is shutting down"}),
                        );
                        (vec![result, teardown], true)
                    }
                    ListenStep::Gone => return,
                };
                for m in messages {
                    tokio::select! {
                        biased;
                        () = cancel.cancelled() => return,
                        sent = out.send(m) => if sent.is_err() { return },
                    }
                }
                if last {
                    return;
                }
            }
        });
    }

    fn notification(&self, method: &str, params: Option<SplitParams<'_>>) {
        // `notifications/initialized` and unknown notifications need nothing.
        if Method::parse(method) == Method::Cancelled {
            if let Some(id) = engine::cancelled_id(params) {
                // Unknown and finished ids are ignored.
                self.inflight.cancel(&self.key, &id);
            }
        }
    }

    fn response(&self, id: Option<RequestId>, result: Option<&RawValue>, error: Option<&RawValue>) {
        let Some(RequestId::String(id)) = id else {
            tracing::debug!("stdio: ignored a response without a string id");
            return;
        };
        if !self
            .pending
            .deliver(&id, engine::client_answer(result, error))
        {
            tracing::debug!(id = %id, "stdio: ignored a response that no request waits for");
        }
    }
}
