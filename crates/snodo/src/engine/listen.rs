//! `subscriptions/listen` (2026-07-28): a subscription that first acknowledges itself,
//! then yields only the change notifications the client opted into, each tagged with
//! the subscription id, and ends with a result when the engine shuts down.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use bytes::Bytes;
use serde_json::{Map, Value, json};

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

impl Notes {
    fn new(id: &RequestId) -> Self {
        let meta = serde_json::to_string(&json!({ SUBSCRIPTION_ID: id })).unwrap_or_default();
        Self {
            meta: meta.into(),
            lists: [None, None, None],
        }
    }

    /// The notification for `change`.
    fn message(&mut self, change: &Change) -> Bytes {
        let (slot, method) = match change {
            Change::ToolsListChanged => (0, "notifications/tools/list_changed"),
            Change::PromptsListChanged => (1, "notifications/prompts/list_changed"),
            Change::ResourcesListChanged => (2, "notifications/resources/list_changed"),
            Change::ResourceUpdated(uri) => return self.updated(uri),
            // Never wanted (`Filter::wants`), so never written; were it, a list change.
            Change::Resync => (0, "notifications/tools/list_changed"),
        };
        let meta = &self.meta;
        self.lists[slot]
            .get_or_insert_with(|| {
                let mut out = Vec::with_capacity(64 + method.len() + meta.len());
                out.extend_from_slice(br#"{"jsonrpc":"2.0","method":""#);
                out.extend_from_slice(method.as_bytes());
                out.extend_from_slice(br#"","params":{"_meta":"#);
                out.extend_from_slice(meta.as_bytes());
                out.extend_from_slice(b"}}");
                Bytes::from(out)
            })
            .clone()
    }

    /// `notifications/resources/updated` for `uri`.
    fn updated(&self, uri: &str) -> Bytes {
        const HEAD: &[u8] =
            br#"{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"_meta":"#;
        let mut out = Vec::with_capacity(HEAD.len() + self.meta.len() + uri.len() + 16);
        out.extend_from_slice(HEAD);
        out.extend_from_slice(self.meta.as_bytes());
        out.extend_from_slice(br#","uri":"#);
        // A string always serialises.
        let _ = serde_json::to_writer(&mut out, uri);
        out.extend_from_slice(b"}}");
        Bytes::from(out)
    }
}

/// `notifications/tasks` with the task's `DetailedTask`, tagged with the subscription.
fn task_message(task: &crate::tasks::TaskRecord, id: &RequestId) -> Bytes {
    let mut params = crate::tasks::wire::detailed(task);
    params.insert("_meta".into(), json!({ SUBSCRIPTION_ID: id }));
    notification_message("notifications/tasks", &params)
}

/// Keeps the count of open subscriptions (and the metrics gauge).
#[derive(Debug)]
struct Slot(Arc<Engine>, #[allow(dead_code)] Gauged);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.listeners.fetch_sub(1, Ordering::AcqRel);
    }
}

/// What a subscription yields next.
#[derive(Debug)]
pub(crate) enum ListenStep {
    /// Notifications to deliver, in order (the acknowledgement first).
    Messages(Vec<Bytes>),
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
    /// When the resync (or lag) heard first is told, once for every one heard until
    /// then ([`RESYNC_SETTLE`]); kept here so that [`Subscription::next`] stays
    /// cancel-safe.
    resync_at: Option<tokio::time::Instant>,
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
            resync_at: None,
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

    /// The next messages, or the end. Cancel-safe.
    pub(crate) async fn next(&mut self, engine: &Engine) -> ListenStep {
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
            let mut out = vec![notification_message(
                "notifications/subscriptions/acknowledged",
                &ack,
            )];
            out.extend(current.iter().map(|t| task_message(t, &self.id)));
            return ListenStep::Messages(out);
        }
        loop {
            let resync_at = self.resync_at;
            // A timer only while a resync waits (not one per change delivered).
            let settled = async move {
                match resync_at {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            let out = tokio::select! {
                biased;
                () = engine.closing.cancelled() => return ListenStep::Closing(self.final_result(engine)),
                changed = self.tasks.next() => changed.iter().map(|t| task_message(t, &self.id)).collect(),
                () = settled, if resync_at.is_some() => {
                    self.resync_at = None;
                    self.everything()
                }
                change = self.changes.recv() => match change {
                    Some(Received::Item(change)) => {
                        if self.filter.wants(&change) {
                            vec![self.notes.message(&change)]
                        } else {
                            Vec::new()
                        }
                    }
                    // Fell behind, or the bus was away: told once the resyncs and lags
                    // of the next moment are in.
                    Some(Received::Lagged(_) | Received::Resync) => {
                        self.resync_at.get_or_insert_with(|| tokio::time::Instant::now() + RESYNC_SETTLE);
                        Vec::new()
                    }
                    None => return ListenStep::Gone,
                },
            };
            let out: Vec<Bytes> = out;
            if !out.is_empty() {
                return ListenStep::Messages(out);
            }
        }
    }

    /// What a resync or a lag tells: every watched list may have changed and every
    /// watched resource may have been updated.
    fn everything(&mut self) -> Vec<Bytes> {
        let mut out: Vec<Bytes> = [
            Change::ToolsListChanged,
            Change::PromptsListChanged,
            Change::ResourcesListChanged,
        ]
        .iter()
        .filter(|c| self.filter.wants(c))
        .map(|c| self.notes.message(c))
        .collect();
        out.extend(
            self.filter
                .watched
                .iter()
                .map(|uri| self.notes.updated(uri)),
        );
        out
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
                let first = notes.message(&change);
                assert_eq!(parse(&first), by_serde(method, id, None));
                // Shared, not written again.
                assert_eq!(notes.message(&change).as_ptr(), first.as_ptr());
            }
            let uri = "file:///a \"b\"\\c\n\u{7f}/ü";
            let updated = notes.message(&Change::ResourceUpdated(uri.into()));
            assert_eq!(
                parse(&updated),
                by_serde("notifications/resources/updated", id, Some(uri))
            );
        }
    }
}
