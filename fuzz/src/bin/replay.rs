//! Stable-toolchain fuzz harness: replays `fuzz/corpus/<target>/` and
//! `fuzz/regressions/<target>/`, then mutates random pool entries with a small PRNG until
//! the time budget runs out. No coverage feedback (use `cargo +nightly fuzz run` for
//! that); mutated inputs are kept in the pool at random so that mutations stack.
//!
//! Usage: `replay [TARGET|all] [SECONDS_PER_TARGET] [SEED]` (defaults: all, 60, time).
//! Crashing inputs are written to `fuzz/artifacts/<target>/crash-<hash>`; the exit code
//! is 1 when any input crashed.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::hash::{DefaultHasher, Hash as _, Hasher as _};
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const MAX_LEN: usize = 64 * 1024;
const POOL_CAP: usize = 4096;

/// splitmix64: small, fast, good enough to drive mutations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
    fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }
}

/// Tokens worth splicing into JSON-RPC bodies and HTTP heads.
const DICT: &[&[u8]] = &[
    b"{",
    b"}",
    b"[",
    b"]",
    b"\"",
    b",",
    b":",
    b"null",
    b"true",
    b"-0",
    b"1e999",
    b"9223372036854775808",
    b"-9223372036854775809",
    b"\\u0000",
    b"\\ud800",
    b"\\\"",
    b"\"jsonrpc\":\"2.0\"",
    b"\"id\":",
    b"\"method\":",
    b"\"params\":",
    b"\"result\":",
    b"\"error\":",
    b"\"_meta\":",
    b"\"io.modelcontextprotocol/protocolVersion\"",
    b"\"io.modelcontextprotocol/clientCapabilities\"",
    b"\"progressToken\"",
    b"\"tools/call\"",
    b"\"tools/list\"",
    b"\"initialize\"",
    b"\"notifications/cancelled\"",
    b"\"2026-07-28\"",
    b"\"2025-11-25\"",
    b"\"2025-06-18\"",
    b"c1.",
    b"{+",
    b"{#",
    b"{/",
    b"%",
    b"%2F",
    b"%+1",
    b"%ff",
    b"\xff",
    b"\xc3\xa9",
    b"\xf0\x9f\x92\xa9",
    b"\r\n",
    b"\r\n\r\n",
    b"Host: localhost\r\n",
    b"Origin: http://evil.example\r\n",
    b"Origin: null\r\n",
    b"Content-Length: 99999999\r\n",
    b"Content-Type: application/json\r\n",
    b"Accept: */*\r\n",
    b"Mcp-Method: tools/call\r\n",
    b"Mcp-Name: =?base64?ZWNobw==?=\r\n",
    b"MCP-Protocol-Version: 2026-07-28\r\n",
    b"MCP-Protocol-Version: 2025-11-25\r\n",
    b"x-fuzz-chunks: 7\r\n",
    b"GET",
    b"POST",
    b"OPTIONS",
];

fn mutate(rng: &mut Rng, pool: &[Vec<u8>], input: &mut Vec<u8>) {
    let rounds = 1 + rng.below(4);
    for _ in 0..rounds {
        let len = input.len();
        match rng.below(9) {
            0 if len > 0 => {
                let i = rng.below(len);
                input[i] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let i = rng.below(len);
                input[i] = [0u8, 0x7f, 0x80, 0xff, b'"', b'\\', b'{', b'0'][rng.below(8)];
            }
            2 if len > 0 => {
                let a = rng.below(len);
                let b = (a + 1 + rng.below(32)).min(len);
                input.drain(a..b);
            }
            3 => {
                let tok = DICT[rng.below(DICT.len())];
                let at = rng.below(len + 1);
                input.splice(at..at, tok.iter().copied());
            }
            4 if len > 0 => {
                // Duplicate a range, sometimes many times (deep nesting, long strings).
                let a = rng.below(len);
                let b = (a + 1 + rng.below(16)).min(len);
                let piece = input[a..b].to_vec();
                let times = if rng.chance(8) {
                    1 + rng.below(2000)
                } else {
                    1 + rng.below(4)
                };
                let at = rng.below(input.len() + 1);
                let rep: Vec<u8> = piece
                    .iter()
                    .copied()
                    .cycle()
                    .take(piece.len() * times)
                    .collect();
                input.splice(at..at, rep);
            }
            5 if !pool.is_empty() => {
                // Splice with another input.
                let other = &pool[rng.below(pool.len())];
                if !other.is_empty() {
                    let a = rng.below(other.len());
                    let b = (a + 1 + rng.below(256)).min(other.len());
                    let at = rng.below(len + 1);
                    input.splice(at..at, other[a..b].iter().copied());
                }
            }
            6 if len > 0 => {
                // Replace a digit run with an interesting number.
                let i = rng.below(len);
                if input[i].is_ascii_digit() {
                    let nums: [&[u8]; 6] = [
                        b"0",
                        b"-1",
                        b"4294967296",
                        b"18446744073709551616",
                        b"255",
                        b"1.5",
                    ];
                    let n = nums[rng.below(nums.len())];
                    input.splice(i..=i, n.iter().copied());
                }
            }
            7 if len > 1 => {
                input.truncate(rng.below(len));
            }
            _ => {
                let at = rng.below(len + 1);
                input.insert(at, (rng.next() & 0xff) as u8);
            }
        }
    }
    input.truncate(MAX_LEN);
}

thread_local! {
    static LAST_PANIC: RefCell<String> = const { RefCell::new(String::new()) };
}

fn load(dir: &Path, into: &mut Vec<(PathBuf, Vec<u8>)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut files: Vec<PathBuf> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
    files.sort();
    for f in files {
        if f.is_file() {
            if let Ok(b) = std::fs::read(&f) {
                into.push((f, b));
            }
        }
    }
}

struct Outcome {
    execs: u64,
    seeds: usize,
    crashes: BTreeMap<String, PathBuf>,
    crash_count: u64,
    elapsed: Duration,
}

fn run_target(root: &Path, target: &str, budget: Duration, rng: &mut Rng) -> Outcome {
    let mut seeds = Vec::new();
    load(&root.join("corpus").join(target), &mut seeds);
    load(&root.join("regressions").join(target), &mut seeds);
    let mut out = Outcome {
        execs: 0,
        seeds: seeds.len(),
        crashes: BTreeMap::new(),
        crash_count: 0,
        elapsed: Duration::ZERO,
    };
    let start = Instant::now();
    let try_one = |data: &[u8], out: &mut Outcome| -> bool {
        out.execs += 1;
        let r = panic::catch_unwind(AssertUnwindSafe(|| snodo_fuzz::run(target, data)));
        if r.is_ok() {
            return true;
        }
        out.crash_count += 1;
        let msg = LAST_PANIC.with(|m| m.borrow().clone());
        let key = msg.lines().next().unwrap_or_default().to_owned();
        if !out.crashes.contains_key(&key) {
            let mut h = DefaultHasher::new();
            data.hash(&mut h);
            let dir = root.join("artifacts").join(target);
            let _ = std::fs::create_dir_all(&dir);
            let path = dir.join(format!("crash-{:016x}", h.finish()));
            let _ = std::fs::write(&path, data);
            eprintln!(
                "[{target}] CRASH {msg}\n    input saved to {}",
                path.display()
            );
            out.crashes.insert(key, path);
        }
        false
    };
    for (_, data) in &seeds {
        try_one(data, &mut out);
    }
    let mut pool: Vec<Vec<u8>> = seeds.into_iter().map(|(_, b)| b).collect();
    if pool.is_empty() {
        pool.push(Vec::new());
    }
    while start.elapsed() < budget {
        for _ in 0..64 {
            let mut input = pool[rng.below(pool.len())].clone();
            mutate(rng, &pool, &mut input);
            if try_one(&input, &mut out) && rng.chance(32) {
                if pool.len() < POOL_CAP {
                    pool.push(input);
                } else {
                    let i = rng.below(pool.len());
                    pool[i] = input;
                }
            }
        }
    }
    out.elapsed = start.elapsed();
    out
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let which = args.get(1).map_or("all", String::as_str);
    let secs: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(60);
    let seed: u64 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
    });
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    panic::set_hook(Box::new(|info| {
        let loc = info
            .location()
            .map(|l| format!("{}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        LAST_PANIC.with(|m| *m.borrow_mut() = format!("{loc}: {msg}"));
    }));
    let targets: Vec<&str> = if which == "all" {
        snodo_fuzz::TARGETS.to_vec()
    } else {
        vec![which]
    };
    let mut rng = Rng(seed);
    let mut failed = 0;
    println!("seed {seed}, {secs} s per target");
    println!(
        "{:<16} {:>6} {:>10} {:>9} {:>8} {:>8}",
        "target", "seeds", "execs", "execs/s", "secs", "crashes"
    );
    for t in targets {
        let o = run_target(&root, t, Duration::from_secs(secs), &mut rng);
        let rate = o.execs as f64 / o.elapsed.as_secs_f64().max(1e-9);
        println!(
            "{:<16} {:>6} {:>10} {:>9.0} {:>8.1} {:>8}",
            t,
            o.seeds,
            o.execs,
            rate,
            o.elapsed.as_secs_f64(),
            o.crash_count
        );
        for (msg, path) in &o.crashes {
            println!("    crash: {msg}\n           {}", path.display());
        }
        if o.crash_count > 0 {
            failed += 1;
        }
    }
    std::process::exit(i32::from(failed > 0));
}
