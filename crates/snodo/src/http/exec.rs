//! Running one admitted request over HTTP.
//!
//! The answer is JSON when nothing is streamed, or SSE from the first notification on
//! (notifications in order, then the final response, then the stream closes). The
//! engine's [`Execution`] does the work; this adds the framing and the statuses. A
//! client that disconnects cancels the execution; a cancelled request sends no result.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::future::Either;
use http::{Response, StatusCode};

use super::body::Body;
use super::budget::AnswerBudget;
use super::response;
use super::service::Shared;
use super::sse::{FRAMES_PER_EVENT, Gone, SseStream};
use super::status;
use crate::caller::Principal;
use crate::engine::observe::Record;
use crate::engine::{Ended, Execution, Failure, Held, Options, Starting, Step};
use crate::protocol::RequestId;
use crate::protocol::jsonrpc::error_message;
use crate::protocol::trace::TraceContext;
use crate::router::Call;

/// Queue depth of a streamed response body.
const STREAM_DEPTH: usize = 32;

/// The final message of an ended execution within the answer budget: a message past it
/// is replaced by the error that says so (and the execution's end with it).
fn settle(budget: &AnswerBudget, id: &RequestId, ended: Ended) -> (Ended, Option<Bytes>) {
    let Some(message) = ended.message(id) else {
        return (ended, None);
    };
    match budget.charge(message) {
        Ok(message) => (ended, Some(message)),
        Err(failure) => {
            let ended = Ended::Failed(failure);
            let message = ended.message(id);
            (ended, message)
        }
    }
}

/// A boxed answer of the rare paths (refused, or waiting for a slot).
type Rare<'a> = Pin<Box<dyn Future<Output = Response<Body>> + Send + 'a>>;

/// Executes `call` and answers it.
///
/// The execution starts before the returned future is first polled: the call is moved
/// into it here, not carried in the future's state (an `async fn` would keep a copy of
/// each argument there).
pub(crate) fn execute<'a>(
    shared: &'a Arc<Shared>,
    id: RequestId,
    call: Call,
    principal: Option<Principal>,
    record: &'a mut Option<Record>,
    trace: Option<TraceContext>,
) -> impl Future<Output = Response<Body>> + Send + 'a {
    let engine = &shared.engine;
    let options = Options {
        principal,
        cancel_by: Some((&engine.inflight, None)),
        held: Held::Nothing,
        record,
        trace,
    };
    match Execution::start(engine, id.clone(), call, options) {
        Starting::Now(Some(Ok(exec))) => Either::Left(answer(shared, id, exec)),
        // Refused, or waiting for a slot: rare, boxed.
        Starting::Now(started) => {
            let failure = match started {
                Some(Err(failure)) => failure,
                _ => Failure::Error(crate::protocol::RpcError::internal(
                    "the execution was taken",
                )),
            };
            let refused: Rare<'a> =
                Box::pin(std::future::ready(response::failure(&id, None, failure)));
            Either::Right(refused)
        }
        Starting::Later(waiting) => {
            let waiting: Rare<'a> = Box::pin(async move {
                match waiting.await {
                    Ok(exec) => answer(shared, id, exec).await,
                    Err(failure) => response::failure(&id, None, failure),
                }
            });
            Either::Right(waiting)
        }
    }
}

/// Answers a started execution: JSON, or an event stream from its first notification.
///
/// An `async` block rather than an `async fn`, for the reason [`execute`] gives.
#[allow(
    clippy::manual_async_fn,
    reason = "an async fn keeps a second copy of each argument in its future; the block does not"
)]
fn answer(
    shared: &Arc<Shared>,
    id: RequestId,
    mut exec: Execution,
) -> impl Future<Output = Response<Body>> + Send + '_ {
    async move {
        let id = &id;
        let engine = &shared.engine;
        let dialect = exec.dialect();
        let keep_alive = shared.config.keep_alive;
        let write_timeout = shared.config.write_timeout;
        let probe = shared.config.disconnect_probe;

        let first = tokio::select! {
            biased;
            step = exec.next() => match step {
                Step::Ended(ended) => {
                    let pending = exec.drain();
                    // An authorizer's challenge is answered at the HTTP level on every dialect.
                    if let (Ended::Done(Err(e)), true) = (&ended, pending.is_empty()) {
                        if let Some(r) = e.rejection() {
                            let answer = response::auth_rejected_for(Some(id), r);
                            let _ = exec.finish(&ended, Some(answer.status().as_u16()));
                            return answer;
                        }
                    }
                    let (ended, message) = settle(&shared.budget, id, ended);
                    let status = if pending.is_empty() { status::of_ended(dialect, &ended) } else { StatusCode::OK };
                    exec.record_end(&ended, message.as_ref(), Some(status.as_u16()));
                    let retry = status::retry_after(status);
                    // (The result's tree goes now: only its bytes are sent.)
                    drop(ended);
                    let Some(body) = message else {
                        return response::cancelled();
                    };
                    if pending.is_empty() {
                        return response::answer(status, body, retry);
                    }
                    // Notifications were queued when the handler finished: send them first.
                    let (sse, response) = SseStream::open(
                        (pending.len() + 1) * FRAMES_PER_EVENT,
                        keep_alive,
                        write_timeout,
                    );
                    for m in pending.into_iter().chain(std::iter::once(body)) {
                        sse.push(m);
                    }
                    return response;
                }
                Step::Message(first) => response::sse_frame(&first),
            },
            () = sleep_or_never(probe) => response::sse_keepalive(),
        };

        // From here on the response is an event stream fed by a task that owns the
        // execution (its slot, its registration and its cancellation).
        let (mut sse, response) = SseStream::open(STREAM_DEPTH, keep_alive, write_timeout);
        sse.push_frame(first);
        let open = engine.observe.stream("sse");
        let shared = Arc::clone(shared);
        tokio::spawn(async move {
            let _open = open;
            loop {
                let step = tokio::select! {
                    biased;
                    step = exec.next() => step,
                    Gone = sse.idle() => break,
                };
                match step {
                    Step::Message(m) => {
                        if sse.send(m).await.is_err() {
                            break;
                        }
                    }
                    Step::Ended(ended) => {
                        for m in exec.drain() {
                            let _ = sse.send(m).await;
                        }
                        let (ended, message) = settle(&shared.budget, exec.id(), ended);
                        exec.record_end(&ended, message.as_ref(), Some(200));
                        drop(ended);
                        if let Some(body) = message {
                            let _ = sse.send(body).await;
                        }
                        return;
                    }
                }
            }
            // The client went away: cancel, and let the handler wind down.
            exec.abandon().await;
        });
        response
    }
}

/// Executes `call` with nothing streamed, as a member of a JSON-RPC batch: its final
/// message, or `None` when it was cancelled. It sends no progress or log notifications
/// (a batch is answered by one JSON array) and cannot ask the client.
pub(crate) async fn execute_quiet(
    shared: &Arc<Shared>,
    id: RequestId,
    call: Call,
    principal: Option<Principal>,
    trace: Option<TraceContext>,
) -> Option<Bytes> {
    let engine = &shared.engine;
    let options = Options {
        principal,
        cancel_by: Some((&engine.inflight, None)),
        // Held like a connection that set no log level and may not ask the client.
        held: Held::Connection {
            log_level: None,
            server_requests: None,
        },
        record: &mut None,
        trace,
    };
    let mut exec = match Execution::start(engine, id.clone(), call, options).await {
        Ok(exec) => exec,
        Err(failure) => return Some(error_message(Some(&id), &failure.into_error())),
    };
    loop {
        // Progress notifications (the request carried a token) have nowhere to go.
        if let Step::Ended(ended) = exec.next().await {
            let (ended, message) = settle(&shared.budget, &id, ended);
            exec.record_end(&ended, message.as_ref(), None);
            return message;
        }
    }
}

/// Sleeps `d`, or forever when `None`.
async fn sleep_or_never(d: Option<Duration>) {
    match d {
        Some(d) => tokio::time::sleep(d).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use http_body_util::{BodyExt as _, Full};

    use super::*;
    use crate::http::McpService;
    use crate::protocol::V2025_11_25;
    use crate::{NoArguments, Runtime, Tool, ToolResult};

    /// `echo` answers at once; `wait` waits for its cancellation and records it.
    fn service(saw_cancel: Arc<AtomicBool>) -> McpService {
        let rt = Runtime::builder("exec-test", "0.1.0")
            .protocols([&V2025_11_25])
            .tool(Tool::new("echo").handler(|_: NoArguments| async { ToolResult::text("hi") }))
            .tool(
                Tool::new("wait").handler(move |_: NoArguments, ctx: crate::RequestContext| {
                    let saw_cancel = Arc::clone(&saw_cancel);
                    async move {
                        ctx.cancellation().cancelled().await;
                        saw_cancel.store(true, Ordering::SeqCst);
                        ToolResult::text("late")
                    }
                }),
            )
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
