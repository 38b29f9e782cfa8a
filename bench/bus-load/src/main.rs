//! The load process of `bench/bus.sh` (issue 35, "At scale"): opens `--streams`
//! `subscriptions/listen` streams spread round robin over `--addrs` (raw HTTP/1.1, one
//! socket each), then
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
    })
}

fn request(
    addr: SocketAddr,
    token: &str,
    id: usize,
    method: &str,
    params: &str,
    name: Option<&str>,
) -> String {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{{{params},"_meta":{{"io.modelcontextprotocol/protocolVersion":"{VERSION}","io.modelcontextprotocol/clientCapabilities":{{}}}}}}}}"#
    );
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
        // The tail of the previous read, in case a mark straddles two reads.
        let mut carry: Vec<u8> = Vec::with_capacity(MARK.len() * 2 + 512);
        let mut chunk = [0u8; 512];
        loop {
            let n = match s.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            carry.extend_from_slice(&chunk[..n]);
            let mut seen = 0;
            while let Some(at) = find(&carry[seen..], MARK) {
                seen += at + MARK.len();
                if tx.send(Instant::now()).is_err() {
                    return;
                }
            }
            let keep = carry.len().saturating_sub(MARK.len() - 1).max(seen);
            carry.drain(..keep);
        }
    });
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
    for i in 0..a.streams {
        let permit = Arc::clone(&gate)
            .acquire_owned()
            .await
            .map_err(|e| e.to_string())?;
        let (addr, token, tx) = (a.addrs[i % a.addrs.len()], a.token.clone(), tx.clone());
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

async fn fanout(a: &Args, rx: &mut mpsc::UnboundedReceiver<Instant>) -> Res<Vec<Duration>> {
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
    Ok(all)
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
    println!(
        "{}: {} listen streams open over {} instances in {:.1} s",
        a.label,
        a.streams,
        a.addrs.len(),
        took.as_secs_f64()
    );
    for (i, &pid) in a.pids.iter().enumerate() {
        let after = rss_kib(pid);
        let held = (0..a.streams)
            .filter(|s| s % a.addrs.len() == i)
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
    }
    let all = fanout(&a, &mut rx).await?;
    println!(
        "{}: publish on instance 1 -> delivery on every stream, {} streams x {} rounds: p50 {}, p99 {}, max {}",
        a.label,
        a.streams,
        a.rounds,
        ms(quantile(&all, 0.5)),
        ms(quantile(&all, 0.99)),
        ms(quantile(&all, 1.0))
    );
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
