//! The one wire error value ([`RpcError`]) and its codes. The HTTP status an error
//! travels with is the HTTP transport's to decide (`http/status.rs`).

use std::borrow::Cow;

use serde::Serialize;
use serde_json::Value;

/// A JSON-RPC error code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct ErrorCode(pub i64);

impl ErrorCode {
    /// `-32700`: the body is not JSON.
    pub const PARSE_ERROR: Self = Self(-32700);
    /// `-32600`: not a valid JSON-RPC request.
    pub const INVALID_REQUEST: Self = Self(-32600);
    /// `-32601`: unknown method, or a capability the server does not offer.
    pub const METHOD_NOT_FOUND: Self = Self(-32601);
    /// `-32602`: invalid parameters (unknown tool, bad cursor, missing `_meta`, …).
    pub const INVALID_PARAMS: Self = Self(-32602);
    /// `-32603`: internal error.
    pub const INTERNAL_ERROR: Self = Self(-32603);
    /// `-32002`: resource not found (initialize-era dialects only).
    pub const RESOURCE_NOT_FOUND: Self = Self(-32002);
    /// `-32020`: an MCP header is missing or does not match the body (2026-07-28).
    pub const HEADER_MISMATCH: Self = Self(-32020);
    /// `-32021`: the request needs a client capability it did not declare (2026-07-28).
    pub const MISSING_CLIENT_CAPABILITY: Self = Self(-32021);
    /// `-32022`: the protocol version is not supported (2026-07-28).
    pub const UNSUPPORTED_PROTOCOL_VERSION: Self = Self(-32022);
}

/// A JSON-RPC error: code, one-sentence message, optional data. The id of the request
/// it answers travels beside it (with the admission's refusal, or the answer).
#[derive(Clone, Debug, PartialEq)]
pub struct RpcError {
    code: ErrorCode,
    message: Cow<'static, str>,
    data: Option<Value>,
    /// Set by [`retry_later`](Self::retry_later) only, never serialised: an error read
    /// from elsewhere (a relayed backend's) never carries it.
    retry_later: bool,
}

/// The serialisable `error` member of a response.
#[derive(Debug, Serialize)]
pub(crate) struct ErrorObject<'a> {
    code: ErrorCode,
    message: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<&'a Value>,
}

impl RpcError {
    /// An error with a code and message.
    pub fn new(code: ErrorCode, message: impl Into<Cow<'static, str>>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
            retry_later: false,
        }
    }

    /// Attaches `data`.
    #[must_use]
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// Marks an error the server could not serve *now* and did nothing for (out of
    /// file descriptors, out of task slots): `data.retryable: true` (added to an object
    /// `data`, or as the data), and over HTTP, where statuses follow codes, `503` with
    /// `Retry-After`, which proxies and clients may retry. Only an error marked here
    /// carries the status: a `data.retryable` set with [`with_data`](Self::with_data),
    /// or relayed from a backend, is data only and keeps its code's status, since a
    /// proxy that retries a `503` may run a side-effecting call twice.
    #[must_use]
    pub fn retry_later(mut self) -> Self {
        match &mut self.data {
            Some(Value::Object(m)) => {
                m.insert("retryable".into(), Value::Bool(true));
            }
            _ => self.data = Some(serde_json::json!({"retryable": true})),
        }
        self.retry_later = true;
        self
    }

    /// Whether [`retry_later`](Self::retry_later) marked the error.
    pub(crate) fn is_retry_later(&self) -> bool {
        self.retry_later
    }

    /// `-32602` with a message.
    pub fn invalid_params(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorCode::INVALID_PARAMS, message)
    }

    /// `-32603` with a message.
    pub fn internal(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorCode::INTERNAL_ERROR, message)
    }

    /// `-32601` naming the method.
    pub fn method_not_found(method: &str) -> Self {
        Self::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!("Method not found: {method}"),
        )
    }

    /// `-32020` with a message.
    pub fn header_mismatch(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorCode::HEADER_MISMATCH, message)
    }

    /// `-32021` naming the capabilities the request needs, as a ClientCapabilities object.
    pub fn missing_client_capability(required: Value) -> Self {
        Self::new(
            ErrorCode::MISSING_CLIENT_CAPABILITY,
            "Missing required client capability",
        )
        .with_data(serde_json::json!({ "requiredCapabilities": required }))
    }

    /// `-32022` listing the supported versions and echoing the requested one.
    pub fn unsupported_version(supported: &[&str], requested: &str) -> Self {
        Self::new(
            ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
            "Unsupported protocol version",
        )
        .with_data(serde_json::json!({ "supported": supported, "requested": requested }))
    }

    /// `-32022` for an `initialize` (a client of the initialize era) sent to a server
    /// that speaks no initialize-era revision: names what it speaks and what to do.
    pub fn unsupported_initialize(supported: &[&str], requested: &str) -> Self {
        let proposed = if requested.is_empty() {
            String::from("no version")
        } else {
            requested.to_owned()
        };
        Self::new(
            ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
            format!(
                "Unsupported protocol version: this server speaks only {} and has no initialize \
                 handshake; the client's initialize proposed {proposed}. Use a client that \
                 speaks {}, or enable the initialize-era versions on the server",
                supported.join(", "),
                supported.first().copied().unwrap_or_default()
            ),
        )
        .with_data(serde_json::json!({ "supported": supported, "requested": requested }))
    }

    /// The error code.
    #[must_use]
    pub fn code(&self) -> ErrorCode {
        self.code
    }

    /// The message.
    #[must_use]
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The data member, if any.
    #[must_use]
    pub fn data(&self) -> Option<&Value> {
        self.data.as_ref()
    }

    pub(crate) fn object(&self) -> ErrorObject<'_> {
        ErrorObject {
            code: self.code,
            message: &self.message,
            data: self.data.as_ref(),
        }
    }
}

impl std::fmt::Display for RpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.code.0)
    }
}

impl std::error::Error for RpcError {}
