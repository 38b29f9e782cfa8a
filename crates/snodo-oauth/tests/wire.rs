//! Every failure mode of bearer authentication at the wire: literal requests in,
//! status, `WWW-Authenticate` and body checked. Tokens are signed in-process with
//! generated RSA and EC keys; the JWKS is served by a stand-in authorization server on
//! 127.0.0.1.

mod support;

use std::net::SocketAddr;
use std::time::Duration;

use jsonwebtoken::{EncodingKey, Header, encode};
use serde_json::{Value, json};
use snodo::http::{HttpConfig, Server};
use snodo::protocol::{V2025_11_25, V2026_07_28};
use snodo::{NoArguments, Refusal, Runtime, Tool, ToolResult};
use snodo_oauth::{Introspection, OAuthConfig, ResourceServer, ScopePolicy, TokenInfo};
use support::{AuthServer, Reply, SigningKey, now, send, sign, unsigned};

struct Mcp {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for Mcp {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
    }
}

fn free_port() -> SocketAddr {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
    l.local_addr().unwrap_or_else(|e| panic!("{e}"))
}

fn resource(addr: SocketAddr) -> String {
    format!("http://{addr}/mcp")
}

/// The MCP server: `whoami` needs only the request-wide scope `mcp`; `delete` also
/// needs `files:write` and `files:delete`.
async fn mcp(config: OAuthConfig, addr: SocketAddr, hide: bool) -> Mcp {
    let rs = ResourceServer::discover(config)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let policy = ScopePolicy::new(&rs)
        .tool("delete", ["files:write", "files:delete"])
        .hide_unusable(hide);
    let runtime = Runtime::builder("oauth-test", "0.1.0")
        .protocols([&V2026_07_28, &V2025_11_25])
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

fn config(auth: &AuthServer, addr: SocketAddr) -> OAuthConfig {
    OAuthConfig::new(auth.issuer(), resource(addr))
        .required_scope("mcp")
        .scope_supported("files:write")
        .claim("email")
        .jwks_min_refresh(Duration::from_millis(200))
}

fn claims(auth: &AuthServer, addr: SocketAddr, scope: &str) -> Value {
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

/// A 2026-07-28 tools/call, with `authorization` as the Authorization header value.
async fn call(m: &Mcp, authorization: Option<&str>, tool: &str) -> Reply {
    let body = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{
        "name": tool, "arguments": {},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}
        }
    }})
    .to_string();
    let auth = authorization.map_or(String::new(), |a| format!("Authorization: {a}\r\n"));
    send(
        m.addr,
        &format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: {tool}\r\n{auth}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            m.addr,
            body.len()
        ),
    )
    .await
}

async fn bearer(m: &Mcp, token: &str, tool: &str) -> Reply {
    call(m, Some(&format!("Bearer {token}")), tool).await
}

fn metadata_url(m: &Mcp) -> String {
    format!("http://{}/.well-known/oauth-protected-resource/mcp", m.addr)
}

/// A 401 whose challenge names the metadata and the scope, with `error` (and a
/// description) exactly when a token was sent.
fn assert_401(r: &Reply, m: &Mcp, error: Option<&str>) {
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

async fn setup() -> (AuthServer, Mcp, SigningKey) {
    let key = support::rsa("k1");
    let auth = AuthServer::start(&[&key]).await;
    let addr = free_port();
    let m = mcp(config(&auth, addr), addr, true).await;
    (auth, m, key)
}

#[tokio::test]
async fn a_valid_token_reaches_the_handler_with_its_principal() {
    let (auth, m, key) = setup().await;
    let token = sign(&key, &claims(&auth, m.addr, "mcp files:read"));
    let r = bearer(&m, &token, "whoami").await;
    assert_eq!(r.status, 200, "{r:?}");
    let text = r.json()["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let who: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        who,
        json!({
            "principal": "alice", "subject": "alice", "client": "cli-1",
            "scopes": ["files:read", "mcp"], "claims": {"email": "alice@example.com"}
        })
    );
    // ES256 keys work as well; scheme and host of the audience compare case-insensitively.
    let ec = support::ec("e1");
    auth.with(|s| s.jwks.push(ec.jwk.clone()));
    tokio::time::sleep(Duration::from_millis(250)).await;
    let mut c = claims(&auth, m.addr, "mcp");
    c["aud"] = json!(format!("HTTP://127.0.0.1:{}/mcp", m.addr.port()));
    let r = bearer(&m, &sign(&ec, &c), "whoami").await;
    assert_eq!(r.status, 200, "{r:?}");
}

#[tokio::test]
async fn missing_wrong_scheme_empty_and_garbage() {
    let (_auth, m, _key) = setup().await;
    assert_401(&call(&m, None, "whoami").await, &m, None);
    assert_401(
        &call(&m, Some("Basic YWxpY2U6cHc="), "whoami").await,
        &m,
        None,
    );
    assert_401(
        &call(&m, Some("Bearer"), "whoami").await,
        &m,
        Some("invalid_token"),
    );
    assert_401(
        &call(&m, Some("Bearer    "), "whoami").await,
        &m,
        Some("invalid_token"),
    );
    assert_401(
        &bearer(&m, "garbage", "whoami").await,
        &m,
        Some("invalid_token"),
    );
    assert_401(
        &bearer(&m, "a.b.c", "whoami").await,
        &m,
        Some("invalid_token"),
    );
}

#[tokio::test]
async fn bad_signature_none_and_hmac_confusion() {
    let (auth, m, key) = setup().await;
    let c = claims(&auth, m.addr, "mcp");
    // Signed by another key under the issuer's kid.
    let forged = sign(&support::rsa_impostor("k1"), &c);
    let r = bearer(&m, &forged, "whoami").await;
    assert_401(&r, &m, Some("invalid_token"));
    assert!(
        r.challenge().contains("signature is invalid"),
        "{}",
        r.challenge()
    );
    // alg: none, with and without an (empty) signature.
    let none = unsigned(&json!({"alg":"none","typ":"JWT","kid":"k1"}), &c, "");
    assert_401(
        &bearer(&m, &none, "whoami").await,
        &m,
        Some("invalid_token"),
    );
    let none = unsigned(&json!({"alg":"none","typ":"JWT","kid":"k1"}), &c, "AAAA");
    let r = bearer(&m, &none, "whoami").await;
    assert_401(&r, &m, Some("invalid_token"));
    assert!(r.challenge().contains("algorithm"), "{}", r.challenge());
    // HS256 "signed" with the issuer's public key.
    let mut header = Header::new(jsonwebtoken::Algorithm::HS256);
    header.kid = Some("k1".into());
    let hmac = encode(&header, &c, &EncodingKey::from_secret(&key.public))
        .unwrap_or_else(|e| panic!("{e}"));
    let r = bearer(&m, &hmac, "whoami").await;
    assert_401(&r, &m, Some("invalid_token"));
    assert!(r.challenge().contains("algorithm"), "{}", r.challenge());
}

#[tokio::test]
async fn wrong_issuer_audience_expired_not_yet_valid() {
    let (auth, m, key) = setup().await;
    let cases: [(&str, Value, &str); 6] = [
        ("iss", json!("http://evil.example"), "another issuer"),
        (
            "aud",
            json!("http://127.0.0.1:1/mcp"),
            "not issued for this resource",
        ),
        (
            "aud",
            json!(format!("http://{}/other", m.addr)),
            "not issued for this resource",
        ),
        ("exp", json!(now() - 3600), "expired"),
        ("nbf", json!(now() + 3600), "not valid yet"),
        ("aud", Value::Null, "not issued for this resource"),
    ];
    for (claim, value, says) in cases {
        let mut c = claims(&auth, m.addr, "mcp");
        if value.is_null() {
            c.as_object_mut().map(|o| o.remove(claim));
        } else {
            c[claim] = value;
        }
        let r = bearer(&m, &sign(&key, &c), "whoami").await;
        assert_401(&r, &m, Some("invalid_token"));
        assert!(r.challenge().contains(says), "{claim}: {}", r.challenge());
    }
    // Within the leeway an expired token still serves.
    let mut c = claims(&auth, m.addr, "mcp");
    c["exp"] = json!(now() - 5);
    assert_eq!(bearer(&m, &sign(&key, &c), "whoami").await.status, 200);
}

#[tokio::test]
async fn an_unknown_kid_is_fetched_once_per_interval_then_rotated_in() {
    let (auth, m, _key) = setup().await;
    let next = support::ec("k2");
    let token = sign(&next, &claims(&auth, m.addr, "mcp"));
    let r = bearer(&m, &token, "whoami").await;
    assert_401(&r, &m, Some("invalid_token"));
    assert!(r.challenge().contains("unknown key"), "{}", r.challenge());
    let hits = auth.with(|s| s.jwks_hits);
    // Within the interval, further misses do not fetch again.
    for _ in 0..5 {
        assert_eq!(bearer(&m, &token, "whoami").await.status, 401);
    }
    assert_eq!(
        auth.with(|s| s.jwks_hits),
        hits,
        "at most one fetch per interval"
    );
    // The issuer rotates the key in; after the interval the next miss picks it up.
    auth.with(|s| s.jwks = vec![next.jwk.clone()]);
    tokio::time::sleep(Duration::from_millis(250)).await;
    let r = bearer(&m, &token, "whoami").await;
    assert_eq!(r.status, 200, "{r:?}");
}

#[tokio::test]
async fn jwks_down_keeps_stale_keys_and_none_at_all_is_401() {
    let (auth, m, key) = setup().await;
    auth.with(|s| s.up = false);
    tokio::time::sleep(Duration::from_millis(250)).await;
    // A miss tries the (down) JWKS, and the known key still serves.
    let stranger = sign(&support::ec("k9"), &claims(&auth, m.addr, "mcp"));
    assert_eq!(bearer(&m, &stranger, "whoami").await.status, 401);
    let token = sign(&key, &claims(&auth, m.addr, "mcp"));
    assert_eq!(bearer(&m, &token, "whoami").await.status, 200);

    // A resource server that never got any key: 401, never 500, nothing secret.
    let addr = free_port();
    let cfg = OAuthConfig::new(auth.issuer(), resource(addr))
        .required_scope("mcp")
        .jwks_url(format!("http://{}/jwks", auth.addr));
    let cold = mcp(cfg, addr, true).await;
    let token = sign(&key, &claims(&auth, cold.addr, "mcp"));
    let r = bearer(&cold, &token, "whoami").await;
    assert_401(&r, &cold, Some("invalid_token"));
    assert!(!r.body.contains(&token[..20]) && !r.challenge().contains(&token[..20]));
}

#[tokio::test]
async fn a_64_kib_token_and_a_token_in_the_query() {
    let (auth, m, key) = setup().await;
    let huge = "A".repeat(64 * 1024);
    let r = bearer(&m, &huge, "whoami").await;
    assert_401(&r, &m, Some("invalid_token"));
    assert!(r.challenge().contains("too long"));
    assert!(r.body.len() < 1024);

    let token = sign(&key, &claims(&auth, m.addr, "mcp"));
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#;
    let r = send(
        m.addr,
        &format!(
            "POST /mcp?access_token={token} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            m.addr,
            body.len()
        ),
    )
    .await;
    assert_eq!(r.status, 400, "{r:?}");
    assert!(
        r.challenge().contains("error=\"invalid_request\""),
        "{}",
        r.challenge()
    );
    assert!(r.challenge().contains("query string"));
    assert_eq!(r.json()["error"]["code"], -32600);
}

#[tokio::test]
async fn a_token_without_a_request_wide_scope_is_403() {
    let (auth, m, key) = setup().await;
    let token = sign(&key, &claims(&auth, m.addr, "files:read"));
    let r = bearer(&m, &token, "whoami").await;
    assert_eq!(r.status, 403, "{r:?}");
    let c = r.challenge();
    assert!(c.contains("error=\"insufficient_scope\""), "{c}");
    assert!(c.contains("scope=\"mcp\""), "{c}");
    assert!(
        c.contains(&format!("resource_metadata=\"{}\"", metadata_url(&m))),
        "{c}"
    );
    assert_eq!(r.json()["error"]["message"], "Forbidden");
}

/// An initialize-era tools/call (errors otherwise travel in a 200).
async fn legacy_call(m: &Mcp, token: &str, tool: &str) -> Reply {
    let body = json!({"jsonrpc":"2.0","id":"L1","method":"tools/call","params":{"name": tool, "arguments": {}}})
        .to_string();
    send(
        m.addr,
        &format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\nAuthorization: Bearer {token}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            m.addr,
            body.len()
        ),
    )
    .await
}

#[tokio::test]
async fn step_up_names_every_scope_the_operation_needs_on_every_dialect() {
    let (auth, m, key) = setup().await;
    let narrow = sign(&key, &claims(&auth, m.addr, "mcp files:write"));
    for r in [
        bearer(&m, &narrow, "delete").await,
        legacy_call(&m, &narrow, "delete").await,
    ] {
        assert_eq!(r.status, 403, "{r:?}");
        let c = r.challenge();
        assert!(c.contains("error=\"insufficient_scope\""), "{c}");
        assert!(c.contains("scope=\"mcp files:write files:delete\""), "{c}");
        assert!(
            c.contains(&format!("resource_metadata=\"{}\"", metadata_url(&m))),
            "{c}"
        );
        let body = r.json();
        assert_eq!(body["error"]["message"], "Forbidden", "{body}");
        assert!(
            body["id"] == json!(1) || body["id"] == json!("L1"),
            "{body}"
        );
    }
    // The client asks for the union of its scopes and the challenged ones.
    let wide = sign(&key, &claims(&auth, m.addr, "mcp files:write files:delete"));
    let r = bearer(&m, &wide, "delete").await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.json()["result"]["content"][0]["text"], "deleted");
    assert_eq!(legacy_call(&m, &wide, "delete").await.status, 200);
}

async fn list(m: &Mcp, token: &str) -> Vec<String> {
    let body = json!({"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    }}})
    .to_string();
    let r = send(
        m.addr,
        &format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/list\r\nAuthorization: Bearer {token}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            m.addr,
            body.len()
        ),
    )
    .await;
    assert_eq!(r.status, 200, "{r:?}");
    r.json()["result"]["tools"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|t| t["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn lists_hide_what_the_token_cannot_use_unless_configured_not_to() {
    let (auth, m, key) = setup().await;
    let narrow = sign(&key, &claims(&auth, m.addr, "mcp"));
    let wide = sign(&key, &claims(&auth, m.addr, "mcp files:write files:delete"));
    assert_eq!(list(&m, &narrow).await, ["whoami"]);
    assert_eq!(list(&m, &wide).await, ["whoami", "delete"]);
    let addr = free_port();
    let shown = mcp(config(&auth, addr), addr, false).await;
    let narrow = sign(&key, &claims(&auth, shown.addr, "mcp"));
    assert_eq!(list(&shown, &narrow).await, ["whoami", "delete"]);
    assert_eq!(bearer(&shown, &narrow, "delete").await.status, 403);
}

#[tokio::test]
async fn protected_resource_metadata_at_both_well_known_paths() {
    let (auth, m, _key) = setup().await;
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        let r = send(
            m.addr,
            &format!(
                "GET {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
                m.addr
            ),
        )
        .await;
        assert_eq!(r.status, 200, "{path}: {r:?}");
        assert_eq!(r.header("content-type"), Some("application/json"));
        let doc = r.json();
        assert_eq!(doc["resource"], resource(m.addr));
        assert_eq!(doc["authorization_servers"], json!([auth.issuer()]));
        assert_eq!(doc["scopes_supported"], json!(["mcp", "files:write"]));
        assert_eq!(doc["bearer_methods_supported"], json!(["header"]));
    }
    let r = send(
        m.addr,
        &format!("POST /.well-known/oauth-protected-resource HTTP/1.1\r\nHost: {}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", m.addr),
    )
    .await;
    assert_eq!(r.status, 405);
}

#[tokio::test]
async fn opaque_tokens_are_introspected_and_cached() {
    let key = support::rsa("k1");
    let auth = AuthServer::start(&[&key]).await;
    let addr = free_port();
    auth.with(|s| {
        s.opaque.insert(
            "opaque-good".into(),
            json!({"active": true, "sub": "bob", "client_id": "svc", "scope": "mcp",
                   "aud": resource(addr), "iss": s.issuer, "exp": now() + 600}),
        );
        s.opaque.insert(
            "opaque-elsewhere".into(),
            json!({"active": true, "sub": "bob", "scope": "mcp", "aud": "http://other.example/mcp", "exp": now() + 600}),
        );
    });
    let cfg = config(&auth, addr).introspection(Introspection::new("rs", "rs-secret"));
    let m = mcp(cfg, addr, true).await;
    assert_eq!(bearer(&m, "opaque-good", "whoami").await.status, 200);
    assert_eq!(bearer(&m, "opaque-good", "whoami").await.status, 200);
    assert_eq!(auth.with(|s| s.introspections), 1, "the answer is cached");
    let r = bearer(&m, "opaque-unknown", "whoami").await;
    assert_401(&r, &m, Some("invalid_token"));
    assert!(r.challenge().contains("not active"));
    let r = bearer(&m, "opaque-elsewhere", "whoami").await;
    assert_401(&r, &m, Some("invalid_token"));
    assert!(r.challenge().contains("not issued for this resource"));
}
