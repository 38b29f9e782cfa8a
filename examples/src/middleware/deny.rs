//! A deny-list of tools by name or glob, for everyone or for one principal: a call of a
//! denied tool is refused (`-32602`, as an unknown tool) and the tool is left out of
//! the caller's `tools/list`.

use glob::{Pattern, PatternError};
use serde_json::Value;
use snodo::middleware::{Middleware, Next, Outcome, Reply, Request};
use snodo::{Principal, RpcError};

/// Tools refused by glob (`deploy_*`), to everyone or to one principal.
#[derive(Debug, Default)]
pub struct DenyList {
    /// (principal the rule is for, or everyone; the pattern).
    rules: Vec<(Option<String>, Pattern)>,
    /// Principals no rule applies to.
    exempt: Vec<String>,
}

impl DenyList {
    /// An empty list: every tool allowed.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Denies tools matching `pattern` to everyone.
    pub fn deny(mut self, pattern: &str) -> Result<Self, PatternError> {
        self.rules.push((None, Pattern::new(pattern)?));
        Ok(self)
    }

    /// Denies tools matching `pattern` to the principal `id`.
    pub fn deny_for(mut self, id: &str, pattern: &str) -> Result<Self, PatternError> {
        self.rules
            .push((Some(id.to_owned()), Pattern::new(pattern)?));
        Ok(self)
    }

    /// Lets the principal `id` use every tool.
    #[must_use]
    pub fn exempt(mut self, id: &str) -> Self {
        self.exempt.push(id.to_owned());
        self
    }

    /// Whether `principal` may use the tool `name`.
    #[must_use]
    pub fn allows(&self, principal: Option<&Principal>, name: &str) -> bool {
        let id = principal.map(Principal::id);
        if id.is_some_and(|id| self.exempt.iter().any(|e| e == id)) {
            return true;
        }
        !self.rules.iter().any(|(who, pattern)| {
            who.as_deref().is_none_or(|w| Some(w) == id) && pattern.matches(name)
        })
    }
}

impl Middleware for DenyList {
    async fn call(&self, request: Request<'_>, next: Next<'_>) -> Outcome {
        let principal = request.principal().cloned();
        match request.method() {
            "tools/call" => {
                let name = request.target().unwrap_or_default();
                if !self.allows(principal.as_ref(), name) {
                    let e = RpcError::invalid_params(format!("Unknown tool: {name}"));
                    return Err(e.into());
                }
                next.run(request).await
            }
            "tools/list" => {
                let reply = next.run(request).await?;
                let mut result = reply.to_json();
                if let Some(Value::Array(tools)) = result.get_mut("tools") {
                    tools.retain(|t| {
                        let name = t.get("name").and_then(Value::as_str).unwrap_or_default();
                        self.allows(principal.as_ref(), name)
                    });
                }
                Ok(Reply::new(result))
            }
            _ => next.run(request).await,
        }
    }
}
