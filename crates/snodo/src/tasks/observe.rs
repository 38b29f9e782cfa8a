//! The task series of the metrics (feature `metrics`): the tasks this process's workers
//! run, by status, and how they ended. Without metrics every guard here is empty.

#[cfg(feature = "metrics")]
use prometheus_client::metrics::gauge::Gauge;

/// What the task workers of one runtime count into.
#[derive(Clone, Debug, Default)]
pub(crate) struct TaskMetrics {
    #[cfg(feature = "metrics")]
    metrics: Option<crate::metrics::Metrics>,
}

/// How a worker's task ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ended {
    Completed,
    Failed,
    Cancelled,
    /// The worker stopped without storing an outcome: the task expired and was deleted,
    /// or another instance took it over.
    Lost,
}

impl Ended {
    #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
    fn as_str(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
            Self::Lost => "lost",
        }
    }
}

/// One task counted in a status while this lives.
#[derive(Debug)]
#[must_use]
pub(crate) struct InStatus {
    #[cfg(feature = "metrics")]
    gauges: Vec<(Gauge, i64)>,
}

impl Drop for InStatus {
    fn drop(&mut self) {
        #[cfg(feature = "metrics")]
        for (gauge, by) in &self.gauges {
            gauge.dec_by(*by);
        }
    }
}

impl TaskMetrics {
    #[cfg(feature = "metrics")]
    pub(crate) fn new(metrics: Option<crate::metrics::Metrics>) -> Self {
        Self { metrics }
    }

    /// Moves one task by `by` in each status (and back when the guard drops).
    #[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
    fn moved(&self, by: &[(&'static str, i64)]) -> InStatus {
        #[cfg(feature = "metrics")]
        {
            let gauges = self.metrics.as_ref().map_or_else(Vec::new, |m| {
                by.iter()
                    .map(|&(status, n)| {
                        let gauge = m.task_gauge(status);
                        gauge.inc_by(n);
                        (gauge, n)
                    })
                    .collect()
            });
            InStatus { gauges }
        }
        #[cfg(not(feature = "metrics"))]
        InStatus {}
    }

    /// A worker's task is running (`working`) while the guard lives.
    pub(crate) fn running(&self) -> InStatus {
        self.moved(&[("working", 1)])
    }

    /// A running task waits for input (`input_required`, not `working`) while the guard
    /// lives.
    pub(crate) fn parked(&self) -> InStatus {
        self.moved(&[("working", -1), ("input_required", 1)])
    }

    /// Counts a task that ended.
    #[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
    pub(crate) fn ended(&self, how: Ended) {
        #[cfg(feature = "metrics")]
        if let Some(m) = &self.metrics {
            m.task_ended(how.as_str());
        }
    }
}
