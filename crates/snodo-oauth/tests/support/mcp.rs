//! The protected MCP endpoint of the tests and the requests they send it.

use std::net::SocketAddr;
use std::time::Duration;

use super::{AuthServer, Reply, SigningKey, now, send};
use serde_json::{Value, json};
use snodo::http::{HttpConfig, Server};
use snodo::protocol::{V2025_03_26, V2025_11_25, V2026_07_28};
use snodo::{NoArguments, Refusal, Runtime, Tool, ToolResult};
use snodo_oauth::{OAuthConfig, ResourceServer, ScopePolicy, TokenInfo};
use snodo_testkit::R2026_07_28;

pub struct Mcp {
    pub addr: SocketAddr,
    pub stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for Mcp {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
    }
}

pub fn free_port() -> SocketAddr {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
    l.local_addr().unwrap_or_else(|e| panic!("{e}"))
}

pub fn resource(addr: SocketAddr) -> String {
    format!("http://{addr}/mcp")
}

/// The MCP server: `whoami` needs only the request-wide scope `mcp`; `delete` also
/// needs `files:write` and `files:delete`.
pub async fn mcp(config: OAuthConfig, addr: SocketAddr, hide: bool) -> Mcp {
    let rs = ResourceServer::discover(config)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let policy = ScopePolicy::new(&rs)
        .tool("delete", ["files:write", "files:delete"])
        .hide_unusable(hide);
    let runtime = Runtime::builder("oauth-test", "0.1.0")
        .protocols([&V2026_07_28, &V2025_11_25, &V2025_03_26])
        .tool(Tool::new("whoami").handler(
            |_: NoArguments, ctx: snodo::RequestContext| async move {
                let t = TokenInfo::of(&ctx);
                ToolResult::text(
                    json!({
                        "principal": ctx.principal().map(|p| p.id().to_owned()),
                        "subject": t.and_then(TokenInfo::subject),
                        "client": t.and_then(TokenInfo::client_id),
                        "scopes": t.map(|t| t.scopes().iter().cloned().collect::<Vec<_>>()),
                        "claims": t.map(|t| Value::Object(t.claims().clone())),
                    })
                    .to_string(),
                )
            },
        ))
        .tool(
            Tool::new("delete")
                .handler(|_: NoArguments, _ctx| async { ToolResult::text("deleted") }),
        )
        .authorizer(policy, Refusal::Conceal)
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let server = Server::bind(
        runtime,
        addr,
        HttpConfig::default().authenticator(rs.clone()),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let server = rs.mount(server);
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        let _ = server
            .run_until(async {
                let _ = rx.await;
            })
            .await;
    });
    Mcp {
        addr,
        stop: Some(tx),
    }
}

pub fn config(auth: &AuthServer, addr: SocketAddr) -> OAuthConfig {
    OAuthConfig::new(auth.issuer(), resource(addr))
        .required_scope("mcp")
        .scope_supported("files:write")
        .claim("email")
        .jwks_min_refresh(Duration::from_millis(200))
}

pub fn claims(auth: &AuthServer, addr: SocketAddr, scope: &str) -> Value {
    json!({
        "iss": auth.issuer(),
        "aud": resource(addr),
        "sub": "alice",
        "client_id": "cli-1",
        "scope": scope,
        "email": "alice@example.com",
        "iat": now(),
        "exp": now() + 600,
    })
}

/// POSTs `body` to `target` (`/mcp`, `/mcp?…`) with the usual MCP headers and `headers`
/// (whole lines, each ending in CRLF).
pub async fn post(m: &Mcp, target: &str, headers: &str, body: &str) -> Reply {
    send(
        m.addr,
        &format!(
            "POST {target} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            m.addr,
            body.len()
        ),
    )
    .await
}

/// A 2026-07-28 tools/call, with `authorization` as the Authorization header value.
pub async fn call(m: &Mcp, authorization: Option<&str>, tool: &str) -> Reply {
    let mut request = R2026_07_28
        .request("tools/call")
        .id(1)
        .params(json!({"name": tool, "arguments": {}}));
    if let Some(a) = authorization {
        request = request.header("Authorization", a);
    }
    request.post(m.addr).await
}

pub async fn bearer(m: &Mcp, token: &str, tool: &str) -> Reply {
    call(m, Some(&format!("Bearer {token}")), tool).await
}

pub fn metadata_url(m: &Mcp) -> String {
    format!("http://{}/.well-known/oauth-protected-resource/mcp", m.addr)
}

/// A 401 whose challenge names the metadata and the scope, with `error` (and a
/// description) exactly when a token was sent.
pub fn assert_401(r: &Reply, m: &Mcp, error: Option<&str>) {
    assert_eq!(r.status, 401, "{r:?}");
    let c = r.challenge();
    assert!(c.starts_with("Bearer "), "{c}");
    assert!(
        c.contains(&format!("resource_metadata=\"{}\"", metadata_url(m))),
        "{c}"
    );
    assert!(c.contains("scope=\"mcp\""), "{c}");
    match error {
        Some(e) => {
            assert!(c.contains(&format!("error=\"{e}\"")), "{c}");
            assert!(c.contains("error_description=\""), "{c}");
        }
        None => assert!(!c.contains("error="), "{c}"),
    }
    let body = r.json();
    assert_eq!(body["jsonrpc"], "2.0");
    assert_eq!(body["error"]["code"], -32600, "{body}");
    assert_eq!(body["error"]["message"], "Unauthorized");
}

pub async fn setup() -> (AuthServer, Mcp, SigningKey) {
    let key = super::rsa("k1");
    let auth = AuthServer::start(&[&key]).await;
    let addr = free_port();
    let m = mcp(config(&auth, addr), addr, true).await;
    (auth, m, key)
}
