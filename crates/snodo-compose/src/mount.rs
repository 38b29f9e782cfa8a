//! [`Mount`]: a source's components kept in a front runtime's catalogue — listed at
//! mount, listed again when the source announces a change, removed while the source is
//! down (logged and counted) and put back when it returns.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use snodo::Runtime;
use tokio::sync::{Notify, watch};

use crate::mirror::{self, Forward, Item};
use crate::outage::Outages;
use crate::source::{Listing, Source, SourceError};
use crate::transform::Transforms;
use crate::visibility::{Gate, Kind, Visible};

/// Where a mount stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Status {
    /// Not listed yet.
    Connecting,
    /// Mounted: how many front components it provides, and how many times it listed.
    Up {
        /// Components in the front catalogue.
        components: usize,
        /// Successful listings so far.
        generation: u64,
    },
    /// The source could not be listed: its components are out of the front's lists.
    Down(String),
    /// As `Down`, while the source starts its connection again after a few failures
    /// in a row (a stdio child that exited, backing off before its restart; after 5
    /// failures in a row an `McpSource` is `Down`): why it failed last.
    Restarting(String),
}

/// How often a mount checks an idle source, and how it retries one that is down.
#[derive(Clone, Copy, Debug)]
pub struct MountOptions {
    /// Between checks of a source that is up (default 5 s).
    pub health_interval: Duration,
    /// The first retry of a source that is down (default 250 ms), doubled up to
    /// `max_backoff` (default 5 s).
    pub min_backoff: Duration,
    /// The longest wait between retries.
    pub max_backoff: Duration,
    /// How long a listing or a check of the source may take (default 30 s): a
    /// backend that does not answer in time is down (its components leave the lists).
    pub check_timeout: Duration,
}

impl Default for MountOptions {
    fn default() -> Self {
        Self {
            health_interval: Duration::from_secs(5),
            min_backoff: Duration::from_millis(250),
            max_backoff: Duration::from_secs(5),
            check_timeout: Duration::from_secs(30),
        }
    }
}

/// The names a mount put in the front catalogue, and whether it was dropped (then
/// nothing is installed again: a listing that finishes on another worker after the
/// drop must not put its components back). Held while the catalogue is changed.
#[derive(Default)]
struct Installed {
    names: Vec<(Kind, String)>,
    dropped: bool,
}

struct Shared {
    front: Runtime,
    fwd: Arc<Forward>,
    status: watch::Sender<Status>,
    installed: std::sync::Mutex<Installed>,
    downs: AtomicU64,
    id: u64,
    /// Where the names taken out while the backend is down are reported.
    outages: std::sync::Mutex<Option<Outages>>,
}

/// Tells mounts apart in [`Outages`].
static MOUNTS: AtomicU64 = AtomicU64::new(0);

impl Shared {
    fn outages(&self) -> Option<Outages> {
        self.outages.lock().ok().and_then(|o| o.clone())
    }
}

/// A source mounted in a front runtime. Dropping it unmounts: its components leave
/// the front catalogue.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use snodo::{NoArguments, Runtime, Tool};
/// use snodo_compose::{McpSource, Mount, Status, Transforms};
/// let backend = Runtime::builder("backend", "1")
///     .tool(Tool::new("hello").description("Says hi").handler(|_: NoArguments| async { "hi" }))
///     .build().unwrap();
/// let front = Runtime::builder("front", "1").build().unwrap();
/// let mount = Mount::new(&front, McpSource::runtime("b", backend), Transforms::new().namespace("b"));
/// let status = mount.ready(std::time::Duration::from_secs(5)).await;
/// assert!(matches!(status, Status::Up { components: 1, .. }));
/// # }
/// ```
pub struct Mount {
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
    /// The source's resource subscriptions for the front's listen streams.
    follower: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for Mount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mount")
            .field("source", &self.shared.fwd.source.name())
            .field("status", &self.status())
            .finish_non_exhaustive()
    }
}

impl Mount {
    /// Mounts `source` in `front` with `transforms` (default [`MountOptions`]). Must be
    /// called inside a Tokio runtime: the mount lists in a task of its own.
    pub fn new(front: &Runtime, source: impl Source, transforms: Transforms) -> Self {
        Self::with_options(front, Arc::new(source), transforms, MountOptions::default())
    }

    /// [`new`](Self::new) with a shared source and options.
    pub fn with_options(
        front: &Runtime,
        source: Arc<dyn Source>,
        transforms: Transforms,
        options: MountOptions,
    ) -> Self {
        let shared = Arc::new(Shared {
            front: front.clone(),
            fwd: Arc::new(Forward {
                source,
                transforms,
                poke: Arc::new(Notify::new()),
                limits: std::sync::Mutex::default(),
            }),
            status: watch::channel(Status::Connecting).0,
            installed: std::sync::Mutex::new(Installed::default()),
            downs: AtomicU64::new(0),
            outages: std::sync::Mutex::new(None),
            id: MOUNTS.fetch_add(1, Ordering::Relaxed),
        });
        let task = tokio::spawn(run(Arc::clone(&shared), options));
        let follower = tokio::spawn(crate::follow::follow(
            front.clone(),
            Arc::clone(&shared.fwd),
            shared.status.subscribe(),
        ));
        Self {
            shared,
            task,
            follower,
        }
    }

    /// Where the mount stands now.
    #[must_use]
    pub fn status(&self) -> Status {
        self.shared.status.borrow().clone()
    }

    /// How many times the source went down.
    #[must_use]
    pub fn down_count(&self) -> u64 {
        self.shared.downs.load(Ordering::Relaxed)
    }

    /// While the backend is down, a call to one of the components this mount took out
    /// is answered by `outages` (installed on the front) with an error naming the
    /// backend.
    #[must_use]
    pub fn report_outages(self, outages: &Outages) -> Self {
        if let Ok(mut o) = self.shared.outages.lock() {
            *o = Some(outages.clone());
        }
        self
    }

    /// Lists the source again now.
    pub fn refresh(&self) {
        self.shared.fwd.poke.notify_one();
    }

    /// Waits (at most `limit`) until `pred` holds for the status, and returns it.
    pub async fn wait_for(&self, limit: Duration, pred: impl Fn(&Status) -> bool) -> Status {
        let mut rx = self.shared.status.subscribe();
        let _ = tokio::time::timeout(limit, rx.wait_for(|s| pred(s))).await;
        self.status()
    }

    /// Waits (at most `limit`) for the first listing to succeed or fail.
    pub async fn ready(&self, limit: Duration) -> Status {
        self.wait_for(limit, |s| *s != Status::Connecting).await
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        self.task.abort();
        self.follower.abort();
        // The task may be inside `install` on another worker: the lock waits for it,
        // and the flag keeps anything from being installed after.
        let Ok(mut installed) = self.shared.installed.lock() else {
            return;
        };
        installed.dropped = true;
        uninstall(&self.shared, &mut installed);
        if let Some(o) = self.shared.outages() {
            o.clear(self.shared.id);
        }
    }
}

fn uninstall(shared: &Shared, installed: &mut Installed) {
    let old = std::mem::take(&mut installed.names);
    if old.is_empty() {
        return;
    }
    // The components leave first, their visibility rules after: never a moment when
    // a hidden component is served without its rule.
    if let Err(e) = shared.front.update(|c| remove(c, &old)) {
        tracing::error!(source = %shared.fwd.source.name(), error = %e, "could not unmount");
    }
    clear_rules(shared, &old, &[]);
}

/// Clears the visibility rules of `names` except those in `keep` (still served).
fn clear_rules(shared: &Shared, names: &[(Kind, String)], keep: &[(Kind, String)]) {
    if let Some((gate, _)) = &shared.fwd.transforms.visibility {
        for (k, n) in names.iter().filter(|kn| !keep.contains(kn)) {
            gate.clear(*k, n);
        }
    }
}

fn remove(c: &mut snodo::Components, old: &[(Kind, String)]) {
    for (k, n) in old {
        match k {
            Kind::Tool => c.remove_tool(n),
            Kind::Prompt => c.remove_prompt(n),
            Kind::Resource => c.remove_resource(n),
            Kind::Template => c.remove_template(n),
        };
    }
}

/// Adds one item unless a component of that name that is not the mount's exists; its
/// visibility rule (if the mount has one) is set before the component is published.
fn add(
    c: &mut snodo::Components,
    item: Item,
    placed: &mut Vec<(Kind, String)>,
    source: &str,
    visibility: Option<&(Gate, Visible)>,
) {
    let (kind, name) = match &item {
        Item::Tool(n, _) => (Kind::Tool, n.clone()),
        Item::Prompt(n, _) => (Kind::Prompt, n.clone()),
        Item::Resource(n, _) => (Kind::Resource, n.clone()),
        Item::Template(n, _) => (Kind::Template, n.clone()),
    };
    let taken = match kind {
        Kind::Tool => c.has_tool(&name),
        Kind::Prompt => c.has_prompt(&name),
        Kind::Resource => c.has_resource(&name),
        Kind::Template => c.has_template(&name),
    };
    if taken {
        tracing::warn!(source, component = %name, "name already served at the front: left out");
        return;
    }
    if let Some((gate, rule)) = visibility {
        gate.set(kind, &name, Arc::clone(rule));
    }
    match item {
        Item::Tool(_, t) => c.add_tool(t),
        Item::Prompt(_, p) => c.add_prompt(p),
        Item::Resource(_, r) => c.add_resource(r),
        Item::Template(_, t) => c.add_template(t),
    }
    placed.push((kind, name));
}

fn install(shared: &Shared, listing: &Listing) -> usize {
    let Ok(mut installed) = shared.installed.lock() else {
        return 0;
    };
    if installed.dropped {
        return 0;
    }
    let old = std::mem::take(&mut installed.names);
    let source = shared.fwd.source.name().to_owned();
    let items = mirror::items(&shared.fwd, listing);
    let visibility = shared.fwd.transforms.visibility.as_ref();
    let mut placed = Vec::new();
    // Every name given a rule (one that fails to be added keeps none).
    let mut ruled = Vec::new();
    let mut pending = Some(items);
    // One update: the old set leaves and the new one arrives at once. The front's lists
    // are then put in name order: backends finish mounting (and come back) in any order,
    // which differs between instances, and a list cursor is good only where the order
    // is the same.
    let all = shared.front.update(|c| {
        remove(c, &old);
        for item in pending.take().into_iter().flatten() {
            add(c, item, &mut placed, &source, visibility);
        }
        c.sort();
    });
    if let Err(e) = all {
        // One bad definition (an invalid schema, a bad name) must not keep the others
        // out: add them one at a time.
        tracing::warn!(%source, error = %e, "mounting one component at a time");
        ruled.append(&mut placed);
        if let Err(e) = shared.front.update(|c| remove(c, &old)) {
            tracing::error!(%source, error = %e, "could not unmount");
        }
        for item in mirror::items(&shared.fwd, listing) {
            let mut one = Vec::new();
            let mut item = Some(item);
            let r = shared.front.update(|c| {
                if let Some(i) = item.take() {
                    add(c, i, &mut one, &source, visibility);
                }
                c.sort();
            });
            match r {
                Ok(()) => placed.extend(one),
                Err(e) => {
                    ruled.extend(one);
                    tracing::warn!(%source, error = %e, "component left out");
                }
            }
        }
    }
    // The new names had their rules before they were served; the names that left
    // lose theirs only now that they are gone.
    ruled.extend(old);
    clear_rules(shared, &ruled, &placed);
    let n = placed.len();
    installed.names = placed;
    n
}

async fn run(shared: Arc<Shared>, options: MountOptions) {
    let source = Arc::clone(&shared.fwd.source);
    let poke = Arc::clone(&shared.fwd.poke);
    let mut changes = source.changes();
    let mut backoff = options.min_backoff;
    let mut generation = 0;
    // Keeps a stand-in for a source's change channel that closed.
    let mut _stand_in = None;
    // A check that got no answer in time: the source is down without listing first.
    let mut wedged = None;
    let late = |what: &str| {
        SourceError::Down(format!(
            "backend \"{}\" is unavailable: no answer to {what} within {:?}",
            source.name(),
            options.check_timeout
        ))
    };
    loop {
        changes.borrow_and_update();
        let listed = match wedged.take() {
            Some(e) => Err(e),
            None => tokio::time::timeout(options.check_timeout, source.list())
                .await
                .unwrap_or_else(|_| Err(late("a listing"))),
        };
        let up = match listed {
            Ok(listing) => {
                generation += 1;
                let components = install(&shared, &listing);
                if let Some(o) = shared.outages() {
                    o.clear(shared.id);
                }
                tracing::info!(source = %source.name(), components, "mounted");
                shared.status.send_replace(Status::Up {
                    components,
                    generation,
                });
                backoff = options.min_backoff;
                true
            }
            Err(e) => {
                let was = shared.status.borrow().clone();
                if !matches!(was, Status::Down(_) | Status::Restarting(_)) {
                    shared.downs.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(source = %source.name(), error = %e, "backend down: its components leave the lists");
                }
                {
                    // Under the lock a drop takes: nothing is marked after it cleared.
                    let Ok(mut installed) = shared.installed.lock() else {
                        return;
                    };
                    if installed.dropped {
                        return;
                    }
                    let (templates, gone): (Vec<_>, Vec<_>) = installed
                        .names
                        .iter()
                        .cloned()
                        .partition(|(k, _)| *k == Kind::Template);
                    uninstall(&shared, &mut installed);
                    if let Some(o) = shared.outages() {
                        let name = source.name();
                        let message = match &e {
                            SourceError::Down(m) if m.contains(name) => m.clone(),
                            e => format!("backend \"{name}\" is unavailable: {e}"),
                        };
                        o.mark(shared.id, gone.into_iter().map(|(_, n)| n), &message);
                        o.mark_templates(
                            shared.id,
                            templates.into_iter().map(|(_, n)| n),
                            &message,
                        );
                    }
                }
                shared.status.send_replace(if source.restarting() {
                    Status::Restarting(e.to_string())
                } else {
                    Status::Down(e.to_string())
                });
                false
            }
        };
        if up {
            loop {
                tokio::select! {
                    r = changes.changed() => {
                        if r.is_err() {
                            // The source can announce nothing more: checks only.
                            let (tx, rx) = watch::channel(0);
                            _stand_in = Some(tx);
                            changes = rx;
                            continue;
                        }
                        break;
                    }
                    () = poke.notified() => break,
                    () = tokio::time::sleep(options.health_interval) => {
                        match tokio::time::timeout(options.check_timeout, source.check()).await {
                            Ok(Ok(())) => {}
                            Ok(Err(_)) => break,
                            Err(_) => {
                                wedged = Some(late("a check"));
                                break;
                            }
                        }
                    }
                }
            }
        } else {
            tokio::select! {
                () = tokio::time::sleep(backoff) => {}
                () = poke.notified() => {}
                // The source says it may be back (a restarted child): list now.
                r = changes.changed() => {
                    if r.is_err() {
                        let (tx, rx) = watch::channel(0);
                        _stand_in = Some(tx);
                        changes = rx;
                    }
                }
            }
            backoff = backoff.saturating_mul(2).min(options.max_backoff);
        }
    }
}
