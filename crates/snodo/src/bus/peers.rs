//! Calls between the instances of a deployment, over the bus: an instance serves a
//! *topic* ([`Peers::serve`]) and another calls it there ([`Peers::call`]) with a JSON
//! body and the caller's principal, and gets the service's JSON result or error back.
//!
//! This is how what one instance holds in memory (a gateway's parked backend call, for
//! one) is reached from the instance a load balancer sent the next request to: the
//! holder names itself ([`Peers::me`]) in what it gives out, and whoever receives the
//! next request calls it. The runtime knows nothing of what the topics mean.
//!
//! A call is bounded: at most [`MAX_PEER_CALLS`] wait at once on one instance, and as
//! many are served; the holder says it took the call within [`ACCEPT_WITHIN`] (else the
//! call fails: the instance is gone or does not listen) and answers within the call's
//! own time; the bus going down ends the wait at once; dropping the future abandons it
//! (and the instance serving it is told to stop).

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use tokio::sync::{Semaphore, mpsc};
use tokio_util::sync::CancellationToken;

use super::link::Link;
use super::{Address, BusError, BusState, InstanceId, Message};
use crate::caller::Principal;
use crate::protocol::{ErrorCode, RpcError};

/// Calls one instance waits on at once (beyond, [`PeerError::Busy`]); as many are
/// served at once (beyond, the caller hears that the instance is busy).
pub const MAX_PEER_CALLS: usize = 64;
/// How long the called instance has to say it took a call.
pub const ACCEPT_WITHIN: Duration = Duration::from_secs(5);

/// How long past its caller's time a served call may run (the caller's cancellation
/// normally ends it first).
const GRACE: Duration = Duration::from_secs(1);

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
    /// [`MAX_PEER_CALLS`] calls are waiting already.
    #[error("too many calls to other instances in flight (at most {MAX_PEER_CALLS})")]
    Busy,
    /// The instance did not say it took the call within [`ACCEPT_WITHIN`].
    #[error("instance {0} did not take the call within {1:?}: it has stopped or does not listen")]
    NoAnswer(InstanceId, Duration),
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
            PeerError::Busy => RpcError::internal(e.to_string()).retry_later(),
            e => RpcError::internal(e.to_string()),
        }
    }
}

/// What a link keeps for calls: the calls waiting for replies and the services served.
pub(crate) struct Table {
    next: AtomicU64,
    waiting: Mutex<HashMap<String, mpsc::Sender<Value>>>,
    services: Mutex<HashMap<String, PeerHandler>>,
    /// The calls served here, by their callers' keys: cancelled when the caller
    /// abandons one.
    running: Mutex<HashMap<String, CancellationToken>>,
    calls: Arc<Semaphore>,
    serving: Arc<Semaphore>,
}

impl Default for Table {
    fn default() -> Self {
        Self {
            next: AtomicU64::new(0),
            waiting: Mutex::default(),
            services: Mutex::default(),
            running: Mutex::default(),
            calls: Arc::new(Semaphore::new(MAX_PEER_CALLS)),
            serving: Arc::new(Semaphore::new(MAX_PEER_CALLS)),
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

    /// Calls `topic` on instance `to` with `body`, for `principal`, waiting at most
    /// `within` for its answer.
    ///
    /// # Errors
    /// [`PeerError`]: the bus down, the body too large ([`MAX_MESSAGE`](super::MAX_MESSAGE)),
    /// too many calls waiting, the instance silent or late, or the service's own error.
    pub async fn call(
        &self,
        to: &InstanceId,
        topic: &str,
        principal: Option<&Principal>,
        body: Value,
        within: Duration,
    ) -> Result<Value, PeerError> {
        let table = &self.link.peers;
        let mut state = self.link.bus().state();
        if *state.borrow_and_update() == BusState::Down {
            return Err(PeerError::Down(to.clone()));
        }
        let Ok(_permit) = Arc::clone(&table.calls).try_acquire_owned() else {
            return Err(PeerError::Busy);
        };
        let key = format!(
            "{}:{}",
            self.me(),
            table.next.fetch_add(1, Ordering::Relaxed)
        );
        let message = Message::Call {
            request: key.clone(),
            from: self.me().to_string(),
            topic: topic.to_owned(),
            principal: principal.map(|p| (p.id().to_owned(), p.scope().map(str::to_owned))),
            body,
            within_ms: u64::try_from(within.as_millis()).unwrap_or(u64::MAX),
        };
        message.encode_checked().map_err(PeerError::Bus)?;
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
        let started = tokio::time::Instant::now();
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
        let mut accepted = false;
        loop {
            let limit = if accepted {
                within
            } else {
                within.min(ACCEPT_WITHIN)
            };
            let left = limit.saturating_sub(started.elapsed());
            let body = tokio::select! {
                () = &mut down => return Err(PeerError::Down(to.clone())),
                r = tokio::time::timeout(left, rx.recv()) => match r {
                    Ok(Some(body)) => body,
                    // The link is gone (the runtime with it).
                    Ok(None) => return Err(PeerError::Down(to.clone())),
                    Err(_) if accepted => return Err(PeerError::TimedOut(to.clone(), within)),
                    Err(_) => return Err(PeerError::NoAnswer(to.clone(), limit)),
                },
            };
            if body.get("accepted").is_some() {
                accepted = true;
                continue;
            }
            waiter.open = false;
            return outcome(body).map_err(PeerError::Remote);
        }
    }
}

/// A service's answer as a reply body.
fn reply_body(r: Result<Value, RpcError>) -> Value {
    match r {
        Ok(v) => json!({ "result": v }),
        Err(e) => json!({ "error": e.object() }),
    }
}

/// A reply body back as the service's answer.
fn outcome(mut body: Value) -> Result<Value, RpcError> {
    if let Some(v) = body.get_mut("result") {
        return Ok(v.take());
    }
    let e = body.get("error").cloned().unwrap_or_default();
    let code = e
        .get("code")
        .and_then(Value::as_i64)
        .unwrap_or(ErrorCode::INTERNAL_ERROR.0);
    let message = e
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("another instance failed the call")
        .to_owned();
    let err = RpcError::new(ErrorCode(code), message);
    Err(match e.get("data") {
        Some(d) => err.with_data(d.clone()),
        None => err,
    })
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
        let _ = tx.try_send(body);
    }
}

/// A call another instance sent here: its fields, as [`Message::Call`] carries them.
pub(crate) struct Incoming {
    pub(crate) request: String,
    pub(crate) from: String,
    pub(crate) topic: String,
    pub(crate) principal: Option<(String, Option<String>)>,
    pub(crate) body: Value,
    pub(crate) within_ms: u64,
}

/// Serves a call another instance sent here: says it took it, runs the service within
/// the call's time (or until the link is gone) and sends its answer back.
pub(crate) fn serve(link: &Arc<Link>, call: Incoming) {
    let Ok(from) = InstanceId::new(&call.from) else {
        return;
    };
    let handler = link
        .peers
        .services
        .lock()
        .ok()
        .and_then(|s| s.get(&call.topic).cloned());
    // A refusal is sent as forwards are (at most MAX_FORWARDS at once, dropped beyond):
    // a flood of calls for nothing here queues no unbounded sends.
    let refuse = |e: RpcError| {
        let body = reply_body(Err(e));
        let m = Message::Reply {
            request: call.request.clone(),
            body,
        };
        link.send_quietly(Address::Instance(from.clone()), m);
    };
    let Some(handler) = handler else {
        refuse(RpcError::internal(format!(
            "instance {} serves no {:?}",
            link.me(),
            call.topic
        )));
        return;
    };
    let Ok(permit) = Arc::clone(&link.peers.serving).try_acquire_owned() else {
        refuse(RpcError::internal(format!("instance {} is busy", link.me())).retry_later());
        return;
    };
    let bus = Arc::clone(link.bus());
    let to = from.clone();
    let reply = move |request: String, body: Value| {
        let (bus, to) = (Arc::clone(&bus), to.clone());
        async move {
            let mut m = Message::Reply {
                request: request.clone(),
                body,
            };
            if m.encode_checked().is_err() {
                let e = RpcError::internal("the answer is too large to carry on the bus");
                m = Message::Reply {
                    request,
                    body: reply_body(Err(e)),
                };
            }
            if let Err(e) = bus.send(Address::Instance(to), m).await {
                tracing::warn!(target: "snodo::bus", error = %e, "could not send a reply to another instance");
            }
        }
    };
    let principal = call.principal.map(|(id, scope)| {
        let p = Principal::new(id);
        match scope {
            Some(s) => p.with_scope(s),
            None => p,
        }
    });
    let request = PeerRequest {
        from,
        principal,
        body: call.body,
    };
    let within = Duration::from_millis(call.within_ms);
    let (gone, abandoned) = (link.gone(), CancellationToken::new());
    let key = call.request;
    if let Ok(mut r) = link.peers.running.lock() {
        r.insert(key.clone(), abandoned.clone());
    }
    let link = Arc::downgrade(link);
    tokio::spawn(async move {
        let _permit = permit;
        let _running = Running(link, key.clone());
        reply(key.clone(), json!({"accepted": true})).await;
        let answer = tokio::select! {
            () = gone.cancelled() => Err(RpcError::internal("the instance is shutting down")),
            // The caller gave up: nobody reads the answer.
            () = abandoned.cancelled() => return,
            // (A little past the caller's time, which ends first and cancels it.)
            r = tokio::time::timeout(within.saturating_add(GRACE), handler(request)) => r.unwrap_or_else(|_| {
                Err(RpcError::internal("the call ran out of time on the instance that served it"))
            }),
        };
        reply(key, reply_body(answer)).await;
    });
}

/// Removes a served call's entry when it ends.
struct Running(Weak<Link>, String);

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(link) = self.0.upgrade() {
            if let Ok(mut r) = link.peers.running.lock() {
                r.remove(&self.1);
            }
        }
    }
}

/// Cancels the call served here under `key`, which its caller abandoned; `false` when
/// none runs.
pub(crate) fn cancel(link: &Link, key: &str) -> bool {
    let token = link
        .peers
        .running
        .lock()
        .ok()
        .and_then(|mut r| r.remove(key));
    token.map(|t| t.cancel()).is_some()
}
