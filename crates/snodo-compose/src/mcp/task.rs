//! A backend task tool's call ([`Source::call_task`](crate::Source::call_task)): run as
//! a task of the backend when the backend offers tasks on `tools/call` (2025-11-25's
//! `capabilities.tasks.requests.tools.call`), else as a plain call.
//!
//! As a backend task: `tools/call` with `task` creates it; its `tasks/result` is then
//! awaited through the relay (so the backend's questions during it reach the front
//! caller, and the front's cancellation abandons it) while `tasks/get` is polled at
//! the backend's `pollInterval` and each new `statusMessage` goes to the front request
//! as progress (a front task's `statusMessage`). When the front call ends without the
//! result (`tasks/cancel` of the front task, a disconnect, a deadline), the backend
//! task gets `tasks/cancel`. The result goes to the front without the backend's
//! `related-task` `_meta` (the backend's task id means nothing there).

use std::time::Duration;

use serde_json::{Value, json};
use snodo::RequestContext;
use snodo_client::Client;

use super::McpSource;
use crate::relay;
use crate::source::{Source, SourceError};

/// The shortest and longest wait between two `tasks/get` of a backend task.
const POLL: (u64, u64) = (100, 5_000);

/// How long the backend's `tasks/cancel` may take.
const CANCEL_TIMEOUT: Duration = Duration::from_secs(5);

/// The `_meta` key with which a 2025-11-25 backend ties its `tasks/result` to its own
/// task: that id names nothing at the front, so it is not passed on.
const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// The backend's task result as the front's: without the backend's
/// [`RELATED_TASK`] (and without a `_meta` left empty by its removal).
fn front_result(mut v: Value) -> Value {
    if let Some(o) = v.as_object_mut() {
        let empty = o
            .get_mut("_meta")
            .and_then(Value::as_object_mut)
            .is_some_and(|meta| {
                meta.remove(RELATED_TASK);
                meta.is_empty()
            });
        if empty {
            o.remove("_meta");
        }
    }
    v
}

/// Sends the backend's `tasks/cancel` for its task unless disarmed (the result came).
struct CancelOnDrop {
    client: Client,
    task: Option<String>,
    source: String,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(id) = self.task.take() else { return };
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (c, source) = (self.client.clone(), self.source.clone());
        rt.spawn(async move {
            let r = tokio::time::timeout(
                CANCEL_TIMEOUT,
                c.request("tasks/cancel", json!({"taskId": id})),
            )
            .await;
            match r {
                Ok(Ok(_)) => tracing::debug!(%source, backend_task = %id, "backend task cancelled"),
                Ok(Err(e)) => {
                    tracing::debug!(%source, backend_task = %id, error = %e, "backend task not cancelled")
                }
                Err(_) => tracing::debug!(%source, backend_task = %id, "backend tasks/cancel timed out"),
            }
        });
    }
}

impl McpSource {
    /// See the module's documentation.
    pub(super) async fn run_task(
        &self,
        params: Value,
        ctx: &RequestContext,
    ) -> Result<Value, SourceError> {
        // A continued input round is the relay's (a 2026-07-28 backend's round, or a
        // parked call, maybe on another instance: no connection is leased for it here).
        if ctx.request_state().is_some() {
            return self.request("tools/call", params, ctx).await;
        }
        let lease = self.lease().await?;
        let offers = lease
            .client
            .server()
            .capabilities
            .pointer("/tasks/requests/tools/call")
            .is_some();
        if !offers {
            drop(lease);
            return self.request("tools/call", params, ctx).await;
        }
        let mut p = params;
        if let Value::Object(m) = &mut p {
            // The backend's own lifetime for it (its default ttl).
            m.insert("task".into(), json!({}));
        }
        let created = match lease.client.request("tools/call", p).await {
            Ok(v) => v,
            Err(e) => return Err(self.fail(&lease, e).await),
        };
        let Some(id) = created
            .pointer("/task/taskId")
            .and_then(Value::as_str)
            .map(str::to_owned)
        else {
            // The backend answered at once.
            return Ok(created);
        };
        let name = &self.cfg.name;
        // `front_task` only for a front task (a synchronous caller's call has none), as
        // the plain id: what an operator (and scale/gateway_tasks.sh) matches on.
        tracing::debug!(source = %name, backend_task = %id, front_task = ctx.task_id(), "backend task created");
        let mut guard = CancelOnDrop {
            client: lease.client.clone(),
            task: Some(id.clone()),
            source: name.clone(),
        };
        let every = created
            .pointer("/task/pollInterval")
            .and_then(Value::as_u64)
            .unwrap_or(1_000)
            .clamp(POLL.0, POLL.1);
        let mut status = created
            .pointer("/task/statusMessage")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let mut reports = 0.0;
        if let Some(m) = &status {
            reports += 1.0;
            ctx.progress(reports, None, Some(m)).await;
        }
        let result = relay::call(
            &lease.client,
            lease.conn,
            &self.cfg.asker,
            "tasks/result",
            json!({"taskId": id}),
            ctx,
        );
        tokio::pin!(result);
        let mut tick = tokio::time::interval(Duration::from_millis(every));
        // A slow poll is not made up for with a burst of them.
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await;
        let r = loop {
            tokio::select! {
                biased;
                r = &mut result => break r,
                _ = tick.tick() => {
                    // Bounded by the period: a backend that never answers a poll does
                    // not keep `result` (the result, the front's cancellation) unpolled.
                    let poll = lease.client.request("tasks/get", json!({"taskId": id}));
                    let Ok(Ok(t)) = tokio::time::timeout(Duration::from_millis(every), poll).await else {
                        continue;
                    };
                    let now = t.get("statusMessage").and_then(Value::as_str);
                    if now.is_some() && now != status.as_deref() {
                        status = now.map(str::to_owned);
                        reports += 1.0;
                        ctx.progress(reports, None, now).await;
                    }
                }
            }
        };
        match r {
            Ok(a) => {
                guard.task = None;
                let v = a.into_value().map_err(|e| {
                    SourceError::Rpc(snodo::RpcError::internal(format!(
                        "backend \"{}\" sent a task result snodo cannot read: {e}",
                        self.cfg.name
                    )))
                })?;
                Ok(front_result(v))
            }
            Err(relay::Stop::Source(e)) => {
                // The backend answered tasks/result with an error: the task failed
                // there (or was cancelled there); nothing to cancel.
                guard.task = None;
                Err(e)
            }
            // A failure after the front's cancellation is the cancellation's.
            Err(_) if ctx.is_cancelled() => Err(self.stopped(None, relay::Stop::Cancelled).await),
            Err(stop) => Err(self.stopped(Some(&lease), stop).await),
        }
    }
}
