//! The resync a publishing pump owes: a change the bus refused while it said `Up`, or
//! one a full outbox kept from the bus, is followed by [`Event::Resync`] to every
//! instance, before the next change and, with none, within [`RESYNC_RETRY`].

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio::sync::{broadcast, watch};

use super::super::{
    Address, Bus, BusError, BusState, Count, Event, InstanceId, MemoryBus, Message, Received,
    Subscription,
};
use super::{Link, OUTBOX, RESYNC_RETRY, WhenDown};

/// A [`MemoryBus`] that says `Up` throughout, whose publishes fail while `fail` is set
/// (a command connection down while pub/sub answers) and wait while `hold` is set (a
/// saturated pool).
#[derive(Debug)]
struct Flaky {
    inner: MemoryBus,
    fail: AtomicBool,
    hold: watch::Sender<bool>,
    state: watch::Sender<BusState>,
}

impl Flaky {
    fn new() -> Arc<Self> {
        Arc::new(Self {
            inner: MemoryBus::new(),
            fail: AtomicBool::new(false),
            hold: watch::Sender::new(false),
            state: watch::Sender::new(BusState::Up),
        })
    }
}

impl Bus for Flaky {
    fn publish(&self, event: Event) -> BoxFuture<'_, Result<(), BusError>> {
        Box::pin(async move {
            let mut hold = self.hold.subscribe();
            let _ = hold.wait_for(|held| !held).await;
            if self.fail.load(Ordering::Acquire) {
                return Err(BusError::Unavailable("publish refused (test)".into()));
            }
            self.inner.publish(event).await
        })
    }
    fn events(&self) -> Subscription<Event> {
        self.inner.events()
    }
    fn send(&self, to: Address, message: Message) -> BoxFuture<'_, Result<(), BusError>> {
        self.inner.send(to, message)
    }
    fn messages<'a>(
        &'a self,
        me: &'a InstanceId,
    ) -> BoxFuture<'a, Result<Subscription<Message>, BusError>> {
        self.inner.messages(me)
    }
    fn count<'a>(
        &'a self,
        key: &'a str,
        by: u64,
        window: Duration,
    ) -> BoxFuture<'a, Result<Count, BusError>> {
        self.inner.count(key, by, window)
    }
    fn state(&self) -> watch::Receiver<BusState> {
        self.state.subscribe()
    }
}

/// What another instance hears next, within `within`.
async fn next(other: &mut Subscription<Event>, within: Duration) -> Option<Received<Event>> {
    tokio::time::timeout(within, other.recv())
        .await
        .ok()
        .flatten()
}

fn link(bus: &Arc<Flaky>) -> (Link, broadcast::Sender<Event>, broadcast::Receiver<Event>) {
    let (local, mine) = broadcast::channel(4 * OUTBOX);
    let bus: Arc<dyn Bus> = Arc::clone(bus) as Arc<dyn Bus>;
    (
        Link::new(bus, InstanceId::random(), WhenDown::Open),
        local,
        mine,
    )
}

#[tokio::test]
async fn a_refused_publish_is_followed_by_a_resync_before_the_next_change() {
    let bus = Flaky::new();
    let (link, local, mut mine) = link(&bus);
    let mut other = bus.events();
    bus.fail.store(true, Ordering::Release);
    link.publish(Event::ToolsListChanged, &local);
    let here = tokio::time::timeout(Duration::from_secs(2), mine.recv()).await;
    assert!(matches!(here, Ok(Ok(Event::ToolsListChanged))), "{here:?}");
    bus.fail.store(false, Ordering::Release);
    link.publish(Event::PromptsListChanged, &local);
    let first = next(&mut other, Duration::from_secs(2)).await;
    assert!(matches!(first, Some(Received::Resync)), "{first:?}");
    let second = next(&mut other, Duration::from_secs(2)).await;
    assert!(
        matches!(second, Some(Received::Item(Event::PromptsListChanged))),
        "{second:?}"
    );
    // Paid: nothing more.
    let more = next(&mut other, RESYNC_RETRY * 2).await;
    assert!(more.is_none(), "{more:?}");
}

#[tokio::test]
async fn a_refused_resync_is_tried_again_with_no_change_to_carry_it() {
    let bus = Flaky::new();
    let (link, local, _mine) = link(&bus);
    let mut other = bus.events();
    bus.fail.store(true, Ordering::Release);
    link.publish(Event::ResourceUpdated("file:///a".into()), &local);
    // Two retries fail while the bus refuses; then it takes them again.
    tokio::time::sleep(RESYNC_RETRY * 2 + RESYNC_RETRY / 2).await;
    bus.fail.store(false, Ordering::Release);
    let got = next(&mut other, RESYNC_RETRY * 3).await;
    assert!(matches!(got, Some(Received::Resync)), "{got:?}");
    let more = next(&mut other, RESYNC_RETRY * 2).await;
    assert!(more.is_none(), "{more:?}");
}

#[tokio::test]
async fn a_full_outbox_is_followed_by_a_resync() {
    let bus = Flaky::new();
    let (link, local, _mine) = link(&bus);
    let mut other = bus.events();
    bus.hold.send_replace(true);
    // The pump takes the first and waits in its publish; OUTBOX more fill the queue,
    // and the next ones reach this instance's listeners only.
    for _ in 0..OUTBOX + 10 {
        link.publish(Event::ToolsListChanged, &local);
        tokio::task::yield_now().await;
    }
    bus.hold.send_replace(false);
    let mut items = 0;
    let mut resyncs = 0;
    while let Some(got) = next(&mut other, Duration::from_millis(500)).await {
        match got {
            Received::Item(_) => items += 1,
            Received::Resync => resyncs += 1,
            Received::Lagged(n) => panic!("lagged {n}"),
        }
    }
    assert!(
        (OUTBOX..=OUTBOX + 1).contains(&items),
        "{items} changes published"
    );
    assert_eq!(resyncs, 1, "{items} changes published");
}
