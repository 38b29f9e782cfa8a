//! `snodo_requests_in_flight` and `snodo_requests_queued`, read from the endpoints'
//! execution gates when scraped: the gate already counts what executes and what waits,
//! so a request pays nothing more for the gauges.

use std::sync::{Arc, Mutex, PoisonError};

use prometheus_client::encoding::{EncodeMetric, MetricEncoder};
use prometheus_client::metrics::{MetricType, TypedMetric};

use crate::observation::GateWatch;

/// The gates of the endpoints counting into one registry (an HTTP service, each stdio
/// connection); gone ones are dropped as new ones come and at each scrape.
#[derive(Clone, Debug, Default)]
pub(super) struct Gates(Arc<Mutex<Vec<GateWatch>>>);

impl Gates {
    pub(super) fn add(&self, gate: GateWatch) {
        let mut gates = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        gates.retain(|g| !g.is_gone());
        gates.push(gate);
    }

    /// Executing and waiting requests over every live gate.
    fn read(&self) -> (usize, usize) {
        let mut gates = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let mut total = (0, 0);
        gates.retain(|g| {
            let Some((executing, queued)) = g.read() else {
                return false;
            };
            total.0 += executing;
            total.1 += queued;
            true
        });
        total
    }
}

/// One of the two gauges.
#[derive(Debug)]
pub(super) struct GateGauge {
    gates: Gates,
    queued: bool,
}

impl GateGauge {
    /// Requests executing now.
    pub(super) fn executing(gates: &Gates) -> Self {
        Self {
            gates: gates.clone(),
            queued: false,
        }
    }

    /// Requests waiting for an execution slot.
    pub(super) fn queued(gates: &Gates) -> Self {
        Self {
            gates: gates.clone(),
            queued: true,
        }
    }
}

impl TypedMetric for GateGauge {
    const TYPE: MetricType = MetricType::Gauge;
}

impl EncodeMetric for GateGauge {
    fn encode(&self, mut encoder: MetricEncoder<'_>) -> Result<(), std::fmt::Error> {
        let (executing, queued) = self.gates.read();
        let value = if self.queued { queued } else { executing };
        encoder.encode_gauge(&(value as u64))
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }
}
