//! The client over HTTP/2 and a Unix socket (issue 36): snodo's server on 127.0.0.1
//! (or a socket in a temporary folder) behind a counting TCP relay, so that the test
//! sees how many connections the client opened: one HTTP/2 connection carries 100
//! concurrent calls, where HTTP/1.1 needs many.

// Tests panic on purpose when an expectation fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::json;
use snodo::http::{HttpConfig, Server, TlsCertificates};
use snodo::{NoArguments, Runtime, Tool, ToolResult};
use snodo_client::Client;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

fn runtime() -> Runtime {
    Runtime::builder("transports", "1")
        .tool(
            Tool::new("nap")
                .description("Answers after 200 ms")
                .handler(|_: NoArguments, _ctx| async {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    ToolResult::text("rested")
                }),
        )
        .build()
        .unwrap()
}

/// Runs `server` until the returned sender is dropped.
fn run(server: Server) -> oneshot::Sender<()> {
    let (tx, rx) = oneshot::channel::<()>();
    tokio::spawn(server.run_until(async {
        let _ = rx.await;
    }));
    tx
}

/// A TCP relay to `to` that counts the connections it accepted.
async fn counting_relay(to: SocketAddr) -> (SocketAddr, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let count = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&count);
    tokio::spawn(async move {
        while let Ok((mut inbound, _)) = listener.accept().await {
            counted.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                if let Ok(mut out) = TcpStream::connect(to).await {
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut out).await;
                }
            });
        }
    });
    (addr, count)
}

/// 100 concurrent calls on `client`; each must answer.
async fn hundred_calls(client: &Client) {
    let calls = (0..100).map(|_| {
        let c = client.clone();
        tokio::spawn(async move { c.call_tool("nap", json!({})).await })
    });
    let started = std::time::Instant::now();
    for call in calls.collect::<Vec<_>>() {
        let r = call.await.unwrap().unwrap();
        assert!(!r.is_error);
    }
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

async fn tcp_server(config: HttpConfig) -> Server {
    Server::bind(runtime(), "127.0.0.1:0".parse().unwrap(), config)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_hundred_concurrent_calls_share_one_h2c_connection() {
    let server = tcp_server(HttpConfig::default()).await;
    let (relay, accepted) = counting_relay(server.local_addr().unwrap()).await;
    let _stop = run(server);
    let client = Client::builder("t", "1")
        .http2_prior_knowledge()
        .connect_http(&format!("http://{relay}/mcp"))
        .await
        .unwrap();
    hundred_calls(&client).await;
    assert_eq!(accepted.load(Ordering::SeqCst), 1, "one HTTP/2 connection");
}

#[tokio::test]
async fn http1_opens_a_connection_per_concurrent_call() {
    // The same count over HTTP/1.1, so that the relay's count is seen to move.
    let server = tcp_server(HttpConfig::default()).await;
    let (relay, accepted) = counting_relay(server.local_addr().unwrap()).await;
    let _stop = run(server);
    let client = Client::builder("t", "1")
        .connect_http(&format!("http://{relay}/mcp"))
        .await
        .unwrap();
    hundred_calls(&client).await;
    assert!(accepted.load(Ordering::SeqCst) >= 50, "{accepted:?}");
}

#[tokio::test]
async fn https_picks_h2_by_alpn() {
    let dir = tempfile::tempdir().unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["localhost".to_owned()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    let (c, k) = (dir.path().join("c.pem"), dir.path().join("k.pem"));
    std::fs::write(&c, cert.pem()).unwrap();
    std::fs::write(&k, key.serialize_pem()).unwrap();
    let server = tcp_server(HttpConfig::default())
        .await
        .tls(TlsCertificates::load(&c, &k).unwrap());
    let (relay, accepted) = counting_relay(server.local_addr().unwrap()).await;
    let _stop = run(server);
    let client = Client::builder("t", "1")
        .root_certificates_pem(cert.pem())
        .connect_http(&format!("https://localhost:{}/mcp", relay.port()))
        .await
        .unwrap();
    hundred_calls(&client).await;
    assert_eq!(accepted.load(Ordering::SeqCst), 1, "ALPN chose HTTP/2");
}

#[tokio::test]
async fn over_a_unix_socket_in_both_versions() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mcp.sock");
    let server = Server::bind_unix(runtime(), &path, None, HttpConfig::default()).unwrap();
    let _stop = run(server);
    for h2 in [false, true] {
        let mut b = Client::builder("t", "1").unix_socket(&path);
        if h2 {
            b = b.http2_prior_knowledge();
        }
        let client = b.connect_http("http://localhost/mcp").await.unwrap();
        let r = client.call_tool("nap", json!({})).await.unwrap();
        assert!(!r.is_error, "h2={h2}");
    }
    let missing = Client::builder("t", "1")
        .unix_socket(dir.path().join("none.sock"))
        .connect_http("http://localhost/mcp")
        .await
        .expect_err("no socket there");
    assert!(missing.to_string().contains("none.sock"), "{missing}");
}
