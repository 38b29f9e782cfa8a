//! [`Gate`]: the front runtime's authorizer that hides a mounted source's components
//! from the callers its [`Transforms::visible_to`](crate::Transforms::visible_to)
//! predicate refuses.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use snodo::{Authorizer, Component, Principal};

/// Who may see a source's components.
pub(crate) type Visible = Arc<dyn Fn(Option<&Principal>) -> bool + Send + Sync>;

/// Which kind of component a rule is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Kind {
    Tool,
    Prompt,
    Resource,
    Template,
}

/// An [`Authorizer`] holding the visibility rules of every mount that has one; a
/// component without a rule is visible to everyone. Install it when building the
/// front runtime, then give it to the mounts' transforms:
///
/// ```
/// use snodo::{Refusal, Runtime};
/// use snodo_compose::{Gate, Transforms};
/// let gate = Gate::new();
/// let front = Runtime::builder("front", "1").authorizer(gate.clone(), Refusal::Conceal).build();
/// let admin_only = Transforms::new().namespace("ops").require_scope(&gate, "admin");
/// # let _ = (front, admin_only);
/// ```
#[derive(Clone, Default)]
pub struct Gate {
    rules: Arc<RwLock<HashMap<(Kind, String), Visible>>>,
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gate").finish_non_exhaustive()
    }
}

impl Gate {
    /// No rules yet.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    pub(crate) fn set(&self, kind: Kind, name: &str, rule: Visible) {
        if let Ok(mut r) = self.rules.write() {
            r.insert((kind, name.to_owned()), rule);
        }
    }

    pub(crate) fn clear(&self, kind: Kind, name: &str) {
        if let Ok(mut r) = self.rules.write() {
            r.remove(&(kind, name.to_owned()));
        }
    }
}

impl Authorizer for Gate {
    fn allows(&self, principal: Option<&Principal>, component: Component<'_>) -> bool {
        let key = match component {
            Component::Tool(n) => (Kind::Tool, n),
            Component::Prompt(n) => (Kind::Prompt, n),
            Component::Resource(n) => (Kind::Resource, n),
            Component::ResourceTemplate(n) => (Kind::Template, n),
            _ => return true,
        };
        let Ok(rules) = self.rules.read() else {
            return false;
        };
        match rules.get(&(key.0, key.1.to_owned())) {
            Some(rule) => rule(principal),
            None => true,
        }
    }
}
