//! [`Request`]: what a layer sees of one admitted request.

use serde_json::Value;

use crate::Principal;
use crate::protocol::Dialect;
use crate::router::Call;
use crate::runtime::context::RequestContext;

/// One admitted request on its way to the router: its method, target, principal,
/// dialect and arguments, and the request's context (progress, logging, cancellation).
///
/// A layer passes it on with [`Next::run`](super::Next::run); it may rewrite the
/// arguments first ([`arguments_mut`](Self::arguments_mut)).
pub struct Request<'a> {
    pub(super) call: &'a mut Call,
    pub(super) ctx: RequestContext,
}

impl std::fmt::Debug for Request<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Request")
            .field("method", &self.method())
            .field("target", &self.target())
            .field("dialect", &self.dialect().version())
            .finish_non_exhaustive()
    }
}

impl Request<'_> {
    /// The method as the request spelled it, e.g. `tools/call`.
    #[must_use]
    pub fn method(&self) -> &str {
        &self.call.method_name
    }

    /// What the request addresses: `params.name` (tools/call, prompts/get),
    /// `params.uri` (resources/read) or `params.taskId` (the task operations).
    #[must_use]
    pub fn target(&self) -> Option<&str> {
        self.call.target()
    }

    /// Who is calling, as the transport authenticated them.
    #[must_use]
    pub fn principal(&self) -> Option<&Principal> {
        self.ctx.principal()
    }

    /// The protocol dialect of the request.
    #[must_use]
    pub fn dialect(&self) -> &'static Dialect {
        self.call.dialect
    }

    /// `params.arguments` (tools/call, prompts/get), if sent.
    #[must_use]
    pub fn arguments(&self) -> Option<&Value> {
        self.call.arguments.as_ref()
    }

    /// `params.arguments`, to rewrite before passing the request on.
    pub fn arguments_mut(&mut self) -> &mut Option<Value> {
        &mut self.call.arguments
    }

    /// The `cursor` of a paginated list request, if sent.
    #[must_use]
    pub fn cursor(&self) -> Option<&str> {
        self.call.params.cursor().ok().flatten()
    }

    /// The request's context: request id, progress, logging, cancellation, client
    /// capabilities.
    #[must_use]
    pub fn context(&self) -> &RequestContext {
        &self.ctx
    }
}
