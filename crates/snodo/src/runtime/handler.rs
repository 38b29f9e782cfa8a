//! [`Handler`]: what a component's handler is — any async function of its input, with
//! the [`RequestContext`] and shared [`State`] optional — and the state it can take.
//!
//! One shape for every component: a tool's handler takes its arguments, a prompt's its
//! [`PromptArguments`](crate::PromptArguments), a reader a [`ReadRequest`](crate::ReadRequest),
//! a lister a [`ListRequest`](crate::ListRequest), a completer a
//! [`CompletionRequest`](crate::CompletionRequest). Like axum's handlers, the forms are
//! trait impls over closures and `async fn`s, told apart by a marker type parameter
//! (`M`) the caller never names:
//!
//! | form | marker |
//! |---|---|
//! | `async fn(A)` | `(A,)` |
//! | `async fn(A, RequestContext)` | `(A, RequestContext)` |
//! | `async fn(State<S>, A)` | `(State<S>, A)` |
//! | `async fn(State<S>, A, RequestContext)` | `(State<S>, A, RequestContext)` |
//!
//! State is registered once on the builder
//! ([`RuntimeBuilder::with_state`](crate::RuntimeBuilder::with_state)), looked up by type
//! when the runtime is built (a handler that asks for state nobody registered is refused
//! with [`BuildError::MissingState`](crate::BuildError::MissingState)), and cloned into
//! each call: no clone per closure in application code. Every component keeps its
//! handlers in a `Slot` and erases them with `erase` (tools, whose arguments are
//! deserialised first, with `bind_or_defer`).

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures_util::future::BoxFuture;

use super::context::RequestContext;

/// Shared application state, taken as a handler's first parameter:
/// `|State(db): State<Db>, args: Args| async move { .. }`.
///
/// Register the value with
/// [`RuntimeBuilder::with_state`](crate::RuntimeBuilder::with_state); each call gets a
/// clone (make `S` cheap to clone: an `Arc`, a pool handle).
#[derive(Clone, Copy, Debug, Default)]
pub struct State<S>(pub S);

/// An async function that handles one kind of request: `In` is what it receives (a
/// tool's arguments, a [`ReadRequest`](crate::ReadRequest), …), `M` a marker that tells the supported forms apart (callers never
/// name it).
///
/// Like axum's handlers, the forms are impls over closures and `async fn`s:
///
/// | form | marker `M` |
/// |---|---|
/// | `async fn(A)` | `(A,)` |
/// | `async fn(A, RequestContext)` | `(A, RequestContext)` |
/// | `async fn(State<S>, A)` | `(State<S>, A)` |
/// | `async fn(State<S>, A, RequestContext)` | `(State<S>, A, RequestContext)` |
///
/// A closure that uses its context annotates it (`ctx: RequestContext`): the form is
/// chosen by the parameter types. State is registered with
/// [`RuntimeBuilder::with_state`](crate::RuntimeBuilder::with_state) and checked when
/// the runtime is built ([`BuildError::MissingState`](crate::BuildError::MissingState)).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a handler taking `{In}`",
    label = "a handler is an async fn (or closure) of (args), (args, RequestContext), (State<S>, args) or (State<S>, args, RequestContext)",
    note = "annotate the closure's parameters (`|args: Args, ctx: RequestContext|`) so the form can be chosen"
)]
pub trait Handler<In, M>: Send + Sync + 'static {
    /// The shared state it takes (`()` for none).
    type State: Clone + Send + Sync + 'static;
    /// What its future yields.
    type Output;
    /// Its future.
    type Future: Future<Output = Self::Output> + Send + 'static;

    /// Handles one request.
    fn call(&self, state: Self::State, input: In, ctx: RequestContext) -> Self::Future;
}

impl<F, In, Fut> Handler<In, (In,)> for F
where
    F: Fn(In) -> Fut + Send + Sync + 'static,
    Fut: Future + Send + 'static,
{
    type State = ();
    type Output = Fut::Output;
    type Future = Fut;

    fn call(&self, (): (), input: In, _ctx: RequestContext) -> Fut {
        self(input)
    }
}

impl<F, In, Fut> Handler<In, (In, RequestContext)> for F
where
    F: Fn(In, RequestContext) -> Fut + Send + Sync + 'static,
    Fut: Future + Send + 'static,
{
    type State = ();
    type Output = Fut::Output;
    type Future = Fut;

    fn call(&self, (): (), input: In, ctx: RequestContext) -> Fut {
        self(input, ctx)
    }
}

impl<F, S, In, Fut> Handler<In, (State<S>, In)> for F
where
    F: Fn(State<S>, In) -> Fut + Send + Sync + 'static,
    S: Clone + Send + Sync + 'static,
    Fut: Future + Send + 'static,
{
    type State = S;
    type Output = Fut::Output;
    type Future = Fut;

    fn call(&self, state: S, input: In, _ctx: RequestContext) -> Fut {
        self(State(state), input)
    }
}

impl<F, S, In, Fut> Handler<In, (State<S>, In, RequestContext)> for F
where
    F: Fn(State<S>, In, RequestContext) -> Fut + Send + Sync + 'static,
    S: Clone + Send + Sync + 'static,
    Fut: Future + Send + 'static,
{
    type State = S;
    type Output = Fut::Output;
    type Future = Fut;

    fn call(&self, state: S, input: In, ctx: RequestContext) -> Fut {
        self(State(state), input, ctx)
    }
}

/// The registered states, by type (always holds `()`).
#[derive(Clone)]
pub(crate) struct States(HashMap<TypeId, Arc<dyn Any + Send + Sync>>);

impl Default for States {
    fn default() -> Self {
        let mut map: HashMap<TypeId, Arc<dyn Any + Send + Sync>> = HashMap::new();
        map.insert(TypeId::of::<()>(), Arc::new(()));
        Self(map)
    }
}

impl fmt::Debug for States {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("States")
            .field("count", &self.0.len())
            .finish()
    }
}

impl States {
    /// Registers (or replaces) the state of type `S`.
    pub(crate) fn insert<S: Clone + Send + Sync + 'static>(&mut self, state: S) {
        self.0.insert(TypeId::of::<S>(), Arc::new(state));
    }

    /// A clone of the state of type `S`, if registered.
    pub(crate) fn get<S: Clone + Send + Sync + 'static>(&self) -> Option<S> {
        self.0
            .get(&TypeId::of::<S>())
            .and_then(|s| s.downcast_ref::<S>())
            .cloned()
    }
}

/// A handler that still needs its state: binds it once the states are known.
pub(crate) type Binder<T> = Arc<dyn Fn(&States) -> Option<T> + Send + Sync>;

/// A handler waiting for its state: the binder and the state's type name (for the
/// build error).
pub(crate) struct Unbound<T> {
    bind: Binder<T>,
    state: &'static str,
}

impl<T> Clone for Unbound<T> {
    fn clone(&self) -> Self {
        Self {
            bind: Arc::clone(&self.bind),
            state: self.state,
        }
    }
}

/// Binds `make` now when it needs no state, else keeps it for
/// [`States`] to bind at build time.
pub(crate) fn bind_or_defer<T, S: Clone + Send + Sync + 'static>(
    make: impl Fn(S) -> T + Send + Sync + 'static,
) -> Slot<T> {
    if let Some(state) = States::default().get::<S>() {
        return Slot::Ready(make(state));
    }
    Slot::Waiting(Unbound {
        bind: Arc::new(move |states: &States| states.get::<S>().map(&make)),
        state: std::any::type_name::<S>(),
    })
}

/// Where a component keeps one of its handlers: none yet, ready to call, or waiting
/// for the state it takes (until [`bind`](Self::bind) at build time).
#[derive(Default)]
pub(crate) enum Slot<T> {
    #[default]
    Empty,
    Ready(T),
    Waiting(Unbound<T>),
}

impl<T: Clone> Clone for Slot<T> {
    fn clone(&self) -> Self {
        match self {
            Self::Empty => Self::Empty,
            Self::Ready(t) => Self::Ready(t.clone()),
            Self::Waiting(u) => Self::Waiting(u.clone()),
        }
    }
}

impl<T> Slot<T> {
    /// The handler, once bound.
    pub(crate) fn get(&self) -> Option<&T> {
        match self {
            Self::Ready(t) => Some(t),
            Self::Empty | Self::Waiting(_) => None,
        }
    }

    /// Takes the bound handler out, leaving the slot empty.
    pub(crate) fn take(&mut self) -> Option<T> {
        match std::mem::take(self) {
            Self::Ready(t) => Some(t),
            Self::Empty | Self::Waiting(_) => None,
        }
    }

    /// Binds a handler that takes state; `Err(type name)` when that state is not
    /// registered.
    pub(crate) fn bind(&mut self, states: &States) -> Result<(), &'static str> {
        if let Self::Waiting(u) = self {
            *self = Self::Ready((u.bind)(states).ok_or(u.state)?);
        }
        Ok(())
    }
}

/// A handler with its form and state erased: what a component stores and the router
/// calls.
pub(crate) type Erased<In, Out> =
    Arc<dyn Fn(In, RequestContext) -> BoxFuture<'static, Out> + Send + Sync>;

/// Erases any [`Handler`] form into the one shape the router calls, `finish` turning
/// its output into what the router expects: the one place every component's handler
/// (prompt, reader, lister, completer) is boxed and given its state.
pub(crate) fn erase<In, M, H, Out>(
    handler: H,
    finish: fn(H::Output) -> Out,
) -> Slot<Erased<In, Out>>
where
    H: Handler<In, M>,
    H::Output: 'static,
    In: Send + 'static,
    Out: Send + 'static,
{
    let handler = Arc::new(handler);
    bind_or_defer(move |state: H::State| -> Erased<In, Out> {
        let handler = Arc::clone(&handler);
        Arc::new(move |input, ctx| {
            let future = handler.call(state.clone(), input, ctx);
            Box::pin(async move { finish(future.await) })
        })
    })
}
