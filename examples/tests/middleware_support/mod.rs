//! What the middleware example's test binaries share: the example server on a loopback
//! socket, a client holding a bearer token, a tool call.

#![allow(dead_code)]

use std::net::SocketAddr;

use http::{HeaderName, HeaderValue};
use serde_json::json;
use snodo::Principal;
use snodo::http::{BearerTokens, HttpConfig, Server};
use snodo_client::Client;
use tokio::sync::oneshot;

pub struct Running {
    pub addr: SocketAddr,
    _stop: oneshot::Sender<()>,
}

pub async fn serve() -> Running {
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

pub async fn client(s: &Running, token: &str) -> Client {
    Client::builder("middleware-test", "1.0.0")
        .header(
            HeaderName::from_static("authorization"),
            HeaderValue::from_str(&format!("Bearer {token}")).unwrap(),
        )
        .connect_http(&format!("http://{}/mcp", s.addr))
        .await
        .unwrap()
}

pub async fn call(c: &Client, name: &str) -> Result<String, i64> {
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
