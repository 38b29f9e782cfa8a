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

    /// The notification for `change`, if this subscription asked for it.
    fn message(&self, change: &Change, id: &RequestId) -> Option<Bytes> {
        let meta = json!({ SUBSCRIPTION_ID: id });
        let (method, params) = match change {
            Change::ToolsListChanged if self.tools => {
                ("notifications/tools/list_changed", json!({"_meta": meta}))
            }
            Change::PromptsListChanged if self.prompts => {
                ("notifications/prompts/list_changed", json!({"_meta": meta}))
            }
            Change::ResourcesListChanged if self.resources => (
                "notifications/resources/list_changed",
                json!({"_meta": meta}),
            ),
            Change::ResourceUpdated(uri) if self.watched.iter().any(|w| **w == **uri) => (
                "notifications/resources/updated",
                json!({"_meta": meta, "uri": uri.as_ref()}),
            ),
            _ => return None,
        };
        Some(notification_message(method, &params))
    }
}

impl Filter {
    /// What a subscriber that may have missed changes (it fell behind, or the bus was
    /// away) is told: every list it watches changed, and every resource it watches was
    /// updated.
    fn everything(&self, id: &RequestId) -> Vec<Bytes> {
        let lists = [
            Change::ToolsListChanged,
            Change::PromptsListChanged,
            Change::ResourcesListChanged,
        ];
        let meta = json!({ SUBSCRIPTION_ID: id });
        let resources = self.watched.iter().map(|uri| {
            notification_message(
                "notifications/resources/updated",
                &json!({"_meta": meta, "uri": uri}),
            )
        });
        lists
            .iter()
            .filter_map(|c| self.message(c, id))
            .chain(resources)
            .collect()
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
    changes: Feed,
    /// The acknowledgement's `notifications`, until it is sent (the accepted task ids
    /// are added then, after an owner-checked read).
    ack: Option<Value>,
    /// The tasks this subscription watches (tasks extension).
    tasks: TaskWatch,
    dialect: &'static Dialect,
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
        Ok(Self {
            id,
            filter,
            changes,
            ack: Some(ack),
            tasks,
            dialect: call.dialect,
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
            let out = tokio::select! {
                biased;
                () = engine.closing.cancelled() => return ListenStep::Closing(self.final_result(engine)),
                changed = self.tasks.next() => changed.iter().map(|t| task_message(t, &self.id)).collect(),
                change = self.changes.recv() => match change {
                    Some(Received::Item(change)) => self.filter.message(&change, &self.id).into_iter().collect(),
                    // Fell behind, or the bus was away: anything watched may have changed.
                    Some(Received::Lagged(_) | Received::Resync) => self.filter.everything(&self.id),
                    None => return ListenStep::Gone,
                },
            };
            let out: Vec<Bytes> = out;
            if !out.is_empty() {
                return ListenStep::Messages(out);
            }
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
