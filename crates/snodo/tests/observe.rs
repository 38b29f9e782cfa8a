//! Wire tests of observability: the per-request log events (captured by a test
//! subscriber) and the Prometheus series, on HTTP and stdio. One test binary.

// Tests panic on purpose when an expectation fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "wire/support.rs"]
#[allow(dead_code, unused_imports)]
mod support;

#[path = "stdio/client.rs"]
#[allow(dead_code, unused_imports)]
mod client;

#[path = "observe/capture.rs"]
mod capture;

#[path = "observe/logs.rs"]
mod logs;

#[cfg(feature = "metrics")]
#[path = "observe/metrics.rs"]
mod metrics;

#[path = "observe/trace.rs"]
mod trace;

#[path = "observe/policy.rs"]
mod policy;
