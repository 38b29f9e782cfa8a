//! [`Transforms`]: how a source's components appear at the front — a namespace, allow
//! and deny lists, renames, description and annotation overrides, visibility, and
//! per-tool policy.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use glob::Pattern;
use serde_json::{Map, Value};
use snodo::{Principal, RateLimit, Tool};

use crate::visibility::{Gate, Visible};

/// The limits snodo enforces on a tool, set on mounted tools
/// ([`Transforms::policy`]).
#[derive(Clone, Debug, Default)]
pub struct ToolPolicy {
    /// Stop a call that runs longer (a tool error; the backend request is cancelled).
    pub timeout: Option<Duration>,
    /// At most this many calls at once.
    pub max_concurrent: Option<usize>,
    /// Each principal's budget.
    pub rate_limit: Option<RateLimit>,
}

impl ToolPolicy {
    pub(crate) fn apply(&self, mut tool: Tool) -> Tool {
        if let Some(t) = self.timeout {
            tool = tool.timeout(t);
        }
        if let Some(n) = self.max_concurrent {
            tool = tool.max_concurrent(n);
        }
        if let Some(r) = self.rate_limit {
            tool = tool.rate_limit(r);
        }
        tool
    }
}

/// How a mounted source's components are named and shown at the front.
///
/// - **Namespace** `ns`: tools and prompts become `ns_name` (the separator is
///   configurable); a resource URI `scheme://rest` becomes `scheme://ns/rest` (templates
///   alike), and is mapped back before the backend sees it.
/// - **Allow/deny** by glob (`search_*`): tools and prompts by their backend name,
///   resources and templates by their backend URI. Deny wins; with any allow pattern,
///   only what one matches is mounted.
/// - **Rename** a tool or prompt (the front name given is used as is, no namespace).
/// - **Overrides**: a description, annotation members.
/// - **Visibility**: a predicate on the caller ([`Principal`]) enforced by a [`Gate`]
///   installed as the front runtime's authorizer.
/// - **Policy**: timeout, concurrency and rate limits on tools whose backend name
///   matches a glob.
///
/// ```
/// use std::time::Duration;
/// use snodo_compose::{ToolPolicy, Transforms};
/// let t = Transforms::new()
///     .namespace("fs")
///     .deny("delete_*")
///     .rename("read_file", "cat")
///     .describe("search", "Search the shared drive")
///     .policy("*", ToolPolicy { timeout: Some(Duration::from_secs(10)), ..ToolPolicy::default() });
/// assert_eq!(t.front_name("search").as_deref(), Some("fs_search"));
/// assert_eq!(t.front_name("read_file").as_deref(), Some("cat"));
/// assert_eq!(t.front_name("delete_all"), None);
/// assert_eq!(t.front_uri("file:///etc/motd"), "file://fs//etc/motd");
/// assert_eq!(t.backend_uri("file://fs//etc/motd").as_deref(), Some("file:///etc/motd"));
/// ```
#[derive(Clone, Default)]
pub struct Transforms {
    namespace: Option<String>,
    separator: Option<String>,
    allow: Vec<Pattern>,
    deny: Vec<Pattern>,
    renames: HashMap<String, String>,
    descriptions: HashMap<String, String>,
    annotations: HashMap<String, Map<String, Value>>,
    policies: Vec<(Pattern, ToolPolicy)>,
    pub(crate) visibility: Option<(Gate, Visible)>,
}

impl std::fmt::Debug for Transforms {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transforms")
            .field("namespace", &self.namespace)
            .field("separator", &self.separator)
            .finish_non_exhaustive()
    }
}

/// A glob, or (when it is not a valid glob) the literal name.
fn pattern(glob: &str) -> Pattern {
    Pattern::new(glob).unwrap_or_else(|_| Pattern::new(&Pattern::escape(glob)).unwrap_or_default())
}

impl Transforms {
    /// No transform: the backend's names as they are.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Prefixes names with `ns` and the separator, and URIs with `ns/` after `://`.
    #[must_use]
    pub fn namespace(mut self, ns: impl Into<String>) -> Self {
        self.namespace = Some(ns.into());
        self
    }

    /// The separator between the namespace and a name (default `_`).
    #[must_use]
    pub fn separator(mut self, sep: impl Into<String>) -> Self {
        self.separator = Some(sep.into());
        self
    }

    /// Mounts only what matches one of the allow globs.
    #[must_use]
    pub fn allow(mut self, glob: &str) -> Self {
        self.allow.push(pattern(glob));
        self
    }

    /// Leaves out what matches.
    #[must_use]
    pub fn deny(mut self, glob: &str) -> Self {
        self.deny.push(pattern(glob));
        self
    }

    /// Serves the backend's tool or prompt `from` as `to` (no namespace added).
    #[must_use]
    pub fn rename(mut self, from: impl Into<String>, to: impl Into<String>) -> Self {
        self.renames.insert(from.into(), to.into());
        self
    }

    /// Replaces the description of the backend's component `name` (a tool or prompt
    /// name, or a resource URI).
    #[must_use]
    pub fn describe(mut self, name: impl Into<String>, description: impl Into<String>) -> Self {
        self.descriptions.insert(name.into(), description.into());
        self
    }

    /// Sets an annotation member of the backend's tool `name` (e.g. `readOnlyHint`).
    #[must_use]
    pub fn annotate(
        mut self,
        name: impl Into<String>,
        key: impl Into<String>,
        value: impl Into<Value>,
    ) -> Self {
        self.annotations
            .entry(name.into())
            .or_default()
            .insert(key.into(), value.into());
        self
    }

    /// Enforces `policy` on tools whose backend name matches `glob` (the first match
    /// wins).
    #[must_use]
    pub fn policy(mut self, glob: &str, policy: ToolPolicy) -> Self {
        self.policies.push((pattern(glob), policy));
        self
    }

    /// Shows the source's components only to callers for whom `visible` is true
    /// (others neither list nor use them: they do not exist for them). `gate` must be
    /// the front runtime's authorizer ([`Gate`]).
    #[must_use]
    pub fn visible_to(
        mut self,
        gate: &Gate,
        visible: impl Fn(Option<&Principal>) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.visibility = Some((gate.clone(), Arc::new(visible)));
        self
    }

    /// Shows the source's components only to callers whose token grants `scope`.
    #[must_use]
    pub fn require_scope(self, gate: &Gate, scope: &str) -> Self {
        let scope = scope.to_owned();
        self.visible_to(gate, move |p| {
            p.and_then(Principal::scope)
                .is_some_and(|s| s.split(' ').any(|x| x == scope))
        })
    }

    fn admitted(&self, key: &str) -> bool {
        !self.deny.iter().any(|p| p.matches(key))
            && (self.allow.is_empty() || self.allow.iter().any(|p| p.matches(key)))
    }

    /// The front name of the backend's tool or prompt `name`; `None` when filtered out.
    #[must_use]
    pub fn front_name(&self, name: &str) -> Option<String> {
        if !self.admitted(name) {
            return None;
        }
        if let Some(to) = self.renames.get(name) {
            return Some(to.clone());
        }
        Some(match &self.namespace {
            Some(ns) => format!("{ns}{}{name}", self.separator.as_deref().unwrap_or("_")),
            None => name.to_owned(),
        })
    }

    /// Whether the backend's resource or template `uri` is mounted.
    #[must_use]
    pub fn admits_uri(&self, uri: &str) -> bool {
        self.admitted(uri)
    }

    /// The front form of a backend URI (or URI template).
    #[must_use]
    pub fn front_uri(&self, uri: &str) -> String {
        match &self.namespace {
            None => uri.to_owned(),
            Some(ns) => match uri.split_once("://") {
                Some((scheme, rest)) => format!("{scheme}://{ns}/{rest}"),
                None => format!("{ns}{}{uri}", self.separator.as_deref().unwrap_or("_")),
            },
        }
    }

    /// The backend form of a front URI; `None` when it is not in this namespace.
    #[must_use]
    pub fn backend_uri(&self, uri: &str) -> Option<String> {
        let Some(ns) = &self.namespace else {
            return Some(uri.to_owned());
        };
        match uri.split_once("://") {
            Some((scheme, rest)) => rest
                .strip_prefix(ns.as_str())
                .and_then(|r| r.strip_prefix('/'))
                .map(|r| format!("{scheme}://{r}")),
            None => uri
                .strip_prefix(ns.as_str())
                .and_then(|r| r.strip_prefix(self.separator.as_deref().unwrap_or("_")))
                .map(str::to_owned),
        }
    }

    pub(crate) fn description_of(&self, name: &str) -> Option<&str> {
        self.descriptions.get(name).map(String::as_str)
    }

    pub(crate) fn annotations_of(&self, name: &str) -> Option<&Map<String, Value>> {
        self.annotations.get(name)
    }

    pub(crate) fn policy_of(&self, name: &str) -> Option<&ToolPolicy> {
        self.policies
            .iter()
            .find(|(p, _)| p.matches(name))
            .map(|(_, p)| p)
    }
}
