//! `snodo gateway --config FILE` at the wire: configuration errors name the file, line
//! and key; two configured backends — `snodo fixture --stdio` (started through `sh`,
//! which checks the configured environment and working directory) and an HTTP
//! `snodo fixture` — plus one from `--backend`, with namespace, allow, deny, rename and
//! a description override applied; `/healthz` reports each backend and goes 200 → 503
//! when the required HTTP backend is killed, and back to 200 when it returns, while an
//! optional backend that never comes up only makes it `degraded`; a killed stdio child
//! is started again; the proxied calls carry the backend's name in the log and in
//! `/metrics`.

#![cfg(feature = "client")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod gateway_support;

use std::io::{BufRead as _, BufReader};
use std::net::{SocketAddr, TcpListener};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use snodo_client::Client;
use snodo_testkit::http::send;
use snodo_testkit::process::Process;

use gateway_support::{addr_of, children, cmdline, tool_names};

const SNODO: &str = env!("CARGO_BIN_EXE_snodo");

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// An HTTP fixture on `port`; returns it once it listens.
fn http_fixture(port: u16) -> Process {
    let mut p = Process::spawn(
        Command::new(SNODO)
            .args(["fixture", "--addr", &format!("127.0.0.1:{port}")])
            .stdout(Stdio::piped())
            .stderr(Stdio::null()),
    );
    p.announced_url();
    p
}

/// The gateway's stderr, collected on a thread.
fn collect_stderr(p: &mut Process) -> Arc<Mutex<String>> {
    let text = Arc::new(Mutex::new(String::new()));
    let stderr = p.stderr.take().unwrap();
    let t = Arc::clone(&text);
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { return };
            let Ok(mut t) = t.lock() else { return };
            t.push_str(&line);
            t.push('\n');
        }
    });
    text
}

async fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    let r = send(
        addr,
        &format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"),
    )
    .await;
    (r.status, r.text())
}

async fn health(addr: SocketAddr) -> (u16, Value) {
    let (status, body) = get(addr, "/healthz").await;
    (status, serde_json::from_str(&body).unwrap())
}

fn backend<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["backends"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["name"] == name)
        .unwrap_or_else(|| panic!("no {name} in {report}"))
}

/// Polls `/healthz` until `done` holds (20 s at most); returns the last answer.
async fn health_until(addr: SocketAddr, done: impl Fn(u16, &Value) -> bool) -> (u16, Value) {
    let mut last = (0, Value::Null);
    for _ in 0..200 {
        last = health(addr).await;
        if done(last.0, &last.1) {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("/healthz never got there: {} {}", last.0, last.1);
}

/// The tools the gateway at `url` lists now (a connection of their own).
async fn listed(url: &str) -> Vec<String> {
    let c = Client::builder("gw-config-test", "1")
        .connect_http(url)
        .await
        .unwrap();
    let names = tool_names(&c).await;
    c.close().await;
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_configured_backends_with_health_and_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let workdir = dir.path().canonicalize().unwrap();
    let fixture_port = free_port();
    let mut remote = http_fixture(fixture_port);
    let dead_port = free_port();
    let metrics_port = free_port();
    // The child starts only with the configured environment and working directory.
    let script = format!(
        "test \"$GW_MARK\" = configured && test \"$(pwd -P)\" = '{}' && exec '{SNODO}' fixture --stdio",
        workdir.display()
    );
    let config = format!(
        r#"# The gateway's own settings.
[gateway]
ready_timeout_secs = 2

[[backend]]
name = "local"
command = "sh"
args = ["-c", {script}]
env = {{ GW_MARK = "configured" }}
cwd = {cwd}
namespace = "loc"
allow = ["echo", "test_simple_*"]
rename = {{ test_simple_text = "simple" }}
describe = {{ echo = "Echo, through the gateway" }}
restart = {{ backoff_min_secs = 0.1, backoff_max_secs = 0.5, check_interval_secs = 0.3 }}

[[backend]]
name = "remote"
url = "http://127.0.0.1:{fixture_port}/mcp"
allow = ["echo", "greet", "slow_*"]
deny = ["slow_*"]
restart = {{ backoff_min_secs = 0.1, backoff_max_secs = 0.5, check_interval_secs = 0.3 }}

[[backend.policy]]
tools = "echo"
timeout_secs = 5

[[backend]]
name = "optional"
url = "http://127.0.0.1:{dead_port}/mcp"
required = false
"#,
        script = json!(script),
        cwd = json!(workdir.display().to_string()),
    );
    let file = dir.path().join("gateway.toml");
    std::fs::write(&file, config).unwrap();
    let mut gw = Process::spawn(
        Command::new(SNODO)
            .args(["--metrics-addr", &format!("127.0.0.1:{metrics_port}")])
            .args(["gateway", "--addr", "127.0.0.1:0", "--config"])
            .arg(&file)
            .arg("--backend")
            .arg(format!(
                "extra=stdio:{SNODO} fixture --stdio --profile echo"
            ))
            .env("RUST_LOG", "info")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    let logs = collect_stderr(&mut gw);
    let url = gw.announced_url();
    let addr = addr_of(&url);

    // Namespace, allow, deny and rename applied; the flag's backend beside the file's.
    let mut names = listed(&url).await;
    names.sort();
    assert_eq!(
        names,
        [
            "extra_echo",
            "loc_echo",
            "remote_echo",
            "remote_greet",
            "simple"
        ],
        "{}",
        logs.lock().map(|l| l.clone()).unwrap_or_default()
    );
    let c = Client::builder("gw-config-test", "1")
        .connect_http(&url)
        .await
        .unwrap();
    let tools = c.list_tools().await.unwrap();
    let echo = tools.iter().find(|t| t.name == "loc_echo").unwrap();
    assert_eq!(
        echo.description.as_deref(),
        Some("Echo, through the gateway")
    );
    for (tool, args, want) in [
        ("loc_echo", json!({"text": "hi"}), "hi"),
        ("remote_echo", json!({"text": "there"}), "there"),
        ("extra_echo", json!({"text": "too"}), "too"),
        (
            "simple",
            json!({}),
            "This is a simple text response for testing.",
        ),
    ] {
        let r = c.call_tool(tool, args).await.unwrap();
        assert_eq!(r.text(), want, "{tool}");
    }

    // Every required backend up; the optional one down: 200, degraded.
    let (status, report) = health_until(addr, |_, r| {
        backend(r, "optional")["state"] == "down" || backend(r, "optional")["state"] == "starting"
    })
    .await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(report["status"], "degraded", "{report}");
    for name in ["local", "remote", "extra"] {
        let b = backend(&report, name);
        assert_eq!(b["state"], "up", "{report}");
        assert!(b["components"].as_u64().unwrap() >= 1, "{report}");
    }
    assert_eq!(backend(&report, "optional")["required"], false);
    // A fixed reason that names the backend: why it failed is in the log only.
    assert_eq!(
        backend(&report, "optional")["error"],
        "backend \"optional\" is unavailable (the gateway's log says why)",
        "{report}"
    );

    // The backend's name in the log and the series.
    let metrics = format!("127.0.0.1:{metrics_port}").parse().unwrap();
    let (_, text) = get(metrics, "/metrics").await;
    for want in [
        r#"snodo_backend_requests_total{backend="local",method="tools/call",outcome="ok"} 2"#,
        r#"snodo_backend_requests_total{backend="remote",method="tools/call",outcome="ok"} 1"#,
        r#"snodo_backend_up{backend="remote"} 1"#,
        r#"snodo_backend_up{backend="optional"} 0"#,
        r#"snodo_backend_request_duration_seconds_count{backend="extra",method="tools/call"} 1"#,
        r#"snodo_requests_total{transport="http",method="tools/call",name="remote_echo",outcome="ok"} 1"#,
    ] {
        assert!(text.contains(want), "{want} not in\n{text}");
    }
    // (The log is written by a thread of its own: wait for the line.)
    let mut found = None;
    for _ in 0..50 {
        let logged = logs.lock().map(|l| l.clone()).unwrap_or_default();
        found = logged
            .lines()
            .find(|l| l.contains("snodo::backend") && l.contains("name=\"test_simple_text\""))
            .map(str::to_owned);
        if found.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let line = found.unwrap_or_else(|| panic!("no backend line in\n{}", logs.lock().unwrap()));
    assert!(
        line.contains("backend=\"local\"") && line.contains("outcome=\"ok\""),
        "{line}"
    );

    // The required HTTP backend killed: 503, its tools gone; back: 200, back.
    drop(remote);
    let (_, report) = health_until(addr, |s, _| s == 503).await;
    assert_eq!(report["status"], "unavailable", "{report}");
    let state = backend(&report, "remote")["state"].clone();
    assert!(state == "restarting", "{report}");
    assert!(!listed(&url).await.contains(&"remote_echo".to_owned()));
    remote = http_fixture(fixture_port);
    let (_, report) = health_until(addr, |s, r| {
        s == 200 && backend(r, "remote")["state"] == "up"
    })
    .await;
    assert!(backend(&report, "remote")["outages"].as_u64().unwrap() >= 1);
    let r = c
        .call_tool("remote_echo", json!({"text": "back"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "back");

    // The stdio child killed: started again (with its environment and directory).
    let local_child = || {
        children(gw.id()).into_iter().find(|k| {
            let cmd = cmdline(*k);
            cmd.contains("fixture --stdio") && !cmd.contains("echo")
        })
    };
    let killed = local_child().expect("the local backend's child");
    Command::new("kill")
        .args(["-KILL", &killed.to_string()])
        .status()
        .unwrap();
    let mut answered = None;
    for _ in 0..100 {
        if let Ok(r) = c.call_tool("loc_echo", json!({"text": "again"})).await {
            answered = Some(r.text());
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(answered.as_deref(), Some("again"));
    let started = local_child().expect("a new child");
    assert_ne!(started, killed, "a new child answers");
    let (status, report) = health(addr).await;
    assert_eq!(
        (status, &backend(&report, "local")["state"]),
        (200, &json!("up"))
    );
    let (_, text) = get(metrics, "/metrics").await;
    assert!(
        text.lines().any(
            |l| l.starts_with(r#"snodo_backend_outages_total{backend="remote"}"#)
                && !l.ends_with(" 0")
        ),
        "{text}"
    );
    c.close().await;
    drop(remote);
}

#[test]
fn configuration_errors_name_the_file_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let run = |text: &str| {
        let file = dir.path().join("gw.toml");
        std::fs::write(&file, text).unwrap();
        let out = Command::new(SNODO)
            .args(["gateway", "--addr", "127.0.0.1:0", "--config"])
            .arg(&file)
            .output()
            .unwrap();
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        (file.display().to_string(), err)
    };
    let (file, err) = run("[[backend]]\nname = \"a\"\ncommand = \"x\"\ntimeout = 3\n");
    assert!(
        err.contains(&format!(
            "{file}:4:1: backend[0].timeout: unknown field `timeout`"
        )),
        "{err}"
    );
    let (file, err) = run(
        "[[backend]]\nname = \"a\"\nurl = \"http://x/mcp\"\nbearer_env = \"SNODO_GW_TEST_UNSET\"\n",
    );
    assert!(
        err.contains(&format!(
            "{file}:4:14: backend[0].bearer_env: the environment variable SNODO_GW_TEST_UNSET is not set"
        )),
        "{err}"
    );
    let (file, err) = run("[gateway]\naddr = \"nowhere\"\n");
    assert!(err.contains(&format!("{file}:2:8: gateway.addr:")), "{err}");
    let (file, err) = run(
        "[[backend]]\nname = \"a\"\ncommand = \"x\"\n[[backend]]\nname = \"a\"\ncommand = \"y\"\n",
    );
    assert!(
        err.contains("two backends are named \"a\""),
        "{file}: {err}"
    );
    let out = Command::new(SNODO)
        .args(["gateway", "--config", "/nonexistent/gw.toml"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("/nonexistent/gw.toml"),
        "{err}"
    );
}
