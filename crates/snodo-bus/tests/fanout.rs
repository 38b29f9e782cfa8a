//! Fan-out: one event published on one handle, delivered to 10,000 subscribers of
//! another handle (each a task, as listen streams will be). Every subscriber must receive
//! every round; the latency from the publish to each delivery is printed (p50, p99, max),
//! a measurement for issue 35's benchmark, not a timed assertion.

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use snodo::bus::{Bus, Event, MemoryBus, Received};
use snodo_bus::{PgBusOptions, RedisBusOptions};
use tokio::sync::mpsc;

const SUBSCRIBERS: usize = 10_000;
const ROUNDS: usize = 5;
/// Room for every round in each subscriber's backlog: nobody may lag.
const BACKLOG: usize = 64;

async fn fan_out(name: &str, a: Arc<dyn Bus>, b: Arc<dyn Bus>) {
    let (tx, mut rx) = mpsc::unbounded_channel::<(usize, Instant)>();
    let mut tasks = Vec::with_capacity(SUBSCRIBERS);
    for _ in 0..SUBSCRIBERS {
        let mut sub = b.events();
        let tx = tx.clone();
        tasks.push(tokio::spawn(async move {
            for _ in 0..ROUNDS {
                match sub.recv().await {
                    Some(Received::Item(Event::ResourceUpdated(uri))) => {
                        let round = uri.rsplit('/').next().and_then(|r| r.parse().ok());
                        let _ = tx.send((round.unwrap_or(usize::MAX), Instant::now()));
                    }
                    other => panic!("a subscriber got {other:?}"),
                }
            }
        }));
    }
    drop(tx);
    let mut latencies = Vec::with_capacity(SUBSCRIBERS * ROUNDS);
    for round in 0..ROUNDS {
        let start = Instant::now();
        let event = Event::ResourceUpdated(format!("test://fanout/{round}").into());
        a.publish(event)
            .await
            .unwrap_or_else(|e| panic!("{name}: publish: {e}"));
        for _ in 0..SUBSCRIBERS {
            let got = tokio::time::timeout(Duration::from_secs(30), rx.recv()).await;
            let Ok(Some((r, at))) = got else {
                panic!("{name}: round {round}: not every subscriber received within 30 s");
            };
            assert_eq!(r, round, "{name}: a subscriber received another round");
            latencies.push(at.saturating_duration_since(start));
        }
    }
    for task in tasks {
        task.await
            .unwrap_or_else(|e| panic!("{name}: a subscriber failed: {e}"));
    }
    latencies.sort();
    let at = |q: f64| latencies[((latencies.len() - 1) as f64 * q) as usize];
    println!(
        "{name}: publish -> {SUBSCRIBERS} subscribers on another handle, {ROUNDS} rounds: p50 {:?}, p99 {:?}, max {:?}",
        at(0.5),
        at(0.99),
        at(1.0)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_fan_out() {
    let bus: Arc<dyn Bus> = Arc::new(MemoryBus::with_backlog(BACKLOG));
    fan_out("memory", Arc::clone(&bus), bus).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_fan_out() {
    let Some(url) = support::url("SNODO_TEST_PG_URL") else {
        return;
    };
    let options = PgBusOptions {
        namespace: support::namespace("pgfan"),
        backlog: BACKLOG,
        ..PgBusOptions::default()
    };
    let (a, b) = support::pg_pair(&url, options).await;
    fan_out("postgres", a, b).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_fan_out() {
    let Some(url) = support::url("SNODO_TEST_REDIS_URL") else {
        return;
    };
    let options = RedisBusOptions {
        namespace: support::namespace("redisfan"),
        backlog: BACKLOG,
        ..RedisBusOptions::default()
    };
    let (a, b) = support::redis_pair(&url, options).await;
    fan_out("redis", a, b).await;
}
