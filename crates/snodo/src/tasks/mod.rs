//! The tasks extension (`io.modelcontextprotocol/tasks`, on 2026-07-28): a `tools/call`
//! answered with a task handle, polled with `tasks/get`, steered with `tasks/update` and
//! `tasks/cancel`.
//!
//! [`TaskStore`] is where tasks live; [`MemoryStore`] is the default, the SQL stores are
//! in crate `snodo-tasks-sql`.

mod memory;
mod store;

#[cfg(feature = "task-store-contract")]
pub mod contract;

pub use memory::MemoryStore;
pub use store::{
    LEASE_LOST_MESSAGE, NewTask, Outcome, Owner, StoreError, TaskRecord, TaskStatus, TaskStore,
    lease_lost_error,
};
