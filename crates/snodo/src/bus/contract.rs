//! The [`Bus`] contract suite (feature `bus-contract`): the properties every bus must
//! have, each an `async fn` taking a bus factory. [`MemoryBus`](super::MemoryBus) runs it
//! in snodo's tests; the PostgreSQL and Redis buses in crate `snodo-bus`'s.
//!
//! The factory returns a NEW handle on the SAME backend at every call (the memory bus:
//! clones of one `Arc`; PostgreSQL: another pool and listener on the same database;
//! Redis: other connections to the same server), so "another instance hears it" is what
//! the suite checks. The handles must have their channels to themselves while the suite
//! runs (a namespace of their own): properties check the exact order of what arrives.
//! A failed property panics with what broke.
//!
//! ```ignore
//! let report = snodo::bus::contract::run_all(|| async { Arc::clone(&bus) as Arc<dyn Bus> }, 64).await;
//! ```

mod faulty;

pub use faulty::{Faulty, Sends};

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::future::join_all;
use serde_json::json;

use super::{
    Address, Bus, BusError, BusState, Event, InstanceId, MAX_KEY, MAX_MESSAGE, Message, Received,
    Subscription,
};

/// How long a property waits for something that must come.
const PATIENCE: Duration = Duration::from_secs(10);
/// How long a property waits to be sure something does not come.
const QUIET: Duration = Duration::from_millis(300);

/// What [`run_all`] measured.
#[derive(Debug, Clone, Copy)]
pub struct Report {
    /// From `publish` on one handle to the event's arrival on another (median of 20).
    pub event_latency: Duration,
    /// From `send` on one handle to the message's arrival on another (median of 20).
    pub message_latency: Duration,
    /// One `count` on a handle, round trip (median of 20).
    pub count_latency: Duration,
}

/// Runs every property, one after another, on handles from `make`, which keep `backlog`
/// items for a slow subscriber.
pub async fn run_all<F, Fut>(make: F, backlog: usize) -> Report
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn Bus>>,
{
    state_is_up(&make).await;
    let event_latency = events_reach_every_handle(&make).await;
    events_keep_order(&make, backlog).await;
    resync_reaches_every_handle(&make).await;
    let message_latency = messages_are_addressed(&make).await;
    mailboxes_survive_their_dropped_twins(&make).await;
    large_message_arrives(&make).await;
    lag_is_reported(&make, backlog).await;
    let count_latency = counts_are_shared_and_atomic(&make).await;
    counts_expire(&make).await;
    bad_input_is_invalid(&make).await;
    Report {
        event_latency,
        message_latency,
        count_latency,
    }
}

/// A connected bus says it is up.
pub async fn state_is_up<F, Fut>(make: &F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn Bus>>,
{
    let bus = make().await;
    assert_eq!(*bus.state().borrow(), BusState::Up, "a connected bus is up");
}

/// Each kind of event published on one handle arrives, once and in order, at every
/// subscriber of every handle, the publisher's own included.
pub async fn events_reach_every_handle<F, Fut>(make: &F) -> Duration
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn Bus>>,
{
    let (a, b) = (make().await, make().await);
    let (mut on_a, mut on_b, mut on_b2) = (a.events(), b.events(), b.events());
    let events = [
        Event::ToolsListChanged,
        Event::PromptsListChanged,
        Event::ResourcesListChanged,
        Event::ResourceUpdated(format!("test://{}/é ?x=1", InstanceId::random()).into()),
    ];
    for event in &events {
        ok(a.publish(event.clone()).await, "publish");
    }
    for sub in [&mut on_a, &mut on_b, &mut on_b2] {
        for event in &events {
            assert_eq!(&item(sub, "an event").await, event);
        }
    }
    quiet(&mut on_b, "after the events").await;
    let mut samples = Vec::new();
    for n in 0..20 {
        let event = Event::ResourceUpdated(format!("test://latency/{n}").into());
        let start = Instant::now();
        ok(a.publish(event.clone()).await, "publish");
        assert_eq!(item(&mut on_b, "an event").await, event);
        samples.push(start.elapsed());
        assert_eq!(item(&mut on_a, "an event").await, event);
        assert_eq!(item(&mut on_b2, "an event").await, event);
    }
    median(samples)
}

/// Events published one after another by one handle arrive in that order (read in
/// batches of half the `backlog`, so that nothing lags).
pub async fn events_keep_order<F, Fut>(make: &F, backlog: usize)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn Bus>>,
{
    let (a, b) = (make().await, make().await);
    let mut on_b = b.events();
    let batch = (backlog / 2).max(1);
    let mut next = 0;
    while next < 100 {
        let end = (next + batch).min(100);
        for n in next..end {
            ok(a.publish(numbered(n)).await, "publish");
        }
        for n in next..end {
            assert_eq!(item(&mut on_b, "an event").await, numbered(n), "event {n}");
        }
        next = end;
    }
}

/// [`Event::Resync`] published on one handle reaches every subscriber of every handle,
/// the publisher's own included, as [`Received::Resync`] (never as an item), in its
/// place among the events; the subscribers' messages are not told.
pub async fn resync_reaches_every_handle<F, Fut>(make: &F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn Bus>>,
{
    let (a, b) = (make().await, make().await);
    let me = InstanceId::random();
    let mut inbox = ok(b.messages(&me).await, "messages");
    let (mut on_a, mut on_b) = (a.events(), b.events());
    let (before, after) = (numbered(1), numbered(2));
    ok(a.publish(before.clone()).await, "publish");
    ok(a.publish(Event::Resync).await, "publish a resync");
    ok(a.publish(after.clone()).await, "publish");
    for (name, sub) in [("the publisher", &mut on_a), ("another handle", &mut on_b)] {
        assert_eq!(item(sub, "the event before").await, before, "{name}");
        match tokio::time::timeout(PATIENCE, sub.recv()).await {
            Ok(Some(Received::Resync)) => {}
            other => panic!("{name}: expected Resync, got {other:?}"),
        }
        assert_eq!(item(sub, "the event after").await, after, "{name}");
    }
    quiet(&mut inbox, "a mailbox after an event resync").await;
}

/// A message to an instance reaches that instance's subscribers only, from any handle;
/// one to every instance reaches all of them; one to nobody is accepted and lost.
pub async fn messages_are_addressed<F, Fut>(make: &F) -> Duration
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn Bus>>,
{
    let (a, b) = (make().await, make().await);
    let (x, y) = (InstanceId::random(), InstanceId::random());
    let mut to_x = ok(a.messages(&x).await, "messages");
    let mut to_x2 = ok(a.messages(&x).await, "messages");
    let mut to_y = ok(b.messages(&y).await, "messages");
    let cancel = Message::Cancel {
        request: "\"req-1\"".into(),
        reason: Some("the user left".into()),
    };
    ok(
        b.send(Address::Instance(x.clone()), cancel.clone()).await,
        "send",
    );
    assert_eq!(item(&mut to_x, "a message to x").await, cancel);
    assert_eq!(item(&mut to_x2, "a message to x").await, cancel);
    let answer = Message::Answer {
        request: "17".into(),
        response: json!({"jsonrpc": "2.0", "id": 17, "result": {"action": "accept"}}),
    };
    ok(
        a.send(Address::Instance(y.clone()), answer.clone()).await,
        "send",
    );
    assert_eq!(item(&mut to_y, "a message to y").await, answer);
    let nobody = Address::Instance(InstanceId::random());
    ok(a.send(nobody, cancel.clone()).await, "send to nobody");
    ok(
        b.send(Address::Every, answer.clone()).await,
        "send to every",
    );
    for sub in [&mut to_x, &mut to_x2, &mut to_y] {
        assert_eq!(item(sub, "a message to every").await, answer);
        quiet(sub, "another instance's message").await;
    }
    let mut samples = Vec::new();
    for n in 0..20 {
        let m = Message::Cancel {
            request: n.to_string(),
            reason: None,
        };
        let start = Instant::now();
        ok(
            b.send(Address::Instance(x.clone()), m.clone()).await,
            "send",
        );
        assert_eq!(item(&mut to_x, "a message").await, m);
        samples.push(start.elapsed());
        assert_eq!(item(&mut to_x2, "a message").await, m);
    }
    median(samples)
}

/// How long a bus may take to stop listening for a mailbox whose every subscription was
/// dropped (the PostgreSQL and Redis buses do it at their next heartbeat, 1 s by default).
const VACATE: Duration = Duration::from_millis(1500);

/// A bus may stop listening for a mailbox once its every subscription is dropped, but
/// never while one is left, and a mailbox opened again receives again.
pub async fn mailboxes_survive_their_dropped_twins<F, Fut>(make: &F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn Bus>>,
{
    let (a, b) = (make().await, make().await);
    let x = InstanceId::random();
    let first = ok(a.messages(&x).await, "messages");
    let mut second = ok(a.messages(&x).await, "messages");
    drop(first);
    tokio::time::sleep(VACATE).await;
    let m = |n: u32| Message::Cancel {
        request: format!("twin-{n}"),
        reason: None,
    };
    ok(b.send(Address::Instance(x.clone()), m(1)).await, "send");
    assert_eq!(
        item(&mut second, "a message to a mailbox still held").await,
        m(1)
    );
    drop(second);
    tokio::time::sleep(VACATE).await;
    let mut again = ok(a.messages(&x).await, "messages");
    ok(b.send(Address::Instance(x.clone()), m(2)).await, "send");
    assert_eq!(
        item(&mut again, "a message to a mailbox opened again").await,
        m(2)
    );
    quiet(
        &mut again,
        "a message sent before the mailbox was opened again",
    )
    .await;
}

/// A message of 200 KB arrives whole; one over [`MAX_MESSAGE`] is refused.
pub async fn large_message_arrives<F, Fut>(make: &F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn Bus>>,
{
    let (a, b) = (make().await, make().await);
    let x = InstanceId::random();
    let mut to_x = ok(a.messages(&x).await, "messages");
    let big = Message::Answer {
        request: "big".into(),
        response: json!({"result": {"text": "ü".repeat(100_000)}}),
    };
    ok(
        b.send(Address::Instance(x.clone()), big.clone()).await,
        "send 200 KB",
    );
    assert_eq!(item(&mut to_x, "a large message").await, big);
    let huge = Message::Answer {
        request: "huge".into(),
        response: json!("x".repeat(MAX_MESSAGE)),
    };
    match b.send(Address::Instance(x), huge).await {
        Err(BusError::Invalid(_)) => {}
        other => panic!("a message over MAX_MESSAGE must be Invalid, got {other:?}"),
    }
}

/// A subscriber that does not read is told how many events it missed (the backlog is
/// bounded), then receives the latest ones in order; a reading subscriber misses none.
pub async fn lag_is_reported<F, Fut>(make: &F, backlog: usize)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn Bus>>,
{
    let (a, b) = (make().await, make().await);
    let (mut slow, mut fast) = (b.events(), b.events());
    let total = backlog * 3 + 5;
    for n in 0..total {
        ok(a.publish(numbered(n)).await, "publish");
        assert_eq!(item(&mut fast, "an event").await, numbered(n));
    }
    let (mut lagged, mut seen) = (0u64, Vec::new());
    while let Some(r) = slow.try_recv() {
        match r {
            Received::Lagged(n) => lagged += n,
            Received::Item(e) => seen.push(e),
            Received::Resync => panic!("a resync without a disconnection"),
        }
    }
    assert!(
        lagged > 0,
        "a subscriber {total} events behind was not told"
    );
    assert!(
        seen.len() <= backlog,
        "more than the backlog kept: {}",
        seen.len()
    );
    assert_eq!(
        lagged + seen.len() as u64,
        total as u64,
        "lost without a report"
    );
    let first = total - seen.len();
    let expected: Vec<Event> = (first..total).map(numbered).collect();
    assert_eq!(seen, expected, "the latest events, in order");
}

/// Increments from two handles at once each get a distinct value; the total is exact;
/// `by = 0` reads; the window runs from the first increment.
pub async fn counts_are_shared_and_atomic<F, Fut>(make: &F) -> Duration
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn Bus>>,
{
    let (a, b) = (make().await, make().await);
    let key = format!("contract:{}", InstanceId::random());
    let window = Duration::from_secs(60);
    let first = ok(a.count(&key, 1, window).await, "count");
    assert_eq!(first.value, 1);
    assert!(
        first.resets_in > Duration::ZERO && first.resets_in <= window,
        "{first:?}"
    );
    let calls = (0..50).map(|n| {
        let bus = if n % 2 == 0 { &a } else { &b };
        bus.count(&key, 1, window)
    });
    let mut values: Vec<u64> = join_all(calls)
        .await
        .into_iter()
        .map(|r| ok(r, "count").value)
        .collect();
    values.sort_unstable();
    assert_eq!(values, (2..=51).collect::<Vec<_>>(), "each value once");
    assert_eq!(ok(b.count(&key, 0, window).await, "read").value, 51);
    assert_eq!(ok(a.count(&key, 10, window).await, "by 10").value, 61);
    let other = format!("{key}:other");
    assert_eq!(ok(b.count(&other, 1, window).await, "another key").value, 1);
    let mut samples = Vec::new();
    for _ in 0..20 {
        let start = Instant::now();
        ok(a.count(&key, 1, window).await, "count");
        samples.push(start.elapsed());
    }
    median(samples)
}

/// A counter starts again from zero once its window is over; later increments do not
/// extend the window.
pub async fn counts_expire<F, Fut>(make: &F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn Bus>>,
{
    let (a, b) = (make().await, make().await);
    let key = format!("contract:{}", InstanceId::random());
    let window = Duration::from_millis(800);
    assert_eq!(ok(a.count(&key, 1, window).await, "count").value, 1);
    tokio::time::sleep(Duration::from_millis(400)).await;
    let later = ok(b.count(&key, 1, window).await, "count");
    assert_eq!(later.value, 2);
    assert!(
        later.resets_in <= Duration::from_millis(500),
        "a later increment extended the window: {later:?}"
    );
    tokio::time::sleep(Duration::from_millis(600)).await;
    let again = ok(b.count(&key, 1, window).await, "count after the window");
    assert_eq!(again.value, 1, "the window is over");
    assert!(again.resets_in > Duration::from_millis(500), "{again:?}");
}

/// Bad keys and windows are refused the same way by every bus.
pub async fn bad_input_is_invalid<F, Fut>(make: &F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn Bus>>,
{
    let bus = make().await;
    let long = "k".repeat(MAX_KEY + 1);
    let second = Duration::from_secs(1);
    for (key, window) in [
        ("", second),
        (long.as_str(), second),
        ("k", Duration::ZERO),
        ("k", Duration::from_secs(86_401)),
    ] {
        match bus.count(key, 1, window).await {
            Err(BusError::Invalid(_)) => {}
            other => panic!("count({key:.8}.., {window:?}) must be Invalid, got {other:?}"),
        }
    }
}

fn numbered(n: usize) -> Event {
    Event::ResourceUpdated(format!("test://order/{n}").into())
}

fn ok<T>(result: Result<T, BusError>, what: &str) -> T {
    result.unwrap_or_else(|e| panic!("{what}: {e}"))
}

/// The next item, within [`PATIENCE`]; anything else fails the property.
async fn item<T: Clone + std::fmt::Debug>(sub: &mut Subscription<T>, what: &str) -> T {
    match tokio::time::timeout(PATIENCE, sub.recv()).await {
        Ok(Some(Received::Item(item))) => item,
        Ok(other) => panic!("waiting for {what}: got {other:?}"),
        Err(_) => panic!("waiting for {what}: nothing within {PATIENCE:?}"),
    }
}

/// Nothing arrives within [`QUIET`].
async fn quiet<T: Clone + std::fmt::Debug>(sub: &mut Subscription<T>, what: &str) {
    if let Ok(got) = tokio::time::timeout(QUIET, sub.recv()).await {
        panic!("expected nothing ({what}), got {got:?}");
    }
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}
