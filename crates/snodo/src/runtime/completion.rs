//! Argument completion (`completion/complete`).

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use futures_util::FutureExt as _;
use futures_util::future::BoxFuture;

use super::context::RequestContext;
use super::error::HandlerError;
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

/// Boxes a completer; its [`HandlerError`] becomes the JSON-RPC error it answers.
pub(crate) fn boxed<F, Fut>(f: F) -> Completer
where
    F: Fn(CompletionRequest, RequestContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Vec<String>, HandlerError>> + Send + 'static,
{
    Arc::new(move |req, ctx| {
        f(req, ctx)
            .map(|r| r.map_err(HandlerError::into_rpc_error))
            .boxed()
    })
}
