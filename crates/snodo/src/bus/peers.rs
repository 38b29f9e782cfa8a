//! Calls between the instances of a deployment, over the bus: an instance serves a
//! *topic* ([`Peers::serve`]) and another calls it there ([`Peers::call`]) with a JSON
//! body and the caller's principal, and gets the service's JSON result or error back.
//!
//! This is how what one instance holds in memory (a gateway's parked backend call, for
//! one) is reached from the instance a load balancer sent the next request to: the
//! holder names itself ([`Peers::me`]) in what it gives out, and whoever receives the
//! next request calls it. The runtime knows nothing of what the topics mean.
//!
//! A call is bounded: at most [`MAX_PEER_CALLS`] wait at once on one instance (and
//! [`MAX_PEER_CALLS_PER_PRINCIPAL`] for one principal), and as many are served; the
//! holder says it took the call within [`ACCEPT_WITHIN`] and says so again while it
//! works on it, so [`ACCEPT_WITHIN`] of silence at any point fails the call (the
//! instance is gone, does not listen, or its bus is down); it answers within the
//! call's own time; this instance's bus going down, or its mailbox losing messages,
//! ends the wait at once; dropping the future abandons it, and the instance serving it
//! is told to stop, best effort (the cancellation is dropped when the bus is down or
//! too many are in flight; the served call then runs to its own bound).
//!
//! The bus is trusted: whoever can send on it can call any topic as any principal,
//! cancel any served call and answer any waiting one. A service's checks (the
//! principal a parked call was parked for) guard against front callers, not the bus.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use tokio::sync::{Semaphore, mpsc};

use super::link::Link;
use super::{Address, BusError, BusState, InstanceId, Message};
use crate::caller::Principal;
use crate::protocol::{ErrorCode, RpcError};

/// Calls one instance waits on at once (beyond, [`PeerError::Busy`]); as many are
/// served at once (beyond, the caller hears that the instance is busy).
pub const MAX_PEER_CALLS: usize = 64;
/// Calls one instance waits on at once for one principal (beyond,
/// [`PeerError::Busy`]): one principal cannot take every slot. Calls for no principal
/// count together.
pub const MAX_PEER_CALLS_PER_PRINCIPAL: usize = 16;
/// How long the called instance has to say it took a call, and the longest silence
/// from it after that (it says it is still working twice as often).
pub const ACCEPT_WITHIN: Duration = Duration::from_secs(5);

/// What a service answers: a future of its result or error.
pub type PeerHandler =
    Arc<dyn Fn(PeerRequest) -> BoxFuture<'static, Result<Value, RpcError>> + Send + Sync>;

/// A call another instance made to a service of this one.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct PeerRequest {
    /// The calling instance.
    pub from: InstanceId,
    /// The principal the caller acts for (its id and scope only), if any.
    pub principal: Option<Principal>,
    /// The input.
    pub body: Value,
}

/// Why a call to another instance failed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum PeerError {
    /// The bus is down (or went down during the call).
    #[error("the bus is down: instance {0} cannot be reached")]
    Down(InstanceId),
    /// The bus refused the call (unreachable, timed out, or a body too large to carry).
    #[error("{0}")]
    Bus(BusError),
    /// [`MAX_PEER_CALLS`] calls are waiting already (or
    /// [`MAX_PEER_CALLS_PER_PRINCIPAL`] for this principal).
    #[error("too many calls to other instances in flight")]
    Busy,
    /// This instance's mailbox did not open within [`ACCEPT_WITHIN`] (or the call's
    /// time, if shorter): no reply could reach it. It opens once the runtime's first
    /// endpoint runs and the bus lets it listen.
    #[error("this instance does not listen on the bus yet: no reply could reach it")]
    NotListening,
    /// The instance did not say it took the call, or went silent after that, for
    /// [`ACCEPT_WITHIN`].
    #[error(
        "instance {0} went silent for {1:?}: it has stopped, does not listen or cannot reach the bus"
    )]
    NoAnswer(InstanceId, Duration),
    /// This instance's mailbox lost messages while the call waited: its reply may be
    /// among them.
    #[error("messages to this instance were lost on the bus while it waited for instance {0}")]
    Lost(InstanceId),
    /// The instance took the call but did not answer within the call's time.
    #[error("instance {0} did not answer within {1:?}")]
    TimedOut(InstanceId, Duration),
    /// The service's own error (or the instance's: no such service, busy).
    #[error("{0}")]
    Remote(RpcError),
}

impl From<PeerError> for RpcError {
    fn from(e: PeerError) -> Self {
        match e {
            PeerError::Remote(e) => e,
            PeerError::Busy | PeerError::NotListening => {
                RpcError::internal(e.to_string()).retry_later()
            }
            e => RpcError::internal(e.to_string()),
        }
    }
}

/// What a link keeps for calls: the calls waiting for replies and the services served.
pub(crate) struct Table {
    /// Random per link: a restarted instance (same id) never reuses an earlier run's
    /// keys, so an old call's reply cannot reach a new call.
    boot: String,
    next: AtomicU64,
    waiting: Mutex<HashMap<String, mpsc::Sender<Value>>>,
    /// Calls waiting, by principal id (`None`: no principal).
    per_principal: Mutex<HashMap<Option<String>, usize>>,
    pub(crate) services: Mutex<HashMap<String, PeerHandler>>,
    /// The calls served here.
    pub(crate) served: super::serving::Served,
    calls: Arc<Semaphore>,
    pub(crate) serving: Arc<Semaphore>,
}

impl Default for Table {
    fn default() -> Self {
        Self {
            boot: InstanceId::random().as_str()[..16].to_owned(),
            next: AtomicU64::new(0),
            waiting: Mutex::default(),
            per_principal: Mutex::default(),
            services: Mutex::default(),
            served: super::serving::Served::default(),
            calls: Arc::new(Semaphore::new(MAX_PEER_CALLS)),
            serving: Arc::new(Semaphore::new(MAX_PEER_CALLS)),
        }
    }
}

impl Table {
    /// A new call's key: `{me}:{boot}:{n}` (`serving.rs` reads the caller back from it).
    fn key(&self, me: &InstanceId) -> String {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        format!("{me}:{}:{n}", self.boot)
    }
}

/// A principal's share of the calls waiting, given back when dropped.
struct Share<'a>(&'a Table, Option<String>);

impl<'a> Share<'a> {
    fn take(table: &'a Table, who: Option<String>) -> Option<Self> {
        let mut p = table.per_principal.lock().ok()?;
        let n = p.entry(who.clone()).or_insert(0);
        if *n >= MAX_PEER_CALLS_PER_PRINCIPAL {
            return None;
        }
        *n += 1;
        Some(Self(table, who))
    }
}

impl Drop for Share<'_> {
    fn drop(&mut self) {
        if let Ok(mut p) = self.0.per_principal.lock() {
            if let Some(n) = p.get_mut(&self.1) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    p.remove(&self.1);
                }
            }
        }
    }
}

impl fmt::Debug for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Table").finish_non_exhaustive()
    }
}

/// Removes a waiting call's entry when its wait ends (answered, failed or abandoned);
/// one abandoned after it was sent is cancelled on the instance serving it.
struct Waiter<'a> {
    link: &'a Link,
    key: String,
    to: InstanceId,
    /// Sent and not answered yet.
    open: bool,
}

impl Drop for Waiter<'_> {
    fn drop(&mut self) {
        if let Ok(mut w) = self.link.peers.waiting.lock() {
            w.remove(&self.key);
        }
        if self.open {
            let cancel = Message::Cancel {
                request: std::mem::take(&mut self.key),
                reason: None,
            };
            self.link
                .send_quietly(Address::Instance(self.to.clone()), cancel);
        }
    }
}

/// This instance's side of calls between instances; from
/// [`Runtime::peers`](crate::Runtime::peers), when the runtime has a bus.
///
/// ```
/// use std::sync::Arc;
/// use snodo::bus::MemoryBus;
/// use snodo::Runtime;
///
/// let runtime = Runtime::builder("demo", "1.0.0").bus(Arc::new(MemoryBus::new())).build()?;
/// let peers = runtime.peers().expect("a bus was given");
/// peers.serve("echo", Arc::new(|r: snodo::bus::PeerRequest| Box::pin(async move { Ok(r.body) })));
/// assert!(Runtime::builder("alone", "1").build()?.peers().is_none());
/// # Ok::<(), snodo::BuildError>(())
/// ```
#[derive(Clone)]
pub struct Peers {
    link: Arc<Link>,
}

impl fmt::Debug for Peers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Peers")
            .field("me", self.link.me())
            .finish_non_exhaustive()
    }
}

impl Peers {
    pub(crate) fn new(link: Arc<Link>) -> Self {
        Self { link }
    }

    /// This instance's id: what another instance calls it by.
    #[must_use]
    pub fn me(&self) -> &InstanceId {
        self.link.me()
    }

    /// Whether the bus is up (calls fail at once while it is down).
    #[must_use]
    pub fn is_up(&self) -> bool {
        self.link.is_up()
    }

    /// Serves `topic` with `handler` (replacing what served it). Calls are delivered
    /// once a request endpoint of this runtime (an HTTP service, a stdio connection)
    /// has started its mailbox.
    pub fn serve(&self, topic: impl Into<String>, handler: PeerHandler) {
        if let Ok(mut s) = self.link.peers.services.lock() {
            s.insert(topic.into(), handler);
        }
    }

    /// Whether `topic` is served here.
    #[must_use]
    pub fn serves(&self, topic: &str) -> bool {
        self.link
            .peers
            .services
            .lock()
            .is_ok_and(|s| s.contains_key(topic))
    }

    /// Stops serving `topic` (calls already running finish); later calls hear that
    /// this instance serves no such topic.
    pub fn unserve(&self, topic: &str) {
        if let Ok(mut s) = self.link.peers.services.lock() {
            s.remove(topic);
        }
    }

    /// Calls `topic` on instance `to` with `body`, for `principal`, waiting at most
    /// `within` for its answer. A call made before this instance's mailbox is open (it
    /// opens in the background once a request endpoint runs) waits for it first, within
    /// the same time.
    ///
    /// # Errors
    /// [`PeerError`]: the bus down, this instance's mailbox not open within
    /// [`ACCEPT_WITHIN`], the body too large ([`MAX_MESSAGE`](super::MAX_MESSAGE)),
    /// too many calls waiting (in all, or for `principal`), the instance silent for
    /// [`ACCEPT_WITHIN`] (before or after it took the call) or late, this instance's
    /// mailbox losing messages meanwhile, or the service's own error.
    pub async fn call(
        &self,
        to: &InstanceId,
        topic: &str,
        principal: Option<&Principal>,
        body: Value,
        within: Duration,
    ) -> Result<Value, PeerError> {
        let started = tokio::time::Instant::now();
        let table = &self.link.peers;
        let mut state = self.link.bus().state();
        if *state.borrow_and_update() == BusState::Down {
            return Err(PeerError::Down(to.clone()));
        }
        // The reply comes to this instance's mailbox, which opens in the background
        // once an endpoint runs: sent before that, the call would be answered into
        // nothing and reported silent only after ACCEPT_WITHIN.
        if !self.link.inbox_open(within.min(ACCEPT_WITHIN)).await {
            return Err(PeerError::NotListening);
        }
        let Some(_share) = Share::take(table, principal.map(|p| p.id().to_owned())) else {
            return Err(PeerError::Busy);
        };
        let Ok(_permit) = Arc::clone(&table.calls).try_acquire_owned() else {
            return Err(PeerError::Busy);
        };
        let key = table.key(self.me());
        let message = Message::Call {
            request: key.clone(),
            from: self.me().to_string(),
            topic: topic.to_owned(),
            principal: principal.map(|p| (p.id().to_owned(), p.scope().map(str::to_owned))),
            body,
            within_ms: u64::try_from(within.as_millis()).unwrap_or(u64::MAX),
        };
        let (tx, mut rx) = mpsc::channel(2);
        if let Ok(mut w) = table.waiting.lock() {
            w.insert(key.clone(), tx);
        }
        let mut waiter = Waiter {
            link: &self.link,
            key,
            to: to.clone(),
            open: false,
        };
        let down = async {
            let _ = state.wait_for(|s| *s == BusState::Down).await;
        };
        tokio::pin!(down);
        // Open from now on: dropped while sending, the call may have gone out.
        waiter.open = true;
        tokio::select! {
            () = &mut down => return Err(PeerError::Down(to.clone())),
            r = self.link.bus().send(Address::Instance(to.clone()), message) => {
                if let Err(e) = r {
                    waiter.open = false;
                    return Err(PeerError::Bus(e));
                }
            }
        }
        // Each wait ends with the call's time or ACCEPT_WITHIN of silence, whichever
        // comes first: the holder says it took the call, then that it still works on
        // it, more often than that.
        let mut heard = false;
        loop {
            let left = within.saturating_sub(started.elapsed());
            let silence = left > ACCEPT_WITHIN || !heard;
            let body = tokio::select! {
                () = &mut down => return Err(PeerError::Down(to.clone())),
                r = tokio::time::timeout(left.min(ACCEPT_WITHIN), rx.recv()) => match r {
                    Ok(Some(body)) => body,
                    // The link is gone (the runtime with it).
                    Ok(None) => return Err(PeerError::Down(to.clone())),
                    Err(_) if silence => {
                        return Err(PeerError::NoAnswer(to.clone(), ACCEPT_WITHIN.min(within)));
                    }
                    Err(_) => return Err(PeerError::TimedOut(to.clone(), within)),
                },
            };
            if body.get("accepted").is_some() {
                heard = true;
                continue;
            }
            if body.get("lost").is_some() {
                return Err(PeerError::Lost(to.clone()));
            }
            waiter.open = false;
            return outcome(body).map_err(PeerError::Remote);
        }
    }
}

/// A result or error as it travels between instances: `{"result": …}` or
/// `{"error": {"code", "message", "data"?}}` (a call's reply; a service's own bodies
/// may use it too).
#[must_use]
pub fn encode_outcome(r: Result<Value, RpcError>) -> Value {
    match r {
        Ok(v) => json!({ "result": v }),
        Err(e) => json!({ "error": e.object() }),
    }
}

/// [`encode_outcome`]'s body back; `None` when it is neither a result nor an error
/// with a code and a message.
#[must_use]
pub fn decode_outcome(mut body: Value) -> Option<Result<Value, RpcError>> {
    if let Some(v) = body.get_mut("result") {
        return Some(Ok(v.take()));
    }
    let e = body.get("error")?;
    let code = e.get("code").and_then(Value::as_i64)?;
    let message = e.get("message").and_then(Value::as_str)?.to_owned();
    let err = RpcError::new(ErrorCode(code), message);
    Some(Err(match e.get("data").filter(|d| !d.is_null()) {
        Some(d) => err.with_data(d.clone()),
        None => err,
    }))
}

/// A reply body back as the service's answer (one that is neither: an error).
fn outcome(body: Value) -> Result<Value, RpcError> {
    decode_outcome(body)
        .unwrap_or_else(|| Err(RpcError::internal("another instance answered a call oddly")))
}

/// Delivers a reply to the call waiting for it (none: it was abandoned).
pub(crate) fn deliver(link: &Link, request: &str, body: Value) {
    let tx = link
        .peers
        .waiting
        .lock()
        .ok()
        .and_then(|w| w.get(request).cloned());
    if let Some(tx) = tx {
        // A heartbeat takes no last slot: the answer always finds room.
        if body.get("accepted").is_some() && tx.capacity() < 2 {
            return;
        }
        let _ = tx.try_send(body);
    }
}

/// This instance's mailbox lost messages: every call waiting here fails now, as its
/// reply may have been lost (it would otherwise wait for [`ACCEPT_WITHIN`] of silence,
/// or its time, when the holder still says it works on it).
pub(crate) fn lost(link: &Link) {
    let waiting: Vec<_> = link
        .peers
        .waiting
        .lock()
        .map(|w| w.values().cloned().collect())
        .unwrap_or_default();
    for tx in waiting {
        let _ = tx.try_send(json!({"lost": true}));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An instance restarted under the same id does not reuse its earlier run's keys
    /// (an old call's reply would reach a new call).
    #[test]
    fn keys_differ_across_runs_of_one_instance() {
        let me = InstanceId::new("gw-1").unwrap_or_else(|e| panic!("{e}"));
        let (first, second) = (Table::default(), Table::default());
        let (a, b) = (first.key(&me), second.key(&me));
        assert_ne!(a, b);
        assert!(a.starts_with("gw-1:") && a.ends_with(":0"), "{a}");
        assert_ne!(first.key(&me), a, "and within a run");
    }

    #[test]
    fn outcomes_travel_both_ways() {
        let ok = Ok(json!({"action": "accept"}));
        assert_eq!(decode_outcome(encode_outcome(ok.clone())), Some(ok));
        let e = Err(RpcError::method_not_found("roots/list").with_data(json!({"x": 1})));
        assert_eq!(decode_outcome(encode_outcome(e.clone())), Some(e));
        assert_eq!(decode_outcome(json!({"error": "no"})), None);
        assert_eq!(decode_outcome(Value::Null), None);
    }

    #[test]
    fn a_principal_has_a_share_of_the_calls() {
        let table = Table::default();
        let shares: Vec<_> = (0..MAX_PEER_CALLS_PER_PRINCIPAL)
            .filter_map(|_| Share::take(&table, Some("m".into())))
            .collect();
        assert_eq!(shares.len(), MAX_PEER_CALLS_PER_PRINCIPAL);
        assert!(Share::take(&table, Some("m".into())).is_none());
        assert!(
            Share::take(&table, None).is_some(),
            "another's share is its own"
        );
        drop(shares);
        assert!(
            Share::take(&table, Some("m".into())).is_some(),
            "given back"
        );
    }
}
