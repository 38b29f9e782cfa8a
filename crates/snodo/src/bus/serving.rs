//! The serving side of calls between instances ([`Peers`](super::Peers)): a call
//! another instance sent here is taken (said so at once, and again every [`BEAT`] while
//! it runs, so its caller can tell a live holder from a dead one), run within its time
//! and answered; a caller's cancellation stops it, even one that overtook its call.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::link::Link;
use super::peers::{ACCEPT_WITHIN, PeerRequest, encode_outcome};
use super::{Address, BusError, BusState, InstanceId, Message};
use crate::caller::Principal;
use crate::protocol::RpcError;

/// How often a served call says it is still being worked on: twice within the
/// caller's bound on silence ([`ACCEPT_WITHIN`]).
pub(crate) const BEAT: Duration = match ACCEPT_WITHIN.checked_div(2) {
    Some(d) => d,
    None => ACCEPT_WITHIN,
};

/// How long past its caller's time a served call may run (the caller's cancellation
/// normally ends it first).
const GRACE: Duration = Duration::from_secs(1);

/// How many cancellations of calls not (yet) served here are remembered, and for how
/// long: a cancellation can overtake its call on a bus (PostgreSQL's notifications on
/// pooled connections), and the call is then refused when it arrives.
const CANCELLED_KEPT: usize = 1024;
const CANCELLED_FOR: Duration = Duration::from_secs(10);

/// A served call's key: the calling instance and its key for the call.
type Key = (String, String);

/// The calls served here: cancelled when their caller abandons one.
#[derive(Default)]
pub(crate) struct Served {
    running: Mutex<HashMap<Key, CancellationToken>>,
    /// Cancellations that found no call running, newest last.
    cancelled: Mutex<VecDeque<(Key, Instant)>>,
}

impl Served {
    /// Whether `key` was cancelled before it arrived (forgetting stale entries).
    fn was_cancelled(&self, key: &Key) -> bool {
        let Ok(mut c) = self.cancelled.lock() else {
            return false;
        };
        let now = Instant::now();
        while c
            .front()
            .is_some_and(|(_, at)| now.duration_since(*at) > CANCELLED_FOR)
        {
            c.pop_front();
        }
        c.iter().any(|(k, _)| k == key)
    }

    /// Cancels the call served under `key`, or remembers that it was cancelled.
    fn cancel(&self, key: Key) -> bool {
        let token = self.running.lock().ok().and_then(|mut r| r.remove(&key));
        if let Some(t) = token {
            t.cancel();
            return true;
        }
        if let Ok(mut c) = self.cancelled.lock() {
            if c.len() >= CANCELLED_KEPT {
                c.pop_front();
            }
            c.push_back((key, Instant::now()));
        }
        false
    }
}

/// The calling instance a call's key names (`{instance}:{boot}:{n}`, `peers.rs`).
fn caller_of(request: &str) -> Option<&str> {
    request.rsplitn(3, ':').nth(2)
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

/// Serves a call another instance sent here: says it took it (and again every
/// [`BEAT`]), runs the service within the call's time (until the caller abandons it,
/// this instance's bus goes down or the link is gone) and sends its answer back.
pub(crate) fn serve(link: &Arc<Link>, call: Incoming) {
    let Ok(from) = InstanceId::new(&call.from) else {
        return;
    };
    let key: Key = (call.from, call.request);
    // Abandoned before it arrived: nobody waits for it.
    if link.peers.served.was_cancelled(&key) {
        return;
    }
    let handler = link
        .peers
        .services
        .lock()
        .ok()
        .and_then(|s| s.get(&call.topic).cloned());
    // A refusal is sent as forwards are (at most MAX_FORWARDS at once, dropped beyond):
    // a flood of calls for nothing here queues no unbounded sends.
    let refuse = |e: RpcError| {
        let m = Message::Reply {
            request: key.1.clone(),
            body: encode_outcome(Err(e)),
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
    let abandoned = CancellationToken::new();
    {
        let Ok(mut r) = link.peers.served.running.lock() else {
            return;
        };
        // Delivered twice: the first delivery answers.
        if r.contains_key(&key) {
            return;
        }
        let Ok(permit) = Arc::clone(&link.peers.serving).try_acquire_owned() else {
            drop(r);
            refuse(RpcError::internal(format!("instance {} is busy", link.me())).retry_later());
            return;
        };
        r.insert(key.clone(), abandoned.clone());
        spawn(
            link,
            permit,
            key,
            from,
            call.principal,
            call.body,
            call.within_ms,
            handler,
            abandoned,
        );
    }
}

#[allow(clippy::too_many_arguments)]
fn spawn(
    link: &Arc<Link>,
    permit: tokio::sync::OwnedSemaphorePermit,
    key: Key,
    from: InstanceId,
    principal: Option<(String, Option<String>)>,
    body: Value,
    within_ms: u64,
    handler: super::PeerHandler,
    abandoned: CancellationToken,
) {
    let bus = Arc::clone(link.bus());
    let to = from.clone();
    let reply = move |request: String, body: Value| {
        let (bus, to) = (Arc::clone(&bus), to.clone());
        async move {
            let m = Message::Reply {
                request: request.clone(),
                body,
            };
            // The bus refuses a message too large to carry before it sends anything.
            let mut sent = bus.send(Address::Instance(to.clone()), m).await;
            if let Err(BusError::Invalid(_)) = sent {
                let e = RpcError::internal("the answer is too large to carry on the bus");
                let m = Message::Reply {
                    request,
                    body: encode_outcome(Err(e)),
                };
                sent = bus.send(Address::Instance(to), m).await;
            }
            if let Err(e) = sent {
                tracing::warn!(target: "snodo::bus", error = %e, "could not send a reply to another instance");
            }
        }
    };
    let principal = principal.map(|(id, scope)| Principal::new(id).with_scope_of(scope));
    let request = PeerRequest {
        from,
        principal,
        body,
    };
    let within = Duration::from_millis(within_ms);
    let (gone, mut state) = (link.gone(), link.bus().state());
    let link = Arc::downgrade(link);
    tokio::spawn(async move {
        let _permit = permit;
        let _running = Running(link, key.clone());
        let request_key = key.1.clone();
        reply(request_key.clone(), json!({"accepted": true})).await;
        // Still working: said every BEAT while the service runs (a send that hangs
        // holds up the next beat, not the service).
        let beats = async {
            loop {
                tokio::time::sleep(BEAT).await;
                reply(request_key.clone(), json!({"accepted": true})).await;
            }
        };
        // This instance's bus down: the caller cannot hear the answer (it gives up
        // after ACCEPT_WITHIN of silence), so the service stops.
        let down = async {
            if state.wait_for(|s| *s == BusState::Down).await.is_err() {
                // No state to watch (the bus is gone with the link): `gone` ends it.
                std::future::pending::<()>().await;
            }
        };
        let answer = tokio::select! {
            biased;
            () = gone.cancelled() => Err(RpcError::internal("the instance is shutting down")),
            // The caller gave up: nobody reads the answer.
            () = abandoned.cancelled() => return,
            () = down => return,
            // (A little past the caller's time, which ends first and cancels it.)
            r = tokio::time::timeout(within.saturating_add(GRACE), handler(request)) => r.unwrap_or_else(|_| {
                Err(RpcError::internal("the call ran out of time on the instance that served it"))
            }),
            () = beats => return,
        };
        reply(request_key, encode_outcome(answer)).await;
    });
}

/// Removes a served call's entry when it ends.
struct Running(Weak<Link>, Key);

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(link) = self.0.upgrade() {
            if let Ok(mut r) = link.peers.served.running.lock() {
                r.remove(&self.1);
            }
        }
    }
}

/// Cancels the call served here under the caller's `request` key, which its caller
/// abandoned (remembered a while when it has not arrived yet); `false` when none runs.
pub(crate) fn cancel(link: &Link, request: &str) -> bool {
    let Some(from) = caller_of(request) else {
        return false;
    };
    link.peers
        .served
        .cancel((from.to_owned(), request.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cancellation_that_overtook_its_call_is_remembered_a_while() {
        let served = Served::default();
        let key: Key = ("a".into(), "a:b:1".into());
        assert!(!served.was_cancelled(&key));
        assert!(!served.cancel(key.clone()), "nothing ran");
        assert!(served.was_cancelled(&key));
        for n in 0..CANCELLED_KEPT {
            served.cancel(("a".into(), format!("a:b:x{n}")));
        }
        assert!(!served.was_cancelled(&key), "bounded: the oldest forgotten");
        assert_eq!(caller_of("inst-1:boot:7"), Some("inst-1"));
        assert_eq!(caller_of("nokey"), None);
    }
}
