//! `subscriptions/listen` (2026-07-28): a subscription that first acknowledges itself,
//! then yields only the change notifications the client opted into, each tagged with
//! the subscription id, and ends with a result when the engine shuts down.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use serde_json::{Map, Value, json};
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

use super::Engine;
use super::failure::Failure;
use super::observe::Gauged;
use crate::bus::Received;
use crate::caller::Principal;
use crate::protocol::jsonrpc::notification_message;
use crate::protocol::{Dialect, Method, RequestId, RpcError};
use crate::router::{Call, ResultObject, Router};
use crate::runtime::events::{Change, Feed};
use crate::tasks::TaskWatch;

const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// How long a subscription waits, after a resync (or a lag), for more of them before it
/// tells its client once: a bus server restarted under N instances gives every stream
/// N + 1 resyncs within a moment (each instance's handle publishes one when it is back),
/// and each would re-announce every list and watched resource.
const RESYNC_SETTLE: std::time::Duration = std::time::Duration::from_millis(250);

/// What one subscription delivers.
#[derive(Debug, Default)]
struct Filter {
    tools: bool,
    prompts: bool,
    resources: bool,
    watched: Vec<String>,
    /// Task ids asked for (`notifications.taskIds`), before the owner check.
    task_ids: Option<Vec<String>>,
}

impl Filter {
    /// The requested filter, narrowed to what this server advertises.
    fn accept(call: &Call, engine: &Engine) -> Result<Self, RpcError> {
        let caps = engine.runtime.capabilities();
        let requested = call.params.listen()?;
        if requested.task_ids.is_some()
            && !(call.dialect.offers_tasks()
                && crate::tasks::wire::declared(call.meta.client_capabilities.as_ref()))
        {
            return Err(crate::tasks::wire::missing_extension());
        }
        Ok(Self {
            task_ids: requested.task_ids.clone(),
            tools: requested.tools && caps.list_changed && caps.tools,
            prompts: requested.prompts && caps.list_changed && caps.prompts,
            resources: requested.resources && caps.list_changed && caps.resources,
            watched: if caps.subscribe {
                requested.watched.clone()
            } else {
                Vec::new()
            },
        })
    }

    fn to_json(&self) -> Value {
        let mut out = Map::new();
        for (on, key) in [
            (self.tools, "toolsListChanged"),
            (self.prompts, "promptsListChanged"),
            (self.resources, "resourcesListChanged"),
        ] {
            if on {
                out.insert(key.into(), Value::Bool(true));
            }
        }
        if !self.watched.is_empty() {
            out.insert("resourceSubscriptions".into(), json!(self.watched));
        }
        Value::Object(out)
    }

    /// Whether this subscription asked for `change`.
    fn wants(&self, change: &Change) -> bool {
        match change {
            Change::ToolsListChanged => self.tools,
            Change::PromptsListChanged => self.prompts,
            Change::ResourcesListChanged => self.resources,
            Change::ResourceUpdated(uri) => self.watched.iter().any(|w| **w == **uri),
            // Never an item: `Feed` hands it over as `Received::Resync`.
            Change::Resync => false,
        }
    }
}

/// How a transport frames each message of a step (SSE: `data: ` before, a blank line
/// after), so that a step's messages are written once, framed, into one buffer.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Framing {
    pub(crate) prefix: &'static [u8],
    pub(crate) suffix: &'static [u8],
}

/// Where one step's messages go: each in a buffer of its own, or all of them framed,
/// one after the other, in one buffer (one allocation per step on the fan-out path).
#[derive(Debug)]
enum Out {
    Each(Vec<Bytes>),
    Framed(Framing, Vec<u8>),
}

impl Out {
    fn is_empty(&self) -> bool {
        match self {
            Self::Each(v) => v.is_empty(),
            Self::Framed(_, v) => v.is_empty(),
        }
    }

    /// The messages, each in a buffer of its own (framed, one buffer holding them all).
    fn into_messages(self) -> Vec<Bytes> {
        match self {
            Self::Each(v) => v,
            Self::Framed(_, v) => vec![Bytes::from(v)],
        }
    }

    /// The messages in one buffer (unframed, one after the other).
    fn into_bytes(self) -> Bytes {
        match self {
            Self::Each(v) if v.len() == 1 => v.into_iter().next().unwrap_or_default(),
            Self::Each(v) => Bytes::from(v.concat()),
            Self::Framed(_, v) => Bytes::from(v),
        }
    }

    /// Adds a message already written.
    fn push(&mut self, message: Bytes) {
        match self {
            Self::Each(v) => v.push(message),
            Self::Framed(framing, v) => {
                v.reserve(framing.prefix.len() + message.len() + framing.suffix.len());
                v.extend_from_slice(framing.prefix);
                v.extend_from_slice(&message);
                v.extend_from_slice(framing.suffix);
            }
        }
    }

    /// Adds a message `write` writes; `len` is its length when known (then the buffer
    /// of the step's only message is allocated once at its exact size).
    fn write(&mut self, len: usize, write: impl FnOnce(&mut Vec<u8>)) {
        match self {
            Self::Each(v) => {
                let mut out = Vec::with_capacity(len);
                write(&mut out);
                v.push(Bytes::from(out));
            }
            Self::Framed(framing, v) => {
                v.reserve(framing.prefix.len() + len + framing.suffix.len());
                v.extend_from_slice(framing.prefix);
                write(v);
                v.extend_from_slice(framing.suffix);
            }
        }
    }
}

/// A subscription's change notifications, written without building JSON values: the
/// three list changes are serialised once, on first use, and shared after that (a clone
/// of a [`Bytes`] is a reference count); a resource update is the subscription's
/// serialised id and the URI written between fixed pieces (one buffer, one copy).
#[derive(Debug)]
struct Notes {
    /// `{"io.modelcontextprotocol/subscriptionId":ID}`.
    meta: Box<str>,
    /// Tools, prompts, resources.
    lists: [Option<Bytes>; 3],
}

/// `notifications/resources/updated` up to its `_meta`.
const UPDATED_HEAD: &[u8] =
    br#"{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"_meta":"#;
const UPDATED_URI: &[u8] = br#","uri":"#;

impl Notes {
    fn new(id: &RequestId) -> Self {
        let meta = serde_json::to_string(&json!({ SUBSCRIPTION_ID: id })).unwrap_or_default();
        Self {
            meta: meta.into(),
            lists: [None, None, None],
        }
    }

    /// Writes the notification for `change` to `out`.
    fn write(&mut self, change: &Change, out: &mut Out) {
        let (slot, method) = match change {
            Change::ToolsListChanged => (0, "notifications/tools/list_changed"),
            Change::PromptsListChanged => (1, "notifications/prompts/list_changed"),
            Change::ResourcesListChanged => (2, "notifications/resources/list_changed"),
            Change::ResourceUpdated(uri) => return self.updated(uri, out),
            // Never wanted (`Filter::wants`), so never written; were it, a list change.
            Change::Resync => (0, "notifications/tools/list_changed"),
        };
        let meta = &self.meta;
        let message = self.lists[slot].get_or_insert_with(|| {
            let mut out = Vec::with_capacity(64 + method.len() + meta.len());
            out.extend_from_slice(br#"{"jsonrpc":"2.0","method":""#);
            out.extend_from_slice(method.as_bytes());
            out.extend_from_slice(br#"","params":{"_meta":"#);
            out.extend_from_slice(meta.as_bytes());
            out.extend_from_slice(b"}}");
            Bytes::from(out)
        });
        out.push(message.clone());
    }

    /// Writes `notifications/resources/updated` for `uri` to `out`: a URI that JSON
    /// needs not escape (nearly all) is copied between its quotes, at a length known
    /// beforehand; any other is written by serde_json.
    fn updated(&self, uri: &str, out: &mut Out) {
        let plain = !uri.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\');
        let fixed = UPDATED_HEAD.len() + self.meta.len() + UPDATED_URI.len() + 2;
        let len = fixed + uri.len() + if plain { 2 } else { 16 };
        out.write(len, |out| {
            out.extend_from_slice(UPDATED_HEAD);
            out.extend_from_slice(self.meta.as_bytes());
            out.extend_from_slice(UPDATED_URI);
            if plain {
                out.push(b'"');
                out.extend_from_slice(uri.as_bytes());
                out.push(b'"');
            } else {
                // A string always serialises.
                let _ = serde_json::to_writer(&mut *out, uri);
            }
            out.extend_from_slice(b"}}");
        });
    }
}

/// `notifications/tasks` with the task's `DetailedTask`, tagged with the subscription.
fn task_message(task: &crate::tasks::TaskRecord, id: &RequestId) -> Bytes {
    let mut params = crate::tasks::wire::detailed(task);
    params.insert("_meta".into(), json!({ SUBSCRIPTION_ID: id }));
    notification_message("notifications/tasks", &params)
}

/// A subscription's wait for the engine's closing, made and registered once rather than
/// once per poll (a waiter added to the token's list and taken off again each time,
/// under its lock: about 500 instructions per stream per event), and polled again only
/// when the token was cancelled or another task polls it: a poll that comes from a
/// change's wake-up, nearly every one, costs an atomic load and a waker comparison.
struct Closing {
    wait: Pin<Box<WaitForCancellationFutureOwned>>,
    waker: Registered,
}

impl std::fmt::Debug for Closing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Closing")
    }
}

impl Closing {
    fn new(token: &CancellationToken) -> Self {
        Self {
            wait: Box::pin(token.clone().cancelled_owned()),
            waker: Registered::default(),
        }
    }

    /// Ready once `token` (the one the wait was made from) is cancelled.
    fn poll(&mut self, token: &CancellationToken, cx: &mut Context<'_>) -> Poll<()> {
        let wait = &mut self.wait;
        self.waker
            .poll(cx, token.is_cancelled(), |cx| wait.as_mut().poll(cx))
    }
}

/// The waker a wait registered with when it last answered `Pending`, so that a poll
/// from the same task while the wait cannot have fired skips it (a wait polled beside
/// a subscription would otherwise be registered again on every change's wake-up).
#[derive(Debug, Default)]
pub(crate) struct Registered(Option<Waker>);

impl Registered {
    /// Polls `wait`, unless it has not `fired` and holds `cx`'s waker already.
    pub(crate) fn poll<T>(
        &mut self,
        cx: &mut Context<'_>,
        fired: bool,
        wait: impl FnOnce(&mut Context<'_>) -> Poll<T>,
    ) -> Poll<T> {
        if !fired && self.0.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            // Registered with this very waker: the wait wakes it when it fires.
            return Poll::Pending;
        }
        // With the task's budget spent, tokio's waits answer Pending without
        // registering anything (they have the task polled again): remembering the waker
        // then would skip the wait for good.
        let registers = tokio::task::coop::has_budget_remaining();
        let polled = wait(cx);
        self.0 = (polled.is_pending() && registers).then(|| cx.waker().clone());
        polled
    }
}

/// Keeps the count of open subscriptions (and the metrics gauge).
#[derive(Debug)]
struct Slot(Arc<Engine>, #[allow(dead_code)] Gauged);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.listeners.fetch_sub(1, Ordering::AcqRel);
    }
}

/// What a subscription yields next: its messages each in a buffer of its own
/// ([`Subscription::next`]), or framed in one ([`Subscription::next_framed`]).
#[derive(Debug)]
pub(crate) enum ListenStep<M = Vec<Bytes>> {
    /// Notifications to deliver, in order (the acknowledgement first).
    Messages(M),
    /// The engine shuts down: the listen request's final result.
    Closing(Bytes),
    /// The change feed is gone: end without a result.
    Gone,
}

/// An open `subscriptions/listen` request.
#[derive(Debug)]
pub(crate) struct Subscription {
    id: RequestId,
    filter: Filter,
    notes: Notes,
    changes: Feed,
    /// The acknowledgement's `notifications`, until it is sent (the accepted task ids
    /// are added then, after an owner-checked read).
    ack: Option<Value>,
    /// The tasks this subscription watches (tasks extension).
    tasks: TaskWatch,
    /// The engine's closing, waited for across calls of [`Subscription::next`].
    closing: Closing,
    /// The timer of the resync (or lag) heard first, told when it fires, once for every
    /// one heard until then ([`RESYNC_SETTLE`]); kept here so that
    /// [`Subscription::next`] stays cancel-safe, and boxed: none is made, nor carried
    /// by the future of each step, while no resync waits.
    resync: Option<Pin<Box<tokio::time::Sleep>>>,
    dialect: &'static Dialect,
    /// Its resource URIs, counted as watched while it is open.
    _watching: crate::runtime::watched::Watching,
    _slot: Slot,
    /// The subscription's span, open as long as it is (parent from `_meta`).
    _span: tracing::Span,
}

impl Subscription {
    /// Opens a subscription, or says why not (refused, or no subscription slot free).
    pub(crate) fn open(
        engine: &Arc<Engine>,
        id: RequestId,
        call: &Call,
        principal: Option<&Principal>,
    ) -> Result<Self, Failure> {
        let caps = engine.runtime.capabilities();
        let tasks = call.dialect.offers_tasks() && call.catalogue.has_task_tools();
        if !caps.list_changed && !caps.subscribe && !tasks {
            return Err(RpcError::method_not_found(&call.method_name).into());
        }
        let mut filter = Filter::accept(call, engine)?;
        if engine.listeners.fetch_add(1, Ordering::AcqRel) >= engine.limits.max_listen_streams {
            engine.listeners.fetch_sub(1, Ordering::AcqRel);
            return Err(Failure::Overloaded(RpcError::internal(
                "Server subscription capacity exhausted; retry later",
            )));
        }
        let slot = Slot(Arc::clone(engine), engine.observe.stream("listen"));
        let parent = crate::protocol::trace::TraceContext::from_meta(&call.meta);
        let span = super::trace::request_span(&id, call, parent.as_ref());
        let changes = engine.runtime.subscribe_changes();
        let tasks = TaskWatch::new(
            &engine.runtime.tasks(),
            std::mem::take(&mut filter.task_ids),
            crate::tasks::owner(principal),
        );
        let ack = filter.to_json();
        let watching = engine.runtime.watch_resources(&filter.watched);
        Ok(Self {
            notes: Notes::new(&id),
            id,
            filter,
            changes,
            ack: Some(ack),
            tasks,
            closing: Closing::new(&engine.closing),
            resync: None,
            dialect: call.dialect,
            _watching: watching,
            _slot: slot,
            _span: span,
        })
    }

    /// The subscription id (the listen request's id).
    pub(crate) fn id(&self) -> &RequestId {
        &self.id
    }

    /// The next messages, each in a buffer of its own, or the end. Cancel-safe.
    pub(crate) async fn next(&mut self, engine: &Engine) -> ListenStep {
        let mut out = Out::Each(Vec::new());
        match self.fill(engine, &mut out).await {
            Ok(()) => ListenStep::Messages(out.into_messages()),
            Err(end) => end,
        }
    }

    /// The next messages, each framed by `framing`, one after the other in one buffer
    /// (one allocation, one write), or the end (its result not framed). Cancel-safe.
    pub(crate) async fn next_framed(
        &mut self,
        engine: &Engine,
        framing: Framing,
    ) -> ListenStep<Bytes> {
        let mut out = Out::Framed(framing, Vec::new());
        match self.fill(engine, &mut out).await {
            Ok(()) => ListenStep::Messages(out.into_bytes()),
            Err(ListenStep::Closing(result)) => ListenStep::Closing(result),
            Err(_) => ListenStep::Gone,
        }
    }

    /// Writes the next messages to `out` (it is left empty until they are all there),
    /// or says how the subscription ends. Cancel-safe.
    async fn fill(&mut self, engine: &Engine, out: &mut Out) -> Result<(), ListenStep> {
        if let Some(mut notifications) = self.ack.take() {
            // The tasks the caller owns, with their current state (a change made before
            // the subscription opened is not lost).
            let current = self.tasks.accept().await;
            if let (Some(accepted), Value::Object(n)) = (self.tasks.accepted(), &mut notifications)
            {
                n.insert("taskIds".into(), json!(accepted));
            }
            let ack =
                json!({"_meta": { SUBSCRIPTION_ID: self.id }, "notifications": notifications});
            out.push(notification_message(
                "notifications/subscriptions/acknowledged",
                &ack,
            ));
            for t in &current {
                out.push(task_message(t, &self.id));
            }
            return Ok(());
        }
        loop {
            // A timer only while a resync waits (not one per change delivered).
            let resync = &mut self.resync;
            let settled = std::future::poll_fn(move |cx| match resync {
                Some(sleep) => sleep.as_mut().poll(cx),
                None => Poll::Pending,
            });
            tokio::select! {
                biased;
                () = std::future::poll_fn(|cx| self.closing.poll(&engine.closing, cx)) => return Err(ListenStep::Closing(self.final_result(engine))),
                changed = self.tasks.next() => {
                    for t in &changed {
                        out.push(task_message(t, &self.id));
                    }
                }
                () = settled => {
                    self.resync = None;
                    self.everything(out);
                }
                change = self.changes.recv() => match change {
                    Some(Received::Item(change)) => {
                        if self.filter.wants(&change) {
                            self.notes.write(&change, out);
                        }
                    }
                    // Fell behind, or the bus was away: told once the resyncs and lags
                    // of the next moment are in.
                    Some(Received::Lagged(_) | Received::Resync) => {
                        self.resync.get_or_insert_with(|| Box::pin(tokio::time::sleep(RESYNC_SETTLE)));
                    }
                    None => return Err(ListenStep::Gone),
                },
            }
            if !out.is_empty() {
                return Ok(());
            }
        }
    }

    /// What a resync or a lag tells: every watched list may have changed and every
    /// watched resource may have been updated.
    fn everything(&mut self, out: &mut Out) {
        for c in [
            Change::ToolsListChanged,
            Change::PromptsListChanged,
            Change::ResourcesListChanged,
        ] {
            if self.filter.wants(&c) {
                self.notes.write(&c, out);
            }
        }
        for uri in &self.filter.watched {
            self.notes.updated(uri, out);
        }
    }

    /// The result that ends the subscription, in the router's envelope for its dialect.
    fn final_result(&self, engine: &Engine) -> Bytes {
        let mut fields = Map::new();
        fields.insert("_meta".into(), json!({ SUBSCRIPTION_ID: self.id }));
        let runtime = &engine.runtime;
        Router::new(runtime)
            .finish(
                &runtime.catalogue(),
                self.dialect,
                Method::SubscriptionsListen,
                ResultObject::from(fields),
            )
            .message(&self.id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the notifications were before they were written by hand: JSON values
    /// serialised by serde_json.
    fn by_serde(method: &str, id: &RequestId, uri: Option<&str>) -> Value {
        let mut params = json!({"_meta": { SUBSCRIPTION_ID: id }});
        if let Some(uri) = uri {
            params["uri"] = json!(uri);
        }
        json!({"jsonrpc": "2.0", "method": method, "params": params})
    }

    fn parse(b: &Bytes) -> Value {
        serde_json::from_slice(b).unwrap_or_else(|e| panic!("{e}: {b:?}"))
    }

    /// The messages `notes` writes for `change`, each on its own.
    fn each(notes: &mut Notes, change: &Change) -> Vec<Bytes> {
        let mut out = Out::Each(Vec::new());
        notes.write(change, &mut out);
        out.into_messages()
    }

    #[test]
    fn notifications_are_the_json_serde_would_write() {
        let ids = [
            RequestId::Number(7),
            RequestId::String("l\"is\\ten\u{1}é".into()),
        ];
        for id in &ids {
            let mut notes = Notes::new(id);
            for (change, method) in [
                (Change::ToolsListChanged, "notifications/tools/list_changed"),
                (
                    Change::PromptsListChanged,
                    "notifications/prompts/list_changed",
                ),
                (
                    Change::ResourcesListChanged,
                    "notifications/resources/list_changed",
                ),
            ] {
                let first = each(&mut notes, &change);
                assert_eq!(first.len(), 1);
                assert_eq!(parse(&first[0]), by_serde(method, id, None));
                // Shared, not written again.
                assert_eq!(each(&mut notes, &change)[0].as_ptr(), first[0].as_ptr());
            }
            // Escaped by serde_json, and copied as it is.
            for uri in ["file:///a \"b\"\\c\n\u{7f}/ü", "test://x/é ?y=1&z=\u{7f}"] {
                let updated = each(&mut notes, &Change::ResourceUpdated(uri.into()));
                assert_eq!(updated.len(), 1);
                assert_eq!(
                    parse(&updated[0]),
                    by_serde("notifications/resources/updated", id, Some(uri))
                );
            }
        }
    }

    /// A waker that counts its wake-ups.
    #[derive(Default)]
    struct Counted(std::sync::atomic::AtomicUsize);

    impl std::task::Wake for Counted {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// The wait for the closing is registered once and skipped while the same task
    /// polls it, yet the cancellation still wakes the task that polled last and is then
    /// seen; another task polling it takes the registration over.
    #[test]
    fn the_closing_wakes_the_task_that_polled_last() {
        let token = CancellationToken::new();
        let mut closing = Closing::new(&token);
        let (a, b) = (Arc::new(Counted::default()), Arc::new(Counted::default()));
        let (wa, wb) = (Waker::from(Arc::clone(&a)), Waker::from(Arc::clone(&b)));
        for _ in 0..3 {
            assert!(
                closing
                    .poll(&token, &mut Context::from_waker(&wa))
                    .is_pending()
            );
        }
        assert!(
            closing
                .poll(&token, &mut Context::from_waker(&wb))
                .is_pending()
        );
        token.cancel();
        assert_eq!(b.0.load(Ordering::SeqCst), 1, "the last poller is woken");
        assert_eq!(a.0.load(Ordering::SeqCst), 0);
        assert!(
            closing
                .poll(&token, &mut Context::from_waker(&wb))
                .is_ready()
        );
        // Ready again for a task that never polled it.
        assert!(
            closing
                .poll(&token, &mut Context::from_waker(&wa))
                .is_ready()
        );
    }

    /// Framed, a step's messages are the same messages, each between the prefix and
    /// the suffix, one after the other.
    #[test]
    fn framed_messages_are_each_message_framed() {
        const SSE: Framing = Framing {
            prefix: b"data: ",
            suffix: b"\n\n",
        };
        let mut notes = Notes::new(&RequestId::Number(3));
        let changes = [
            Change::ToolsListChanged,
            Change::ResourceUpdated("test://a/\"q\"".into()),
            Change::ResourceUpdated("test://b".into()),
        ];
        let mut each = Out::Each(Vec::new());
        let mut framed = Out::Framed(SSE, Vec::new());
        for c in &changes {
            notes.write(c, &mut each);
            notes.write(c, &mut framed);
        }
        let mut expected = Vec::new();
        for m in each.into_messages() {
            expected.extend_from_slice(b"data: ");
            expected.extend_from_slice(&m);
            expected.extend_from_slice(b"\n\n");
        }
        assert_eq!(framed.into_bytes(), Bytes::from(expected));

        // One update with a plain URI fills its buffer exactly: `Bytes::from` keeps it
        // (no second allocation for a shared header, as one with room to spare takes).
        let mut framed = Out::Framed(SSE, Vec::new());
        notes.write(&Change::ResourceUpdated("test://b/é".into()), &mut framed);
        let Out::Framed(_, v) = framed else {
            panic!("still framed")
        };
        assert_eq!(v.len(), v.capacity());
    }
}
