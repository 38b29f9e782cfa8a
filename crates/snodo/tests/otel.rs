//! Feature `otlp`: the request spans, exported through the OpenTelemetry SDK, carry the
//! MCP semantic-convention attributes and the caller's parent from `_meta` (HTTP and
//! stdio) or the `traceparent` header (HTTP).

// Tests panic on purpose when an expectation fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "wire/support.rs"]
#[allow(dead_code, unused_imports)]
mod support;

#[path = "stdio/client.rs"]
#[allow(dead_code, unused_imports)]
mod client;

#[path = "observe/trace.rs"]
#[allow(dead_code)]
mod trace;

use std::sync::{Arc, Mutex};

use opentelemetry::trace::{SpanId, SpanKind, TraceId};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};
use serde_json::json;
use tracing_subscriber::layer::SubscriberExt as _;

use client::Client;
use support::TestServer;
use trace::{HEADER_PARENT, HEADERS, PARENT, call_body, runtime};

/// Keeps every exported span.
#[derive(Clone, Debug, Default)]
struct Keep(Arc<Mutex<Vec<SpanData>>>);

impl SpanExporter for Keep {
    fn export(&self, batch: Vec<SpanData>) -> impl Future<Output = OTelSdkResult> + Send {
        self.0.lock().unwrap().extend(batch);
        std::future::ready(Ok(()))
    }
}

fn install() -> (Keep, tracing::subscriber::DefaultGuard) {
    let keep = Keep::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(keep.clone())
        .build();
    let subscriber = tracing_subscriber::registry().with(snodo::otlp::layer(&provider));
    (keep, tracing::subscriber::set_default(subscriber))
}

fn attr(span: &SpanData, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.as_str().into_owned())
}

async fn spans(keep: &Keep, n: usize) -> Vec<SpanData> {
    for _ in 0..200 {
        if keep.0.lock().unwrap().len() >= n {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    keep.0.lock().unwrap().clone()
}

fn assert_parent(span: &SpanData, traceparent: &str) {
    let parts: Vec<&str> = traceparent.split('-').collect();
    assert_eq!(
        span.span_context.trace_id(),
        TraceId::from_hex(parts[1]).unwrap()
    );
    assert_eq!(span.parent_span_id, SpanId::from_hex(parts[2]).unwrap());
    assert!(span.parent_span_is_remote);
}

#[tokio::test]
async fn http_spans_follow_the_conventions_and_the_callers_parent() {
    let (keep, _guard) = install();
    let server = TestServer::start(runtime()).await;
    let r = server
        .post(&HEADERS, &call_body(1, json!({"traceparent": PARENT})))
        .await;
    assert_eq!(r.status, 200);
    let mut with_header = HEADERS.to_vec();
    with_header.push(("traceparent", HEADER_PARENT));
    let r = server.post(&with_header, &call_body(2, json!({}))).await;
    assert_eq!(r.status, 200);
    let r = server
        .modern(
            json!(3),
            "tools/call",
            json!({"name":"failing","arguments":{}}),
            json!({}),
        )
        .await;
    assert_eq!(r.status, 200);

    let spans = spans(&keep, 3).await;
    assert_eq!(spans.len(), 3, "{spans:#?}");
    let s = &spans[0];
    assert_eq!(s.name, "tools/call trace");
    assert_eq!(s.span_kind, SpanKind::Server);
    assert_eq!(attr(s, "mcp.method.name").as_deref(), Some("tools/call"));
    assert_eq!(attr(s, "gen_ai.tool.name").as_deref(), Some("trace"));
    assert_eq!(
        attr(s, "gen_ai.operation.name").as_deref(),
        Some("execute_tool")
    );
    assert_eq!(
        attr(s, "mcp.protocol.version").as_deref(),
        Some("2026-07-28")
    );
    assert_eq!(attr(s, "jsonrpc.request.id").as_deref(), Some("1"));
    assert_eq!(attr(s, "error.type"), None);
    assert_parent(s, PARENT);
    assert_parent(&spans[1], HEADER_PARENT);
    assert_eq!(attr(&spans[2], "error.type").as_deref(), Some("tool_error"));
    assert_eq!(
        spans[2].parent_span_id,
        SpanId::INVALID,
        "no parent: a root span"
    );
}

#[tokio::test]
async fn stdio_spans_take_the_parent_from_meta() {
    let (keep, _guard) = install();
    let mut client = Client::start(runtime());
    client
        .line(&call_body(7, json!({"traceparent": PARENT})))
        .await;
    let answer = client.recv().await;
    assert_eq!(answer["id"], 7);
    client
        .modern(
            json!(8),
            "prompts/get",
            json!({"name":"missing"}),
            json!({}),
        )
        .await;
    let missing = client.recv().await;
    let _ = client.finish().await;

    let spans = spans(&keep, 2).await;
    assert_eq!(spans.len(), 2, "{spans:#?}");
    assert_parent(&spans[0], PARENT);
    assert_eq!(attr(&spans[0], "jsonrpc.request.id").as_deref(), Some("7"));
    assert_eq!(spans[1].name, "prompts/get missing");
    assert_eq!(
        attr(&spans[1], "gen_ai.prompt.name").as_deref(),
        Some("missing")
    );
    assert_eq!(
        attr(&spans[1], "error.type"),
        Some(missing["error"]["code"].to_string())
    );
}

#[tokio::test]
async fn a_listen_subscription_has_a_span_as_long_as_it_is_open() {
    let (keep, _guard) = install();
    let rt = support::builder(&support::MODERN)
        .list_changed(true)
        .build()
        .unwrap();
    let server = TestServer::start(rt).await;
    let body = json!({"jsonrpc":"2.0","id":"sub","method":"subscriptions/listen","params":{"_meta":{
        "traceparent": PARENT,
        "io.modelcontextprotocol/protocolVersion":"2026-07-28",
        "io.modelcontextprotocol/clientCapabilities":{}},"notifications":{"toolsListChanged":true}}})
    .to_string();
    let mut stream = server
        .open(
            &[
                ("MCP-Protocol-Version", "2026-07-28"),
                ("Mcp-Method", "subscriptions/listen"),
            ],
            &body,
        )
        .await;
    assert!(
        stream
            .next(std::time::Duration::from_secs(2))
            .await
            .is_some(),
        "acknowledged"
    );
    assert!(keep.0.lock().unwrap().is_empty(), "still open");
    drop(stream);
    let spans = spans(&keep, 1).await;
    assert_eq!(spans.len(), 1, "{spans:#?}");
    assert_eq!(spans[0].name, "subscriptions/listen");
    assert_parent(&spans[0], PARENT);
}
