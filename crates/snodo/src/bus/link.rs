//! The runtime's side of a bus ([`RuntimeBuilder::bus`](crate::RuntimeBuilder::bus)):
//! what one instance publishes (listen-stream changes, in order, through one pump), what
//! it forwards (initialize-era cancellations and answers it does not hold), and its
//! mailbox (the cancellations and answers other instances forward to it).
//!
//! Without a configured bus the runtime holds no link: changes go straight to the
//! local listeners, as they always did.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::{Semaphore, broadcast, mpsc, watch};
use tokio_util::sync::CancellationToken;

use super::{Address, Bus, BusState, Event, InstanceId, Message, Received, Subscription};
use crate::caller::Principal;
use crate::engine::InFlight;
use crate::observation::RequestSink;
use crate::protocol::RequestId;
use crate::runtime::pending::{Answer, PendingRequests};

/// Changes queued for the bus before the pump publishes them; past it, a change is
/// delivered locally only (and logged).
const OUTBOX: usize = 1024;

/// How often the publishing pump tries again to publish the [`Event::Resync`] it owes
/// (a change it could not publish while the bus said `Up`).
const RESYNC_RETRY: std::time::Duration = std::time::Duration::from_secs(1);

/// Forwarded cancellations and answers on their way to the bus at once; past it, one
/// is dropped (and counted), so a caller flooding answers or cancellations for ids no
/// request here holds cannot queue unbounded sends (on PostgreSQL, in front of the
/// heartbeat on the pool).
const MAX_FORWARDS: usize = 64;

/// What a tool's deployment-wide `rate_limit` does while the bus is down.
///
/// ```
/// use std::sync::Arc;
/// use snodo::bus::{MemoryBus, WhenDown};
/// use snodo::Runtime;
///
/// let runtime = Runtime::builder("demo", "1.0.0")
///     .bus(Arc::new(MemoryBus::new()))
///     .rate_limits_when_bus_down(WhenDown::Closed)
///     .build()?;
/// # let _ = runtime;
/// # Ok::<(), snodo::BuildError>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WhenDown {
    /// Fail open (the default): each instance holds the limit alone (its own token
    /// bucket), so a deployment of N instances admits up to N times the limit.
    #[default]
    Open,
    /// Fail closed: every rate-limited call is refused (a tool error saying to retry)
    /// until the bus is back.
    Closed,
}

/// What [`RuntimeBuilder::bus`](crate::RuntimeBuilder::bus) and its options collected.
#[derive(Debug, Default)]
pub(crate) struct BusConfig {
    pub(crate) bus: Option<Arc<dyn Bus>>,
    pub(crate) instance: Option<InstanceId>,
    pub(crate) when_down: WhenDown,
}

impl BusConfig {
    /// The runtime's link, if a bus was given.
    pub(crate) fn link(self) -> Option<Arc<Link>> {
        let me = self.instance.unwrap_or_else(InstanceId::random);
        Some(Arc::new(Link::new(self.bus?, me, self.when_down)))
    }
}

/// One runtime's connection to its bus.
pub(crate) struct Link {
    bus: Arc<dyn Bus>,
    me: InstanceId,
    pub(crate) when_down: WhenDown,
    /// The publishing pump's queue, started on the first change published in a tokio
    /// runtime, and whether the pump owes the bus an [`Event::Resync`] (a change that
    /// reached this instance's listeners only).
    outbox: OnceLock<(mpsc::Sender<Event>, Arc<AtomicBool>)>,
    /// The mailbox pump, started once (from the first endpoint built in a tokio runtime).
    started: OnceLock<()>,
    /// Whether the mailbox is open: a call to another instance waits for it, or its
    /// reply would be lost.
    inbox_open: watch::Sender<bool>,
    /// Registries of the endpoints' cancellable requests, which a forwarded
    /// cancellation may name.
    targets: Mutex<Vec<Weak<InFlight>>>,
    /// Permits of the forwards in flight ([`MAX_FORWARDS`]).
    forwards: Arc<Semaphore>,
    /// Forwards dropped: the bus was down or [`MAX_FORWARDS`] were in flight.
    dropped: AtomicU64,
    /// Cancelled when the link is dropped: its background tasks end then, not at the
    /// bus's next message or state change.
    gone: CancellationToken,
    /// Calls between instances ([`Peers`](super::Peers)).
    pub(crate) peers: super::peers::Table,
}

impl Drop for Link {
    fn drop(&mut self) {
        self.gone.cancel();
    }
}

impl std::fmt::Debug for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Link")
            .field("bus", &self.bus)
            .field("me", &self.me)
            .field("when_down", &self.when_down)
            .finish_non_exhaustive()
    }
}

impl Link {
    pub(crate) fn new(bus: Arc<dyn Bus>, me: InstanceId, when_down: WhenDown) -> Self {
        Self {
            bus,
            me,
            when_down,
            outbox: OnceLock::new(),
            started: OnceLock::new(),
            inbox_open: watch::Sender::new(false),
            targets: Mutex::new(Vec::new()),
            forwards: Arc::new(Semaphore::new(MAX_FORWARDS)),
            dropped: AtomicU64::new(0),
            gone: CancellationToken::new(),
            peers: super::peers::Table::default(),
        }
    }

    /// Cancelled when the link is dropped.
    pub(crate) fn gone(&self) -> CancellationToken {
        self.gone.clone()
    }

    pub(crate) fn bus(&self) -> &Arc<dyn Bus> {
        &self.bus
    }

    /// This instance's id (in the ids of the server requests it sends).
    pub(crate) fn me(&self) -> &InstanceId {
        &self.me
    }

    pub(crate) fn is_up(&self) -> bool {
        *self.bus.state().borrow() == BusState::Up
    }

    /// Waits up to `within` for this instance's mailbox to be open; whether it is.
    pub(crate) async fn inbox_open(&self, within: Duration) -> bool {
        let mut open = self.inbox_open.subscribe();
        tokio::time::timeout(within, open.wait_for(|o| *o))
            .await
            .is_ok_and(|r| r.is_ok())
    }

    /// A listen stream's feed of changes published on the bus.
    pub(crate) fn events(&self) -> Subscription<Event> {
        self.bus.events()
    }

    /// Publishes a change to every instance's listeners (this one's through the bus too).
    /// While the bus is down, outside a tokio runtime, or when the outbox is full, the
    /// change reaches this instance's listeners only; a full outbox makes the pump owe
    /// the bus an [`Event::Resync`] (a bus handle whose connection was down publishes
    /// its own when it is back).
    pub(crate) fn publish(&self, change: Event, local: &broadcast::Sender<Event>) {
        if !self.is_up() || tokio::runtime::Handle::try_current().is_err() {
            let _ = local.send(change);
            return;
        }
        let (outbox, owed) = self.outbox.get_or_init(|| {
            let (tx, rx) = mpsc::channel(OUTBOX);
            let owed = Arc::new(AtomicBool::new(false));
            let pump = publish_pump(Arc::clone(&self.bus), rx, local.clone(), Arc::clone(&owed));
            // Ends with the link, as its other tasks do, even if a publish never returns.
            let gone = self.gone.clone();
            tokio::spawn(async move { gone.run_until_cancelled(pump).await });
            (tx, owed)
        });
        if let Err(e) = outbox.try_send(change) {
            tracing::warn!(
                target: "snodo::bus",
                "bus outbox full: a change reaches this instance's listeners only (a resync follows)"
            );
            owed.store(true, Ordering::Release);
            let _ = local.send(e.into_inner());
        }
    }

    /// Registers an endpoint's cancellable requests and starts the mailbox pump (once,
    /// when called within a tokio runtime).
    pub(crate) fn attach(
        self: &Arc<Self>,
        inflight: &Arc<InFlight>,
        pending: &Arc<PendingRequests>,
        sink: Option<Arc<dyn RequestSink>>,
    ) {
        if let Ok(mut t) = self.targets.lock() {
            t.retain(|w| w.strong_count() > 0);
            t.push(Arc::downgrade(inflight));
        }
        if tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        self.started.get_or_init(|| {
            let gone = self.gone.clone();
            tokio::spawn(mailbox_pump(
                Arc::downgrade(self),
                Arc::clone(pending),
                gone,
            ));
            tokio::spawn(watch_state(Arc::downgrade(self), sink, self.gone.clone()));
        });
    }

    /// Sends a cancellation this instance does not hold to every instance (the one
    /// running the request cancels it). Returns at once; the send is bounded by the
    /// bus's deadline.
    pub(crate) fn forward_cancel(&self, principal: &Principal, id: &RequestId) {
        let request = cancel_key(principal, id);
        self.spawn_send(
            Address::Every,
            Message::Cancel {
                request,
                reason: None,
            },
        );
    }

    /// Forwards an answer to a server request this instance does not hold to the
    /// instance named in its id; `false` when the id names none (or names this one).
    pub(crate) fn forward_answer(&self, id: &str, answer: Answer) -> bool {
        let Some(holder) = holder(id).filter(|h| *h != self.me) else {
            return false;
        };
        let response = match answer {
            Ok(result) => json!({ "result": result }),
            Err(error) => json!({ "error": error }),
        };
        let message = Message::Answer {
            request: id.to_owned(),
            response,
        };
        self.spawn_send(Address::Instance(holder), message)
    }

    /// [`spawn_send`](Self::spawn_send), for what may be lost (a peer call's cancellation).
    pub(crate) fn send_quietly(&self, to: Address, message: Message) {
        let _ = self.spawn_send(to, message);
    }

    /// Sends `message` in the background; `false` (the message dropped) while the bus is
    /// down, outside a tokio runtime, or with [`MAX_FORWARDS`] sends already in flight.
    fn spawn_send(&self, to: Address, message: Message) -> bool {
        if !self.is_up() || tokio::runtime::Handle::try_current().is_err() {
            self.dropped_one("the bus is down");
            return false;
        }
        let Ok(permit) = Arc::clone(&self.forwards).try_acquire_owned() else {
            self.dropped_one("too many forwards in flight");
            return false;
        };
        let (bus, gone) = (Arc::clone(&self.bus), self.gone.clone());
        // Ends with the runtime too: a send that never returns holds no task or permit
        // past the link.
        tokio::spawn(async move {
            let _permit = permit;
            tokio::select! {
                () = gone.cancelled() => {}
                r = bus.send(to, message) => {
                    if let Err(e) = r {
                        tracing::warn!(target: "snodo::bus", error = %e, "could not forward a message on the bus");
                    }
                }
            }
        });
        true
    }

    /// Counts a dropped forward; logs the first and then every power of two.
    fn dropped_one(&self, why: &str) {
        let n = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
        if n.is_power_of_two() {
            tracing::warn!(target: "snodo::bus", dropped = n, "a cancellation or answer was not forwarded: {why}");
        }
    }

    /// Cancels a forwarded cancellation's request if an endpoint here holds it (or the
    /// peer call served here under that key).
    fn cancel(&self, key: &str) {
        let Some((principal, id)) = parse_cancel_key(key) else {
            super::serving::cancel(self, key);
            return;
        };
        let targets: Vec<Arc<InFlight>> = self
            .targets
            .lock()
            .map(|t| t.iter().filter_map(Weak::upgrade).collect())
            .unwrap_or_default();
        for inflight in targets {
            inflight.cancel(&principal, &id);
        }
    }
}

/// A server request id naming its instance: `ID@INSTANCE`.
pub(crate) fn with_holder(id: String, me: &InstanceId) -> String {
    format!("{id}{}{me}", super::HOLDER)
}

/// The instance a server request id names, if any: only an id of the shape this
/// runtime gives its server requests (`snodo-N-HASH@INSTANCE`, `runtime/pending.rs`),
/// so a caller's made-up ids are not forwarded.
fn holder(id: &str) -> Option<InstanceId> {
    let (own, instance) = InstanceId::holding(id)?;
    let (n, hash) = own.strip_prefix("snodo-")?.split_once('-')?;
    let hex = |s: &str, max: usize| {
        !s.is_empty() && s.len() <= max && s.bytes().all(|b| b.is_ascii_hexdigit())
    };
    if !(hex(n, 16) && hash.len() == 16 && hex(hash, 16)) {
        return None;
    }
    Some(instance)
}

/// The key of a forwarded cancellation: the principal, its scope and the request id.
fn cancel_key(principal: &Principal, id: &RequestId) -> String {
    json!([principal.id(), principal.scope(), id]).to_string()
}

fn parse_cancel_key(key: &str) -> Option<(Principal, RequestId)> {
    let (id, scope, request): (String, Option<String>, RequestId) =
        serde_json::from_str(key).ok()?;
    Some((Principal::new(id).with_scope_of(scope), request))
}

/// Publishes the queued changes in order; one the bus refuses reaches this instance's
/// listeners only, and the other instances must then be told [`Event::Resync`]: so must
/// they after a full outbox (`owed`, set by [`Link::publish`]). While it is owed, the
/// resync is published before the next change and tried again every
/// [`RESYNC_RETRY`], whether or not the bus says `Up` (a bus can answer its pub/sub
/// connection and still fail publishes).
async fn publish_pump(
    bus: Arc<dyn Bus>,
    mut rx: mpsc::Receiver<Event>,
    local: broadcast::Sender<Event>,
    owed: Arc<AtomicBool>,
) {
    let mut retry = tokio::time::interval(RESYNC_RETRY);
    retry.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let change = tokio::select! {
            change = rx.recv() => match change {
                Some(change) => Some(change),
                None => return,
            },
            _ = retry.tick(), if owed.load(Ordering::Acquire) => None,
        };
        if owed.swap(false, Ordering::AcqRel) {
            if let Err(e) = bus.publish(Event::Resync).await {
                tracing::debug!(target: "snodo::bus", error = %e, "the resync owed to the other instances failed; retrying");
                owed.store(true, Ordering::Release);
                retry.reset();
            } else {
                tracing::info!(target: "snodo::bus", "published a resync for the changes the other instances missed");
            }
        }
        let Some(change) = change else { continue };
        if let Err(e) = bus.publish(change.clone()).await {
            tracing::warn!(target: "snodo::bus", error = %e, "a change reaches this instance's listeners only (a resync follows)");
            owed.store(true, Ordering::Release);
            retry.reset();
            let _ = local.send(change);
        }
    }
}

/// Delivers what other instances forward here, until the runtime is gone (`gone`: its
/// mailbox is dropped then, so the bus stops listening for it).
async fn mailbox_pump(link: Weak<Link>, pending: Arc<PendingRequests>, gone: CancellationToken) {
    let mut inbox = loop {
        let Some(l) = link.upgrade() else { return };
        let opened = tokio::select! {
            () = gone.cancelled() => return,
            opened = l.bus.messages(&l.me) => opened,
        };
        if opened.is_ok() {
            l.inbox_open.send_replace(true);
        }
        drop(l);
        match opened {
            Ok(inbox) => break inbox,
            Err(e) => {
                tracing::warn!(target: "snodo::bus", error = %e, "cannot open this instance's mailbox; retrying");
                tokio::select! {
                    () = gone.cancelled() => return,
                    () = tokio::time::sleep(std::time::Duration::from_secs(1)) => {}
                }
            }
        }
    };
    loop {
        let received = tokio::select! {
            () = gone.cancelled() => return,
            received = inbox.recv() => received,
        };
        let Some(l) = link.upgrade() else { return };
        let Some(received) = received else {
            l.inbox_open.send_replace(false);
            return;
        };
        match received {
            Received::Item(Message::Cancel { request, .. }) => l.cancel(&request),
            Received::Item(Message::Answer { request, response }) => {
                let answer = match response {
                    Value::Object(mut m) => match m.remove("error") {
                        Some(error) => Err(error),
                        None => Ok(m.remove("result").unwrap_or_default()),
                    },
                    _ => continue,
                };
                if !pending.deliver(&request, answer) {
                    tracing::warn!(target: "snodo::bus", id = %request, "a forwarded answer that no request of this instance waits for");
                }
            }
            Received::Item(Message::Call {
                request,
                from,
                topic,
                principal,
                body,
                within_ms,
            }) => super::serving::serve(
                &l,
                super::serving::Incoming {
                    request,
                    from,
                    topic,
                    principal,
                    body,
                    within_ms,
                },
            ),
            Received::Item(Message::Reply { request, body }) => {
                super::peers::deliver(&l, &request, body);
            }
            // Lost cancellations and answers cannot be asked for again: the requests
            // they were for time out, as they would without the bus. A call between
            // instances waiting here may have lost its reply: it fails now.
            Received::Lagged(_) | Received::Resync => super::peers::lost(&l),
        }
    }
}

/// Logs and counts the bus going down and coming back.
async fn watch_state(
    link: Weak<Link>,
    sink: Option<Arc<dyn RequestSink>>,
    gone: CancellationToken,
) {
    let Some(mut state) = link.upgrade().map(|l| l.bus.state()) else {
        return;
    };
    loop {
        let now = *state.borrow_and_update();
        if let Some(sink) = &sink {
            sink.bus_state(now == BusState::Up);
        }
        match now {
            BusState::Down => tracing::warn!(
                target: "snodo::bus",
                "bus down: this instance serves alone (changes reach its own listeners; rate limits fail as configured)"
            ),
            BusState::Up => tracing::info!(target: "snodo::bus", "bus up"),
        }
        let changed = tokio::select! {
            () = gone.cancelled() => return,
            changed = state.changed() => changed,
        };
        if changed.is_err() || link.strong_count() == 0 {
            return;
        }
    }
}

#[cfg(test)]
mod owed_tests;

#[cfg(test)]
mod tests {
    use super::super::MemoryBus;
    use super::super::contract::{Faulty, Sends};
    use super::*;

    #[test]
    fn keys_round_trip() {
        let p = Principal::new("alice").with_scope("c1");
        let key = cancel_key(&p, &RequestId::Number(7));
        assert_eq!(parse_cancel_key(&key), Some((p, RequestId::Number(7))));
        assert_eq!(parse_cancel_key("[1]"), None);
        let me = InstanceId::new("web-1.a").unwrap_or_else(|_| InstanceId::random());
        let id = with_holder("snodo-1-00000000000000ab".into(), &me);
        assert_eq!(holder(&id), Some(me.clone()));
        assert_eq!(holder("snodo-1-00000000000000ab"), None);
        // Only ids of the runtime's own shape name an instance.
        assert_eq!(holder(&with_holder("x".into(), &me)), None);
        assert_eq!(holder(&with_holder("snodo-1-ab".into(), &me)), None);
        assert_eq!(
            holder(&with_holder("snodo--00000000000000ab".into(), &me)),
            None
        );
    }

    /// A flood of answers and cancellations for ids held elsewhere starts at most
    /// `MAX_FORWARDS` sends, and none while the bus is down.
    #[tokio::test]
    async fn forwards_are_bounded_and_none_while_down() {
        // Sends never complete (a server that stopped answering); the state is the test's.
        let bus = Arc::new(Faulty::own_state(
            Arc::new(MemoryBus::new()),
            BusState::Down,
        ));
        bus.sends(Sends::Stuck);
        let link = Link::new(bus.clone(), InstanceId::random(), WhenDown::Open);
        let other = InstanceId::random();
        let p = Principal::new("alice");
        for i in 0..100u32 {
            assert!(!link.forward_answer(
                &with_holder(format!("snodo-{i:x}-0123456789abcdef"), &other),
                Ok(Value::Null)
            ));
            link.forward_cancel(&p, &RequestId::Number(i.into()));
        }
        tokio::task::yield_now().await;
        assert_eq!(bus.sent(), 0, "sent while down");
        bus.set_state(BusState::Up);
        for i in 0..1000u32 {
            let _ = link.forward_answer(
                &with_holder(format!("snodo-{i:x}-0123456789abcdef"), &other),
                Ok(Value::Null),
            );
            link.forward_cancel(&p, &RequestId::Number(i.into()));
        }
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        assert_eq!(bus.sent(), MAX_FORWARDS);
        assert!(link.dropped.load(Ordering::Relaxed) >= 2000 - 64);
    }
}
