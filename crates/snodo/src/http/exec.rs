//! Running one admitted request.
//!
//! The answer is JSON when nothing is streamed, or SSE from the first notification on
//! (notifications in order, then the final response, then the stream closes). Every
//! execution has a cancellation token, cancelled when the client disconnects, when its
//! principal sends `notifications/cancelled`, when the deadline passes or when the
//! server shuts down. A cancelled request sends no result.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Response, StatusCode};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::body::Body;
use super::inflight::InFlight;
use super::response;
use super::service::Shared;
use crate::protocol::jsonrpc::error_message;
use crate::protocol::{Dialect, RequestId};
use crate::router::{Answer, Call};
use crate::runtime::Runtime;
use crate::runtime::context::{ContextInit, Principal};

/// Queue depth between a handler and its response stream.
const STREAM_DEPTH: usize = 32;

/// How long a cancelled handler may keep running to observe its cancellation.
const CANCEL_GRACE: Duration = Duration::from_millis(250);

/// How an execution ended.
enum Ended {
    Done(Answer),
    Cancelled,
    TimedOut,
}

/// The final JSON-RPC message and the HTTP status it would have on its own.
fn final_message(dialect: &Dialect, id: &RequestId, ended: Ended) -> Option<(StatusCode, Bytes)> {
    match ended {
        Ended::Done(Ok(result)) => Some((StatusCode::OK, result.message(id))),
        Ended::Done(Err(e)) => {
            let status = if dialect.errors_in_band() {
                StatusCode::OK
            } else {
                e.code().http_status()
            };
            Some((status, error_message(Some(id), &e)))
        }
        Ended::TimedOut => Some((
            StatusCode::GATEWAY_TIMEOUT,
            error_message(Some(id), &response::timeout_error()),
        )),
        Ended::Cancelled => None,
    }
}

/// Executes `call` and answers it.
pub(crate) async fn execute(
    shared: &Arc<Shared>,
    id: RequestId,
    mut call: Call,
    principal: Option<Principal>,
) -> Response<Body> {
    let deadline = Instant::now() + shared.config.request_timeout;
    let slot = match tokio::time::timeout_at(deadline, shared.gate.enter()).await {
        Ok(Ok(slot)) => slot,
        Ok(Err(_)) => return response::overloaded(&id),
        Err(_) => return response::timed_out(&id),
    };
    let runtime = &shared.runtime;
    let dialect = call.dialect;
    let log_threshold = if dialect.is_stateless() {
        call.meta.log_level
    } else {
        runtime.inner.legacy_log_level
    };
    let server_requests = if dialect.is_stateless() {
        None
    } else {
        runtime
            .inner
            .server_requests
            .map(|t| (runtime.inner.pending.clone(), t))
    };
    let streams =
        call.meta.progress_token.is_some() || log_threshold.is_some() || server_requests.is_some();
    let cancel = shared.root.child_token();
    // Dropping this future (the client went away) cancels the execution.
    let guard = cancel.clone().drop_guard();
    let registration = InFlight::register(&shared.inflight, principal.as_ref(), &id, &cancel);
    let (tx, mut rx) = if streams {
        let (tx, rx) = mpsc::channel(STREAM_DEPTH);
        (Some(tx), Some(rx))
    } else {
        (None, None)
    };
    let init = ContextInit {
        dialect,
        id: id.clone(),
        meta: std::mem::take(&mut call.meta),
        principal,
        cancel: cancel.clone(),
        sink: tx,
        log_threshold,
        server_requests,
        runtime: runtime.clone(),
    };
    let keep_alive = shared.config.keep_alive;
    let probe = shared.config.disconnect_probe;
    let mut work = Box::pin(run(runtime.clone(), call, init, cancel.clone(), deadline));

    let first = tokio::select! {
        biased;
        ended = &mut work => {
            guard.disarm();
            drop((registration, slot));
            let pending: Vec<Bytes> = rx.as_mut().map(drain).unwrap_or_default();
            let Some((status, body)) = final_message(dialect, &id, ended) else {
                return response::cancelled();
            };
            if pending.is_empty() {
                return response::json(status, body);
            }
            // Notifications were queued when the handler finished: send them first.
            let (body_tx, body_rx) = mpsc::channel(pending.len() + 1);
            for m in pending.iter().chain(std::iter::once(&body)) {
                let _ = body_tx.try_send(response::sse_frame(m));
            }
            return response::event_stream(Body::stream(body_rx));
        }
        Some(first) = next_message(&mut rx) => response::sse_frame(&first),
        () = sleep_or_never(probe) => response::sse_keepalive(),
    };

    // From here on the response is an event stream fed by a task that owns the
    // execution (its slot, its registration and its cancellation guard).
    let (body_tx, body_rx) = mpsc::channel(STREAM_DEPTH);
    let _ = body_tx.try_send(first);
    tokio::spawn(async move {
        let _held = (registration, slot);
        let mut ticker = tokio::time::interval_at(Instant::now() + keep_alive, keep_alive);
        loop {
            let client_gone = tokio::select! {
                biased;
                Some(m) = next_message(&mut rx) => body_tx.send(response::sse_frame(&m)).await.is_err(),
                ended = &mut work => {
                    for m in rx.as_mut().map(drain).unwrap_or_default() {
                        let _ = body_tx.send(response::sse_frame(&m)).await;
                    }
                    if let Some((_, body)) = final_message(dialect, &id, ended) {
                        let _ = body_tx.send(response::sse_frame(&body)).await;
                    }
                    guard.disarm();
                    return;
                }
                () = body_tx.closed() => true,
                _ = ticker.tick() => body_tx.send(response::sse_keepalive()).await.is_err(),
            };
            if client_gone {
                // The client went away: cancel, and let the handler wind down.
                cancel.cancel();
                let _ = work.await;
                guard.disarm();
                return;
            }
        }
    });
    response::event_stream(Body::stream(body_rx))
}

/// Runs the handler until it finishes, is cancelled or misses its deadline. A cancelled
/// handler gets a short grace period to observe its token and wind down.
async fn run(
    runtime: Runtime,
    call: Call,
    init: ContextInit,
    cancel: CancellationToken,
    deadline: Instant,
) -> Ended {
    let mut dispatch = Box::pin(runtime.dispatch(call, init));
    let ended = tokio::select! {
        biased;
        () = tokio::time::sleep_until(deadline) => Ended::TimedOut,
        () = cancel.cancelled() => Ended::Cancelled,
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

/// Sleeps `d`, or forever when `None`.
async fn sleep_or_never(d: Option<Duration>) {
    match d {
        Some(d) => tokio::time::sleep(d).await,
        None => std::future::pending().await,
    }
}

fn drain(rx: &mut mpsc::Receiver<Bytes>) -> Vec<Bytes> {
    let mut out = Vec::new();
    while let Ok(m) = rx.try_recv() {
        out.push(m);
    }
    out
}

/// Cancels the caller's in-flight request named by a `notifications/cancelled`.
pub(crate) fn cancel_by_notification(
    shared: &Shared,
    principal: Option<&Principal>,
    params: Option<&serde_json::value::RawValue>,
) {
    #[derive(serde::Deserialize)]
    struct Cancelled {
        #[serde(rename = "requestId")]
        request_id: RequestId,
        #[serde(default)]
        reason: Option<String>,
    }
    let (Some(principal), Some(params)) = (principal, params) else {
        return;
    };
    // Malformed cancellations (e.g. a non-string reason) are ignored.
    if let Ok(c) = serde_json::from_str::<Cancelled>(params.get()) {
        let _ = c.reason;
        shared.inflight.cancel(principal, &c.request_id);
    }
}
