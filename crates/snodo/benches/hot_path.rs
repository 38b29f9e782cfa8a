//! Micro-benchmarks of the request hot path (issue 8), public API plus the hidden
//! `snodo::fuzzing::parse_request` (the server's one-pass envelope + params read).
//!
//! - `e2e/*`: `McpService::handle` of the literal requests `bench/compare.sh` sends
//!   (tools/call `echo` and tools/list, 2026-07-28 and 2025-11-25), from an
//!   `http::Request<Full<Bytes>>` to the collected response bytes.
//! - `decode/*`, `encode/*`: pieces of that path (the envelope alone, the envelope with
//!   its params as the server reads them, the result envelope) so the e2e figure can be
//!   split.
//! - `large/*`: a tools/call whose `text` argument is 1 MiB, end to end, against the
//!   "parse it once" reference (one typed serde_json parse of the same body).
//!
//! Run: `cargo bench -p snodo --bench hot_path` (full) or add `-- --quick` (short mode);
//! `SNODO_BENCH_ITERS=N` instead runs each e2e case N times without criterion and exits
//! (what `bench/profile.sh` runs under callgrind); `SNODO_BENCH_CASE=name` picks one case,
//! including `call_echo_1MiB_2026-07-28` (the 1 MiB argument, only run when named).
//!
//! The non-streaming path completes without waiting on anything, so each future is
//! polled to completion once with `now_or_never` inside an entered current-thread tokio
//! runtime (the service creates timers and needs one; no scheduler round trip is
//! measured); a future that would wait panics loudly instead of being measured wrongly.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::time::Duration;

use bytes::Bytes;
use criterion::{BatchSize, Criterion, Throughput, criterion_group};
use futures_util::FutureExt as _;
use http::Request;
use http_body_util::{BodyExt as _, Full};
use schemars::JsonSchema;
use serde::Deserialize;
use snodo::fuzzing::{Incoming, result_message};
use snodo::http::McpService;
use snodo::protocol::{RequestId, V2025_11_25, V2026_07_28};
use snodo::{Runtime, Tool, ToolResult};

const MODERN: &str = "2026-07-28";
const LEGACY: &str = "2025-11-25";

/// `params._meta` exactly as `bench.sh` sends it on 2026-07-28.
const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"mcp-bench","version":"0.1.0"},"io.modelcontextprotocol/clientCapabilities":{}}"#;

#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    /// The text to return.
    text: String,
}

/// The `snodo fixture --profile echo --protocols 2026-07-28,2025-11-25` runtime.
fn runtime() -> Runtime {
    Runtime::builder("snodo-conformance-fixture", "0.1.0")
        .title("snodo conformance fixture")
        .instructions("Fixture for the official MCP conformance runner.")
        .protocols([&V2026_07_28, &V2025_11_25])
        .tool(
            Tool::new("echo")
                .description("Returns its text argument unchanged")
                .read_only()
                .handler(|a: EchoArgs| async move { ToolResult::text(a.text) }),
        )
        .build()
        .expect("echo runtime builds")
}

fn call_body(proto: &str, text: &str) -> String {
    if proto == MODERN {
        format!(
            r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{text}"}},{META}}}}}"#
        )
    } else {
        format!(
            r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{text}"}}}}}}"#
        )
    }
}

fn list_body(proto: &str) -> String {
    if proto == MODERN {
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{{META}}}}}"#)
    } else {
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#.to_owned()
    }
}

/// The request `bench.sh` sends (headers as wrk sends them).
fn request(proto: &str, method: &str, body: &Bytes) -> Request<Full<Bytes>> {
    let mut b = Request::post("/mcp")
        .header("host", "127.0.0.1:8940")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("content-length", body.len())
        .header("mcp-protocol-version", proto);
    if proto == MODERN {
        b = b.header("mcp-method", method);
        if method == "tools/call" {
            b = b.header("mcp-name", "echo");
        }
    }
    b.body(Full::new(body.clone())).expect("valid request")
}

/// One request through the service, response body collected (as hyper would write it).
#[inline(never)]
fn round_trip(svc: &McpService, req: Request<Full<Bytes>>) -> Bytes {
    async {
        let resp = svc.handle(req).await;
        assert!(resp.status().is_success(), "status {}", resp.status());
        resp.into_body()
            .collect()
            .await
            .expect("infallible body")
            .to_bytes()
    }
    .now_or_never()
    .expect("a non-streaming request completes without waiting")
}

struct Case {
    name: &'static str,
    proto: &'static str,
    method: &'static str,
    body: Bytes,
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "call_echo_2026-07-28",
            proto: MODERN,
            method: "tools/call",
            body: call_body(MODERN, "hello").into(),
        },
        Case {
            name: "call_echo_2025-11-25",
            proto: LEGACY,
            method: "tools/call",
            body: call_body(LEGACY, "hello").into(),
        },
        Case {
            name: "list_2026-07-28",
            proto: MODERN,
            method: "tools/list",
            body: list_body(MODERN).into(),
        },
        Case {
            name: "list_2025-11-25",
            proto: LEGACY,
            method: "tools/list",
            body: list_body(LEGACY).into(),
        },
    ]
}

fn e2e(c: &mut Criterion) {
    let svc = McpService::new(runtime());
    let mut g = c.benchmark_group("e2e");
    for case in cases() {
        // Sanity: the answer is a result, not an error.
        let out = round_trip(&svc, request(case.proto, case.method, &case.body));
        assert!(
            out.windows(9).any(|w| w == b"\"result\":"),
            "{}: {}",
            case.name,
            String::from_utf8_lossy(&out)
        );
        g.bench_function(case.name, |b| {
            b.iter_batched(
                || request(case.proto, case.method, &case.body),
                |req| black_box(round_trip(&svc, req)),
                BatchSize::SmallInput,
            );
        });
    }
    g.finish();
}

fn decode_encode(c: &mut Criterion) {
    let mut g = c.benchmark_group("decode");
    for case in cases() {
        g.bench_function(format!("envelope_{}", case.name), |b| {
            b.iter(|| {
                let m = Incoming::parse(black_box(&case.body)).expect("parses");
                black_box(matches!(m, Incoming::Request { .. }))
            });
        });
    }
    // What the server does: the envelope and the params (`_meta` typed, the rest as
    // JSON) in one pass over the body.
    for case in cases() {
        g.bench_function(format!("envelope_and_params_{}", case.name), |b| {
            b.iter(|| black_box(snodo::fuzzing::parse_request(black_box(&case.body))));
        });
    }
    g.finish();

    let mut g = c.benchmark_group("encode");
    let result = r#"{"content":[{"type":"text","text":"hello"}],"isError":false,"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"snodo-conformance-fixture","title":"snodo conformance fixture","version":"0.1.0"}}}"#;
    g.bench_function("result_message_preserialised", |b| {
        let id = RequestId::Number(2);
        b.iter(|| black_box(result_message(&id, black_box(result))));
    });
    g.bench_function("result_Map_to_string", |b| {
        // What exec::final_message does: the result object as a Map, then to_string.
        let map: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(result).expect("json");
        b.iter(|| black_box(serde_json::to_string(black_box(&map)).expect("serialises")));
    });
    g.finish();
}

fn large(c: &mut Criterion) {
    let svc = McpService::new(runtime());
    let text = "a".repeat(1 << 20);
    let body: Bytes = call_body(MODERN, &text).into();
    let mut g = c.benchmark_group("large");
    g.throughput(Throughput::Bytes(body.len() as u64));
    g.sample_size(20);
    g.measurement_time(Duration::from_secs(3));
    let out = round_trip(&svc, request(MODERN, "tools/call", &body));
    assert!(out.len() > 1 << 20, "echoed 1 MiB");
    g.bench_function("call_echo_1MiB_2026-07-28", |b| {
        b.iter_batched(
            || request(MODERN, "tools/call", &body),
            |req| black_box(round_trip(&svc, req)),
            BatchSize::SmallInput,
        );
    });
    // Reference: parse the same body once into typed structs (owned text).
    #[derive(Deserialize)]
    struct Env {
        #[allow(dead_code)]
        params: P,
    }
    #[derive(Deserialize)]
    struct P {
        #[allow(dead_code)]
        arguments: EchoArgs,
    }
    g.bench_function("reference_parse_once_typed", |b| {
        b.iter(|| black_box(serde_json::from_slice::<Env>(black_box(&body)).expect("json")));
    });
    // Reference: parse once into a DOM (`Value`), as a handler taking `Value` would.
    g.bench_function("reference_parse_once_value", |b| {
        b.iter(|| {
            black_box(serde_json::from_slice::<serde_json::Value>(black_box(&body)).expect("json"))
        });
    });
    // Reference: serialise the 1 MiB string once (the echo result must contain it).
    g.bench_function("reference_serialise_once", |b| {
        b.iter(|| black_box(serde_json::to_vec(black_box(&text)).expect("json")));
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = e2e, decode_encode, large
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let _entered = rt.enter();
    // Profiling mode: a fixed number of e2e requests, no criterion (callgrind-friendly).
    if let Some(n) = std::env::var("SNODO_BENCH_ITERS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    {
        let only = std::env::var("SNODO_BENCH_CASE").ok();
        let svc = McpService::new(runtime());
        let mut all = cases();
        all.push(Case {
            name: "call_echo_1MiB_2026-07-28",
            proto: MODERN,
            method: "tools/call",
            body: call_body(MODERN, &"a".repeat(1 << 20)).into(),
        });
        for case in all {
            if only.is_none() && case.name.contains("1MiB") {
                continue;
            }
            if only.as_deref().is_some_and(|o| o != case.name) {
                continue;
            }
            for _ in 0..n {
                black_box(round_trip(
                    &svc,
                    request(case.proto, case.method, &case.body),
                ));
            }
        }
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
