//! Durable task stores for snodo's tasks extension (`snodo::tasks::TaskStore`):
//!
//! - [`SqliteStore`] (feature `sqlite`): one file; survives a restart (tasks the previous
//!   run left running become `failed` through `recover`).
//! - [`PgStore`] (feature `postgres`): one database shared by every instance behind a
//!   load balancer; a created task is visible on every instance before `create` returns,
//!   cancels and answers reach the instance running the task through LISTEN/NOTIFY (with
//!   a polling fallback), and a task whose instance died becomes `failed` once its lease
//!   runs out (`sweep`).
//!
//! Both apply their embedded migrations when they open. What a deployment configures is
//! in `docs/task-stores.md`.
#![forbid(unsafe_code)]

mod core;
mod migrate;
#[cfg(feature = "postgres")]
mod postgres;
mod row;
#[cfg(feature = "sqlite")]
mod sqlite;
#[cfg(feature = "sqlite")]
mod sqlite_slot;

pub use core::SqlStore;
#[cfg(feature = "postgres")]
pub use postgres::{CHANNEL, PgOptions, PgStore, Postgres};
#[cfg(feature = "sqlite")]
pub use sqlite::{Sqlite, SqliteOptions, SqliteStore};

use snodo::tasks::StoreError;

/// The one place database errors become [`StoreError`]s: a duplicate id is a conflict,
/// anything else means the store cannot serve the operation.
pub(crate) fn db_error(e: sqlx::Error) -> StoreError {
    match &e {
        sqlx::Error::Database(d) if d.is_unique_violation() => {
            StoreError::Conflict(format!("task exists: {d}"))
        }
        _ => StoreError::Unavailable(e.to_string()),
    }
}
