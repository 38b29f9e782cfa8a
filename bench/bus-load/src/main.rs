//! The load process of `bench/bus.sh` (issue 35, "At scale"): opens `--streams`
//! `subscriptions/listen` streams spread round robin over `--addrs`, with `--http 1`
//! (default: raw HTTP/1.1, one socket each) or `--http 2` (h2c with prior knowledge,
//! `--per-conn` streams, default 100, multiplexed on each connection; the connections
//! round robin over the addresses), then
//!
//! - **memory**: each server's RSS (`--pids`, from `/proc`) before and after, per open
//!   idle stream;
//! - **fan-out**: `--rounds` times, a `tools/call test_trigger_resource_update` on the
//!   first address (the publish), and the time from sending it to each stream's
//!   delivery (p50/p99/max over every delivery of every round);
//! - **cost**: `--calls` sequential calls of `test_simple_text` and then of
//!   `--limited TOOL` on one keep-alive connection to the first address; the first
//!   server's CPU time per call (every thread, `/proc/PID/task/*/schedstat`) and the bus
//!   server's (`--bus-pid`: that process and its children, as PostgreSQL's backends
//!   are).
//!
//! Every failure is an error line and exit 1; every wait is bounded.

#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{Semaphore, mpsc};

const URI: &str = "test://watched-resource";
const MARK: &[u8] = b"notifications/resources/updated";
const VERSION: &str = "2026-07-28";
const WAIT: Duration = Duration::from_secs(30);

type Res<T> = Result<T, String>;

struct Args {
    addrs: Vec<SocketAddr>,
    pids: Vec<u32>,
    bus_pid: Option<u32>,
    streams: usize,
    rounds: usize,
    calls: usize,
    limited: Option<String>,
    token: String,
    label: String,
    /// `None`: HTTP/1.1, one connection per stream; `Some(n)`: HTTP/2, n per connection.
    h2: Option<usize>,
    /// How long to wait, every stream open, before the first publish and after the
    /// last (a profiler attaches and detaches then: bench/bus-profile.sh).
    pause: Duration,
}

impl Args {
    /// The index of the server stream `s` is held by.
    fn server_of(&self, s: usize) -> usize {
        match self.h2 {
            None => s % self.addrs.len(),
            Some(per) => (s / per) % self.addrs.len(),
        }
    }
}

fn args() -> Res<Args> {
    let mut kv = HashMap::new();
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let k = k
            .strip_prefix("--")
            .ok_or_else(|| format!("unexpected argument {k:?}"))?
            .to_owned();
        let v = it.next().ok_or_else(|| format!("--{k} needs a value"))?;
        kv.insert(k, v);
    }
    let get = |k: &str| kv.get(k).cloned();
    let num = |k: &str, d: usize| -> Res<usize> {
        get(k).map_or(Ok(d), |v| v.parse().map_err(|e| format!("--{k}: {e}")))
    };
    let list = |k: &str| -> Vec<String> {
        get(k)
            .map(|v| {
                v.split(',')
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    let addrs = list("addrs")
        .iter()
        .map(|a| a.parse().map_err(|e| format!("--addrs {a}: {e}")))
        .collect::<Res<Vec<SocketAddr>>>()?;
    if addrs.is_empty() {
        return Err("--addrs HOST:PORT,… is required".into());
    }
    let pids = list("pids")
        .iter()
        .map(|p| p.parse().map_err(|e| format!("--pids {p}: {e}")))
        .collect::<Res<Vec<u32>>>()?;
    let bus_pid = match get("bus-pid") {
        Some(p) => Some(p.parse().map_err(|e| format!("--bus-pid: {e}"))?),
        None => None,
    };
    Ok(Args {
        addrs,
        pids,
        bus_pid,
        streams: num("streams", 10_000)?,
        rounds: num("rounds", 20)?,
        calls: num("calls", 2_000)?,
        limited: get("limited"),
        token: get("token").unwrap_or_else(|| "lane".into()),
        label: get("label").unwrap_or_else(|| "bus".into()),
        h2: match get("http").as_deref() {
            None | Some("1") => None,
            Some("2") => Some(num("per-conn", 100)?.max(1)),
            Some(other) => return Err(format!("--http {other}: 1 or 2")),
        },
        pause: Duration::from_millis(num("pause-ms", 0)? as u64),
    })
}

/// A JSON-RPC request of the modern revision.
fn body(id: usize, method: &str, params: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{{{params},"_meta":{{"io.modelcontextprotocol/protocolVersion":"{VERSION}","io.modelcontextprotocol/clientCapabilities":{{}}}}}}}}"#
    )
}

fn request(
    addr: SocketAddr,
    token: &str,
    id: usize,
    method: &str,
    params: &str,
    name: Option<&str>,
) -> String {
    let body = body(id, method, params);
    let name = name.map_or(String::new(), |n| format!("Mcp-Name: {n}\r\n"));
    format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: {VERSION}\r\nMcp-Method: {method}\r\n{name}Authorization: Bearer {token}\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Opens one listen stream and waits for its acknowledgement; a task then sends the
/// instant of each delivery.
async fn open(
    addr: SocketAddr,
    token: &str,
    id: usize,
    tx: mpsc::UnboundedSender<Instant>,
) -> Res<()> {
    let params = format!(r#""notifications":{{"resourceSubscriptions":["{URI}"]}}"#);
    let req = request(addr, token, id, "subscriptions/listen", &params, None);
    let mut s = tokio::time::timeout(WAIT, TcpStream::connect(addr))
        .await
        .map_err(|_| format!("stream {id}: connect timed out"))?
        .map_err(|e| format!("stream {id}: connect: {e}"))?;
    s.write_all(req.as_bytes())
        .await
        .map_err(|e| format!("stream {id}: write: {e}"))?;
    let mut buf = Vec::with_capacity(512);
    let mut chunk = [0u8; 512];
    while find(&buf, b"acknowledged").is_none() {
        let n = tokio::time::timeout(WAIT, s.read(&mut chunk))
            .await
            .map_err(|_| format!("stream {id}: no acknowledgement within {WAIT:?}"))?
            .map_err(|e| format!("stream {id}: read: {e}"))?;
        if n == 0 {
            let head = String::from_utf8_lossy(&buf[..buf.len().min(200)]).into_owned();
            return Err(format!(
                "stream {id}: closed before its acknowledgement: {head:?}"
            ));
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    tokio::spawn(async move {
        let mut marks = Marks::default();
        let mut chunk = [0u8; 512];
        loop {
            let n = match s.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            if !marks.feed(&chunk[..n], &tx) {
                return;
            }
        }
    });
    Ok(())
}

/// Finds each delivery's mark in a stream's bytes, however the reads split it.
#[derive(Default)]
struct Marks {
    /// The tail of the previous read, in case a mark straddles two reads.
    carry: Vec<u8>,
}

impl Marks {
    /// Sends the instant for each mark in `data`; false once nobody listens.
    fn feed(&mut self, data: &[u8], tx: &mpsc::UnboundedSender<Instant>) -> bool {
        self.carry.extend_from_slice(data);
        let mut seen = 0;
        while let Some(at) = find(&self.carry[seen..], MARK) {
            seen += at + MARK.len();
            if tx.send(Instant::now()).is_err() {
                return false;
            }
        }
        let keep = self.carry.len().saturating_sub(MARK.len() - 1).max(seen);
        self.carry.drain(..keep);
        true
    }
}

/// Opens one h2c connection (prior knowledge) to `addr` and `ids` listen streams on it,
/// each acknowledged before this returns; a task per stream then sends the instant of
/// each delivery.
async fn open_h2(
    addr: SocketAddr,
    token: &str,
    ids: std::ops::Range<usize>,
    tx: mpsc::UnboundedSender<Instant>,
) -> Res<()> {
    let first = ids.start;
    let tcp = tokio::time::timeout(WAIT, TcpStream::connect(addr))
        .await
        .map_err(|_| format!("connection {first}: connect timed out"))?
        .map_err(|e| format!("connection {first}: connect: {e}"))?;
    let (client, connection) = tokio::time::timeout(WAIT, h2::client::handshake(tcp))
        .await
        .map_err(|_| format!("connection {first}: no HTTP/2 handshake within {WAIT:?}"))?
        .map_err(|e| format!("connection {first}: HTTP/2 handshake: {e}"))?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            eprintln!("bus-load: an HTTP/2 connection ended: {e}");
        }
    });
    let mut pending = Vec::with_capacity(ids.len());
    for id in ids {
        let params = format!(r#""notifications":{{"resourceSubscriptions":["{URI}"]}}"#);
        let body = body(id, "subscriptions/listen", &params);
        let req = http::Request::post(format!("http://{addr}/mcp"))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", VERSION)
            .header("mcp-method", "subscriptions/listen")
            .header("authorization", format!("Bearer {token}"))
            .body(())
            .map_err(|e| format!("stream {id}: {e}"))?;
        let mut client = tokio::time::timeout(WAIT, client.clone().ready())
            .await
            .map_err(|_| format!("stream {id}: no HTTP/2 stream free within {WAIT:?}"))?
            .map_err(|e| format!("stream {id}: {e}"))?;
        let (response, mut send) = client
            .send_request(req, false)
            .map_err(|e| format!("stream {id}: send: {e}"))?;
        send.send_data(bytes::Bytes::from(body), true)
            .map_err(|e| format!("stream {id}: send body: {e}"))?;
        pending.push((id, response));
    }
    for (id, response) in pending {
        let response = tokio::time::timeout(WAIT, response)
            .await
            .map_err(|_| format!("stream {id}: no response within {WAIT:?}"))?
            .map_err(|e| format!("stream {id}: response: {e}"))?;
        if response.status() != 200 {
            return Err(format!("stream {id}: answered {}", response.status()));
        }
        let mut data = response.into_body();
        let mut buf = Vec::with_capacity(512);
        while find(&buf, b"acknowledged").is_none() {
            let chunk = tokio::time::timeout(WAIT, data.data())
                .await
                .map_err(|_| format!("stream {id}: no acknowledgement within {WAIT:?}"))?
                .ok_or_else(|| format!("stream {id}: ended before its acknowledgement"))?
                .map_err(|e| format!("stream {id}: read: {e}"))?;
            let _ = data.flow_control().release_capacity(chunk.len());
            buf.extend_from_slice(&chunk);
        }
        let tx = tx.clone();
        tokio::spawn(async move {
            let mut marks = Marks::default();
            while let Some(Ok(chunk)) = data.data().await {
                let _ = data.flow_control().release_capacity(chunk.len());
                if !marks.feed(&chunk, &tx) {
                    return;
                }
            }
        });
    }
    Ok(())
}

/// One keep-alive connection for calls: sends a request, reads one whole response.
struct Caller {
    s: TcpStream,
    addr: SocketAddr,
    token: String,
    buf: Vec<u8>,
    id: usize,
}

impl Caller {
    async fn connect(addr: SocketAddr, token: &str) -> Res<Self> {
        let s = TcpStream::connect(addr)
            .await
            .map_err(|e| format!("connect {addr}: {e}"))?;
        s.set_nodelay(true).map_err(|e| e.to_string())?;
        Ok(Self {
            s,
            addr,
            token: token.to_owned(),
            buf: Vec::new(),
            id: 1_000_000,
        })
    }

    /// Calls `tool`; the response's body.
    async fn call(&mut self, tool: &str) -> Res<String> {
        self.id += 1;
        let params = format!(r#""name":"{tool}","arguments":{{}}"#);
        let req = request(
            self.addr,
            &self.token,
            self.id,
            "tools/call",
            &params,
            Some(tool),
        );
        self.s
            .write_all(req.as_bytes())
            .await
            .map_err(|e| format!("call {tool}: {e}"))?;
        tokio::time::timeout(WAIT, self.response())
            .await
            .map_err(|_| format!("call {tool}: no answer within {WAIT:?}"))?
    }

    async fn fill(&mut self) -> Res<()> {
        let mut chunk = [0u8; 4096];
        let n = self.s.read(&mut chunk).await.map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("the server closed the call connection".into());
        }
        self.buf.extend_from_slice(&chunk[..n]);
        Ok(())
    }

    async fn response(&mut self) -> Res<String> {
        let head_end = loop {
            if let Some(at) = find(&self.buf, b"\r\n\r\n") {
                break at + 4;
            }
            self.fill().await?;
        };
        let head = String::from_utf8_lossy(&self.buf[..head_end]).to_ascii_lowercase();
        if !head.starts_with("http/1.1 200") {
            return Err(format!("answered {}", head.lines().next().unwrap_or("")));
        }
        let length = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse::<usize>().ok());
        let body = if let Some(len) = length {
            while self.buf.len() < head_end + len {
                self.fill().await?;
            }
            let body = self.buf[head_end..head_end + len].to_vec();
            self.buf.drain(..head_end + len);
            body
        } else {
            // Chunked: up to the last chunk.
            let end = loop {
                if let Some(at) = find(&self.buf[head_end..], b"\r\n0\r\n\r\n") {
                    break head_end + at + 7;
                }
                self.fill().await?;
            };
            let body = self.buf[head_end..end].to_vec();
            self.buf.drain(..end);
            body
        };
        Ok(String::from_utf8_lossy(&body).into_owned())
    }
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// CPU time of every thread of `pid`, in ns.
fn cpu_ns(pid: u32) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| {
            s.split_whitespace()
                .next()
                .and_then(|v| v.parse::<u64>().ok())
        })
        .sum()
}

/// CPU time of `pid` and its direct children (PostgreSQL's backends), in ns.
fn tree_cpu_ns(pid: u32) -> u64 {
    let mut total = cpu_ns(pid);
    if let Ok(procs) = std::fs::read_dir("/proc") {
        for p in procs.flatten() {
            let Some(child) = p.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
                continue;
            };
            let stat = std::fs::read_to_string(p.path().join("stat")).unwrap_or_default();
            // The parent is the second field after the command's closing parenthesis.
            let ppid = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1))
                .and_then(|v| v.parse::<u32>().ok());
            if ppid == Some(pid) {
                total += cpu_ns(child);
            }
        }
    }
    total
}

fn quantile(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

async fn open_all(a: &Args, tx: &mpsc::UnboundedSender<Instant>) -> Res<Duration> {
    let started = Instant::now();
    let gate = Arc::new(Semaphore::new(128));
    let mut set = tokio::task::JoinSet::new();
    if let Some(per) = a.h2 {
        for (c, first) in (0..a.streams).step_by(per).enumerate() {
            let permit = Arc::clone(&gate)
                .acquire_owned()
                .await
                .map_err(|e| e.to_string())?;
            let (addr, token, tx) = (a.addrs[c % a.addrs.len()], a.token.clone(), tx.clone());
            let ids = first..(first + per).min(a.streams);
            set.spawn(async move {
                let r = open_h2(addr, &token, ids, tx).await;
                drop(permit);
                r
            });
        }
        while let Some(done) = set.join_next().await {
            done.map_err(|e| e.to_string())??;
        }
        return Ok(started.elapsed());
    }
    for i in 0..a.streams {
        let permit = Arc::clone(&gate)
            .acquire_owned()
            .await
            .map_err(|e| e.to_string())?;
        let (addr, token, tx) = (a.addrs[a.server_of(i)], a.token.clone(), tx.clone());
        set.spawn(async move {
            let r = open(addr, &token, i, tx).await;
            drop(permit);
            r
        });
        while let Some(done) = set.try_join_next() {
            done.map_err(|e| e.to_string())??;
        }
    }
    while let Some(done) = set.join_next().await {
        done.map_err(|e| e.to_string())??;
    }
    Ok(started.elapsed())
}

/// CPU time of the servers together, of the bus server, of this process (ns).
fn cpus(a: &Args) -> [u64; 3] {
    [
        a.pids.iter().map(|&p| cpu_ns(p)).sum(),
        a.bus_pid.map_or(0, tree_cpu_ns),
        cpu_ns(std::process::id()),
    ]
}

async fn fanout(a: &Args, rx: &mut mpsc::UnboundedReceiver<Instant>) -> Res<(Vec<Duration>, f64)> {
    let mut trigger = Caller::connect(a.addrs[0], &a.token).await?;
    let mut all = Vec::with_capacity(a.streams * a.rounds);
    let mut spent: Vec<[u64; 3]> = Vec::new();
    for round in 0..a.rounds {
        while rx.try_recv().is_ok() {}
        let before = cpus(a);
        let published = Instant::now();
        let answer = trigger.call("test_trigger_resource_update").await?;
        if !answer.contains("Published") {
            return Err(format!("round {round}: the trigger answered {answer}"));
        }
        let mut got = Vec::with_capacity(a.streams);
        while got.len() < a.streams {
            let at = tokio::time::timeout(WAIT, rx.recv())
                .await
                .map_err(|_| {
                    format!(
                        "round {round}: {} of {} streams heard the update within {WAIT:?}",
                        got.len(),
                        a.streams
                    )
                })?
                .ok_or("every stream ended")?;
            got.push(at.duration_since(published));
        }
        let after = cpus(a);
        spent.push([0, 1, 2].map(|i| after[i].saturating_sub(before[i])));
        got.sort();
        println!(
            "{}: round {:>2}: p50 {}, p99 {}, last {}",
            a.label,
            round + 1,
            ms(quantile(&got, 0.5)),
            ms(quantile(&got, 0.99)),
            ms(quantile(&got, 1.0))
        );
        all.extend(got);
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    all.sort();
    let median = |i: usize| {
        let mut v: Vec<u64> = spent.iter().map(|s| s[i]).collect();
        v.sort_unstable();
        v.get(v.len() / 2).copied().unwrap_or(0) as f64 / 1e6
    };
    let (servers, bus, load) = (median(0), median(1), median(2));
    println!(
        "{}: CPU per round (median): servers {servers:.1} ms ({:.2} µs per stream), bus server {bus:.1} ms, load process {load:.1} ms ({:.2} µs per stream)",
        a.label,
        servers * 1000.0 / a.streams as f64,
        load * 1000.0 / a.streams as f64,
    );
    Ok((all, servers * 1000.0 / a.streams as f64))
}

async fn cost(a: &Args, tool: &str) -> Res<(f64, f64, f64, String)> {
    let mut c = Caller::connect(a.addrs[0], &a.token).await?;
    let mut last = String::new();
    for _ in 0..200 {
        last = c.call(tool).await?;
    }
    let server = a.pids.first().copied();
    let (s0, b0) = (server.map_or(0, cpu_ns), a.bus_pid.map_or(0, tree_cpu_ns));
    let started = Instant::now();
    for _ in 0..a.calls {
        last = c.call(tool).await?;
    }
    let wall = started.elapsed();
    let (s1, b1) = (server.map_or(0, cpu_ns), a.bus_pid.map_or(0, tree_cpu_ns));
    let n = a.calls.max(1) as f64;
    let verdict = if last.contains("\"reason\":\"rate\"") {
        "refused (rate)"
    } else if last.contains("\"isError\":true") {
        "tool error"
    } else {
        "admitted"
    };
    Ok((
        s1.saturating_sub(s0) as f64 / n / 1000.0,
        b1.saturating_sub(b0) as f64 / n / 1000.0,
        wall.as_secs_f64() * 1e6 / n,
        verdict.into(),
    ))
}

async fn run(a: Args) -> Res<()> {
    let before: Vec<u64> = a.pids.iter().map(|&p| rss_kib(p)).collect();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let took = open_all(&a, &tx).await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let how =
        a.h2.map_or("HTTP/1.1, one connection each".to_owned(), |per| {
            format!("HTTP/2, {per} per connection")
        });
    println!(
        "{}: {} listen streams ({how}) open over {} instances in {:.1} s",
        a.label,
        a.streams,
        a.addrs.len(),
        took.as_secs_f64()
    );
    let mut per_stream = Vec::new();
    for (i, &pid) in a.pids.iter().enumerate() {
        let after = rss_kib(pid);
        let held = (0..a.streams)
            .filter(|&s| a.server_of(s) == i)
            .count()
            .max(1);
        println!(
            "{}: server {} (pid {pid}): RSS {} -> {} KiB, +{:.1} KiB per idle listen stream ({held} streams)",
            a.label,
            i + 1,
            before[i],
            after,
            after.saturating_sub(before[i]) as f64 / held as f64
        );
        per_stream.push(after.saturating_sub(before[i]) as f64 / held as f64);
    }
    if !a.pause.is_zero() {
        println!(
            "{}: pausing {:?} before the first publish",
            a.label, a.pause
        );
        tokio::time::sleep(a.pause).await;
    }
    let (all, cpu) = fanout(&a, &mut rx).await?;
    println!(
        "{}: publish on instance 1 -> delivery on every stream, {} streams x {} rounds: p50 {}, p99 {}, max {}",
        a.label,
        a.streams,
        a.rounds,
        ms(quantile(&all, 0.5)),
        ms(quantile(&all, 0.99)),
        ms(quantile(&all, 1.0))
    );
    // One line for bench/bus.sh's table.
    let kib = per_stream.iter().sum::<f64>() / per_stream.len().max(1) as f64;
    println!(
        "summary|{}|{}|{:.0} / {:.0} / {:.0} ms|{cpu:.1} µs|{kib:.1} KiB",
        a.label,
        a.h2.map_or("HTTP/1.1".to_owned(), |per| format!("HTTP/2 ×{per}")),
        quantile(&all, 0.5).as_secs_f64() * 1000.0,
        quantile(&all, 0.99).as_secs_f64() * 1000.0,
        quantile(&all, 1.0).as_secs_f64() * 1000.0,
    );
    if !a.pause.is_zero() {
        println!("{}: pausing {:?} after the last publish", a.label, a.pause);
        tokio::time::sleep(a.pause).await;
    }
    if a.calls > 0 {
        let mut tools = vec!["test_simple_text".to_owned()];
        tools.extend(a.limited.clone());
        for tool in tools {
            let (server, bus, wall, verdict) = cost(&a, &tool).await?;
            println!(
                "{}: {tool} ({verdict}), {} sequential calls: server {server:.1} µs CPU per call, bus server {bus:.1} µs, wall {wall:.1} µs",
                a.label, a.calls
            );
        }
    }
    drop(tx);
    Ok(())
}

#[tokio::main(flavor = "multi_thread", worker_threads = 1)]
async fn main() {
    let result = match args() {
        Ok(a) => run(a).await,
        Err(e) => Err(e),
    };
    if let Err(e) = result {
        eprintln!("bus-load: {e}");
        std::process::exit(1);
    }
}
