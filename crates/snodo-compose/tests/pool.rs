//! A pool of warm stdio children per backend: concurrent calls multiplexed over each
//! child and spread over the pool, one child's death leaving the others serving, and
//! throughput through `@modelcontextprotocol/server-everything` with 1 and 4 children
//! (installed by `npm ci` in interop/compose, or SERVER_EVERYTHING=path/to/index.js).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod external;
mod support;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use serde_json::json;
use snodo::Runtime;
use snodo_client::Client;
use snodo_compose::{ChildState, McpSource, Mount, PoolHealth, Status, Transforms};

const T: Duration = Duration::from_secs(20);

fn script() -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/tests/scripts/child.py").to_owned()
}

/// Waits until every child of the pool serves.
async fn all_ready(health: &PoolHealth) {
    let ready = |s: &[ChildState]| s.iter().all(|c| matches!(c, ChildState::Ready { .. }));
    let st = health.wait_for(T, ready).await;
    assert!(ready(&st), "{st:?}");
}

async fn mounted(src: McpSource) -> (Runtime, Mount, Client) {
    let front = support::front().build().unwrap();
    let m = Mount::new(&front, src, Transforms::new().namespace("p"));
    let st = m.ready(T).await;
    assert!(matches!(st, Status::Up { .. }), "{st:?}");
    let c = support::client(&front, "2025-06-18").await;
    (front, m, c)
}

/// `n` concurrent calls of `tool`; the texts of their results and the time taken.
async fn burst(
    c: &Client,
    n: usize,
    tool: &str,
    args: serde_json::Value,
) -> (Vec<String>, Duration) {
    let t0 = Instant::now();
    let calls: Vec<_> = (0..n)
        .map(|_| {
            let (c, tool, args) = (c.clone(), tool.to_owned(), args.clone());
            tokio::spawn(async move { c.call_tool(&tool, args).await.map(|r| r.text()) })
        })
        .collect();
    let mut out = Vec::new();
    for h in calls {
        out.push(h.await.unwrap().unwrap());
    }
    (out, t0.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_calls_are_multiplexed_over_one_child() {
    let src = McpSource::stdio("p", "python3", [script(), "ok".to_owned()]);
    let (_front, _m, c) = mounted(src).await;
    let (pids, took) = burst(&c, 16, "p_sleep", json!({"ms": 400})).await;
    assert_eq!(pids.iter().collect::<HashSet<_>>().len(), 1, "{pids:?}");
    // One at a time would take 6.4 s.
    assert!(took < Duration::from_secs(3), "{took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_spread_over_the_pool_by_fewest_in_flight() {
    let src = McpSource::stdio("p", "python3", [script(), "ok".to_owned()]).pool(4);
    let health = src.health();
    let (_front, _m, c) = mounted(src).await;
    all_ready(&health).await;
    let (pids, took) = burst(&c, 16, "p_sleep", json!({"ms": 400})).await;
    let distinct = pids.iter().collect::<HashSet<_>>();
    assert_eq!(distinct.len(), 4, "{pids:?}");
    for p in &distinct {
        let n = pids.iter().filter(|x| x == p).count();
        assert!((3..=5).contains(&n), "{pids:?}");
    }
    assert!(took < Duration::from_secs(3), "{took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_child_down_the_others_serve_and_it_comes_back() {
    let src = McpSource::stdio("p", "python3", [script(), "ok".to_owned()]).pool(2);
    let health = src.health();
    let (_front, m, c) = mounted(src).await;
    all_ready(&health).await;
    let err = c
        .call_tool("p_die", json!({}))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("backend \"p\" is unavailable"), "{err}");
    // Calls go on, to the child that is left (none fails while the other restarts).
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_millis(300) {
        let r = c.call_tool("p_echo", json!({"text": "on"})).await.unwrap();
        assert_eq!(r.text(), "on");
    }
    all_ready(&health).await;
    assert!(health.restarts() >= 1);
    assert!(matches!(m.status(), Status::Up { .. }), "{:?}", m.status());
}

/// Calls per second through a pool of `size` children, 16 callers at once for `secs`.
async fn rate(src: McpSource, secs: f64, tool: &str, args: serde_json::Value) -> f64 {
    let health = src.health();
    let (_front, _m, c) = mounted(src).await;
    all_ready(&health).await;
    // Warm up.
    burst(&c, 16, tool, args.clone()).await;
    let t0 = Instant::now();
    let workers: Vec<_> = (0..16)
        .map(|_| {
            let (c, tool, args) = (c.clone(), tool.to_owned(), args.clone());
            tokio::spawn(async move {
                let mut n = 0u64;
                while t0.elapsed().as_secs_f64() < secs {
                    let r = c.call_tool(&tool, args.clone()).await.unwrap();
                    assert!(!r.is_error, "{}", r.text());
                    n += 1;
                }
                n
            })
        })
        .collect();
    let mut total = 0;
    for w in workers {
        total += w.await.unwrap();
    }
    #[allow(clippy::cast_precision_loss)]
    let rate = total as f64 / t0.elapsed().as_secs_f64();
    rate
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cpu_bound_child_under_16_concurrent_calls_with_1_and_4_children() {
    let spin = |n| McpSource::stdio("p", "python3", [script(), "ok".to_owned()]).pool(n);
    let args = json!({"ms": 5});
    let one = rate(spin(1), 2.0, "p_spin", args.clone()).await;
    let four = rate(spin(4), 2.0, "p_spin", args).await;
    println!(
        "child.py spin 5 ms of CPU, 16 concurrent callers: pool 1: {one:.0} calls/s, pool 4: {four:.0} calls/s ({:.2}x)",
        four / one
    );
    // One child does at most 200 a second.
    assert!(one < 210.0, "{one}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_everything_under_16_concurrent_calls_with_1_and_4_children() {
    let Some(ev) = external::server_everything() else {
        return;
    };
    let ev =
        |n| McpSource::stdio("p", "node", [ev.display().to_string(), "stdio".to_owned()]).pool(n);
    let args = json!({"message": "hi"});
    let one = rate(ev(1), 3.0, "p_echo", args.clone()).await;
    let four = rate(ev(4), 3.0, "p_echo", args).await;
    println!(
        "server-everything echo, 16 concurrent callers: pool 1: {one:.0} calls/s, pool 4: {four:.0} calls/s ({:.2}x)",
        four / one
    );
    assert!(one > 0.0 && four > 0.0);
}
