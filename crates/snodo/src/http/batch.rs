//! JSON-RPC batches (2025-03-26, the one revision that has them): an array of
//! requests and notifications answered by one array holding the responses to the
//! requests, in order. Every member is admitted and executed on its own — through the
//! same admission rules and the same execution gate as a single request, so the
//! execution limits count every member — and a member that fails is answered in place
//! without losing the others. Members run concurrently; their progress and log
//! notifications are not sent (a batch is answered by one JSON body).

use bytes::Bytes;
use futures_util::future::join_all;
use http::{Response, StatusCode};
use serde_json::value::RawValue;

use super::body::Body;
use super::exec;
use super::headers::RequestHeaders;
use super::response;
use super::select;
use super::service::{self, Shared};
use crate::protocol::jsonrpc::{Incoming, error_message};
use crate::protocol::{ErrorCode, Method, RpcError};
use crate::runtime::context::Principal;

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
    if let Err(r) = select::admit_batch(runtime, headers) {
        // Not a revision with batches: refused as the single-message reader would.
        return match service::parse_body(body) {
            Err(single) => service::reject(single),
            Ok(_) => service::reject(r),
        };
    }
    let members: Vec<&RawValue> = match serde_json::from_slice(body) {
        Ok(members) => members,
        Err(e) if e.is_data() => {
            return response::rpc_error(
                StatusCode::BAD_REQUEST,
                None,
                &RpcError::new(ErrorCode::INVALID_REQUEST, "Invalid Request"),
            );
        }
        Err(_) => {
            return response::rpc_error(
                StatusCode::BAD_REQUEST,
                None,
                &RpcError::new(ErrorCode::PARSE_ERROR, "Parse error"),
            );
        }
    };
    if members.is_empty() {
        return response::rpc_error(
            StatusCode::BAD_REQUEST,
            None,
            &RpcError::new(
                ErrorCode::INVALID_REQUEST,
                "Invalid Request: an empty batch",
            ),
        );
    }
    let answers = join_all(
        members
            .iter()
            .map(|m| member(shared, headers, m.get().as_bytes(), principal.clone())),
    )
    .await;
    let answers: Vec<Bytes> = answers.into_iter().flatten().collect();
    if answers.is_empty() {
        return response::accepted();
    }
    let mut out = Vec::with_capacity(answers.iter().map(|a| a.len() + 1).sum::<usize>() + 2);
    out.push(b'[');
    for (i, a) in answers.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(a);
    }
    out.push(b']');
    response::json(StatusCode::OK, Bytes::from(out))
}

/// One member: its response (requests), or nothing (notifications, responses, and
/// requests cancelled while they ran).
async fn member(
    shared: &std::sync::Arc<Shared>,
    headers: &RequestHeaders<'_>,
    raw: &[u8],
    principal: Option<Principal>,
) -> Option<Bytes> {
    let runtime = &shared.engine.runtime;
    let incoming = match service::parse_body(raw) {
        Ok(incoming) => incoming,
        Err(r) => return Some(error_message(r.error.id(), &r.error)),
    };
    match incoming {
        Incoming::Request { id, method, params } => {
            if Method::parse(&method) == Method::Initialize {
                let e = RpcError::new(
                    ErrorCode::INVALID_REQUEST,
                    "Invalid Request: initialize must not be part of a JSON-RPC batch",
                );
                return Some(error_message(Some(&id), &e));
            }
            match select::admit_request(runtime, headers, &id, &method, params) {
                Ok(call) => {
                    let trace = service::trace_parent(headers);
                    exec::execute_quiet(shared, id, call, principal, trace).await
                }
                Err(r) => Some(error_message(Some(&id), &r.error)),
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
