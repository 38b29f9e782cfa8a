//! Every HTTP response the service produces is built here. The status of a JSON-RPC
//! answer comes from `status.rs`; the HTTP layer's own refusals (405, 406, 413, 415, 403
//! for a host or origin, 401/403 of an authenticator) are decided here.

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};

use super::body::Body;
use crate::engine::Failure;
use crate::protocol::jsonrpc::error_message;
use crate::protocol::{Dialect, ErrorCode, RequestId, RpcError};

const JSON: HeaderValue = HeaderValue::from_static("application/json");

/// A JSON response.
pub(crate) fn json(status: StatusCode, bytes: Bytes) -> Response<Body> {
    let mut r = Response::new(Body::full(bytes));
    *r.status_mut() = status;
    r.headers_mut().insert(header::CONTENT_TYPE, JSON);
    r
}

/// The final answer of an execution, with `Retry-After` when the server could not do
/// it now (503).
pub(crate) fn answer(status: StatusCode, body: Bytes, retry_after: bool) -> Response<Body> {
    let mut r = json(status, body);
    if retry_after {
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    r
}

/// A JSON-RPC error response with an explicit status.
pub(crate) fn rpc_error(
    status: StatusCode,
    id: Option<&RequestId>,
    error: &RpcError,
) -> Response<Body> {
    json(status, error_message(id, error))
}

/// 202 Accepted, empty: a notification or client response was taken.
pub(crate) fn accepted() -> Response<Body> {
    let mut r = Response::new(Body::empty());
    *r.status_mut() = StatusCode::ACCEPTED;
    r
}

fn http_error(status: StatusCode, message: &'static str) -> Response<Body> {
    rpc_error(
        status,
        None,
        &RpcError::new(ErrorCode::INVALID_REQUEST, message),
    )
}

/// More request headers than allowed (HTTP/2: hyper counts them for HTTP/1.1).
pub(crate) fn header_fields_too_large() -> Response<Body> {
    http_error(
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
        "Request Header Fields Too Large",
    )
}

/// 405 with `Allow: POST`.
pub(crate) fn method_not_allowed() -> Response<Body> {
    let mut r = http_error(
        StatusCode::METHOD_NOT_ALLOWED,
        "Method not allowed: the MCP endpoint accepts POST only",
    );
    r.headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static("POST"));
    r
}

/// 403: Origin or Host refused (DNS-rebinding protection).
pub(crate) fn forbidden(message: &'static str) -> Response<Body> {
    http_error(StatusCode::FORBIDDEN, message)
}

/// 415: the body is not `application/json`.
pub(crate) fn unsupported_media_type() -> Response<Body> {
    http_error(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "Unsupported Media Type: Content-Type must be application/json",
    )
}

/// 406: the client does not accept both JSON and SSE answers.
pub(crate) fn not_acceptable() -> Response<Body> {
    http_error(
        StatusCode::NOT_ACCEPTABLE,
        "Not Acceptable: Accept must include application/json and text/event-stream",
    )
}

/// 413: the body exceeds the limit.
pub(crate) fn payload_too_large() -> Response<Body> {
    http_error(
        StatusCode::PAYLOAD_TOO_LARGE,
        "Payload Too Large: the request body exceeds the limit",
    )
}

/// 408: the body did not arrive in time.
pub(crate) fn body_timeout() -> Response<Body> {
    http_error(
        StatusCode::REQUEST_TIMEOUT,
        "Request Timeout: the request body did not arrive in time",
    )
}

/// 400: the body could not be read.
pub(crate) fn bad_body() -> Response<Body> {
    http_error(
        StatusCode::BAD_REQUEST,
        "Bad Request: the request body could not be read",
    )
}

/// 404 for paths other than the MCP endpoint (used by the ready listener).
pub(crate) fn not_found() -> Response<Body> {
    let mut r = Response::new(Body::empty());
    *r.status_mut() = StatusCode::NOT_FOUND;
    r
}

/// 200 for the health endpoint.
pub(crate) fn healthy() -> Response<Body> {
    json(StatusCode::OK, Bytes::from_static(b"{\"status\":\"ok\"}"))
}

/// 200 `text/event-stream` carrying request-bound messages, then the response.
pub(crate) fn event_stream(body: Body) -> Response<Body> {
    let mut r = Response::new(body);
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    r
}

/// One SSE frame carrying one JSON-RPC message.
pub(crate) fn sse_frame(message: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(message.len() + 8);
    write_sse_frame(&mut out, message);
    Bytes::from(out)
}

/// A message as an SSE event: `data: …` and a blank line.
pub(crate) const SSE_EVENT: crate::engine::Framing = crate::engine::Framing {
    prefix: b"data: ",
    suffix: b"\n\n",
};

/// Appends `message` as one SSE event ([`SSE_EVENT`]) to `out`.
pub(crate) fn write_sse_frame(out: &mut Vec<u8>, message: &[u8]) {
    out.extend_from_slice(SSE_EVENT.prefix);
    out.extend_from_slice(message);
    out.extend_from_slice(SSE_EVENT.suffix);
}

/// An SSE comment that keeps idle connections open.
pub(crate) fn sse_keepalive() -> Bytes {
    Bytes::from_static(b": keep-alive\n\n")
}

/// 400, 401 or 403 from the application's authenticator (or authorizer, with the id of
/// the request it refused).
pub(crate) fn auth_rejected(rejection: &crate::caller::AuthRejection) -> Response<Body> {
    auth_rejected_for(None, rejection)
}

/// [`auth_rejected`], answering the request `id`.
pub(crate) fn auth_rejected_for(
    id: Option<&RequestId>,
    rejection: &crate::caller::AuthRejection,
) -> Response<Body> {
    use crate::caller::AuthRejection;
    let (challenge, message) = match rejection {
        AuthRejection::Unauthorized { www_authenticate } => {
            (Some(www_authenticate.as_str()), "Unauthorized")
        }
        AuthRejection::BadRequest { www_authenticate } => (
            Some(www_authenticate.as_str()),
            "Bad Request: malformed authorization",
        ),
        AuthRejection::UseDpopNonce {
            www_authenticate, ..
        } => (Some(www_authenticate.as_str()), "Unauthorized"),
        AuthRejection::Forbidden { www_authenticate } => (www_authenticate.as_deref(), "Forbidden"),
    };
    let status = super::status::of_rejection(rejection);
    let mut r = rpc_error(
        status,
        id,
        &RpcError::new(ErrorCode::INVALID_REQUEST, message),
    );
    if let Some(v) = challenge.and_then(|c| HeaderValue::from_str(c).ok()) {
        r.headers_mut().insert(header::WWW_AUTHENTICATE, v);
    }
    if let AuthRejection::UseDpopNonce { nonce, .. } = rejection
        && let Ok(v) = HeaderValue::from_str(nonce)
    {
        r.headers_mut()
            .insert(http::HeaderName::from_static("dpop-nonce"), v);
    }
    r
}

/// A request that gets no result, answered in `dialect` (`None` before one is chosen):
/// the status from `status.rs`, and `Retry-After` when there is no capacity now.
pub(crate) fn failure(
    id: &RequestId,
    dialect: Option<&Dialect>,
    failure: Failure,
) -> Response<Body> {
    let status = super::status::of_failure(dialect, &failure);
    let mut r = rpc_error(status, Some(id), &failure.into_error());
    if super::status::retry_after(status) {
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    r
}

/// 204: the request was cancelled; it gets no result.
pub(crate) fn cancelled() -> Response<Body> {
    let mut r = Response::new(Body::empty());
    *r.status_mut() = StatusCode::NO_CONTENT;
    r
}
