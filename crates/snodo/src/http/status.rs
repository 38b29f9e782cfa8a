//! The one map from a request's outcome to its HTTP status.
//!
//! Every JSON-RPC answer the HTTP transport sends takes its status from here:
//! - an error found while admitting a request, before a dialect is chosen, follows its
//!   code ([`of_error`] with no dialect);
//! - an error of a request answered in a dialect follows that dialect: initialize-era
//!   clients read any non-2xx answer as a transport failure, so their errors travel in a
//!   200 ([`Dialect::errors_in_band`]); 2026-07-28 follows the code;
//! - no capacity now is 503 and a passed deadline 504, in every dialect ([`of_failure`]);
//!   where statuses follow codes, an error marked [`RpcError::retry_later`] (the
//!   server cannot do it now and did nothing, a retry later may succeed: descriptors or
//!   task slots ran out) is 503 too, so that proxies and clients that read statuses
//!   retry it; a `data.retryable` a handler set as data or a backend relayed is not;
//! - an authenticator's or authorizer's refusal is 401, 400 or 403 ([`of_rejection`]).
//!
//! Refusals that are not JSON-RPC answers (405, 406, 413, 415, a bad `Host`) are the HTTP
//! layer's own and live in `response.rs`.

use http::StatusCode;

use crate::caller::AuthRejection;
use crate::engine::{Ended, Failure};
use crate::protocol::{Dialect, ErrorCode, RpcError};

/// The status of a request refused or failed with `error`, answered in `dialect` (`None`
/// while no dialect is chosen).
pub(crate) fn of_error(dialect: Option<&Dialect>, error: &RpcError) -> StatusCode {
    if dialect.is_some_and(Dialect::errors_in_band) {
        return StatusCode::OK;
    }
    if error.is_retry_later() {
        return StatusCode::SERVICE_UNAVAILABLE;
    }
    of_code(error.code())
}

/// Whether an answer with `status` tells the client when to retry (`Retry-After`).
pub(crate) fn retry_after(status: StatusCode) -> bool {
    status == StatusCode::SERVICE_UNAVAILABLE
}

/// The status of a request that got no result, answered in `dialect`.
pub(crate) fn of_failure(dialect: Option<&Dialect>, failure: &Failure) -> StatusCode {
    match failure {
        Failure::Error(e) => of_error(dialect, e),
        Failure::Overloaded(_) => StatusCode::SERVICE_UNAVAILABLE,
        Failure::TimedOut => StatusCode::GATEWAY_TIMEOUT,
    }
}

/// The HTTP status the final JSON-RPC message would have on its own.
pub(crate) fn of_ended(dialect: &Dialect, ended: &Ended) -> StatusCode {
    match ended {
        Ended::Done(Ok(_)) => StatusCode::OK,
        Ended::Done(Err(e)) => of_error(Some(dialect), e),
        Ended::TimedOut => of_failure(Some(dialect), &Failure::TimedOut),
        Ended::Cancelled => StatusCode::NO_CONTENT,
        Ended::Failed(f) => of_failure(Some(dialect), f),
    }
}

/// The status of an authenticator's (or an authorizer's) refusal: 401, 400 or 403.
pub(crate) fn of_rejection(rejection: &AuthRejection) -> StatusCode {
    match rejection {
        AuthRejection::Unauthorized { .. } | AuthRejection::UseDpopNonce { .. } => {
            StatusCode::UNAUTHORIZED
        }
        AuthRejection::BadRequest { .. } => StatusCode::BAD_REQUEST,
        AuthRejection::Forbidden { .. } => StatusCode::FORBIDDEN,
    }
}

/// The status that travels with an error code where statuses follow codes.
fn of_code(code: ErrorCode) -> StatusCode {
    match code {
        ErrorCode::PARSE_ERROR
        | ErrorCode::INVALID_REQUEST
        | ErrorCode::INVALID_PARAMS
        | ErrorCode::HEADER_MISMATCH
        | ErrorCode::MISSING_CLIENT_CAPABILITY
        | ErrorCode::UNSUPPORTED_PROTOCOL_VERSION => StatusCode::BAD_REQUEST,
        ErrorCode::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        ErrorCode::INTERNAL_ERROR => StatusCode::INTERNAL_SERVER_ERROR,
        _ => StatusCode::OK,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{V2025_03_26, V2025_06_18, V2025_11_25, V2026_07_28};

    #[test]
    fn codes_map_to_statuses_where_statuses_follow_codes() {
        let e = |code| RpcError::new(ErrorCode(code), "x");
        for (code, status) in [
            (-32700, 400),
            (-32600, 400),
            (-32602, 400),
            (-32020, 400),
            (-32021, 400),
            (-32022, 400),
            (-32601, 404),
            (-32603, 500),
            (-32003, 200),
        ] {
            assert_eq!(
                of_error(None, &e(code)).as_u16(),
                status,
                "{code} before a dialect"
            );
            assert_eq!(
                of_error(Some(&V2026_07_28), &e(code)).as_u16(),
                status,
                "{code} at 2026-07-28"
            );
            for legacy in [&V2025_11_25, &V2025_06_18, &V2025_03_26] {
                assert_eq!(of_error(Some(legacy), &e(code)), StatusCode::OK, "{code}");
            }
        }
    }

    #[test]
    fn a_retryable_error_is_503_where_statuses_follow_codes() {
        let e = RpcError::new(ErrorCode::INTERNAL_ERROR, "Too many open files; retry")
            .with_data(serde_json::json!({"reason": "fds"}))
            .retry_later();
        assert_eq!(
            e.data(),
            Some(&serde_json::json!({"reason": "fds", "retryable": true}))
        );
        for d in [None, Some(&V2026_07_28)] {
            assert_eq!(of_error(d, &e), StatusCode::SERVICE_UNAVAILABLE);
        }
        assert_eq!(of_error(Some(&V2025_11_25), &e), StatusCode::OK);
        let not = RpcError::new(ErrorCode::INTERNAL_ERROR, "x")
            .with_data(serde_json::json!({"retryable": false}));
        assert_eq!(of_error(None, &not), StatusCode::INTERNAL_SERVER_ERROR);
        // `retryable` as data only (a handler's, a relayed backend's): its code's status.
        let relayed = RpcError::new(ErrorCode::INTERNAL_ERROR, "backend busy")
            .with_data(serde_json::json!({"retryable": true}));
        for d in [None, Some(&V2026_07_28)] {
            assert_eq!(of_error(d, &relayed), StatusCode::INTERNAL_SERVER_ERROR);
        }
    }

    #[test]
    fn capacity_and_deadlines_have_their_status_in_every_dialect() {
        for d in [None, Some(&V2026_07_28), Some(&V2025_11_25)] {
            let busy = Failure::overloaded();
            assert_eq!(of_failure(d, &busy), StatusCode::SERVICE_UNAVAILABLE);
            assert_eq!(
                of_failure(d, &Failure::TimedOut),
                StatusCode::GATEWAY_TIMEOUT
            );
        }
    }
}
