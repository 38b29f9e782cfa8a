//! The tasks extension (`io.modelcontextprotocol/tasks`, on 2026-07-28): a `tools/call`
//! answered with a task handle, polled with `tasks/get`, steered with `tasks/update` and
//! `tasks/cancel`, watched through `subscriptions/listen`.
//!
//! A tool opts in with [`Tool::task`](crate::Tool::task); its handler is the ordinary
//! handler, run by the runtime as the task's worker. [`TaskStore`] is where tasks live;
//! [`MemoryStore`] is the default, the SQL stores are in crate `snodo-tasks-sql`.
//! [`TaskOptions`] configure the store, lifetimes and leases
//! ([`RuntimeBuilder::tasks`](crate::RuntimeBuilder::tasks)).

pub(crate) mod builder;
mod memory;
mod options;
mod router;
mod store;
mod watch;
pub(crate) mod wire;
pub(crate) mod worker;

#[cfg(feature = "task-store-contract")]
pub mod contract;

pub use memory::MemoryStore;
pub use options::{TaskOptions, TaskSupport};
pub use store::{
    LEASE_LOST_MESSAGE, NewTask, Outcome, Owner, StoreError, TaskLimits, TaskRecord, TaskStatus,
    TaskStore, lease_lost_error,
};
pub use wire::TASKS_EXTENSION;

pub(crate) use options::{Tasks, new_id, owner};
pub(crate) use watch::TaskWatch;
pub(crate) use worker::TaskLink;
