//! [`HandlerError`]: what every handler (tool, prompt, resource reader, template lister,
//! completer) returns when it does not produce its normal result.

use std::fmt;

use super::input::InputRequired;
use crate::protocol::RpcError;

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
