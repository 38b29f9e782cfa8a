//! The client's stdio connector against `snodo::stdio` over an in-memory duplex: every
//! version, server questions as requests on the stream, `notifications/cancelled` when
//! a call is dropped.

mod support;

use serde_json::json;
use snodo::stdio::StdioConfig;
use snodo_client::{Client, Protocol};
use support::{Flags, all_versions, builder, exercise, runtime_for};

async fn over_duplex(server: &[&str], protocol: Protocol, flags: &Flags) -> Client {
    let rt = runtime_for(server, flags);
    let (client_end, server_end) = tokio::io::duplex(64 * 1024);
    let (sr, sw) = tokio::io::split(server_end);
    tokio::spawn(async move {
        let _ = snodo::stdio::serve_stream(rt, sr, sw, StdioConfig::default()).await;
    });
    let (cr, cw) = tokio::io::split(client_end);
    builder()
        .protocol(protocol)
        .connect_stream(cr, cw)
        .await
        .unwrap_or_else(|e| panic!("connect: {e}"))
}

#[tokio::test]
async fn every_version_over_a_byte_stream() {
    let flags = Flags::default();
    let c = over_duplex(&all_versions(), Protocol::Auto, &flags).await;
    assert_eq!(c.protocol_version(), "2026-07-28");
    exercise(&c).await;
    c.close().await;
    for v in ["2025-11-25", "2025-06-18", "2025-03-26"] {
        let c = over_duplex(&[v], Protocol::Auto, &flags).await;
        assert_eq!(c.protocol_version(), v);
        exercise(&c).await;
        c.close().await;
    }
}

#[tokio::test]
async fn dropping_a_call_sends_cancelled() {
    for v in ["2026-07-28", "2025-11-25"] {
        let flags = Flags::default();
        let c = over_duplex(&[v], Protocol::Pinned(v.into()), &flags).await;
        let call = c.call_tool("wait", json!({}));
        flags.drop_once_started(call, v).await;
        // The connection still works.
        let r = c
            .call_tool("echo", json!({"text": "after"}))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.text(), "after");
    }
}

#[tokio::test]
async fn a_closed_stream_is_a_transport_error() {
    let (client_end, server_end) = tokio::io::duplex(1024);
    drop(server_end);
    let (cr, cw) = tokio::io::split(client_end);
    let err = Client::builder("t", "1")
        .connect_stream(cr, cw)
        .await
        .err()
        .unwrap_or_else(|| panic!("connected to nothing"));
    assert!(
        matches!(err, snodo_client::ClientError::Transport(_)),
        "{err:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_calls_share_one_stream() {
    for v in ["2026-07-28", "2025-06-18"] {
        let c = over_duplex(&[v], Protocol::Pinned(v.into()), &Flags::default()).await;
        let calls: Vec<_> = (0..16)
            .map(|i| {
                let c = c.clone();
                tokio::spawn(
                    async move { c.call_tool("echo", json!({"text": format!("n{i}")})).await },
                )
            })
            .collect();
        for (i, call) in calls.into_iter().enumerate() {
            let r = call
                .await
                .unwrap_or_else(|e| panic!("{e}"))
                .unwrap_or_else(|e| panic!("{v}: {e}"));
            assert_eq!(
                r.text(),
                format!("n{i}"),
                "{v}: answers go to their callers"
            );
        }
        c.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_large_and_small_calls_arrive_whole() {
    // Lines longer than the writer's coalescing buffer (64 KiB) between small ones,
    // queued at once: each answer is its own call's, byte for byte.
    let c = over_duplex(
        &["2025-06-18"],
        Protocol::Pinned("2025-06-18".into()),
        &Flags::default(),
    )
    .await;
    let text = |i: usize| {
        let n = if i % 3 == 0 { 100 * 1024 + i } else { 10 + i };
        format!("{i}:{}", "x".repeat(n))
    };
    let calls: Vec<_> = (0..24)
        .map(|i| {
            let c = c.clone();
            tokio::spawn(async move { c.call_tool("echo", json!({"text": text(i)})).await })
        })
        .collect();
    for (i, call) in calls.into_iter().enumerate() {
        let r = call
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|e| panic!("{i}: {e}"));
        assert!(r.text() == text(i), "call {i}: its own answer, whole");
    }
    c.close().await;
}
