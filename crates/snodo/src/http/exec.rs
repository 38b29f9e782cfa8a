//! Running one admitted request: a JSON response when nothing is streamed, or an SSE
//! response from the first notification on (notifications in order, then the final
//! response, then the stream closes).

use bytes::Bytes;
use http::{Response, StatusCode};
use serde_json::{Map, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::body::Body;
use super::config::HttpConfig;
use super::response;
use crate::protocol::jsonrpc::{error_message, result_message};
use crate::protocol::{Dialect, RequestId, RpcError};
use crate::router::Call;
use crate::runtime::Runtime;
use crate::runtime::context::{ContextInit, Principal};

/// Queue depth between a handler and its response stream.
const STREAM_DEPTH: usize = 32;

/// The final JSON-RPC message and the HTTP status it would have on its own.
fn final_message(
    dialect: &Dialect,
    id: &RequestId,
    out: Result<Map<String, Value>, RpcError>,
) -> (StatusCode, Bytes) {
    match out {
        Ok(result) => {
            let json = serde_json::to_string(&result).unwrap_or_else(|_| "{}".to_owned());
            (StatusCode::OK, result_message(id, &json))
        }
        Err(e) => {
            let status = if dialect.errors_in_band() {
                StatusCode::OK
            } else {
                e.code().http_status()
            };
            (status, error_message(Some(id), &e))
        }
    }
}

/// Executes `call` and answers it.
pub(crate) async fn execute(
    runtime: Runtime,
    config: &HttpConfig,
    id: RequestId,
    call: Call,
    principal: Option<Principal>,
) -> Response<Body> {
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
    let cancel = CancellationToken::new();
    // Dropping this future (the client went away) cancels the execution.
    let guard = cancel.clone().drop_guard();
    let (tx, rx) = if streams {
        let (tx, rx) = mpsc::channel(STREAM_DEPTH);
        (Some(tx), Some(rx))
    } else {
        (None, None)
    };
    let init = ContextInit {
        dialect,
        id: id.clone(),
        meta: call.meta.clone(),
        principal,
        cancel: cancel.clone(),
        sink: tx,
        log_threshold,
        server_requests,
    };
    let mut work = {
        let runtime = runtime.clone();
        Box::pin(async move { runtime.dispatch(call, init).await })
    };
    let Some(mut rx) = rx else {
        let out = work.await;
        guard.disarm();
        let (status, body) = final_message(dialect, &id, out);
        return response::json(status, body);
    };

    let first = tokio::select! {
        biased;
        out = &mut work => {
            guard.disarm();
            let mut pending = Vec::new();
            while let Ok(m) = rx.try_recv() {
                pending.push(m);
            }
            let (status, body) = final_message(dialect, &id, out);
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
        Some(first) = rx.recv() => first,
    };

    // From the first notification on, the response is an event stream fed by a task.
    let (body_tx, body_rx) = mpsc::channel(STREAM_DEPTH);
    let keep_alive = config.keep_alive;
    let _ = body_tx.try_send(response::sse_frame(&first));
    tokio::spawn(async move {
        let guard = guard;
        let mut ticker = tokio::time::interval(keep_alive);
        ticker.tick().await;
        loop {
            tokio::select! {
                biased;
                Some(m) = rx.recv() => {
                    if body_tx.send(response::sse_frame(&m)).await.is_err() {
                        return; // client gone: the guard cancels the work
                    }
                }
                out = &mut work => {
                    while let Ok(m) = rx.try_recv() {
                        if body_tx.send(response::sse_frame(&m)).await.is_err() {
                            return;
                        }
                    }
                    let (_, body) = final_message(dialect, &id, out);
                    let _ = body_tx.send(response::sse_frame(&body)).await;
                    guard.disarm();
                    return;
                }
                () = body_tx.closed() => return,
                _ = ticker.tick() => {
                    if body_tx.send(response::sse_keepalive()).await.is_err() {
                        return;
                    }
                }
            }
        }
    });
    response::event_stream(Body::stream(body_rx))
}
