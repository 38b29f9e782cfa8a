//! The demo out of file descriptors (issue 37, item 8): `resources/read` of a file that
//! exists, `search` and `resources/list` say that the server cannot read now — an
//! internal error marked retryable — instead of "Resource not found" or an empty
//! success; and once descriptors are free again, they work.
//!
//! The demo runs under `ulimit -n 64`; idle connections take its descriptors; the
//! requests travel on a connection opened before.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod demo_support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use demo_support::{Demo, folder, write};
use serde_json::{Value, json};
use snodo_testkit::{R2026_07_28, Request};

/// One HTTP/1.1 connection kept open across requests.
struct KeepAlive {
    stream: TcpStream,
    addr: SocketAddr,
}

impl KeepAlive {
    fn open(addr: SocketAddr) -> Self {
        let stream = TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        Self { stream, addr }
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
                return snodo_testkit::http::parse(&buf).message();
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

fn read(conn: &mut KeepAlive, uri: &str) -> Value {
    conn.rpc(
        &R2026_07_28
            .request("resources/read")
            .id(1)
            .params(json!({"uri": uri})),
    )
}

fn search(conn: &mut KeepAlive) -> Value {
    conn.rpc(
        &R2026_07_28
            .request("tools/call")
            .id(2)
            .params(json!({"name": "search", "arguments": {"query": "needle"}})),
    )
}

fn list(conn: &mut KeepAlive) -> Value {
    conn.rpc(
        &R2026_07_28
            .request("resources/list")
            .id(3)
            .params(json!({})),
    )
}

/// The demo's descriptor limit.
const LIMIT: usize = 64;

/// The process's open descriptors numbered below [`LIMIT`] (an inherited one above it
/// does not count: `open` fails when every number below the limit is taken).
fn below_limit(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |dir| {
        dir.flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<usize>().ok())
            .filter(|&fd| fd < LIMIT)
            .count()
    })
}

#[test]
fn out_of_descriptors_is_a_retryable_internal_error() {
    let root = folder("demo-descriptors");
    write(&root, "a.txt", "a needle here\n");
    let uri = format!("file://{}/a.txt", root.display());
    let demo = Demo::http_with(&root, &[], Some(LIMIT as u32));
    let mut conn = KeepAlive::open(demo.addr());
    let ok = read(&mut conn, &uri);
    assert_eq!(
        ok["result"]["contents"][0]["text"], "a needle here\n",
        "{ok}"
    );

    // Idle connections until the demo cannot accept more: it holds every descriptor.
    let mut idle: Vec<TcpStream> = (0..80)
        .map(|_| TcpStream::connect(demo.addr()).unwrap())
        .collect();
    let taken = || below_limit(demo.pid());
    let deadline = Instant::now() + Duration::from_secs(5);
    while taken() < LIMIT && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(taken(), LIMIT, "every descriptor taken");

    let r = read(&mut conn, &uri);
    let error = &r["error"];
    assert_eq!(
        error["code"], -32603,
        "an internal error, not not-found: {r}"
    );
    assert_eq!(error["data"]["retryable"], true, "{r}");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("a.txt") && message.contains("retry"),
        "{message}"
    );
    assert!(message.contains("Too many open files"), "{message}");

    let s = search(&mut conn);
    assert_eq!(s["result"]["isError"], true, "not an empty success: {s}");
    assert_eq!(s["result"]["_meta"]["io.snodo/retryable"], true, "{s}");

    let l = list(&mut conn);
    assert_eq!(l["error"]["code"], -32603, "not an empty list: {l}");
    assert_eq!(l["error"]["data"]["retryable"], true, "{l}");

    // Descriptors free again: the same requests succeed.
    idle.clear();
    let deadline = Instant::now() + Duration::from_secs(10);
    let again = loop {
        let r = read(&mut conn, &uri);
        if r.get("result").is_some() || Instant::now() > deadline {
            break r;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(
        again["result"]["contents"][0]["text"], "a needle here\n",
        "{again}"
    );
    let s = search(&mut conn);
    assert_eq!(
        s["result"]["structuredContent"]["matches"][0]["path"], "a.txt",
        "{s}"
    );
}
