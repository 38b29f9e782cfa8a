//! Wire tests of the listeners' edges (issue 37): malformed Host headers, the request
//! log of paths other than `/mcp`, the typed non-loopback refusal, and the metrics
//! listener's connection limits. Real loopback sockets; see `docs/limits.md`.

// Tests panic on purpose when an expectation fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "wire/support.rs"]
#[allow(dead_code, unused_imports)]
mod support;

use std::net::SocketAddr;

use snodo::http::{HttpConfig, ServeError, Server};
use snodo_testkit::logs::Captured;

use support::{MODERN, R2026_07_28, TestServer, builder};

async fn start() -> TestServer {
    TestServer::start_with(builder(&MODERN).build().unwrap(), HttpConfig::default()).await
}

/// A discover request with this `Host`.
fn with_host(host: &str) -> String {
    let body = R2026_07_28.request("server/discover").id(1).body();
    format!(
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: server/discover\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

#[tokio::test]
async fn malformed_hosts_are_refused() {
    let s = start().await;
    let port = s.addr.port();
    for host in [
        "[::1]evil.com".to_owned(),
        format!("[::1].evil.com:{port}"),
        "[::1]@evil.com".to_owned(),
        format!("[::1]:{port}x"),
        format!("127.0.0.1@evil.com:{port}"),
        "[127.0.0.1".to_owned(),
    ] {
        let r = s.raw(&with_host(&host)).await;
        assert_eq!(r.status, 403, "{host}: {}", r.text());
        assert_eq!(r.json()["error"]["code"], -32600);
    }
    for host in [
        format!("[::1]:{port}"),
        "[::1]".to_owned(),
        format!("localhost:{port}"),
    ] {
        assert_eq!(s.raw(&with_host(&host)).await.status, 200, "{host}");
    }
}

#[tokio::test]
async fn a_non_loopback_bind_is_a_typed_refusal() {
    let any: SocketAddr = "0.0.0.0:0".parse().unwrap();
    let err = Server::bind(
        builder(&MODERN).build().unwrap(),
        any,
        HttpConfig::default(),
    )
    .await
    .expect_err("refused");
    assert!(
        matches!(err, ServeError::NonLoopback { addr } if addr == any),
        "{err}"
    );
}

#[tokio::test]
async fn requests_to_other_paths_are_in_the_request_log() {
    let sink = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(sink.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::INFO)
        .finish();
    let _ = tracing::subscriber::set_global_default(subscriber);
    let s = start().await;
    let r = s
        .raw("GET /.well-known/oauth-protected-resource HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n")
        .await;
    assert_eq!(r.status, 404);
    let r = s
        .raw("GET /healthz HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n")
        .await;
    assert_eq!(r.status, 200);
    let log = sink.text();
    let probe = log
        .lines()
        .find(|l| l.contains("/.well-known/oauth-protected-resource"))
        .unwrap_or_else(|| panic!("no line for the probe in {log}"));
    assert!(probe.contains("snodo::request"), "{probe}");
    assert!(probe.contains("status=404"), "{probe}");
    assert!(
        probe.contains("http_method=\"GET\"") || probe.contains("http_method=GET"),
        "{probe}"
    );
    assert!(
        log.lines()
            .any(|l| l.contains("/healthz") && l.contains("status=200")),
        "{log}"
    );
}

/// The metrics listener (feature `metrics`).
#[cfg(feature = "metrics")]
mod metrics_listener {
    use std::time::Duration;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    #[tokio::test]
    async fn the_metrics_listener_caps_its_connections() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(snodo::metrics::Metrics::new().serve(listener));
        let scrape = || async move {
            let mut c = TcpStream::connect(addr).await.unwrap();
            c.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                .await
                .unwrap();
            let mut buf = Vec::new();
            tokio::time::timeout(Duration::from_secs(1), c.read_to_end(&mut buf))
                .await
                .ok()
                .map(|_| buf)
        };
        assert!(
            scrape()
                .await
                .is_some_and(|b| b.starts_with(b"HTTP/1.1 200"))
        );
        // Idle connections (half a head each) up to the cap: a scrape waits for a slot.
        let mut idle = Vec::new();
        for _ in 0..16 {
            let mut c = TcpStream::connect(addr).await.unwrap();
            c.write_all(b"GET /metrics HTTP/1.1\r\n").await.unwrap();
            idle.push(c);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(scrape().await.is_none(), "a 17th connection waits");
        idle.pop();
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(
            scrape()
                .await
                .is_some_and(|b| b.starts_with(b"HTTP/1.1 200"))
        );
    }
}
