//! HTTP's dialect negotiation: the [`Selector`] that chooses a request's dialect from its
//! headers, with the header rules of that dialect.
//!
//! - `initialize` without 2026 metadata goes to an initialize-era dialect: the exact
//!   proposed version if enabled, else the first enabled one. It needs no version header;
//!   a header that names another version is a conflict.
//! - Every other message is routed by `MCP-Protocol-Version`: an enabled initialize-era
//!   version selects that dialect; `2026-07-28` selects the stateless dialect with its
//!   header mirrors and `_meta` rules; an unknown value is `-32022`. A missing header
//!   selects the enabled dialect that has no version header (2025-03-26), as the
//!   2025-06-18 transport asks of a server with no other way to know the version;
//!   without one it is refused.
//! - A legacy `initialize` to a runtime with no initialize-era dialect is `-32022`
//!   naming the supported versions.

use std::borrow::Cow;

use base64::Engine as _;
use http::{HeaderName, StatusCode};

use super::headers::{RequestHeaders, Seen};
use super::status;
use crate::engine::admission::{Asked, Refused, Selector};
use crate::engine::negotiation::{check_meta, select_initialize};
use crate::protocol::method_params::MethodParams;
use crate::protocol::{Dialect, ErrorCode, Method, RpcError};
use crate::runtime::Runtime;

pub(crate) const PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
pub(crate) const MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");
pub(crate) const MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");

/// A refusal: the error and the HTTP status it travels with.
#[derive(Debug)]
pub(crate) struct Rejection {
    pub(crate) status: StatusCode,
    pub(crate) error: RpcError,
    /// The id of the request refused, when it was read.
    pub(crate) id: Option<crate::protocol::RequestId>,
}

impl Rejection {
    /// Refused during admission, before a dialect is chosen.
    pub(crate) fn admission(error: RpcError) -> Self {
        Self {
            status: status::of_error(None, &error),
            error,
            id: None,
        }
    }
}

/// The status follows the dialect the request was refused in, if one was chosen.
impl From<Refused> for Rejection {
    fn from(Refused { error, id, dialect }: Refused) -> Self {
        Self {
            status: status::of_error(dialect, &error),
            error,
            id,
        }
    }
}

/// A tool's `Mcp-Param-{Name}` header (a lookup: only tools that mirror arguments have
/// them), read as [`Seen::single`] reads the others.
fn param_header<'h>(
    headers: &RequestHeaders<'h>,
    name: &HeaderName,
) -> Result<Option<&'h str>, RpcError> {
    let mut seen = Seen::Absent;
    for value in headers.map.get_all(name) {
        seen.add(value);
    }
    seen.single(name)
}

/// Decodes the `=?base64?…?=` sentinel form of a mirrored header value.
fn decode_header_value<'h>(name: &str, raw: &'h str) -> Result<Cow<'h, str>, RpcError> {
    let Some(inner) = raw
        .strip_prefix("=?base64?")
        .and_then(|r| r.strip_suffix("?="))
    else {
        return Ok(Cow::Borrowed(raw));
    };
    base64::engine::general_purpose::STANDARD
        .decode(inner)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .map(Cow::Owned)
        .ok_or_else(|| {
            RpcError::header_mismatch(format!("Header {name} has a malformed base64 value"))
        })
}

/// The dialect choice of an HTTP request: its headers.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Headers<'r, 'h>(pub(crate) &'r RequestHeaders<'h>);

impl Selector for Headers<'_, '_> {
    fn select(&mut self, asked: &Asked<'_>) -> Result<&'static Dialect, Refused> {
        let Self(headers) = *self;
        let runtime = asked.runtime;
        let params = asked.params;
        let header = headers.protocol_version.single(&PROTOCOL_VERSION)?;
        let body_version = asked.body_version();

        if asked.method == Method::Initialize && body_version.is_none() {
            if let Some(error) = initialize_unsupported(runtime, params, header) {
                return Err(error.into());
            }
            if let Some(dialect) = select_initialize(runtime, params, header) {
                if header.is_some_and(|h| h != dialect.version()) {
                    return Err(Refused::in_dialect(
                        dialect,
                        RpcError::invalid_params(format!(
                            "MCP-Protocol-Version header conflicts with the negotiated version {dialect}"
                        )),
                    ));
                }
                return Ok(dialect);
            }
        }

        let Some(header) = header else {
            // A request whose `_meta` names its version has a way to know it: it is a
            // 2026-07-28 request missing its header, refused below.
            if let Some(dialect) = runtime
                .headerless_dialect()
                .filter(|_| body_version.is_none())
            {
                return Ok(dialect);
            }
            let message = "Missing MCP-Protocol-Version header: it is required on every request after initialize";
            let code = if runtime.stateless_dialect().is_some() {
                ErrorCode::HEADER_MISMATCH
            } else {
                ErrorCode::INVALID_REQUEST
            };
            return Err(RpcError::new(code, message).into());
        };
        let Some(dialect) = runtime.dialect(header) else {
            return Err(RpcError::unsupported_version(runtime.supported_versions(), header).into());
        };
        if body_version.is_some_and(|b| b != header) {
            return Err(RpcError::header_mismatch(format!(
                "MCP-Protocol-Version header {header:?} does not match params._meta protocolVersion {:?}",
                body_version.unwrap_or_default()
            ))
            .into());
        }
        if dialect.is_stateless() {
            check_stateless(headers, asked)?;
        }
        Ok(dialect)
    }
}

/// The refusal of a legacy `initialize` by a runtime that speaks no initialize-era
/// dialect (2026-07-28 `basic/versioning`: `-32022` with the supported versions).
fn initialize_unsupported(
    runtime: &Runtime,
    params: &MethodParams,
    header: Option<&str>,
) -> Option<RpcError> {
    if runtime.first_initialize_dialect().is_some()
        || header.is_some_and(|h| runtime.dialect(h).is_some_and(Dialect::is_stateless))
    {
        return None;
    }
    let proposed = params.proposed_version().unwrap_or_default();
    Some(RpcError::unsupported_initialize(
        runtime.supported_versions(),
        proposed,
    ))
}

/// The 2026-07-28 rules: `Mcp-Method`, required `_meta` members, `Mcp-Name`.
fn check_stateless(headers: &RequestHeaders<'_>, asked: &Asked<'_>) -> Result<(), RpcError> {
    let &Asked {
        method,
        method_name,
        meta,
        params,
        arguments,
        catalogue,
        ..
    } = asked;
    match headers.mcp_method.single(&MCP_METHOD)? {
        None => return Err(RpcError::header_mismatch("Missing Mcp-Method header")),
        Some(h) if h != method_name => {
            return Err(RpcError::header_mismatch(format!(
                "Mcp-Method header {h:?} does not match the request method {method_name:?}"
            )));
        }
        Some(_) => {}
    }
    check_meta(meta)?;
    if let Some(field) = method.name_field() {
        let header = headers
            .mcp_name
            .single(&MCP_NAME)?
            .ok_or_else(|| RpcError::header_mismatch("Missing Mcp-Name header"))?;
        let header = decode_header_value("Mcp-Name", header)?;
        if let Some(body) = params.target() {
            if body != header {
                return Err(RpcError::header_mismatch(format!(
                    "Mcp-Name header {header:?} does not match params.{field} {body:?}"
                )));
            }
        }
    }
    if method == Method::ToolsCall {
        let tool = params.target().and_then(|n| catalogue.tool(n));
        for p in tool.map(|t| t.param_headers.as_slice()).unwrap_or_default() {
            let name = HeaderName::from_bytes(format!("mcp-param-{}", p.name).as_bytes())
                .map_err(|_| RpcError::header_mismatch("Invalid Mcp-Param header name"))?;
            let header = param_header(headers, &name)?
                .map(|h| decode_header_value(name.as_str(), h))
                .transpose()?;
            p.check(arguments, header.as_deref())?;
        }
    }
    Ok(())
}

/// The dialect `MCP-Protocol-Version` names: `None` without the header, refused when it
/// is malformed or names no enabled version.
fn header_dialect(
    runtime: &Runtime,
    headers: &RequestHeaders<'_>,
) -> Result<Option<&'static Dialect>, Rejection> {
    let header = headers
        .protocol_version
        .single(&PROTOCOL_VERSION)
        .map_err(Rejection::admission)?;
    header
        .map(|h| {
            runtime.dialect(h).ok_or_else(|| {
                Rejection::admission(RpcError::unsupported_version(
                    runtime.supported_versions(),
                    h,
                ))
            })
        })
        .transpose()
}

/// The dialect of a JSON-RPC batch: the one the version header names, or the one a
/// header-less request is taken to speak; it must be a revision with batches.
pub(crate) fn admit_batch(
    runtime: &Runtime,
    headers: &RequestHeaders<'_>,
) -> Result<&'static Dialect, Rejection> {
    let dialect = header_dialect(runtime, headers)?.or_else(|| runtime.headerless_dialect());
    dialect.filter(|d| d.accepts_batches()).ok_or_else(|| {
        Rejection::admission(RpcError::new(
            ErrorCode::INVALID_REQUEST,
            "Invalid Request: the body must be a single JSON-RPC 2.0 object (batches are not supported)",
        ))
    })
}

/// What to do with a notification: the dialect it belongs to.
pub(crate) fn admit_notification(
    runtime: &Runtime,
    headers: &RequestHeaders<'_>,
) -> Result<&'static Dialect, Rejection> {
    if let Some(dialect) = header_dialect(runtime, headers)? {
        return Ok(dialect);
    }
    // Header rules for notification POSTs are not defined in 2026-07-28; a client of
    // the revision without the header (2025-03-26) sends none.
    runtime
        .headerless_dialect()
        .or_else(|| runtime.stateless_dialect())
        .ok_or_else(|| {
            Rejection::admission(RpcError::new(
                ErrorCode::INVALID_REQUEST,
                "Missing MCP-Protocol-Version header: it is required on every message after initialize",
            ))
        })
}

/// A JSON-RPC response POSTed by the client: only initialize-era clients send those.
pub(crate) fn admit_response(
    runtime: &Runtime,
    headers: &RequestHeaders<'_>,
) -> Result<&'static Dialect, Rejection> {
    let dialect = admit_notification(runtime, headers)?;
    if dialect.is_stateless() {
        return Err(Rejection::admission(RpcError::new(
            ErrorCode::INVALID_REQUEST,
            "Invalid Request: clients do not send JSON-RPC responses in 2026-07-28",
        )));
    }
    Ok(dialect)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_values() {
        assert_eq!(
            decode_header_value("n", "=?base64?ZWNobw==?=")
                .ok()
                .as_deref(),
            Some("echo")
        );
        assert!(decode_header_value("n", "=?base64?!!?=").is_err());
        assert_eq!(
            decode_header_value("n", "plain").ok().as_deref(),
            Some("plain")
        );
        let mut h = http::HeaderMap::new();
        h.append("mcp-param-x", http::HeaderValue::from_static("  echo\t"));
        let name = HeaderName::from_static("mcp-param-x");
        let seen = RequestHeaders::scan(&h);
        assert_eq!(param_header(&seen, &name).ok().flatten(), Some("echo"));
        h.append("mcp-param-x", http::HeaderValue::from_static("echo"));
        let seen = RequestHeaders::scan(&h);
        assert!(param_header(&seen, &name).is_err());
    }
}
