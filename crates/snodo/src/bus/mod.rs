//! The bus: what instances of one deployment tell each other (issue 35). Change events
//! for every instance's `subscriptions/listen` streams, messages addressed to the
//! instance that holds a request (initialize-era cancellations and answers to server
//! requests), calls to a service another instance serves ([`Peers`]: what one instance
//! holds in memory, reached from another), and counters shared by every instance
//! (deployment-wide rate limits).
//!
//! [`Bus`] is the trait (object-safe, held as `Arc<dyn Bus>`); [`MemoryBus`] is the
//! in-process default (one instance: nothing to share). Crate `snodo-bus` has the
//! PostgreSQL (LISTEN/NOTIFY) and Redis (pub/sub) buses. Delivery is at most once: a
//! subscriber that falls behind is told how much it missed ([`Received::Lagged`]), and
//! one whose bus was disconnected is told when it is back ([`Received::Resync`]).
//! `docs/bus.md` says what each guarantees and what is wired to it.
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//! use snodo::bus::{Bus, Event, MemoryBus, Received};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), snodo::bus::BusError> {
//! let bus: Arc<dyn Bus> = Arc::new(MemoryBus::new());
//! let mut events = bus.events();
//! bus.publish(Event::ToolsListChanged).await?;
//! assert_eq!(events.recv().await, Some(Received::Item(Event::ToolsListChanged)));
//! let count = bus.count("calls:alice", 1, Duration::from_secs(60)).await?;
//! assert_eq!(count.value, 1);
//! # Ok(()) }
//! ```

mod fanout;
pub(crate) mod link;
mod mailboxes;
mod memory;
mod peers;
mod serving;
mod types;

#[cfg(any(test, feature = "bus-contract"))]
pub mod contract;

use std::fmt;
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio::sync::watch;

pub use fanout::{DEFAULT_BACKLOG, Fanout, Received, Subscription};
pub use link::WhenDown;
pub use mailboxes::Mailboxes;
pub use memory::MemoryBus;
pub use peers::{
    ACCEPT_WITHIN, MAX_PEER_CALLS, MAX_PEER_CALLS_PER_PRINCIPAL, PeerError, PeerHandler,
    PeerRequest, Peers, decode_outcome, encode_outcome,
};
pub use types::{
    Address, BusError, BusState, Count, Event, HOLDER, InstanceId, MAX_INSTANCE_ID, MAX_KEY,
    MAX_MESSAGE, Message, check_count,
};

/// What the instances of a deployment share. Implementations: [`MemoryBus`] (one
/// process), and the PostgreSQL and Redis buses of crate `snodo-bus`.
///
/// Every operation that reaches a server is bounded by the bus's deadline and fails with
/// [`BusError::Timeout`] or [`BusError::Unavailable`] rather than wait; subscribing never
/// waits on the server longer than that either.
pub trait Bus: Send + Sync + fmt::Debug + 'static {
    /// Sends `event` to every subscriber of every instance, this one's included (at most
    /// once each, in the order one publisher published). `Ok` once the server took it.
    fn publish(&self, event: Event) -> BoxFuture<'_, Result<(), BusError>>;

    /// A new subscriber to the events published from now on, by any instance.
    fn events(&self) -> Subscription<Event>;

    /// Sends `message` to the instance `to` (or to every instance). `Ok` once the server
    /// took it, whether or not that instance listens.
    fn send(&self, to: Address, message: Message) -> BoxFuture<'_, Result<(), BusError>>;

    /// A new subscriber to the messages addressed to `me` or to every instance. Once this
    /// returns `Ok`, a message sent from any instance reaches it, while the bus is up; if
    /// the bus is down, it is delivered to from the reconnection on (starting with
    /// [`Received::Resync`]).
    fn messages<'a>(
        &'a self,
        me: &'a InstanceId,
    ) -> BoxFuture<'a, Result<Subscription<Message>, BusError>>;

    /// Adds `by` to the counter `key` and returns its value, atomically across every
    /// instance. A counter starts at zero and lasts `window` from its first increment
    /// (later increments do not extend it), then starts again from zero: a fixed-window
    /// limiter is `count(key, 1, window).value <= limit`; a sliding one puts the window's
    /// index in the key and weighs the previous window's count (`by = 0` reads it).
    ///
    /// # Errors
    /// [`BusError::Invalid`] for what [`check_count`] refuses.
    fn count<'a>(
        &'a self,
        key: &'a str,
        by: u64,
        window: Duration,
    ) -> BoxFuture<'a, Result<Count, BusError>>;

    /// The connection's state, as it changes: callers fail open or closed while it is
    /// [`BusState::Down`].
    fn state(&self) -> watch::Receiver<BusState>;
}
