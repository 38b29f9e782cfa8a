//! [`ScopePolicy`]: the scopes each tool, prompt and resource needs, as a snodo
//! [`Authorizer`]: lists hide what the token cannot use (unless told not to), and a
//! use without the scopes gets the step-up challenge (`403 insufficient_scope` naming
//! every scope the operation needs).

use std::collections::{BTreeMap, BTreeSet};

use snodo::http::AuthRejection;
use snodo::{Authorizer, Component, Principal};

use crate::server::ResourceServer;
use crate::token::TokenInfo;

/// Per-component scopes.
///
/// ```no_run
/// # async fn f(rs: snodo_oauth::ResourceServer) {
/// use snodo_oauth::ScopePolicy;
/// let policy = ScopePolicy::new(&rs)
///     .tool("delete_file", ["files:write"])
///     .resource_template("file:///{+path}", ["files:read"]);
/// // Runtime::builder(..).authorizer(policy, snodo::Refusal::Conceal)
/// # let _ = policy;
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct ScopePolicy {
    server: ResourceServer,
    tools: BTreeMap<String, Vec<String>>,
    prompts: BTreeMap<String, Vec<String>>,
    resources: BTreeMap<String, Vec<String>>,
    templates: BTreeMap<String, Vec<String>>,
    /// A broader scope and the narrower ones it implies.
    implies: BTreeMap<String, BTreeSet<String>>,
    hide: bool,
}

fn owned<I, S>(scopes: I) -> Vec<String>
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    scopes.into_iter().map(Into::into).collect()
}

impl ScopePolicy {
    /// No component needs more than the scopes every request needs; challenges name
    /// `server`'s metadata.
    #[must_use]
    pub fn new(server: &ResourceServer) -> Self {
        Self {
            server: server.clone(),
            tools: BTreeMap::new(),
            prompts: BTreeMap::new(),
            resources: BTreeMap::new(),
            templates: BTreeMap::new(),
            implies: BTreeMap::new(),
            hide: true,
        }
    }

    /// The scopes tool `name` needs.
    #[must_use]
    pub fn tool<I: IntoIterator<Item = S>, S: Into<String>>(
        mut self,
        name: &str,
        scopes: I,
    ) -> Self {
        self.tools.insert(name.into(), owned(scopes));
        self
    }

    /// The scopes prompt `name` needs.
    #[must_use]
    pub fn prompt<I: IntoIterator<Item = S>, S: Into<String>>(
        mut self,
        name: &str,
        scopes: I,
    ) -> Self {
        self.prompts.insert(name.into(), owned(scopes));
        self
    }

    /// The scopes the resource at `uri` needs.
    #[must_use]
    pub fn resource<I: IntoIterator<Item = S>, S: Into<String>>(
        mut self,
        uri: &str,
        scopes: I,
    ) -> Self {
        self.resources.insert(uri.into(), owned(scopes));
        self
    }

    /// The scopes every resource of the template `template` needs.
    #[must_use]
    pub fn resource_template<I: IntoIterator<Item = S>, S: Into<String>>(
        mut self,
        template: &str,
        scopes: I,
    ) -> Self {
        self.templates.insert(template.into(), owned(scopes));
        self
    }

    /// A token with `broad` also holds `narrower` (scope hierarchies).
    #[must_use]
    pub fn implies<I: IntoIterator<Item = S>, S: Into<String>>(
        mut self,
        broad: &str,
        narrower: I,
    ) -> Self {
        self.implies
            .entry(broad.into())
            .or_default()
            .extend(narrower.into_iter().map(Into::into));
        self
    }

    /// Whether lists hide what the token's scopes cannot use (default `true`). With
    /// `false` lists show everything and only uses are challenged.
    #[must_use]
    pub fn hide_unusable(mut self, hide: bool) -> Self {
        self.hide = hide;
        self
    }

    fn of(&self, component: Component<'_>) -> &[String] {
        let found = match component {
            Component::Tool(n) => self.tools.get(n),
            Component::Prompt(n) => self.prompts.get(n),
            Component::Resource(u) => self.resources.get(u),
            Component::ResourceTemplate(t) => self.templates.get(t),
            _ => None,
        };
        found.map_or(&[], Vec::as_slice)
    }

    /// Every scope the components need, the request-wide ones first, no repeats.
    fn needed(&self, components: &[Component<'_>]) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        let all = self
            .server
            .required_scopes()
            .iter()
            .chain(components.iter().flat_map(|c| self.of(*c)));
        for s in all {
            if !out.contains(&s.as_str()) {
                out.push(s);
            }
        }
        out
    }

    fn holds(&self, token: &TokenInfo, scope: &str) -> bool {
        token.has_scope(scope)
            || token
                .scopes()
                .iter()
                .any(|held| self.implies.get(held).is_some_and(|n| n.contains(scope)))
    }

    fn satisfied(&self, principal: Option<&Principal>, needed: &[&str]) -> bool {
        if needed.is_empty() {
            return true;
        }
        principal
            .and_then(TokenInfo::of_principal)
            .is_some_and(|t| needed.iter().all(|s| self.holds(t, s)))
    }
}

impl Authorizer for ScopePolicy {
    fn allows(&self, principal: Option<&Principal>, component: Component<'_>) -> bool {
        !self.hide || self.satisfied(principal, &self.needed(&[component]))
    }

    fn challenge(
        &self,
        principal: Option<&Principal>,
        components: &[Component<'_>],
    ) -> Option<AuthRejection> {
        let needed = self.needed(components);
        if self.satisfied(principal, &needed) {
            return None;
        }
        if principal.and_then(TokenInfo::of_principal).is_none() {
            return Some(AuthRejection::Unauthorized {
                www_authenticate: self.server.challenge(None, &needed),
            });
        }
        Some(AuthRejection::Forbidden {
            www_authenticate: Some(self.server.challenge(
                Some((
                    "insufficient_scope",
                    "The access token lacks scopes this operation needs",
                )),
                &needed,
            )),
        })
    }
}
