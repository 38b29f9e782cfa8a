//! Request `_meta`: the per-request version, client capabilities, progress token and
//! log level.

use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value};

use super::error::RpcError;
use super::jsonrpc::MAX_STRING_ID_LEN;

/// `_meta` key of the protocol version (2026-07-28).
pub const PROTOCOL_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key of the client capabilities (2026-07-28).
pub const CLIENT_CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key of the client implementation info (2026-07-28).
pub const CLIENT_INFO_KEY: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key of the per-request log level (2026-07-28).
pub const LOG_LEVEL_KEY: &str = "io.modelcontextprotocol/logLevel";
/// `_meta` key of the server info on results (2026-07-28).
pub const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";

/// A progress token: a string or an integer.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(untagged)]
pub enum ProgressToken {
    /// An integer token.
    Number(i64),
    /// A string token.
    String(Arc<str>),
}

/// Log severity, in RFC 5424 order (`Debug` lowest).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
#[allow(missing_docs)]
pub enum LogLevel {
    Debug,
    Info,
    Notice,
    Warning,
    Error,
    Critical,
    Alert,
    Emergency,
}

impl LogLevel {
    /// Parses a level name.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "debug" => Self::Debug,
            "info" => Self::Info,
            "notice" => Self::Notice,
            "warning" => Self::Warning,
            "error" => Self::Error,
            "critical" => Self::Critical,
            "alert" => Self::Alert,
            "emergency" => Self::Emergency,
            _ => return None,
        })
    }
}

/// The parsed `params._meta` of one request.
#[derive(Clone, Debug, Default)]
pub struct RequestMeta {
    /// `io.modelcontextprotocol/protocolVersion`, when present.
    pub protocol_version: Option<String>,
    /// `io.modelcontextprotocol/clientCapabilities`, when present (always an object).
    pub client_capabilities: Option<Map<String, Value>>,
    /// `io.modelcontextprotocol/clientInfo`, when present.
    pub client_info: Option<Value>,
    /// `io.modelcontextprotocol/logLevel`, when present.
    pub log_level: Option<LogLevel>,
    /// `progressToken`, when present.
    pub progress_token: Option<ProgressToken>,
    /// Whether a `_meta` member was present at all.
    pub present: bool,
    /// Every other `_meta` entry (application keys, trace context, …).
    pub other: Map<String, Value>,
}

impl RequestMeta {
    /// Parses the `_meta` member of `params` (if any).
    pub fn parse(meta: Option<&Value>) -> Result<Self, RpcError> {
        Self::from_value(meta.cloned())
    }

    /// Parses a `_meta` value taken out of `params`, moving its members.
    pub fn from_value(meta: Option<Value>) -> Result<Self, RpcError> {
        let Some(meta) = meta else {
            return Ok(Self::default());
        };
        let Value::Object(mut map) = meta else {
            return Err(RpcError::invalid_params("_meta must be an object"));
        };
        let mut out = Self {
            present: true,
            ..Self::default()
        };
        if let Some(v) = map.remove(PROTOCOL_VERSION_KEY) {
            let Value::String(s) = v else {
                return Err(RpcError::invalid_params(format!(
                    "{PROTOCOL_VERSION_KEY} must be a string"
                )));
            };
            out.protocol_version = Some(s);
        }
        if let Some(v) = map.remove(CLIENT_CAPABILITIES_KEY) {
            let Value::Object(caps) = v else {
                return Err(RpcError::invalid_params(format!(
                    "{CLIENT_CAPABILITIES_KEY} must be an object"
                )));
            };
            out.client_capabilities = Some(caps);
        }
        if let Some(v) = map.remove(CLIENT_INFO_KEY) {
            let valid = v.get("name").is_some_and(Value::is_string)
                && v.get("version").is_some_and(Value::is_string);
            if !valid {
                return Err(RpcError::invalid_params(format!(
                    "{CLIENT_INFO_KEY} must be an object with string name and version"
                )));
            }
            out.client_info = Some(v);
        }
        if let Some(v) = map.remove(LOG_LEVEL_KEY) {
            out.log_level = Some(v.as_str().and_then(LogLevel::parse).ok_or_else(|| {
                RpcError::invalid_params(format!("{LOG_LEVEL_KEY} must be a known log level"))
            })?);
        }
        if let Some(v) = map.remove("progressToken") {
            out.progress_token = Some(match v {
                Value::String(s) if s.len() <= MAX_STRING_ID_LEN => {
                    ProgressToken::String(s.as_str().into())
                }
                Value::Number(n) if n.is_i64() => {
                    ProgressToken::Number(n.as_i64().unwrap_or_default())
                }
                _ => {
                    return Err(RpcError::invalid_params(
                        "progressToken must be a string of at most 256 bytes or an integer",
                    ));
                }
            });
        }
        out.other = map;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_and_validates() {
        let m = RequestMeta::parse(Some(&json!({
            PROTOCOL_VERSION_KEY: "2026-07-28",
            CLIENT_CAPABILITIES_KEY: {"sampling": {}},
            LOG_LEVEL_KEY: "warning",
            "progressToken": 5
        })))
        .unwrap_or_default();
        assert_eq!(m.protocol_version.as_deref(), Some("2026-07-28"));
        assert_eq!(m.log_level, Some(LogLevel::Warning));
        assert_eq!(m.progress_token, Some(ProgressToken::Number(5)));
        assert!(RequestMeta::parse(Some(&json!([]))).is_err());
        assert!(RequestMeta::parse(Some(&json!({"progressToken": []}))).is_err());
        assert!(RequestMeta::parse(Some(&json!({LOG_LEVEL_KEY: "loud"}))).is_err());
        assert!(RequestMeta::parse(Some(&json!({CLIENT_CAPABILITIES_KEY: []}))).is_err());
        assert!(LogLevel::Error > LogLevel::Info);
    }
}
