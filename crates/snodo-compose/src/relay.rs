//! One backend request on behalf of a front request: the backend's progress and log
//! notifications for it go out on the front request's stream; the front's cancellation
//! (a `notifications/cancelled`, a disconnect, the deadline) abandons the backend
//! request, which `snodo-client` turns into the backend's cancellation
//! (`notifications/cancelled` on stdio, the response closed over HTTP); and the
//! backend's questions reach the front caller.
//!
//! Questions, both ways round, go through the front's own
//! [`RequestContext::ask_all`], which asks a legacy front caller with a server request
//! and a 2026-07-28 one with `input_required`:
//! - a 2026-07-28 backend's `input_required` result: its `inputRequests` are asked of
//!   the front caller; its `requestState` travels inside the front's (sealed with the
//!   front's state key), and the continuation re-sends the call with the answers and
//!   the backend's own state, on any instance;
//! - an initialize-era backend's server request during the call: asked of the front
//!   caller; for a 2026-07-28 front the backend call is parked on this instance
//!   ([`Asker`]) and the front's `requestState` names it (and, with a bus, this
//!   instance: a continuation that reaches another is carried here, `elsewhere.rs`).

use std::sync::Arc;

use serde_json::{Map, Value, json};
use snodo::protocol::{ErrorCode, LogLevel, Method};
use snodo::{HandlerError, InputRequest, InputRequired, RequestContext, RpcError};
use snodo_client::{Answer, CallOptions, Client, ClientError};
use tokio::sync::mpsc;

use crate::asking::{Asker, EVENTS, Event, Flight, Line, Parked, Reply};
use crate::source::SourceError;

/// The most input rounds one front call may relay.
pub(crate) const MAX_ROUNDS: u64 = 32;

/// Why a relayed call stopped without a result.
pub(crate) enum Stop {
    /// The backend request failed on the connection the call holds.
    Client(ClientError),
    /// A parked backend request, resumed, failed on a connection the call does not
    /// hold (one that was started again since): not the held one's failure.
    Elsewhere(ClientError),
    /// The front request was cancelled: the backend request was abandoned, the
    /// connection is fine.
    Cancelled,
    /// An answer for the front: an error, or a round of questions.
    Source(SourceError),
}

impl From<RpcError> for Stop {
    fn from(e: RpcError) -> Self {
        Self::Source(SourceError::Rpc(e))
    }
}

/// The front round's state (the application state of the front's sealed
/// `requestState`): where the backend call stands.
enum Round {
    /// A 2026-07-28 backend asked (`b`: its `requestState`; `q`: its `inputRequests`).
    Backend {
        state: Value,
        asked: Map<String, Value>,
    },
    /// An initialize-era backend's call is parked under `id`, waiting for the answer
    /// to `q` under `key`.
    Parked {
        id: String,
        key: String,
        asked: Value,
    },
}

impl Round {
    fn read(ctx: &RequestContext) -> Option<(Self, u64)> {
        let s = ctx.request_state()?;
        let n = s.get("n").and_then(Value::as_u64)?;
        if let Some(id) = s.get("park").and_then(Value::as_str) {
            let key = s.get("key").and_then(Value::as_str)?.to_owned();
            let asked = s.get("q").cloned()?;
            return Some((
                Self::Parked {
                    id: id.to_owned(),
                    key,
                    asked,
                },
                n,
            ));
        }
        let state = s.get("b").cloned().unwrap_or(Value::Null);
        let asked = s.get("q").and_then(Value::as_object).cloned()?;
        Some((Self::Backend { state, asked }, n))
    }
}

/// The front key of a backend key in round `n` (answers of every round accumulate in
/// the front's state: a key asked again in a later round must be a new one).
fn front_key(key: &str, n: u64) -> String {
    if n <= 1 {
        key.to_owned()
    } else {
        format!("{key}~{n}")
    }
}

/// A backend's questions as the front asks them.
fn questions(asked: &Map<String, Value>, n: u64) -> Result<Vec<(String, InputRequest)>, RpcError> {
    asked
        .iter()
        .map(|(k, q)| {
            let method = q.get("method").and_then(Value::as_str).unwrap_or_default();
            let params = q.get("params").cloned().unwrap_or(Value::Null);
            InputRequest::from_wire(method, params)
                .map(|r| (front_key(k, n), r))
                .ok_or_else(|| {
                    RpcError::internal(format!(
                        "the backend asked {method:?}, which cannot be relayed"
                    ))
                })
        })
        .collect()
}

/// Asks the front caller; a round of questions comes back as [`Stop`] with `state`.
async fn ask_front(
    ctx: &RequestContext,
    qs: Vec<(String, InputRequest)>,
    state: impl FnOnce() -> Value,
) -> Result<Map<String, Value>, Stop> {
    match ctx.ask_all(qs).await {
        Ok(a) => Ok(a),
        Err(HandlerError::InputRequired(i)) => Err(Stop::Source(SourceError::InputRequired(
            i.with_state(state()),
        ))),
        Err(HandlerError::Protocol(e)) => Err(e.into()),
        Err(e) => Err(RpcError::internal(e.to_string()).into()),
    }
}

/// Starts the backend request: its reports arrive on the flight. A front request whose
/// questions are all answered while it waits (it cannot be parked) drives the backend
/// request itself; otherwise it runs in a task of its own (a parked call goes on
/// without the front request that started it).
fn start(
    client: &Client,
    conn: u64,
    asker: &Arc<Asker>,
    method: &str,
    params: Arc<Map<String, Value>>,
    ctx: &RequestContext,
) -> Flight {
    let (tx, rx) = mpsc::channel::<Event>(EVENTS);
    let line = Line::new(tx);
    let mut opts = CallOptions::default().keep_input_required();
    if ctx.wants_progress() {
        let line = line.clone();
        opts = opts.on_progress(move |p| line.report(Event::Progress(p)));
    }
    let log = line.clone();
    opts = opts.on_log(move |m| log.report(Event::Log(m)));
    let questions = line.clone();
    opts = opts.on_server_request(move |m, p| {
        let line = questions.clone();
        async move { line.ask(m, p).await }
    });
    // A method snodo knows is borrowed (the call outlives `method`).
    let method: std::borrow::Cow<'static, str> = match Method::parse(method) {
        Method::Unknown => method.to_owned().into(),
        known => known.as_str().into(),
    };
    let c = client.clone();
    let inline = !ctx.asks_in_rounds();
    asker.flight(
        conn,
        line,
        rx,
        async move { c.request_answer(&method, params, &opts).await },
        inline,
    )
}

/// Asks the front caller round `n` of a 2026-07-28 backend's questions (`asked`, with
/// the backend's `state`): the params that continue the backend call with the answers
/// (or the front's own round, as [`Stop`]).
async fn answer_round(
    ctx: &RequestContext,
    params: &Map<String, Value>,
    asked: Map<String, Value>,
    state: Value,
    n: u64,
) -> Result<Arc<Map<String, Value>>, Stop> {
    let qs = questions(&asked, n)?;
    let again = || json!({"b": state, "q": asked, "n": n});
    let got = ask_front(ctx, qs, again).await?;
    let answers = answers_by_backend_key(&asked, got, n);
    Ok(with_round(params, answers, state))
}

/// Puts an initialize-era backend's question `q` to the front caller under `key`, and
/// answers the backend through `reply`. A question the front caller cannot answer (it
/// did not declare the capability: the backend hears method-not-found, as from such a
/// client) or refused is answered as such, and the call goes on — the backend decides
/// what a refused question means. (A stdio backend's question names no call:
/// server-everything's `roots/list` after initialize can land on the one call in
/// flight.) `Some` when the front caller answers in a round of its own: the call is
/// then parked with `reply`.
async fn put(
    ctx: &RequestContext,
    key: &str,
    q: InputRequest,
    reply: Reply,
) -> Result<Option<(InputRequired, Reply)>, Stop> {
    match ask_one(ctx, key, q).await? {
        Asked::Answer(a) => {
            let _ = reply.send(a);
            Ok(None)
        }
        Asked::Round(i) => Ok(Some((i, reply))),
    }
}

/// What the front caller said to one question.
pub(crate) enum Asked {
    /// Its answer (or refusal), for the backend.
    Answer(Result<Value, RpcError>),
    /// It answers in a round of its own.
    Round(InputRequired),
}

/// Puts question `q` to the front caller under `key` ([`put`] without the reply).
pub(crate) async fn ask_one(
    ctx: &RequestContext,
    key: &str,
    q: InputRequest,
) -> Result<Asked, Stop> {
    let method = q.method().to_owned();
    match ctx.ask_all([(key.to_owned(), q)]).await {
        Ok(mut a) => Ok(Asked::Answer(Ok(a.remove(key).unwrap_or(Value::Null)))),
        Err(HandlerError::InputRequired(i)) => Ok(Asked::Round(i)),
        Err(HandlerError::Protocol(e)) => {
            let e = if e.code() == ErrorCode::MISSING_CLIENT_CAPABILITY {
                RpcError::method_not_found(&method)
            } else {
                e
            };
            Ok(Asked::Answer(Err(e)))
        }
        Err(e) => Err(RpcError::internal(e.to_string()).into()),
    }
}

/// The key of the `n`th question of a call, asked with `method`.
pub(crate) fn question_key(method: &str, n: u64) -> String {
    format!("{}{n}", method.split('/').next().unwrap_or("q"))
}

/// The front round's state naming the call parked under `id`, waiting for the answer
/// to `asked` under `key`.
pub(crate) fn parked_state(id: &str, key: &str, asked: &Value, n: u64) -> Value {
    json!({"park": id, "key": key, "q": asked, "n": n})
}

/// Parks the call until the front caller continues round `n` (question `asked` under
/// `key`): the front's `input_required`, its state naming the parked call.
fn park(
    asker: &Arc<Asker>,
    ctx: &RequestContext,
    parked: Parked,
    key: String,
    asked: Value,
    n: u64,
    i: InputRequired,
) -> Stop {
    // With a bus, the id names this instance, whose continuations another serves.
    let peers = ctx.runtime().peers();
    if let Some(peers) = &peers {
        crate::elsewhere::serve(asker, peers);
    }
    match asker.park(parked, peers.as_ref().map(snodo::bus::Peers::me)) {
        Ok(id) => {
            let state = parked_state(&id, &key, &asked, n);
            Stop::Source(SourceError::InputRequired(i.with_state(state)))
        }
        Err(e) => e.into(),
    }
}

/// The params of the next round: the call's own (copied only here, in a round) with
/// the answers and the backend's state.
fn with_round(
    params: &Map<String, Value>,
    answers: Map<String, Value>,
    state: Value,
) -> Arc<Map<String, Value>> {
    let mut p = params.clone();
    p.insert("inputResponses".into(), Value::Object(answers));
    if !state.is_null() {
        p.insert("requestState".into(), state);
    }
    Arc::new(p)
}

/// Sends `method` with `params` through `client`, relaying progress, logs and
/// questions to the front request `ctx`.
pub(crate) async fn call(
    client: &Client,
    conn: u64,
    asker: &Arc<Asker>,
    method: &str,
    params: Value,
    ctx: &RequestContext,
) -> Result<Answer, Stop> {
    // Shared with each round's backend request rather than copied for it.
    let params = Arc::new(match params {
        Value::Object(m) => m,
        Value::Null => Map::new(),
        _ => return Err(RpcError::internal("a backend request's params must be an object").into()),
    });
    let (mut flight, mut n) = match Round::read(ctx) {
        None => (
            start(client, conn, asker, method, Arc::clone(&params), ctx),
            0,
        ),
        Some((Round::Backend { state, asked }, n)) => {
            let p = answer_round(ctx, &params, asked, state, n).await?;
            (start(client, conn, asker, method, p, ctx), n)
        }
        Some((Round::Parked { id, key, asked }, n)) => {
            let q = question_of(&asked)
                .ok_or_else(|| RpcError::invalid_params("requestState names no question"))?;
            // (One parked on another instance is continued there: `elsewhere`, before
            // a connection is leased.)
            let who = ctx.principal().map(|p| p.id().to_owned());
            let Parked { flight, reply, who } = asker.unpark(&id, who.as_deref())?;
            if let Some((i, reply)) = put(ctx, &key, q, reply).await? {
                // Still unanswered: parked again (under a new id, in a new state).
                let parked = Parked { flight, reply, who };
                return Err(park(asker, ctx, parked, key, asked, n, i));
            }
            (flight, n)
        }
    };
    loop {
        tokio::select! {
            biased;
            // Dropping the flight abandons the backend request (its cancellation).
            () = ctx.cancellation().cancelled() => {
                return Err(Stop::Cancelled);
            }
            Some(ev) = flight.events.recv() => match ev {
                Event::Ask(m, p, reply) => {
                    let Some((key, q, wire, reply)) = accept(&mut n, &m, p, reply) else {
                        continue;
                    };
                    if let Some((i, reply)) = put(ctx, &key, q, reply).await? {
                        let who = ctx.principal().map(|p| p.id().to_owned());
                        return Err(park(asker, ctx, Parked { flight, reply, who }, key, wire, n, i));
                    }
                }
                Event::Progress(p) => ctx.progress(p.progress, p.total, p.message.as_deref()).await,
                Event::Log(m) => relay_log(ctx, m).await,
            },
            r = &mut flight.done => {
                // What arrived before the answer still goes out first.
                while let Ok(ev) = flight.events.try_recv() {
                    match ev {
                        Event::Progress(p) => ctx.progress(p.progress, p.total, p.message.as_deref()).await,
                        Event::Log(m) => relay_log(ctx, m).await,
                        Event::Ask(_, _, reply) => {
                            let _ = reply.send(Err(RpcError::internal("the call has ended")));
                        }
                    }
                }
                // A resumed parked call may run on a connection replaced since.
                let failed = |e| if flight.conn == conn { Stop::Client(e) } else { Stop::Elsewhere(e) };
                let a = r.map_err(failed)?;
                // A 2026-07-28 backend asks: a round of the front's.
                let v = match tree_if_round(a) {
                    Ok(a) => return Ok(a),
                    // The backend answered, but not with a result serde_json reads as a
                    // tree (nested too deep): this call's failure, not the backend's.
                    Err(v) => v.map_err(|e| {
                        Stop::Source(SourceError::Rpc(RpcError::internal(format!(
                            "the backend's result cannot be read: {e}"
                        ))))
                    })?,
                };
                let Some((asked, state)) = backend_round(&v, &mut n)? else {
                    return Ok(v.into());
                };
                // A legacy front caller answers right away (server requests).
                let p = answer_round(ctx, &params, asked, state, n).await?;
                flight = start(client, conn, asker, method, p, ctx);
            }
        }
    }
}

/// Accepts a backend's question (its `n`th in the call, counted here) for the front
/// caller: its key, the question and its wire form. `None` when it is refused (too many
/// in one call, or not one that can be relayed): the backend has been told.
pub(crate) fn accept(
    n: &mut u64,
    method: &str,
    params: Value,
    reply: Reply,
) -> Option<(String, InputRequest, Value, Reply)> {
    *n += 1;
    if *n > MAX_ROUNDS {
        let _ = reply.send(Err(RpcError::internal("too many questions in one call")));
        return None;
    }
    let Some(q) = InputRequest::from_wire(method, params) else {
        let _ = reply.send(Err(RpcError::method_not_found(method)));
        return None;
    };
    let key = question_key(method, *n);
    let wire = json!({"method": q.method(), "params": q.params()});
    Some((key, q, wire, reply))
}

/// The question a round's state holds in wire form (`{"method", "params"}`).
pub(crate) fn question_of(asked: &Value) -> Option<InputRequest> {
    let method = asked.get("method").and_then(Value::as_str)?;
    InputRequest::from_wire(method, asked.get("params").cloned().unwrap_or(Value::Null))
}

/// The member of a result that tells a 2026-07-28 round of questions from a final
/// result (`"resultType": "input_required"`); the rest is skipped, not read.
#[derive(serde::Deserialize)]
struct Kind {
    #[serde(rename = "resultType", default)]
    result_type: Option<String>,
}

/// `Ok` with the answer as it came when it is surely a final result (JSON text whose
/// `resultType`, if any, is not `input_required`); `Err` with its tree otherwise, for
/// [`backend_round`] to tell.
pub(crate) fn tree_if_round(a: Answer) -> Result<Answer, Result<Value, ClientError>> {
    let final_text = a.as_text().is_some()
        && (!a.may_hold("input_required")
            || a.read::<Kind>()
                .is_ok_and(|k| k.result_type.as_deref() != Some("input_required")));
    if final_text {
        Ok(a)
    } else {
        Err(a.into_value())
    }
}

/// A 2026-07-28 backend's round: its `inputRequests` and its `requestState`.
pub(crate) type BackendRound = (Map<String, Value>, Value);

/// A backend's result that is a 2026-07-28 round of questions (round `n`, counted
/// here): its `inputRequests` and `requestState`; `None` for a final result.
pub(crate) fn backend_round(v: &Value, n: &mut u64) -> Result<Option<BackendRound>, RpcError> {
    if v.get("resultType").and_then(Value::as_str) != Some("input_required") {
        return Ok(None);
    }
    *n += 1;
    if *n > MAX_ROUNDS {
        return Err(RpcError::internal(
            "the backend asked for too many input rounds",
        ));
    }
    let asked = v
        .get("inputRequests")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let state = v.get("requestState").cloned().unwrap_or(Value::Null);
    Ok(Some((asked, state)))
}

/// Round `n` of a 2026-07-28 backend's questions (`asked`, with the backend's `state`)
/// put to the front caller when no connection is held here (a call continued on
/// another instance): the front's round. Answered at once, it cannot go on here.
pub(crate) async fn round_only(
    ctx: &RequestContext,
    asked: Map<String, Value>,
    state: Value,
    n: u64,
) -> Stop {
    let qs = match questions(&asked, n) {
        Ok(qs) => qs,
        Err(e) => return e.into(),
    };
    let again = || json!({"b": state, "q": asked, "n": n});
    match ask_front(ctx, qs, again).await {
        Err(stop) => stop,
        Ok(_) => RpcError::internal(
            "the backend's questions were answered before they were asked: \
             the call cannot go on",
        )
        .into(),
    }
}

/// A continuation of a call parked on another instance (the round's state names it):
/// continued there over the bus, with no connection leased here. `None`: not one.
pub(crate) async fn elsewhere(ctx: &RequestContext) -> Option<Result<Value, Stop>> {
    let (Round::Parked { id, key, asked }, n) = Round::read(ctx)? else {
        return None;
    };
    let there = crate::elsewhere::Holder::of(ctx, &id)?;
    let Some(q) = question_of(&asked) else {
        return Some(Err(RpcError::invalid_params(
            "requestState names no question",
        )
        .into()));
    };
    Some(there.resume(ctx, id, key, asked, q, n).await)
}

/// The front's answers under the backend's own keys.
fn answers_by_backend_key(
    asked: &Map<String, Value>,
    mut got: Map<String, Value>,
    n: u64,
) -> Map<String, Value> {
    asked
        .keys()
        .filter_map(|k| got.remove(&front_key(k, n)).map(|v| (k.clone(), v)))
        .collect()
}

async fn relay_log(ctx: &RequestContext, m: snodo_client::LogMessage) {
    let level = LogLevel::parse(&m.level).unwrap_or(LogLevel::Info);
    ctx.log(level, m.logger.as_deref(), m.data).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(json: &str) -> Answer {
        let raw = serde_json::value::RawValue::from_string(json.to_owned())
            .unwrap_or_else(|e| panic!("{e}"));
        Answer::from_text(raw)
    }

    /// A result read from its text is passed on as it came only when it surely is no
    /// round; anything that may be one goes to its tree, which `backend_round` reads.
    #[test]
    fn only_a_text_result_that_is_surely_final_skips_its_tree() {
        for (json, passed_on) in [
            (r#"{"content":[{"type":"text","text":"hi"}]}"#, true),
            (
                r#"{"content":[{"type":"text","text":"input_required"}]}"#,
                true,
            ),
            (r#"{"resultType":"complete","content":[]}"#, true),
            (
                r#"{"resultType":"input_required","inputRequests":{}}"#,
                false,
            ),
            (
                r#"{"resultType":"input\u005frequired","inputRequests":{}}"#,
                false,
            ),
            (r#"{"resultType":["input_required"]}"#, false),
        ] {
            assert_eq!(tree_if_round(text(json)).is_ok(), passed_on, "{json}");
        }
        // A tree is always handed back as a tree.
        let tree = Answer::from(json!({"content": []}));
        assert!(tree_if_round(tree).is_err());
    }
}
