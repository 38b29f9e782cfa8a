//! `snodo gateway` at the wire with a real stdio server nobody here wrote:
//! `@modelcontextprotocol/server-everything` (installed by `npm ci` in interop/compose,
//! or SERVER_EVERYTHING=path/to/dist/index.js), unprefixed after `--` and namespaced
//! with `--backend`, driven by snodo-client on every revision; SIGTERM stops the
//! gateway and its children; `serve`'s OAuth, task-store and bus flags on the gateway; a
//! 2026-07-28-only gateway relays resource updates and a backend's task tool.

#![cfg(feature = "client")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod gateway_support;

use std::io::{BufRead as _, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use futures_util::StreamExt as _;
use serde_json::json;
use snodo_client::{Client, Protocol};

use gateway_support::{addr_of, children, tool_names};

fn server_everything() -> Option<PathBuf> {
    let path = std::env::var_os("SERVER_EVERYTHING").map_or_else(
        || {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../../interop/compose/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
        },
        PathBuf::from,
    );
    if path.exists() {
        return Some(path);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "server-everything not found at {} (cd interop/compose && npm ci)",
        path.display()
    );
    eprintln!("skipped: server-everything not installed (cd interop/compose && npm ci)");
    None
}

struct Gateway(Child);

impl Drop for Gateway {
    /// SIGTERM first, so the gateway reaps its children (a SIGKILLed gateway cannot:
    /// they are in process groups of their own, and a backend that keeps timers, as
    /// server-everything with a subscription does, outlives its closed stdin); SIGKILL
    /// after 5 s.
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status();
        for _ in 0..50 {
            if matches!(self.0.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the gateway on a free port; returns it and its URL.
fn start(args: &[String]) -> (Gateway, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_snodo"))
        .arg("gateway")
        .arg("--addr")
        .arg("127.0.0.1:0")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let gw = Gateway(child);
    // The banner (after the OAuth line, with --oauth-issuer).
    let mut stdout = BufReader::new(stdout);
    let mut line = String::new();
    while !line.starts_with("snodo gateway:") {
        line.clear();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "no banner");
    }
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no URL in {line:?}"))
        .to_owned();
    (gw, url)
}

fn alive(pid: u32) -> bool {
    PathBuf::from(format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| s.contains(") Z "))
}

/// Whether `done` holds within 10 s (polled every 100 ms).
async fn eventually(mut done: impl FnMut() -> bool) -> bool {
    for _ in 0..100 {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdio_server_unprefixed_and_a_backend_namespaced() {
    let Some(ev) = server_everything() else {
        return;
    };
    let ev = ev.display().to_string();
    let (mut gw, url) = start(&[
        "--backend".into(),
        format!("ev=stdio:node {ev} stdio"),
        "--".into(),
        "node".into(),
        ev.clone(),
        "stdio".into(),
    ]);
    for v in ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"] {
        let c = Client::builder("gw-test", "1")
            .protocol(Protocol::Pinned(v.into()))
            .connect_http(&url)
            .await
            .unwrap();
        let names = tool_names(&c).await;
        assert!(names.contains(&"echo".to_owned()), "{v}: {names:?}");
        assert!(names.contains(&"ev_echo".to_owned()), "{v}: {names:?}");
        for tool in ["echo", "ev_echo"] {
            let r = c.call_tool(tool, json!({"message": "hi"})).await.unwrap();
            assert_eq!(r.text(), "Echo: hi", "{v} {tool}");
        }
        // The namespaced URI and the unprefixed one reach the same kind of resource.
        for uri in [
            "demo://ev/resource/dynamic/text/1",
            "demo://resource/dynamic/text/1",
        ] {
            let r = c.read_resource(uri).await.unwrap();
            let text = r.contents[0].text.as_deref().unwrap_or("");
            assert!(text.contains("Resource 1"), "{v} {uri}: {text}");
        }
        c.close().await;
    }
    // SIGTERM: the gateway exits and its two children with it.
    let pid = gw.0.id();
    let kids = children(pid);
    assert_eq!(kids.len(), 2, "two stdio children: {kids:?}");
    let status = Command::new("kill")
        .arg("-TERM")
        .arg(pid.to_string())
        .status()
        .unwrap();
    assert!(status.success());
    let mut exited = None;
    let done = eventually(|| {
        exited = gw.0.try_wait().unwrap();
        exited.is_some()
    })
    .await;
    assert!(
        done && exited.is_some_and(|s| s.success()),
        "the gateway exits on SIGTERM: {exited:?}"
    );
    let reaped = eventually(|| kids.iter().all(|k| !alive(*k))).await;
    assert!(reaped, "children left: {kids:?}");
}

#[test]
fn nothing_to_serve_is_a_clear_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_snodo"))
        .args(["gateway", "--addr", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("nothing to serve"), "{err}");
    let out = Command::new(env!("CARGO_BIN_EXE_snodo"))
        .args(["gateway", "--backend", "x=ftp://nowhere"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("http://"),
        "names the forms"
    );
}

/// `--addr unix:PATH` (issue 36 names the gateway too): `snodo client --unix-socket`
/// calls through it, and SIGTERM removes the socket file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_serves_on_a_unix_socket() {
    let Some(ev) = server_everything() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("gw.sock");
    let mut child = Command::new(env!("CARGO_BIN_EXE_snodo"))
        .arg("gateway")
        .arg("--addr")
        .arg(format!("unix:{}", socket.display()))
        .args(["--", "node"])
        .arg(&ev)
        .arg("stdio")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut gw = Gateway(child);
    let mut banner = String::new();
    BufReader::new(stdout).read_line(&mut banner).unwrap();
    assert!(banner.contains("on unix:"), "{banner}");
    let out = Command::new(env!("CARGO_BIN_EXE_snodo"))
        .args(["client", "--unix-socket"])
        .arg(&socket)
        .args(["--url", "http://localhost/mcp", "tools/call"])
        .arg(json!({"name": "echo", "arguments": {"message": "over unix"}}).to_string())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("Echo: over unix"),
        "{stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let status = Command::new("kill")
        .args(["-TERM", &gw.0.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let mut exited = None;
    assert!(
        eventually(|| {
            exited = gw.0.try_wait().unwrap();
            exited.is_some()
        })
        .await,
        "the gateway exits on SIGTERM"
    );
    assert!(!socket.exists(), "the socket file is removed at exit");
}

/// `serve`'s flags on the gateway, through the same code: `--oauth-*` (a bearer token
/// is required, the protected-resource metadata is served), `--task-store` (the SQLite
/// file is opened), `--bus` (a bad URL is refused, saying what is expected).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_serve_flags_work_on_the_gateway() {
    let snodo = env!("CARGO_BIN_EXE_snodo");
    let dir = tempfile::tempdir().unwrap();
    let tasks = dir.path().join("tasks.db");
    let (_gw, url) = start(&[
        "--oauth-issuer".into(),
        "https://issuer.example.com".into(),
        // No discovery: the keys' URL is given (and unreachable: no token is valid).
        "--oauth-jwks-url".into(),
        "http://127.0.0.1:9/jwks".into(),
        "--task-store".into(),
        format!("sqlite:{}", tasks.display()),
        "--".into(),
        snodo.into(),
        "fixture".into(),
        "--stdio".into(),
        "--profile".into(),
        "echo".into(),
    ]);
    assert!(tasks.exists(), "the task store is opened");
    let addr = addr_of(&url);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
        "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}})
    .to_string();
    let r = snodo_testkit::http::post(addr, &[("mcp-protocol-version", "2026-07-28")], &body).await;
    assert_eq!(r.status, 401, "{}", r.text());
    assert!(
        r.challenge()
            .contains("/.well-known/oauth-protected-resource/mcp"),
        "{}",
        r.challenge()
    );
    let meta = snodo_testkit::http::send(
        addr,
        "GET /.well-known/oauth-protected-resource/mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(meta.status, 200);
    assert_eq!(
        meta.json()["authorization_servers"][0],
        "https://issuer.example.com"
    );
    let out = Command::new(snodo)
        .args([
            "gateway",
            "--addr",
            "127.0.0.1:0",
            "--bus",
            "ftp://nowhere",
            "--",
        ])
        .args([snodo, "fixture", "--stdio"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("postgres://"),
        "{err}"
    );
}

/// A 2026-07-28-only gateway: a backend's resource update reaches a listen stream of
/// the front, and a backend tool that requires a task (server-everything's
/// `simulate-research-query`) answers a caller without the tasks extension in one call
/// (the gateway's metrics wrapper passes both on to the mount's source).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_gateway_relays_resource_updates_and_backend_tasks() {
    let Some(ev) = server_everything() else {
        return;
    };
    let (_gw, url) = start(&[
        "--protocols".into(),
        "2026-07-28".into(),
        "--backend".into(),
        format!("ev=stdio:node {} stdio", ev.display()),
    ]);
    let c = Client::builder("gw-test", "1")
        .connect_http(&url)
        .await
        .unwrap();
    let r = c
        .call_tool("ev_simulate-research-query", json!({"topic": "otters"}))
        .await
        .unwrap();
    assert!(r.text().contains("Research Report: otters"), "{}", r.text());
    let uri = "demo://ev/resource/dynamic/text/1".to_owned();
    let subs = snodo_client::Subscriptions {
        resource_subscriptions: vec![uri.clone()],
        ..Default::default()
    };
    let mut events = c.listen(&subs).await.unwrap();
    // The update is sent once the backend connection subscribed: toggled on until one
    // arrives (each toggle sends at once, then every 5 s).
    let mut got = None;
    for _ in 0..10 {
        c.call_tool("ev_toggle-subscriber-updates", json!({}))
            .await
            .unwrap();
        if let Ok(e) = tokio::time::timeout(Duration::from_secs(1), events.next()).await {
            got = Some(e);
            break;
        }
        // Toggled off again: on at the next turn.
        c.call_tool("ev_toggle-subscriber-updates", json!({}))
            .await
            .unwrap();
    }
    assert!(
        matches!(&got, Some(Some(Ok(snodo_client::ServerEvent::ResourceUpdated(u)))) if *u == uri),
        "{got:?}"
    );
}
