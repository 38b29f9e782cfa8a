//! What is observed of a request and of a task, below the engine that observes and the
//! sinks that count: the [`RequestSummary`] a request event carries (its transport,
//! outcome and component name among it), an endpoint's [`GateWatch`], and the
//! [`TaskSink`] task workers count into, the [`RequestSink`] requests count into. The engine fills these in; `tracing` layers and
//! the metrics read them; neither names the other.

pub(crate) mod summary;

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

use tokio::sync::Semaphore;

pub use summary::{FieldValue, RequestSummary};

/// The transport a request arrived on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Transport {
    Http,
    Stdio,
}

impl Transport {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Http => "http",
            Self::Stdio => "stdio",
        }
    }
}

/// How a request ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub(crate) enum Outcome {
    /// Answered with a result (or accepted: a notification, a client's answer).
    #[default]
    Ok,
    /// Answered with a tool result that reports an error (`isError`, a tool's own
    /// limits included).
    ToolError,
    /// Answered with a JSON-RPC error.
    Error,
    /// Refused before execution (admission, authentication, limits, overload).
    Refused,
    /// The deadline passed.
    Timeout,
    /// Cancelled (by the client, its disconnection, or shutdown): no result.
    Cancelled,
}

impl Outcome {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::ToolError => "tool_error",
            Self::Error => "error",
            Self::Refused => "refused",
            Self::Timeout => "timeout",
            Self::Cancelled => "cancelled",
        }
    }
}

/// A component name: kept inside the record when it is short (tool and prompt names
/// mostly are), so recording one allocates nothing, and read back without checking
/// its UTF-8 again (a `str` check per read was ~70 instructions on the request log's
/// path: the name is read by the metrics and by the log line).
pub(crate) type Name = smol_str::SmolStr;

/// Reads an endpoint's execution gate (what executes, what waits) without keeping it
/// alive.
#[derive(Clone, Debug)]
pub(crate) struct GateWatch {
    slots: Weak<Semaphore>,
    capacity: usize,
    queued: Weak<AtomicUsize>,
}

#[cfg_attr(not(feature = "metrics"), allow(dead_code))]
impl GateWatch {
    /// A watch of a gate of `capacity` execution `slots` and its `queued` count.
    pub(crate) fn new(slots: &Arc<Semaphore>, capacity: usize, queued: &Arc<AtomicUsize>) -> Self {
        Self {
            slots: Arc::downgrade(slots),
            capacity,
            queued: Arc::downgrade(queued),
        }
    }

    /// Requests executing and requests waiting now; `None` once the gate is gone.
    pub(crate) fn read(&self) -> Option<(usize, usize)> {
        let slots = self.slots.upgrade()?;
        let queued = self.queued.upgrade()?;
        let executing = self.capacity.saturating_sub(slots.available_permits());
        Some((executing, queued.load(Ordering::Acquire)))
    }

    /// Whether the gate is gone.
    pub(crate) fn is_gone(&self) -> bool {
        self.slots.strong_count() == 0
    }
}

/// Where every transport counts its requests (the metrics, when a runtime has them).
pub(crate) trait RequestSink: Send + Sync + 'static {
    /// Counts a finished request; `name` is its component's name when the catalogue
    /// holds it.
    fn observe(&self, summary: &RequestSummary, name: Option<&str>, elapsed: std::time::Duration);
    /// Reads an endpoint's in-flight and queued requests from its gate.
    fn watch_gate(&self, gate: GateWatch);
    /// Moves the open streams of `kind` (`"sse"`, `"listen"`) by `by`.
    fn streams(&self, kind: &'static str, by: i64);
    /// The deployment's bus went up (`true`) or down.
    fn bus_state(&self, up: bool);
}

/// Where task workers count their tasks (the metrics, when a runtime has them).
pub(crate) trait TaskSink: Send + Sync + 'static {
    /// Moves the running tasks in `status` (`"working"`, `"input_required"`) by `by`.
    fn running(&self, status: &'static str, by: i64);
    /// Counts a task that ended in `status`.
    fn ended(&self, status: &'static str);
}

/// What a runtime's task workers count into: a [`TaskSink`], or nothing.
#[derive(Clone, Default)]
pub(crate) struct TaskObserver(Option<Arc<dyn TaskSink>>);

impl fmt::Debug for TaskObserver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("TaskObserver")
            .field(&self.0.is_some())
            .finish()
    }
}

impl TaskObserver {
    /// Counting into `sink`, if any.
    pub(crate) fn new(sink: Option<Arc<dyn TaskSink>>) -> Self {
        Self(sink)
    }

    /// Moves the running tasks in `status` by `by` while the returned guard lives.
    pub(crate) fn task(&self, status: &'static str, by: i64) -> TaskGauge {
        if let Some(sink) = &self.0 {
            sink.running(status, by);
        }
        TaskGauge {
            sink: self.0.clone(),
            status,
            by,
        }
    }

    /// Counts a task that ended in `status`.
    pub(crate) fn task_ended(&self, status: &'static str) {
        if let Some(sink) = &self.0 {
            sink.ended(status);
        }
    }
}

/// Running tasks moved while this lives (see [`TaskObserver::task`]).
#[must_use]
pub(crate) struct TaskGauge {
    sink: Option<Arc<dyn TaskSink>>,
    status: &'static str,
    by: i64,
}

impl Drop for TaskGauge {
    fn drop(&mut self) {
        if let Some(sink) = &self.sink {
            sink.running(self.status, -self.by);
        }
    }
}
