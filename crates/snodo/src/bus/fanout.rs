//! [`Fanout`] and [`Subscription`]: bounded delivery to the subscribers of one process, the
//! part every [`Bus`](super::Bus) implementation shares.

use std::fmt;

use tokio::sync::broadcast;

/// How many items a subscriber may fall behind before it is told it lagged
/// ([`Fanout::new`] takes another bound).
pub const DEFAULT_BACKLOG: usize = 1024;

/// What a [`Subscription`] receives.
#[derive(Clone, Debug, PartialEq)]
pub enum Received<T> {
    /// An item, in the order this process received it.
    Item(T),
    /// This subscriber fell behind: this many items were dropped for it (the bus keeps a
    /// bounded backlog per process, never an unbounded queue per subscriber).
    Lagged(u64),
    /// The bus was disconnected and is back: items published meanwhile are lost. A listen
    /// stream treats this as "everything it watches changed".
    Resync,
}

#[derive(Clone, Debug)]
enum Slot<T> {
    Item(T),
    Resync,
}

/// The sending side, held by a bus implementation: a bounded broadcast to this
/// process's subscribers.
///
/// ```
/// use snodo::bus::{Fanout, Received};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let fanout = Fanout::new(2);
/// let mut sub = fanout.subscribe();
/// for n in 0..4 {
///     fanout.send(n);
/// }
/// assert_eq!(sub.recv().await, Some(Received::Lagged(2)));
/// assert_eq!(sub.recv().await, Some(Received::Item(2)));
/// fanout.resync();
/// assert_eq!(sub.recv().await, Some(Received::Item(3)));
/// assert_eq!(sub.recv().await, Some(Received::Resync));
/// # }
/// ```
pub struct Fanout<T> {
    tx: broadcast::Sender<Slot<T>>,
}

impl<T: Clone> Fanout<T> {
    /// A fanout keeping at most `backlog` items (at least 1) for its slowest subscriber.
    #[must_use]
    pub fn new(backlog: usize) -> Self {
        Self {
            tx: broadcast::channel(backlog.max(1)).0,
        }
    }

    /// A new subscriber: it receives what is sent from now on.
    #[must_use]
    pub fn subscribe(&self) -> Subscription<T> {
        Subscription {
            rx: self.tx.subscribe(),
        }
    }

    /// Delivers `item` to every current subscriber (none: dropped).
    pub fn send(&self, item: T) {
        let _ = self.tx.send(Slot::Item(item));
    }

    /// Tells every current subscriber that items may have been lost.
    pub fn resync(&self) {
        let _ = self.tx.send(Slot::Resync);
    }

    /// How many subscribers there are.
    #[must_use]
    pub fn subscribers(&self) -> usize {
        self.tx.receiver_count()
    }
}

impl<T> fmt::Debug for Fanout<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fanout")
            .field("subscribers", &self.tx.receiver_count())
            .finish()
    }
}

/// The receiving side: events or messages as this process receives them.
pub struct Subscription<T> {
    rx: broadcast::Receiver<Slot<T>>,
}

impl<T: Clone> Subscription<T> {
    /// The next item, lag report or resync; `None` once the bus is dropped.
    pub async fn recv(&mut self) -> Option<Received<T>> {
        match self.rx.recv().await {
            Ok(slot) => Some(slot.into()),
            Err(broadcast::error::RecvError::Lagged(n)) => Some(Received::Lagged(n)),
            Err(broadcast::error::RecvError::Closed) => None,
        }
    }

    /// What is ready now, without waiting; `None` if nothing is (or the bus is dropped).
    pub fn try_recv(&mut self) -> Option<Received<T>> {
        match self.rx.try_recv() {
            Ok(slot) => Some(slot.into()),
            Err(broadcast::error::TryRecvError::Lagged(n)) => Some(Received::Lagged(n)),
            Err(_) => None,
        }
    }
}

impl<T> From<Slot<T>> for Received<T> {
    fn from(slot: Slot<T>) -> Self {
        match slot {
            Slot::Item(item) => Self::Item(item),
            Slot::Resync => Self::Resync,
        }
    }
}

impl<T> fmt::Debug for Subscription<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Subscription")
            .field("pending", &self.rx.len())
            .finish()
    }
}
