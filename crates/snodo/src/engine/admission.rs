//! One admission for every transport.
//!
//! A message is read once ([`read_message`]), its method's parameters once, and its
//! dialect chosen by the transport's [`Selector`]: HTTP reads its headers
//! (`http/negotiation.rs`), a byte stream what its connection negotiated
//! ([`Negotiated`](super::negotiation::Negotiated)). The admitted call is one
//! [`Admission`]: executed, or, for a served `subscriptions/listen`, listened to.

use serde_json::Value;

use super::observe::Record;
use crate::protocol::jsonrpc::Incoming;
use crate::protocol::meta::MetaParse;
use crate::protocol::method_params::MethodParams;
use crate::protocol::params::SplitParams;
use crate::protocol::{Dialect, Method, RequestId, RequestMeta, RpcError};
use crate::router::Call;
use crate::runtime::Runtime;
use crate::runtime::catalogue::Catalogue;

/// What a [`Selector`] sees of a request while it chooses the dialect.
pub(crate) struct Asked<'a> {
    pub(crate) runtime: &'a Runtime,
    pub(crate) method: Method,
    /// The method as sent.
    pub(crate) method_name: &'a str,
    pub(crate) meta: Option<&'a MetaParse>,
    pub(crate) params: &'a MethodParams,
    pub(crate) arguments: Option<&'a Value>,
    pub(crate) catalogue: &'a Catalogue,
}

impl Asked<'_> {
    /// The protocol version `params._meta` names, if any.
    pub(crate) fn body_version(&self) -> Option<&str> {
        self.meta.and_then(|m| m.meta.protocol_version.as_deref())
    }
}

/// A message refused during admission: the error, the id of the request it answers
/// when that id was read, and the dialect it is answered in when it was refused after
/// that dialect was chosen.
#[derive(Debug)]
pub(crate) struct Refused {
    pub(crate) error: RpcError,
    pub(crate) id: Option<RequestId>,
    pub(crate) dialect: Option<&'static Dialect>,
}

impl Refused {
    /// Refused in `dialect`, chosen before the refusal.
    pub(crate) fn in_dialect(dialect: &'static Dialect, error: RpcError) -> Self {
        Self {
            error,
            id: None,
            dialect: Some(dialect),
        }
    }

    fn with_id(self, id: &RequestId) -> Self {
        Self {
            id: Some(id.clone()),
            ..self
        }
    }
}

/// Refused before a dialect was chosen.
impl From<RpcError> for Refused {
    fn from(error: RpcError) -> Self {
        Self {
            error,
            id: None,
            dialect: None,
        }
    }
}

/// A message that could not be read, refused before a dialect was chosen.
impl From<crate::protocol::jsonrpc::ReadError> for Refused {
    fn from(e: crate::protocol::jsonrpc::ReadError) -> Self {
        Self {
            error: e.error,
            id: e.id,
            dialect: None,
        }
    }
}

/// A transport's choice of a request's dialect, with the rules that come with it.
pub(crate) trait Selector {
    /// The dialect `asked` is answered in, or why it is refused.
    fn select(&mut self, asked: &Asked<'_>) -> Result<&'static Dialect, Refused>;
}

/// An admitted request: what to do with it.
#[derive(Debug)]
pub(crate) enum Admission {
    /// Execute it (one answer).
    Execute(Call),
    /// A `subscriptions/listen` its dialect serves: open the subscription.
    Listen(Call),
}

impl Admission {
    /// The admitted call.
    pub(crate) fn call_mut(&mut self) -> &mut Call {
        match self {
            Self::Execute(call) | Self::Listen(call) => call,
        }
    }
}

/// Admits a request: reads its parameters, lets `selector` choose its dialect, and reads
/// its `_meta`. Refusals carry the request id, and are told to the request's `record`.
pub(crate) fn admit(
    runtime: &Runtime,
    selector: &mut impl Selector,
    id: &RequestId,
    (method_name, params): (&str, Option<SplitParams<'_>>),
    record: Option<&mut Record>,
) -> Result<Admission, Refused> {
    let admitted = admit_call(runtime, selector, id, method_name, params);
    if let (Err(refused), Some(r)) = (&admitted, record) {
        // An admitted request's record learns its method from the call.
        r.method_name(method_name);
        r.error(&refused.error);
    }
    admitted
}

fn admit_call(
    runtime: &Runtime,
    selector: &mut impl Selector,
    id: &RequestId,
    method_name: &str,
    params: Option<SplitParams<'_>>,
) -> Result<Admission, Refused> {
    let method = Method::parse(method_name);
    let SplitParams {
        meta,
        arguments,
        rest,
        ..
    } = params.unwrap_or_default();
    let params = MethodParams::read(method, rest);
    let catalogue = runtime.catalogue();
    let dialect = selector
        .select(&Asked {
            runtime,
            method,
            method_name,
            meta: meta.as_ref(),
            params: &params,
            arguments: arguments.as_ref(),
            catalogue: &catalogue,
        })
        .map_err(|r| r.with_id(id))?;
    let meta = meta
        .map_or_else(|| Ok(RequestMeta::default()), MetaParse::into_result)
        .map_err(|e| Refused::in_dialect(dialect, e).with_id(id))?;
    let call = Call {
        dialect,
        method,
        method_name: Call::name_of(method, method_name),
        params,
        arguments,
        meta,
        catalogue,
    };
    Ok(
        if method == Method::SubscriptionsListen && dialect.serves(method) {
            Admission::Listen(call)
        } else {
            Admission::Execute(call)
        },
    )
}

/// Reads one message and its `params` in one pass. A message that only the raw reading
/// accepts (`params` nested past serde_json's recursion limit) is read again raw, so
/// that the refusal carries the request id.
pub(crate) fn read_message(bytes: &[u8]) -> Result<Incoming<'_, SplitParams<'_>>, Refused> {
    if let Ok(incoming) = Incoming::<SplitParams<'_>>::parse_as(bytes) {
        return Ok(incoming);
    }
    // The raw reading's error is the refusal.
    match Incoming::parse(bytes)? {
        Incoming::Request { id, .. } => Err(Refused::from(RpcError::invalid_params(
            "Invalid params: params could not be read (nested too deeply, or an invalid string)",
        ))
        .with_id(&id)),
        // Unreadable params make a notification a no-op (it is still admitted).
        Incoming::Notification { method, .. } => Ok(Incoming::Notification {
            method,
            params: None,
        }),
        Incoming::Response { id, result, error } => Ok(Incoming::Response { id, result, error }),
    }
}
