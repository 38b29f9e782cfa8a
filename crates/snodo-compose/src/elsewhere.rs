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
//! The backend's progress and log notifications while the holder drives the call for
//! another instance are dropped (no front stream is there to carry them).

use std::sync::{Arc, Weak};

use serde_json::{Value, json};
use snodo::bus::{InstanceId, PeerError, PeerRequest, Peers};
use snodo::{InputRequest, RequestContext, RpcError};
use snodo_client::ClientError;

use crate::asking::{self, Asker, Event, Flight, PARK_TTL, Parked};
use crate::relay::{self, Asked, MAX_ROUNDS, Stop};
use crate::source::SourceError;

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
            let body = json!({"id": id, "n": n, "answer": answer_to_json(answer)});
            let call =
                self.peers
                    .call(&self.instance, &self.topic, ctx.principal(), body, PARK_TTL);
            let got = tokio::select! {
                biased;
                () = ctx.cancellation().cancelled() => return Err(Stop::Cancelled),
                got = call => got.map_err(unreachable)?,
            };
            if let Some(v) = got.get("result") {
                return Ok(v.clone());
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
            let method = asked
                .get("method")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let params = asked.get("params").cloned().unwrap_or(Value::Null);
            q = InputRequest::from_wire(method, params).ok_or_else(bad)?;
        }
    }
}

/// A failed call to the holder as the front's error: the holder's own error as it is,
/// the bus's with what it means for the continuation.
fn unreachable(e: PeerError) -> Stop {
    let busy = matches!(e, PeerError::Busy);
    let e = match e {
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

/// Serves the continuations of `asker`'s parked calls that other instances receive.
pub(crate) fn serve(asker: &Arc<Asker>, peers: &Peers) {
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
    let bad = || RpcError::invalid_params("a continuation from another instance is malformed");
    let id = r.body.get("id").and_then(Value::as_str).ok_or_else(bad)?;
    let n = r.body.get("n").and_then(Value::as_u64).ok_or_else(bad)?;
    let answer = answer_from_json(r.body.get("answer")).ok_or_else(bad)?;
    let who = r.principal.as_ref().map(|p| p.id().to_owned());
    let Parked { flight, reply, who } = asker.unpark(id, who.as_deref())?;
    let _ = reply.send(answer);
    drive(&asker, me, flight, who, n).await
}

/// Drives a resumed call for another instance: `{"result": …}` when it ends, `{"ask":
/// state}` when it asks again (parked again here, under a new id).
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
                    n += 1;
                    if n > MAX_ROUNDS {
                        let _ = reply.send(Err(RpcError::internal("too many questions in one call")));
                        continue;
                    }
                    let Some(q) = InputRequest::from_wire(&m, p) else {
                        let _ = reply.send(Err(RpcError::method_not_found(&m)));
                        continue;
                    };
                    let key = relay::question_key(&m, n);
                    let wire = json!({"method": q.method(), "params": q.params()});
                    return match asker.park(Parked { flight, reply, who }, Some(me)) {
                        Ok(id) => Ok(json!({"ask": relay::parked_state(&id, &key, &wire, n)})),
                        Err(p) => {
                            let _ = p.reply.send(Err(RpcError::internal("too many parked calls")));
                            Err(RpcError::internal("the proxy has too many calls waiting for answers"))
                        }
                    };
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
                return match r {
                    Ok(Ok(v)) if v.get("resultType").and_then(Value::as_str) == Some("input_required") => {
                        Err(RpcError::internal(format!(
                            "backend \"{source}\" answered a resumed call with input_required"
                        )))
                    }
                    Ok(Ok(v)) => Ok(json!({"result": v})),
                    Ok(Err(ClientError::Protocol(e))) => Err(e),
                    Ok(Err(e)) => Err(RpcError::internal(format!("backend \"{source}\": {e}"))),
                    Err(e) => Err(RpcError::internal(format!("backend \"{source}\": {e}"))),
                };
            }
        }
    }
}

/// The front caller's answer as it travels: `{"result": …}` or `{"error": …}`.
fn answer_to_json(a: Result<Value, RpcError>) -> Value {
    match a {
        Ok(v) => json!({ "result": v }),
        Err(e) => json!({"error": {"code": e.code().0, "message": e.message(), "data": e.data()}}),
    }
}

/// The front caller's answer back (`None`: not one).
fn answer_from_json(v: Option<&Value>) -> Option<Result<Value, RpcError>> {
    let v = v?;
    if let Some(r) = v.get("result") {
        return Some(Ok(r.clone()));
    }
    let e = v.get("error")?;
    let code = e.get("code").and_then(Value::as_i64)?;
    let message = e.get("message").and_then(Value::as_str)?.to_owned();
    let err = RpcError::new(snodo::protocol::ErrorCode(code), message);
    Some(Err(match e.get("data").filter(|d| !d.is_null()) {
        Some(d) => err.with_data(d.clone()),
        None => err,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_travel_both_ways() {
        let ok = Ok(json!({"action": "accept"}));
        assert_eq!(
            answer_from_json(Some(&answer_to_json(ok.clone()))),
            Some(ok)
        );
        let e = Err(RpcError::method_not_found("roots/list").with_data(json!({"x": 1})));
        assert_eq!(answer_from_json(Some(&answer_to_json(e.clone()))), Some(e));
        assert_eq!(answer_from_json(Some(&json!({"error": "no"}))), None);
        assert_eq!(answer_from_json(None), None);
    }
}
