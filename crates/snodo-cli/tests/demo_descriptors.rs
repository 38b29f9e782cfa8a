//! The demo out of file descriptors (issue 37, item 8): `resources/read` of a file that
//! exists, `search` and `resources/list` say that the server cannot read now — an
//! internal error marked retryable — instead of "Resource not found" or an empty
//! success; and once descriptors are free again, they work.
//!
//! The running demo's soft `RLIMIT_NOFILE` is lowered (`prlimit --pid`) to its lowest
//! free descriptor number, so that every `open` fails with EMFILE exactly as when
//! connections or files have taken them all; the requests travel on a connection (HTTP)
//! or the pipes (stdio) opened before.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod demo_support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use demo_support::{Demo, folder, write};
use serde_json::{Value, json};
use snodo_testkit::{R2026_07_28, Request};

/// One HTTP/1.1 connection kept open across requests.
struct KeepAlive {
    stream: TcpStream,
    addr: SocketAddr,
    /// Every answer's status and `Retry-After`, in order.
    seen: Vec<(u16, Option<String>)>,
}

impl KeepAlive {
    fn open(addr: SocketAddr) -> Self {
        let stream = TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        Self {
            stream,
            addr,
            seen: Vec::new(),
        }
    }

    fn rpc(&mut self, request: &Request) -> Value {
        let headers = request.headers();
        let refs: Vec<(&str, &str)> = headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let raw = snodo_testkit::http::literal_post(
            &self.addr.to_string(),
            &refs,
            &request.body(),
            false,
        );
        self.stream.write_all(raw.as_bytes()).unwrap();
        let mut buf = Vec::new();
        let mut chunk = [0u8; 8192];
        loop {
            let n = self.stream.read(&mut chunk).unwrap();
            assert!(
                n > 0,
                "connection closed: {}",
                String::from_utf8_lossy(&buf)
            );
            buf.extend_from_slice(&chunk[..n]);
            if complete(&buf) {
                let reply = snodo_testkit::http::parse(&buf);
                let retry = reply.header("retry-after").map(str::to_owned);
                self.seen.push((reply.status, retry));
                return reply.message();
            }
        }
    }
}

/// Whether `buf` holds a whole response (by `Content-Length`, or a chunked body's end).
fn complete(buf: &[u8]) -> bool {
    let Some(split) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
        return false;
    };
    let head = String::from_utf8_lossy(&buf[..split]).to_ascii_lowercase();
    let body = &buf[split + 4..];
    match head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok())
    {
        Some(len) => body.len() >= len,
        None => body.ends_with(b"0\r\n\r\n"),
    }
}

/// The process's open descriptor numbers.
fn open_fds(pid: u32) -> Vec<u64> {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect()
}

/// Sets the soft descriptor limit of `pid`.
fn set_soft_limit(pid: u32, soft: u64) {
    let status = Command::new("prlimit")
        .arg(format!("--pid={pid}"))
        .arg(format!("--nofile={soft}:"))
        .status()
        .expect("prlimit (util-linux) runs");
    assert!(status.success(), "prlimit --nofile={soft}: {status}");
}

/// The soft descriptor limit of `pid`.
fn soft_limit(pid: u32) -> u64 {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap();
    line.split_whitespace().nth(3).unwrap().parse().unwrap()
}

/// Every descriptor number below the new limit is taken: the next `open` is EMFILE.
fn starve(pid: u32) {
    let open = open_fds(pid);
    let lowest_free = (0..).find(|n| !open.contains(n)).unwrap();
    set_soft_limit(pid, lowest_free);
}

fn read(rpc: &mut dyn FnMut(&Request) -> Value, root: &Path) -> Value {
    let uri = format!("file://{}/a.txt", root.display());
    rpc(&R2026_07_28
        .request("resources/read")
        .id(1)
        .params(json!({"uri": uri})))
}

fn search(rpc: &mut dyn FnMut(&Request) -> Value) -> Value {
    rpc(&R2026_07_28
        .request("tools/call")
        .id(2)
        .params(json!({"name": "search", "arguments": {"query": "needle"}})))
}

fn list(rpc: &mut dyn FnMut(&Request) -> Value) -> Value {
    rpc(&R2026_07_28
        .request("resources/list")
        .id(3)
        .params(json!({})))
}

fn review(rpc: &mut dyn FnMut(&Request) -> Value) -> Value {
    rpc(&R2026_07_28
        .request("prompts/get")
        .id(4)
        .params(json!({"name": "review_file", "arguments": {"path": "a.txt"}})))
}

fn assert_retryable(r: &Value, what: &str) {
    let error = &r["error"];
    assert_eq!(error["code"], -32603, "{what}: an internal error: {r}");
    assert_eq!(error["data"]["retryable"], true, "{what}: {r}");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("retry") && message.contains("Too many open files"),
        "{what}: {message}"
    );
}

/// Starves the demo, checks each answer, gives the descriptors back, checks again.
fn out_of_descriptors(pid: u32, root: &Path, rpc: &mut dyn FnMut(&Request) -> Value) {
    let ok = read(rpc, root);
    assert_eq!(
        ok["result"]["contents"][0]["text"], "a needle here\n",
        "{ok}"
    );
    let before = soft_limit(pid);

    starve(pid);
    let r = read(rpc, root);
    assert_retryable(&r, "resources/read of an existing file");
    assert!(
        r["error"]["message"].as_str().unwrap().contains("a.txt"),
        "{r}"
    );
    assert_retryable(&review(rpc), "review_file of an existing file");
    assert_retryable(&list(rpc), "resources/list");
    let s = search(rpc);
    assert_eq!(
        s["result"]["isError"], true,
        "search: not an empty success: {s}"
    );
    assert_eq!(s["result"]["_meta"]["io.snodo/retryable"], true, "{s}");
    let i = rpc(&R2026_07_28
        .request("tools/call")
        .id(5)
        .params(json!({"name": "index_folder", "arguments": {}})));
    assert_eq!(i["result"]["isError"], true, "index_folder: {i}");
    assert_eq!(i["result"]["_meta"]["io.snodo/retryable"], true, "{i}");

    set_soft_limit(pid, before);
    let deadline = Instant::now() + Duration::from_secs(10);
    let again = loop {
        let r = read(rpc, root);
        if r.get("result").is_some() || Instant::now() > deadline {
            break r;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(
        again["result"]["contents"][0]["text"], "a needle here\n",
        "{again}"
    );
    let s = search(rpc);
    assert_eq!(
        s["result"]["structuredContent"]["matches"][0]["path"], "a.txt",
        "{s}"
    );
}

fn tree(name: &str) -> std::path::PathBuf {
    let root = folder(name);
    write(&root, "a.txt", "a needle here\n");
    root
}

#[test]
fn out_of_descriptors_is_a_retryable_internal_error_over_http() {
    let root = tree("demo-descriptors-http");
    let demo = Demo::http(&root);
    let mut conn = KeepAlive::open(demo.addr());
    out_of_descriptors(demo.pid(), &root, &mut |r: &Request| conn.rpc(r));
    // 2026-07-28 statuses follow codes: the retryable errors (the second to fourth
    // answers: read, review_file, resources/list) are 503 with `Retry-After`, so that a
    // proxy or client reading statuses retries them; the first read was a 200.
    assert_eq!(conn.seen[0], (200, None), "{:?}", conn.seen);
    for seen in &conn.seen[1..4] {
        assert_eq!(seen, &(503, Some("1".to_owned())), "{:?}", conn.seen);
    }
}

#[test]
fn out_of_descriptors_is_a_retryable_internal_error_over_stdio() {
    let root = tree("demo-descriptors-stdio");
    let mut demo = Demo::stdio(&root);
    let pid = demo.pid();
    out_of_descriptors(pid, &root, &mut |r: &Request| demo.rpc(r));
}

/// Out of descriptors, the accept loop retries every 100 ms without end; its log line
/// is written once, then at most once per ten seconds (it wrote ten a second).
#[test]
fn failed_accepts_are_logged_once_not_per_retry() {
    let root = tree("demo-descriptors-accept-log");
    let log = root.join("stderr.log");
    let mut child = snodo_testkit::Process::spawn(
        Command::new(demo_support::BIN)
            .args(["serve", "--addr", "127.0.0.1:0", "--root"])
            .arg(&root)
            .env("RUST_LOG", "snodo=warn")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::fs::File::create(&log).unwrap()),
    );
    let url = child.announced_url();
    let addr: SocketAddr = url
        .strip_prefix("http://")
        .and_then(|w| w.strip_suffix("/mcp"))
        .unwrap()
        .parse()
        .unwrap();
    let pid = child.id();
    let limit = soft_limit(pid);
    starve(pid);
    // A connection waits in the backlog: every accept of it fails with EMFILE.
    let waiting = TcpStream::connect(addr).unwrap();
    std::thread::sleep(Duration::from_millis(2500));
    set_soft_limit(pid, limit);
    drop(waiting);
    drop(child);
    let stderr = std::fs::read_to_string(&log).unwrap();
    let lines = stderr
        .lines()
        .filter(|l| l.contains("accept failed"))
        .count();
    assert!(
        (1..=2).contains(&lines),
        "{lines} accept-failure lines in 2.5 s:\n{stderr}"
    );
}
