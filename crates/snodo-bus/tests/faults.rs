//! Faults: the bus's server killed and restarted, or partitioned, while subscribed. The
//! state goes down then up, subscribers are told `Resync`, no call waits past its
//! deadline, and what is published afterwards arrives again.
//!
//! PostgreSQL and Redis (at `SNODO_TEST_PG_URL`, `SNODO_TEST_REDIS_URL`) are reached
//! through a TCP proxy that cuts every connection and refuses new ones (the server gone)
//! or forwards nothing (a partition). Redis is also killed for real: a `redis-server` of
//! the test's own, SIGKILLed and started again on the same port.

mod support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use snodo::bus::Bus;
use snodo_bus::{PgBus, PgBusOptions, RedisBus, RedisBusOptions};
use support::{Outage, Proxy, outage, via};
use tokio::process::{Child, Command};

const DEADLINE: Duration = Duration::from_millis(500);
const HEARTBEAT: Duration = Duration::from_millis(200);

async fn pg(url: &str) -> Arc<dyn Bus> {
    let options = PgBusOptions {
        namespace: support::namespace("pgfault"),
        deadline: DEADLINE,
        heartbeat: HEARTBEAT,
        ..PgBusOptions::default()
    };
    Arc::new(
        PgBus::connect(url, options)
            .await
            .unwrap_or_else(|e| panic!("connect {url}: {e}")),
    )
}

async fn redis(url: &str) -> Arc<dyn Bus> {
    let options = RedisBusOptions {
        namespace: support::namespace("redisfault"),
        deadline: DEADLINE,
        heartbeat: HEARTBEAT,
        ..RedisBusOptions::default()
    };
    Arc::new(
        RedisBus::connect(url, options)
            .await
            .unwrap_or_else(|e| panic!("connect {url}: {e}")),
    )
}

fn report(what: &str, o: &Outage) {
    println!(
        "{what}: down {:?} after the fault, slowest call {:?} (deadline {DEADLINE:?}), up {:?} after the server was back",
        o.detected, o.slowest_call, o.recovered
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_server_gone_and_back() {
    let Some(url) = support::url("SNODO_TEST_PG_URL") else {
        return;
    };
    let proxy = Proxy::start(support::host_port(&url)).await;
    let bus = pg(&via(&url, proxy.addr)).await;
    let o = outage(bus, DEADLINE, || proxy.cut(), || async { proxy.restore() }).await;
    report("postgres, connections cut and refused", &o);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_partitioned_and_back() {
    let Some(url) = support::url("SNODO_TEST_PG_URL") else {
        return;
    };
    let proxy = Proxy::start(support::host_port(&url)).await;
    let bus = pg(&via(&url, proxy.addr)).await;
    let o = outage(
        bus,
        DEADLINE,
        || proxy.blackhole(),
        || async { proxy.restore() },
    )
    .await;
    report("postgres, partitioned (nothing forwarded)", &o);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_server_gone_and_back() {
    let Some(url) = support::url("SNODO_TEST_REDIS_URL") else {
        return;
    };
    let proxy = Proxy::start(support::host_port(&url)).await;
    let bus = redis(&via(&url, proxy.addr)).await;
    let o = outage(bus, DEADLINE, || proxy.cut(), || async { proxy.restore() }).await;
    report("redis, connections cut and refused", &o);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_partitioned_and_back() {
    let Some(url) = support::url("SNODO_TEST_REDIS_URL") else {
        return;
    };
    let proxy = Proxy::start(support::host_port(&url)).await;
    let bus = redis(&via(&url, proxy.addr)).await;
    let o = outage(
        bus,
        DEADLINE,
        || proxy.blackhole(),
        || async { proxy.restore() },
    )
    .await;
    report("redis, partitioned (nothing forwarded)", &o);
}

/// A `redis-server` of this test's own on `port` (no persistence), once it answers.
async fn redis_server(port: u16) -> Child {
    let child = Command::new("redis-server")
        .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
        .args([
            "--save",
            "",
            "--appendonly",
            "no",
            "--protected-mode",
            "yes",
        ])
        .stdout(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("start redis-server (scale/redis.sh installs it): {e}"));
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    for _ in 0..200 {
        if tokio::net::TcpStream::connect(addr).await.is_ok() {
            return child;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("redis-server on {addr} does not accept connections");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_server_killed_and_restarted() {
    // The shared server's presence says redis-server is installed; this test runs its own.
    if support::url("SNODO_TEST_REDIS_URL").is_none() {
        return;
    }
    let port = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap_or_else(|e| panic!("a free port: {e}"));
        probe
            .local_addr()
            .unwrap_or_else(|e| panic!("a free port: {e}"))
            .port()
    };
    let server = std::sync::Mutex::new(Some(redis_server(port).await));
    let bus = redis(&format!("redis://127.0.0.1:{port}")).await;
    let kill = || {
        let mut slot = server
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(mut child) = slot.take() {
            child
                .start_kill()
                .unwrap_or_else(|e| panic!("kill redis-server: {e}"));
            *slot = Some(child);
        }
    };
    let restart = || async {
        let old = server
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(mut child) = old {
            let _ = child.wait().await;
        }
        let fresh = redis_server(port).await;
        *server
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(fresh);
    };
    let o = outage(bus, DEADLINE, kill, restart).await;
    report("redis, server SIGKILLed and restarted", &o);
    let child = server
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take();
    if let Some(mut child) = child {
        let _ = child.kill().await;
    }
}
