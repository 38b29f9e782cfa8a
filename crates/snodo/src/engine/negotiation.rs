//! Dialect negotiation from a message's own metadata, shared by the transports.
//!
//! HTTP adds its header layer on top (`http/negotiation.rs`); a byte-stream transport
//! has none, so its selector, [`Negotiated`], chooses the dialect from `params._meta`
//! and from what the connection negotiated with `initialize`:
//!
//! - `initialize` without 2026 metadata negotiates an initialize-era dialect (the exact
//!   proposed version if enabled, else the first enabled one), once per connection;
//! - a request whose `_meta` names a version is served in that dialect (2026-07-28:
//!   statelessly, with its required `_meta` members);
//! - any other request is served in the dialect the connection negotiated, or, before
//!   any `initialize`, by the 2026-07-28 rules (which refuse it for its missing `_meta`).

use super::admission::{Asked, Refused, Selector};
use crate::protocol::meta::{CLIENT_CAPABILITIES_KEY, MetaParse, PROTOCOL_VERSION_KEY};
use crate::protocol::method_params::MethodParams;
use crate::protocol::{Dialect, ErrorCode, Method, RpcError};
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

/// The dialect choice of a transport without a header layer: what its connection
/// negotiated with an earlier `initialize`.
#[derive(Debug, Default)]
pub(crate) struct Negotiated {
    /// The connection's dialect, from an earlier `initialize`.
    pub(crate) dialect: Option<&'static Dialect>,
    /// Set when the request admitted is the `initialize` that negotiates it.
    pub(crate) negotiating: Option<&'static Dialect>,
}

impl Negotiated {
    /// A connection that negotiated `dialect` so far.
    pub(crate) fn new(dialect: Option<&'static Dialect>) -> Self {
        Self {
            dialect,
            negotiating: None,
        }
    }
}

impl Selector for Negotiated {
    fn select(&mut self, asked: &Asked<'_>) -> Result<&'static Dialect, Refused> {
        let runtime = asked.runtime;
        let dialect = match asked.body_version() {
            None if asked.method == Method::Initialize => {
                if self.dialect.is_some() {
                    return Err(RpcError::new(
                        ErrorCode::INVALID_REQUEST,
                        "Invalid Request: this connection is already initialized",
                    )
                    .into());
                }
                let Some(dialect) = select_initialize(runtime, asked.params, None) else {
                    // A modern-only server names the versions it speaks.
                    return Err(RpcError::unsupported_initialize(
                        runtime.supported_versions(),
                        asked.params.proposed_version().unwrap_or_default(),
                    )
                    .into());
                };
                self.negotiating = Some(dialect);
                dialect
            }
            Some(version) => {
                let Some(dialect) = runtime.dialect(version) else {
                    return Err(RpcError::unsupported_version(
                        runtime.supported_versions(),
                        version,
                    )
                    .into());
                };
                if !dialect.is_stateless() && self.dialect != Some(dialect) {
                    return Err(not_initialized().into());
                }
                dialect
            }
            None => match self.dialect.or_else(|| runtime.stateless_dialect()) {
                Some(dialect) => dialect,
                None => return Err(not_initialized().into()),
            },
        };
        if dialect.is_stateless() {
            check_meta(asked.meta)?;
        }
        Ok(dialect)
    }
}

fn not_initialized() -> RpcError {
    RpcError::new(
        ErrorCode::INVALID_REQUEST,
        "Invalid Request: send initialize first (or carry the 2026-07-28 _meta on every request)",
    )
}
