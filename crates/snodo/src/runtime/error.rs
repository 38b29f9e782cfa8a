//! [`HandlerError`]: what every handler (tool, prompt, resource reader, template lister,
//! completer) returns when it does not produce its normal result.

use std::fmt;
use std::sync::Arc;

use super::input::InputRequired;
use crate::caller::AuthRejection;
use crate::protocol::{ErrorCode, RpcError};

/// An error answer: the wire error, and the authorizer's challenge when it is one (HTTP
/// answers the challenge itself, with its status and `WWW-Authenticate`, on every
/// dialect; stdio writes the error in band). Reads as the [`RpcError`] it carries.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ErrorAnswer {
    error: RpcError,
    challenge: Option<Arc<AuthRejection>>,
}

impl ErrorAnswer {
    /// An authorizer's challenge: in band, an `-32600` error with the same message.
    pub(crate) fn challenge(rejection: AuthRejection) -> Self {
        Self {
            error: RpcError::new(ErrorCode::INVALID_REQUEST, "Forbidden"),
            challenge: Some(Arc::new(rejection)),
        }
    }

    /// The challenge the transport answers itself, if this is one.
    pub(crate) fn rejection(&self) -> Option<&AuthRejection> {
        self.challenge.as_deref()
    }
}

impl std::ops::Deref for ErrorAnswer {
    type Target = RpcError;

    fn deref(&self) -> &RpcError {
        &self.error
    }
}

impl From<RpcError> for ErrorAnswer {
    fn from(error: RpcError) -> Self {
        Self {
            error,
            challenge: None,
        }
    }
}

/// Why a handler did not produce a normal result.
#[derive(Debug)]
#[non_exhaustive]
pub enum HandlerError {
    /// An execution failure with a readable message. A tool answers it as a result with
    /// `isError: true` (the model can read it and try again); the other handlers answer
    /// `-32603` with the message.
    Failed(String),
    /// The addressed thing does not exist (resources: the dialect's not-found error;
    /// completers and listers: `-32602`).
    NotFound,
    /// A protocol error, sent as a JSON-RPC error response.
    Protocol(RpcError),
    /// The handler needs answers from the client first (see
    /// [`RequestContext::ask`](super::context::RequestContext::ask)).
    InputRequired(InputRequired),
}

impl HandlerError {
    /// An execution failure with a readable message.
    pub fn new(message: impl fmt::Display) -> Self {
        Self::Failed(message.to_string())
    }
}

impl HandlerError {
    /// The JSON-RPC error a handler kind without an in-band error (completers,
    /// listers, task results) answers.
    pub(crate) fn into_rpc_error(self) -> RpcError {
        match self {
            Self::Protocol(e) => e,
            Self::Failed(m) => RpcError::internal(m),
            Self::NotFound => RpcError::invalid_params("Not found"),
            Self::InputRequired(_) => RpcError::internal("The handler needed more input"),
        }
    }
}

impl fmt::Display for HandlerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Failed(m) => f.write_str(m),
            Self::NotFound => f.write_str("not found"),
            Self::Protocol(e) => e.fmt(f),
            Self::InputRequired(_) => f.write_str("input required"),
        }
    }
}

impl std::error::Error for HandlerError {}

impl From<RpcError> for HandlerError {
    fn from(e: RpcError) -> Self {
        Self::Protocol(e)
    }
}

impl From<InputRequired> for HandlerError {
    fn from(i: InputRequired) -> Self {
        Self::InputRequired(i)
    }
}

impl From<String> for HandlerError {
    fn from(s: String) -> Self {
        Self::Failed(s)
    }
}

impl From<&str> for HandlerError {
    fn from(s: &str) -> Self {
        Self::Failed(s.to_owned())
    }
}
