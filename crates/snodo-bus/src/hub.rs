//! [`Hub`]: what a bus holds in this process (subscribers, mailboxes, state), shared by
//! its handle and its background tasks.

use snodo::bus::{BusState, Event, Fanout, Mailboxes, Message};
use tokio::sync::watch;

use crate::wire::{self, Inbound};

#[derive(Debug)]
pub(crate) struct Hub {
    pub(crate) events: Fanout<Event>,
    pub(crate) mailboxes: Mailboxes,
    pub(crate) state: watch::Sender<BusState>,
    /// A label for the logs (`postgres` or `redis`).
    pub(crate) name: &'static str,
}

impl Hub {
    pub(crate) fn new(name: &'static str, backlog: usize) -> Self {
        Self {
            events: Fanout::new(backlog),
            mailboxes: Mailboxes::new(backlog),
            state: watch::channel(BusState::Up).0,
            name,
        }
    }

    /// Hands a received payload to this process's subscribers. A message's JSON is read
    /// only when someone here is addressed.
    pub(crate) fn deliver(&self, payload: &str) {
        match wire::parse(payload) {
            // Another instance's link was away: what it changed meanwhile is lost here.
            Some(Inbound::Event(Event::Resync)) => self.events.resync(),
            Some(Inbound::Event(event)) => self.events.send(event),
            Some(Inbound::Message(to, json)) => {
                if self.mailboxes.wants(&to) {
                    match Message::decode(&json) {
                        Some(m) => self.mailboxes.deliver(&to, &m),
                        None => tracing::warn!("{} bus: an unreadable message", self.name),
                    }
                }
            }
            None => tracing::debug!("{} bus: an unknown payload", self.name),
        }
    }

    /// The connection is back: subscribers are told that they may have missed things.
    pub(crate) fn up(&self, after_outage: bool) {
        if after_outage {
            tracing::info!("{} bus: reconnected; every subscriber resyncs", self.name);
            self.events.resync();
            self.mailboxes.resync();
        }
        self.state.send_if_modified(|s| {
            let changed = *s != BusState::Up;
            *s = BusState::Up;
            changed
        });
    }

    /// The connection is lost (logged once per outage).
    pub(crate) fn down(&self, why: &str) {
        let changed = self.state.send_if_modified(|s| {
            let changed = *s != BusState::Down;
            *s = BusState::Down;
            changed
        });
        if changed {
            tracing::warn!("{} bus: down ({why}); reconnecting", self.name);
        }
    }
}
