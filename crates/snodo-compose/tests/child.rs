//! Stdio backends that misbehave (`tests/scripts/child.py`, real processes on real
//! pipes), mounted in a front runtime: each case gets a clear error naming the backend,
//! the front keeps serving the other backends, and no process is left behind.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use snodo::Runtime;
use snodo_client::Client;
use snodo_compose::{
    ChildState, McpSource, Mount, MountOptions, RestartPolicy, Status, Transforms,
};

const T: Duration = Duration::from_secs(15);

fn script() -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/tests/scripts/child.py").to_owned()
}

fn kid(name: &str, mode: &str) -> McpSource {
    McpSource::stdio(name, "python3", [script(), mode.to_owned()]).restart(RestartPolicy {
        start_timeout: Duration::from_secs(5),
        ..RestartPolicy::default()
    })
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("snodo-child-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    let _ = std::fs::remove_file(&p);
    p
}

/// A front with `sources` mounted under their names; waits for each first listing.
async fn front_with(sources: Vec<McpSource>) -> (Runtime, Vec<Mount>) {
    let front = support::front().build().unwrap();
    let mut mounts = Vec::new();
    for s in sources {
        let ns = snodo_compose::Source::name(&s).to_owned();
        let m = Mount::new(&front, s, Transforms::new().namespace(&ns));
        m.ready(T).await;
        mounts.push(m);
    }
    (front, mounts)
}

async fn call(c: &Client, tool: &str, args: serde_json::Value) -> Result<String, String> {
    c.call_tool(tool, args)
        .await
        .map(|r| r.text())
        .map_err(|e| e.to_string())
}

fn alive(pid: u32) -> bool {
    // A zombie is dead too (its parent has not reaped it yet).
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        !s.rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

async fn gone(pids: &[u32]) -> bool {
    for _ in 0..300 {
        if !pids.iter().any(|p| alive(*p)) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    false
}

fn pids_in(path: &Path) -> Vec<u32> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

async fn wait_file(path: &Path) -> Vec<u32> {
    for _ in 0..500 {
        let p = pids_in(path);
        if !p.is_empty() {
            return p;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{} never written", path.display());
}

#[tokio::test]
async fn a_child_that_exits_mid_call_fails_its_calls_at_once_and_comes_back() {
    let src = kid("kid", "ok");
    let health = src.health();
    let (front, mounts) = front_with(vec![src, kid("other", "ok")]).await;
    let c = support::client(&front, "2025-06-18").await;
    let first = call(&c, "kid_pid", json!({})).await.unwrap();
    // A slow call in flight on the child, then one that kills it.
    let c2 = c.clone();
    let slow = tokio::spawn(async move { call(&c2, "kid_sleep", json!({"ms": 20_000})).await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let t0 = Instant::now();
    let err = call(&c, "kid_die", json!({})).await.unwrap_err();
    assert!(err.contains("backend \"kid\" is unavailable"), "{err}");
    assert!(err.contains("status 3"), "{err}");
    // The child's stderr goes to the log, not to callers.
    assert!(!err.contains("dying on request"), "{err}");
    let err = tokio::time::timeout(Duration::from_secs(3), slow)
        .await
        .expect("the call in flight waited")
        .unwrap()
        .unwrap_err();
    assert!(err.contains("backend \"kid\""), "{err}");
    // The other backend serves throughout.
    assert_eq!(
        call(&c, "other_echo", json!({"text": "hi"})).await.unwrap(),
        "hi"
    );
    // Restarted, with a new process.
    let st = health
        .wait_for(T, |s| matches!(s, [ChildState::Ready { .. }]))
        .await;
    let restart = t0.elapsed();
    assert!(matches!(st[..], [ChildState::Ready { .. }]), "{st:?}");
    assert!(health.restarts() >= 1);
    println!("restart (exit seen → initialized again): {restart:?}");
    mounts[0]
        .wait_for(T, |s| matches!(s, Status::Up { .. }))
        .await;
    let mut again = Err(String::new());
    for _ in 0..100 {
        again = call(&c, "kid_pid", json!({})).await;
        if again.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let again = again.unwrap();
    assert_ne!(first, again, "a new child");
}

#[tokio::test]
async fn its_own_children_die_with_it_and_with_the_source() {
    let file = tmp("grandchild-exit");
    let src = kid("gc", "grandchild").env("GRANDCHILD_FILE", file.display().to_string());
    let (front, mounts) = front_with(vec![src]).await;
    let c = support::client(&front, "2025-06-18").await;
    let grandchild = wait_file(&file).await;
    assert!(alive(grandchild[0]));
    // The child exits: its group (the grandchild) goes too.
    let _ = std::fs::remove_file(&file);
    call(&c, "gc_die", json!({})).await.unwrap_err();
    assert!(
        gone(&grandchild).await,
        "grandchild {grandchild:?} outlived its parent"
    );
    // The restarted child's grandchild goes when the source is dropped.
    let grandchild = wait_file(&file).await;
    let child: u32 = eventually(&c, "gc_pid").await.parse().unwrap();
    drop(mounts);
    assert!(
        gone(&[child, grandchild[0]]).await,
        "child {child} or grandchild {grandchild:?} outlived the source"
    );
}

#[tokio::test]
async fn a_child_that_dies_during_initialize_is_reported_and_the_others_serve() {
    let starts = tmp("die-init-starts");
    let bad = kid("bad", "die-init").env("STARTS_FILE", starts.display().to_string());
    let (front, mounts) = front_with(vec![bad, kid("good", "ok")]).await;
    let st = mounts[0].status();
    let (Status::Restarting(why) | Status::Down(why)) = &st else {
        panic!("{st:?}")
    };
    assert!(why.contains("backend \"bad\" is unavailable"), "{why}");
    assert!(why.contains("status 2"), "{why}");
    assert!(!why.contains("fatal: no configuration found"), "{why}");
    let c = support::client(&front, "2025-06-18").await;
    assert_eq!(
        call(&c, "good_echo", json!({"text": "x"})).await.unwrap(),
        "x"
    );
    let names = support::tool_names(&c).await;
    assert!(names.iter().all(|n| !n.starts_with("bad_")), "{names:?}");
    // Restarted with backoff: a few starts, not a storm.
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let n = pids_in(&starts).len();
    assert!((2..=6).contains(&n), "{n} starts in about a second");
    drop(mounts);
    assert!(gone(&pids_in(&starts)).await);
}

#[tokio::test]
async fn a_child_that_never_answers_initialize_times_out() {
    let starts = tmp("mute-starts");
    let mute = McpSource::stdio("mute", "python3", [script(), "mute-init".to_owned()])
        .env("STARTS_FILE", starts.display().to_string())
        .restart(RestartPolicy {
            start_timeout: Duration::from_millis(1500),
            ..RestartPolicy::default()
        });
    let (_front, mounts) = front_with(vec![mute]).await;
    let st = mounts[0].status();
    let (Status::Restarting(why) | Status::Down(why)) = &st else {
        panic!("{st:?}")
    };
    assert!(why.contains("backend \"mute\" is unavailable"), "{why}");
    assert!(why.contains("no answer to initialize within 1.5s"), "{why}");
    // The child that did not answer was let go.
    let first = wait_file(&starts).await[0];
    assert!(gone(&[first]).await, "{first} still runs");
    drop(mounts);
    assert!(gone(&pids_in(&starts)).await);
}

#[tokio::test]
async fn garbage_lines_are_skipped_and_the_answer_arrives() {
    let (front, _mounts) = front_with(vec![kid("g", "ok")]).await;
    let c = support::client(&front, "2025-11-25").await;
    for _ in 0..3 {
        assert_eq!(
            call(&c, "g_garbage", json!({})).await.unwrap(),
            "after garbage"
        );
    }
}

/// Retries `tool` until the restarted backend answers.
async fn eventually(c: &Client, tool: &str) -> String {
    for _ in 0..200 {
        if let Ok(v) = call(c, tool, json!({"text": "back"})).await {
            return v;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{tool} never answered again");
}

#[tokio::test]
async fn an_over_long_line_breaks_the_connection_with_a_clear_error() {
    let (front, _mounts) = front_with(vec![kid("l", "ok")]).await;
    let c = support::client(&front, "2025-06-18").await;
    let err = call(&c, "l_long", json!({})).await.unwrap_err();
    assert!(err.contains("backend \"l\" is unavailable"), "{err}");
    assert!(err.contains("longer than 16 MiB"), "{err}");
    assert_eq!(eventually(&c, "l_echo").await, "back");
}

#[tokio::test]
async fn a_child_that_floods_stdout_with_garbage_is_dropped() {
    let (front, _mounts) = front_with(vec![kid("f", "ok")]).await;
    let c = support::client(&front, "2025-06-18").await;
    let t0 = Instant::now();
    let err = call(&c, "f_flood", json!({})).await.unwrap_err();
    assert!(err.contains("backend \"f\" is unavailable"), "{err}");
    assert!(
        err.contains("lines in a row that are not JSON-RPC"),
        "{err}"
    );
    assert!(t0.elapsed() < Duration::from_secs(10));
    assert_eq!(eventually(&c, "f_echo").await, "back");
}

#[tokio::test]
async fn a_child_that_stops_reading_gets_a_write_timeout_not_unbounded_buffering() {
    let src = kid("s", "ok").write_timeout(Duration::from_millis(500));
    let (front, _mounts) = front_with(vec![src]).await;
    let c = support::client(&front, "2025-06-18").await;
    assert_eq!(call(&c, "s_stall", json!({})).await.unwrap(), "stalling");
    // More than a pipe holds: the write stalls, then the connection is dropped.
    let big = "x".repeat(1 << 20);
    let t0 = Instant::now();
    let mut calls = Vec::new();
    for _ in 0..4 {
        let (c, big) = (c.clone(), big.clone());
        calls.push(tokio::spawn(async move {
            call(&c, "s_echo", json!({"text": big})).await
        }));
    }
    for h in calls {
        let err = h.await.unwrap().unwrap_err();
        assert!(err.contains("backend \"s\" is unavailable"), "{err}");
    }
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    assert_eq!(eventually(&c, "s_echo").await, "back");
}

/// Collects what the `fmt` subscriber writes.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn a_flooding_stderr_is_forwarded_capped_with_the_backend_name() {
    let log = Captured::default();
    let w = log.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || w.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::INFO)
        .finish();
    // This test's thread only (the runtime is current-thread).
    let _g = tracing::subscriber::set_default(subscriber);
    let (front, _mounts) = front_with(vec![kid("loud", "stderr")]).await;
    let c = support::client(&front, "2025-06-18").await;
    assert_eq!(
        call(&c, "loud_echo", json!({"text": "ok"})).await.unwrap(),
        "ok"
    );
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let text = String::from_utf8_lossy(&log.0.lock().unwrap()).into_owned();
    let noise: Vec<&str> = text.lines().filter(|l| l.contains("noise")).collect();
    assert!(!noise.is_empty(), "nothing forwarded");
    assert!(
        noise.len() < 1000,
        "{} of 100000 lines forwarded",
        noise.len()
    );
    assert!(
        noise.iter().all(|l| l.contains("backend=loud")),
        "{}",
        noise[0]
    );
    assert!(text.contains("lines dropped"), "no drop count in the log");
    assert!(
        text.contains("bad \u{FFFD} utf8"),
        "a line that is not UTF-8 is not forwarded lossily"
    );
    let long = text
        .lines()
        .find(|l| l.contains("xxxx"))
        .expect("the long line");
    assert!(long.contains("cut=true"), "{long}");
    assert!(long.len() < 4096 + 300, "{}", long.len());
}

/// In a process of its own (this test binary again, with `SNODO_CHILD_GATEWAY` set):
/// mounts a backend with a grandchild, then waits for SIGTERM and unmounts, as the
/// gateway does.
async fn gateway_process(file: String) {
    let mut term =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).unwrap();
    let src = kid("gc", "grandchild").env("GRANDCHILD_FILE", file);
    let (_front, mounts) = front_with(vec![src]).await;
    assert!(matches!(mounts[0].status(), Status::Up { .. }));
    term.recv().await;
    drop(mounts);
}

/// The gateway process, killed if the test fails before it ends.
struct Gateway(std::process::Child);

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn sigterm_of_the_gateway_leaves_no_process_behind() {
    // The same test, run again in a process of its own: the gateway's role.
    if let Ok(file) = std::env::var("SNODO_CHILD_GATEWAY") {
        gateway_process(file).await;
        return;
    }
    let file = tmp("gateway-grandchild");
    let starts = tmp("gateway-starts");
    let gw = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "sigterm_of_the_gateway_leaves_no_process_behind",
            "--nocapture",
        ])
        .env("SNODO_CHILD_GATEWAY", &file)
        .env("STARTS_FILE", &starts)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut gw = Gateway(gw);
    let grandchild = wait_file(&file).await;
    let child = wait_file(&starts).await;
    assert!(alive(grandchild[0]) && alive(child[0]));
    let pid = rustix::process::Pid::from_raw(i32::try_from(gw.0.id()).unwrap()).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let status = tokio::task::spawn_blocking(move || {
        let status = gw.0.wait();
        (gw, status)
    })
    .await
    .unwrap()
    .1;
    // It ended (a hang would stop here); what it left behind is checked below.
    assert!(status.is_ok(), "{status:?}");
    assert!(
        gone(&[child[0], grandchild[0]]).await,
        "child {child:?} or grandchild {grandchild:?} outlived the gateway"
    );
    let _ = std::fs::remove_file(&file);
    let _ = std::fs::remove_file(&starts);
}

#[tokio::test]
async fn a_call_the_child_never_answers_times_out_naming_it_and_the_child_stays() {
    let src = kid("h", "ok").timeout(Duration::from_millis(300));
    let health = src.health();
    let (front, _mounts) = front_with(vec![src]).await;
    let c = support::client(&front, "2025-06-18").await;
    let t0 = Instant::now();
    let err = call(&c, "h_sleep", json!({"ms": 10_000}))
        .await
        .unwrap_err();
    assert!(err.contains("backend \"h\""), "{err}");
    assert!(err.contains("timed out"), "{err}");
    assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
    // The connection is fine: no restart, the next call is served at once.
    assert_eq!(
        call(&c, "h_echo", json!({"text": "still"})).await.unwrap(),
        "still"
    );
    assert_eq!(health.restarts(), 0);
}

#[tokio::test]
async fn a_child_that_answers_nothing_after_initialize_is_down_and_started_again() {
    let starts = tmp("mute-starts");
    let src = McpSource::stdio("mute", "python3", [script(), "mute-after-init".to_owned()])
        .restart(RestartPolicy {
            start_timeout: Duration::from_secs(1),
            min_backoff: Duration::from_millis(50),
            ..RestartPolicy::default()
        })
        .env("STARTS_FILE", starts.display().to_string());
    let front = support::front().build().unwrap();
    let options = MountOptions {
        check_timeout: Duration::from_secs(1),
        min_backoff: Duration::from_millis(50),
        max_backoff: Duration::from_millis(200),
        ..MountOptions::default()
    };
    let m = Mount::with_options(
        &front,
        Arc::new(src),
        Transforms::new().namespace("mute"),
        options,
    );
    // Not Connecting for ever: its listing gets no answer, so it is down…
    let st = m.ready(T).await;
    assert!(
        matches!(&st, Status::Down(why) | Status::Restarting(why) if why.contains("no answer")),
        "{st:?}"
    );
    // …and the wedged child is started again.
    for _ in 0..500 {
        if pids_in(&starts).len() >= 2 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!(
        "the wedged child was not started again: {:?}",
        pids_in(&starts)
    );
}
