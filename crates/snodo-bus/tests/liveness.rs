//! The PostgreSQL bus under load stays up: what keeps the listening connection alive
//! (its heartbeat, the draining of its notifications) does not wait on the shared pool.
//!
//! A connection of the test's own locks the bus's tables for several liveness windows
//! (three heartbeats), so every count and every read of a spilled message waits on the
//! lock until its deadline; meanwhile the pool is kept saturated with counts, and
//! notifications that point at spilled rows arrive. The bus's state must never go
//! `Down`, and an event published once the lock is gone must arrive. And the same lock
//! holding the delivering task `backlog` behind: what finds no room is dropped and the
//! subscribers are told `Resync`.
//!
//! PostgreSQL at `SNODO_TEST_PG_URL` (`scale/postgres.sh`; `.ci/run` starts it).

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use snodo::bus::{Bus, BusState, Event, Received};
use snodo_bus::{PgBus, PgBusOptions};
use sqlx::{Connection, PgConnection};

const HEARTBEAT: Duration = Duration::from_millis(200);
const DEADLINE: Duration = Duration::from_millis(800);
/// How long the tables stay locked: more than six liveness windows (3 × HEARTBEAT).
const LOCKED: Duration = Duration::from_secs(4);

/// Records whether `bus`'s state was ever `Down` from now on.
fn watch_down(bus: &PgBus) -> Arc<AtomicBool> {
    let went_down = Arc::new(AtomicBool::new(false));
    let mut state = bus.state();
    let flag = Arc::clone(&went_down);
    tokio::spawn(async move {
        while state.changed().await.is_ok() {
            if *state.borrow_and_update() == BusState::Down {
                flag.store(true, Ordering::SeqCst);
            }
        }
    });
    went_down
}

async fn raw(url: &str) -> PgConnection {
    PgConnection::connect(url)
        .await
        .unwrap_or_else(|e| panic!("connect {url}: {e}"))
}

/// Holds an exclusive lock on both bus tables until the returned connection commits.
async fn lock_tables(url: &str) -> PgConnection {
    let mut conn = raw(url).await;
    sqlx::raw_sql("BEGIN; LOCK TABLE snodo_bus_counters, snodo_bus_spill IN ACCESS EXCLUSIVE MODE")
        .execute(&mut conn)
        .await
        .unwrap_or_else(|e| panic!("lock the bus tables: {e}"));
    conn
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_pool_and_slow_spill_reads_do_not_take_the_bus_down() {
    under_load(8).await;
}

/// Slow spill reads alone (the pool has room for a heartbeat): the receiving side must
/// keep draining while they wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_spill_reads_alone_do_not_take_the_bus_down() {
    under_load(0).await;
}

/// The bus tables are the database's, not a namespace's: one scenario locks them at a
/// time (else one's lock request queues ahead of the other's counts).
static TABLES: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The scenario, with `counting` callers keeping the pool busy.
async fn under_load(counting: usize) {
    let Some(url) = support::url("SNODO_TEST_PG_URL") else {
        return;
    };
    let _tables = TABLES.lock().await;
    let namespace = support::namespace("pglive");
    let options = PgBusOptions {
        namespace: namespace.clone(),
        deadline: DEADLINE,
        heartbeat: HEARTBEAT,
        max_connections: 2,
        ..PgBusOptions::default()
    };
    let bus = Arc::new(
        PgBus::connect(&url, options)
            .await
            .unwrap_or_else(|e| panic!("connect: {e}")),
    );
    let mut events = bus.events();
    let went_down = watch_down(&bus);

    let mut lock = lock_tables(&url).await;
    // The pool saturated: callers counting in a loop, each waiting on the lock.
    let stop = Arc::new(AtomicBool::new(false));
    let failed = Arc::new(AtomicU64::new(0));
    let counters: Vec<_> = (0..counting)
        .map(|_| {
            let (bus, stop, failed) = (Arc::clone(&bus), Arc::clone(&stop), Arc::clone(&failed));
            tokio::spawn(async move {
                while !stop.load(Ordering::SeqCst) {
                    if bus.count("busy", 1, Duration::from_secs(60)).await.is_err() {
                        failed.fetch_add(1, Ordering::SeqCst);
                    }
                }
            })
        })
        .collect();
    // Notifications naming spilled rows: each read waits on the lock until its deadline.
    let mut notifier = raw(&url).await;
    for id in 1..=6 {
        sqlx::query("SELECT pg_notify($1, $2)")
            .bind(&namespace)
            .bind(format!("s{id}"))
            .execute(&mut notifier)
            .await
            .unwrap_or_else(|e| panic!("notify: {e}"));
    }
    tokio::time::sleep(LOCKED).await;
    sqlx::raw_sql("COMMIT")
        .execute(&mut lock)
        .await
        .unwrap_or_else(|e| panic!("unlock: {e}"));
    stop.store(true, Ordering::SeqCst);
    for c in counters {
        c.await.unwrap_or_else(|e| panic!("a counting task: {e}"));
    }
    println!(
        "{} counts failed while the tables were locked for {LOCKED:?}",
        failed.load(Ordering::SeqCst)
    );
    // The load was real: counts could not get through.
    assert!(
        counting == 0 || failed.load(Ordering::SeqCst) > 0,
        "no count waited on the lock"
    );
    assert!(
        !went_down.load(Ordering::SeqCst),
        "the bus went Down under load (heartbeat {HEARTBEAT:?}, liveness {:?})",
        HEARTBEAT * 3
    );
    assert_eq!(*bus.state().borrow(), BusState::Up);

    // And the receiving side still delivers, in order, with nothing told to resync.
    let after = Event::ResourceUpdated("test://after-load".into());
    bus.publish(after.clone())
        .await
        .unwrap_or_else(|e| panic!("publish after the load: {e}"));
    match tokio::time::timeout(Duration::from_secs(5), events.recv()).await {
        Ok(Some(Received::Item(e))) => assert_eq!(e, after),
        other => panic!("after the load, expected the event, got {other:?}"),
    }
}

/// The delivering task `backlog` behind (stuck reading a spilled row the test's lock
/// holds): notifications that find no room are dropped, and once it moves again every
/// subscriber is told `Resync`, after what was kept, and nothing is lost unreported.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delivery_backlog_overflow_makes_subscribers_resync() {
    // The delivering task's queue holds 5; the subscribers' (a broadcast, rounded up to a
    // power of two) 8: the Resync and the 5 kept fit, so the subscriber cannot lag.
    const BACKLOG: usize = 5;
    const SENT: usize = 3 * BACKLOG;
    let Some(url) = support::url("SNODO_TEST_PG_URL") else {
        return;
    };
    let _tables = TABLES.lock().await;
    let namespace = support::namespace("pgover");
    let options = PgBusOptions {
        namespace: namespace.clone(),
        backlog: BACKLOG,
        // Longer than the test holds its lock: the stuck read waits for the COMMIT.
        deadline: Duration::from_secs(10),
        ..PgBusOptions::default()
    };
    let bus = PgBus::connect(&url, options)
        .await
        .unwrap_or_else(|e| panic!("connect: {e}"));
    let mut events = bus.events();
    let collect = tokio::spawn(async move {
        // Nothing arrives before the lock is gone; then until a second of quiet.
        let mut got = Vec::new();
        let mut wait = Duration::from_secs(20);
        while let Ok(Some(r)) = tokio::time::timeout(wait, events.recv()).await {
            got.push(r);
            wait = Duration::from_secs(1);
        }
        got
    });

    let mut lock = lock_tables(&url).await;
    let mut notifier = raw(&url).await;
    let notify = |payload: String| {
        sqlx::query("SELECT pg_notify($1, $2)")
            .bind(namespace.clone())
            .bind(payload)
    };
    // The first names a spilled row: its read waits on the lock.
    notify("s1".into())
        .execute(&mut notifier)
        .await
        .unwrap_or_else(|e| panic!("notify: {e}"));
    for n in 0..SENT {
        notify(format!("eresource:test://overflow/{n}"))
            .execute(&mut notifier)
            .await
            .unwrap_or_else(|e| panic!("notify: {e}"));
    }
    // Until every notification reached the receiving task (which never waits).
    let received = tokio::time::timeout(Duration::from_secs(5), async {
        while bus.notifications_received() < (SENT + 1) as u64 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    assert!(received.await.is_ok(), "the receiving task did not drain");
    sqlx::raw_sql("COMMIT")
        .execute(&mut lock)
        .await
        .unwrap_or_else(|e| panic!("unlock: {e}"));

    let got = collect.await.unwrap_or_else(|e| panic!("collect: {e}"));
    let items: Vec<_> = got
        .iter()
        .filter_map(|r| match r {
            Received::Item(Event::ResourceUpdated(uri)) => Some(uri.to_string()),
            _ => None,
        })
        .collect();
    let resyncs = got.iter().filter(|r| **r == Received::Resync).count();
    println!("{SENT} sent behind a stuck read, backlog {BACKLOG}: {items:?}, {resyncs} resync");
    assert_eq!(resyncs, 1, "expected one Resync, got {got:?}");
    assert!(
        items.len() < SENT,
        "nothing was dropped with a backlog of {BACKLOG}: {got:?}"
    );
    // What was kept came in order, the first ones sent.
    let expected: Vec<String> = (0..items.len())
        .map(|n| format!("test://overflow/{n}"))
        .collect();
    assert_eq!(items, expected);
    assert!(
        !got.iter().any(|r| matches!(r, Received::Lagged(_))),
        "the subscriber itself lagged: {got:?}"
    );
}
