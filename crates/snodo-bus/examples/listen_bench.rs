//! The issue-35 benchmark (an example run by hand, not a timed test; `cargo test` builds
//! it, so it keeps compiling): ~10,000
//! `subscriptions/listen` streams over three runtimes sharing a bus, each behind its own
//! HTTP server on loopback; the latency from one publish on instance A to delivery on
//! every stream (p50/p99, 5 rounds); the process's memory per open stream; the cost of a
//! rate-limited call over an unlimited one.
//!
//! ```sh
//! SNODO_BENCH_BUS=redis cargo run --release -p snodo-bus --example listen_bench
//! ```
//!
//! `SNODO_BENCH_BUS`: `memory` (default), `postgres` (`SNODO_TEST_PG_URL`), `redis`
//! (`SNODO_TEST_REDIS_URL`); `SNODO_BENCH_STREAMS` (default 3,000; 9,900 failed to open here: client and server
//! sockets share this process's 20,000 descriptors).

#[path = "../tests/support/mod.rs"]
mod support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use snodo::bus::{Bus, MemoryBus};
use snodo::http::{HttpConfig, Server};
use snodo::{NoArguments, RateLimit, Runtime, Tool, ToolResult};
use snodo_bus::{PgBusOptions, RedisBusOptions};
use snodo_testkit::http::{literal_post, post};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;

const URI: &str = "file:///bench";
const MARK: &[u8] = b"notifications/resources/updated";

async fn bus(which: &str, namespace: &str) -> Arc<dyn Bus> {
    match which {
        "postgres" => {
            let url =
                std::env::var("SNODO_TEST_PG_URL").unwrap_or_else(|_| panic!("SNODO_TEST_PG_URL"));
            let options = PgBusOptions {
                namespace: namespace.into(),
                ..PgBusOptions::default()
            };
            support::pg_bus(&url, options).await
        }
        "redis" => {
            let url = std::env::var("SNODO_TEST_REDIS_URL")
                .unwrap_or_else(|_| panic!("SNODO_TEST_REDIS_URL"));
            let options = RedisBusOptions {
                namespace: namespace.into(),
                ..RedisBusOptions::default()
            };
            support::redis_bus(&url, options).await
        }
        _ => Arc::new(MemoryBus::new()),
    }
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

async fn start(runtime: Runtime) -> SocketAddr {
    let config = HttpConfig::default().max_listen_streams(5_000);
    let server = Server::bind(
        runtime,
        "127.0.0.1:0".parse().unwrap_or_else(|e| panic!("{e}")),
        config,
    )
    .await
    .unwrap_or_else(|e| panic!("bind: {e}"));
    let addr = server.local_addr().unwrap_or_else(|e| panic!("{e}"));
    tokio::spawn(server.run());
    addr
}

fn body(id: u64, method: &str, params: serde_json::Value) -> String {
    let mut params = params;
    params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}});
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

/// Opens one listen stream; a task then reports each delivery's instant.
async fn open(addr: SocketAddr, id: u64, tx: mpsc::UnboundedSender<Instant>) {
    let b = body(
        id,
        "subscriptions/listen",
        json!({"notifications": {"resourceSubscriptions": [URI]}}),
    );
    let headers = [
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "subscriptions/listen"),
    ];
    let mut s = TcpStream::connect(addr)
        .await
        .unwrap_or_else(|e| panic!("connect: {e}"));
    s.write_all(literal_post(&addr.to_string(), &headers, &b, false).as_bytes())
        .await
        .unwrap_or_else(|e| panic!("write: {e}"));
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    while !buf.windows(12).any(|w| w == b"acknowledged") {
        let n = s.read(&mut chunk).await.unwrap_or(0);
        assert!(n > 0, "a listen stream closed before its acknowledgement");
        buf.extend_from_slice(&chunk[..n]);
    }
    tokio::spawn(async move {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 512];
        loop {
            let Ok(n) = s.read(&mut chunk).await else {
                return;
            };
            if n == 0 {
                return;
            }
            buf.extend_from_slice(&chunk[..n]);
            if buf.windows(MARK.len()).any(|w| w == MARK) {
                buf.clear();
                if tx.send(Instant::now()).is_err() {
                    return;
                }
            }
        }
    });
}

async fn per_call(addr: SocketAddr, tool: &str, calls: u64) -> Duration {
    let headers = [
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", tool),
    ];
    let started = Instant::now();
    for i in 0..calls {
        let r = post(
            addr,
            &headers,
            &body(i, "tools/call", json!({"name": tool, "arguments": {}})),
        )
        .await;
        assert_eq!(r.status, 200);
    }
    started.elapsed() / u32::try_from(calls).unwrap_or(1)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let which = std::env::var("SNODO_BENCH_BUS").unwrap_or_else(|_| "memory".into());
    let streams: u64 = std::env::var("SNODO_BENCH_STREAMS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3_000);
    let namespace = support::namespace("bench");
    let shared = bus(&which, &namespace).await;
    let mut addrs = Vec::new();
    let mut runtimes = Vec::new();
    for _ in 0..3 {
        let b = if which == "memory" {
            Arc::clone(&shared)
        } else {
            bus(&which, &namespace).await
        };
        let rt = Runtime::builder("bench", "1.0.0")
            .resource_subscriptions(true)
            .bus(b)
            .tool(Tool::new("free").handler(|_: NoArguments| async {
                Ok::<_, snodo::HandlerError>(ToolResult::text("ok"))
            }))
            .tool(
                Tool::new("limited")
                    .rate_limit(RateLimit::per_principal(1_000_000, Duration::from_secs(60)))
                    .handler(|_: NoArguments| async {
                        Ok::<_, snodo::HandlerError>(ToolResult::text("ok"))
                    }),
            )
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        addrs.push(start(rt.clone()).await);
        runtimes.push(rt);
    }
    let free = per_call(addrs[0], "free", 300).await;
    let limited = per_call(addrs[0], "limited", 300).await;
    println!(
        "{which}: a tools/call {free:?} unlimited, {limited:?} rate-limited (+{:?} for the count)",
        limited.saturating_sub(free)
    );

    let before = rss_kib();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let opening = Instant::now();
    for i in 0..streams {
        let addr = addrs[usize::try_from(i % 3).unwrap_or(0)];
        open(addr, i, tx.clone()).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = rss_kib();
    println!(
        "{which}: {streams} listen streams opened in {:?}; RSS +{} KiB = {:.1} KiB per stream (server and client sides both in this process)",
        opening.elapsed(),
        after.saturating_sub(before),
        after.saturating_sub(before) as f64 / streams as f64
    );
    let mut all = Vec::new();
    for round in 0..5 {
        let published = Instant::now();
        runtimes[0].notify_resource_updated(URI);
        let mut got = Vec::with_capacity(usize::try_from(streams).unwrap_or(0));
        while (got.len() as u64) < streams {
            let at = tokio::time::timeout(Duration::from_secs(30), rx.recv())
                .await
                .unwrap_or_else(|_| panic!("round {round}: {} of {streams} delivered", got.len()))
                .unwrap_or_else(|| panic!("closed"));
            got.push(at.duration_since(published));
        }
        all.extend(got);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    all.sort();
    let at = |q: f64| all[((all.len() - 1) as f64 * q) as usize];
    println!(
        "{which}: publish on A -> {streams} streams over 3 instances, 5 rounds: p50 {:?}, p99 {:?}, max {:?}",
        at(0.5),
        at(0.99),
        at(1.0)
    );
}
