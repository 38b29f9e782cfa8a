//! The Bus contract suite against PostgreSQL (the server at `SNODO_TEST_PG_URL`) and
//! Redis (the server at `SNODO_TEST_REDIS_URL`), both started by `.ci/run` with
//! `scale/postgres.sh` and `scale/redis.sh`. Each test has a namespace of its own.

mod support;

use std::sync::Arc;
use std::time::Duration;

use snodo::bus::{Bus, BusError, contract};
use snodo_bus::{PgBus, PgBusOptions, RedisBus, RedisBusOptions};

const BACKLOG: usize = 32;

async fn pg(url: &str, namespace: &str) -> Arc<dyn Bus> {
    let options = PgBusOptions {
        namespace: namespace.to_owned(),
        backlog: BACKLOG,
        ..PgBusOptions::default()
    };
    support::pg_bus(url, options).await
}

async fn redis(url: &str, namespace: &str) -> Arc<dyn Bus> {
    let options = RedisBusOptions {
        namespace: namespace.to_owned(),
        backlog: BACKLOG,
        ..RedisBusOptions::default()
    };
    support::redis_bus(url, options).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_bus_passes_the_contract() {
    let Some(url) = support::url("SNODO_TEST_PG_URL") else {
        return;
    };
    let ns = support::namespace("pg");
    let report = contract::run_all(|| pg(&url, &ns), BACKLOG).await;
    println!("postgres bus (two handles, LISTEN/NOTIFY): {report:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_bus_passes_the_contract() {
    let Some(url) = support::url("SNODO_TEST_REDIS_URL") else {
        return;
    };
    let ns = support::namespace("redis");
    let report = contract::run_all(|| redis(&url, &ns), BACKLOG).await;
    println!("redis bus (two handles, pub/sub): {report:?}");
}

/// One handle's events reach the other handle only within its namespace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespaces_keep_deployments_apart() {
    for (name, var) in [
        ("pg", "SNODO_TEST_PG_URL"),
        ("redis", "SNODO_TEST_REDIS_URL"),
    ] {
        let Some(url) = support::url(var) else {
            continue;
        };
        let connect = |ns: String| {
            let url = url.clone();
            async move {
                if name == "pg" {
                    pg(&url, &ns).await
                } else {
                    redis(&url, &ns).await
                }
            }
        };
        let (one, two) = (support::namespace(name), support::namespace(name));
        let (a, b) = (connect(one.clone()).await, connect(two).await);
        let mut on_b = b.events();
        a.publish(snodo::bus::Event::ToolsListChanged)
            .await
            .unwrap_or_else(|e| panic!("{name}: publish: {e}"));
        let heard = tokio::time::timeout(Duration::from_millis(500), on_b.recv()).await;
        assert!(heard.is_err(), "{name}: another namespace heard {heard:?}");
        let key = "shared-key";
        let first = a.count(key, 1, Duration::from_secs(60)).await;
        let second = b.count(key, 1, Duration::from_secs(60)).await;
        assert_eq!(first.map(|c| c.value), Ok(1), "{name}");
        assert_eq!(
            second.map(|c| c.value),
            Ok(1),
            "{name}: counters shared across namespaces"
        );
    }
}

#[tokio::test]
async fn bad_urls_and_absent_servers_are_errors() {
    let quick = Duration::from_millis(500);
    for url in ["not a url", "postgres://x@127.0.0.1:1/db"] {
        let options = PgBusOptions {
            deadline: quick,
            ..PgBusOptions::default()
        };
        match PgBus::connect(url, options).await {
            Err(BusError::Invalid(_) | BusError::Unavailable(_) | BusError::Timeout(_)) => {}
            other => panic!("{url}: expected an error, got {:?}", other.map(|_| ())),
        }
    }
    for url in ["not a url", "redis://127.0.0.1:1"] {
        let options = RedisBusOptions {
            deadline: quick,
            ..RedisBusOptions::default()
        };
        match RedisBus::connect(url, options).await {
            Err(BusError::Invalid(_) | BusError::Unavailable(_) | BusError::Timeout(_)) => {}
            other => panic!("{url}: expected an error, got {:?}", other.map(|_| ())),
        }
    }
    let bad_ns = PgBusOptions {
        namespace: "Bad-Name".into(),
        ..PgBusOptions::default()
    };
    assert!(matches!(
        PgBus::connect("postgres://x@127.0.0.1:1/db", bad_ns).await,
        Err(BusError::Invalid(_))
    ));
}
