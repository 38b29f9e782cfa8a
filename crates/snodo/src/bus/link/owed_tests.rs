//! The resync a publishing pump owes: a change the bus refused while it said `Up`, or
//! one a full outbox kept from the bus, is followed by [`Event::Resync`] to every
//! instance, before the next change and, with none, within [`RESYNC_RETRY`].

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::broadcast;

use super::super::contract::Faulty;
use super::super::{Bus, BusState, Event, InstanceId, MemoryBus, Received, Subscription};
use super::{Link, OUTBOX, RESYNC_RETRY, WhenDown};

/// A [`MemoryBus`] that says `Up` throughout, whose publishes the tests refuse (a
/// command connection down while pub/sub answers) or hold (a saturated pool).
fn flaky() -> Arc<Faulty> {
    Arc::new(Faulty::own_state(Arc::new(MemoryBus::new()), BusState::Up))
}

/// What another instance hears next, within `within`.
async fn next(other: &mut Subscription<Event>, within: Duration) -> Option<Received<Event>> {
    tokio::time::timeout(within, other.recv())
        .await
        .ok()
        .flatten()
}

fn link(bus: &Arc<Faulty>) -> (Link, broadcast::Sender<Event>, broadcast::Receiver<Event>) {
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
    let bus = flaky();
    let (link, local, mut mine) = link(&bus);
    let mut other = bus.events();
    bus.refuse_publishes(true);
    link.publish(Event::ToolsListChanged, &local);
    let here = tokio::time::timeout(Duration::from_secs(2), mine.recv()).await;
    assert!(matches!(here, Ok(Ok(Event::ToolsListChanged))), "{here:?}");
    bus.refuse_publishes(false);
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
    let bus = flaky();
    let (link, local, _mine) = link(&bus);
    let mut other = bus.events();
    bus.refuse_publishes(true);
    link.publish(Event::ResourceUpdated("file:///a".into()), &local);
    // Two retries fail while the bus refuses; then it takes them again.
    tokio::time::sleep(RESYNC_RETRY * 2 + RESYNC_RETRY / 2).await;
    bus.refuse_publishes(false);
    let got = next(&mut other, RESYNC_RETRY * 3).await;
    assert!(matches!(got, Some(Received::Resync)), "{got:?}");
    let more = next(&mut other, RESYNC_RETRY * 2).await;
    assert!(more.is_none(), "{more:?}");
}

#[tokio::test]
async fn a_full_outbox_is_followed_by_a_resync() {
    let bus = flaky();
    let (link, local, _mine) = link(&bus);
    let mut other = bus.events();
    bus.hold_publishes(true);
    // The pump takes the first and waits in its publish; OUTBOX more fill the queue,
    // and the next ones reach this instance's listeners only.
    for _ in 0..OUTBOX + 10 {
        link.publish(Event::ToolsListChanged, &local);
        tokio::task::yield_now().await;
    }
    bus.hold_publishes(false);
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
