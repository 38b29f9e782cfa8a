//! Changes that `subscriptions/listen` streams deliver (2026-07-28): this instance's,
//! and, with a bus, every instance's.

use tokio::sync::broadcast::{self, error::RecvError};

use crate::bus::{Received, Subscription};

/// A change a subscriber may have asked to hear about: what travels on the bus.
pub(crate) type Change = crate::bus::Event;

/// How many changes a slow subscriber may fall behind before it is told that every
/// list it watches changed.
pub(crate) const CHANGE_BACKLOG: usize = 256;

/// What one listen stream hears: the changes delivered in this process (all of them
/// without a bus; with one, those the bus could not carry), and those from the bus.
#[derive(Debug)]
pub(crate) struct Feed {
    local: broadcast::Receiver<Change>,
    shared: Option<Subscription<Change>>,
}

impl Feed {
    pub(crate) fn new(
        local: broadcast::Receiver<Change>,
        shared: Option<Subscription<Change>>,
    ) -> Self {
        Self { local, shared }
    }

    /// The next change; `Received::Lagged` or `Resync` when some were lost (every
    /// watched list may have changed), also for an [`Event::Resync`](crate::bus::Event)
    /// a bus delivered as an item; `None` once the runtime is gone. Cancel-safe.
    pub(crate) async fn recv(&mut self) -> Option<Received<Change>> {
        match self.next().await {
            Some(Received::Item(Change::Resync)) => Some(Received::Resync),
            other => other,
        }
    }

    async fn next(&mut self) -> Option<Received<Change>> {
        let local = async {
            match self.local.recv().await {
                Ok(change) => Some(Received::Item(change)),
                Err(RecvError::Lagged(n)) => Some(Received::Lagged(n)),
                Err(RecvError::Closed) => None,
            }
        };
        match &mut self.shared {
            None => local.await,
            Some(shared) => tokio::select! {
                biased;
                got = local => got,
                got = shared.recv() => got,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bus::Fanout;

    /// A bus of another crate may hand `Event::Resync` over as an item (its fanout's
    /// `send`): the listen streams still hear a resync, not an item none of them wants.
    #[tokio::test]
    async fn a_resync_sent_as_an_item_is_a_resync() {
        let (_local, mine) = broadcast::channel(4);
        let shared = Fanout::new(4);
        let mut feed = Feed::new(mine, Some(shared.subscribe()));
        shared.send(Change::Resync);
        shared.send(Change::ToolsListChanged);
        assert!(matches!(feed.recv().await, Some(Received::Resync)));
        assert!(matches!(
            feed.recv().await,
            Some(Received::Item(Change::ToolsListChanged))
        ));
    }
}
