//! Where a backend's questions go: the backend calls in flight on one source's
//! connection (so that a question can be put to the front call it belongs to), and the
//! calls parked while a 2026-07-28 front caller answers an `input_required` round.
//!
//! A parked call is per instance: it waits here, holding the backend request open,
//! until the continuation arrives, its time runs out, or the source goes. The
//! continuation names it in the front's sealed `requestState` with this source's nonce
//! and, when the front runtime has a bus, this instance's id (`NONCE.N@INSTANCE`): a
//! continuation that reaches another instance is carried here over the bus
//! (`elsewhere.rs`); without a bus it is told the call waits on another instance.

use std::collections::HashMap;
use std::collections::hash_map::RandomState;
use std::future::Future;
use std::hash::{BuildHasher as _, Hasher as _};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use serde_json::Value;
use snodo::RpcError;
use snodo::bus::{HOLDER, InstanceId, Peers};
use snodo_client::{Answer, ClientBuilder, ClientError, LogMessage, Progress};
use tokio::sync::{mpsc, oneshot};
use tokio::task::{AbortHandle, JoinHandle};

/// How long a backend call waits, parked, for the front's continuation.
pub(crate) const PARK_TTL: Duration = Duration::from_secs(300);
/// How many calls one source keeps parked at most (beyond, questions are refused).
pub(crate) const MAX_PARKED: usize = 1024;
/// How many of them one principal may hold (anonymous callers count as one): a caller
/// that never continues must not take every other caller's room for [`PARK_TTL`].
pub(crate) const MAX_PARKED_PER_PRINCIPAL: usize = 64;
/// Reports of one backend call not yet relayed (progress and logs past it are dropped:
/// a parked call's are read by no one, and a slow front stream must not make the proxy
/// buffer a chatty backend's notifications without bound).
pub(crate) const EVENTS: usize = 64;

/// The answer to a backend's question, sent back to the backend.
pub(crate) type Reply = oneshot::Sender<Result<Value, RpcError>>;

/// What a backend call in flight reports to the front call that drives it.
pub(crate) enum Event {
    Progress(Progress),
    Log(LogMessage),
    /// A server request (`elicitation/create`, `sampling/createMessage`, `roots/list`).
    Ask(String, Value, Reply),
}

/// A backend call in flight: its reports and its outcome. Dropping it abandons the
/// backend request (which the client turns into the backend's cancellation).
pub(crate) struct Flight {
    key: u64,
    /// The connection the backend request runs on ([`Conn::id`](crate::pool::Conn)).
    pub(crate) conn: u64,
    owner: Weak<Asker>,
    pub(crate) events: mpsc::Receiver<Event>,
    pub(crate) done: Done,
}

/// A backend call's outcome, as it runs: in a task of its own (a call that may be
/// parked, and resumed by another front request), or driven by the front call that
/// started it (one that cannot be parked: no task to spawn and wake).
pub(crate) enum Done {
    Task(JoinHandle<Result<Answer, ClientError>>),
    Inline(Pin<Box<dyn Future<Output = Result<Answer, ClientError>> + Send>>),
}

impl Future for Done {
    type Output = Result<Answer, ClientError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.get_mut() {
            // The task lost (panicked, aborted): a transport failure.
            Self::Task(h) => Pin::new(h)
                .poll(cx)
                .map(|r| r.unwrap_or_else(|e| Err(ClientError::Transport(e.to_string())))),
            Self::Inline(f) => f.as_mut().poll(cx),
        }
    }
}

impl Drop for Flight {
    fn drop(&mut self) {
        // (An inline call is dropped with the flight.)
        if let Done::Task(h) = &self.done {
            h.abort();
        }
        if let Some(a) = self.owner.upgrade() {
            if let Ok(mut f) = a.flights.lock() {
                f.remove(&self.key);
            }
        }
    }
}

/// A backend call waiting for a front continuation: the call and the question's reply.
pub(crate) struct Parked {
    pub(crate) flight: Flight,
    pub(crate) reply: Reply,
    /// The front caller's principal id (`None`: anonymous).
    pub(crate) who: Option<String>,
}

/// One source's backend calls in flight and parked.
pub(crate) struct Asker {
    source: String,
    /// Tells this instance's parked calls from another's.
    nonce: String,
    next: AtomicU64,
    /// Connections made so far (their ids).
    connections: AtomicU64,
    /// The calls in flight, by key: the connection each runs on, and its line.
    flights: Mutex<HashMap<u64, (u64, Line)>>,
    /// The parked calls, by id, with the timer that expires each.
    parked: Mutex<HashMap<String, (Parked, AbortHandle)>>,
    /// Where this source's topic is served (`elsewhere.rs`): unserved when it goes.
    served: OnceLock<Peers>,
}

impl Drop for Asker {
    fn drop(&mut self) {
        if let Some(peers) = self.served.get() {
            peers.unserve(&self.topic());
        }
    }
}

/// The way to one backend call's front call, and how many of its questions wait for
/// an answer (a call blocked on its question, parked or not, asks nothing else).
#[derive(Clone)]
pub(crate) struct Line {
    tx: mpsc::Sender<Event>,
    waiting: Arc<AtomicUsize>,
}

/// Counts a question while it waits.
struct Waiting(Arc<AtomicUsize>);

impl Drop for Waiting {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Line {
    pub(crate) fn new(tx: mpsc::Sender<Event>) -> Self {
        Self {
            tx,
            waiting: Arc::default(),
        }
    }

    /// A progress or log report: dropped when the call's reports are not being read.
    pub(crate) fn report(&self, event: Event) {
        let _ = self.tx.try_send(event);
    }

    /// Counts a question as waiting from now on.
    fn waiting(&self) -> Waiting {
        self.waiting.fetch_add(1, Ordering::SeqCst);
        Waiting(Arc::clone(&self.waiting))
    }

    /// Sends a question to the front call and waits for its answer.
    pub(crate) async fn ask(&self, method: String, params: Value) -> Result<Value, RpcError> {
        let waiting = self.waiting();
        self.put(method, params, waiting).await
    }

    async fn put(
        &self,
        method: String,
        params: Value,
        _waiting: Waiting,
    ) -> Result<Value, RpcError> {
        let gone = || RpcError::internal("the front request this question belongs to has ended");
        let (reply, answer) = oneshot::channel();
        self.tx
            .send(Event::Ask(method, params, reply))
            .await
            .map_err(|_| gone())?;
        answer.await.unwrap_or_else(|_| Err(gone()))
    }
}

impl Asker {
    pub(crate) fn new(source: &str) -> Arc<Self> {
        let mut h = RandomState::new().build_hasher();
        h.write(source.as_bytes());
        Arc::new(Self {
            source: source.to_owned(),
            nonce: format!("{:016x}", h.finish()),
            next: AtomicU64::new(0),
            connections: AtomicU64::new(0),
            flights: Mutex::new(HashMap::new()),
            parked: Mutex::new(HashMap::new()),
            served: OnceLock::new(),
        })
    }

    /// The id of a new connection of this source.
    pub(crate) fn next_connection(&self) -> u64 {
        self.connections.fetch_add(1, Ordering::Relaxed)
    }

    /// Starts the backend call `call` on connection `conn`, registered first (its
    /// question may come back before this returns): in a task of its own, or `inline`
    /// (driven by whoever polls the flight's `done`: only a call that is never parked);
    /// its reports go to `events`.
    pub(crate) fn flight(
        self: &Arc<Self>,
        conn: u64,
        line: Line,
        events: mpsc::Receiver<Event>,
        call: impl Future<Output = Result<Answer, ClientError>> + Send + 'static,
        inline: bool,
    ) -> Flight {
        let key = self.next.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut f) = self.flights.lock() {
            f.insert(key, (conn, line));
        }
        let done = if inline {
            Done::Inline(Box::pin(call))
        } else {
            Done::Task(tokio::spawn(call))
        };
        Flight {
            key,
            conn,
            owner: Arc::downgrade(self),
            events,
            done,
        }
    }

    /// The answers of connection `conn`'s client to server requests that arrive on no
    /// call's stream (stdio names no request in a server request): put to the only call
    /// in flight on that connection that is not waiting for an answer already (a parked
    /// call is), refused when there are several (it cannot be told whose) or none.
    /// These handlers are also what makes the client declare `elicitation`,
    /// `sampling` and `roots` to the backend.
    pub(crate) fn declare(self: &Arc<Self>, b: ClientBuilder, conn: u64) -> ClientBuilder {
        let on = |method: &'static str| {
            let me = Arc::downgrade(self);
            move |params: Value| {
                let me = me.clone();
                async move {
                    match me.upgrade() {
                        Some(a) => a.ask_sole(conn, method, params).await,
                        None => Err(RpcError::internal("the source was unmounted")),
                    }
                }
            }
        };
        b.on_elicitation(on("elicitation/create"))
            .on_sampling(on("sampling/createMessage"))
            .on_roots(on("roots/list"))
    }

    async fn ask_sole(&self, conn: u64, method: &str, params: Value) -> Result<Value, RpcError> {
        // Chosen and counted as waiting under the lock: a second question arriving at
        // once does not pick the same call.
        let (sole, n) = match self.flights.lock() {
            Ok(f) => {
                let mut free = f
                    .values()
                    .filter(|(c, l)| *c == conn && l.waiting.load(Ordering::SeqCst) == 0)
                    .map(|(_, l)| l);
                match (free.next(), free.next()) {
                    (Some(l), None) => (Some((l.clone(), l.waiting())), 1),
                    (first, _) => (None, first.map_or(0, |_| 2 + free.count())),
                }
            }
            Err(_) => (None, 0),
        };
        match sole {
            Some((line, waiting)) => line.put(method.to_owned(), params, waiting).await,
            None => {
                tracing::warn!(source = %self.source, %method, calls = n, "a backend question that names no call, refused");
                Err(RpcError::internal(format!(
                    "{method} names no request and {n} calls are in flight on this connection: \
                     the proxy cannot tell whose question it is"
                )))
            }
        }
    }

    /// The bus topic this source's parked calls are continued through from another
    /// instance.
    pub(crate) fn topic(&self) -> String {
        topic(&self.nonce)
    }

    /// Records that this source's topic is served on `peers`: `false` when it was
    /// already (by the first park with a bus).
    pub(crate) fn served_on(&self, peers: &Peers) -> bool {
        self.served.set(peers.clone()).is_ok()
    }

    /// The source's name.
    pub(crate) fn source(&self) -> &str {
        &self.source
    }

    /// Parks a call until the front continues; its id for the front's `requestState`,
    /// naming instance `at` when given. When too many are parked, the backend's
    /// question is refused and the front gets the error to answer.
    pub(crate) fn park(
        self: &Arc<Self>,
        parked: Parked,
        at: Option<&InstanceId>,
    ) -> Result<String, RpcError> {
        // Only a call that runs in a task of its own can wait parked: an inline one
        // is polled by its front request, which ends with the round
        // (`RequestContext::asks_in_rounds` decides which, before the call starts).
        debug_assert!(
            matches!(parked.flight.done, Done::Task(_)),
            "an inline call was parked: nothing would poll it"
        );
        self.try_park(parked, at).map_err(|p| {
            let _ = p
                .reply
                .send(Err(RpcError::internal("too many parked calls")));
            RpcError::internal("the proxy has too many calls waiting for answers")
        })
    }

    fn try_park(
        self: &Arc<Self>,
        parked: Parked,
        at: Option<&InstanceId>,
    ) -> Result<String, Parked> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let id = match at {
            Some(me) => format!("{}.{n}{HOLDER}{me}", self.nonce),
            None => format!("{}.{n}", self.nonce),
        };
        let Ok(mut p) = self.parked.lock() else {
            return Err(parked);
        };
        if p.len() >= MAX_PARKED
            || p.values().filter(|(q, _)| q.who == parked.who).count() >= MAX_PARKED_PER_PRINCIPAL
        {
            return Err(parked);
        }
        let (me, key) = (Arc::downgrade(self), id.clone());
        // Expires it unless it is taken first (taking it aborts this timer).
        let timer = tokio::spawn(async move {
            tokio::time::sleep(PARK_TTL).await;
            if let Some(a) = me.upgrade() {
                if let Some((p, _)) = a.parked.lock().ok().and_then(|mut p| p.remove(&key)) {
                    tracing::info!(source = %a.source, "a parked backend call expired");
                    let _ = p.reply.send(Err(RpcError::internal(
                        "the front caller did not continue in time",
                    )));
                }
            }
        });
        p.insert(id.clone(), (parked, timer.abort_handle()));
        Ok(id)
    }

    /// Takes the call parked under `id` for the front caller `who`; a clear error when
    /// it is not here, or belongs to another caller (it then stays parked).
    pub(crate) fn unpark(&self, id: &str, who: Option<&str>) -> Result<Parked, RpcError> {
        let mut found = None;
        if let Ok(mut p) = self.parked.lock() {
            match p.get(id) {
                Some((q, _)) if q.who.as_deref() != who => {
                    return Err(RpcError::invalid_params(format!(
                        "backend \"{}\": the call this requestState continues belongs to another caller",
                        self.source
                    )));
                }
                Some(_) => found = p.remove(id),
                None => {}
            }
        }
        if let Some((p, timer)) = found {
            timer.abort();
            return Ok(p);
        }
        let why = if id.starts_with(&self.nonce) {
            "it has expired or was already continued"
        } else {
            "it waits on another instance, or on an earlier run of this one (run the \
             instances with a shared bus, --bus, to continue it on another)"
        };
        Err(RpcError::invalid_params(format!(
            "backend \"{}\": the call this requestState continues is not here: {why}",
            self.source
        )))
    }
}

/// The bus topic of the parked calls of the source with `nonce`.
fn topic(nonce: &str) -> String {
    format!("snodo-compose/parked/{nonce}")
}

/// Where a parked call's id says it waits: its source's topic and its instance. Only
/// an id of the shape [`Asker::park`] gives (`NONCE.N@INSTANCE`, the nonce 16 hex
/// digits) names one.
pub(crate) fn holder(id: &str) -> Option<(String, InstanceId)> {
    let (own, instance) = InstanceId::holding(id)?;
    let (nonce, n) = own.split_once('.')?;
    let ok = nonce.len() == 16
        && nonce.bytes().all(|b| b.is_ascii_hexdigit())
        && !n.is_empty()
        && n.len() <= 20
        && n.bytes().all(|b| b.is_ascii_digit());
    if !ok {
        return None;
    }
    Some((topic(nonce), instance))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parked(asker: &Arc<Asker>, who: Option<&str>) -> Parked {
        let (tx, rx) = mpsc::channel(1);
        let flight = asker.flight(0, Line::new(tx), rx, std::future::pending(), false);
        Parked {
            flight,
            reply: oneshot::channel().0,
            who: who.map(str::to_owned),
        }
    }

    #[tokio::test]
    async fn an_inline_call_runs_when_its_flight_is_polled_and_goes_with_it() {
        let asker = Asker::new("b");
        let ran = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = mpsc::channel(1);
        let r = Arc::clone(&ran);
        let call = async move {
            r.fetch_add(1, Ordering::SeqCst);
            Ok(Answer::from(Value::Null))
        };
        let mut f = asker.flight(0, Line::new(tx), rx, call, true);
        tokio::task::yield_now().await;
        assert_eq!(ran.load(Ordering::SeqCst), 0, "no task runs it");
        assert!(matches!((&mut f.done).await, Ok(a) if a.as_value() == Some(&Value::Null)));
        assert_eq!(ran.load(Ordering::SeqCst), 1);
        drop(f);
        // A call in flight is dropped (abandoned) with its flight, at once.
        let held = Arc::new(());
        let h = Arc::clone(&held);
        let (tx, rx) = mpsc::channel(1);
        let call = async move {
            let _h = h;
            std::future::pending().await
        };
        let f = asker.flight(0, Line::new(tx), rx, call, true);
        assert_eq!(Arc::strong_count(&held), 2);
        assert!(asker.flights.lock().is_ok_and(|f| f.len() == 1));
        drop(f);
        assert_eq!(Arc::strong_count(&held), 1);
        assert!(asker.flights.lock().is_ok_and(|f| f.is_empty()));
    }

    #[tokio::test]
    async fn one_principal_cannot_take_every_parking_place() {
        let asker = Asker::new("b");
        for _ in 0..MAX_PARKED_PER_PRINCIPAL {
            assert!(asker.park(parked(&asker, Some("greedy")), None).is_ok());
        }
        assert!(asker.park(parked(&asker, Some("greedy")), None).is_err());
        // Others still park: another principal, and anonymous callers.
        assert!(asker.park(parked(&asker, Some("other")), None).is_ok());
        assert!(asker.park(parked(&asker, None), None).is_ok());
    }

    #[tokio::test]
    async fn ids_name_their_holder_and_their_caller() {
        let asker = Asker::new("b");
        let me = InstanceId::random();
        let id = asker
            .park(parked(&asker, Some("alice")), Some(&me))
            .unwrap_or_default();
        assert_eq!(holder(&id), Some((asker.topic(), me.clone())));
        // Without an instance, or of another shape, an id names no holder.
        let alone = asker.park(parked(&asker, None), None).unwrap_or_default();
        assert_eq!(holder(&alone), None);
        assert_eq!(holder(&format!("x.1@{me}")), None);
        assert_eq!(holder(&format!("0123456789abcdef.@{me}")), None);
        assert_eq!(holder("0123456789abcdef.1@no spaces"), None);
        // Another caller cannot take it; its own caller can, once.
        assert!(asker.unpark(&id, Some("mallory")).is_err());
        assert!(asker.unpark(&id, None).is_err());
        assert!(asker.unpark(&id, Some("alice")).is_ok());
        assert!(asker.unpark(&id, Some("alice")).is_err());
    }
}
