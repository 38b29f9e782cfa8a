//! The middleware example over a loopback socket, driven by snodo-client: the audit
//! log's events, the cache honouring `ttlMs`, the deny-list per principal.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::time::Duration;

use http::{HeaderName, HeaderValue};
use serde_json::json;
use snodo::Principal;
use snodo::http::{BearerTokens, HttpConfig, Server};
use snodo_client::Client;
use snodo_testkit::logs::Captured;
use tokio::sync::oneshot;

struct Running {
    addr: SocketAddr,
    _stop: oneshot::Sender<()>,
}

async fn serve() -> Running {
    let auth = BearerTokens::new("https://mcp.example.com/.well-known/oauth-protected-resource")
        .token("t-ops", Principal::new("ops"))
        .token("t-guest", Principal::new("guest"))
        .token("t-dev", Principal::new("dev"));
    let runtime = snodo_examples::middleware::runtime().unwrap();
    let config = HttpConfig::default().authenticator(auth);
    let server = Server::bind(runtime, "127.0.0.1:0".parse().unwrap(), config)
        .await
        .unwrap();
    let addr = server.local_addr().unwrap();
    let (stop, rx) = oneshot::channel::<()>();
    tokio::spawn(server.run_until(async {
        let _ = rx.await;
    }));
    Running { addr, _stop: stop }
}

async fn client(s: &Running, token: &str) -> Client {
    Client::builder("middleware-test", "1.0.0")
        .header(
            HeaderName::from_static("authorization"),
            HeaderValue::from_str(&format!("Bearer {token}")).unwrap(),
        )
        .connect_http(&format!("http://{}/mcp", s.addr))
        .await
        .unwrap()
}

async fn call(c: &Client, name: &str) -> Result<String, i64> {
    c.request("tools/call", json!({"name": name, "arguments": {}}))
        .await
        .map(|r| {
            r["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .map_err(|e| e.code().map_or(0, |c| c.0))
}

async fn tool_names(c: &Client) -> Vec<String> {
    let r = c.request("tools/list", json!({})).await.unwrap();
    r["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn the_deny_list_refuses_and_hides_per_principal() {
    let s = serve().await;
    let dev = client(&s, "t-dev").await;
    assert_eq!(call(&dev, "hello").await, Ok("hello".to_owned()));
    assert_eq!(call(&dev, "deploy_prod").await, Err(-32602));
    assert_eq!(tool_names(&dev).await, ["hello"]);
    let guest = client(&s, "t-guest").await;
    assert_eq!(call(&guest, "hello").await, Err(-32602));
    assert!(tool_names(&guest).await.is_empty());
    let ops = client(&s, "t-ops").await;
    assert_eq!(call(&ops, "deploy_prod").await, Ok("deployed".to_owned()));
    assert_eq!(tool_names(&ops).await, ["hello", "deploy_prod"]);
}

async fn read(c: &Client) -> String {
    let r = c
        .request("resources/read", json!({"uri": "config://app"}))
        .await
        .unwrap();
    assert_eq!(r["ttlMs"], 200, "{r}");
    r["contents"][0]["text"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn the_cache_keeps_a_result_for_its_ttl() {
    let s = serve().await;
    let dev = client(&s, "t-dev").await;
    let first = read(&dev).await;
    assert_eq!(first, "read 1");
    // Within ttlMs (200 ms) the reader is not reached again, for anyone (public scope).
    assert_eq!(read(&dev).await, "read 1");
    assert_eq!(read(&client(&s, "t-ops").await).await, "read 1");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(read(&dev).await, "read 2");
    // Tool results carry no ttlMs: never kept.
    assert_eq!(call(&dev, "hello").await, Ok("hello".to_owned()));
}

#[tokio::test]
async fn the_audit_log_records_every_request() {
    let captured = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(captured.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::INFO)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    // Another test of this binary may have left the audit callsite's interest cached
    // as "never" (it ran with no subscriber).
    tracing::callsite::rebuild_interest_cache();
    let s = serve().await;
    let dev = client(&s, "t-dev").await;
    assert_eq!(call(&dev, "hello").await, Ok("hello".to_owned()));
    assert_eq!(call(&dev, "deploy_prod").await, Err(-32602));
    let text = captured.text();
    let audit: Vec<&str> = text.lines().filter(|l| l.contains(" audit: ")).collect();
    let hello = audit
        .iter()
        .find(|l| l.contains("component=\"hello\"") || l.contains("component=hello"))
        .unwrap_or_else(|| panic!("no audit event for hello in {text}"));
    assert!(hello.contains("method=tools/call"), "{hello}");
    assert!(
        hello.contains("principal=\"dev\"") || hello.contains("principal=dev"),
        "{hello}"
    );
    assert!(hello.contains("outcome=ok"), "{hello}");
    assert!(hello.contains("duration_us="), "{hello}");
    let denied = audit
        .iter()
        .find(|l| l.contains("deploy_prod"))
        .unwrap_or_else(|| panic!("no audit event for deploy_prod in {text}"));
    assert!(
        denied.contains("outcome=error: Unknown tool: deploy_prod"),
        "{denied}"
    );
}
