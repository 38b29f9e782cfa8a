//! A per-process instance id for processes sharing one SQLite task file.
//!
//! Each open store claims the lowest free *slot* of the file: slot `n` is a small
//! companion database `PATH-instance-n` on which the store holds an exclusive SQLite
//! lock for as long as it lives (an operating-system file lock: it goes when the process
//! does, however it ends). Slot 0's instance id is `sqlite:PATH`, slot `n`'s is
//! `sqlite:PATH#n`. So two live processes on the same file never share an id (the second
//! one's startup recovery cannot fail the first one's tasks), and a process restarted
//! after its predecessor died takes the freed slot, hence its id, and fails the tasks
//! that one left running at once ([`TaskStore::recover`]).
//!
//! [`TaskStore::recover`]: snodo::tasks::TaskStore::recover

use std::path::Path;
use std::time::Duration;

use snodo::tasks::StoreError;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqliteLockingMode};
use sqlx::{ConnectOptions as _, SqliteConnection};

/// Most slots tried before giving up (that many live processes on one file).
const MAX_SLOTS: usize = 256;

/// SQLite's `SQLITE_BUSY` primary result code: another connection holds the lock.
const SQLITE_BUSY: i64 = 5;

/// A claimed slot: its instance id and the connection that holds its lock.
#[derive(Debug)]
pub(crate) struct Slot {
    pub(crate) instance: String,
    _lock: Option<SqliteConnection>,
}

/// Claims the lowest free slot of the task file at `path` (`:memory:` needs none: its
/// instance id is the path's).
pub(crate) async fn claim(path: &Path) -> Result<Slot, StoreError> {
    let base = format!("sqlite:{}", path.display());
    if path.as_os_str() == ":memory:" {
        return Ok(Slot {
            instance: base,
            _lock: None,
        });
    }
    for n in 0..MAX_SLOTS {
        let mut file = path.as_os_str().to_owned();
        file.push(format!("-instance-{n}"));
        if let Some(lock) = try_lock(Path::new(&file)).await? {
            let instance = if n == 0 { base } else { format!("{base}#{n}") };
            return Ok(Slot {
                instance,
                _lock: Some(lock),
            });
        }
    }
    Err(StoreError::Unavailable(format!(
        "{}: {MAX_SLOTS} processes already hold an instance slot of this file",
        path.display()
    )))
}

/// The exclusive lock of one slot file, or `None` when a live store holds it.
async fn try_lock(file: &Path) -> Result<Option<SqliteConnection>, StoreError> {
    let options = SqliteConnectOptions::new()
        .filename(file)
        .create_if_missing(true)
        .locking_mode(SqliteLockingMode::Exclusive)
        // Nothing is ever written: no journal file beside the slot.
        .journal_mode(SqliteJournalMode::Off)
        .busy_timeout(Duration::ZERO);
    let taken = |e: &sqlx::Error| match e {
        sqlx::Error::Database(d) => d
            .code()
            .and_then(|c| c.parse::<i64>().ok())
            .is_some_and(|c| c & 0xff == SQLITE_BUSY),
        _ => false,
    };
    let unavailable = |e: sqlx::Error| StoreError::Unavailable(format!("{}: {e}", file.display()));
    let mut conn = match options.connect().await {
        Ok(conn) => conn,
        Err(e) if taken(&e) => return Ok(None),
        Err(e) => return Err(unavailable(e)),
    };
    // A write transaction left open: in exclusive locking mode its lock stays until the
    // connection closes.
    match sqlx::query("BEGIN EXCLUSIVE").execute(&mut conn).await {
        Ok(_) => Ok(Some(conn)),
        Err(e) if taken(&e) => Ok(None),
        Err(e) => Err(unavailable(e)),
    }
}
