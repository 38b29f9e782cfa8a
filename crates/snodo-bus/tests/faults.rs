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
use snodo_bus::{PgBusOptions, RedisBusOptions};
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
    support::pg_bus(url, options).await
}

async fn redis(url: &str) -> Arc<dyn Bus> {
    let options = RedisBusOptions {
        namespace: support::namespace("redisfault"),
        deadline: DEADLINE,
        heartbeat: HEARTBEAT,
        ..RedisBusOptions::default()
    };
    support::redis_bus(url, options).await
}

const PG: &str = "SNODO_TEST_PG_URL";
const REDIS: &str = "SNODO_TEST_REDIS_URL";

fn report(what: &str, o: &Outage) {
    println!(
        "{what}: down {:?} after the fault, slowest call {:?} (deadline {DEADLINE:?}), up {:?} after the server was back",
        o.detected, o.slowest_call, o.recovered
    );
}

/// What the proxy does to the connections.
#[derive(Clone, Copy)]
enum Fault {
    /// Cuts every connection and refuses new ones (the server gone).
    Cut,
    /// Forwards nothing, connections kept open (a partition).
    Partition,
}

/// The outage scenario on the bus `connect` opens to the server at `var`'s URL, reached
/// through a proxy that injects `fault`.
async fn through_proxy<C, F>(var: &str, connect: C, fault: Fault, what: &str)
where
    C: FnOnce(String) -> F,
    F: std::future::Future<Output = Arc<dyn Bus>>,
{
    let Some(url) = support::url(var) else {
        return;
    };
    let proxy = Proxy::start(support::host_port(&url)).await;
    let bus = connect(via(&url, proxy.addr)).await;
    let inject = || match fault {
        Fault::Cut => proxy.cut(),
        Fault::Partition => proxy.blackhole(),
    };
    let o = outage(bus, DEADLINE, inject, || async { proxy.restore() }).await;
    report(what, &o);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_server_gone_and_back() {
    let what = "postgres, connections cut and refused";
    through_proxy(PG, |u| async move { pg(&u).await }, Fault::Cut, what).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_partitioned_and_back() {
    let what = "postgres, partitioned (nothing forwarded)";
    through_proxy(PG, |u| async move { pg(&u).await }, Fault::Partition, what).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_server_gone_and_back() {
    let what = "redis, connections cut and refused";
    through_proxy(REDIS, |u| async move { redis(&u).await }, Fault::Cut, what).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_partitioned_and_back() {
    let what = "redis, partitioned (nothing forwarded)";
    through_proxy(
        REDIS,
        |u| async move { redis(&u).await },
        Fault::Partition,
        what,
    )
    .await;
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

/// A PostgreSQL cluster of this test's own (`scale/postgres.sh start`), stopped by
/// `scale/postgres.sh stop` when dropped.
struct OwnPg {
    dir: std::path::PathBuf,
    script: std::path::PathBuf,
}

impl OwnPg {
    fn start() -> (Self, String) {
        let script =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scale/postgres.sh");
        let dir = std::env::temp_dir().join(format!(
            "snodo-bus-pgkill-{}",
            snodo::bus::InstanceId::random()
        ));
        let out = std::process::Command::new("bash")
            .arg(&script)
            .arg("start")
            .arg(&dir)
            .output()
            .unwrap_or_else(|e| panic!("run scale/postgres.sh: {e}"));
        let own = Self { dir, script };
        assert!(
            out.status.success(),
            "scale/postgres.sh start: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let url = std::fs::read_to_string(own.dir.join("url"))
            .unwrap_or_else(|e| panic!("the cluster's URL: {e}"));
        (own, url.trim().to_owned())
    }

    fn pid(&self) -> String {
        std::fs::read_to_string(self.dir.join("pid"))
            .unwrap_or_else(|e| panic!("the postmaster's pid: {e}"))
            .trim()
            .to_owned()
    }

    /// SIGQUIT: an immediate shutdown, every connection dropped, no checkpoint (the
    /// restart recovers as after a crash).
    fn kill(&self) {
        let pid = self.pid();
        let status = std::process::Command::new("kill")
            .args(["-QUIT", &pid])
            .status()
            .unwrap_or_else(|e| panic!("kill: {e}"));
        assert!(status.success(), "kill -QUIT {pid}");
    }

    /// The same cluster started again on the same port, once it accepts connections.
    async fn restart(&self, port: u16) {
        let pid = self.pid();
        for _ in 0..400 {
            if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        let bin = std::fs::read_dir("/usr/lib/postgresql")
            .unwrap_or_else(|e| panic!("/usr/lib/postgresql: {e}"))
            .filter_map(Result::ok)
            .map(|d| d.path().join("bin/postgres"))
            .find(|p| p.exists())
            .unwrap_or_else(|| panic!("no postgres binary under /usr/lib/postgresql"));
        let data = self.dir.join("data");
        let mut cmd = std::process::Command::new("setsid");
        // As in scale/postgres.sh: as root, the server runs as `postgres`.
        let root = std::process::Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|o| o.stdout.starts_with(b"0\n"));
        if root {
            cmd = std::process::Command::new("runuser");
            cmd.args(["-u", "postgres", "--", "setsid"]);
        }
        let mut child = cmd
            .arg(&bin)
            .arg("-D")
            .arg(&data)
            .args(["-h", "127.0.0.1", "-p", &port.to_string(), "-k"])
            .arg(&self.dir)
            .args(["-c", "fsync=off"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("restart postgres: {e}"));
        // Reaped when `scale/postgres.sh stop` stops it.
        std::thread::spawn(move || child.wait());
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        for _ in 0..400 {
            if let Ok(text) = std::fs::read_to_string(data.join("postmaster.pid")) {
                if let Some(new) = text.lines().next().filter(|p| *p != pid) {
                    let _ = std::fs::write(self.dir.join("pid"), new);
                    if tokio::net::TcpStream::connect(addr).await.is_ok() {
                        return;
                    }
                }
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("postgres did not come back on {addr}");
    }
}

impl Drop for OwnPg {
    fn drop(&mut self) {
        let _ = std::process::Command::new("bash")
            .arg(&self.script)
            .arg("stop")
            .arg(&self.dir)
            .status();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_server_killed_and_restarted() {
    // The shared server's presence says PostgreSQL is installed; this test runs its own.
    if support::url("SNODO_TEST_PG_URL").is_none() {
        return;
    }
    let (own, url) = OwnPg::start();
    let port = support::host_port(&url).port();
    let bus = pg(&url).await;
    let o = outage(bus, DEADLINE, || own.kill(), || own.restart(port)).await;
    report("postgres, server killed (SIGQUIT) and restarted", &o);
}
