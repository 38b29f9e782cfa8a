//! The Prometheus series move as requests are made (feature `metrics`).

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use snodo::http::HttpConfig;
use snodo::metrics::{CONTENT_TYPE, Metrics};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::client::Client;
use crate::support::{MODERN, TestServer, builder};

/// The value of one series (`name{labels}` exactly as exposed); 0 when absent.
fn value(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .map_or(0.0, |v| v.trim().parse().unwrap())
}

const ECHO_OK: &str =
    r#"snodo_requests_total{transport="http",method="tools/call",name="echo",outcome="ok"}"#;

#[tokio::test]
async fn http_counters_histogram_and_refusals_move() {
    let metrics = Metrics::new();
    let server =
        TestServer::start(builder(&MODERN).metrics(metrics.clone()).build().unwrap()).await;
    assert_eq!(value(&metrics.encode(), ECHO_OK), 0.0);
    for id in 1..=2 {
        let r = server
            .modern(
                json!(id),
                "tools/call",
                json!({"name":"echo","arguments":{"text":"x"}}),
                json!({}),
            )
            .await;
        assert_eq!(r.status, 200);
    }
    let r = server
        .modern(
            json!(3),
            "tools/call",
            json!({"name":"made-up","arguments":{}}),
            json!({}),
        )
        .await;
    assert_ne!(r.status, 200);
    let refused = server
        .raw("POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: text/plain\r\nAccept: application/json, text/event-stream\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")
        .await;
    assert_eq!(refused.status, 415);

    let text = metrics.encode();
    assert_eq!(value(&text, ECHO_OK), 2.0, "{text}");
    // A name the catalogue does not hold is not a label.
    assert!(!text.contains("made-up"), "{text}");
    assert_eq!(
        value(
            &text,
            r#"snodo_requests_total{transport="http",method="tools/call",name="",outcome="error"}"#
        ),
        1.0,
        "{text}"
    );
    assert_eq!(
        value(
            &text,
            r#"snodo_refusals_total{transport="http",reason="415"}"#
        ),
        1.0,
        "{text}"
    );
    assert_eq!(
        value(
            &text,
            r#"snodo_request_duration_seconds_count{transport="http",method="tools/call"}"#
        ),
        3.0,
        "{text}"
    );
    assert!(text.ends_with("# EOF\n"));
    let resp = metrics.response();
    assert_eq!(resp.headers()["content-type"], CONTENT_TYPE);
}

#[tokio::test]
async fn in_flight_queued_and_overload_gauges() {
    let metrics = Metrics::new();
    let server = Arc::new(
        TestServer::start_with(
            builder(&MODERN).metrics(metrics.clone()).build().unwrap(),
            HttpConfig::default().execution_limits(1, 1),
        )
        .await,
    );
    let wait = |id: u64| {
        let server = Arc::clone(&server);
        tokio::spawn(async move {
            server
                .modern(
                    json!(id),
                    "tools/call",
                    json!({"name":"wait","arguments":{"tag":format!("m{id}"),"ms":400}}),
                    json!({}),
                )
                .await
                .status
        })
    };
    let first = wait(1);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let second = wait(2);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let text = metrics.encode();
    assert_eq!(value(&text, "snodo_requests_in_flight"), 1.0, "{text}");
    assert_eq!(value(&text, "snodo_requests_queued"), 1.0, "{text}");
    // A third finds the slot busy and the queue full: 503.
    let third = server
        .modern(
            json!(3),
            "tools/call",
            json!({"name":"echo","arguments":{"text":"x"}}),
            json!({}),
        )
        .await;
    assert_eq!(third.status, 503);
    assert_eq!(first.await.unwrap(), 200);
    assert_eq!(second.await.unwrap(), 200);
    let text = metrics.encode();
    assert_eq!(value(&text, "snodo_requests_in_flight"), 0.0, "{text}");
    assert_eq!(value(&text, "snodo_requests_queued"), 0.0, "{text}");
    assert_eq!(
        value(
            &text,
            r#"snodo_refusals_total{transport="http",reason="503"}"#
        ),
        1.0,
        "{text}"
    );
}

#[tokio::test]
async fn open_listen_streams_are_counted() {
    let metrics = Metrics::new();
    let rt = builder(&MODERN)
        .list_changed(true)
        .metrics(metrics.clone())
        .build()
        .unwrap();
    let server = TestServer::start(rt).await;
    let body = json!({"jsonrpc":"2.0","id":"l","method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"notifications":{"toolsListChanged":true}}}).to_string();
    let listen = r#"snodo_open_streams{kind="listen"}"#;
    let mut stream = server
        .open(
            &[
                ("MCP-Protocol-Version", "2026-07-28"),
                ("Mcp-Method", "subscriptions/listen"),
            ],
            &body,
        )
        .await;
    assert_eq!(stream.status, 200);
    assert!(
        stream.next(Duration::from_secs(2)).await.is_some(),
        "acknowledged"
    );
    assert_eq!(value(&metrics.encode(), listen), 1.0);
    drop(stream);
    for _ in 0..100 {
        if value(&metrics.encode(), listen) == 0.0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the listen stream is still counted: {}", metrics.encode());
}

#[tokio::test]
async fn stdio_counts_and_the_metrics_listener_answers() {
    let metrics = Metrics::new();
    let mut client = Client::start(builder(&MODERN).metrics(metrics.clone()).build().unwrap());
    client
        .modern(
            json!(1),
            "tools/call",
            json!({"name":"echo","arguments":{"text":"x"}}),
            json!({}),
        )
        .await;
    let _ = client.recv().await;
    client.line("{oops").await;
    let _ = client.recv().await;
    let _ = client.finish().await;

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let served = tokio::spawn(metrics.clone().serve(listener));
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    tcp.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut raw = String::new();
    tcp.read_to_string(&mut raw).await.unwrap();
    served.abort();
    assert!(raw.starts_with("HTTP/1.1 200"), "{raw}");
    assert_eq!(
        value(
            &raw,
            r#"snodo_requests_total{transport="stdio",method="tools/call",name="echo",outcome="ok"}"#
        ),
        1.0,
        "{raw}"
    );
    assert_eq!(
        value(
            &raw,
            r#"snodo_refusals_total{transport="stdio",reason="-32700"}"#
        ),
        1.0,
        "{raw}"
    );
}

#[tokio::test]
async fn a_tools_own_limits_are_counted_as_refusals() {
    let metrics = Metrics::new();
    let rt = builder(&MODERN)
        .metrics(metrics.clone())
        .tool(
            snodo::Tool::new("limited")
                .rate_limit(snodo::RateLimit::per_principal(1, Duration::from_secs(60)))
                .handler(|_: snodo::NoArguments, _ctx| async { snodo::ToolResult::text("ok") }),
        )
        .build()
        .unwrap();
    let mut client = Client::start(rt);
    for id in 1..=2 {
        client
            .modern(
                json!(id),
                "tools/call",
                json!({"name":"limited","arguments":{}}),
                json!({}),
            )
            .await;
        let _ = client.recv().await;
    }
    let _ = client.finish().await;
    let text = metrics.encode();
    assert_eq!(
        value(
            &text,
            r#"snodo_refusals_total{transport="stdio",reason="tool_rate"}"#
        ),
        1.0,
        "{text}"
    );
    for outcome in ["ok", "tool_error"] {
        let series = format!(
            r#"snodo_requests_total{{transport="stdio",method="tools/call",name="limited",outcome="{outcome}"}}"#
        );
        assert_eq!(value(&text, &series), 1.0, "{text}");
    }
}

#[tokio::test]
async fn open_sse_answers_are_counted() {
    let metrics = Metrics::new();
    let rt = builder(&MODERN)
        .metrics(metrics.clone())
        .tool(snodo::Tool::new("slow_progress").handler(
            |_: snodo::NoArguments, ctx: snodo::RequestContext| async move {
                ctx.progress(0.5, Some(1.0), None).await;
                tokio::time::sleep(Duration::from_millis(300)).await;
                snodo::ToolResult::text("done")
            },
        ))
        .build()
        .unwrap();
    let server = TestServer::start(rt).await;
    let body = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow_progress","arguments":{},"_meta":{
        "progressToken":"p","io.modelcontextprotocol/protocolVersion":"2026-07-28",
        "io.modelcontextprotocol/clientCapabilities":{}}}})
    .to_string();
    let sse = r#"snodo_open_streams{kind="sse"}"#;
    let mut stream = server
        .open(
            &[
                ("MCP-Protocol-Version", "2026-07-28"),
                ("Mcp-Method", "tools/call"),
                ("Mcp-Name", "slow_progress"),
            ],
            &body,
        )
        .await;
    assert_eq!(stream.status, 200);
    let progress = stream.next(Duration::from_secs(2)).await.unwrap();
    assert_eq!(progress["method"], "notifications/progress");
    assert_eq!(value(&metrics.encode(), sse), 1.0);
    let last = stream.next(Duration::from_secs(2)).await.unwrap();
    assert_eq!(last["id"], 1);
    for _ in 0..100 {
        if value(&metrics.encode(), sse) == 0.0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the SSE answer is still counted: {}", metrics.encode());
}
