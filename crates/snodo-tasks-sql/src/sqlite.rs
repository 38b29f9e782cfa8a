//! [`SqliteStore`]: tasks in one SQLite file (WAL, `synchronous = FULL`: a created task
//! is on disk before `create` returns). Survives a restart: [`TaskStore::recover`] at
//! startup fails the tasks the previous run left running.
//!
//! Several processes may share the file: each sees the others' changes through polling
//! (`poll_interval`); changes made through the same store wake `wait_change` at once.
//!
//! [`TaskStore::recover`]: snodo::tasks::TaskStore::recover

use std::path::Path;
use std::time::Duration;

use snodo::tasks::StoreError;
use sqlx::SqlitePool;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};

use crate::core::{Backend, SqlStore, changes};
use crate::row::{Arg, Raw, bind, decode};
use crate::{db_error, migrate};

/// The SQLite backend (a connection pool on one file).
#[derive(Debug)]
pub struct Sqlite(SqlitePool);

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
    /// [`StoreError::Unavailable`] when the file cannot be opened or migrated.
    pub async fn open_with(
        path: impl AsRef<Path>,
        options: SqliteOptions,
    ) -> Result<Self, StoreError> {
        let path = path.as_ref();
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
        Ok(Self {
            backend: Sqlite(pool),
            changes: changes(),
            poll_interval: options.poll_interval,
            listener: None,
        })
    }
}

impl Backend for Sqlite {
    const NOW: &'static str = "CAST(unixepoch('subsec') * 1000 AS INTEGER)";

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
}
