//! The `snodo` binary as a stdio child process: literal lines on its stdin, lines read
//! from its stdout (which carries MCP messages only), results schema-validated.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use snodo_testkit::R2026_07_28;

const V: &str = "2026-07-28";

struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
}

impl Server {
    fn start(args: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_snodo"))
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Self {
            child,
            stdin,
            lines,
        }
    }

    fn write(&mut self, bytes: &[u8]) {
        self.stdin.as_mut().unwrap().write_all(bytes).unwrap();
        self.stdin.as_mut().unwrap().flush().unwrap();
    }

    fn send(&mut self, message: &Value) {
        self.write(format!("{message}\n").as_bytes());
    }

    fn modern(&mut self, id: i64, method: &str, params: Value) {
        self.send(&R2026_07_28.request(method).id(id).params(params).message());
    }

    fn recv(&self) -> Value {
        let line = self
            .lines
            .recv_timeout(Duration::from_secs(10))
            .expect("a line within 10 s");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {line}"))
    }

    /// Closes stdin; the exit status within `wait`.
    fn close(&mut self, wait: Duration) -> Option<std::process::ExitStatus> {
        drop(self.stdin.take());
        self.wait(wait)
    }

    fn wait(&mut self, wait: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + wait;
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    /// The peak resident memory of the child, in KiB (Linux).
    fn peak_rss_kib(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).ok()?;
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Validates against the 2026-07-28 schema (the shared test support's validator).
fn assert_schema(definition: &str, instance: &Value) {
    snodo_testkit::assert_schema(V, definition, instance);
}

#[test]
fn the_fixture_answers_on_stdout_and_exits_at_end_of_input() {
    let mut s = Server::start(&["fixture", "--stdio"]);
    s.modern(1, "server/discover", json!({}));
    let m = s.recv();
    assert_eq!(m["id"], 1);
    assert_schema("DiscoverResult", &m["result"]);
    s.modern(
        2,
        "tools/call",
        json!({"name":"echo","arguments":{"text":"child"}}),
    );
    let m = s.recv();
    assert_eq!(m["result"]["content"][0]["text"], "child", "{m}");
    assert_schema("CallToolResult", &m["result"]);
    s.write(b"not json\n");
    assert_eq!(s.recv()["error"]["code"], -32700);
    let status = s.close(Duration::from_secs(10)).expect("exits after EOF");
    assert!(status.success());
}

#[test]
fn the_demo_serves_a_folder_over_stdio() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/src");
    let mut s = Server::start(&["serve", "--stdio", "--legacy", "--root", root]);
    s.send(
        &json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}),
    );
    assert_eq!(s.recv()["result"]["protocolVersion"], "2025-11-25");
    s.send(&json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
    s.send(
        &json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{
        "name":"search","arguments":{"query":"fn main"}}}),
    );
    let m = s.recv();
    assert!(
        m["result"]["structuredContent"]["matches"].is_array(),
        "{m}"
    );
    s.modern(
        2,
        "resources/read",
        json!({"uri": format!("file://{root}/main.rs")}),
    );
    let m = s.recv();
    assert_schema("ReadResourceResult", &m["result"]);
    assert!(s.close(Duration::from_secs(10)).unwrap().success());
}

#[test]
fn a_100_mib_line_is_refused_with_bounded_memory() {
    let mut s = Server::start(&["fixture", "--stdio", "--profile", "echo"]);
    let chunk = vec![b'x'; 1 << 20];
    s.write(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"");
    for _ in 0..100 {
        s.write(&chunk);
    }
    s.write(b"\"}\n");
    let m = s.recv();
    assert_eq!(m["id"], Value::Null);
    assert_eq!(m["error"]["code"], -32600, "{m}");
    s.modern(
        2,
        "tools/call",
        json!({"name":"echo","arguments":{"text":"still here"}}),
    );
    assert_eq!(s.recv()["result"]["content"][0]["text"], "still here");
    if let Some(peak) = s.peak_rss_kib() {
        assert!(peak < 96 * 1024, "peak RSS {peak} KiB for a 100 MiB line");
    }
    assert!(s.close(Duration::from_secs(10)).unwrap().success());
}

#[cfg(unix)]
#[test]
fn sigterm_ends_the_server() {
    let mut s = Server::start(&["fixture", "--stdio"]);
    s.modern(1, "server/discover", json!({}));
    assert_eq!(s.recv()["id"], 1);
    let killed = Command::new("kill")
        .args(["-TERM", &s.child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = s
        .wait(Duration::from_secs(10))
        .expect("exits after SIGTERM");
    assert!(status.success(), "{status:?}");
}

/// The requests of a short session, one per line, and the ids whose answers it expects.
fn session_lines() -> String {
    let call = R2026_07_28
        .request("tools/call")
        .id(2)
        .params(json!({"name":"echo","arguments":{"text":"over a socket"}}))
        .body();
    let discover = R2026_07_28.request("server/discover").id(1).body();
    format!("{discover}\n{call}\n")
}

fn assert_session_answers(lines: &[Value]) {
    let by_id = |id: i64| {
        lines
            .iter()
            .find(|m| m["id"] == id)
            .unwrap_or_else(|| panic!("no answer to {id}: {lines:?}"))
    };
    assert_schema("DiscoverResult", &by_id(1)["result"]);
    let call = &by_id(2)["result"];
    assert_eq!(call["content"][0]["text"], "over a socket", "{call}");
    assert_schema("CallToolResult", call);
}

/// Node's `child_process` gives its children Unix socket pairs, not pipes, as stdio.
#[cfg(unix)]
#[test]
fn the_fixture_speaks_over_a_unix_socket_pair_as_node_clients_give_it() {
    use std::os::fd::OwnedFd;
    use std::os::unix::net::UnixStream;

    let (mut ours, theirs) = UnixStream::pair().unwrap();
    let theirs_out = OwnedFd::from(theirs.try_clone().unwrap());
    let mut child = Command::new(env!("CARGO_BIN_EXE_snodo"))
        .args(["fixture", "--stdio"])
        .stdin(Stdio::from(OwnedFd::from(theirs)))
        .stdout(Stdio::from(theirs_out))
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    ours.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    ours.write_all(session_lines().as_bytes()).unwrap();
    let mut reader = BufReader::new(ours.try_clone().unwrap());
    let mut lines = Vec::new();
    for _ in 0..2 {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        lines.push(serde_json::from_str::<Value>(&line).unwrap());
    }
    assert_session_answers(&lines);
    ours.shutdown(std::net::Shutdown::Write).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "no exit after EOF on the socket");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status:?}");
}

/// Input redirected from a regular file (which epoll cannot watch) is read all the same.
#[test]
fn the_fixture_reads_requests_from_a_file() {
    let path = std::env::temp_dir().join(format!("snodo-stdio-{}.jsonl", std::process::id()));
    std::fs::write(&path, session_lines()).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_snodo"))
        .args(["fixture", "--stdio"])
        .stdin(std::fs::File::open(&path).unwrap())
        .stderr(Stdio::null())
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&path);
    assert!(out.status.success(), "{:?}", out.status);
    let lines: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_session_answers(&lines);
}
