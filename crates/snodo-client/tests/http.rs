//! The client over a real socket: snodo's HTTP server on 127.0.0.1.

mod support;

use std::net::SocketAddr;

use serde_json::json;
use snodo::http::{HttpConfig, Server};
use snodo_client::Protocol;
use support::{Flags, all_versions, builder, exercise, runtime_for};
use tokio::sync::oneshot;

async fn serve(versions: &[&str], flags: &Flags) -> (SocketAddr, oneshot::Sender<()>) {
    let rt = runtime_for(versions, flags);
    let server = Server::bind(rt, ([127, 0, 0, 1], 0).into(), HttpConfig::default())
        .await
        .unwrap_or_else(|e| panic!("bind: {e}"));
    let addr = server.local_addr().unwrap_or_else(|e| panic!("{e}"));
    let (tx, rx) = oneshot::channel();
    tokio::spawn(async move {
        let _ = server
            .run_until(async {
                let _ = rx.await;
            })
            .await;
    });
    (addr, tx)
}

#[tokio::test]
async fn every_version_over_http() {
    let flags = Flags::default();
    let (addr, stop) = serve(&all_versions(), &flags).await;
    let url = format!("http://{addr}/mcp");
    for p in ["auto", "2025-11-25", "2025-06-18", "2025-03-26"] {
        let protocol: Protocol = p.parse().unwrap_or_else(|e| panic!("{e}"));
        let c = builder()
            .protocol(protocol)
            .connect_http(&url)
            .await
            .unwrap_or_else(|e| panic!("{p}: {e}"));
        if p == "auto" {
            assert_eq!(c.protocol_version(), "2026-07-28");
        }
        exercise(&c).await;
        c.close().await;
    }
    let _ = stop.send(());
}

#[tokio::test]
async fn dropping_a_call_closes_its_stream() {
    let flags = Flags::default();
    let (addr, stop) = serve(&["2026-07-28"], &flags).await;
    let c = builder()
        .connect_http(&format!("http://{addr}/mcp"))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let opts = snodo_client::CallOptions::default().on_progress(|_| {});
    let call = c.call_tool_with("wait", json!({}), &opts);
    flags.drop_once_started(call, "http").await;
    let _ = stop.send(());
}

#[tokio::test]
async fn connection_refused_and_bad_urls_are_transport_errors() {
    let err = builder().connect_http("http://127.0.0.1:1/mcp").await.err();
    assert!(
        matches!(err, Some(snodo_client::ClientError::Transport(_))),
        "{err:?}"
    );
    // With the `https` feature an unknown https host is a connection error; without it
    // the URL is refused.
    let err = builder()
        .connect_http("https://host.invalid/mcp")
        .await
        .err();
    assert!(
        matches!(&err, Some(snodo_client::ClientError::Transport(t))
            if t.contains("is not an") != cfg!(feature = "https")),
        "{err:?}"
    );
    let err = builder().connect_http("ftp://127.0.0.1/mcp").await.err();
    assert!(
        matches!(&err, Some(snodo_client::ClientError::Transport(t)) if t.contains("is not an")),
        "{err:?}"
    );
    let err = builder().connect_http("not a url").await.err();
    assert!(
        matches!(err, Some(snodo_client::ClientError::Transport(_))),
        "{err:?}"
    );
}
