//! Changes that `subscriptions/listen` streams deliver (2026-07-28).

use std::sync::Arc;

/// A change a subscriber may have asked to hear about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Change {
    /// The tool list changed.
    ToolsListChanged,
    /// The prompt list changed.
    PromptsListChanged,
    /// The resource list changed.
    ResourcesListChanged,
    /// The contents of the resource at this URI changed.
    ResourceUpdated(Arc<str>),
}

/// How many changes a slow subscriber may fall behind before it is told that every
/// list it watches changed.
pub(crate) const CHANGE_BACKLOG: usize = 256;
