//! The transport-neutral execution layer that every transport drives.
//!
//! Nothing here reads a socket or frames a message, though executions do run on the
//! runtime's tasks and timers. An [`Engine`] is shared by every request of one endpoint
//! (an HTTP service, a stdio connection): the runtime, the execution gate, the
//! cancellation registry and the shutdown tokens. A transport admits a message with its
//! own dialect [`Selector`](admission::Selector) ([`admission`]), then drives what the
//! [`Admission`](admission::Admission) says:
//!
//! - an [`Execution`]: a request's notification messages, then its outcome;
//! - a [`Subscription`]: a `subscriptions/listen` request's messages, then its end.
//!
//! and adds only its framing (JSON/SSE and statuses on HTTP; lines on stdio).

pub(crate) mod admission;
mod exec;
pub(crate) mod failure;
mod gate;
mod inflight;
mod listen;
pub(crate) mod negotiation;
pub(crate) mod observe;
pub(crate) mod trace;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::value::RawValue;
use tokio_util::sync::CancellationToken;

pub(crate) use exec::{Ended, Execution, Held, Options, Starting, Step};
pub(crate) use failure::Failure;
pub(crate) use inflight::{InFlight, Registration};
pub(crate) use listen::{Framing, ListenStep, Registered, Subscription};

use crate::caller::Principal;
use crate::protocol::RequestId;
use crate::protocol::params::SplitParams;
use crate::runtime::Runtime;
use gate::Gate;
use observe::Observe;

/// `after` past `from`, or ~30 years on when that is past what an instant can hold (a
/// timeout or lease of `Duration::MAX` meaning "none" would otherwise overflow and
/// panic).
pub(crate) fn later(from: std::time::Instant, after: Duration) -> std::time::Instant {
    from.checked_add(after)
        .unwrap_or_else(|| from + Duration::from_secs(30 * 365 * 86_400))
}

/// [`later`] on tokio's clock: a timer's deadline.
pub(crate) fn deadline(from: tokio::time::Instant, after: Duration) -> tokio::time::Instant {
    tokio::time::Instant::from_std(later(from.into_std(), after))
}

/// The bounds an endpoint's executions run under.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    /// Requests executing at once.
    pub(crate) max_concurrent: usize,
    /// Requests waiting for an execution slot.
    pub(crate) max_queued: usize,
    /// Deadline of one request, queueing included.
    pub(crate) request_timeout: Duration,
    /// Open `subscriptions/listen` subscriptions at once.
    pub(crate) max_listen_streams: usize,
}

/// What every request of one endpoint shares.
#[derive(Debug)]
pub(crate) struct Engine {
    pub(crate) runtime: Runtime,
    pub(crate) limits: Limits,
    gate: Gate,
    /// The endpoint's registry of cancellable requests (HTTP: by principal).
    pub(crate) inflight: Arc<InFlight>,
    /// Cancelled by [`Engine::cancel_all`]: executions that wait also wait on it.
    root: CancellationToken,
    /// Set by [`Engine::cancel_all`] before `root` is cancelled: executions that start
    /// later start cancelled. A plain load, where `root.is_cancelled()` would lock the
    /// root's mutex on every request.
    cancelled_all: AtomicBool,
    /// Set by [`Engine::stop_all`] before it cancels everything: executions that end
    /// for it end with a final error rather than silently.
    stopped: AtomicBool,
    /// Cancelled when shutdown begins: long-lived subscriptions end at once.
    closing: CancellationToken,
    /// Open `subscriptions/listen` subscriptions.
    listeners: AtomicUsize,
    /// Request logs and metrics.
    pub(crate) observe: Observe,
}

impl Engine {
    pub(crate) fn new(runtime: Runtime, limits: Limits) -> Self {
        let observe = Observe::new(&runtime);
        let gate = Gate::new(limits.max_concurrent, limits.max_queued);
        observe.watch_gate(&gate);
        let inflight = Arc::new(InFlight::default());
        if let Some(link) = runtime.bus() {
            // A cancellation forwarded by another instance reaches this endpoint's
            // requests; the bus's ups and downs are counted where requests are.
            link.attach(
                &inflight,
                runtime.pending_requests(),
                runtime
                    .slots()
                    .get::<Arc<dyn crate::observation::RequestSink>>()
                    .cloned(),
            );
        }
        Self {
            runtime,
            limits,
            gate,
            inflight,
            root: CancellationToken::new(),
            cancelled_all: AtomicBool::new(false),
            stopped: AtomicBool::new(false),
            closing: CancellationToken::new(),
            listeners: AtomicUsize::new(0),
            observe,
        }
    }

    /// Ends every subscription with its final result (shutdown begins).
    pub(crate) fn begin_shutdown(&self) {
        self.closing.cancel();
    }

    /// Cancels every request still executing (after the shutdown drain period).
    pub(crate) fn cancel_all(&self) {
        self.cancelled_all.store(true, Ordering::Release);
        self.root.cancel();
    }

    /// Ends every request still executing with a final error that says the server is
    /// shutting down (after the shutdown drain period), rather than silently.
    pub(crate) fn stop_all(&self) {
        self.stopped.store(true, Ordering::Release);
        self.cancel_all();
    }

    /// How an execution that was cancelled ends: silently, unless the engine stopped.
    pub(crate) fn cancelled_end(&self) -> Ended {
        if self.stopped.load(Ordering::Acquire) {
            Ended::Failed(Failure::Overloaded(failure::stopped_error()))
        } else {
            Ended::Cancelled
        }
    }
}

/// A client's answer to a server-to-client request: its `result`, or its `error` object.
pub(crate) fn client_answer(
    result: Option<&RawValue>,
    error: Option<&RawValue>,
) -> crate::runtime::pending::Answer {
    let parse = |raw: Option<&RawValue>| {
        raw.and_then(|r| serde_json::from_str(r.get()).ok())
            .unwrap_or_default()
    };
    if error.is_some() {
        Err(parse(error))
    } else {
        Ok(parse(result))
    }
}

/// Reads a `notifications/cancelled`: the request id it names, if well-formed.
/// Malformed cancellations (a bad id, a non-string reason) name nothing.
pub(crate) fn cancelled_id(params: Option<SplitParams<'_>>) -> Option<RequestId> {
    crate::protocol::method_params::cancelled(params?.rest)
}

/// Cancels the caller's in-flight request named by a `notifications/cancelled`
/// (HTTP: the registry is keyed by principal; anonymous callers cancel nothing).
pub(crate) fn cancel_by_notification(
    engine: &Engine,
    principal: Option<&Principal>,
    params: Option<SplitParams<'_>>,
) {
    if let (Some(principal), Some(id)) = (principal, cancelled_id(params)) {
        if !engine.inflight.cancel(principal, &id) {
            // Another instance may run it (issue 35).
            if let Some(link) = engine.runtime.bus() {
                link.forward_cancel(principal, &id);
            }
        }
    }
}
