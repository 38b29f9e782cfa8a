//! Running one admitted request.
//!
//! The answer is JSON when nothing is streamed, or SSE from the first notification on
//! (notifications in order, then the final response, then the stream closes). Every
//! execution has a cancellation token, cancelled when the client disconnects, when its
//! principal sends `notifications/cancelled`, when the deadline passes or when the
//! server shuts down. A cancelled request sends no result.

use std::future::{Future as _, poll_fn};
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::Poll;
use std::time::Duration;

use bytes::Bytes;
use http::{Response, StatusCode};
use serde::Deserialize as _;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::body::Body;
use super::inflight::InFlight;
use super::response;
use super::service::Shared;
use crate::protocol::jsonrpc::error_message;
use crate::protocol::params::SplitParams;
use crate::protocol::{Dialect, RequestId};
use crate::router::{Answer, Call};
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
    // A free slot is taken at once, without arming a timer for the wait.
    let slot = match shared.gate.try_enter() {
        Some(slot) => slot,
        None => match tokio::time::timeout_at(deadline, shared.gate.enter()).await {
            Ok(Ok(slot)) => slot,
            Ok(Err(_)) => return response::overloaded(&id),
            Err(_) => return response::timed_out(&id),
        },
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
    // An independent token, not a child of `shared.root`: creating and dropping a child
    // locks the root's mutex, one global lock per request across all workers. Shutdown
    // still reaches the execution: a request that starts after `cancel_all` starts
    // cancelled, and one that has to wait also waits on `shared.root` (see `run`).
    let cancel = CancellationToken::new();
    if shared.cancelled_all.load(Ordering::Acquire) {
        cancel.cancel();
    }
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
    // Boxed: when the answer turns into a stream, the execution moves into a task.
    let mut work = Box::pin(run(
        Arc::clone(shared),
        call,
        init,
        cancel.clone(),
        deadline,
    ));
    // Dropping this future (the client went away) cancels the execution.
    let guard = cancel.drop_guard();

    let first = tokio::select! {
        biased;
        ended = &mut work => {
            guard.disarm();
            drop((registration, slot));
            let pending: Vec<Bytes> = rx.as_mut().map(drain).unwrap_or_default();
            // An authorizer's challenge is answered at the HTTP level on every dialect.
            if let (Ended::Done(Err(e)), true) = (&ended, pending.is_empty()) {
                if let Some(r) = e.rejection() {
                    return response::auth_rejected_for(Some(&id), r);
                }
            }
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
                guard.disarm().cancel();
                let _ = work.await;
                return;
            }
        }
    });
    response::event_stream(Body::stream(body_rx))
}

/// Runs the handler until it finishes, is cancelled or misses its deadline. A cancelled
/// handler gets a short grace period to observe its token and wind down.
async fn run(
    shared: Arc<Shared>,
    call: Call,
    init: ContextInit,
    cancel: CancellationToken,
    deadline: Instant,
) -> Ended {
    // On the stack of this future, which `execute` already boxes.
    let mut dispatch = pin!(shared.runtime.dispatch(call, init));
    // Most handlers finish on their first poll: poll once before arming the deadline
    // timer and waiting on the shutdown token, which only work that waits needs.
    let first = poll_fn(|cx| Poll::Ready(dispatch.as_mut().poll(cx))).await;
    let ended = match first {
        // A cancellation that came first still wins: a cancelled request sends no result.
        Poll::Ready(_) if cancel.is_cancelled() => return Ended::Cancelled,
        Poll::Ready(out) => return Ended::Done(out),
        Poll::Pending => tokio::select! {
            biased;
            () = tokio::time::sleep_until(deadline) => Ended::TimedOut,
            () = cancel.cancelled() => Ended::Cancelled,
            () = shared.root.cancelled() => Ended::Cancelled,
            out = &mut dispatch => Ended::Done(out),
        },
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
    params: Option<SplitParams>,
) {
    let (Some(principal), Some(params)) = (principal, params) else {
        return;
    };
    // Malformed cancellations (a bad id, a non-string reason) are ignored.
    let reason_ok = params
        .rest
        .get("reason")
        .is_none_or(|r| r.is_string() || r.is_null());
    let id = params
        .rest
        .get("requestId")
        .and_then(|id| RequestId::deserialize(id).ok());
    if let (true, Some(id)) = (reason_ok, id) {
        shared.inflight.cancel(principal, &id);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;

    use http_body_util::{BodyExt as _, Full};

    use super::*;
    use crate::http::McpService;
    use crate::protocol::V2025_11_25;
    use crate::{NoArguments, Runtime, Tool, ToolResult};

    /// `echo` answers at once; `wait` waits for its cancellation and records it.
    fn service(saw_cancel: Arc<AtomicBool>) -> McpService {
        let rt = Runtime::builder("exec-test", "0.1.0")
            .protocols([&V2025_11_25])
            .tool(
                Tool::new("echo").handler(|_: NoArguments, _ctx| async { ToolResult::text("hi") }),
            )
            .tool(Tool::new("wait").handler(move |_: NoArguments, ctx| {
                let saw_cancel = Arc::clone(&saw_cancel);
                async move {
                    ctx.cancellation().cancelled().await;
                    saw_cancel.store(true, Ordering::SeqCst);
                    ToolResult::text("late")
                }
            }))
            .build();
        McpService::new(
            rt.map_err(|e| e.to_string())
                .unwrap_or_else(|e| panic!("{e}")),
        )
    }

    fn call(tool: &str) -> http::Request<Full<Bytes>> {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"{tool}","arguments":{{}}}}}}"#
        );
        let req = http::Request::post("/mcp")
            .header("host", "127.0.0.1")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .body(Full::new(Bytes::from(body)));
        req.unwrap_or_else(|e| panic!("{e}"))
    }

    async fn status_and_body(svc: &McpService, tool: &str) -> (StatusCode, Bytes) {
        let resp = svc.handle(call(tool)).await;
        let status = resp.status();
        let body = resp.into_body().collect().await.map(|c| c.to_bytes());
        (status, body.unwrap_or_default())
    }

    #[tokio::test]
    async fn cancel_all_reaches_a_waiting_execution() {
        let saw_cancel = Arc::new(AtomicBool::new(false));
        let svc = service(Arc::clone(&saw_cancel));
        let (status, _) = status_and_body(&svc, "echo").await;
        assert_eq!(status, StatusCode::OK);
        let waiting = tokio::spawn({
            let svc = svc.clone();
            async move { status_and_body(&svc, "wait").await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiting.is_finished(), "the handler waits");
        svc.cancel_all();
        let (status, body) = waiting.await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            status,
            StatusCode::NO_CONTENT,
            "a cancelled request sends no result"
        );
        assert!(body.is_empty());
        assert!(saw_cancel.load(Ordering::SeqCst), "the handler saw it");
    }

    #[tokio::test]
    async fn after_cancel_all_even_immediate_work_is_cancelled() {
        let svc = service(Arc::new(AtomicBool::new(false)));
        svc.cancel_all();
        let (status, body) = status_and_body(&svc, "echo").await;
        assert_eq!(status, StatusCode::NO_CONTENT);
        assert!(body.is_empty());
    }
}
