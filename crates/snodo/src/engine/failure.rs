//! Why a request ends without a result, said once for every transport.

use crate::protocol::RpcError;

/// A request that gets no result: each transport frames it (HTTP gives it a status in
/// `http/status.rs`; stdio writes the error on its line).
#[derive(Debug)]
pub(crate) enum Failure {
    /// The request is refused or failed; the error says why.
    Error(RpcError),
    /// No capacity now (every execution slot busy and the queue full, or every
    /// subscription slot taken): the client may retry later.
    Overloaded(RpcError),
    /// The deadline passed before the request could run.
    TimedOut,
}

impl Failure {
    /// No execution slot now.
    pub(crate) fn overloaded() -> Self {
        Self::Overloaded(overloaded_error())
    }

    /// The JSON-RPC error that tells the client, the failure kept.
    pub(crate) fn to_error(&self) -> RpcError {
        match self {
            Self::Error(e) | Self::Overloaded(e) => e.clone(),
            Self::TimedOut => timeout_error(),
        }
    }

    /// The JSON-RPC error that tells the client.
    pub(crate) fn into_error(self) -> RpcError {
        match self {
            Self::Error(e) | Self::Overloaded(e) => e,
            Self::TimedOut => timeout_error(),
        }
    }
}

impl From<RpcError> for Failure {
    fn from(e: RpcError) -> Self {
        Self::Error(e)
    }
}

/// The error of a request whose deadline passed.
pub(crate) fn timeout_error() -> RpcError {
    RpcError::internal("Request execution timed out")
}

/// The error of a request refused because every slot is busy and the queue is full.
pub(crate) fn overloaded_error() -> RpcError {
    RpcError::internal("Server overloaded: too many requests in flight; retry later")
}

/// The error of a request still running when the server's shutdown drain ended.
pub(crate) fn stopped_error() -> RpcError {
    RpcError::internal(
        "Server shutting down: the request did not finish within the shutdown drain period; retry later",
    )
}
