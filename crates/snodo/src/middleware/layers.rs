//! [`Layers`], an ordered stack of middleware, and [`Next`], the rest of a stack
//! around the router; the one place middleware is type-erased.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};

use futures_util::FutureExt as _;

use super::{Middleware, Outcome, Reply, Request};
use crate::protocol::Method;
use crate::protocol::RpcError;
use crate::router::{Answer, Call, Router};
use crate::runtime::catalogue::Catalogue;
use crate::runtime::context::RequestContext;
use crate::runtime::error::{ErrorAnswer, HandlerError};

type BoxFuture<'a> = Pin<Box<dyn Future<Output = Outcome> + Send + 'a>>;

/// A [`Middleware`] behind a pointer: its future boxed.
trait Erased: Send + Sync {
    fn call_boxed<'a>(&'a self, request: Request<'a>, next: Next<'a>) -> BoxFuture<'a>;
}

impl<M: Middleware> Erased for M {
    fn call_boxed<'a>(&'a self, request: Request<'a>, next: Next<'a>) -> BoxFuture<'a> {
        Box::pin(self.call(request, next))
    }
}

/// An ordered stack of middleware; the first pushed is the outermost.
///
/// Cheap to clone (one pointer per layer). A component source that contributes
/// components installs its stack on each of them ([`Tool::layers`](crate::Tool::layers)
/// and the like), so a source's layers run around every request to its components.
///
/// ```
/// use snodo::middleware::{Layers, Middleware, Next, Outcome, Request};
///
/// struct Noop;
/// impl Middleware for Noop {
///     async fn call(&self, request: Request<'_>, next: Next<'_>) -> Outcome {
///         next.run(request).await
///     }
/// }
///
/// let stack = Layers::new().with(Noop).with(Noop);
/// assert_eq!(stack.len(), 2);
/// ```
#[derive(Clone, Default)]
pub struct Layers(Vec<Arc<dyn Erased>>);

impl std::fmt::Debug for Layers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Layers")
            .field("len", &self.0.len())
            .finish()
    }
}

impl Layers {
    /// An empty stack.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `layer` inside the ones already there.
    pub fn push(&mut self, layer: impl Middleware) {
        self.0.push(Arc::new(layer));
    }

    /// Adds `layer` inside the ones already there (by value).
    #[must_use]
    pub fn with(mut self, layer: impl Middleware) -> Self {
        self.push(layer);
        self
    }

    /// Adds every layer of `other`, in order, inside the ones already there.
    pub fn extend(&mut self, other: &Self) {
        self.0.extend(other.0.iter().cloned());
    }

    /// How many layers the stack has.
    #[must_use]
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the stack has no layer.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The rest of the stack below a layer, ending at the router.
pub struct Next<'a> {
    /// The runtime's layers still to run.
    outer: &'a [Arc<dyn Erased>],
    /// Then the addressed component's.
    inner: &'a [Arc<dyn Erased>],
    router: Router<'a>,
    /// An authorizer's challenge the router answered, kept whole for the transport
    /// (a layer sees its wire error).
    challenge: &'a OnceLock<ErrorAnswer>,
}

impl std::fmt::Debug for Next<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Next")
            .field("layers", &(self.outer.len() + self.inner.len()))
            .finish_non_exhaustive()
    }
}

impl Next<'_> {
    /// Passes `request` to the next layer, or to the router after the last one.
    /// Progress, log messages and cancellation of the request flow as without layers.
    pub async fn run(self, request: Request<'_>) -> Outcome {
        let (layer, next) = if let Some((first, rest)) = self.outer.split_first() {
            (
                first,
                Next {
                    outer: rest,
                    ..self
                },
            )
        } else if let Some((first, rest)) = self.inner.split_first() {
            (
                first,
                Next {
                    inner: rest,
                    ..self
                },
            )
        } else {
            let Request { call, ctx } = request;
            let object = match self.router.route(call, ctx).await {
                Ok(object) => object,
                Err(answer) => {
                    let error = RpcError::clone(&answer);
                    if answer.rejection().is_some() {
                        let _ = self.challenge.set(answer);
                    }
                    return Err(HandlerError::Protocol(error));
                }
            };
            let object = self
                .router
                .finish(&call.catalogue, call.dialect, call.method, object);
            return Ok(Reply {
                object,
                finished: true,
            });
        };
        layer.call_boxed(request, next).await
    }
}

/// Whether a request from this catalogue goes through any layer.
pub(crate) fn layered(runtime: &Layers, catalogue: &Catalogue) -> bool {
    !runtime.is_empty() || catalogue.layered()
}

/// The addressed component's layers (tools/call, prompts/get, resources/read of a
/// static resource).
fn component_layers<'c>(catalogue: &'c Catalogue, call: &Call) -> &'c [Arc<dyn Erased>] {
    let Some(target) = call.target() else {
        return &[];
    };
    let layers = match call.method {
        Method::ToolsCall => catalogue.tool(target).map(|t| &t.layers),
        Method::PromptsGet => catalogue.prompt(target).map(|p| &p.layers),
        Method::ResourcesRead => catalogue.resource(target).map(|r| &r.layers),
        _ => None,
    };
    layers.map_or(&[], |l| &l.0)
}

/// Runs `call` through the runtime's and the component's layers; a panic in a layer
/// or below is `-32603` for this request only.
pub(crate) async fn dispatch(
    router: Router<'_>,
    runtime: &Layers,
    call: &mut Call,
    ctx: RequestContext,
) -> Answer {
    let catalogue = Arc::clone(&call.catalogue);
    let (dialect, method) = (call.dialect, call.method);
    let challenge = OnceLock::new();
    let next = Next {
        outer: &runtime.0,
        inner: component_layers(&catalogue, call),
        router,
        challenge: &challenge,
    };
    let run = AssertUnwindSafe(next.run(Request { call, ctx })).catch_unwind();
    let outcome = run
        .await
        .map_err(|panic| crate::router::panicked(method, &*panic))?;
    match outcome {
        Ok(reply) => Ok(reply.finish(router, &catalogue, (dialect, method))),
        Err(e) => {
            let error = e.into_rpc_error();
            // A challenge a layer passed on unchanged stays a challenge (401/403 on HTTP).
            match challenge.into_inner() {
                Some(answer) if *answer == error => Err(answer),
                _ => Err(error.into()),
            }
        }
    }
}
