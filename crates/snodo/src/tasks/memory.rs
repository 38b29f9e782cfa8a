//! The in-process task store (the default): a map behind a mutex, one `watch` channel
//! per task for [`TaskStore::wait_change`].

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use futures_util::future::BoxFuture;
use serde_json::{Map, Value};
use tokio::sync::watch;

use super::store::{
    LEASE_LOST_MESSAGE, NewTask, Outcome, Owner, StoreError, TaskLimits, TaskRecord, TaskStatus,
    TaskStore, lease_lost_error,
};

/// Tasks kept in this process's memory: lost on restart, not shared between instances.
#[derive(Debug, Default)]
pub struct MemoryStore {
    tasks: Mutex<HashMap<String, Entry>>,
}

#[derive(Debug)]
struct Entry {
    record: TaskRecord,
    responses: Map<String, Value>,
    instance: String,
    lease_until: Instant,
    version: watch::Sender<u64>,
}

impl Entry {
    /// Records a change: bumps the version, stamps `updated_at`, wakes watchers.
    fn touch(&mut self) {
        self.record.version += 1;
        self.record.updated_at = SystemTime::now();
        self.version.send_replace(self.record.version);
    }

    fn lease_live(&self, now: Instant) -> bool {
        self.lease_until > now
    }

    fn fail_lost(&mut self) {
        self.record.status = TaskStatus::Failed;
        self.record.status_message = Some(LEASE_LOST_MESSAGE.to_owned());
        self.record.input_requests = None;
        self.record.outcome = Some(Outcome::Error(lease_lost_error()));
        self.touch();
    }
}

impl MemoryStore {
    /// An empty store.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Entry>> {
        // A panic while holding the lock leaves consistent data (every change is a
        // handful of field writes), so a poisoned lock is still usable.
        self.tasks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The entry for `id` if `owner` may see it and it has not expired.
    fn visible<'m>(
        map: &'m mut HashMap<String, Entry>,
        id: &str,
        owner: &Owner,
    ) -> Option<&'m mut Entry> {
        map.get_mut(id)
            .filter(|e| &e.record.owner == owner && !e.record.expired_at(SystemTime::now()))
    }
}

impl TaskStore for MemoryStore {
    fn create(&self, task: NewTask) -> BoxFuture<'_, Result<TaskRecord, StoreError>> {
        let result = (|| {
            let mut map = self.lock();
            if map.contains_key(&task.id) {
                return Err(StoreError::Conflict(format!("task id {} exists", task.id)));
            }
            let now = SystemTime::now();
            if task.limits != TaskLimits::default() {
                // Expired tasks are gone for their owners: they do not count.
                let live = map.values().filter(|e| !e.record.expired_at(now));
                let (owned, all) = live.fold((0, 0), |(owned, all), e| {
                    (owned + u64::from(e.record.owner == task.owner), all + 1)
                });
                if let Some(refused) = task.limits.refusal(owned, all) {
                    return Err(refused);
                }
            }
            let record = TaskRecord {
                id: task.id.clone(),
                owner: task.owner,
                status: TaskStatus::Working,
                status_message: task.status_message,
                created_at: now,
                updated_at: now,
                ttl_ms: task.ttl_ms,
                poll_interval_ms: task.poll_interval_ms,
                input_requests: None,
                outcome: None,
                cancel_requested: false,
                version: 1,
            };
            let entry = Entry {
                record: record.clone(),
                responses: Map::new(),
                instance: task.instance,
                lease_until: crate::engine::later(Instant::now(), task.lease),
                version: watch::channel(1).0,
            };
            map.insert(task.id, entry);
            Ok(record)
        })();
        Box::pin(async move { result })
    }

    fn get<'a>(
        &'a self,
        id: &'a str,
        owner: &'a Owner,
    ) -> BoxFuture<'a, Result<Option<TaskRecord>, StoreError>> {
        let mut map = self.lock();
        let found = Self::visible(&mut map, id, owner).map(|e| e.record.clone());
        drop(map);
        Box::pin(async move { Ok(found) })
    }

    fn set_status<'a>(
        &'a self,
        id: &'a str,
        status: TaskStatus,
        message: Option<String>,
        input_requests: Option<Map<String, Value>>,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        let changed = (|| {
            let mut map = self.lock();
            let Some(e) = map.get_mut(id) else {
                return false;
            };
            if e.record.status.is_terminal()
                || matches!(status, TaskStatus::Completed | TaskStatus::Failed)
            {
                return false;
            }
            e.record.status = status;
            e.record.status_message = message;
            e.record.input_requests = if status == TaskStatus::InputRequired {
                input_requests
            } else {
                None
            };
            e.touch();
            true
        })();
        Box::pin(async move { Ok(changed) })
    }

    fn finish<'a>(
        &'a self,
        id: &'a str,
        outcome: Outcome,
        message: Option<String>,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        let changed = (|| {
            let mut map = self.lock();
            let Some(e) = map.get_mut(id) else {
                return false;
            };
            if e.record.status.is_terminal() {
                return false;
            }
            e.record.status = match outcome {
                Outcome::Result(_) => TaskStatus::Completed,
                Outcome::Error(_) => TaskStatus::Failed,
            };
            e.record.outcome = Some(outcome);
            e.record.status_message = message;
            e.record.input_requests = None;
            e.touch();
            true
        })();
        Box::pin(async move { Ok(changed) })
    }

    fn request_cancel<'a>(
        &'a self,
        id: &'a str,
        owner: &'a Owner,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        let known = (|| {
            let mut map = self.lock();
            let Some(e) = Self::visible(&mut map, id, owner) else {
                return false;
            };
            if e.record.status.is_terminal() {
                return true;
            }
            if !e.record.cancel_requested {
                e.record.cancel_requested = true;
                if !e.lease_live(Instant::now()) {
                    e.record.status = TaskStatus::Cancelled;
                    e.record.input_requests = None;
                }
                e.touch();
            }
            true
        })();
        Box::pin(async move { Ok(known) })
    }

    fn add_input_responses<'a>(
        &'a self,
        id: &'a str,
        owner: &'a Owner,
        responses: Map<String, Value>,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        let known = (|| {
            let mut map = self.lock();
            let Some(e) = Self::visible(&mut map, id, owner) else {
                return false;
            };
            let outstanding = e.record.input_requests.as_ref();
            let mut added = false;
            for (k, v) in responses {
                if outstanding.is_some_and(|o| o.contains_key(&k)) {
                    e.responses.insert(k, v);
                    added = true;
                }
            }
            if added {
                e.touch();
            }
            true
        })();
        Box::pin(async move { Ok(known) })
    }

    fn take_input_responses<'a>(
        &'a self,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Map<String, Value>, StoreError>> {
        let taken = self
            .lock()
            .get_mut(id)
            .map(|e| std::mem::take(&mut e.responses))
            .unwrap_or_default();
        Box::pin(async move { Ok(taken) })
    }

    fn wait_change<'a>(
        &'a self,
        id: &'a str,
        after: u64,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<Option<TaskRecord>, StoreError>> {
        Box::pin(async move {
            let mut rx = {
                let map = self.lock();
                let Some(e) = map.get(id) else {
                    return Ok(None);
                };
                if e.record.version > after {
                    return Ok(Some(e.record.clone()));
                }
                e.version.subscribe()
            };
            // Err = the sender was dropped (the task was deleted): fall through to the read.
            let _ = tokio::time::timeout(timeout, rx.wait_for(|v| *v > after)).await;
            Ok(self.lock().get(id).map(|e| e.record.clone()))
        })
    }

    fn renew_lease<'a>(
        &'a self,
        id: &'a str,
        instance: &'a str,
        lease: Duration,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        let renewed = match self.lock().get_mut(id) {
            Some(e) if e.instance == instance && !e.record.status.is_terminal() => {
                e.lease_until = crate::engine::later(Instant::now(), lease);
                true
            }
            _ => false,
        };
        Box::pin(async move { Ok(renewed) })
    }

    fn sweep(&self) -> BoxFuture<'_, Result<u64, StoreError>> {
        let changed = {
            let mut map = self.lock();
            let now = SystemTime::now();
            let before = map.len();
            map.retain(|_, e| !e.record.expired_at(now));
            let mut changed = (before - map.len()) as u64;
            let instant = Instant::now();
            for e in map.values_mut() {
                if !e.record.status.is_terminal() && !e.lease_live(instant) {
                    e.fail_lost();
                    changed += 1;
                }
            }
            changed
        };
        Box::pin(async move { Ok(changed) })
    }

    fn recover<'a>(&'a self, instance: &'a str) -> BoxFuture<'a, Result<u64, StoreError>> {
        let changed = {
            let mut map = self.lock();
            let mut changed = 0;
            for e in map.values_mut() {
                if e.instance == instance && !e.record.status.is_terminal() {
                    e.fail_lost();
                    changed += 1;
                }
            }
            changed
        };
        Box::pin(async move { Ok(changed) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn new_task(id: &str, lease: Duration) -> NewTask {
        NewTask {
            id: id.to_owned(),
            owner: Owner::new("alice", ""),
            ttl_ms: Some(60_000),
            poll_interval_ms: Some(100),
            status_message: None,
            instance: "a".to_owned(),
            lease,
            limits: TaskLimits::default(),
        }
    }

    /// A lease of `Duration::MAX` is taken and renewed, and stays live.
    #[tokio::test]
    async fn an_endless_lease_does_not_overflow() {
        let s = MemoryStore::new();
        assert!(s.create(new_task("t", Duration::MAX)).await.is_ok());
        assert_eq!(
            s.renew_lease("t", "a", Duration::MAX).await.ok(),
            Some(true)
        );
    }

    #[tokio::test]
    async fn transitions_outcomes_leases() {
        let s = MemoryStore::new();
        let alice = Owner::new("alice", "");
        let bob = Owner::new("bob", "");
        let t = s.create(new_task("t", Duration::from_secs(60))).await;
        assert_eq!(t.ok().map(|t| t.version), Some(1));
        assert!(s.create(new_task("t", Duration::ZERO)).await.is_err());
        assert!(matches!(s.get("t", &bob).await, Ok(None)));
        let asks = serde_json::Map::from_iter([("k".to_owned(), json!({"method": "x"}))]);
        assert!(matches!(
            s.set_status("t", TaskStatus::InputRequired, None, Some(asks))
                .await,
            Ok(true)
        ));
        assert!(matches!(
            s.add_input_responses("t", &bob, Map::new()).await,
            Ok(false)
        ));
        let answers = Map::from_iter([("k".to_owned(), json!(1)), ("other".to_owned(), json!(2))]);
        assert!(matches!(
            s.add_input_responses("t", &alice, answers).await,
            Ok(true)
        ));
        let taken = s.take_input_responses("t").await.unwrap_or_default();
        assert_eq!(taken.keys().collect::<Vec<_>>(), ["k"]);
        assert!(matches!(
            s.set_status("t", TaskStatus::Completed, None, None).await,
            Ok(false)
        ));
        assert!(matches!(
            s.finish("t", Outcome::Result(json!({})), None).await,
            Ok(true)
        ));
        assert!(matches!(
            s.finish("t", Outcome::Error(json!({})), None).await,
            Ok(false)
        ));
        assert!(matches!(
            s.set_status("t", TaskStatus::Working, None, None).await,
            Ok(false)
        ));
        let done = s.get("t", &alice).await.ok().flatten();
        assert_eq!(done.as_ref().map(|d| d.status), Some(TaskStatus::Completed));
        assert!(done.is_some_and(|d| d.input_requests.is_none()));
        // A lease that ran out fails the task at the next sweep.
        let _ = s.create(new_task("lost", Duration::ZERO)).await;
        assert!(matches!(s.sweep().await, Ok(1)));
        let lost = s.get("lost", &alice).await.ok().flatten();
        assert_eq!(lost.as_ref().map(|l| l.status), Some(TaskStatus::Failed));
        assert_eq!(
            lost.and_then(|l| l.outcome),
            Some(Outcome::Error(lease_lost_error()))
        );
        // A restart of the same instance fails what it was running.
        let _ = s.create(new_task("running", Duration::from_secs(60))).await;
        assert!(matches!(s.recover("a").await, Ok(1)));
        // Cancelling a task nobody runs cancels it at once; a waiter hears it.
        let _ = s.create(new_task("orphan", Duration::ZERO)).await;
        let waiter = s.wait_change("orphan", 1, Duration::from_secs(5));
        let (changed, cancelled) = tokio::join!(waiter, s.request_cancel("orphan", &alice));
        assert!(matches!(cancelled, Ok(true)));
        let changed = changed.ok().flatten();
        assert_eq!(changed.map(|c| c.status), Some(TaskStatus::Cancelled));
    }
}
