//! Mailboxes on the servers (issue 35's loose ends): on PostgreSQL a message to one
//! instance reaches only the handles holding that instance's mailbox (a channel per
//! instance), not every listening connection; on Redis a mailbox whose every
//! subscription was dropped has its channel unsubscribed (at the next heartbeat); and a
//! runtime dropped ends its link's tasks, so its instance's channel goes too.

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use snodo::Runtime;
use snodo::bus::{Address, Bus, InstanceId, Message, Received};
use snodo_bus::{PgBus, PgBusOptions, RedisBus, RedisBusOptions};

const HEARTBEAT: Duration = Duration::from_millis(200);

fn cancel(n: usize) -> Message {
    Message::Cancel {
        request: format!("r{n}"),
        reason: None,
    }
}

/// 200 messages to instance X, whose mailbox is on handle B: handle A's connection hears
/// none of them, B's hears each once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_messages_reach_only_their_instance() {
    let Some(url) = support::url("SNODO_TEST_PG_URL") else {
        return;
    };
    let options = PgBusOptions {
        namespace: support::namespace("pgbox"),
        heartbeat: HEARTBEAT,
        ..PgBusOptions::default()
    };
    let connect = || async {
        PgBus::connect(&url, options.clone())
            .await
            .unwrap_or_else(|e| panic!("connect: {e}"))
    };
    let (a, b) = (connect().await, connect().await);
    let (me_a, x) = (InstanceId::random(), InstanceId::random());
    let _inbox_a = a.messages(&me_a).await.unwrap_or_else(|e| panic!("{e}"));
    let mut inbox_x = b.messages(&x).await.unwrap_or_else(|e| panic!("{e}"));
    let (heard_a, heard_b) = (a.notifications_received(), b.notifications_received());
    let started = Instant::now();
    for n in 0..200 {
        a.send(Address::Instance(x.clone()), cancel(n))
            .await
            .unwrap_or_else(|e| panic!("send: {e}"));
    }
    for n in 0..200 {
        match tokio::time::timeout(Duration::from_secs(10), inbox_x.recv()).await {
            Ok(Some(Received::Item(m))) => assert_eq!(m, cancel(n)),
            other => panic!("message {n} to x: {other:?}"),
        }
    }
    let took = started.elapsed();
    // A's connection would have heard the last NOTIFY by now (one connection's
    // notifications are delivered in order, and B heard it).
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (on_a, on_b) = (
        a.notifications_received() - heard_a,
        b.notifications_received() - heard_b,
    );
    println!(
        "postgres: 200 messages to x in {took:?}: {on_b} notifications on x's handle, {on_a} on the other"
    );
    assert_eq!(on_a, 0, "another instance's connection heard x's messages");
    assert_eq!(on_b, 200);
    // Every instance still hears what is addressed to every instance.
    let mut inbox_a = a.messages(&me_a).await.unwrap_or_else(|e| panic!("{e}"));
    b.send(Address::Every, cancel(7))
        .await
        .unwrap_or_else(|e| panic!("send: {e}"));
    for inbox in [&mut inbox_a, &mut inbox_x] {
        match tokio::time::timeout(Duration::from_secs(10), inbox.recv()).await {
            Ok(Some(Received::Item(m))) => assert_eq!(m, cancel(7)),
            other => panic!("a message to every instance: {other:?}"),
        }
    }
}

/// The number of subscribers of `channel` on the server.
async fn subscribers(url: &str, channel: &str) -> i64 {
    let client = redis::Client::open(url).unwrap_or_else(|e| panic!("{e}"));
    let mut conn = client
        .get_multiplexed_async_connection()
        .await
        .unwrap_or_else(|e| panic!("connect: {e}"));
    let (_, n): (String, i64) = redis::cmd("PUBSUB")
        .arg("NUMSUB")
        .arg(channel)
        .query_async(&mut conn)
        .await
        .unwrap_or_else(|e| panic!("PUBSUB NUMSUB: {e}"));
    n
}

/// Waits (up to 3 s) for `channel` to have `n` subscribers; how long it took.
async fn until_subscribers(url: &str, channel: &str, n: i64) -> Duration {
    let started = Instant::now();
    loop {
        let now = subscribers(url, channel).await;
        if now == n {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{channel}: {now} subscribers after 3 s, expected {n}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_unsubscribes_a_dropped_mailbox() {
    let Some(url) = support::url("SNODO_TEST_REDIS_URL") else {
        return;
    };
    let namespace = support::namespace("rbox");
    let options = RedisBusOptions {
        namespace: namespace.clone(),
        heartbeat: HEARTBEAT,
        ..RedisBusOptions::default()
    };
    let bus = RedisBus::connect(&url, options.clone())
        .await
        .unwrap_or_else(|e| panic!("connect: {e}"));
    let x = InstanceId::random();
    let channel = format!("{namespace}:to:{x}");
    let one = bus.messages(&x).await.unwrap_or_else(|e| panic!("{e}"));
    let two = bus.messages(&x).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(subscribers(&url, &channel).await, 1);
    drop(one);
    tokio::time::sleep(HEARTBEAT * 3).await;
    assert_eq!(
        subscribers(&url, &channel).await,
        1,
        "unsubscribed while held"
    );
    drop(two);
    let took = until_subscribers(&url, &channel, 0).await;
    println!("redis: a dropped mailbox's channel unsubscribed after {took:?}");
    let _three = bus.messages(&x).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(subscribers(&url, &channel).await, 1, "not subscribed again");

    // A runtime's link holds its instance's mailbox while the runtime lives, and drops
    // it with the runtime (its tasks end then, not at the bus's next message).
    let me = InstanceId::random();
    let channel = format!("{namespace}:to:{me}");
    let shared: Arc<dyn Bus> = Arc::new(
        RedisBus::connect(&url, options)
            .await
            .unwrap_or_else(|e| panic!("connect: {e}")),
    );
    let runtime = Runtime::builder("t", "1.0.0")
        .bus(Arc::clone(&shared))
        .bus_instance(me.clone())
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let endpoint = snodo::http::McpService::new(runtime.clone());
    until_subscribers(&url, &channel, 1).await;
    drop((endpoint, runtime));
    let took = until_subscribers(&url, &channel, 0).await;
    println!("redis: a dropped runtime's mailbox channel unsubscribed after {took:?}");
}
