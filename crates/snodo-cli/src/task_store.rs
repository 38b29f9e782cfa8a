//! `--task-store memory|sqlite:PATH|postgres:URL` and the task flags of `serve` and
//! `fixture`: which store, this process's instance id, the worker lease, the sweep.
//! The SQL stores (crate `snodo-tasks-sql`) come with the feature `sql-tasks`.

use std::sync::Arc;
use std::time::Duration;

use snodo::tasks::{MemoryStore, TaskOptions};

/// The task flags.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct TaskStoreArgs {
    /// Where tasks live: memory, sqlite:PATH or postgres:URL (postgres://... also works).
    #[arg(long = "task-store", default_value = "memory")]
    store: String,
    /// This process's instance id, which leases its running tasks; unique per live
    /// process (default: random; with sqlite:PATH the lowest slot of the file that no
    /// live process holds, so that a restart after a crash fails the tasks the previous
    /// run left running at once, and a second live process touches none of them).
    #[arg(long = "task-instance", env = "SNODO_TASK_INSTANCE")]
    instance: Option<String>,
    /// Seconds a worker's lease lasts (renewed every third of it): a task whose
    /// instance died reads `failed` after it.
    #[arg(long = "task-lease", default_value_t = 30.0, value_parser = seconds)]
    lease: f64,
    /// Seconds between sweeps (lease-expired tasks fail, expired tasks are deleted).
    #[arg(long = "task-sweep", default_value_t = 10.0, value_parser = seconds)]
    sweep: f64,
    /// Most stored (unexpired) tasks per principal; one more is refused (0: no limit).
    #[arg(long = "task-max-per-principal", default_value_t = 256)]
    max_per_principal: u64,
    /// Most stored (unexpired) tasks in all, across the instances sharing the store (0:
    /// no limit).
    #[arg(long = "task-max", default_value_t = 4096)]
    max_total: u64,
}

fn seconds(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= 86_400.0 => Ok(v),
        _ => Err(format!(
            "{s:?}: expected seconds, more than 0 and at most 86400"
        )),
    }
}

/// Opens the store the flags name (SQL stores connect and migrate here).
pub(crate) async fn options(args: &TaskStoreArgs) -> Result<TaskOptions, String> {
    let spec = args.store.as_str();
    let (options, default_instance) = if spec == "memory" {
        (TaskOptions::new(Arc::new(MemoryStore::new())), None)
    } else if let Some(opened) = sql::open(spec).await {
        opened?
    } else {
        return Err(format!(
            "--task-store {spec}: expected memory, sqlite:PATH or postgres:URL"
        ));
    };
    let limit = |n: u64| (n > 0).then_some(n);
    let mut options = options
        .lease(Duration::from_secs_f64(args.lease))
        .sweep_interval(Duration::from_secs_f64(args.sweep))
        .max_tasks_per_principal(limit(args.max_per_principal))
        .max_tasks(limit(args.max_total));
    if let Some(id) = args.instance.clone().or(default_instance) {
        options = options.instance(id);
    }
    Ok(options)
}

#[cfg(feature = "sql-tasks")]
mod sql {
    use std::sync::Arc;

    use snodo::tasks::TaskOptions;
    use snodo_tasks_sql::{PgOptions, PgStore, SqliteStore};

    /// `None` when `spec` names no SQL store; else the options around the opened store
    /// and the default instance id.
    pub(super) async fn open(spec: &str) -> Option<Result<(TaskOptions, Option<String>), String>> {
        if let Some(path) = spec.strip_prefix("sqlite:") {
            if path.is_empty() {
                return Some(Err(
                    "--task-store sqlite: needs a file path, e.g. sqlite:tasks.db".to_owned(),
                ));
            }
            let opened = SqliteStore::open(path).await;
            return Some(
                opened
                    .map(|s| {
                        let instance = s.instance().to_owned();
                        (TaskOptions::new(Arc::new(s)), Some(instance))
                    })
                    .map_err(|e| format!("--task-store {spec}: {e}")),
            );
        }
        let url = if spec.starts_with("postgres://") || spec.starts_with("postgresql://") {
            spec
        } else {
            spec.strip_prefix("postgres:")?
        };
        let opened = PgStore::connect(url, PgOptions::default()).await;
        Some(
            opened
                .map(|s| (TaskOptions::new(Arc::new(s)), None))
                // The URL may carry a password: the error names the kind of store only.
                .map_err(|e| format!("--task-store postgres: {e}")),
        )
    }
}

#[cfg(not(feature = "sql-tasks"))]
mod sql {
    use snodo::tasks::TaskOptions;

    pub(super) async fn open(spec: &str) -> Option<Result<(TaskOptions, Option<String>), String>> {
        let sql = ["sqlite:", "postgres:", "postgresql:"];
        sql.iter().any(|p| spec.starts_with(p)).then(|| {
            Err(format!(
                "--task-store {spec}: built without sql task stores (feature sql-tasks)"
            ))
        })
    }
}
