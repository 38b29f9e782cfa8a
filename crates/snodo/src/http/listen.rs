//! `subscriptions/listen` (2026-07-28): a long-lived POST answered with an SSE stream
//! that first acknowledges the subscription, then carries only the change
//! notifications the client opted into, each tagged with the subscription id, and ends
//! with a result when the server shuts down.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use bytes::Bytes;
use http::Response;
use serde_json::{Map, Value, json};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::body::Body;
use super::response;
use super::service::Shared;
use crate::protocol::jsonrpc::{notification_message, result_message};
use crate::protocol::meta::SERVER_INFO_KEY;
use crate::protocol::{RequestId, RpcError};
use crate::router::Call;
use crate::runtime::events::Change;

const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
/// Most resource URIs one subscription may watch.
const MAX_WATCHED: usize = 1000;

/// What one stream delivers.
#[derive(Debug, Default)]
struct Filter {
    tools: bool,
    prompts: bool,
    resources: bool,
    watched: Vec<String>,
}

impl Filter {
    /// The requested filter, narrowed to what this server advertises.
    fn accept(call: &Call, shared: &Shared) -> Result<Self, RpcError> {
        let caps = shared.runtime.inner.capabilities;
        let Some(requested) = call.params.get("notifications").and_then(Value::as_object) else {
            return Err(RpcError::invalid_params("notifications must be an object"));
        };
        let flag = |key: &str| match requested.get(key) {
            None | Some(Value::Bool(false)) => Ok(false),
            Some(Value::Bool(true)) => Ok(true),
            Some(_) => Err(RpcError::invalid_params(format!(
                "notifications.{key} must be a boolean"
            ))),
        };
        let watched = match requested.get("resourceSubscriptions") {
            None => Vec::new(),
            Some(Value::Array(uris)) if uris.len() <= MAX_WATCHED => uris
                .iter()
                .map(|u| u.as_str().filter(|u| u.contains(':')).map(str::to_owned))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| {
                    RpcError::invalid_params("resourceSubscriptions must hold absolute URIs")
                })?,
            Some(_) => {
                return Err(RpcError::invalid_params(format!(
                    "resourceSubscriptions must be an array of at most {MAX_WATCHED} URIs"
                )));
            }
        };
        Ok(Self {
            tools: flag("toolsListChanged")? && caps.list_changed && caps.tools,
            prompts: flag("promptsListChanged")? && caps.list_changed && caps.prompts,
            resources: flag("resourcesListChanged")? && caps.list_changed && caps.resources,
            watched: if caps.subscribe { watched } else { Vec::new() },
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

    /// The notification for `change`, if this stream asked for it.
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

/// Keeps the count of open streams.
struct Slot(Arc<Shared>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.listeners.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Answers a `subscriptions/listen` request.
pub(crate) fn serve(
    shared: &Arc<Shared>,
    id: RequestId,
    call: &Call,
) -> Result<Response<Body>, (RpcError, bool)> {
    let caps = shared.runtime.inner.capabilities;
    if !caps.list_changed && !caps.subscribe {
        return Err((RpcError::method_not_found(&call.method_name), false));
    }
    let filter = Filter::accept(call, shared).map_err(|e| (e, false))?;
    if shared.listeners.fetch_add(1, Ordering::AcqRel) >= shared.config.max_listen_streams {
        shared.listeners.fetch_sub(1, Ordering::AcqRel);
        return Err((
            RpcError::internal("Server subscription capacity exhausted; retry later"),
            true,
        ));
    }
    let slot = Slot(Arc::clone(shared));
    let mut changes = shared.runtime.subscribe_changes();
    let (tx, rx) = mpsc::channel(32);
    let ack = json!({"_meta": { SUBSCRIPTION_ID: id }, "notifications": filter.to_json()});
    let _ = tx.try_send(response::sse_frame(&notification_message(
        "notifications/subscriptions/acknowledged",
        &ack,
    )));
    let keep_alive = shared.config.keep_alive;
    let closing = shared.closing.clone();
    // The server info as the request's own dialect publishes it.
    let server_info = shared
        .runtime
        .catalogue()
        .view(call.dialect)
        .map(|v| v.server_info.clone());
    tokio::spawn(async move {
        let _slot = slot;
        let mut ticker = tokio::time::interval_at(Instant::now() + keep_alive, keep_alive);
        loop {
            let frames: Vec<Bytes> = tokio::select! {
                biased;
                () = closing.cancelled() => {
                    let mut meta = json!({ SUBSCRIPTION_ID: id });
                    if let Some(info) = &server_info {
                        meta[SERVER_INFO_KEY] = info.clone();
                    }
                    let result = json!({"resultType": "complete", "_meta": meta}).to_string();
                    let _ = tx.send(response::sse_frame(&result_message(&id, &result))).await;
                    return;
                }
                change = changes.recv() => match change {
                    Ok(change) => filter.message(&change, &id).iter().map(|m| response::sse_frame(m)).collect(),
                    // Fell behind: every watched list may have changed.
                    Err(RecvError::Lagged(_)) => [Change::ToolsListChanged, Change::PromptsListChanged, Change::ResourcesListChanged]
                        .iter()
                        .filter_map(|c| filter.message(c, &id))
                        .map(|m| response::sse_frame(&m))
                        .collect(),
                    Err(RecvError::Closed) => return,
                },
                () = tx.closed() => return,
                _ = ticker.tick() => vec![response::sse_keepalive()],
            };
            for frame in frames {
                if tx.send(frame).await.is_err() {
                    return;
                }
            }
        }
    });
    Ok(response::event_stream(Body::stream(rx)))
}
