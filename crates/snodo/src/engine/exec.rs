//! One admitted request, executing: it yields its notification messages (progress,
//! logs, initialize-era server requests) in order, then how it ended.
//!
//! Every execution has a cancellation token, cancelled when the transport drops it (the
//! client went away), when a `notifications/cancelled` names it, when the deadline
//! passes or when the engine cancels everything. A cancelled request sends no result.

use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::Poll;
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::{OwnedSemaphorePermit, mpsc};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use super::Engine;
use super::failure::{Failure, timeout_error};
use super::inflight::{InFlight, Registration};
use super::observe::{Outcome, Record};
use super::trace;
use crate::protocol::jsonrpc::error_message;
use crate::protocol::trace::TraceContext;
use crate::protocol::{Asking, Dialect, LogLevel, LogLevels, RequestId};
use crate::router::{Answer, Call};
use crate::runtime::context::{ContextInit, Principal, RequestContext};
use crate::runtime::pending::PendingRequests;

/// Queue depth between a handler and its transport.
const STREAM_DEPTH: usize = 32;

/// How long a cancelled handler may keep running to observe its cancellation.
const CANCEL_GRACE: Duration = Duration::from_millis(250);

/// How an execution ended.
#[derive(Debug)]
pub(crate) enum Ended {
    Done(Answer),
    Cancelled,
    TimedOut,
    /// No result: the failure says why (the server stopped, the answer was past its
    /// budget).
    Failed(Failure),
}

impl Ended {
    /// The final JSON-RPC message; `None` for a cancelled request, which sends no result.
    pub(crate) fn message(&self, id: &RequestId) -> Option<Bytes> {
        match self {
            Self::Done(Ok(result)) => Some(result.message(id)),
            Self::Done(Err(e)) => Some(error_message(Some(id), e)),
            Self::TimedOut => Some(error_message(Some(id), &timeout_error())),
            Self::Failed(f) => Some(error_message(Some(id), &f.to_error())),
            Self::Cancelled => None,
        }
    }
}

/// What the connection a request arrived on holds for the initialize era.
#[derive(Debug)]
pub(crate) enum Held<'a> {
    /// Nothing (HTTP, one request per message): the runtime's log level and its
    /// process-wide registry of server requests (when enabled).
    Nothing,
    /// A connection (stdio): the level `logging/setLevel` set, and the connection's own
    /// registry of server requests (`None`: the client declared no capability to ask).
    Connection {
        log_level: Option<LogLevel>,
        server_requests: Option<(&'a Arc<PendingRequests>, Duration)>,
    },
}

/// How a transport starts an execution.
#[derive(Debug)]
pub(crate) struct Options<'a> {
    /// Who asked (from the application's authenticator), as handlers see it.
    pub(crate) principal: Option<Principal>,
    /// Where `notifications/cancelled` finds this request, and under which key (`None`:
    /// the principal's own).
    pub(crate) cancel_by: Option<(&'a Arc<InFlight>, Option<&'a Principal>)>,
    /// What the connection holds.
    pub(crate) held: Held<'a>,
    /// The request's observation record: the execution takes it when it starts (and
    /// emits it when it ends); a refused one is left with its outcome for the transport.
    pub(crate) record: &'a mut Option<Record>,
    /// The transport's trace parent (HTTP: the `traceparent` header), used when
    /// `_meta` carries none.
    pub(crate) trace: Option<TraceContext>,
}

/// What an execution yields next.
#[derive(Debug)]
pub(crate) enum Step {
    /// A notification (or initialize-era server request) for this request.
    Message(Bytes),
    /// The handler is done; messages it queued last are in [`Execution::drain`].
    Ended(Ended),
}

type Work = Pin<Box<dyn Future<Output = Ended> + Send>>;

/// A running request. Dropping it cancels the handler.
pub(crate) struct Execution {
    id: RequestId,
    dialect: &'static Dialect,
    work: Option<Work>,
    rx: Option<mpsc::Receiver<Bytes>>,
    cancel: CancellationToken,
    /// Dropping the execution cancels it, until it ended (a drop guard was one more
    /// handle of the token: a clone and a drop, each under the token's lock).
    armed: bool,
    /// The execution slot and the cancellation registration, released when it ends.
    held: Option<(Option<Registration>, OwnedSemaphorePermit)>,
    /// Emitted when the execution ends (cancelled, unless [`finish`](Self::finish)
    /// says otherwise).
    record: Option<Record>,
    /// The request's span (disabled unless a subscriber wants it).
    span: tracing::Span,
}

impl std::fmt::Debug for Execution {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Execution")
            .field("id", &self.id)
            .field("dialect", &self.dialect.version())
            .finish_non_exhaustive()
    }
}

/// An execution starting, a future of the [`Execution`]: ready at once when a slot was
/// free, else once one frees up (or the deadline passes).
#[allow(
    clippy::large_enum_variant,
    reason = "the execution is what the caller keeps; boxing it costs an allocation per request"
)]
pub(crate) enum Starting<'a> {
    /// Started (or refused) without waiting (`None` once taken).
    Now(Option<Result<Execution, Failure>>),
    /// Waiting for a slot (boxed: the common path carries no waiting state).
    Later(Pin<Box<dyn Future<Output = Result<Execution, Failure>> + Send + 'a>>),
}

impl Future for Starting<'_> {
    type Output = Result<Execution, Failure>;

    fn poll(self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<Self::Output> {
        match self.get_mut() {
            Self::Now(started) => started.take().map_or(Poll::Pending, Poll::Ready),
            Self::Later(waiting) => waiting.as_mut().poll(cx),
        }
    }
}

/// What [`Execution::start`] settled before taking a slot.
struct Prelude {
    deadline: Instant,
    parent: Option<TraceContext>,
    span: tracing::Span,
}

impl Execution {
    /// Takes an execution slot (waiting at most until the deadline) and starts `call`.
    ///
    /// Not an `async fn`: a free slot is taken without a future that holds the call, its
    /// options and the wait's timer, which every transport would carry (and copy) in its
    /// own state.
    pub(crate) fn start<'a>(
        engine: &'a Arc<Engine>,
        id: RequestId,
        call: Call,
        mut options: Options<'a>,
    ) -> Starting<'a> {
        let deadline = super::deadline(Instant::now(), engine.limits.request_timeout);
        if let Some(r) = options.record.as_mut() {
            r.admitted(&id, &call, options.principal.as_ref());
        }
        let parent = TraceContext::from_meta(&call.meta).or(options.trace.take());
        let span = trace::request_span(&id, &call, parent.as_ref());
        let prelude = Prelude {
            deadline,
            parent,
            span,
        };
        // A free slot is taken at once, without arming a timer for the wait.
        if let Some(slot) = engine.gate.try_enter() {
            return Starting::Now(Some(Ok(Self::begin(
                engine, id, call, options, slot, prelude,
            ))));
        }
        Starting::Later(Box::pin(async move {
            let entered = tokio::time::timeout_at(deadline, engine.gate.enter()).await;
            let span = &prelude.span;
            let slot = match entered {
                Ok(Ok(slot)) => slot,
                Ok(Err(_)) => return Err(refuse(options.record, span, Failure::overloaded())),
                Err(_) => return Err(refuse(options.record, span, Failure::TimedOut)),
            };
            Ok(Self::begin(engine, id, call, options, slot, prelude))
        }))
    }

    /// Starts `call` in the execution slot it took.
    fn begin(
        engine: &Arc<Engine>,
        id: RequestId,
        mut call: Call,
        options: Options<'_>,
        slot: OwnedSemaphorePermit,
        Prelude {
            deadline,
            parent,
            span,
        }: Prelude,
    ) -> Self {
        let mut record = options.record.take();
        if let Some(r) = record.as_mut() {
            // Until `finish` says how it ended, an execution that goes away was cancelled.
            r.summary.outcome = Outcome::Cancelled;
        }
        let runtime = &engine.runtime;
        let dialect = call.dialect;
        let log_threshold = if dialect.log_levels() == LogLevels::PerRequest {
            call.meta.log_level
        } else {
            match &options.held {
                Held::Nothing => runtime.legacy_log_level(),
                Held::Connection { log_level, .. } => *log_level,
            }
        };
        let server_requests = if dialect.asking() == Asking::ServerRequests {
            match &options.held {
                Held::Nothing => runtime
                    .server_requests()
                    .map(|t| (runtime.pending_requests().clone(), t)),
                Held::Connection {
                    server_requests, ..
                } => server_requests.map(|(p, t)| (Arc::clone(p), t)),
            }
        } else {
            None
        };
        let streams = call.meta.progress_token.is_some()
            || log_threshold.is_some()
            || server_requests.is_some();
        // An independent token, not a child of `engine.root`: creating and dropping a
        // child locks the root's mutex, one global lock per request across all workers.
        // Shutdown still reaches the execution: a request that starts after `cancel_all`
        // starts cancelled, and one that has to wait also waits on `engine.root`.
        let cancel = CancellationToken::new();
        if engine.cancelled_all.load(Ordering::Acquire) {
            cancel.cancel();
        }
        let registration = options.cancel_by.and_then(|(registry, key)| {
            InFlight::register(registry, key.or(options.principal.as_ref()), &id, &cancel)
        });
        let (tx, rx) = if streams {
            let (tx, rx) = mpsc::channel(STREAM_DEPTH);
            (Some(tx), Some(rx))
        } else {
            (None, None)
        };
        let ctx = RequestContext::new(ContextInit {
            dialect,
            id: id.clone(),
            meta: std::mem::take(&mut call.meta),
            principal: options.principal,
            cancel: cancel.clone(),
            sink: tx,
            log_threshold,
            server_requests,
            runtime: runtime.clone(),
            trace: parent,
        });
        // Boxed: a transport may move the execution into a task. Instrumented only when
        // a subscriber wants the span (the wrapper is one more copy of the future, and
        // two more calls per poll).
        let work = run(Arc::clone(engine), call, ctx, deadline);
        let work: Work = if span.is_disabled() {
            Box::pin(work)
        } else {
            Box::pin(work.instrument(span.clone()))
        };
        Self {
            id,
            dialect,
            work: Some(work),
            rx,
            cancel,
            armed: true,
            held: Some((registration, slot)),
            record,
            span,
        }
    }

    /// The request's dialect.
    pub(crate) fn dialect(&self) -> &'static Dialect {
        self.dialect
    }

    /// Whether the execution was cancelled (its transport writes nothing more for it).
    pub(crate) fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// The next message, or the end. Cancel-safe. Not to be called after `Ended`.
    pub(crate) async fn next(&mut self) -> Step {
        let Some(work) = self.work.as_mut() else {
            return std::future::pending().await;
        };
        tokio::select! {
            biased;
            ended = work => {
                self.work = None;
                self.armed = false;
                self.held = None;
                Step::Ended(ended)
            }
            Some(m) = next_message(&mut self.rx) => {
                if let Some(r) = self.record.as_mut() {
                    r.add_bytes_out(m.len());
                }
                Step::Message(m)
            }
        }
    }

    /// The final message of an execution that ended (`None`: cancelled, no result),
    /// recorded with the HTTP `status` its transport answers with, if any.
    pub(crate) fn finish(&mut self, ended: &Ended, status: Option<u16>) -> Option<Bytes> {
        let message = ended.message(&self.id);
        self.record_end(ended, message.as_ref(), status);
        message
    }

    /// The request's id.
    pub(crate) fn id(&self) -> &RequestId {
        &self.id
    }

    /// Records how an execution ended and the final `message` its transport sends
    /// (built with [`Ended::message`], and perhaps replaced since: [`finish`] does
    /// both).
    ///
    /// [`finish`]: Self::finish
    pub(crate) fn record_end(
        &mut self,
        ended: &Ended,
        message: Option<&Bytes>,
        status: Option<u16>,
    ) {
        if !self.span.is_disabled() {
            let error_type = match ended {
                Ended::Done(Ok(result)) => result.is_tool_error().then(|| "tool_error".to_owned()),
                Ended::Done(Err(e)) => Some(e.code().0.to_string()),
                Ended::TimedOut => Some("timeout".to_owned()),
                Ended::Cancelled => None,
                Ended::Failed(_) => Some("error".to_owned()),
            };
            trace::record_error(&self.span, error_type.as_deref());
        }
        // The record is emitted in place (dropped where it is, not moved out first).
        if let Some(r) = self.record.as_mut() {
            match ended {
                Ended::Done(Ok(result)) if result.is_tool_error() => {
                    r.summary.outcome = Outcome::ToolError;
                    r.summary.limit = match result.limit_reason() {
                        Some("rate") => Some("rate"),
                        Some("concurrency") => Some("concurrency"),
                        Some("timeout") => Some("timeout"),
                        _ => None,
                    };
                }
                Ended::Done(Ok(_)) => r.summary.outcome = Outcome::Ok,
                Ended::Done(Err(e)) => r.error(e),
                Ended::TimedOut => {
                    r.error(&timeout_error());
                    r.summary.outcome = Outcome::Timeout;
                }
                Ended::Cancelled => r.summary.outcome = Outcome::Cancelled,
                Ended::Failed(f) => r.failure(f),
            }
            if let Some(m) = message {
                r.add_bytes_out(m.len());
            }
            if let Some(s) = status {
                r.summary.status = Some(s);
            }
        }
        self.record = None;
    }

    /// The messages the handler queued before it ended.
    pub(crate) fn drain(&mut self) -> Vec<Bytes> {
        let mut out = Vec::new();
        if let Some(rx) = self.rx.as_mut() {
            while let Ok(m) = rx.try_recv() {
                out.push(m);
            }
        }
        out
    }

    /// The client went away: cancels, and lets the handler wind down.
    pub(crate) async fn abandon(mut self) {
        if std::mem::take(&mut self.armed) {
            self.cancel.cancel();
        }
        if let Some(work) = self.work.take() {
            let _ = work.await;
        }
    }
}

impl Drop for Execution {
    fn drop(&mut self) {
        if self.armed {
            self.cancel.cancel();
        }
    }
}

/// Records a request that could not start, and gives its failure back.
fn refuse(record: &mut Option<Record>, span: &tracing::Span, failure: Failure) -> Failure {
    if let Some(r) = record.as_mut() {
        r.failure(&failure);
    }
    let error_type = match failure {
        Failure::Overloaded(_) => "overloaded",
        Failure::TimedOut => "timeout",
        Failure::Error(_) => "error",
    };
    trace::record_error(span, Some(error_type));
    failure
}

/// Runs the handler until it finishes, is cancelled or misses its deadline. A cancelled
/// handler gets a short grace period to observe its token and wind down.
///
/// An `async` block rather than an `async fn`: the arguments of an `async fn` are moved
/// into locals of its state, a second copy of the call; the block keeps the one it
/// captured. The waiting (timer, tokens) is a boxed future of its own, so that the state
/// boxed per request stays small (1032 bytes with the shipped profile, the largest
/// request glibc serves from its per-thread cache; measured with `-Zprint-type-sizes`).
#[allow(
    clippy::manual_async_fn,
    reason = "an async fn keeps a second copy of each argument in its future; the block does not"
)]
fn run(
    engine: Arc<Engine>,
    mut call: Call,
    ctx: RequestContext,
    deadline: Instant,
) -> impl Future<Output = Ended> + Send {
    async move {
        let router = crate::router::Router::new(&engine.runtime);
        // The token through a second handle on the context (an `Arc`): a second handle
        // on the token itself locks its mutex to be made and again to be dropped.
        let own = ctx.clone();
        let cancel = own.cancellation();
        // (The router by value: a local it borrowed would take a place in this state.)
        let mut dispatch = pin!(router.dispatch(&mut call, ctx));
        // Most handlers finish on their first poll: poll once before arming the deadline
        // timer and waiting on the shutdown token, which only work that waits needs.
        match futures_util::poll!(dispatch.as_mut()) {
            // A cancellation that came first still wins: a cancelled request sends no result.
            Poll::Ready(_) if cancel.is_cancelled() => engine.cancelled_end(),
            Poll::Ready(out) => Ended::Done(out),
            Poll::Pending => Box::pin(wait(&engine, cancel, deadline, dispatch)).await,
        }
    }
}

/// The rest of a handler that did not finish on its first poll.
async fn wait(
    engine: &Engine,
    cancel: &CancellationToken,
    deadline: Instant,
    mut dispatch: Pin<&mut impl Future<Output = Answer>>,
) -> Ended {
    let ended = tokio::select! {
        biased;
        () = tokio::time::sleep_until(deadline) => Ended::TimedOut,
        () = engine.root.cancelled() => engine.cancelled_end(),
        () = cancel.cancelled() => engine.cancelled_end(),
        out = &mut dispatch => Ended::Done(out),
    };
    if !matches!(ended, Ended::Done(_)) {
        cancel.cancel();
        let _ = tokio::time::timeout(CANCEL_GRACE, &mut dispatch).await;
    }
    ended
}

/// The next message of an optional stream (pending forever without one).
async fn next_message(rx: &mut Option<mpsc::Receiver<Bytes>>) -> Option<Bytes> {
    match rx {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The size of what `f` returns, without calling it.
    fn returned_size<F, R>(_: F) -> usize
    where
        F: FnOnce(Arc<Engine>, Call, RequestContext, Instant) -> R,
    {
        std::mem::size_of::<R>()
    }

    /// The budget [`run`]'s comment defends: the boxed execution fits the largest
    /// request glibc serves from its per-thread cache (1032 bytes). A change that grows
    /// it fails here rather than only in the instruction counts. (Checked in the profile
    /// the tests build with: 960 bytes at this writing, the release build's measured
    /// with `-Zprint-type-sizes`.)
    #[test]
    fn the_boxed_execution_fits_the_thread_cache() {
        let size = returned_size(run);
        assert!(
            size <= 1032,
            "the boxed execution is {size} bytes, over 1032"
        );
    }
}
