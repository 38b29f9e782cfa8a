//! Authorization: which components a principal may see and use.
//!
//! Runs inside the router on every dialect: lists are filtered before pagination (so
//! cursors match what the caller can see), and calls, reads, prompt gets and
//! completions are refused — with the application's error, or concealed as if the
//! component did not exist.

use crate::protocol::RpcError;
use crate::runtime::context::Principal;

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
