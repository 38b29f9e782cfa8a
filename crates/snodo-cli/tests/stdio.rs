//! The `snodo` binary as a stdio child process: literal lines on its stdin, lines read
//! from its stdout (which carries MCP messages only), results schema-validated.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::process::{ChildStdin, ChildStdout, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use snodo_testkit::errors::assert_says;
use snodo_testkit::{Process, R2026_07_28, assert_error};

const V: &str = "2026-07-28";

struct Server {
    child: Process,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
}

impl Server {
    fn start(args: &[&str]) -> Self {
        let mut child = Process::piped(Command::new(env!("CARGO_BIN_EXE_snodo")).args(args));
        let stdin = child.stdin.take();
        let lines = child.stdout_lines();
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

/// A `tools/call` that works for `seconds` (synchronously: no tasks extension declared).
fn slow_call(id: i64, seconds: f64) -> String {
    R2026_07_28
        .request("tools/call")
        .id(id)
        .params(json!({"name":"slow_compute","arguments":{"seconds":seconds}}))
        .body()
}

/// Lines read until the answer to `id` (within 10 s), that answer included.
fn lines_until(s: &Server, id: i64) -> Vec<Value> {
    let mut seen = Vec::new();
    loop {
        let m = s.recv();
        let done = m["id"] == id;
        seen.push(m);
        if done {
            return seen;
        }
    }
}

/// A request and its `notifications/cancelled` in one write (so, most often, in one
/// read): the cancellation finds the request however close behind it comes, and the
/// cancelled call writes nothing (issue 37: 39 of 40 were answered).
#[test]
fn a_request_cancelled_in_the_same_write_is_never_answered() {
    let mut s = Server::start(&["fixture", "--stdio"]);
    for id in 1..=100 {
        let cancel = json!({"jsonrpc":"2.0","method":"notifications/cancelled",
            "params":{"requestId":id,"reason":"changed my mind"}});
        s.write(format!("{}\n{cancel}\n", slow_call(id, 0.3)).as_bytes());
    }
    // Long enough for every call that was not cancelled to answer.
    std::thread::sleep(Duration::from_millis(1500));
    s.modern(
        1000,
        "tools/call",
        json!({"name":"echo","arguments":{"text":"marker"}}),
    );
    let seen = lines_until(&s, 1000);
    let answered: Vec<&Value> = seen.iter().filter(|m| m["id"] != 1000).collect();
    assert!(
        answered.is_empty(),
        "{} cancelled calls answered: {answered:?}",
        answered.len()
    );
    assert!(s.close(Duration::from_secs(10)).unwrap().success());
}

/// End of input with a request still running: after the drain period (5 s) it gets a
/// JSON-RPC error, written before the process exits cleanly.
#[test]
fn a_request_running_past_the_drain_gets_an_error_before_exit() {
    let mut s = Server::start(&["fixture", "--stdio"]);
    s.write(format!("{}\n", slow_call(7, 60.0)).as_bytes());
    s.modern(
        8,
        "tools/call",
        json!({"name":"echo","arguments":{"text":"x"}}),
    );
    assert_eq!(s.recv()["id"], 8);
    let closed = Instant::now();
    let status = s
        .close(Duration::from_secs(15))
        .expect("exits after the drain");
    assert!(status.success(), "{status:?}");
    let waited = closed.elapsed();
    assert!(waited >= Duration::from_secs(4), "exited after {waited:?}");
    let m = s.recv();
    let error = assert_error(&m, &json!(7), -32603);
    assert_says(&error, "shutting down");
    assert!(
        s.lines.recv_timeout(Duration::from_secs(2)).is_err(),
        "one answer, then the end of stdout"
    );
}

/// The request log names notifications by their method, as HTTP does (it said `-`).
#[test]
fn the_stdio_request_log_names_notifications() {
    let root = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("stdio-log-root");
    std::fs::create_dir_all(&root).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_snodo"))
        .args([
            "serve",
            "--stdio",
            "--legacy",
            "--log-format",
            "json",
            "--root",
        ])
        .arg(&root)
        .env("RUST_LOG", "snodo=info")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}});
    writeln!(stdin, "{init}").unwrap();
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc":"2.0","method":"notifications/initialized"})
    )
    .unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let stderr = String::from_utf8(out.stderr).unwrap();
    // Each request is logged when it ends: the notification may end before the
    // `initialize` it follows, so the order of the two lines is not fixed.
    let mut methods: Vec<String> = stderr
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["target"] == "snodo::request")
        .map(|e| e["method"].as_str().unwrap_or("?").to_owned())
        .collect();
    methods.sort();
    assert_eq!(
        methods,
        ["initialize", "notifications/initialized"],
        "{stderr}"
    );
}

/// Echo calls whose answers (20 x 256 KiB) fill the pipe, and one call still running.
fn big_answers_and_a_slow_call() -> String {
    let mut lines = String::new();
    for id in 1..=20 {
        let call = R2026_07_28
            .request("tools/call")
            .id(id)
            .params(json!({"name":"echo","arguments":{"text":"y".repeat(256 * 1024)}}))
            .body();
        lines.push_str(&call);
        lines.push('\n');
    }
    lines.push_str(&slow_call(99, 60.0));
    lines.push('\n');
    lines
}

/// Waits up to `wait` for `child` to exit.
fn exits_within(child: &mut Process, wait: Duration) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + wait;
    while Instant::now() < deadline {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

/// The fixture with 20 big answers and a slow call asked of it and the first 4 KiB of
/// its answers read: the server is writing. Its stdin and the rest of its stdout.
fn answering() -> (Process, ChildStdin, ChildStdout) {
    let mut child =
        Process::piped(Command::new(env!("CARGO_BIN_EXE_snodo")).args(["fixture", "--stdio"]));
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    stdin
        .write_all(big_answers_and_a_slow_call().as_bytes())
        .unwrap();
    stdin.flush().unwrap();
    let mut some = [0u8; 4096];
    std::io::Read::read_exact(&mut stdout, &mut some).unwrap();
    (child, stdin, stdout)
}

/// The client dies while the server writes its answers (both pipes close mid-answer,
/// one request still running): the server stops writing, gives the running request the
/// drain period (5 s) and exits; nothing hangs.
#[test]
fn a_client_that_dies_mid_answer_ends_the_server() {
    let (mut child, stdin, stdout) = answering();
    drop(stdout);
    drop(stdin);
    let status = exits_within(&mut child, Duration::from_secs(15)).expect("the server exits");
    assert!(status.code().is_some(), "ended by a signal: {status:?}");
}

/// The client stops reading for good (it closes its end of stdout) but keeps stdin
/// open: the server notices at its next write, stops reading and exits.
#[test]
fn a_client_that_closes_stdout_mid_answer_ends_the_server() {
    let (mut child, stdin, stdout) = answering();
    drop(stdout);
    let status = exits_within(&mut child, Duration::from_secs(15)).expect("the server exits");
    assert!(status.code().is_some(), "ended by a signal: {status:?}");
    drop(stdin);
}
