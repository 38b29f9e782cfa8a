//! Dialect selection from a message's own metadata, shared by the transports.
//!
//! HTTP adds its header layer on top (`http/select.rs`); a byte-stream transport has
//! none, so [`inline`] chooses the dialect from `params._meta` and from what the
//! connection negotiated with `initialize`:
//!
//! - `initialize` without 2026 metadata negotiates an initialize-era dialect (the exact
//!   proposed version if enabled, else the first enabled one), once per connection;
//! - a request whose `_meta` names a version is served in that dialect (2026-07-28:
//!   statelessly, with its required `_meta` members);
//! - any other request is served in the dialect the connection negotiated, or, before
//!   any `initialize`, by the 2026-07-28 rules (which refuse it for its missing `_meta`).

use crate::protocol::jsonrpc::Incoming;
use crate::protocol::meta::{CLIENT_CAPABILITIES_KEY, MetaParse, PROTOCOL_VERSION_KEY};
use crate::protocol::method_params::MethodParams;
use crate::protocol::params::SplitParams;
use crate::protocol::{Dialect, ErrorCode, Method, RequestId, RequestMeta, RpcError};
use crate::router::Call;
use crate::runtime::Runtime;

/// The dialect an `initialize` request negotiates, if any initialize-era dialect is on.
/// `version_hint` is a version the transport already knows (HTTP: the header).
pub(crate) fn select_initialize(
    runtime: &Runtime,
    params: &MethodParams,
    version_hint: Option<&str>,
) -> Option<&'static Dialect> {
    let first = runtime.first_initialize_dialect()?;
    // A 2026-07-28 version means a modern client probing: let the stateless rules answer.
    if version_hint.is_some_and(|h| runtime.dialect(h).is_some_and(Dialect::is_stateless)) {
        return None;
    }
    let proposed = params.proposed_version();
    Some(
        proposed
            .and_then(|v| runtime.dialect(v))
            .filter(|d| !d.is_stateless())
            .unwrap_or(first),
    )
}

/// The 2026-07-28 presence rules of `params._meta`.
pub(crate) fn check_meta(meta: Option<&MetaParse>) -> Result<(), RpcError> {
    let Some(meta) = meta else {
        return Err(RpcError::invalid_params("Missing required params._meta"));
    };
    if !meta.is_object {
        return Err(RpcError::invalid_params("params._meta must be an object"));
    }
    if !meta.has_version {
        return Err(RpcError::invalid_params(format!(
            "Missing required _meta {PROTOCOL_VERSION_KEY}"
        )));
    }
    if !meta.has_capabilities {
        return Err(RpcError::invalid_params(format!(
            "Missing required _meta {CLIENT_CAPABILITIES_KEY}"
        )));
    }
    Ok(())
}

/// An admitted request of a transport without a header layer.
#[derive(Debug)]
pub(crate) struct Admitted {
    pub(crate) call: Call,
    /// Set when this request is the `initialize` that negotiates the connection's dialect.
    pub(crate) negotiated: Option<&'static Dialect>,
}

/// Admits a request whose metadata is all inline; `negotiated` is what the connection
/// holds from an earlier `initialize`. Errors carry the request id.
pub(crate) fn inline(
    runtime: &Runtime,
    negotiated: Option<&'static Dialect>,
    id: &RequestId,
    method_name: &str,
    params: Option<SplitParams<'_>>,
) -> Result<Admitted, RpcError> {
    let fail = |e: RpcError| e.with_id(id.clone());
    let method = Method::parse(method_name);
    let SplitParams {
        meta,
        arguments,
        rest,
        ..
    } = params.unwrap_or_default();
    let params = MethodParams::read(method, rest);
    let body_version = meta
        .as_ref()
        .and_then(|m| m.meta.protocol_version.as_deref());

    let mut negotiating = None;
    let dialect = match body_version {
        None if method == Method::Initialize => {
            if negotiated.is_some() {
                return Err(fail(RpcError::new(
                    ErrorCode::INVALID_REQUEST,
                    "Invalid Request: this connection is already initialized",
                )));
            }
            let Some(dialect) = select_initialize(runtime, &params, None) else {
                // A modern-only server names the versions it speaks.
                return Err(fail(RpcError::unsupported_initialize(
                    runtime.supported_versions(),
                    params.proposed_version().unwrap_or_default(),
                )));
            };
            negotiating = Some(dialect);
            dialect
        }
        Some(version) => {
            let Some(dialect) = runtime.dialect(version) else {
                return Err(fail(RpcError::unsupported_version(
                    runtime.supported_versions(),
                    version,
                )));
            };
            if !dialect.is_stateless() && negotiated != Some(dialect) {
                return Err(fail(not_initialized()));
            }
            dialect
        }
        None => match negotiated.or_else(|| runtime.stateless_dialect()) {
            Some(dialect) => dialect,
            None => return Err(fail(not_initialized())),
        },
    };
    if dialect.is_stateless() {
        check_meta(meta.as_ref()).map_err(fail)?;
    }
    let meta = meta
        .map_or_else(|| Ok(RequestMeta::default()), MetaParse::into_result)
        .map_err(fail)?;
    Ok(Admitted {
        call: Call {
            dialect,
            method,
            method_name: Call::name_of(method, method_name),
            params,
            arguments,
            meta,
            catalogue: runtime.catalogue(),
        },
        negotiated: negotiating,
    })
}

fn not_initialized() -> RpcError {
    RpcError::new(
        ErrorCode::INVALID_REQUEST,
        "Invalid Request: send initialize first (or carry the 2026-07-28 _meta on every request)",
    )
}

/// Reads one message and its `params` in one pass. A message that only the raw reading
/// accepts (`params` nested past serde_json's recursion limit) is read again raw, so
/// that the refusal carries the request id.
pub(crate) fn read_message(bytes: &[u8]) -> Result<Incoming<'_, SplitParams<'_>>, RpcError> {
    if let Ok(incoming) = Incoming::<SplitParams<'_>>::parse_as(bytes) {
        return Ok(incoming);
    }
    match Incoming::parse(bytes)? {
        Incoming::Request { id, .. } => Err(RpcError::invalid_params(
            "Invalid params: params could not be read (nested too deeply, or an invalid string)",
        )
        .with_id(id)),
        // Unreadable params make a notification a no-op.
        Incoming::Notification { method, .. } => Ok(Incoming::Notification {
            method,
            params: None,
        }),
        Incoming::Response { id, result, error } => Ok(Incoming::Response { id, result, error }),
    }
}
