//! The task worker: runs a task's handler, holds and renews its lease, turns a
//! `tasks/cancel` into the handler's cancellation, parks the task in `input_required`
//! while the handler waits for answers, and stores the outcome once.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::options::Tasks;
use super::store::{Outcome, StoreError, TaskStatus};
use crate::protocol::RpcError;
use crate::runtime::error::HandlerError;

/// How long a cancelled handler may keep running to observe its cancellation.
const CANCEL_GRACE: Duration = Duration::from_millis(250);

/// How long a worker waits for a change before it looks again (and renews its lease
/// when due) while the store reports errors.
const RETRY: Duration = Duration::from_millis(500);

/// How a task ended whose worker stopped without storing an outcome: it expired and was
/// deleted, or another instance took it over (the `snodo_tasks_ended_total` label).
const LOST: &str = "lost";

/// The status message of a task parked for input.
const WAITING: &str = "Waiting for input";

/// What a task's handler context knows of its task.
#[derive(Clone)]
pub(crate) struct TaskLink {
    pub(crate) tasks: Arc<Tasks>,
    pub(crate) id: Arc<str>,
}

impl std::fmt::Debug for TaskLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskLink").field("id", &self.id).finish()
    }
}

fn store_failed(e: &StoreError) -> HandlerError {
    HandlerError::Protocol(RpcError::internal(format!("The task store failed: {e}")))
}

impl TaskLink {
    /// Parks the task in `input_required` with `requests` until every one of them is
    /// answered through `tasks/update` (partial answers narrow the outstanding set),
    /// then sets it `working` again. `accepts` says whether an answer is well-formed
    /// (a malformed one leaves its request outstanding).
    pub(crate) async fn collect(
        &self,
        mut outstanding: Map<String, Value>,
        accepts: impl Fn(&str, &Value) -> bool,
        cancel: &CancellationToken,
    ) -> Result<Map<String, Value>, HandlerError> {
        let store = self.tasks.store();
        let id = &*self.id;
        let mut answers = Map::new();
        let park = |outstanding: Map<String, Value>| async move {
            store
                .set_status(
                    id,
                    TaskStatus::InputRequired,
                    Some(WAITING.to_owned()),
                    Some(outstanding),
                )
                .await
                .map_err(|e| store_failed(&e))
        };
        park(outstanding.clone()).await?;
        // Waiting, not working, until the answers are in.
        let observe = &self.tasks.observe;
        let _parked = (
            observe.task("working", -1),
            observe.task("input_required", 1),
        );
        let mut seen = 0;
        loop {
            let mut narrowed = false;
            for (key, answer) in store
                .take_input_responses(id)
                .await
                .map_err(|e| store_failed(&e))?
            {
                if outstanding.contains_key(&key) && accepts(&key, &answer) {
                    outstanding.remove(&key);
                    answers.insert(key, answer);
                    narrowed = true;
                }
            }
            if outstanding.is_empty() {
                store
                    .set_status(id, TaskStatus::Working, None, None)
                    .await
                    .map_err(|e| store_failed(&e))?;
                return Ok(answers);
            }
            if narrowed {
                park(outstanding.clone()).await?;
            }
            let changed = tokio::select! {
                changed = store.wait_change(id, seen, Duration::from_secs(30)) => changed,
                () = cancel.cancelled() => return Err(cancelled()),
            };
            match changed {
                Ok(Some(r)) if r.status.is_terminal() || r.cancel_requested => {
                    return Err(cancelled());
                }
                Ok(Some(r)) => seen = r.version,
                Ok(None) => return Err(cancelled()),
                Err(e) => {
                    tracing::warn!(task = id, error = %e, "task store: waiting for input");
                    tokio::time::sleep(RETRY).await;
                }
            }
        }
    }

    /// Sets the task's status message (the handler's progress), keeping it `working`.
    pub(crate) async fn working(&self, message: String) {
        let store = self.tasks.store();
        if let Err(e) = store
            .set_status(&self.id, TaskStatus::Working, Some(message), None)
            .await
        {
            tracing::warn!(task = &*self.id, error = %e, "task store: status message");
        }
    }
}

impl crate::runtime::worker::Worker for TaskLink {
    fn id(&self) -> &str {
        &self.id
    }

    fn status(&self, message: String) -> futures_util::future::BoxFuture<'_, ()> {
        Box::pin(self.working(message))
    }

    fn collect<'a>(
        &'a self,
        outstanding: Map<String, Value>,
        accepts: &'a (dyn Fn(&str, &Value) -> bool + Send + Sync),
        cancel: &'a CancellationToken,
    ) -> futures_util::future::BoxFuture<'a, Result<Map<String, Value>, HandlerError>> {
        Box::pin(TaskLink::collect(self, outstanding, accepts, cancel))
    }
}

fn cancelled() -> HandlerError {
    HandlerError::Protocol(RpcError::internal("The task was cancelled"))
}

/// Runs a task's `work` to its outcome, or until a `tasks/cancel` (on any instance)
/// or the loss of the task cancels it. `hold` (the running-task slot, the tool's
/// concurrency slot) is released when the worker ends.
pub(crate) async fn supervise<H: Send>(
    link: TaskLink,
    cancel: CancellationToken,
    work: BoxFuture<'static, Outcome>,
    hold: H,
) {
    let store = link.tasks.store();
    let observe = &link.tasks.observe;
    let _running = observe.task("working", 1);
    let id = &*link.id;
    let mut work = pin!(work);
    let watch = pin!(watch(&link, &cancel));
    tokio::select! {
        outcome = &mut work => {
            let (message, ended) = match &outcome {
                Outcome::Error(e) => (
                    e.get("message").and_then(Value::as_str).map(str::to_owned),
                    "failed",
                ),
                Outcome::Result(_) => (None, "completed"),
            };
            match store.finish(id, outcome, message).await {
                Ok(true) => observe.task_ended(ended),
                // Ended before the work did (cancelled, expired, taken over).
                Ok(false) => observe.task_ended(LOST),
                Err(e) => {
                    observe.task_ended(LOST);
                    tracing::error!(task = id, error = %e, "task store: the outcome was not stored");
                }
            }
        }
        why = watch => {
            cancel.cancel();
            observe.task_ended(match why {
                Stopped::Cancelled => "cancelled",
                Stopped::Gone => LOST,
            });
            if why == Stopped::Cancelled {
                let message = Some("Cancelled at the client's request".to_owned());
                if let Err(e) = store.set_status(id, TaskStatus::Cancelled, message, None).await {
                    tracing::error!(task = id, error = %e, "task store: the cancellation was not stored");
                }
            }
            let _ = tokio::time::timeout(CANCEL_GRACE, &mut work).await;
        }
    }
    drop(hold);
}

#[derive(Debug, PartialEq, Eq)]
enum Stopped {
    /// The client asked for cancellation.
    Cancelled,
    /// The task is gone (expired and deleted) or was ended elsewhere (lease lost).
    Gone,
}

/// Renews the lease every third of it and returns when the task is cancelled or gone.
async fn watch(link: &TaskLink, cancel: &CancellationToken) -> Stopped {
    let store = link.tasks.store();
    let options = &link.tasks.options;
    let id = &*link.id;
    let every = options.lease / 3;
    let mut renewed = Instant::now();
    let mut seen = 0;
    loop {
        let wait = every.saturating_sub(renewed.elapsed());
        let changed = tokio::select! {
            changed = store.wait_change(id, seen, wait) => changed,
            () = cancel.cancelled() => return Stopped::Gone,
        };
        match changed {
            Ok(Some(r)) if r.cancel_requested || r.status == TaskStatus::Cancelled => {
                return Stopped::Cancelled;
            }
            Ok(Some(r)) if r.status.is_terminal() => return Stopped::Gone,
            Ok(Some(r)) => seen = r.version,
            Ok(None) => return Stopped::Gone,
            Err(e) => {
                tracing::warn!(task = id, error = %e, "task store: watching the task");
                tokio::time::sleep(RETRY.min(every)).await;
            }
        }
        if renewed.elapsed() >= every {
            match store
                .renew_lease(id, &options.instance, options.lease)
                .await
            {
                Ok(true) => renewed = Instant::now(),
                Ok(false) => return Stopped::Gone,
                Err(e) => tracing::warn!(task = id, error = %e, "task store: lease renewal"),
            }
        }
    }
}

/// Spawns `supervise` on the current tokio runtime.
pub(crate) fn spawn<H: Send + 'static>(
    link: TaskLink,
    cancel: CancellationToken,
    work: impl Future<Output = Outcome> + Send + 'static,
    hold: H,
) {
    tokio::spawn(supervise(link, cancel, Box::pin(work), hold));
}
