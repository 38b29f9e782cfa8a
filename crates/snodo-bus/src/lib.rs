//! Shared buses for a snodo deployment of several instances (issue 35): what one instance
//! publishes reaches the others, with no affinity in the load balancer.
//!
//! - [`PgBus`] (feature `postgres`): LISTEN/NOTIFY on one channel per namespace, and a
//!   table for the counters, in the database the task store already uses.
//! - [`RedisBus`] (feature `redis`): pub/sub (a channel for events, one per instance for
//!   addressed messages) and counters with expiry (one Lua script, atomic).
//!
//! Both implement [`snodo::bus::Bus`] and pass its contract suite against a real server.
//! Every operation is bounded by [`deadline`](PgBusOptions::deadline); a heartbeat finds a
//! dead or silent connection, the state goes [`Down`](snodo::bus::BusState::Down), the
//! bus reconnects on its own and tells every subscriber
//! [`Resync`](snodo::bus::Received::Resync) when it is back. `docs/bus.md` has the
//! guarantees.
//!
//! ```no_run
//! use std::sync::Arc;
//! use snodo::bus::{Bus, Event};
//! use snodo_bus::{RedisBus, RedisBusOptions};
//!
//! # async fn run() -> Result<(), snodo::bus::BusError> {
//! let bus: Arc<dyn Bus> =
//!     Arc::new(RedisBus::connect("redis://127.0.0.1:6379", RedisBusOptions::default()).await?);
//! bus.publish(Event::ResourceUpdated("file:///a.txt".into())).await?;
//! # Ok(()) }
//! ```

#![forbid(unsafe_code)]

mod hub;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "redis")]
mod redis;
mod wire;

use std::future::Future;
use std::time::Duration;

use snodo::bus::BusError;

#[cfg(feature = "postgres")]
pub use postgres::{PgBus, PgBusOptions};
#[cfg(feature = "redis")]
pub use redis::{RedisBus, RedisBusOptions};

/// The default deadline of one bus operation.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(2);
/// The default interval of the heartbeat that finds a silent connection (it is declared
/// down after three intervals without a sign of life).
pub const DEFAULT_HEARTBEAT: Duration = Duration::from_secs(1);

/// Checks a namespace: 1 to 32 ASCII lowercase letters, digits and `_`, starting with a
/// letter (it names PostgreSQL channels and prefixes Redis keys).
fn check_namespace(ns: &str) -> Result<(), BusError> {
    let ok = (1..=32).contains(&ns.len())
        && ns.starts_with(|c: char| c.is_ascii_lowercase())
        && ns
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(BusError::Invalid(format!(
            "namespace {ns:?}: 1 to 32 of a-z, 0-9, '_', starting with a letter"
        )))
    }
}

/// Runs `op` within `deadline`: its error mapped to [`BusError::Unavailable`], the
/// deadline passed to [`BusError::Timeout`].
async fn bounded<T, E: std::fmt::Display>(
    deadline: Duration,
    what: &str,
    op: impl Future<Output = Result<T, E>>,
) -> Result<T, BusError> {
    match tokio::time::timeout(deadline, op).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => Err(BusError::Unavailable(format!("{what}: {e}"))),
        Err(_) => Err(BusError::Timeout(deadline)),
    }
}
