//! How a runtime runs tasks: [`TaskOptions`] (public) and the runtime's task state.

use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::sync::{OnceCell, OwnedSemaphorePermit, Semaphore};

use super::memory::MemoryStore;
use super::store::{Owner, TaskLimits, TaskStore};
use crate::protocol::RpcError;
use crate::runtime::context::Principal;

/// Whether a tool runs as a task.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TaskSupport {
    /// A task when the request declares the tasks extension; otherwise an ordinary
    /// synchronous call.
    Optional,
    /// Always a task: a request that does not declare the tasks extension is refused
    /// with `-32021` naming it.
    Required,
}

/// Where tasks live and how long: the store, this process's instance id, the TTL and
/// polling interval given to clients, the worker lease and the sweep interval.
#[derive(Clone)]
pub struct TaskOptions {
    pub(crate) store: Arc<dyn TaskStore>,
    pub(crate) instance: String,
    pub(crate) ttl: Option<Duration>,
    pub(crate) poll_interval: Duration,
    pub(crate) lease: Duration,
    pub(crate) sweep_interval: Duration,
    pub(crate) max_running: usize,
    pub(crate) limits: TaskLimits,
}

impl std::fmt::Debug for TaskOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskOptions")
            .field("instance", &self.instance)
            .field("ttl", &self.ttl)
            .field("poll_interval", &self.poll_interval)
            .field("lease", &self.lease)
            .field("sweep_interval", &self.sweep_interval)
            .field("max_running", &self.max_running)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl Default for TaskOptions {
    fn default() -> Self {
        Self::new(Arc::new(MemoryStore::new()))
    }
}

impl TaskOptions {
    /// Options around `store`: a random instance id, tasks kept one hour after they
    /// are created, clients asked to poll every second, a 30 s worker lease and a sweep
    /// every 10 s, at most 1024 tasks running in this process, at most 256 stored tasks
    /// per principal and 4096 in all.
    #[must_use]
    pub fn new(store: Arc<dyn TaskStore>) -> Self {
        Self {
            store,
            instance: random_hex(8).unwrap_or_else(|_| "instance".to_owned()),
            ttl: Some(Duration::from_secs(3600)),
            poll_interval: Duration::from_secs(1),
            lease: Duration::from_secs(30),
            sweep_interval: Duration::from_secs(10),
            max_running: 1024,
            limits: TaskLimits {
                per_owner: Some(256),
                total: Some(4096),
            },
        }
    }

    /// This process's instance id, which leases its running tasks. Give a restarted
    /// process the same id (e.g. the host name) so that a durable store fails the
    /// tasks it was running at once ([`TaskStore::recover`]) instead of after the lease.
    #[must_use]
    pub fn instance(mut self, id: impl Into<String>) -> Self {
        self.instance = id.into();
        self
    }

    /// How long after creation a task may be deleted (`ttlMs`); `None` keeps tasks
    /// until the store is cleared.
    #[must_use]
    pub fn ttl(mut self, ttl: Option<Duration>) -> Self {
        self.ttl = ttl;
        self
    }

    /// The polling interval suggested to clients (`pollIntervalMs`, at least 1 ms).
    #[must_use]
    pub fn poll_interval(mut self, interval: Duration) -> Self {
        self.poll_interval = interval.max(Duration::from_millis(1));
        self
    }

    /// How long a worker's lease lasts (renewed every third of it): a task whose
    /// instance stopped becomes `failed` at the first sweep after its lease ran out.
    #[must_use]
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease.max(Duration::from_millis(30));
        self
    }

    /// How often the store is swept (expired leases fail, expired tasks are deleted).
    #[must_use]
    pub fn sweep_interval(mut self, interval: Duration) -> Self {
        self.sweep_interval = interval.max(Duration::from_millis(10));
        self
    }

    /// Most tasks running at once in this process; a `tools/call` beyond that is
    /// answered with a tool error.
    #[must_use]
    pub fn max_running(mut self, n: usize) -> Self {
        self.max_running = n.max(1);
        self
    }

    /// Most live (unexpired) tasks one principal may have stored, of any status; a
    /// `tools/call` that would create one more is refused with `-32603` (data
    /// `{"reason": "tasks", "retryable": true}`) until some expire. `None`: no limit.
    /// Unauthenticated callers share one principal. Default 256.
    #[must_use]
    pub fn max_tasks_per_principal(mut self, n: Option<u64>) -> Self {
        self.limits.per_owner = n;
        self
    }

    /// Most live tasks stored in all (for a shared store, counted across every instance
    /// sharing it); beyond, a `tools/call` is refused as for
    /// [`max_tasks_per_principal`](Self::max_tasks_per_principal). `None`: no limit.
    /// Default 4096.
    #[must_use]
    pub fn max_tasks(mut self, n: Option<u64>) -> Self {
        self.limits.total = n;
        self
    }

    /// The store.
    #[must_use]
    pub fn store(&self) -> &Arc<dyn TaskStore> {
        &self.store
    }
}

/// A runtime's task state: its options, the one-time start (recovery and the sweeper)
/// and the running-task budget.
pub(crate) struct Tasks {
    pub(crate) options: TaskOptions,
    started: OnceCell<()>,
    running: Arc<Semaphore>,
    /// What the workers count their tasks into (the task series, with metrics).
    pub(crate) observe: crate::observation::TaskObserver,
}

impl std::fmt::Debug for Tasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tasks")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl Tasks {
    pub(crate) fn new(
        options: TaskOptions,
        observe: crate::observation::TaskObserver,
    ) -> Arc<Self> {
        let running = Arc::new(Semaphore::new(options.max_running));
        Arc::new(Self {
            options,
            started: OnceCell::new(),
            running,
            observe,
        })
    }

    pub(crate) fn store(&self) -> &dyn TaskStore {
        &*self.options.store
    }

    /// Once per runtime, at its first task operation: fails the tasks a previous run
    /// of this instance left running, and starts the periodic sweep.
    pub(crate) async fn start(self: &Arc<Self>) {
        self.started
            .get_or_init(|| async {
                match self.store().recover(&self.options.instance).await {
                    Ok(0) => {}
                    Ok(n) => tracing::warn!(tasks = n, "failed the tasks a previous run left"),
                    Err(e) => tracing::error!(error = %e, "task store recovery failed"),
                }
                tokio::spawn(sweep(Arc::downgrade(self), self.options.sweep_interval));
            })
            .await;
    }

    /// A running-task slot, or the tool error that says none is free.
    pub(crate) fn try_run(&self) -> Option<OwnedSemaphorePermit> {
        Arc::clone(&self.running).try_acquire_owned().ok()
    }
}

/// Sweeps the store every `interval` for as long as the runtime exists.
async fn sweep(tasks: Weak<Tasks>, interval: Duration) {
    let mut ticks = tokio::time::interval(interval);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticks.tick().await;
    loop {
        ticks.tick().await;
        let Some(tasks) = tasks.upgrade() else {
            return;
        };
        match tasks.store().sweep().await {
            Ok(0) => {}
            Ok(n) => tracing::debug!(tasks = n, "task sweep"),
            Err(e) => tracing::warn!(error = %e, "task sweep failed"),
        }
    }
}

/// The owner of the tasks `principal` creates: its subject and scope (empty strings
/// when unauthenticated).
pub(crate) fn owner(principal: Option<&Principal>) -> Owner {
    principal.map_or_else(Owner::default, |p| {
        Owner::new(p.id(), p.scope().unwrap_or_default())
    })
}

/// `2 * bytes` lowercase hex digits from the operating system's random source.
pub(crate) fn random_hex(bytes: usize) -> Result<String, RpcError> {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf)
        .map_err(|e| RpcError::internal(format!("No random source for a task id: {e}")))?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

/// A task id: 128 random bits, 32 hex digits.
pub(crate) fn new_id() -> Result<String, RpcError> {
    random_hex(16)
}
