//! A session-ful HTTP backend (the official Python SDK's FastMCP with `Mcp-Session-Id`,
//! interop/compose/py_backend.py) restarted between two calls: the second call's session
//! is unknown to the new server (404), and a new session is made on the same pooled
//! connection — no call fails, no reconnection. The interpreter: PY_MCP_PYTHON, or the
//! venv interop/compose/run.sh makes (interop/compose/.venv-mcp-1.30.0).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod external;
mod support;

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::json;
use snodo_compose::{McpSource, Mount, MountOptions, Status, Transforms};

const T: Duration = Duration::from_secs(20);

fn python() -> Option<PathBuf> {
    external::installed(
        "PY_MCP_PYTHON",
        "interop/compose/.venv-mcp-1.30.0/bin/python",
        "bash interop/compose/run.sh makes it",
    )
}

/// The backend process, killed (by PID) when dropped.
struct Backend(Child);

impl Drop for Backend {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn start(python: &PathBuf, port: u16) -> Backend {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../interop/compose/py_backend.py"
    );
    let child = Command::new(python)
        .args([script, &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let b = Backend(child);
    for _ in 0..300 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return b;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("py_backend.py did not listen on {port}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_the_backend_forgot_is_made_again_on_404() {
    let Some(py) = python() else { return };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let backend = start(&py, port).await;
    let src = McpSource::http("py", format!("http://127.0.0.1:{port}/mcp")).pool(2);
    let health = src.health();
    let front = support::front().build().unwrap();
    // No health checks in between: the second call is the first to meet the new server.
    let options = MountOptions {
        health_interval: Duration::from_secs(600),
        ..MountOptions::default()
    };
    let src: std::sync::Arc<dyn snodo_compose::Source> = std::sync::Arc::new(src);
    let m = Mount::with_options(&front, src, Transforms::new().namespace("py"), options);
    assert!(matches!(m.ready(T).await, Status::Up { .. }));
    let c = support::client(&front, "2025-06-18").await;
    for _ in 0..4 {
        let r = c.call_tool("py_echo", json!({"text": "a"})).await.unwrap();
        assert_eq!(r.text(), "echo: a");
    }
    drop(backend);
    let _backend = start(&py, port).await;
    // Both pooled sessions are unknown to the new process: each call renews its own.
    for _ in 0..4 {
        let r = c.call_tool("py_echo", json!({"text": "b"})).await.unwrap();
        assert_eq!(r.text(), "echo: b");
    }
    assert_eq!(health.restarts(), 0, "{health:?}");
    assert_eq!(health.ready(), 2);
}
