//! [`SqliteStore`]: tasks in one SQLite file (WAL, `synchronous = FULL`: a created task
//! is on disk before `create` returns). Survives a restart: [`TaskStore::recover`] at
//! startup fails the tasks the previous run left running.
//!
//! Several processes may share the file: each sees the others' changes through polling
//! (`poll_interval`); changes made through the same store wake `wait_change` at once.
//! Each open store has its own instance id ([`SqliteStore::instance`]): the lowest slot
//! of the file no live process holds, so a second live process never takes the first
//! one's tasks for its own, and a restart after a crash recovers them at once.
//!
//! [`TaskStore::recover`]: snodo::tasks::TaskStore::recover

use std::path::Path;
use std::time::Duration;

use snodo::tasks::StoreError;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Row as _, SqlitePool};

use crate::core::{Backend, SqlStore, changes};
use crate::row::{Arg, Raw, bind, decode};
use crate::sqlite_slot::{self, Slot};
use crate::{db_error, migrate};

/// The SQLite backend (a connection pool on one file, and this store's instance slot).
#[derive(Debug)]
pub struct Sqlite {
    pool: SqlitePool,
    slot: Slot,
}

/// Tasks in an SQLite file.
pub type SqliteStore = SqlStore<Sqlite>;

/// How [`SqliteStore::open_with`] opens the file.
#[derive(Debug, Clone)]
pub struct SqliteOptions {
    /// How often `wait_change` re-reads a task when nothing in this process changed it
    /// (changes by other processes sharing the file). Default 250 ms.
    pub poll_interval: Duration,
    /// How long a write waits for another connection's lock. Default 5 s.
    pub busy_timeout: Duration,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        Self {
            poll_interval: Duration::from_millis(250),
            busy_timeout: Duration::from_secs(5),
        }
    }
}

impl SqlStore<Sqlite> {
    /// Opens (creating if missing) the task database at `path` and applies the
    /// migrations. Call [`recover`](snodo::tasks::TaskStore::recover) once after.
    ///
    /// # Errors
    /// [`StoreError::Unavailable`] when the file cannot be opened or migrated.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        Self::open_with(path, SqliteOptions::default()).await
    }

    /// [`open`](Self::open) with options.
    ///
    /// # Errors
    /// [`StoreError::Unavailable`] when the path is empty, or the file cannot be opened
    /// or migrated, or no instance slot is free.
    pub async fn open_with(
        path: impl AsRef<Path>,
        options: SqliteOptions,
    ) -> Result<Self, StoreError> {
        let path = path.as_ref();
        if path.as_os_str().is_empty() {
            return Err(StoreError::Unavailable(
                "an SQLite task store needs a file path (it is empty)".to_owned(),
            ));
        }
        let connect = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Full)
            .busy_timeout(options.busy_timeout);
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .acquire_timeout(options.busy_timeout)
            .connect_with(connect)
            .await
            .map_err(|e| StoreError::Unavailable(format!("{}: {e}", path.display())))?;
        migrate::migrator(migrate::SQLITE)
            .await?
            .run(&pool)
            .await
            .map_err(|e| StoreError::Unavailable(format!("migrations: {e}")))?;
        let slot = sqlite_slot::claim(path).await?;
        Ok(Self {
            backend: Sqlite { pool, slot },
            changes: changes(),
            poll_interval: options.poll_interval,
            listener: None,
        })
    }
}

impl SqlStore<Sqlite> {
    /// This store's instance id, unique among the live processes sharing the file:
    /// `sqlite:PATH` for the first, `sqlite:PATH#n` for the others (the lowest free
    /// slot). Give it to [`TaskOptions::instance`](snodo::tasks::TaskOptions::instance):
    /// a process restarted after a crash gets its predecessor's id back and fails the
    /// tasks it left running at once.
    #[must_use]
    pub fn instance(&self) -> &str {
        &self.backend.slot.instance
    }
}

impl Backend for Sqlite {
    const NOW: &'static str = "CAST(unixepoch('subsec') * 1000 AS INTEGER)";

    async fn execute(&self, sql: &str, args: &[Arg]) -> Result<u64, StoreError> {
        let done = bind(sqlx::query(sql), args)
            .execute(&self.pool)
            .await
            .map_err(db_error)?;
        Ok(done.rows_affected())
    }

    async fn fetch(&self, sql: &str, args: &[Arg]) -> Result<Option<Raw>, StoreError> {
        let row = bind(sqlx::query(sql), args)
            .fetch_optional(&self.pool)
            .await
            .map_err(db_error)?;
        row.as_ref().map(decode).transpose()
    }

    async fn count(&self, sql: &str, args: &[Arg]) -> Result<u64, StoreError> {
        let row = bind(sqlx::query(sql), args)
            .fetch_one(&self.pool)
            .await
            .map_err(db_error)?;
        let n: i64 = row.try_get(0).map_err(db_error)?;
        Ok(u64::try_from(n).unwrap_or(0))
    }
}
