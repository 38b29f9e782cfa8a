//! The store logic shared by both databases: every [`TaskStore`] method as SQL over a
//! [`Backend`] (a pool that runs one statement), plus the wake-up channel behind
//! `wait_change`.
//!
//! Transitions are decided by the database, not by a read-then-write in Rust: each
//! status change is one `UPDATE ... WHERE status IN ('working', 'input_required')`, so
//! two instances racing on the same task cannot move it backwards or store two outcomes.
//! The two JSON-map edits (adding and taking input answers) are compare-and-set on
//! `version`. Times come from the database's clock (`{now}` in the statements).

use std::future::Future;
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::{Map, Value};
use snodo::tasks::{
    LEASE_LOST_MESSAGE, NewTask, Outcome, Owner, StoreError, TaskLimits, TaskRecord, TaskStatus,
    TaskStore, lease_lost_error,
};
use tokio::sync::broadcast;

use crate::row::{Arg, COLUMNS, Raw, duration_ms, millis, outcome_columns};

/// One database: runs a statement with `$n` placeholders, `{now}` already replaced.
pub(crate) trait Backend: Send + Sync + 'static {
    /// The database's clock in milliseconds since the Unix epoch, as an SQL expression
    /// that is stable within one statement.
    const NOW: &'static str;

    /// Runs a statement; the number of rows it changed.
    fn execute<'a>(
        &'a self,
        sql: &'a str,
        args: &'a [Arg],
    ) -> impl Future<Output = Result<u64, StoreError>> + Send + 'a;

    /// Runs a statement selecting [`COLUMNS`]; the first row.
    fn fetch<'a>(
        &'a self,
        sql: &'a str,
        args: &'a [Arg],
    ) -> impl Future<Output = Result<Option<Raw>, StoreError>> + Send + 'a;

    /// Runs a statement selecting one integer (a count).
    fn count<'a>(
        &'a self,
        sql: &'a str,
        args: &'a [Arg],
    ) -> impl Future<Output = Result<u64, StoreError>> + Send + 'a;
}

/// The wake-up for [`TaskStore::wait_change`]: task ids whose version changed, from this
/// process's own writes and (PostgreSQL) from LISTEN. `""` wakes every waiter.
pub(crate) type Changes = broadcast::Sender<String>;

/// A store over one backend. The public types are [`crate::SqliteStore`] and
/// [`crate::PgStore`].
#[derive(Debug)]
pub struct SqlStore<B> {
    pub(crate) backend: B,
    pub(crate) changes: Changes,
    /// How often `wait_change` re-reads the row when no wake-up arrives.
    pub(crate) poll_interval: Duration,
    /// Stopped with the store (PostgreSQL's listener task).
    pub(crate) listener: Option<tokio::task::JoinHandle<()>>,
}

impl<B> Drop for SqlStore<B> {
    fn drop(&mut self) {
        if let Some(task) = self.listener.take() {
            task.abort();
        }
    }
}

/// Visible to an owner: not expired.
const LIVE: &str = "(expires_at IS NULL OR expires_at >= {now})";
/// Not terminal.
const RUNNING: &str = "status IN ('working', 'input_required')";
/// How many times a compare-and-set edit is retried against concurrent writers.
const CAS_TRIES: usize = 32;

/// The wake-up channel's capacity; a waiter that lags re-reads its row.
pub(crate) fn changes() -> Changes {
    broadcast::channel(1024).0
}

// `Backend` is crate-private on purpose (sealed): users name `SqliteStore` / `PgStore`.
#[allow(private_bounds)]
impl<B: Backend> SqlStore<B> {
    fn sql(template: &str) -> String {
        template
            .replace("{live}", LIVE)
            .replace("{running}", RUNNING)
            .replace("{cols}", COLUMNS)
            .replace("{now}", B::NOW)
    }

    async fn execute(&self, template: &str, args: &[Arg]) -> Result<u64, StoreError> {
        self.backend.execute(&Self::sql(template), args).await
    }

    async fn fetch(&self, template: &str, args: &[Arg]) -> Result<Option<Raw>, StoreError> {
        self.backend.fetch(&Self::sql(template), args).await
    }

    async fn count(&self, template: &str, args: &[Arg]) -> Result<u64, StoreError> {
        self.backend.count(&Self::sql(template), args).await
    }

    fn changed(&self, id: &str) {
        // No receiver is not an error: nobody waits.
        let _ = self.changes.send(id.to_owned());
    }

    async fn row(&self, id: &str) -> Result<Option<Raw>, StoreError> {
        self.fetch("SELECT {cols} FROM snodo_tasks WHERE id = $1", &[id.into()])
            .await
    }

    async fn visible_row(&self, id: &str, owner: &Owner) -> Result<Option<Raw>, StoreError> {
        self.fetch(
            "SELECT {cols} FROM snodo_tasks \
             WHERE id = $1 AND owner_subject = $2 AND owner_scope = $3 AND {live}",
            &[
                id.into(),
                owner.subject.as_str().into(),
                owner.scope.as_str().into(),
            ],
        )
        .await
    }

    async fn create(&self, task: NewTask) -> Result<TaskRecord, StoreError> {
        let limits = task.limits;
        let cap = |n: Option<u64>| n.map_or(i64::MAX, |n| i64::try_from(n).unwrap_or(i64::MAX));
        let owner = task.owner.clone();
        let args = [
            task.id.as_str().into(),
            task.owner.subject.into(),
            task.owner.scope.into(),
            task.status_message.into(),
            task.ttl_ms.map(millis).into(),
            task.poll_interval_ms.map(millis).into(),
            task.instance.into(),
            duration_ms(task.lease).into(),
            cap(limits.per_owner).into(),
            cap(limits.total).into(),
        ];
        // The limits are checked by the insert itself (no read-then-write): SQLite runs
        // one writer at a time; on PostgreSQL creates racing on other connections may
        // each see the count before the others' rows.
        let raw = self
            .fetch(
                "INSERT INTO snodo_tasks (id, owner_subject, owner_scope, status, status_message, \
                 created_at, updated_at, ttl_ms, poll_interval_ms, expires_at, version, instance, \
                 lease_until) \
                 SELECT $1, $2, $3, 'working', $4, {now}, {now}, $5, $6, {now} + $5, 1, $7, \
                 {now} + $8 \
                 WHERE (SELECT COUNT(*) FROM snodo_tasks \
                        WHERE owner_subject = $2 AND owner_scope = $3 AND {live}) < $9 \
                   AND (SELECT COUNT(*) FROM snodo_tasks WHERE {live}) < $10 \
                 RETURNING {cols}",
                &args,
            )
            .await?;
        match raw {
            Some(raw) => raw.record(),
            None => Err(self.refusal(&owner, limits).await),
        }
    }

    /// Why a create within `limits` stored nothing: the counts, read again.
    async fn refusal(&self, owner: &Owner, limits: TaskLimits) -> StoreError {
        let counted = self
            .count(
                "SELECT COUNT(*) FROM snodo_tasks \
                 WHERE owner_subject = $1 AND owner_scope = $2 AND {live}",
                &[owner.subject.as_str().into(), owner.scope.as_str().into()],
            )
            .await;
        let all = self
            .count("SELECT COUNT(*) FROM snodo_tasks WHERE {live}", &[])
            .await;
        match (counted, all) {
            (Ok(owned), Ok(all)) => limits.refusal(owned, all),
            _ => None,
        }
        .unwrap_or_else(|| StoreError::LimitReached("the task store is full; retry later".into()))
    }

    async fn set_status(
        &self,
        id: &str,
        status: TaskStatus,
        message: Option<String>,
        input_requests: Option<Map<String, Value>>,
    ) -> Result<bool, StoreError> {
        if matches!(status, TaskStatus::Completed | TaskStatus::Failed) {
            return Ok(false); // outcomes go through finish
        }
        let requests = match (status, input_requests) {
            (TaskStatus::InputRequired, Some(map)) => Some(Value::Object(map).to_string()),
            _ => None,
        };
        let n = self
            .execute(
                "UPDATE snodo_tasks SET status = $2, status_message = $3, input_requests = $4, \
                 version = version + 1, updated_at = {now} WHERE id = $1 AND {running}",
                &[
                    id.into(),
                    status.as_str().into(),
                    message.into(),
                    requests.into(),
                ],
            )
            .await?;
        self.wake(id, n)
    }

    async fn finish(
        &self,
        id: &str,
        outcome: Outcome,
        message: Option<String>,
    ) -> Result<bool, StoreError> {
        let status = match outcome {
            Outcome::Result(_) => TaskStatus::Completed,
            Outcome::Error(_) => TaskStatus::Failed,
        };
        let (kind, json) = outcome_columns(&outcome);
        let n = self
            .execute(
                "UPDATE snodo_tasks SET status = $2, outcome_kind = $3, outcome = $4, \
                 status_message = $5, input_requests = NULL, version = version + 1, \
                 updated_at = {now} WHERE id = $1 AND {running}",
                &[
                    id.into(),
                    status.as_str().into(),
                    kind.into(),
                    json.into(),
                    message.into(),
                ],
            )
            .await?;
        self.wake(id, n)
    }

    async fn request_cancel(&self, id: &str, owner: &Owner) -> Result<bool, StoreError> {
        // A task whose lease ran out has no worker left to see the flag: cancelled here.
        let n = self
            .execute(
                "UPDATE snodo_tasks SET cancel_requested = TRUE, \
                 status = CASE WHEN lease_until <= {now} THEN 'cancelled' ELSE status END, \
                 input_requests = CASE WHEN lease_until <= {now} THEN NULL \
                 ELSE input_requests END, \
                 version = version + 1, updated_at = {now} \
                 WHERE id = $1 AND owner_subject = $2 AND owner_scope = $3 AND {live} \
                 AND {running} AND cancel_requested = FALSE",
                &[
                    id.into(),
                    owner.subject.as_str().into(),
                    owner.scope.as_str().into(),
                ],
            )
            .await?;
        if n > 0 {
            self.changed(id);
            return Ok(true);
        }
        // Nothing changed: already requested, terminal, or not visible to this owner.
        Ok(self.visible_row(id, owner).await?.is_some())
    }

    async fn add_input_responses(
        &self,
        id: &str,
        owner: &Owner,
        responses: Map<String, Value>,
    ) -> Result<bool, StoreError> {
        for _ in 0..CAS_TRIES {
            let Some(raw) = self.visible_row(id, owner).await? else {
                return Ok(false);
            };
            let outstanding = raw.record()?.input_requests.unwrap_or_default();
            let mut stored = raw.responses()?;
            let mut added = false;
            for (k, v) in &responses {
                if outstanding.contains_key(k) {
                    stored.insert(k.clone(), v.clone());
                    added = true;
                }
            }
            if !added {
                return Ok(true);
            }
            let n = self
                .execute(
                    "UPDATE snodo_tasks SET input_responses = $2, version = version + 1, \
                     updated_at = {now} WHERE id = $1 AND version = $3",
                    &[
                        id.into(),
                        Value::Object(stored).to_string().into(),
                        raw.version.into(),
                    ],
                )
                .await?;
            if n > 0 {
                self.changed(id);
                return Ok(true);
            }
        }
        Err(contended(id))
    }

    async fn take_input_responses(&self, id: &str) -> Result<Map<String, Value>, StoreError> {
        for _ in 0..CAS_TRIES {
            let Some(raw) = self.row(id).await? else {
                return Ok(Map::new());
            };
            let taken = raw.responses()?;
            if taken.is_empty() {
                return Ok(taken);
            }
            // Every add bumps the version, so an answer that arrives in between fails this.
            let n = self
                .execute(
                    "UPDATE snodo_tasks SET input_responses = '{}' WHERE id = $1 AND version = $2",
                    &[id.into(), raw.version.into()],
                )
                .await?;
            if n > 0 {
                return Ok(taken);
            }
        }
        Err(contended(id))
    }

    async fn wait_change(
        &self,
        id: &str,
        after: u64,
        timeout: Duration,
    ) -> Result<Option<TaskRecord>, StoreError> {
        let deadline = tokio::time::Instant::now() + timeout;
        // Subscribed before the first read: a change between the read and the wait is
        // still seen.
        let mut rx = self.changes.subscribe();
        loop {
            let Some(raw) = self.row(id).await? else {
                return Ok(None);
            };
            let record = raw.record()?;
            let now = tokio::time::Instant::now();
            if record.version > after || now >= deadline {
                return Ok(Some(record));
            }
            let nap = self.poll_interval.min(deadline - now);
            tokio::select! {
                () = woken(&mut rx, id) => {}
                () = tokio::time::sleep(nap) => {}
            }
        }
    }

    async fn renew_lease(
        &self,
        id: &str,
        instance: &str,
        lease: Duration,
    ) -> Result<bool, StoreError> {
        let n = self
            .execute(
                "UPDATE snodo_tasks SET lease_until = {now} + $3 \
                 WHERE id = $1 AND instance = $2 AND {running}",
                &[id.into(), instance.into(), duration_ms(lease).into()],
            )
            .await?;
        Ok(n > 0)
    }

    /// Marks the running tasks matched by `condition` failed (their worker is gone).
    async fn fail_lost(&self, condition: &str, args: &[Arg]) -> Result<u64, StoreError> {
        let mut all = vec![
            LEASE_LOST_MESSAGE.into(),
            lease_lost_error().to_string().into(),
        ];
        all.extend_from_slice(args);
        let sql = format!(
            "UPDATE snodo_tasks SET status = 'failed', status_message = $1, \
             input_requests = NULL, outcome_kind = 'error', outcome = $2, \
             version = version + 1, updated_at = {{now}} WHERE {{running}} AND {condition}"
        );
        self.execute(&sql, &all).await
    }

    async fn sweep(&self) -> Result<u64, StoreError> {
        let deleted = self
            .execute("DELETE FROM snodo_tasks WHERE expires_at < {now}", &[])
            .await?;
        let failed = self.fail_lost("lease_until <= {now}", &[]).await?;
        if deleted + failed > 0 {
            self.changed("");
        }
        Ok(deleted + failed)
    }

    async fn recover(&self, instance: &str) -> Result<u64, StoreError> {
        let failed = self.fail_lost("instance = $3", &[instance.into()]).await?;
        if failed > 0 {
            self.changed("");
        }
        Ok(failed)
    }

    fn wake(&self, id: &str, rows: u64) -> Result<bool, StoreError> {
        if rows > 0 {
            self.changed(id);
        }
        Ok(rows > 0)
    }
}

fn contended(id: &str) -> StoreError {
    StoreError::Conflict(format!(
        "task {id}: too many concurrent writers, answers not stored"
    ))
}

/// Returns when `id` (or everyone) is announced, or the channel lagged (the caller
/// re-reads either way); never when the channel is closed (the caller's poll goes on).
async fn woken(rx: &mut broadcast::Receiver<String>, id: &str) {
    loop {
        match rx.recv().await {
            Ok(changed) if changed.is_empty() || changed == id => return,
            Ok(_) => {}
            Err(broadcast::error::RecvError::Lagged(_)) => return,
            Err(broadcast::error::RecvError::Closed) => std::future::pending::<()>().await,
        }
    }
}

impl<B: Backend> TaskStore for SqlStore<B> {
    fn create(&self, task: NewTask) -> BoxFuture<'_, Result<TaskRecord, StoreError>> {
        Box::pin(SqlStore::create(self, task))
    }

    fn get<'a>(
        &'a self,
        id: &'a str,
        owner: &'a Owner,
    ) -> BoxFuture<'a, Result<Option<TaskRecord>, StoreError>> {
        Box::pin(async move {
            self.visible_row(id, owner)
                .await?
                .map(|raw| raw.record())
                .transpose()
        })
    }

    fn set_status<'a>(
        &'a self,
        id: &'a str,
        status: TaskStatus,
        message: Option<String>,
        input_requests: Option<Map<String, Value>>,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(SqlStore::set_status(
            self,
            id,
            status,
            message,
            input_requests,
        ))
    }

    fn finish<'a>(
        &'a self,
        id: &'a str,
        outcome: Outcome,
        message: Option<String>,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(SqlStore::finish(self, id, outcome, message))
    }

    fn request_cancel<'a>(
        &'a self,
        id: &'a str,
        owner: &'a Owner,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(SqlStore::request_cancel(self, id, owner))
    }

    fn add_input_responses<'a>(
        &'a self,
        id: &'a str,
        owner: &'a Owner,
        responses: Map<String, Value>,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(SqlStore::add_input_responses(self, id, owner, responses))
    }

    fn take_input_responses<'a>(
        &'a self,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Map<String, Value>, StoreError>> {
        Box::pin(SqlStore::take_input_responses(self, id))
    }

    fn wait_change<'a>(
        &'a self,
        id: &'a str,
        after: u64,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<Option<TaskRecord>, StoreError>> {
        Box::pin(SqlStore::wait_change(self, id, after, timeout))
    }

    fn renew_lease<'a>(
        &'a self,
        id: &'a str,
        instance: &'a str,
        lease: Duration,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(SqlStore::renew_lease(self, id, instance, lease))
    }

    fn sweep(&self) -> BoxFuture<'_, Result<u64, StoreError>> {
        Box::pin(SqlStore::sweep(self))
    }

    fn recover<'a>(&'a self, instance: &'a str) -> BoxFuture<'a, Result<u64, StoreError>> {
        Box::pin(SqlStore::recover(self, instance))
    }
}
