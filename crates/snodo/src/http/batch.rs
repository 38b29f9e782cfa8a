//! JSON-RPC batches (2025-03-26, the one revision that has them): an array of
//! requests and notifications answered by one array holding the responses to the
//! requests, in order. Every member is admitted and executed on its own — through the
//! same admission rules and the same execution gate as a single request, so the
//! execution limits count every member — and a member that fails is answered in place
//! without losing the others. Members run concurrently, [`MEMBERS_AT_ONCE`] at a time
//! (so that the answers built and not yet sent stay bounded); their progress and log
//! notifications are not sent (a batch is answered by one JSON body).
//!
//! The answers have a byte budget (`HttpConfig::answer_limits`): each is an answer
//! within the single-answer limit, and their sum stays within the batch's limit — a
//! member whose answer would pass it is answered with a `-32603` error in its place,
//! the others are kept. The answers are sent as they were built, one after the other
//! (never copied into one buffer).

use bytes::Bytes;
use futures_util::StreamExt as _;
use http::Response;
use serde_json::value::RawValue;

use super::body::Body;
use super::budget;
use super::exec;
use super::headers::RequestHeaders;
use super::negotiation::{self, Headers};
use super::response;
use super::service::{self, Shared};
use super::status;
use crate::caller::Principal;
use crate::engine::admission::{self, Admission};
use crate::protocol::jsonrpc::{Incoming, error_message};
use crate::protocol::{ErrorCode, Method, RequestId, RpcError};

/// Whether a body is a JSON array (a batch, or garbage that starts like one).
pub(super) fn is_batch(body: &[u8]) -> bool {
    body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[')
}

/// Answers a batch body.
pub(super) async fn answer(
    shared: &std::sync::Arc<Shared>,
    headers: &RequestHeaders<'_>,
    body: &[u8],
    principal: Option<Principal>,
) -> Response<Body> {
    let runtime = &shared.engine.runtime;
    if let Err(r) = negotiation::admit_batch(runtime, headers) {
        // Not a revision with batches: refused as the single-message reader would.
        return match service::parse_body(body) {
            Err(single) => service::reject(single),
            Ok(_) => service::reject(r),
        };
    }
    let members: Vec<&RawValue> = match serde_json::from_slice(body) {
        Ok(members) => members,
        Err(e) if e.is_data() => {
            return refused(&RpcError::new(
                ErrorCode::INVALID_REQUEST,
                "Invalid Request",
            ));
        }
        Err(_) => {
            return refused(&RpcError::new(ErrorCode::PARSE_ERROR, "Parse error"));
        }
    };
    if members.is_empty() {
        return refused(&RpcError::new(
            ErrorCode::INVALID_REQUEST,
            "Invalid Request: an empty batch",
        ));
    }
    let max = shared.config.max_batch_answer_bytes;
    // (The futures made first: a closure inside the stream would make the whole future
    // not `Send` for every lifetime, as hyper needs.)
    let members: Vec<_> = members
        .iter()
        .map(|m| member(shared, headers, m.get().as_bytes(), principal.clone()))
        .collect();
    let mut answers = futures_util::stream::iter(members).buffered(MEMBERS_AT_ONCE);
    // `[`, `]`, and a comma between answers.
    let mut total = 1usize;
    let mut chunks = Vec::new();
    while let Some(answer) = answers.next().await {
        let Some((id, message)) = answer else {
            continue;
        };
        let message = if total.saturating_add(message.len()) + 1 > max {
            let failure = budget::too_large(
                message.len(),
                max,
                "the server's limit of one batch's answers",
            );
            error_message(id.as_ref(), &failure.into_error())
        } else {
            message
        };
        total = total.saturating_add(message.len() + 1);
        chunks.push(Bytes::from_static(if chunks.is_empty() {
            b"["
        } else {
            b","
        }));
        chunks.push(message);
    }
    if chunks.is_empty() {
        return response::accepted();
    }
    chunks.push(Bytes::from_static(b"]"));
    let mut r = Response::new(Body::chunks(chunks));
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    r
}

/// A batch refused as a whole, before a dialect is chosen.
fn refused(error: &RpcError) -> Response<Body> {
    response::rpc_error(status::of_error(None, error), None, error)
}

/// Members executing at once.
const MEMBERS_AT_ONCE: usize = 8;

/// One member: its id and response (requests), or nothing (notifications, responses,
/// and requests cancelled while they ran).
async fn member(
    shared: &std::sync::Arc<Shared>,
    headers: &RequestHeaders<'_>,
    raw: &[u8],
    principal: Option<Principal>,
) -> Option<(Option<RequestId>, Bytes)> {
    let runtime = &shared.engine.runtime;
    let incoming = match service::parse_body(raw) {
        Ok(incoming) => incoming,
        Err(r) => {
            let message = error_message(r.id.as_ref(), &r.error);
            return Some((r.id, message));
        }
    };
    match incoming {
        Incoming::Request { id, method, params } => {
            if Method::parse(&method) == Method::Initialize {
                let e = RpcError::new(
                    ErrorCode::INVALID_REQUEST,
                    "Invalid Request: initialize must not be part of a JSON-RPC batch",
                );
                return Some((Some(id.clone()), error_message(Some(&id), &e)));
            }
            match admission::admit(runtime, &mut Headers(headers), &id, (&method, params), None) {
                // A revision with batches serves no `subscriptions/listen`: executed, it
                // is answered as the router answers a method it does not serve.
                Ok(Admission::Execute(call) | Admission::Listen(call)) => {
                    let trace = service::trace_parent(headers);
                    let answer =
                        exec::execute_quiet(shared, id.clone(), call, principal, trace).await;
                    answer.map(|a| (Some(id), a))
                }
                Err(r) => Some((Some(id.clone()), error_message(Some(&id), &r.error))),
            }
        }
        Incoming::Notification { method, params } => {
            if Method::parse(&method) == Method::Cancelled {
                crate::engine::cancel_by_notification(&shared.engine, principal.as_ref(), params);
            }
            None
        }
        Incoming::Response { id, result, error } => {
            service::deliver(runtime, id, result, error);
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::is_batch;

    #[test]
    fn arrays_are_batches() {
        assert!(is_batch(b" \n[{}]"));
        assert!(!is_batch(b"{}"));
        assert!(!is_batch(b""));
    }
}
