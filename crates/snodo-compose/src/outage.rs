//! [`Outages`]: a call to a component its mount took out while the backend is down is
//! answered with an error naming the backend, not the front's unknown-component error.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use snodo::middleware::{Middleware, Next, Outcome, Request};
use snodo::{HandlerError, RpcError, UriTemplate};

/// Front names (tools, prompts, resource URIs and templates) whose backend is down, and
/// why.
/// Install it on the front runtime with
/// [`RuntimeBuilder::layer`](snodo::RuntimeBuilder::layer) and give it to each mount
/// with [`Mount::report_outages`](crate::Mount::report_outages); while a mount's
/// backend is down, a `tools/call`, `prompts/get` or `resources/read` of one of its
/// components gets `-32603` `backend "NAME" is unavailable: …` (the components are
/// still out of the lists); a `resources/read` of a URI that one of its templates
/// matches too. Cheap to clone: clones share the names.
///
/// ```
/// use snodo::Runtime;
/// use snodo_compose::Outages;
/// let outages = Outages::new();
/// let front = Runtime::builder("front", "1").layer(outages.clone()).build();
/// assert!(front.is_ok());
/// ```
#[derive(Clone, Debug, Default)]
pub struct Outages {
    /// Front name → (the mount that took it out, the error to answer).
    names: Arc<Mutex<HashMap<String, (u64, String)>>>,
    /// Front URI templates taken out: (the mount, the template, the error to answer).
    templates: Arc<Mutex<Vec<(u64, UriTemplate, String)>>>,
}

impl Outages {
    /// No outage yet.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// The names `mount` took out, answered with `message` until it lists again.
    pub(crate) fn mark(&self, mount: u64, names: impl IntoIterator<Item = String>, message: &str) {
        if let Ok(mut m) = self.names.lock() {
            for n in names {
                m.insert(n, (mount, message.to_owned()));
            }
        }
    }

    /// The front URI templates `mount` took out, answered with `message` for the URIs
    /// they match until it lists again.
    pub(crate) fn mark_templates(
        &self,
        mount: u64,
        templates: impl IntoIterator<Item = String>,
        message: &str,
    ) {
        if let Ok(mut t) = self.templates.lock() {
            for source in templates {
                // The front accepted it when it was mounted: it parses.
                if let Ok(parsed) = UriTemplate::parse(&source) {
                    t.push((mount, parsed, message.to_owned()));
                }
            }
        }
    }

    /// Forgets the names of `mount` (it lists again, or it was unmounted).
    pub(crate) fn clear(&self, mount: u64) {
        if let Ok(mut m) = self.names.lock() {
            m.retain(|_, (by, _)| *by != mount);
        }
        if let Ok(mut t) = self.templates.lock() {
            t.retain(|(by, _, _)| *by != mount);
        }
    }

    fn message(&self, method: &str, name: &str) -> Option<String> {
        if let Some((_, m)) = self.names.lock().ok()?.get(name) {
            return Some(m.clone());
        }
        if method != "resources/read" {
            return None;
        }
        let t = self.templates.lock().ok()?;
        t.iter()
            .find(|(_, t, _)| t.matches(name).is_some())
            .map(|(_, _, m)| m.clone())
    }
}

impl Middleware for Outages {
    async fn call(&self, request: Request<'_>, next: Next<'_>) -> Outcome {
        if matches!(
            request.method(),
            "tools/call" | "prompts/get" | "resources/read"
        ) {
            if let Some(m) = request
                .target()
                .and_then(|t| self.message(request.method(), t))
            {
                return Err(HandlerError::Protocol(RpcError::internal(m)));
            }
        }
        next.run(request).await
    }
}
