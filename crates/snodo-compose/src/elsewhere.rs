//! A parked backend call continued from another instance, over the bus
//! ([`snodo::bus::Peers`]).
//!
//! When the front runtime has a bus, a parked call's id names the instance that holds
//! it (`asking.rs`). A continuation that lands on another instance (round robin, no
//! affinity) is answered there as far as the front caller goes — the answer read from
//! its `inputResponses`, or the same round asked again — and the answer is carried to
//! the holder ([`Holder::resume`]), which gives it to the backend and drives the call
//! until it ends or asks again ([`serve`]); the outcome comes back and is the front's
//! answer. The holder takes the call only for the principal it was parked for.
//!
//! The holder drives the call as the local path does (`relay.rs`: the same question
//! handling and the same reading of how the backend call ended): a 2026-07-28
//! backend's `input_required` comes back as a result and becomes the front's round
//! here; a backend that failed there is this front's `SourceError::Down`, as a resumed
//! call's failure on another connection is locally.
//!
//! The backend's progress and log notifications while the holder drives the call for
//! another instance are dropped (no front stream is there to carry them).
//!
//! Trust: the bus is trusted. Anyone with the bus's credentials can call the holder as
//! any principal, cancel any call it serves and inject replies; the principal check
//! here only keeps one front caller from continuing another's call.

use std::sync::{Arc, Weak};

use serde_json::{Value, json};
use snodo::bus::{InstanceId, PeerError, PeerRequest, Peers, decode_outcome, encode_outcome};
use snodo::{InputRequest, RequestContext, RpcError};
use snodo_client::ClientError;

use crate::asking::{self, Asker, Event, Flight, PARK_TTL, Parked};
use crate::relay::{self, Asked, Stop};
use crate::source::SourceError;

/// The data key that marks a holder's error as its backend's failure (not an answer).
const BACKEND_FAILED: &str = "snodo-compose/backendFailed";

/// Where a continuation's parked call waits, when that is another instance this one
/// reaches over the bus.
pub(crate) struct Holder {
    peers: Peers,
    topic: String,
    instance: InstanceId,
}

impl Holder {
    /// The holder `id` names, when it is another instance and this runtime has a bus
    /// (`None`: the call is looked for here).
    pub(crate) fn of(ctx: &RequestContext, id: &str) -> Option<Self> {
        let (topic, instance) = asking::holder(id)?;
        let peers = ctx.runtime().peers()?;
        (instance != *peers.me()).then_some(Self {
            peers,
            topic,
            instance,
        })
    }

    /// Continues the call parked under `id` (round `n`, waiting for the answer to `q`,
    /// asked as `asked` under `key`) on its holder: the backend's result, or the front's
    /// next round.
    pub(crate) async fn resume(
        self,
        ctx: &RequestContext,
        mut id: String,
        mut key: String,
        mut asked: Value,
        mut q: InputRequest,
        mut n: u64,
    ) -> Result<Value, Stop> {
        loop {
            let answer = match relay::ask_one(ctx, &key, q).await? {
                Asked::Answer(a) => a,
                // Not answered yet: the same round again, the call still parked there.
                Asked::Round(i) => {
                    let state = relay::parked_state(&id, &key, &asked, n);
                    return Err(Stop::Source(SourceError::InputRequired(
                        i.with_state(state),
                    )));
                }
            };
            let body = json!({"id": id, "n": n, "answer": encode_outcome(answer)});
            let call =
                self.peers
                    .call(&self.instance, &self.topic, ctx.principal(), body, PARK_TTL);
            let got = tokio::select! {
                biased;
                () = ctx.cancellation().cancelled() => return Err(Stop::Cancelled),
                got = call => got.map_err(unreachable)?,
            };
            if let Some(v) = got.get("result") {
                // A 2026-07-28 backend's round: the front's, as on the local path.
                return match relay::backend_round(v, &mut n)? {
                    None => Ok(v.clone()),
                    Some((asked, state)) => Err(relay::round_only(ctx, asked, state, n).await),
                };
            }
            // The backend asked again: parked again there, a new round here.
            let next = got.get("ask").cloned().unwrap_or_default();
            let bad = || RpcError::internal("another instance answered a continuation oddly");
            id = next
                .get("park")
                .and_then(Value::as_str)
                .filter(|id| asking::holder(id).is_some_and(|(_, i)| i == self.instance))
                .ok_or_else(bad)?
                .to_owned();
            key = next
                .get("key")
                .and_then(Value::as_str)
                .ok_or_else(bad)?
                .to_owned();
            n = next.get("n").and_then(Value::as_u64).ok_or_else(bad)?;
            asked = next.get("q").cloned().ok_or_else(bad)?;
            q = relay::question_of(&asked).ok_or_else(bad)?;
        }
    }
}

/// A failed call to the holder as the front's error: the holder's own error as it is
/// (its backend's failure as that: the source down), the bus's with what it means for
/// the continuation.
fn unreachable(e: PeerError) -> Stop {
    let busy = matches!(e, PeerError::Busy | PeerError::NotListening);
    let e = match e {
        PeerError::Remote(e) if e.data().and_then(|d| d.get(BACKEND_FAILED)).is_some() => {
            return Stop::Elsewhere(ClientError::Transport(e.message().to_owned()));
        }
        PeerError::Remote(e) => e,
        e => {
            let e = RpcError::internal(format!(
                "the call this requestState continues waits on another instance \
                 and could not be continued there: {e}"
            ));
            if busy { e.retry_later() } else { e }
        }
    };
    Stop::Source(SourceError::Rpc(e))
}

/// Serves the continuations of `asker`'s parked calls that other instances receive
/// (once per asker: the topic is unserved when the asker goes, `asking.rs`).
pub(crate) fn serve(asker: &Arc<Asker>, peers: &Peers) {
    if !asker.served_on(peers) {
        return;
    }
    let (weak, me) = (Arc::downgrade(asker), peers.me().clone());
    peers.serve(
        asker.topic(),
        Arc::new(move |r: PeerRequest| {
            let (weak, me) = (Weak::clone(&weak), me.clone());
            Box::pin(async move { continued(&weak, &me, r).await })
        }),
    );
}

/// One continuation from another instance: the answer given to the parked call, the
/// call driven until it ends or asks again.
async fn continued(
    asker: &Weak<Asker>,
    me: &InstanceId,
    r: PeerRequest,
) -> Result<Value, RpcError> {
    let asker = asker
        .upgrade()
        .ok_or_else(|| RpcError::internal("the backend was unmounted"))?;
    // Not the front caller's doing: an internal error for it.
    let bad = || RpcError::internal("a continuation from another instance is malformed");
    let id = r.body.get("id").and_then(Value::as_str).ok_or_else(bad)?;
    let n = r.body.get("n").and_then(Value::as_u64).ok_or_else(bad)?;
    let answer = r.body.get("answer").cloned().and_then(decode_outcome);
    let answer = answer.ok_or_else(bad)?;
    let who = r.principal.as_ref().map(|p| p.id().to_owned());
    let Parked { flight, reply, who } = asker.unpark(id, who.as_deref())?;
    let _ = reply.send(answer);
    drive(&asker, me, flight, who, n).await
}

/// Drives a resumed call for another instance: `{"result": …}` when it ends (a
/// 2026-07-28 backend's round too: the front makes it its own), `{"ask": state}` when
/// it asks again (parked again here, under a new id).
async fn drive(
    asker: &Arc<Asker>,
    me: &InstanceId,
    mut flight: Flight,
    who: Option<String>,
    mut n: u64,
) -> Result<Value, RpcError> {
    loop {
        tokio::select! {
            biased;
            Some(ev) = flight.events.recv() => match ev {
                Event::Ask(m, p, reply) => {
                    let Some((key, _, wire, reply)) = relay::accept(&mut n, &m, p, reply) else {
                        continue;
                    };
                    let id = asker.park(Parked { flight, reply, who }, Some(me))?;
                    return Ok(json!({"ask": relay::parked_state(&id, &key, &wire, n)}));
                }
                // No front stream here to carry them.
                Event::Progress(_) | Event::Log(_) => {}
            },
            r = &mut flight.done => {
                while let Ok(ev) = flight.events.try_recv() {
                    if let Event::Ask(_, _, reply) = ev {
                        let _ = reply.send(Err(RpcError::internal("the call has ended")));
                    }
                }
                let source = asker.source();
                return match r.and_then(snodo_client::Answer::into_value) {
                    Ok(v) => Ok(json!({"result": v})),
                    Err(ClientError::Protocol(e)) => Err(e),
                    Err(e) => Err(RpcError::internal(format!(
                        "backend \"{source}\" on instance {me}: {e}"
                    ))
                    .with_data(json!({BACKEND_FAILED: true}))),
                };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A source's topic is served once, and no longer once the source is gone (a
    /// remount adds no topic for good).
    #[tokio::test]
    async fn a_sources_topic_goes_with_it() {
        let runtime = snodo::Runtime::builder("t", "1")
            .bus(Arc::new(snodo::bus::MemoryBus::new()))
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let peers = runtime.peers().unwrap_or_else(|| panic!("a bus"));
        let asker = Asker::new("b");
        let topic = asker.topic();
        serve(&asker, &peers);
        serve(&asker, &peers);
        assert!(peers.serves(&topic));
        drop(asker);
        assert!(!peers.serves(&topic));
    }

    /// A holder's backend failure is the front's source down; its other errors are
    /// the front's as they are.
    #[test]
    fn a_holders_backend_failure_is_the_source_down() {
        let failed =
            RpcError::internal("backend \"b\": gone").with_data(json!({BACKEND_FAILED: true}));
        assert!(matches!(
            unreachable(PeerError::Remote(failed)),
            Stop::Elsewhere(ClientError::Transport(m)) if m.contains("gone")
        ));
        let refused = RpcError::invalid_params("belongs to another caller");
        assert!(matches!(
            unreachable(PeerError::Remote(refused.clone())),
            Stop::Source(SourceError::Rpc(e)) if e == refused
        ));
        assert!(matches!(
            unreachable(PeerError::Busy),
            Stop::Source(SourceError::Rpc(e)) if e.message().contains("could not be continued")
        ));
    }
}
