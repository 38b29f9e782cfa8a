//! The shared router: one implementation of every MCP operation, used by every dialect.
//!
//! [`Router::dispatch`] takes an admitted request (dialect chosen, method parsed,
//! params parsed) and produces the result object or a JSON-RPC error; [`finish`] then
//! adds what the dialect's result envelope needs.

mod call;
mod lists;
mod ops;
mod result;
mod rounds;

pub(crate) use call::shape;
pub(crate) use result::{Member, ResultObject};

use std::borrow::Cow;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures_util::FutureExt as _;
use serde_json::{Map, Value};

use crate::protocol::meta::SERVER_INFO_KEY;
use crate::protocol::method_params::MethodParams;
use crate::protocol::{Dialect, Method, RequestMeta, RpcError};
use crate::runtime::Runtime;
use crate::runtime::catalogue::Catalogue;
use crate::runtime::context::RequestContext;
use crate::runtime::envelopes::ResultType;
use crate::runtime::error::{ErrorAnswer, HandlerError};
use crate::runtime::input::InputRequired;

/// A request that passed admission: everything the router needs, owned.
pub(crate) struct Call {
    pub(crate) dialect: &'static Dialect,
    pub(crate) method: Method,
    /// The method's name as the request spelled it (borrowed for a known method).
    pub(crate) method_name: Cow<'static, str>,
    /// The method's own members of `params`, read and checked at admission.
    pub(crate) params: MethodParams,
    /// `params.arguments`, kept apart from the other members (handed to the handler as JSON).
    pub(crate) arguments: Option<Value>,
    pub(crate) meta: RequestMeta,
    /// The catalogue this request is served from, loaded once at admission.
    pub(crate) catalogue: Arc<Catalogue>,
}

impl std::fmt::Debug for Call {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Call")
            .field("dialect", &self.dialect.version())
            .field("method", &self.method)
            .field("params", &self.params)
            .field("arguments", &self.arguments)
            .field("meta", &self.meta)
            .finish_non_exhaustive()
    }
}

/// A result object before its dialect envelope.
pub(crate) type Output = Result<Map<String, Value>, RpcError>;

/// A finished answer: a result object (with pre-serialised members) or an error.
pub(crate) type Answer = Result<ResultObject, ErrorAnswer>;

/// Why an interactive operation (tools/call, prompts/get, resources/read) stopped
/// without a result.
#[derive(Debug)]
pub(crate) enum Stop {
    /// A JSON-RPC error (or an authorizer's challenge).
    Error(ErrorAnswer),
    /// The handler needs input from the client.
    Input(InputRequired),
}

impl From<RpcError> for Stop {
    fn from(e: RpcError) -> Self {
        Self::Error(e.into())
    }
}

impl From<ErrorAnswer> for Stop {
    fn from(e: ErrorAnswer) -> Self {
        Self::Error(e)
    }
}

impl Stop {
    /// Maps a handler error; `failed` says what an execution failure becomes.
    pub(crate) fn from_handler(e: HandlerError, not_found: impl FnOnce() -> RpcError) -> Self {
        match e {
            HandlerError::Failed(msg) => RpcError::internal(msg).into(),
            HandlerError::NotFound => not_found().into(),
            HandlerError::Protocol(e) => e.into(),
            HandlerError::InputRequired(i) => Self::Input(i),
        }
    }
}

/// The error a panic in a handler (or a layer) answers, logged with what it said.
pub(crate) fn panicked(method: Method, panic: &(dyn std::any::Any + Send)) -> RpcError {
    let what = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_default();
    tracing::error!(method = ?method, panic = %what, "handler panicked");
    RpcError::internal("Internal error: the handler failed")
}

/// The result of an interactive operation.
pub(crate) type Interactive = Result<Map<String, Value>, Stop>;

/// The router: one implementation of every MCP operation, over a runtime description
/// it reads only through the runtime's accessors.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Router<'r> {
    pub(crate) runtime: &'r Runtime,
}

/// Without the Skills extension, its methods are not found.
#[cfg(not(feature = "skills"))]
impl Router<'_> {
    fn has_skills(&self) -> bool {
        false
    }

    fn skills_method(&self, call: &Call, _ctx: &RequestContext) -> Result<ResultObject, RpcError> {
        Err(RpcError::method_not_found(&call.method_name))
    }
}

impl<'r> Router<'r> {
    /// Routes requests of `runtime`.
    pub(crate) fn new(runtime: &'r Runtime) -> Self {
        Self { runtime }
    }
}

impl Call {
    /// What [`method_name`](Self::method_name) holds for `name`, parsed as `method`:
    /// the static name of a known method, a copy of any other.
    pub(crate) fn name_of(method: Method, name: &str) -> Cow<'static, str> {
        match method {
            Method::Unknown => Cow::Owned(name.to_owned()),
            known => Cow::Borrowed(known.as_str()),
        }
    }

    /// The member `Mcp-Name` mirrors (`params.name`, `params.uri` or `params.taskId`),
    /// when it is a string.
    pub(crate) fn target(&self) -> Option<&str> {
        self.params.target()
    }
}

impl Router<'_> {
    /// Executes an admitted request. Panics in handlers become `-32603` for this
    /// request only.
    ///
    /// The call and the context are passed down by reference and by handle: every
    /// level of this chain is a future nested in the one above it, and what each level
    /// owns is moved (copied) into it when it starts.
    pub(crate) async fn dispatch(self, call: &mut Call, ctx: RequestContext) -> Answer {
        let layers = self.runtime.layers();
        if crate::middleware::layered(layers, &call.catalogue) {
            // Boxed: without layers, this future carries nothing of the layered path.
            return Box::pin(crate::middleware::dispatch(self, layers, call, ctx)).await;
        }
        let method = call.method;
        let dialect = call.dialect;
        let run = AssertUnwindSafe(self.route(call, ctx)).catch_unwind();
        let result = run
            .await
            .unwrap_or_else(|panic| Err(panicked(method, &*panic).into()))?;
        Ok(self.finish(&call.catalogue, dialect, method, result))
    }

    pub(crate) async fn route(&self, call: &mut Call, ctx: RequestContext) -> Answer {
        use Method as M;
        if !call.dialect.serves(call.method) {
            return Err(RpcError::method_not_found(&call.method_name).into());
        }
        let caps = self.runtime.capabilities();
        let enabled = match call.method {
            M::ToolsList | M::ToolsCall => caps.tools,
            M::PromptsList | M::PromptsGet => caps.prompts,
            M::ResourcesList | M::ResourceTemplatesList | M::ResourcesRead => caps.resources,
            M::CompletionComplete => caps.completions,
            M::LoggingSetLevel => caps.logging,
            M::SkillsList | M::SkillsGet | M::ResourcesDirectoryRead => self.has_skills(),
            _ => true,
        };
        if !enabled {
            return Err(RpcError::method_not_found(&call.method_name).into());
        }
        if matches!(call.method, M::ToolsCall | M::PromptsGet | M::ResourcesRead) {
            return self.interactive(call, ctx).await;
        }
        if matches!(call.method, M::TasksGet | M::TasksUpdate | M::TasksCancel) {
            return self.task_op(call, &ctx).await;
        }
        match call.method {
            M::Initialize => Ok(self.initialize(call)?.into()),
            M::Ping => Ok(ResultObject::default()),
            M::LoggingSetLevel => Ok(ops::set_level(&call.params)?.into()),
            M::Discover => Ok(self.discover(call).into()),
            M::SkillsList | M::SkillsGet | M::ResourcesDirectoryRead => {
                Ok(self.skills_method(call, &ctx)?)
            }
            M::ToolsList => self.list_tools(call, &ctx),
            M::PromptsList => self.list_prompts(call, &ctx),
            M::ResourcesList => self.list_resources(call, ctx).await,
            M::ResourceTemplatesList => self.list_templates(call, &ctx),
            M::CompletionComplete => self.complete(call, ctx).await.map(Into::into),
            M::ToolsCall
            | M::PromptsGet
            | M::ResourcesRead
            | M::SubscriptionsListen
            | M::ResourcesSubscribe
            | M::ResourcesUnsubscribe
            | M::Initialized
            | M::Cancelled
            | M::TasksGet
            | M::TasksUpdate
            | M::TasksCancel
            | M::Unknown => Err(RpcError::method_not_found(&call.method_name).into()),
        }
    }

    /// Adds the dialect's result envelope: for 2026-07-28 `resultType`, cache hints on
    /// cacheable results, and the server info in `_meta`.
    pub(crate) fn finish(
        &self,
        catalogue: &Catalogue,
        dialect: &Dialect,
        method: Method,
        mut result: ResultObject,
    ) -> ResultObject {
        if !dialect.has_result_envelope() {
            return result;
        }
        let Some(view) = catalogue.view(dialect) else {
            return result;
        };
        let fields = &mut result.fields;
        if !fields.contains_key(ResultType::KEY) {
            result
                .members
                .push(result::complete(self.runtime.envelopes(), method));
        }
        match fields.get_mut("_meta") {
            // The handler set `_meta`: add the server info to it.
            Some(Value::Object(meta)) => {
                meta.insert(SERVER_INFO_KEY.into(), view.server_info.clone());
            }
            Some(_) => {}
            None => result.members.push(Member::Keyed(
                "_meta",
                std::sync::Arc::clone(&view.result_meta),
            )),
        }
        result
    }
}
