//! Argument completion (`completion/complete`).

use std::collections::HashMap;

use super::error::HandlerError;
use super::handler::{Erased, Handler, Slot, erase};
use crate::protocol::RpcError;

/// Most values one completion answer carries.
pub const MAX_COMPLETION_VALUES: usize = 100;

/// What a completer is asked.
#[derive(Clone, Debug)]
pub struct CompletionRequest {
    /// The argument (or template variable) being completed.
    pub argument: String,
    /// What the user typed so far.
    pub value: String,
    /// Other arguments already filled in (`context.arguments`).
    pub context: HashMap<String, String>,
}

pub(crate) type Completer = Erased<CompletionRequest, Result<Vec<String>, RpcError>>;

/// Erases a completer; its [`HandlerError`] becomes the JSON-RPC error it answers.
pub(crate) fn boxed<M, H>(handler: H) -> Slot<Completer>
where
    H: Handler<CompletionRequest, M, Output = Result<Vec<String>, HandlerError>>,
{
    erase(handler, |r| r.map_err(HandlerError::into_rpc_error))
}
