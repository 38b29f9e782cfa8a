//! The protected endpoint at the wire when tokens are good: the principal reaching
//! handlers, the step-up challenge on every dialect, lists filtered by scope, the
//! RFC 9728 metadata and introspected opaque tokens. Every failure mode of bearer
//! authentication has its own test in bad_input.rs.

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use snodo_oauth::Introspection;
use snodo_testkit::R2026_07_28;
use support::mcp::{
    Mcp, assert_401, bearer, claims, config, free_port, mcp, metadata_url, post, resource, setup,
};
use support::{AuthServer, Reply, now, send, sign};

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

/// An initialize-era tools/call (errors otherwise travel in a 200): at `version`, or
/// header-less (served as 2025-03-26) when `None`.
async fn legacy_call(m: &Mcp, token: &str, tool: &str, version: Option<&str>) -> Reply {
    let body = json!({"jsonrpc":"2.0","id":"L1","method":"tools/call","params":{"name": tool, "arguments": {}}})
        .to_string();
    let version = version.map_or(String::new(), |v| format!("MCP-Protocol-Version: {v}\r\n"));
    let headers = format!("{version}Authorization: Bearer {token}\r\n");
    post(m, "/mcp", &headers, &body).await
}

#[tokio::test]
async fn step_up_names_every_scope_the_operation_needs_on_every_dialect() {
    let (auth, m, key) = setup().await;
    let narrow = sign(&key, &claims(&auth, m.addr, "mcp files:write"));
    for r in [
        bearer(&m, &narrow, "delete").await,
        legacy_call(&m, &narrow, "delete", Some("2025-11-25")).await,
        legacy_call(&m, &narrow, "delete", None).await,
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
    assert_eq!(
        legacy_call(&m, &wide, "delete", Some("2025-11-25"))
            .await
            .status,
        200
    );
    assert_eq!(legacy_call(&m, &wide, "delete", None).await.status, 200);
}

async fn list(m: &Mcp, token: &str) -> Vec<String> {
    let r = R2026_07_28
        .request("tools/list")
        .id(2)
        .header("Authorization", &format!("Bearer {token}"))
        .post(m.addr)
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
    // A refusal is remembered too: made-up tokens do not each reach the issuer.
    assert_eq!(bearer(&m, "opaque-unknown", "whoami").await.status, 401);
    assert_eq!(auth.with(|s| s.introspections), 2, "the refusal is cached");
    let r = bearer(&m, "opaque-elsewhere", "whoami").await;
    assert_401(&r, &m, Some("invalid_token"));
    assert!(r.challenge().contains("not issued for this resource"));
}

#[cfg(feature = "https")]
#[tokio::test]
async fn an_https_issuer_with_a_trusted_root_serves_and_an_untrusted_one_fails_setup() {
    let key = support::rsa("k1");
    let (auth, pem) = AuthServer::start_tls(&[&key]).await;
    assert!(auth.issuer().starts_with("https://"));
    let addr = free_port();
    // Not trusted: discovery fails at start-up, saying why.
    let untrusted = snodo_oauth::ResourceServer::discover(snodo_oauth::OAuthConfig::new(
        auth.issuer(),
        resource(addr),
    ))
    .await;
    let e = untrusted.map(|_| ()).unwrap_err().to_string();
    assert!(e.contains("issuer discovery"), "{e}");
    // Trusted: metadata and JWKS over TLS, and tokens verify.
    let cfg = config(&auth, addr).tls_root_certificates_pem(pem.clone());
    let m = mcp(cfg, addr, true).await;
    let token = sign(&key, &claims(&auth, m.addr, "mcp"));
    assert_eq!(bearer(&m, &token, "whoami").await.status, 200);
    assert!(auth.with(|s| s.jwks_hits) >= 1);
    // A PEM without a certificate is a setup error.
    let bad = snodo_oauth::ResourceServer::discover(
        snodo_oauth::OAuthConfig::new(auth.issuer(), resource(addr))
            .tls_root_certificates_pem("not a pem"),
    )
    .await;
    assert!(bad.is_err());
}
