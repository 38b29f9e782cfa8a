//! The tasks a `subscriptions/listen` stream watches (`notifications.taskIds`): accepted
//! after an owner-checked read, then followed through [`TaskStore::wait_change`] until
//! they end, so that a change made on any instance sharing the store is heard.
//!
//! [`TaskStore::wait_change`]: super::TaskStore::wait_change

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::select_all;

use super::options::Tasks;
use super::store::{Owner, TaskRecord};

/// How long one wait for a change lasts before it is renewed.
const WAIT: Duration = Duration::from_secs(30);

/// The watched tasks of one subscription.
pub(crate) struct TaskWatch {
    tasks: Arc<Tasks>,
    owner: Owner,
    /// Asked for, before [`accept`](Self::accept) (`None`: the request had no `taskIds`).
    requested: Option<Vec<String>>,
    /// Accepted: the caller owns them.
    accepted: Option<Vec<String>>,
    /// Not ended yet, with the version last delivered.
    watched: Vec<(String, u64)>,
}

impl std::fmt::Debug for TaskWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskWatch")
            .field("watched", &self.watched.len())
            .finish_non_exhaustive()
    }
}

impl TaskWatch {
    pub(crate) fn new(tasks: &Arc<Tasks>, requested: Option<Vec<String>>, owner: Owner) -> Self {
        Self {
            tasks: Arc::clone(tasks),
            owner,
            requested,
            accepted: None,
            watched: Vec::new(),
        }
    }

    /// Keeps the requested tasks the caller owns (others are left out of the
    /// acknowledgement, exactly like unknown ids); returns their current state.
    pub(crate) async fn accept(&mut self) -> Vec<TaskRecord> {
        let Some(requested) = self.requested.take() else {
            return Vec::new();
        };
        let mut accepted = Vec::new();
        let mut current = Vec::new();
        for id in requested {
            if accepted.contains(&id) {
                continue;
            }
            match self.tasks.store().get(&id, &self.owner).await {
                Ok(Some(record)) => {
                    if !record.status.is_terminal() {
                        self.watched.push((id.clone(), record.version));
                    }
                    accepted.push(id);
                    current.push(record);
                }
                Ok(None) => {}
                Err(e) => tracing::warn!(task = %id, error = %e, "task store: listen"),
            }
        }
        self.accepted = Some(accepted);
        current
    }

    /// The accepted ids, if the request asked for tasks.
    pub(crate) fn accepted(&self) -> Option<&[String]> {
        self.accepted.as_deref()
    }

    /// The next changed task (pending forever when nothing is watched). Cancel-safe.
    pub(crate) async fn next(&mut self) -> Vec<TaskRecord> {
        loop {
            if self.watched.is_empty() {
                return std::future::pending().await;
            }
            let store = self.tasks.store();
            let waits = self
                .watched
                .iter()
                .map(|(id, seen)| store.wait_change(id, *seen, WAIT));
            let (changed, i, rest) = select_all(waits).await;
            drop(rest);
            match changed {
                Ok(Some(r)) if r.version > self.watched[i].1 => {
                    if r.status.is_terminal() {
                        self.watched.swap_remove(i);
                    } else {
                        self.watched[i].1 = r.version;
                    }
                    return vec![r];
                }
                Ok(Some(_)) => {}
                Ok(None) => {
                    self.watched.swap_remove(i);
                }
                Err(e) => {
                    tracing::warn!(error = %e, "task store: listen");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        }
    }
}
