//! The client's one error type.

use snodo::RpcError;
use snodo::protocol::ErrorCode;

/// Why a client call failed. A tool that ran and reported failure is not an error: it
/// is a [`CallToolResult`](crate::CallToolResult) with `is_error` set.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The connection failed, closed early, or the peer sent bytes that are not MCP.
    #[error("transport: {0}")]
    Transport(String),
    /// An HTTP answer without a JSON-RPC message (status and the start of the body).
    #[error("HTTP {status}: {body}")]
    Http {
        /// The status code.
        status: u16,
        /// The first bytes of the body, as text.
        body: String,
    },
    /// The server answered with a JSON-RPC error: code, message and data.
    #[error("protocol: {0}")]
    Protocol(RpcError),
    /// The server answered `404` to a request with its `Mcp-Session-Id`: the session is
    /// gone (a call renews it once with a new `initialize`).
    #[error("the server ended the session")]
    SessionExpired,
    /// The server asks for authorization and it could not be obtained: discovery,
    /// registration, the authorization or token endpoint, or a refused response (a
    /// mismatched `resource`, `iss` or `issuer`). The text never carries a token.
    #[error("authorization: {0}")]
    Auth(String),
    /// No answer within the configured time.
    #[error("timed out after {0:?}")]
    Timeout(std::time::Duration),
    /// The server and this client share no protocol version.
    #[error("no common protocol version: {0}")]
    Version(String),
    /// A well-formed answer of the wrong shape.
    #[error("unexpected answer: {0}")]
    Unexpected(String),
    /// `input_required` rounds did not converge within the configured bound.
    #[error("the server asked for input {0} times without completing")]
    TooManyRounds(usize),
    /// The call needs a handler (elicitation, sampling, roots) the application did not
    /// register, or the handler refused.
    #[error("no handler for the server's {0} request")]
    NoHandler(String),
}

impl ClientError {
    /// The JSON-RPC error, when the server sent one.
    #[must_use]
    pub fn rpc(&self) -> Option<&RpcError> {
        match self {
            Self::Protocol(e) => Some(e),
            _ => None,
        }
    }

    /// The JSON-RPC error code, when the server sent one.
    #[must_use]
    pub fn code(&self) -> Option<ErrorCode> {
        self.rpc().map(RpcError::code)
    }

    pub(crate) fn transport(e: impl std::fmt::Display) -> Self {
        Self::Transport(e.to_string())
    }
}

/// Reads the `error` member of a JSON-RPC response into an [`RpcError`].
pub(crate) fn rpc_error(error: &serde_json::Value) -> RpcError {
    let code = error
        .get("code")
        .and_then(serde_json::Value::as_i64)
        .unwrap_or(ErrorCode::INTERNAL_ERROR.0);
    let message = error
        .get("message")
        .and_then(serde_json::Value::as_str)
        .unwrap_or("(no message)")
        .to_owned();
    let mut e = RpcError::new(ErrorCode(code), message);
    if let Some(data) = error.get("data") {
        e = e.with_data(data.clone());
    }
    e
}
