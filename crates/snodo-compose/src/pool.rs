//! A backend's pool of warm connections (stdio children, HTTP sessions): each kept by a
//! supervisor task that starts it, notices when it fails and starts it again with a
//! capped exponential backoff; calls go to the ready connection with the fewest calls
//! in flight.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use snodo_client::Client;
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;

use crate::child::ChildGuard;
use crate::source::BoxFuture;

/// Failures in a row reported as restarting; beyond, the backend is down.
const RESTARTING: u32 = 5;

/// How a backend's connections are started and started again after they fail.
///
/// ```
/// use std::time::Duration;
/// use snodo_compose::RestartPolicy;
/// let p = RestartPolicy { max_backoff: Duration::from_secs(30), ..RestartPolicy::default() };
/// assert_eq!(p.min_backoff, Duration::from_millis(100));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RestartPolicy {
    /// The wait before the first restart (default 100 ms), doubled at each failure…
    pub min_backoff: Duration,
    /// …up to this (default 10 s).
    pub max_backoff: Duration,
    /// A connection that stayed up this long was healthy: the backoff starts over
    /// (default 60 s).
    pub healthy_after: Duration,
    /// How long starting a connection (a child's start and its `initialize`) may take
    /// (default 30 s).
    pub start_timeout: Duration,
}

impl Default for RestartPolicy {
    fn default() -> Self {
        Self {
            min_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(10),
            healthy_after: Duration::from_secs(60),
            start_timeout: Duration::from_secs(30),
        }
    }
}

/// Where one connection of a pool stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChildState {
    /// Being started (a child starting, `initialize` under way).
    Starting,
    /// Serving, with this many calls in flight.
    Ready {
        /// Calls in flight on it.
        in_flight: usize,
    },
    /// Failed; started again after the backoff.
    Restarting {
        /// Why it failed last.
        error: String,
        /// Failures in a row.
        attempt: u32,
    },
    /// The source was dropped.
    Stopped,
}

/// One live connection: a client and, for a stdio backend, its child.
pub(crate) struct Conn {
    pub(crate) client: Client,
    pub(crate) child: Option<ChildGuard>,
    /// Which connection of the source this is (a backend's question that names no
    /// call goes to a call on the same connection only).
    pub(crate) id: u64,
    /// A task listening to the backend for list changes (2026-07-28 backends): it
    /// holds its own client and stream, so it is stopped when the connection goes,
    /// on every path (a restart, the pool dropped).
    pub(crate) listener: Option<tokio_util::task::AbortOnDropHandle<()>>,
}

/// Makes one connection; the error names what failed.
pub(crate) type Connect = Arc<dyn Fn() -> BoxFuture<'static, Result<Conn, String>> + Send + Sync>;

#[derive(Clone)]
enum SlotState {
    Starting,
    Ready {
        client: Client,
        conn: u64,
        broken: Arc<Notify>,
        exit: Option<watch::Receiver<Option<String>>>,
    },
    Restarting {
        error: String,
        attempt: u32,
    },
    Stopped,
}

#[derive(Default)]
struct Slot {
    state: Mutex<Option<SlotState>>,
    in_flight: AtomicUsize,
}

struct Shared {
    slots: Vec<Slot>,
    /// Held while a call chooses and counts itself in (concurrent calls spread).
    choose: Mutex<()>,
    /// Bumped at every state change of any slot.
    changed: watch::Sender<u64>,
    restarts: AtomicU64,
}

impl Shared {
    fn set(&self, i: usize, s: SlotState) {
        if let Some(slot) = self.slots.get(i) {
            if let Ok(mut g) = slot.state.lock() {
                *g = Some(s);
            }
        }
        self.changed.send_modify(|n| *n += 1);
    }

    fn states(&self) -> Vec<ChildState> {
        self.slots
            .iter()
            .map(|s| {
                let st = s.state.lock().ok().and_then(|g| g.clone());
                match st {
                    None | Some(SlotState::Starting) => ChildState::Starting,
                    Some(SlotState::Ready { .. }) => ChildState::Ready {
                        in_flight: s.in_flight.load(Ordering::Relaxed),
                    },
                    Some(SlotState::Restarting { error, attempt }) => {
                        ChildState::Restarting { error, attempt }
                    }
                    Some(SlotState::Stopped) => ChildState::Stopped,
                }
            })
            .collect()
    }
}

/// A view of a source's pool: cheap to clone, kept by the application (e.g. for a
/// health endpoint) after the source is mounted. See [`McpSource::health`].
///
/// [`McpSource::health`]: crate::McpSource::health
#[derive(Clone)]
pub struct PoolHealth(Arc<Shared>);

impl std::fmt::Debug for PoolHealth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.children()).finish()
    }
}

impl PoolHealth {
    /// Each connection's state (empty until the source is first used).
    #[must_use]
    pub fn children(&self) -> Vec<ChildState> {
        self.0.states()
    }

    /// How many connections serve now.
    #[must_use]
    pub fn ready(&self) -> usize {
        self.children()
            .iter()
            .filter(|c| matches!(c, ChildState::Ready { .. }))
            .count()
    }

    /// Connections that failed after serving, or failed to start, so far.
    #[must_use]
    pub fn restarts(&self) -> u64 {
        self.0.restarts.load(Ordering::Relaxed)
    }

    /// Waits until `pred` holds for the states (or `limit` passes); returns them.
    pub async fn wait_for(
        &self,
        limit: Duration,
        pred: impl Fn(&[ChildState]) -> bool,
    ) -> Vec<ChildState> {
        let mut rx = self.0.changed.subscribe();
        let _ = tokio::time::timeout(limit, async {
            loop {
                if pred(&self.children()) {
                    return;
                }
                if rx.changed().await.is_err() {
                    return;
                }
            }
        })
        .await;
        self.children()
    }
}

/// The pool: its supervisors start on first use and stop when it is dropped.
pub(crate) struct Pool {
    name: String,
    shared: Arc<Shared>,
    connect: Connect,
    policy: RestartPolicy,
    on_change: Arc<dyn Fn() + Send + Sync>,
    tasks: Mutex<Option<Vec<JoinHandle<()>>>>,
}

impl Pool {
    pub(crate) fn new(
        name: &str,
        size: usize,
        policy: RestartPolicy,
        connect: Connect,
        on_change: Arc<dyn Fn() + Send + Sync>,
    ) -> Self {
        let slots = (0..size.max(1)).map(|_| Slot::default()).collect();
        Self {
            name: name.to_owned(),
            shared: Arc::new(Shared {
                slots,
                choose: Mutex::new(()),
                changed: watch::channel(0).0,
                restarts: AtomicU64::new(0),
            }),
            connect,
            policy,
            on_change,
            tasks: Mutex::new(None),
        }
    }

    pub(crate) fn health(&self) -> PoolHealth {
        PoolHealth(Arc::clone(&self.shared))
    }

    /// None serves and one failed only a few times in a row: the outage looks
    /// transient (after [`RESTARTING`] failures in a row it is `Down`).
    pub(crate) fn restarting(&self) -> bool {
        let s = self.shared.states();
        !s.iter().any(|c| matches!(c, ChildState::Ready { .. }))
            && s.iter().any(|c| {
                matches!(c, ChildState::Starting)
                    || matches!(c, ChildState::Restarting { attempt, .. } if *attempt <= RESTARTING)
            })
    }

    fn start(&self) {
        let Ok(mut tasks) = self.tasks.lock() else {
            return;
        };
        if tasks.is_some() {
            return;
        }
        let handles = (0..self.shared.slots.len())
            .map(|i| {
                tokio::spawn(supervise(Supervisor {
                    name: self.name.clone(),
                    i,
                    shared: Arc::clone(&self.shared),
                    connect: Arc::clone(&self.connect),
                    policy: self.policy,
                    on_change: Arc::clone(&self.on_change),
                }))
            })
            .collect();
        *tasks = Some(handles);
    }

    /// The ready connection with the fewest calls in flight; waits while connections
    /// are starting, fails at once when none serves and none is starting.
    pub(crate) async fn lease(&self) -> Result<Lease, String> {
        self.start();
        let mut rx = self.shared.changed.subscribe();
        loop {
            rx.borrow_and_update();
            let chosen = self.shared.choose.lock();
            let mut best: Option<(usize, usize, Client, u64, Arc<Notify>, _)> = None;
            let mut starting = false;
            let mut error = None;
            for (i, slot) in self.shared.slots.iter().enumerate() {
                let st = slot.state.lock().ok().and_then(|g| g.clone());
                match st {
                    // A child that exited, its supervisor not yet told: not chosen.
                    Some(SlotState::Ready { exit: Some(e), .. }) if e.borrow().is_some() => {
                        starting = true;
                    }
                    Some(SlotState::Ready {
                        client,
                        conn,
                        broken,
                        exit,
                    }) => {
                        let n = slot.in_flight.load(Ordering::Relaxed);
                        if best.as_ref().is_none_or(|b| n < b.1) {
                            best = Some((i, n, client, conn, broken, exit));
                        }
                    }
                    None | Some(SlotState::Starting) => starting = true,
                    Some(SlotState::Restarting { error: e, attempt }) => {
                        error = Some(format!("restarting after {attempt} failure(s): {e}"));
                    }
                    Some(SlotState::Stopped) => error = Some("stopped".to_owned()),
                }
            }
            if let Some((slot, _, client, conn, broken, exit)) = best {
                self.shared.slots[slot]
                    .in_flight
                    .fetch_add(1, Ordering::Relaxed);
                drop(chosen);
                return Ok(Lease {
                    shared: Arc::clone(&self.shared),
                    slot,
                    broken,
                    exit,
                    client,
                    conn,
                });
            }
            drop(chosen);
            if !starting {
                return Err(error.unwrap_or_else(|| "no connection".to_owned()));
            }
            if rx.changed().await.is_err() {
                return Err("stopped".to_owned());
            }
        }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        if let Ok(mut tasks) = self.tasks.lock() {
            for t in tasks.take().into_iter().flatten() {
                // The supervisor's connection (and child) goes with its task.
                t.abort();
            }
        }
        for i in 0..self.shared.slots.len() {
            self.shared.set(i, SlotState::Stopped);
        }
    }
}

/// One call's hold on a connection (counted in flight until dropped).
pub(crate) struct Lease {
    shared: Arc<Shared>,
    slot: usize,
    broken: Arc<Notify>,
    exit: Option<watch::Receiver<Option<String>>>,
    pub(crate) client: Client,
    /// The connection's id ([`Conn::id`]).
    pub(crate) conn: u64,
}

impl Lease {
    /// The connection failed under this call: its supervisor starts it again. Returns
    /// why its child exited, when it did (waiting a moment for the exit to be seen).
    pub(crate) async fn broken(&self) -> Option<String> {
        // A child that exited is seen by its supervisor: wait a moment for the reason
        // first, so that the call's error carries it.
        let exit = match self.exit.clone() {
            Some(mut rx) => {
                let seen =
                    tokio::time::timeout(Duration::from_millis(200), rx.wait_for(Option::is_some))
                        .await;
                match seen {
                    Ok(Ok(v)) => v.clone(),
                    _ => None,
                }
            }
            None => None,
        };
        // Out of the choice now, before its supervisor runs.
        if let Some(slot) = self.shared.slots.get(self.slot) {
            if let Ok(mut g) = slot.state.lock() {
                if matches!(&*g, Some(SlotState::Ready { broken, .. }) if Arc::ptr_eq(broken, &self.broken))
                {
                    *g = Some(SlotState::Starting);
                }
            }
        }
        self.broken.notify_one();
        exit
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Some(slot) = self.shared.slots.get(self.slot) {
            slot.in_flight.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

struct Supervisor {
    name: String,
    i: usize,
    shared: Arc<Shared>,
    connect: Connect,
    policy: RestartPolicy,
    /// Called when a connection goes, when its failures in a row make it down, and
    /// when one comes after an earlier try (what the backend lists may have changed
    /// meanwhile).
    on_change: Arc<dyn Fn() + Send + Sync>,
}

/// Keeps slot `i` connected: start, serve until the child exits or a call reports the
/// connection broken, back off, start again.
async fn supervise(s: Supervisor) {
    let mut backoff = s.policy.min_backoff;
    let mut attempt = 0u32;
    let mut tries = 0u64;
    loop {
        tries += 1;
        s.shared.set(s.i, SlotState::Starting);
        let started = Instant::now();
        let (error, served) =
            match tokio::time::timeout(s.policy.start_timeout, (s.connect)()).await {
                Err(_) => (
                    format!(
                        "no answer to initialize within {:?}",
                        s.policy.start_timeout
                    ),
                    false,
                ),
                Ok(Err(e)) => (e, false),
                Ok(Ok(conn)) => (serve(&s, conn, tries > 1).await, true),
            };
        if served && started.elapsed() >= s.policy.healthy_after {
            backoff = s.policy.min_backoff;
            attempt = 0;
        }
        attempt += 1;
        s.shared.restarts.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(backend = %s.name, child = s.i, attempt, error = %error, retry_in = ?backoff, "backend connection down; starting it again");
        s.shared.set(s.i, SlotState::Restarting { error, attempt });
        // Gone, or restarting no longer but down: the mount lists (and says so) now.
        if served || attempt == RESTARTING + 1 {
            (s.on_change)();
        }
        tokio::time::sleep(backoff).await;
        backoff = backoff.saturating_mul(2).min(s.policy.max_backoff);
    }
}

/// Serves on `conn` until its child exits or a call reports it broken; says why.
async fn serve(s: &Supervisor, conn: Conn, again: bool) -> String {
    // One per connection: a failure reported against an earlier one is not this one's.
    let broken = Arc::new(Notify::new());
    s.shared.set(
        s.i,
        SlotState::Ready {
            client: conn.client.clone(),
            conn: conn.id,
            broken: Arc::clone(&broken),
            exit: conn.child.as_ref().map(ChildGuard::exit_watch),
        },
    );
    tracing::info!(backend = %s.name, child = s.i, "backend connection ready");
    if again {
        (s.on_change)();
    }
    let why = tokio::select! {
        w = wait_exit(conn.child.as_ref()) => w,
        () = broken.notified() => conn
            .child
            .as_ref()
            .and_then(ChildGuard::exit_reason)
            .unwrap_or_else(|| "the connection failed under a call".to_owned()),
    };
    // Out of the choice before the child goes (its group is signalled as the guard
    // drops), so that no new call picks it.
    s.shared.set(
        s.i,
        SlotState::Restarting {
            error: why.clone(),
            attempt: 0,
        },
    );
    let Conn {
        client,
        child,
        listener,
        ..
    } = conn;
    drop(listener);
    drop(child);
    tokio::spawn(async move { client.close().await });
    why
}

async fn wait_exit(child: Option<&ChildGuard>) -> String {
    match child {
        Some(c) => c.exited().await,
        None => std::future::pending().await,
    }
}
