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
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _, BufWriter};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::config::StdioConfig;
use super::framing::{Frame, Lines};
use crate::engine::admit::{self, Admitted};
use crate::engine::observe::{Record, Transport};
use crate::engine::{
    self, Engine, Execution, Held, InFlight, Limits, ListenStep, Options, Step, Subscription,
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
    let (out, rx) = mpsc::channel(config.outbound_queue);
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
    /// Whole messages to write, in order (bounded: a client that stops reading stops
    /// the server reading).
    out: mpsc::Sender<Bytes>,
    tasks: TaskTracker,
    /// One per executing request: without a free one, the connection stops reading.
    permits: Arc<Semaphore>,
    /// This connection's cancellable requests, all under one key: ids are scoped to the
    /// connection.
    inflight: Arc<InFlight>,
    key: Principal,
    /// This connection's server-to-client requests waiting for answers.
    pending: Arc<PendingRequests>,
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
        let record =
            self.engine
                .observe
                .begin(Transport::Stdio, line.len(), tokio::time::Instant::now());
        match admit::read_message(&line) {
            Ok(Incoming::Request { id, method, params }) => {
                let Some(permit) = self.permit(input, stop).await? else {
                    return Ok(false);
                };
                self.request(id, &method, params, permit, record).await;
            }
            Err(e) => {
                let mut record = record;
                if let Some(r) = record.as_mut() {
                    r.refused(&e);
                }
                self.not_a_request(Err(e)).await;
            }
            other => self.not_a_request(other).await,
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

    /// A permit for a request (back-pressure). While none is free, the answers and
    /// notifications that follow are still read, since an executing request may wait
    /// for an answer behind this one; a second request is held back and reading stops.
    async fn permit<R: AsyncRead + Unpin>(
        &mut self,
        input: &mut Input<'_, R>,
        mut stop: Pin<&mut impl Future<Output = ()>>,
    ) -> std::io::Result<Option<OwnedSemaphorePermit>> {
        loop {
            if let Ok(p) = Arc::clone(&self.permits).try_acquire_owned() {
                return Ok(Some(p));
            }
            if input.held.is_some() || input.eof {
                return Ok(tokio::select! {
                    biased;
                    () = stop.as_mut() => None,
                    p = Arc::clone(&self.permits).acquire_owned() => p.ok(),
                });
            }
            let frame = tokio::select! {
                biased;
                () = stop.as_mut() => return Ok(None),
                p = Arc::clone(&self.permits).acquire_owned() => return Ok(p.ok()),
                frame = self.next_frame(input) => frame?,
            };
            let Some(line) = (match frame {
                Some(frame) => self.line(frame).await,
                None => None,
            }) else {
                continue;
            };
            let parsed = admit::read_message(&line);
            if matches!(parsed, Ok(Incoming::Request { .. })) {
                drop(parsed);
                input.held = Some(Frame::Line(line));
            } else {
                self.not_a_request(parsed).await;
            }
        }
    }

    async fn not_a_request(&self, parsed: Result<Incoming<'_, SplitParams<'_>>, RpcError>) {
        match parsed {
            Err(e) => self.send(error_message(e.id(), &e)).await,
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
        permit: OwnedSemaphorePermit,
        mut record: Option<Record>,
    ) {
        let runtime = &self.engine.runtime;
        let Admitted {
            mut call,
            negotiated,
        } = match admit::inline(runtime, self.negotiated, &id, method, params) {
            Ok(a) => a,
            Err(e) => {
                // An admitted request's record learns its method from the call.
                if let Some(r) = record.as_mut() {
                    r.method_name(method);
                    r.error(&e);
                }
                return self.send(error_message(Some(&id), &e)).await;
            }
        };
        if let Some(dialect) = negotiated {
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
        if call.method == Method::SubscriptionsListen && call.dialect.serves(call.method) {
            if let Some(r) = record.as_mut() {
                r.admitted(&id, &call, None);
            }
            self.listen(id, &call, &mut record).await;
            return;
        }
        self.execute(id, call, permit, record);
    }

    fn execute(
        &self,
        id: RequestId,
        call: Call,
        permit: OwnedSemaphorePermit,
        mut record: Option<Record>,
    ) {
        let engine = Arc::clone(&self.engine);
        let out = self.out.clone();
        let inflight = Arc::clone(&self.inflight);
        let key = self.key.clone();
        let log_level = self.log_level;
        let askable = self
            .client_caps
            .as_ref()
            .is_some_and(|c| ASKABLE.iter().any(|k| c.contains_key(*k)));
        let pending = askable.then(|| Arc::clone(&self.pending));
        let ask_timeout = self.config.server_request_timeout;
        self.tasks.spawn(async move {
            let _permit = permit;
            let options = Options {
                principal: None,
                cancel_by: Some((&inflight, Some(&key))),
                held: Held::Connection {
                    log_level,
                    server_requests: pending.as_ref().map(|p| (p, ask_timeout)),
                },
                record: &mut record,
                trace: None,
            };
            let mut exec = match Execution::start(&engine, id.clone(), call, options).await {
                Ok(exec) => exec,
                Err(failure) => {
                    let e = failure.into_error();
                    let _ = out.send(error_message(Some(&id), &e)).await;
                    return;
                }
            };
            loop {
                match exec.next().await {
                    // A cancelled request writes nothing more.
                    Step::Message(_) if exec.is_cancelled() => {}
                    Step::Message(m) => {
                        if out.send(m).await.is_err() {
                            exec.abandon().await;
                            return;
                        }
                    }
                    Step::Ended(ended) => {
                        if !exec.is_cancelled() {
                            for m in exec.drain() {
                                let _ = out.send(m).await;
                            }
                        }
                        if let Some(m) = exec.finish(&ended, None) {
                            let _ = out.send(m).await;
                        }
                        return;
                    }
                }
            }
        });
    }

    /// Opens a subscription whose messages share the connection; the client ends it
    /// with `notifications/cancelled`, the server with a result and a cancellation.
    async fn listen(&self, id: RequestId, call: &Call, record: &mut Option<Record>) {
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
        let cancel = CancellationToken::new();
        let registration = InFlight::register(&self.inflight, Some(&self.key), &id, &cancel);
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

/// Writes whole messages, one per line, flushing when the queue is empty.
async fn write_loop<W: AsyncWrite + Unpin>(
    writer: W,
    mut rx: mpsc::Receiver<Bytes>,
    gone: CancellationToken,
) {
    let mut w = BufWriter::with_capacity(64 * 1024, writer);
    'outer: while let Some(m) = rx.recv().await {
        let mut next = Some(m);
        while let Some(m) = next {
            if w.write_all(&m).await.is_err() || w.write_all(b"\n").await.is_err() {
                break 'outer;
            }
            next = rx.try_recv().ok();
        }
        if w.flush().await.is_err() {
            break;
        }
    }
    let _ = w.shutdown().await;
    gone.cancel();
}
