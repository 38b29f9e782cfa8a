//! `snodo gateway` at the wire (HTTP front, the binary, real child processes) with stdio
//! backends that misbehave (issue 33's bad-input cases of the stdio side): garbage lines
//! from a child, a child that floods stdout or stderr, a child that stalls (never
//! answers a call), a child that dies mid-call, a child that dies during `initialize`
//! and one that never answers it. Each is answered with a clear error naming the
//! backend, within a bound (nothing hangs), the other backends keep serving, and after
//! SIGTERM no child is left. The children are `crates/snodo-compose/tests/scripts/child.py`
//! (standard-library Python), which misbehaves on demand; the library-level twins of
//! these tests are in crates/snodo-compose/tests/child.rs.

#![cfg(feature = "client")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod gateway_support;

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use snodo_client::{Client, Protocol};
use snodo_testkit::http::send;
use snodo_testkit::process::Process;

use gateway_support::{addr_of, tool_names};

const SNODO: &str = env!("CARGO_BIN_EXE_snodo");

fn script() -> String {
    concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../snodo-compose/tests/scripts/child.py"
    )
    .to_owned()
}

/// A `[[backend]]` running child.py in `mode`, each start's pid appended to
/// `dir/NAME.starts`, restarted quickly; `extra` adds keys.
fn backend(dir: &Path, name: &str, mode: &str, extra: &str) -> String {
    let starts = dir.join(format!("{name}.starts"));
    format!(
        r#"
[[backend]]
name = "{name}"
command = "python3"
args = [{script}, "{mode}"]
env = {{ STARTS_FILE = {starts} }}
restart = {{ backoff_min_secs = 0.1, backoff_max_secs = 0.5, start_timeout_secs = 5, check_interval_secs = 0.5 }}
{extra}
"#,
        script = json!(script()),
        starts = json!(starts.display().to_string()),
    )
}

/// The gateway on a free port with `config`; its URL and its log (stderr, collected).
fn gateway(dir: &Path, config: &str) -> (Process, String, Arc<Mutex<String>>) {
    let file = dir.join("gateway.toml");
    std::fs::write(&file, config).unwrap();
    let mut gw = Process::spawn(
        Command::new(SNODO)
            .args(["gateway", "--addr", "127.0.0.1:0", "--config"])
            .arg(&file)
            .env("RUST_LOG", "info")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    let log = Arc::new(Mutex::new(String::new()));
    let stderr = gw.stderr.take().unwrap();
    let l = Arc::clone(&log);
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { return };
            let Ok(mut l) = l.lock() else { return };
            l.push_str(&line);
            l.push('\n');
        }
    });
    let url = gw.announced_url();
    (gw, url, log)
}

async fn client(url: &str) -> Client {
    Client::builder("gw-faults", "1")
        .protocol(Protocol::Pinned("2025-06-18".into()))
        .connect_http(url)
        .await
        .unwrap()
}

async fn call(c: &Client, tool: &str, args: Value) -> Result<String, String> {
    c.call_tool(tool, args)
        .await
        .map(|r| r.text())
        .map_err(|e| e.to_string())
}

/// Retries `tool` until the restarted backend answers (10 s at most).
async fn eventually(c: &Client, tool: &str) -> String {
    let mut last = String::new();
    for _ in 0..200 {
        match call(c, tool, json!({"text": "back"})).await {
            Ok(v) => return v,
            Err(e) => last = e,
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{tool} never answered again: {last}");
}

fn pids_in(path: &Path) -> Vec<u32> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        !s.rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

/// SIGTERM to the gateway: it exits within 10 s, and every child it ever started
/// (the `*.starts` files in `dir`) is gone.
async fn sigterm_leaves_no_child(mut gw: Process, dir: &Path) {
    let mut pids: Vec<u32> = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let p: PathBuf = entry.unwrap().path();
        if p.extension().is_some_and(|e| e == "starts") {
            pids.extend(pids_in(&p));
        }
    }
    assert!(!pids.is_empty(), "no child was started");
    let status = Command::new("kill")
        .arg("-TERM")
        .arg(gw.id().to_string())
        .status()
        .unwrap();
    assert!(status.success());
    let mut exited = None;
    for _ in 0..100 {
        exited = gw.try_wait().unwrap();
        if exited.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(exited.is_some(), "the gateway did not exit on SIGTERM");
    for _ in 0..100 {
        if !pids.iter().any(|p| alive(*p)) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let left: Vec<u32> = pids.into_iter().filter(|p| alive(*p)).collect();
    panic!("children {left:?} outlived the gateway");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn misbehaving_children_get_errors_naming_them_and_the_others_serve() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let config = [
        "[gateway]\nready_timeout_secs = 20\n".to_owned(),
        backend(d, "good", "ok", ""),
        backend(d, "junk", "ok", ""),
        backend(d, "hang", "ok", "call_timeout_secs = 0.5"),
        backend(d, "dies", "ok", ""),
        backend(d, "loud", "stderr", ""),
    ]
    .concat();
    let (gw, url, log) = gateway(d, &config);
    let c = client(&url).await;
    let names = tool_names(&c).await;
    for b in ["good", "junk", "hang", "dies", "loud"] {
        assert!(names.contains(&format!("{b}_echo")), "{b}: {names:?}");
    }

    // Garbage lines before the answer: skipped, the answer arrives.
    for _ in 0..3 {
        assert_eq!(
            call(&c, "junk_garbage", json!({})).await.unwrap(),
            "after garbage"
        );
    }
    // A child that floods stdout with garbage and never answers: dropped, the call
    // fails with the reason, the child is started again.
    let t0 = Instant::now();
    let err = call(&c, "junk_flood", json!({})).await.unwrap_err();
    assert!(err.contains("backend \"junk\" is unavailable"), "{err}");
    assert!(
        err.contains("lines in a row that are not JSON-RPC"),
        "{err}"
    );
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
    assert_eq!(eventually(&c, "junk_echo").await, "back");
    assert!(pids_in(&d.join("junk.starts")).len() >= 2, "not restarted");

    // A call the child never answers: the configured call timeout, naming the
    // backend; the child stays and serves the next call.
    let t0 = Instant::now();
    let err = call(&c, "hang_sleep", json!({"ms": 30_000}))
        .await
        .unwrap_err();
    assert!(err.contains("backend \"hang\""), "{err}");
    assert!(err.contains("timed out"), "{err}");
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    assert_eq!(
        call(&c, "hang_echo", json!({"text": "still"}))
            .await
            .unwrap(),
        "still"
    );
    assert_eq!(pids_in(&d.join("hang.starts")).len(), 1, "hang restarted");

    // A child that exits mid-call: the call that killed it and the one in flight beside
    // it fail at once, naming the backend and its exit; it comes back.
    let c2 = client(&url).await;
    let slow = tokio::spawn(async move { call(&c2, "dies_sleep", json!({"ms": 20_000})).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let t0 = Instant::now();
    let err = call(&c, "dies_die", json!({})).await.unwrap_err();
    assert!(err.contains("backend \"dies\" is unavailable"), "{err}");
    assert!(err.contains("status 3"), "{err}");
    // What the child wrote on stderr stays in the gateway's log (it may hold paths or
    // secrets): the caller is told the exit status only.
    assert!(!err.contains("dying on request"), "{err}");
    let err = tokio::time::timeout(Duration::from_secs(5), slow)
        .await
        .expect("the call in flight waited")
        .unwrap()
        .unwrap_err();
    assert!(err.contains("backend \"dies\""), "{err}");
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    assert_eq!(eventually(&c, "dies_echo").await, "back");

    // The other backend served throughout.
    assert_eq!(
        call(&c, "good_echo", json!({"text": "hi"})).await.unwrap(),
        "hi"
    );

    // A child that floods stderr (100,000 lines, one of 10 KiB) at start: it serves,
    // and its stderr reaches the gateway's log capped, each line naming it.
    assert_eq!(
        call(&c, "loud_echo", json!({"text": "ok"})).await.unwrap(),
        "ok"
    );
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let text = log.lock().unwrap().clone();
    assert!(
        text.lines()
            .any(|l| l.contains("dying on request") && l.contains("backend=dies")),
        "the dying child's stderr is not in the log under its name"
    );
    let noise: Vec<&str> = text.lines().filter(|l| l.contains("noise")).collect();
    assert!(!noise.is_empty(), "nothing of loud's stderr forwarded");
    assert!(noise.len() < 1000, "{} of 100000 lines", noise.len());
    assert!(
        noise.iter().all(|l| l.contains("backend=loud")),
        "{}",
        noise[0]
    );
    assert!(text.contains("lines dropped"), "no drop count in the log");
    c.close().await;
    sigterm_leaves_no_child(gw, d).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn children_that_fail_initialize_are_reported_by_name_and_retried_with_backoff() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let config = [
        "[gateway]\nready_timeout_secs = 3\n".to_owned(),
        backend(d, "good", "ok", ""),
        backend(d, "crash", "die-init", ""),
        // A start may take 1 s: the child that never answers is let go after that.
        backend(d, "mute", "mute-init", "")
            .replace("start_timeout_secs = 5", "start_timeout_secs = 1"),
    ]
    .concat();
    let t0 = Instant::now();
    let (gw, url, log) = gateway(d, &config);
    // The gateway serves after its ready timeout, without the two.
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
    let c = client(&url).await;
    let names = tool_names(&c).await;
    assert!(names.contains(&"good_echo".to_owned()), "{names:?}");
    assert!(
        names
            .iter()
            .all(|n| !n.starts_with("crash_") && !n.starts_with("mute_")),
        "{names:?}"
    );
    assert_eq!(
        call(&c, "good_echo", json!({"text": "x"})).await.unwrap(),
        "x"
    );
    // A call to one of their tools: not served (the front never listed it).
    let err = call(&c, "crash_echo", json!({})).await.unwrap_err();
    assert!(err.contains("crash_echo"), "{err}");

    // /healthz: 503, each named with its reason.
    let r = send(
        addr_of(&url),
        "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(r.status, 503, "{}", r.text());
    let report: Value = serde_json::from_str(&r.text()).unwrap();
    let of = |name: &str| {
        report["backends"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no {name} in {report}"))
    };
    assert_eq!(of("good")["state"], "up", "{report}");
    let crash = of("crash");
    assert_ne!(crash["state"], "up", "{report}");
    let why = crash["error"].as_str().unwrap_or_default();
    assert!(why.contains("backend \"crash\" is unavailable"), "{why}");
    // /healthz is unauthenticated: a fixed sentence, the details in the log (below).
    assert!(!why.contains("fatal"), "{why}");
    let mute = of("mute");
    assert_ne!(mute["state"], "up", "{report}");
    let why = mute["error"].as_str().unwrap_or_default();
    assert!(why.contains("backend \"mute\" is unavailable"), "{why}");
    assert!(
        text_of(&log).contains("no answer to initialize within 1s"),
        "the log says why mute is down"
    );
    // The crashing child's stderr is in the log under its name.
    let text = log.lock().unwrap().clone();
    assert!(
        text.lines()
            .any(|l| l.contains("fatal: no configuration found") && l.contains("backend=crash")),
        "{text}"
    );
    // Retried with backoff (0.1 s doubling to 0.5 s): started again, but not in a storm.
    let starts = d.join("crash.starts");
    for _ in 0..100 {
        if pids_in(&starts).len() >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let n = pids_in(&starts).len();
    let elapsed = t0.elapsed().as_secs_f64();
    assert!(
        n >= 2 && (n as f64) < elapsed / 0.1 + 2.0,
        "{n} starts in {elapsed:.1} s"
    );
    c.close().await;
    sigterm_leaves_no_child(gw, d).await;
}

/// What the gateway logged so far.
fn text_of(log: &Mutex<String>) -> String {
    log.lock().map(|t| t.clone()).unwrap_or_default()
}
