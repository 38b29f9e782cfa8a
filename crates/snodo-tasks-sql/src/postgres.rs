//! [`PgStore`]: tasks in PostgreSQL, shared by every instance of a deployment.
//!
//! Every change that bumps a task's version fires `pg_notify('snodo_tasks', id)` (a
//! trigger, so it does not matter which instance wrote); each store LISTENs on that
//! channel on one dedicated connection and wakes its `wait_change` callers at once. If
//! the listening connection drops, waiters fall back to re-reading their row every
//! `poll_interval` until it is back (and are all woken when it is, since notifications
//! sent meanwhile are lost).

use std::str::FromStr;
use std::time::Duration;

use snodo::tasks::StoreError;
use sqlx::postgres::{PgConnectOptions, PgListener, PgPoolOptions};
use sqlx::{PgPool, Row as _};

use crate::core::{Backend, Changes, SqlStore, changes};
use crate::row::{Arg, Raw, bind, decode};
use crate::{db_error, migrate};

/// The NOTIFY channel (the payload is the task id).
pub const CHANNEL: &str = "snodo_tasks";

/// The PostgreSQL backend (a connection pool).
#[derive(Debug)]
pub struct Postgres(PgPool);

/// Tasks in a PostgreSQL database shared by every instance.
pub type PgStore = SqlStore<Postgres>;

/// How [`PgStore::connect`] connects.
#[derive(Debug, Clone)]
pub struct PgOptions {
    /// This instance's id, sent as the connections' `application_name` (visible in
    /// `pg_stat_activity`). Default `snodo`.
    pub instance: String,
    /// How often `wait_change` re-reads a task when no notification arrives (the fallback
    /// when LISTEN is off or its connection is down). Default 1 s.
    pub poll_interval: Duration,
    /// LISTEN for changes (default `true`); `false` = polling only.
    pub listen: bool,
    /// Pool size (the listener takes one more connection). Default 8.
    pub max_connections: u32,
    /// How long to wait for a connection (at connect and for each operation) before the
    /// operation fails with [`StoreError::Unavailable`]. Default 5 s.
    pub connect_timeout: Duration,
}

impl Default for PgOptions {
    fn default() -> Self {
        Self {
            instance: "snodo".to_owned(),
            poll_interval: Duration::from_secs(1),
            listen: true,
            max_connections: 8,
            connect_timeout: Duration::from_secs(5),
        }
    }
}

impl SqlStore<Postgres> {
    /// Connects to `url` (`postgres://user@host:port/db`), applies the migrations and
    /// starts listening. Call [`recover`](snodo::tasks::TaskStore::recover) once after.
    ///
    /// # Errors
    /// [`StoreError::Unavailable`] for a bad URL, an unreachable server or a failed
    /// migration.
    pub async fn connect(url: &str, options: PgOptions) -> Result<Self, StoreError> {
        let connect = PgConnectOptions::from_str(url)
            .map_err(|e| StoreError::Unavailable(format!("bad URL: {e}")))?
            .application_name(&options.instance);
        let pool = PgPoolOptions::new()
            .max_connections(options.max_connections.max(1))
            .acquire_timeout(options.connect_timeout)
            .connect_with(connect)
            .await
            .map_err(|e| {
                let within = options.connect_timeout;
                StoreError::Unavailable(format!(
                    "no connection to PostgreSQL within {within:?}: {e}"
                ))
            })?;
        migrate::migrator(migrate::POSTGRES)
            .await?
            .run(&pool)
            .await
            .map_err(|e| StoreError::Unavailable(format!("migrations: {e}")))?;
        let changes = changes();
        let listener = if options.listen {
            let first = subscribe(&pool).await?;
            Some(tokio::spawn(listen(
                pool.clone(),
                first,
                changes.clone(),
                options.poll_interval,
            )))
        } else {
            None
        };
        Ok(Self {
            backend: Postgres(pool),
            changes,
            poll_interval: options.poll_interval,
            listener,
        })
    }
}

async fn subscribe(pool: &PgPool) -> Result<PgListener, StoreError> {
    let mut listener = PgListener::connect_with(pool).await.map_err(db_error)?;
    listener.listen(CHANNEL).await.map_err(db_error)?;
    Ok(listener)
}

/// Forwards notifications to `changes` until the store is dropped (which aborts this).
async fn listen(pool: PgPool, first: PgListener, changes: Changes, retry: Duration) {
    let mut listener = Some(first);
    loop {
        let mut current = match listener.take() {
            Some(l) => l,
            None => match subscribe(&pool).await {
                Ok(l) => {
                    tracing::info!("task store: LISTEN {CHANNEL} re-established");
                    let _ = changes.send(String::new());
                    l
                }
                Err(e) => {
                    tracing::warn!("task store: LISTEN {CHANNEL} failed ({e}); polling");
                    tokio::time::sleep(retry).await;
                    continue;
                }
            },
        };
        loop {
            match current.try_recv().await {
                Ok(Some(n)) => {
                    let _ = changes.send(n.payload().to_owned());
                }
                // The connection was lost (the next call reconnects): notifications sent
                // meanwhile are gone, so every waiter re-reads.
                Ok(None) => {
                    let _ = changes.send(String::new());
                }
                Err(e) => {
                    tracing::warn!("task store: LISTEN {CHANNEL} lost ({e}); polling");
                    break;
                }
            }
        }
        tokio::time::sleep(retry).await;
    }
}

impl Backend for Postgres {
    const NOW: &'static str = "(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT";

    async fn execute(&self, sql: &str, args: &[Arg]) -> Result<u64, StoreError> {
        let done = bind(sqlx::query(sql), args)
            .execute(&self.0)
            .await
            .map_err(db_error)?;
        Ok(done.rows_affected())
    }

    async fn fetch(&self, sql: &str, args: &[Arg]) -> Result<Option<Raw>, StoreError> {
        let row = bind(sqlx::query(sql), args)
            .fetch_optional(&self.0)
            .await
            .map_err(db_error)?;
        row.as_ref().map(decode).transpose()
    }

    async fn count(&self, sql: &str, args: &[Arg]) -> Result<u64, StoreError> {
        let row = bind(sqlx::query(sql), args)
            .fetch_one(&self.0)
            .await
            .map_err(db_error)?;
        let n: i64 = row.try_get(0).map_err(db_error)?;
        Ok(u64::try_from(n).unwrap_or(0))
    }
}
