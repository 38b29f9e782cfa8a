//! The runtime: an immutable description of a server (identity, components, enabled
//! dialects, policies), built once and shared by every transport.

#![warn(unreachable_pub)]

pub(crate) mod authz;
pub(crate) mod completion;
pub(crate) mod components;
pub(crate) mod context;
pub(crate) mod cursor;
pub(crate) mod envelopes;
pub(crate) mod error;
pub(crate) mod events;
pub(crate) mod handler;
pub(crate) mod input;
pub(crate) mod param_headers;
pub(crate) mod pending;
pub(crate) mod policy;
pub(crate) mod prompt;
pub(crate) mod resource;
pub(crate) mod slots;
pub(crate) mod tool;
pub(crate) mod uri_template;
pub(crate) mod watched;
pub(crate) mod worker;

mod builder;
pub(crate) mod catalogue;
mod view;

use std::fmt;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

pub use builder::{BuildError, DEFAULT_PAGE_SIZE, RuntimeBuilder};
pub(crate) use catalogue::Catalogue;

use crate::model::{CacheHint, ServerInfo};
use crate::protocol::{Dialect, LogLevel};

impl Runtime {
    /// Which capabilities the server advertises.
    pub(crate) fn capabilities(&self) -> Capabilities {
        self.inner.capabilities
    }

    /// The `ServerCapabilities` object `dialect` sends: the capabilities, and the
    /// declared extensions where the dialect has `capabilities.extensions`.
    pub(crate) fn capabilities_for(&self, dialect: &Dialect) -> serde_json::Value {
        let mut caps = self.inner.capabilities.to_json();
        if dialect.has_extensions() && !self.inner.extensions.is_empty() {
            if let serde_json::Value::Object(m) = &mut caps {
                m.insert(
                    "extensions".into(),
                    serde_json::Value::Object(self.inner.extensions.clone()),
                );
            }
        }
        caps
    }

    /// The log level for initialize-era requests before a client sets one.
    pub(crate) fn legacy_log_level(&self) -> Option<LogLevel> {
        self.inner.legacy_log_level
    }

    /// Initialize-era server-to-client requests waiting for their answers.
    pub(crate) fn pending_requests(&self) -> &Arc<pending::PendingRequests> {
        &self.inner.pending
    }

    /// The current catalogue.
    pub(crate) fn catalogue(&self) -> Arc<Catalogue> {
        match self.inner.catalogue.read() {
            Ok(c) => Arc::clone(&c),
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }

    /// Changes the catalogue at run time (add or remove tools, prompts, resources).
    /// The new catalogue is validated like at build time; on success it replaces the
    /// old one at once for every new request, and `subscriptions/listen` streams that
    /// asked for it hear which lists changed.
    pub fn update(&self, edit: impl FnOnce(&mut components::Components)) -> Result<(), BuildError> {
        let mut sources = self
            .inner
            .components
            .lock()
            .map_err(|_| BuildError::Poisoned)?;
        let mut next = sources.clone();
        edit(&mut next);
        next.bind()?;
        let built = Catalogue::build(next.clone(), &self.inner.dialects, &self.inner.info)?;
        let old = self.catalogue();
        let changes = old.changes_to(&built);
        *self
            .inner
            .catalogue
            .write()
            .map_err(|_| BuildError::Poisoned)? = Arc::new(built);
        *sources = next;
        drop(sources);
        for change in changes {
            self.announce(change);
        }
        Ok(())
    }

    /// Tells `subscriptions/listen` streams subscribed to `uri` that it changed (with a
    /// bus, on every instance of the deployment).
    pub fn notify_resource_updated(&self, uri: &str) {
        self.announce(events::Change::ResourceUpdated(uri.into()));
    }

    /// The resource URIs that this instance's open `subscriptions/listen` streams
    /// watch (`resourceSubscriptions`, as the server accepted them), each with how
    /// many streams watch it; it changes as streams open and close. A runtime that
    /// serves another server's resources subscribes to these there and calls
    /// [`notify_resource_updated`](Self::notify_resource_updated) when that server
    /// reports a change (`snodo-compose` mounts do). Per instance: with a bus, each
    /// instance subscribes for its own streams, and the updates reach every instance's.
    #[must_use]
    pub fn watched_resources(
        &self,
    ) -> tokio::sync::watch::Receiver<std::collections::BTreeMap<String, usize>> {
        self.inner.watched.subscribe()
    }

    /// Counts `uris` as watched until the result is dropped (a listen stream).
    pub(crate) fn watch_resources(&self, uris: &[String]) -> watched::Watching {
        watched::Watching::new(&self.inner.watched, uris)
    }

    /// Delivers a change to the listen streams: this instance's, or through the bus
    /// every instance's.
    fn announce(&self, change: events::Change) {
        match &self.inner.bus {
            None => {
                let _ = self.inner.changes.send(change);
            }
            Some(link) => link.publish(change, &self.inner.changes),
        }
    }

    /// What one listen stream hears: catalogue and resource changes.
    pub(crate) fn subscribe_changes(&self) -> events::Feed {
        events::Feed::new(
            self.inner.changes.subscribe(),
            self.inner.bus.as_ref().map(|l| l.events()),
        )
    }

    /// Calls between the instances of the deployment ([`crate::bus::Peers`]), when a
    /// bus was configured ([`RuntimeBuilder::bus`]).
    #[must_use]
    pub fn peers(&self) -> Option<crate::bus::Peers> {
        self.inner
            .bus
            .as_ref()
            .map(|l| crate::bus::Peers::new(Arc::clone(l)))
    }

    /// The bus link, if a bus was configured ([`RuntimeBuilder::bus`]).
    pub(crate) fn bus(&self) -> Option<&Arc<crate::bus::link::Link>> {
        self.inner.bus.as_ref()
    }

    /// Whether `principal` may see and use `component`.
    pub(crate) fn allows(
        &self,
        principal: Option<&context::Principal>,
        component: authz::Component<'_>,
    ) -> bool {
        self.inner
            .authorizer
            .as_ref()
            .is_none_or(|(a, _)| a.allows(principal, component))
    }

    /// Whether `principal` may use `components` (all used by one operation, the
    /// first is the one named): the authorizer's challenge, else its configured refusal
    /// (`concealed`: the error for a component that does not exist).
    pub(crate) fn check_use(
        &self,
        principal: Option<&context::Principal>,
        components: &[authz::Component<'_>],
        concealed: impl FnOnce() -> crate::protocol::RpcError,
    ) -> Result<(), error::ErrorAnswer> {
        let Some((authorizer, refusal)) = self.inner.authorizer.as_ref() else {
            return Ok(());
        };
        if let Some(r) = authorizer.challenge(principal, components) {
            return Err(error::ErrorAnswer::challenge(r));
        }
        if components.iter().all(|c| authorizer.allows(principal, *c)) {
            return Ok(());
        }
        Err(match refusal {
            authz::Refusal::Error(e) => e.clone(),
            authz::Refusal::Conceal => concealed(),
        }
        .into())
    }

    /// The server's `instructions`, if any.
    pub(crate) fn instructions(&self) -> Option<&str> {
        self.inner.instructions.as_deref()
    }

    /// Items per page of every paginated list.
    pub(crate) fn page_size(&self) -> usize {
        self.inner.page_size
    }

    /// Whether an authorizer filters what principals see and use.
    pub(crate) fn has_authorizer(&self) -> bool {
        self.inner.authorizer.is_some()
    }

    /// The 2026-07-28 result envelopes, serialised once.
    pub(crate) fn envelopes(&self) -> &envelopes::Envelopes {
        &self.inner.envelopes
    }

    /// What seals and opens `requestState`.
    pub(crate) fn signer(&self) -> &input::StateSigner {
        &self.inner.signer
    }

    /// How long an initialize-era server-to-client request waits; `None`: not enabled.
    pub(crate) fn server_requests(&self) -> Option<Duration> {
        self.inner.server_requests
    }

    /// What extensions attached to the runtime (read through their own accessors).
    pub(crate) fn slots(&self) -> &slots::Slots {
        &self.inner.slots
    }

    /// The middleware around every request.
    pub(crate) fn layers(&self) -> &crate::middleware::Layers {
        &self.inner.layers
    }

    /// Delivers a client's answer to an initialize-era server-to-client request.
    /// Returns `false` when no request of this process waits for `id`.
    /// With a bus, an answer for a request another instance holds (its id names it) is
    /// forwarded there, and this returns `true`.
    pub(crate) fn deliver_answer(&self, id: &str, answer: pending::Answer) -> bool {
        if !self.inner.pending.has(id) {
            if let Some(link) = &self.inner.bus {
                return link.forward_answer(id, answer);
            }
        }
        self.inner.pending.deliver(id, answer)
    }
}

/// A built server: what it is, what it offers and which dialects it speaks.
///
/// Cheap to clone (one `Arc`). Build one with [`Runtime::builder`].
#[derive(Clone)]
pub struct Runtime {
    inner: Arc<Inner>,
}

/// The runtime's description: read through the accessors of [`Runtime`] outside
/// `runtime/` (its fields are private to this module and its children).
pub(crate) struct Inner {
    info: ServerInfo,
    instructions: Option<String>,
    /// Enabled dialects in preference order.
    dialects: Vec<&'static Dialect>,
    /// Their versions, same order (`supportedVersions`, `-32022` data).
    versions: Vec<&'static str>,
    /// The current catalogue; replaced whole by [`Runtime::update`].
    catalogue: RwLock<Arc<Catalogue>>,
    /// What the catalogue is built from.
    components: Mutex<components::Components>,
    /// Changes for `subscriptions/listen` streams.
    changes: tokio::sync::broadcast::Sender<events::Change>,
    /// The resource URIs this instance's listen streams watch.
    watched: tokio::sync::watch::Sender<watched::Counts>,
    page_size: usize,
    envelopes: envelopes::Envelopes,
    capabilities: Capabilities,
    legacy_log_level: Option<LogLevel>,
    /// Seals `requestState` (2026-07-28 multi round-trip requests).
    signer: input::StateSigner,
    /// Initialize-era server-to-client requests waiting for their answers.
    pending: Arc<pending::PendingRequests>,
    /// How long a server-to-client request waits; `None`: not enabled.
    server_requests: Option<Duration>,
    /// Who may see and use what (none: everyone, everything).
    authorizer: Option<(Arc<dyn authz::Authorizer>, authz::Refusal)>,
    /// Declared extensions: identifier → settings (`capabilities.extensions`, in the
    /// dialects that have it).
    extensions: serde_json::Map<String, serde_json::Value>,
    /// What extensions attached (tasks, skills, metrics, …): one value per type.
    slots: slots::Slots,
    /// The deployment's shared bus (issue 35); `None`: this instance alone.
    bus: Option<Arc<crate::bus::link::Link>>,
    /// Middleware around every request (none: nothing on the path).
    layers: crate::middleware::Layers,
}

/// Cache hints per kind of cacheable result.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Caches {
    pub(crate) discover: CacheHint,
    pub(crate) lists: CacheHint,
    pub(crate) reads: CacheHint,
}

/// Which server capabilities are advertised.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Capabilities {
    pub(crate) tools: bool,
    pub(crate) prompts: bool,
    pub(crate) resources: bool,
    pub(crate) completions: bool,
    pub(crate) logging: bool,
    /// `listChanged` on tools, prompts and resources (2026-07-28 listen streams).
    pub(crate) list_changed: bool,
    /// `resources.subscribe` (2026-07-28 listen streams).
    pub(crate) subscribe: bool,
}

impl Capabilities {
    /// The `ServerCapabilities` object (identical in the three revisions for the
    /// capabilities a stateless server can honour).
    pub(crate) fn to_json(self) -> serde_json::Value {
        let mut caps = serde_json::Map::new();
        for (on, key) in [
            (self.tools, "tools"),
            (self.prompts, "prompts"),
            (self.resources, "resources"),
            (self.completions, "completions"),
            (self.logging, "logging"),
        ] {
            if on {
                let mut cap = serde_json::Map::new();
                if self.list_changed && matches!(key, "tools" | "prompts" | "resources") {
                    cap.insert("listChanged".into(), serde_json::Value::Bool(true));
                }
                if self.subscribe && key == "resources" {
                    cap.insert("subscribe".into(), serde_json::Value::Bool(true));
                }
                caps.insert(key.to_owned(), serde_json::Value::Object(cap));
            }
        }
        serde_json::Value::Object(caps)
    }
}

impl fmt::Debug for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runtime")
            .field("name", &self.inner.info.name())
            .field("versions", &self.inner.versions)
            .finish_non_exhaustive()
    }
}

impl Runtime {
    /// Starts describing a server named `name` at `version`.
    pub fn builder(name: impl Into<String>, version: impl Into<String>) -> RuntimeBuilder {
        RuntimeBuilder::new(ServerInfo::new(name, version))
    }

    /// The server's identity.
    #[must_use]
    pub fn server_info(&self) -> &ServerInfo {
        &self.inner.info
    }

    /// The enabled protocol versions in preference order.
    #[must_use]
    pub fn supported_versions(&self) -> &[&'static str] {
        &self.inner.versions
    }

    /// The enabled dialects in preference order.
    #[must_use]
    pub fn dialects(&self) -> &[&'static Dialect] {
        &self.inner.dialects
    }

    /// The enabled dialect for `version`, if any.
    pub(crate) fn dialect(&self, version: &str) -> Option<&'static Dialect> {
        self.inner
            .dialects
            .iter()
            .copied()
            .find(|d| d.version() == version)
    }

    /// The 2026-07-28 dialect, if enabled.
    pub(crate) fn stateless_dialect(&self) -> Option<&'static Dialect> {
        self.inner
            .dialects
            .iter()
            .copied()
            .find(|d| d.is_stateless())
    }

    /// The enabled dialect whose requests carry no version header (2025-03-26), if any:
    /// what a request without `MCP-Protocol-Version` is taken to speak.
    pub(crate) fn headerless_dialect(&self) -> Option<&'static Dialect> {
        self.inner
            .dialects
            .iter()
            .copied()
            .find(|d| !d.has_version_header())
    }

    /// The first enabled initialize-era dialect, if any.
    pub(crate) fn first_initialize_dialect(&self) -> Option<&'static Dialect> {
        self.inner
            .dialects
            .iter()
            .copied()
            .find(|d| !d.is_stateless())
    }
}
