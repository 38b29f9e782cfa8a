//! [`RuntimeBuilder`]: collects the description of a server and validates it once.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use super::authz::{Authorizer, Refusal};
use super::catalogue::Catalogue;
use super::components::{Components, IntoResource};
use super::events::CHANGE_BACKLOG;
use super::input::StateSigner;
use super::pending::PendingRequests;
use super::prompt::Prompt;
use super::resource::ResourceTemplate;
use super::slots::Slots;
use super::tool::Tool;
use super::{Caches, Capabilities, Inner, Runtime};
use crate::model::{CacheHint, Icon, ServerInfo};
use crate::protocol::{Dialect, LogLevel, V2026_07_28};

/// Default number of items per list page.
pub const DEFAULT_PAGE_SIZE: usize = 100;

/// Why a runtime could not be built. Each variant names the offending item.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum BuildError {
    /// The server info is invalid.
    #[error("invalid server info: {0}")]
    InvalidServerInfo(String),
    /// No dialect is enabled.
    #[error("no protocol dialect is enabled")]
    NoProtocols,
    /// A dialect is enabled twice.
    #[error("protocol {0} is enabled twice")]
    DuplicateProtocol(&'static str),
    /// Two components share a name or URI.
    #[error("duplicate {kind} {name:?}")]
    Duplicate {
        /// `"tool"`, `"prompt"`, `"resource"` or `"resource template"`.
        kind: &'static str,
        /// The repeated name or URI.
        name: String,
    },
    /// A tool name is not 1–128 characters of `[A-Za-z0-9_.-/]`.
    #[error("invalid tool name {0:?}: use 1-128 characters of A-Z a-z 0-9 _ - . /")]
    InvalidToolName(String),
    /// A component has no handler.
    #[error("{kind} {name:?} has no handler")]
    MissingHandler {
        /// The kind of component.
        kind: &'static str,
        /// Its name or URI.
        name: String,
    },
    /// A tool schema is invalid.
    #[error("tool {tool:?}: invalid {which} schema: {reason}")]
    InvalidSchema {
        /// The tool.
        tool: String,
        /// `"input"` or `"output"`.
        which: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// A resource URI or template is invalid.
    #[error("invalid resource {uri:?}: {reason}")]
    InvalidResource {
        /// The URI or template.
        uri: String,
        /// What is wrong.
        reason: String,
    },
    /// The skills cannot be served.
    #[error("invalid skills: {0}")]
    InvalidSkills(String),
    /// A handler takes [`State`](crate::State) of a type nobody registered with
    /// [`RuntimeBuilder::with_state`].
    #[error(
        "{kind} {name:?} takes State<{state}>, which is not registered (RuntimeBuilder::with_state)"
    )]
    MissingState {
        /// The kind of component.
        kind: &'static str,
        /// Its name.
        name: String,
        /// The state's type.
        state: &'static str,
    },
    /// A lock was poisoned by a panic during an earlier update.
    #[error("the runtime's catalogue lock was poisoned by an earlier panic")]
    Poisoned,
    /// A capability is configured that no enabled dialect or component can back.
    #[error("capability {capability} is not supported: {reason}")]
    UnsupportedCapability {
        /// The capability, e.g. `tools.listChanged`.
        capability: &'static str,
        /// Why, naming the dialects concerned.
        reason: String,
    },
}

/// Describes a server; [`build`](Self::build) validates and freezes it.
#[must_use]
pub struct RuntimeBuilder {
    info: ServerInfo,
    instructions: Option<String>,
    protocols: Vec<&'static Dialect>,
    components: Components,
    page_size: usize,
    caches: Caches,
    logging: bool,
    list_changed: bool,
    subscribe: bool,
    /// Declare every component kind whatever the build registers (filled by `update`).
    declare_all: bool,
    legacy_log_level: LogLevel,
    state_key: Option<Vec<u8>>,
    state_ttl: Duration,
    server_requests: Option<Duration>,
    authorizer: Option<(Arc<dyn Authorizer>, Refusal)>,
    /// Declared extensions (`capabilities.extensions`).
    extensions: serde_json::Map<String, serde_json::Value>,
    /// What extensions attached; becomes the runtime's.
    slots: Slots,
    /// What extensions do at [`build`](Self::build), first, in the order they were added.
    hooks: Vec<BuildHook>,
    /// The deployment's shared bus, this instance's id on it, and what rate limits do
    /// while it is down (issue 35).
    bus: crate::bus::link::BusConfig,
    /// Middleware around every request ([`RuntimeBuilder::layer`]).
    pub(crate) layers: crate::middleware::Layers,
}

/// An extension's step at [`RuntimeBuilder::build`] (e.g. reading a directory).
type BuildHook =
    Box<dyn FnOnce(RuntimeBuilder) -> Result<RuntimeBuilder, BuildError> + Send + Sync>;

impl std::fmt::Debug for RuntimeBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RuntimeBuilder")
            .field("info", &self.info)
            .field("protocols", &self.protocols)
            .field("components", &self.components)
            .finish_non_exhaustive()
    }
}

impl RuntimeBuilder {
    pub(super) fn new(info: ServerInfo) -> Self {
        Self {
            info,
            instructions: None,
            protocols: vec![&V2026_07_28],
            components: Components::default(),
            page_size: DEFAULT_PAGE_SIZE,
            caches: Caches::default(),
            logging: false,
            list_changed: false,
            subscribe: false,
            declare_all: false,
            legacy_log_level: LogLevel::Info,
            state_key: None,
            state_ttl: Duration::from_secs(600),
            server_requests: None,
            authorizer: None,
            extensions: serde_json::Map::new(),
            bus: crate::bus::link::BusConfig::default(),
            slots: Slots::default(),
            hooks: Vec::new(),
            layers: crate::middleware::Layers::new(),
        }
    }

    /// Shares this instance's listen-stream changes, initialize-era cancellations and
    /// answers, and tools' rate limits with every instance on `bus` (PostgreSQL or Redis:
    /// crate `snodo-bus`; `docs/bus.md`). Without it each instance is alone, and
    /// nothing is published anywhere.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use snodo::bus::{Bus, MemoryBus};
    /// use snodo::Runtime;
    ///
    /// let bus: Arc<dyn Bus> = Arc::new(MemoryBus::new());
    /// let a = Runtime::builder("demo", "1.0.0").bus(Arc::clone(&bus)).build()?;
    /// let b = Runtime::builder("demo", "1.0.0").bus(bus).build()?;
    /// # let _ = (a, b);
    /// # Ok::<(), snodo::BuildError>(())
    /// ```
    pub fn bus(mut self, bus: Arc<dyn crate::bus::Bus>) -> Self {
        self.bus.bus = Some(bus);
        self
    }

    /// This instance's id on the bus (default: random); unique per live process.
    pub fn bus_instance(mut self, id: crate::bus::InstanceId) -> Self {
        self.bus.instance = Some(id);
        self
    }

    /// What a tool's `rate_limit` does while the bus is down (default
    /// [`WhenDown::Open`](crate::bus::WhenDown::Open): each instance alone).
    pub fn rate_limits_when_bus_down(mut self, when_down: crate::bus::WhenDown) -> Self {
        self.bus.when_down = when_down;
        self
    }

    /// Puts `value` in its type's slot of the runtime (for the extension that owns
    /// the type to read back).
    pub(crate) fn attach<T: std::any::Any + Send + Sync>(mut self, value: T) -> Self {
        self.slots.insert(value);
        self
    }

    /// What extensions attached so far.
    #[cfg_attr(not(feature = "skills"), allow(dead_code))]
    pub(crate) fn slots_mut(&mut self) -> &mut Slots {
        &mut self.slots
    }

    /// Declares extension `id` with `settings` (`capabilities.extensions`).
    pub(crate) fn declare_extension(mut self, id: &str, settings: serde_json::Value) -> Self {
        self.extensions.insert(id.to_owned(), settings);
        self
    }

    /// Runs `hook` first thing in [`build`](Self::build).
    #[cfg_attr(not(feature = "skills"), allow(dead_code))]
    pub(crate) fn on_build(
        mut self,
        hook: impl FnOnce(Self) -> Result<Self, BuildError> + Send + Sync + 'static,
    ) -> Self {
        self.hooks.push(Box::new(hook));
        self
    }

    /// Sets the display title.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.info.title = Some(title.into());
        self
    }

    /// Sets the description.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.info.description = Some(description.into());
        self
    }

    /// Sets the website URL.
    pub fn website_url(mut self, url: impl Into<String>) -> Self {
        self.info.website_url = Some(url.into());
        self
    }

    /// Adds an icon.
    pub fn icon(mut self, icon: Icon) -> Self {
        self.info.icons.push(icon);
        self
    }

    /// Sets the instructions sent in `server/discover` and `initialize`.
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// Declares the `tools`, `prompts`, `resources` and `completions` capabilities
    /// even when the build registers none of a kind: for a runtime whose catalogue is
    /// filled later through [`Runtime::update`](crate::Runtime::update) (e.g. by the
    /// mounts of `snodo-compose`), since capabilities are fixed at build.
    pub fn declare_all_kinds(mut self) -> Self {
        self.declare_all = true;
        self
    }

    /// Sets the enabled dialects, in preference order. The default is 2026-07-28 alone;
    /// initialize-era dialects are served only when listed here:
    ///
    /// ```
    /// use snodo::protocol::{V2025_06_18, V2025_11_25, V2026_07_28};
    /// let b = snodo::Runtime::builder("s", "1").protocols([&V2026_07_28, &V2025_11_25, &V2025_06_18]);
    /// # let _ = b;
    /// ```
    pub fn protocols<I: IntoIterator<Item = &'static Dialect>>(mut self, dialects: I) -> Self {
        self.protocols = dialects.into_iter().collect();
        self
    }

    /// Registers shared state: a handler that takes [`State<S>`](crate::State) gets a
    /// clone of `state` in each call (axum's `with_state`). One value per type; a
    /// second call with the same type replaces the first.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use snodo::{NoArguments, Runtime, State, Tool};
    ///
    /// #[derive(Clone, Default)]
    /// struct Db(Arc<std::sync::Mutex<Vec<String>>>);
    ///
    /// let runtime = Runtime::builder("s", "1")
    ///     .with_state(Db::default())
    ///     .tool(Tool::new("count").handler(|State(db): State<Db>, _: NoArguments| async move {
    ///         db.0.lock().map(|v| v.len().to_string()).unwrap_or_default()
    ///     }))
    ///     .build();
    /// assert!(runtime.is_ok());
    /// ```
    pub fn with_state<S: Clone + Send + Sync + 'static>(mut self, state: S) -> Self {
        self.components.states.insert(state);
        self
    }

    /// Registers a tool.
    pub fn tool(mut self, tool: Tool) -> Self {
        self.components.tools.push(tool);
        self
    }

    /// Registers a prompt.
    pub fn prompt(mut self, prompt: Prompt) -> Self {
        self.components.prompts.push(prompt);
        self
    }

    /// Registers a resource at a fixed URI, or a template
    /// ([`IntoResource`](crate::IntoResource)).
    pub fn resource(mut self, resource: impl IntoResource) -> Self {
        self.components.push_resource(resource);
        self
    }

    /// Registers a resource template.
    pub fn resource_template(mut self, template: ResourceTemplate) -> Self {
        self.components.templates.push(template);
        self
    }

    /// Sets the list page size (default 100; at least 1).
    pub fn page_size(mut self, size: usize) -> Self {
        self.page_size = size.max(1);
        self
    }

    /// Cache hint for `server/discover` (2026-07-28).
    pub fn discover_cache(mut self, hint: CacheHint) -> Self {
        self.caches.discover = hint;
        self
    }

    /// Cache hint for the four list methods (2026-07-28).
    pub fn list_cache(mut self, hint: CacheHint) -> Self {
        self.caches.lists = hint;
        self
    }

    /// Cache hint for `resources/read` (2026-07-28).
    pub fn read_cache(mut self, hint: CacheHint) -> Self {
        self.caches.reads = hint;
        self
    }

    /// Advertises the `logging` capability: handlers' log messages reach clients that
    /// ask for them on the calling request's stream.
    pub fn logging(mut self) -> Self {
        self.logging = true;
        self
    }

    /// The least severe level delivered to initialize-era clients, which set their level
    /// with `logging/setLevel` on an earlier request that a stateless server cannot
    /// remember (default `info`).
    pub fn legacy_log_level(mut self, level: LogLevel) -> Self {
        self.legacy_log_level = level;
        self
    }

    /// Advertises `listChanged` on tools, prompts and resources: clients hear about
    /// catalogue changes ([`Runtime::update`]) on `subscriptions/listen` streams.
    /// Refused together with an initialize-era dialect, which cannot deliver the
    /// notifications without a session.
    pub fn list_changed(mut self, on: bool) -> Self {
        self.list_changed = on;
        self
    }

    /// Advertises `resources.subscribe`: `subscriptions/listen` streams may watch
    /// resource URIs ([`Runtime::notify_resource_updated`]). Refused together with an
    /// initialize-era dialect.
    pub fn resource_subscriptions(mut self, on: bool) -> Self {
        self.subscribe = on;
        self
    }

    /// The key that signs `requestState` of multi round-trip requests (HMAC-SHA256).
    /// Give every instance of a deployment the same key so that any of them accepts a
    /// retry; without one, a random per-process key is used.
    pub fn request_state_key(mut self, key: impl Into<Vec<u8>>) -> Self {
        self.state_key = Some(key.into());
        self
    }

    /// How long a `requestState` stays valid (default 10 minutes).
    pub fn request_state_ttl(mut self, ttl: Duration) -> Self {
        self.state_ttl = ttl;
        self
    }

    /// Lets handlers ask initialize-era clients for input (sampling, elicitation,
    /// roots) with server-to-client requests on the calling request's SSE stream, each
    /// waiting up to `timeout` for the client's answer. The answer is a separate POST
    /// routed by a server-minted id, so it must reach the same process: behind a load
    /// balancer, route on that id or keep this off.
    pub fn legacy_server_requests(mut self, timeout: Duration) -> Self {
        self.server_requests = Some(timeout);
        self
    }

    /// Installs an authorization hook: lists show only what it allows, and other uses
    /// are answered with `refusal`.
    pub fn authorizer(mut self, authorizer: impl Authorizer, refusal: Refusal) -> Self {
        self.authorizer = Some((Arc::new(authorizer), refusal));
        self
    }

    /// Validates everything and freezes the runtime.
    pub fn build(mut self) -> Result<Runtime, BuildError> {
        for hook in std::mem::take(&mut self.hooks) {
            self = hook(self)?;
        }
        self.info
            .validate()
            .map_err(BuildError::InvalidServerInfo)?;
        if self.protocols.is_empty() {
            return Err(BuildError::NoProtocols);
        }
        for (i, d) in self.protocols.iter().enumerate() {
            if self.protocols[..i].contains(d) {
                return Err(BuildError::DuplicateProtocol(d.version()));
            }
        }
        let legacy: Vec<_> = self
            .protocols
            .iter()
            .filter(|d| !d.serves(crate::protocol::Method::SubscriptionsListen))
            .map(|d| d.version())
            .collect();
        for (on, capability) in [
            (self.list_changed, "listChanged"),
            (self.subscribe, "resources.subscribe"),
        ] {
            if on && !legacy.is_empty() {
                let reason = format!(
                    "initialize-era dialects cannot deliver it without a session: {}",
                    legacy.join(", ")
                );
                return Err(BuildError::UnsupportedCapability { capability, reason });
            }
        }
        self.components.bind()?;
        let catalogue = Catalogue::build(self.components.clone(), &self.protocols, &self.info)?;
        let all = self.declare_all;
        let capabilities = Capabilities {
            tools: all || catalogue.has_tools(),
            prompts: all || catalogue.has_prompts(),
            resources: all || catalogue.has_resources(),
            completions: all || catalogue.has_completions(),
            logging: self.logging,
            list_changed: self.list_changed,
            subscribe: self.subscribe,
        };
        let versions = self.protocols.iter().map(|d| d.version()).collect();
        let key = self.state_key.unwrap_or_else(random_key);
        let signer =
            StateSigner::new(&key, self.state_ttl).ok_or(BuildError::UnsupportedCapability {
                capability: "requestState",
                reason: "the request state key was refused".into(),
            })?;
        let link = self.bus.link();
        Ok(Runtime {
            inner: Arc::new(Inner {
                info: self.info,
                instructions: self.instructions,
                dialects: self.protocols,
                versions,
                catalogue: RwLock::new(Arc::new(catalogue)),
                components: Mutex::new(self.components),
                changes: tokio::sync::broadcast::channel(CHANGE_BACKLOG).0,
                watched: tokio::sync::watch::channel(Default::default()).0,
                page_size: self.page_size,
                envelopes: super::envelopes::Envelopes::new(&self.caches),
                capabilities,
                legacy_log_level: self.logging.then_some(self.legacy_log_level),
                signer,
                pending: Arc::new(link.as_ref().map_or_else(PendingRequests::default, |l| {
                    PendingRequests::held_by(l.me().clone())
                })),
                server_requests: self.server_requests,
                authorizer: self.authorizer,
                extensions: self.extensions,
                slots: self.slots,
                bus: link,
                layers: self.layers,
            }),
        })
    }
}

/// 32 bytes from the process's random hasher seeds.
fn random_key() -> Vec<u8> {
    (0u64..4)
        .flat_map(|i| RandomState::new().hash_one(i).to_le_bytes())
        .collect()
}

#[cfg(test)]
mod tests;
