//! Every failure mode of bearer authentication at the wire, one test each (nothing
//! logged in full: tests/logs.rs): a literal request in; status, `WWW-Authenticate` and
//! body checked. Tokens are signed in-process with generated RSA and EC keys; the JWKS
//! is served by a stand-in authorization server on 127.0.0.1.

mod support;

use std::time::Duration;

use jsonwebtoken::{EncodingKey, Header, encode};
use serde_json::{Value, json};
use snodo_oauth::OAuthConfig;
use support::mcp::{Mcp, assert_401, bearer, call, claims, free_port, mcp, post, resource, setup};
use support::{AuthServer, Reply, now, sign, unsigned};

/// A token signed by the issuer's key with `claim` set to `value` (`Null`: removed).
async fn with_claim(claim: &str, value: Value) -> (Mcp, Reply) {
    let (auth, m, key) = setup().await;
    let mut c = claims(&auth, m.addr, "mcp");
    match value {
        Value::Null => {
            c.as_object_mut().map(|o| o.remove(claim));
        }
        v => c[claim] = v,
    }
    let r = bearer(&m, &sign(&key, &c), "whoami").await;
    drop(auth);
    (m, r)
}

fn assert_says(r: &Reply, says: &str) {
    assert!(r.challenge().contains(says), "{says}: {}", r.challenge());
}

#[tokio::test]
async fn no_authorization_header_is_401_without_error() {
    let (_auth, m, _key) = setup().await;
    assert_401(&call(&m, None, "whoami").await, &m, None);
}

#[tokio::test]
async fn another_scheme_is_401_naming_bearer() {
    let (_auth, m, _key) = setup().await;
    assert_401(
        &call(&m, Some("Basic YWxpY2U6cHc="), "whoami").await,
        &m,
        None,
    );
}

#[tokio::test]
async fn an_empty_bearer_token_is_401_invalid_token() {
    let (_auth, m, _key) = setup().await;
    for value in ["Bearer", "Bearer    "] {
        let r = call(&m, Some(value), "whoami").await;
        assert_401(&r, &m, Some("invalid_token"));
        assert_says(&r, "malformed");
    }
}

#[tokio::test]
async fn garbage_is_401_invalid_token() {
    let (_auth, m, _key) = setup().await;
    for token in ["garbage", "a.b.c", "%%%.$$$.###"] {
        let r = bearer(&m, token, "whoami").await;
        assert_401(&r, &m, Some("invalid_token"));
    }
}

#[tokio::test]
async fn two_authorization_headers_are_400_invalid_request() {
    let (auth, m, key) = setup().await;
    let token = sign(&key, &claims(&auth, m.addr, "mcp"));
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#;
    let twice = format!("Authorization: Bearer {token}\r\nAuthorization: Bearer {token}\r\n");
    let r = post(&m, "/mcp", &twice, body).await;
    assert_eq!(r.status, 400, "{r:?}");
    assert_says(&r, "error=\"invalid_request\"");
}

#[tokio::test]
async fn a_bad_signature_is_401() {
    let (auth, m, _key) = setup().await;
    // Signed by another key under the issuer's kid.
    let forged = sign(&support::rsa_impostor("k1"), &claims(&auth, m.addr, "mcp"));
    let r = bearer(&m, &forged, "whoami").await;
    assert_401(&r, &m, Some("invalid_token"));
    assert_says(&r, "signature is invalid");
}

#[tokio::test]
async fn alg_none_is_401() {
    let (auth, m, _key) = setup().await;
    let c = claims(&auth, m.addr, "mcp");
    // With an empty signature and with one.
    for signature in ["", "AAAA"] {
        let none = unsigned(&json!({"alg":"none","typ":"JWT","kid":"k1"}), &c, signature);
        let r = bearer(&m, &none, "whoami").await;
        assert_401(&r, &m, Some("invalid_token"));
    }
    let none = unsigned(&json!({"alg":"none","typ":"JWT","kid":"k1"}), &c, "AAAA");
    assert_says(&bearer(&m, &none, "whoami").await, "algorithm");
}

#[tokio::test]
async fn hs256_signed_with_the_public_key_is_401() {
    let (auth, m, key) = setup().await;
    let mut header = Header::new(jsonwebtoken::Algorithm::HS256);
    header.kid = Some("k1".into());
    let hmac = encode(
        &header,
        &claims(&auth, m.addr, "mcp"),
        &EncodingKey::from_secret(&key.public),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let r = bearer(&m, &hmac, "whoami").await;
    assert_401(&r, &m, Some("invalid_token"));
    assert_says(&r, "algorithm");
}

#[tokio::test]
async fn a_wrong_issuer_is_401() {
    let (m, r) = with_claim("iss", json!("http://evil.example")).await;
    assert_401(&r, &m, Some("invalid_token"));
    assert_says(&r, "another issuer");
}

#[tokio::test]
async fn a_wrong_audience_is_401() {
    // Another origin.
    let (m, r) = with_claim("aud", json!("http://127.0.0.1:1/mcp")).await;
    assert_401(&r, &m, Some("invalid_token"));
    assert_says(&r, "not issued for this resource");
    // Another path on this origin, and no audience at all.
    let (auth, m, key) = setup().await;
    for aud in [json!(format!("http://{}/other", m.addr)), Value::Null] {
        let mut c = claims(&auth, m.addr, "mcp");
        match aud {
            Value::Null => {
                c.as_object_mut().map(|o| o.remove("aud"));
            }
            a => c["aud"] = a,
        }
        let r = bearer(&m, &sign(&key, &c), "whoami").await;
        assert_401(&r, &m, Some("invalid_token"));
        assert_says(&r, "not issued for this resource");
    }
}

#[tokio::test]
async fn an_expired_token_is_401_beyond_the_leeway() {
    let (m, r) = with_claim("exp", json!(now() - 3600)).await;
    assert_401(&r, &m, Some("invalid_token"));
    assert_says(&r, "expired");
    // Within the leeway (30 s) an expired token still serves.
    let (_m, r) = with_claim("exp", json!(now() - 5)).await;
    assert_eq!(r.status, 200, "{r:?}");
}

#[tokio::test]
async fn a_token_not_yet_valid_is_401() {
    let (m, r) = with_claim("nbf", json!(now() + 3600)).await;
    assert_401(&r, &m, Some("invalid_token"));
    assert_says(&r, "not valid yet");
}

#[tokio::test]
async fn a_token_without_exp_is_401() {
    let (m, r) = with_claim("exp", Value::Null).await;
    assert_401(&r, &m, Some("invalid_token"));
}

#[tokio::test]
async fn an_unknown_kid_is_fetched_once_per_interval_then_rotated_in() {
    let (auth, m, _key) = setup().await;
    let next = support::ec("k2");
    let token = sign(&next, &claims(&auth, m.addr, "mcp"));
    let r = bearer(&m, &token, "whoami").await;
    assert_401(&r, &m, Some("invalid_token"));
    assert_says(&r, "unknown key");
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
async fn jwks_down_keeps_the_stale_keys_serving() {
    let (auth, m, key) = setup().await;
    auth.with(|s| s.up = false);
    tokio::time::sleep(Duration::from_millis(250)).await;
    // A miss tries the (down) JWKS, and the known key still serves.
    let stranger = sign(&support::ec("k9"), &claims(&auth, m.addr, "mcp"));
    assert_401(
        &bearer(&m, &stranger, "whoami").await,
        &m,
        Some("invalid_token"),
    );
    let token = sign(&key, &claims(&auth, m.addr, "mcp"));
    assert_eq!(bearer(&m, &token, "whoami").await.status, 200);
}

#[tokio::test]
async fn no_keys_at_all_is_401_never_500_and_nothing_secret() {
    let key = support::rsa("k1");
    let auth = AuthServer::start(&[&key]).await;
    auth.with(|s| s.up = false);
    let addr = free_port();
    let cfg = OAuthConfig::new(auth.issuer(), resource(addr))
        .required_scope("mcp")
        .jwks_url(format!("http://{}/jwks", auth.addr));
    let cold = mcp(cfg, addr, true).await;
    let token = sign(&key, &claims(&auth, cold.addr, "mcp"));
    let r = bearer(&cold, &token, "whoami").await;
    assert_401(&r, &cold, Some("invalid_token"));
    let signature = token.rsplit('.').next().unwrap_or_default();
    assert!(!r.text().contains(signature) && !r.challenge().contains(signature));
    assert!(!r.text().contains("/jwks"), "no internals: {}", r.text());
}

#[tokio::test]
async fn a_64_kib_token_is_refused_unread() {
    let (_auth, m, _key) = setup().await;
    let huge = "A".repeat(64 * 1024);
    let r = bearer(&m, &huge, "whoami").await;
    assert_401(&r, &m, Some("invalid_token"));
    assert_says(&r, "too long");
    assert!(r.body.len() < 1024);
}

#[tokio::test]
async fn a_token_in_the_query_string_is_400() {
    let (auth, m, key) = setup().await;
    let token = sign(&key, &claims(&auth, m.addr, "mcp"));
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#;
    let r = post(&m, &format!("/mcp?access_token={token}"), "", body).await;
    assert_eq!(r.status, 400, "{r:?}");
    assert_says(&r, "error=\"invalid_request\"");
    assert_says(&r, "query string");
    assert_eq!(r.json()["error"]["code"], -32600);
}
