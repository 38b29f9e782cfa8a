//! Argument completion (`completion/complete`).

use std::collections::HashMap;
use std::sync::Arc;

use futures_util::future::BoxFuture;

use super::context::RequestContext;
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

pub(crate) type Completer = Arc<
    dyn Fn(CompletionRequest, RequestContext) -> BoxFuture<'static, Result<Vec<String>, RpcError>>
        + Send
        + Sync,
>;
