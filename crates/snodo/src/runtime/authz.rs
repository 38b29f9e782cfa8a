//! Authorization: which components a principal may see and use.
//!
//! Runs inside the router on every dialect: lists are filtered before pagination (so
//! cursors match what the caller can see), and calls, reads, prompt gets and
//! completions are refused — with the application's error, or concealed as if the
//! component did not exist.

use crate::caller::AuthRejection;
use crate::caller::Principal;
use crate::protocol::RpcError;

/// A component a request lists or uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Component<'a> {
    /// A tool, by name.
    Tool(&'a str),
    /// A prompt, by name.
    Prompt(&'a str),
    /// A resource, by URI.
    Resource(&'a str),
    /// A resource template, by its URI template.
    ResourceTemplate(&'a str),
}

/// Decides, per request, what the caller may see and use. Must be cheap: it runs for
/// every listed item.
pub trait Authorizer: Send + Sync + 'static {
    /// Whether `principal` (`None`: anonymous) may see and use `component`.
    fn allows(&self, principal: Option<&Principal>, component: Component<'_>) -> bool;

    /// Checked before every use (a call, read, prompt get or completion), before
    /// [`Authorizer::allows`]: a refusal the transport answers itself on every dialect
    /// — over HTTP its 401/403 with the `WWW-Authenticate` challenge, even where
    /// execution errors otherwise travel in a 200 — e.g. an OAuth step-up
    /// (`403 insufficient_scope`). `components` are all the components the operation
    /// uses (a templated read: the template, then the resource), so that one challenge
    /// can name everything the operation needs. The default never challenges.
    fn challenge(
        &self,
        principal: Option<&Principal>,
        components: &[Component<'_>],
    ) -> Option<AuthRejection> {
        let _ = (principal, components);
        None
    }
}

impl<F> Authorizer for F
where
    F: Fn(Option<&Principal>, Component<'_>) -> bool + Send + Sync + 'static,
{
    fn allows(&self, principal: Option<&Principal>, component: Component<'_>) -> bool {
        self(principal, component)
    }
}

/// How a refused call is answered.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Refusal {
    /// With this error (e.g. an application code such as `-32003`).
    Error(RpcError),
    /// As if the component did not exist (unknown tool, resource not found, …).
    Conceal,
}
