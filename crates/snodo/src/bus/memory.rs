//! [`MemoryBus`]: the bus of a deployment of one instance (the default).

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use futures_util::future::{BoxFuture, FutureExt, ready};
use tokio::sync::watch;

use super::Bus;
use super::fanout::{DEFAULT_BACKLOG, Fanout, Subscription};
use super::mailboxes::Mailboxes;
use super::types::{Address, BusError, BusState, Count, Event, InstanceId, Message, check_count};

/// How many counters may exist before expired ones are swept on the next increment.
const SWEEP_AT: usize = 4096;

/// Everything in this process: events reach this process's subscribers, messages its
/// mailboxes, counters are this process's. Always [`BusState::Up`].
///
/// ```
/// use snodo::bus::{Address, Bus, InstanceId, MemoryBus, Message, Received};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), snodo::bus::BusError> {
/// let bus = MemoryBus::new();
/// let me = InstanceId::new("solo")?;
/// let mut inbox = bus.messages(&me).await?;
/// let cancel = Message::Cancel { request: "42".into(), reason: Some("user".into()) };
/// bus.send(Address::Instance(me), cancel.clone()).await?;
/// assert_eq!(inbox.recv().await, Some(Received::Item(cancel)));
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct MemoryBus {
    events: Fanout<Event>,
    mailboxes: Mailboxes,
    counters: Mutex<Counters>,
    state: watch::Sender<BusState>,
}

#[derive(Debug, Default)]
struct Counters {
    map: HashMap<String, (u64, Instant)>,
    sweep_at: usize,
}

impl MemoryBus {
    /// A bus keeping [`DEFAULT_BACKLOG`] items for a slow subscriber.
    #[must_use]
    pub fn new() -> Self {
        Self::with_backlog(DEFAULT_BACKLOG)
    }

    /// A bus keeping `backlog` items for a slow subscriber.
    #[must_use]
    pub fn with_backlog(backlog: usize) -> Self {
        Self {
            events: Fanout::new(backlog),
            mailboxes: Mailboxes::new(backlog),
            counters: Mutex::new(Counters {
                map: HashMap::new(),
                sweep_at: SWEEP_AT,
            }),
            state: watch::channel(BusState::Up).0,
        }
    }

    fn increment(&self, key: &str, by: u64, window: Duration) -> Result<Count, BusError> {
        check_count(key, window)?;
        let now = Instant::now();
        let mut counters = self.counters.lock().unwrap_or_else(PoisonError::into_inner);
        if counters.map.len() >= counters.sweep_at {
            counters.map.retain(|_, (_, end)| *end > now);
            counters.sweep_at = (counters.map.len() * 2).max(SWEEP_AT);
        }
        let entry = counters
            .map
            .entry(key.to_owned())
            .or_insert((0, now + window));
        if entry.1 <= now {
            *entry = (0, now + window);
        }
        entry.0 = entry.0.saturating_add(by);
        Ok(Count {
            value: entry.0,
            resets_in: entry.1.saturating_duration_since(now),
        })
    }
}

impl Default for MemoryBus {
    fn default() -> Self {
        Self::new()
    }
}

impl Bus for MemoryBus {
    fn publish(&self, event: Event) -> BoxFuture<'_, Result<(), BusError>> {
        match event {
            Event::Resync => self.events.resync(),
            event => self.events.send(event),
        }
        ready(Ok(())).boxed()
    }

    fn events(&self) -> Subscription<Event> {
        self.events.subscribe()
    }

    fn send(&self, to: Address, message: Message) -> BoxFuture<'_, Result<(), BusError>> {
        let sent = message
            .encode_checked()
            .map(|_| self.mailboxes.deliver(&to, &message));
        ready(sent).boxed()
    }

    fn messages<'a>(
        &'a self,
        me: &'a InstanceId,
    ) -> BoxFuture<'a, Result<Subscription<Message>, BusError>> {
        ready(Ok(self.mailboxes.subscribe(me))).boxed()
    }

    fn count<'a>(
        &'a self,
        key: &'a str,
        by: u64,
        window: Duration,
    ) -> BoxFuture<'a, Result<Count, BusError>> {
        ready(self.increment(key, by, window)).boxed()
    }

    fn state(&self) -> watch::Receiver<BusState> {
        self.state.subscribe()
    }
}
