//! DPoP-bound tokens (RFC 9449) at the wire: a bound token with a fresh proof is
//! accepted; a replayed proof, a proof by another key, for another method or URL, with
//! a wrong `ath` or a private key in its `jwk`, a bound token sent as `Bearer`, and an
//! unbound token sent as `DPoP` are all refused with a 401. With server nonces, a proof
//! without one gets `401 use_dpop_nonce` and a `DPoP-Nonce`; a proof carrying it is
//! accepted by every instance holding the same key, and by no other.

mod support;

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Header, encode};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};
use snodo_testkit::R2026_07_28;
use support::mcp::{Mcp, claims, config, free_port, mcp, resource};
use support::{AuthServer, Reply, SigningKey, now, sign};

fn thumbprint(jwk: &Value) -> String {
    let canon = format!(
        r#"{{"crv":"{}","kty":"EC","x":"{}","y":"{}"}}"#,
        jwk["crv"].as_str().unwrap_or_default(),
        jwk["x"].as_str().unwrap_or_default(),
        jwk["y"].as_str().unwrap_or_default()
    );
    URL_SAFE_NO_PAD.encode(Sha256::digest(canon.as_bytes()))
}

fn public(jwk: &Value) -> Value {
    json!({"kty": jwk["kty"], "crv": jwk["crv"], "x": jwk["x"], "y": jwk["y"]})
}

fn proof_with(key: &SigningKey, jwk: Value, claims: &Value) -> String {
    let mut h = Header::new(key.alg);
    h.typ = Some("dpop+jwt".into());
    h.jwk = Some(serde_json::from_value(jwk).unwrap_or_else(|e| panic!("{e}")));
    encode(&h, claims, &key.encoding).unwrap_or_else(|e| panic!("{e}"))
}

fn proof_claims(m: &Mcp, token: &str) -> Value {
    json!({
        "jti": format!("jti-{}", rand::random::<u64>()),
        "htm": "POST",
        "htu": resource(m.addr),
        "iat": now(),
        "ath": URL_SAFE_NO_PAD.encode(Sha256::digest(token.as_bytes())),
    })
}

async fn call(m: &Mcp, authorization: &str, proof: Option<&str>) -> Reply {
    let mut r = R2026_07_28
        .request("tools/call")
        .id(1)
        .params(json!({"name": "whoami", "arguments": {}}))
        .header("Authorization", authorization);
    if let Some(p) = proof {
        r = r.header("DPoP", p);
    }
    r.post(m.addr).await
}

async fn setup() -> (AuthServer, Mcp, SigningKey) {
    let key = support::rsa("k1");
    let auth = AuthServer::start(&[&key]).await;
    let addr = free_port();
    let m = mcp(
        config(&auth, addr).dpop(Duration::from_secs(60)),
        addr,
        true,
    )
    .await;
    (auth, m, key)
}

fn refused(r: &Reply, what: &str) {
    assert_eq!(r.status, 401, "{what}: {r:?}");
}

#[tokio::test]
async fn bound_tokens_need_their_own_fresh_proof() {
    let (auth, m, as_key) = setup().await;
    let pop = support::ec("pop");
    let other = support::ec("other");
    let mut c = claims(&auth, m.addr, "mcp");
    c["cnf"] = json!({"jkt": thumbprint(&pop.jwk)});
    let token = sign(&as_key, &c);
    let dpop = format!("DPoP {token}");

    let good = proof_with(&pop, public(&pop.jwk), &proof_claims(&m, &token));
    let r = call(&m, &dpop, Some(&good)).await;
    assert_eq!(r.status, 200, "{r:?}");

    let r = call(&m, &dpop, Some(&good)).await;
    refused(&r, "replayed proof");
    assert!(
        r.challenge().contains("invalid_dpop_proof"),
        "{}",
        r.challenge()
    );

    refused(
        &call(&m, &format!("Bearer {token}"), None).await,
        "bound token as Bearer",
    );
    refused(&call(&m, &dpop, None).await, "no proof");
    let by_other = proof_with(&other, public(&other.jwk), &proof_claims(&m, &token));
    refused(&call(&m, &dpop, Some(&by_other)).await, "another key");

    for (k, v) in [
        ("htm", json!("GET")),
        ("htu", json!("http://elsewhere.example/mcp")),
        ("ath", json!("AAAA")),
        ("iat", json!(now() - 3600)),
    ] {
        let mut pc = proof_claims(&m, &token);
        pc[k] = v;
        let p = proof_with(&pop, public(&pop.jwk), &pc);
        refused(&call(&m, &dpop, Some(&p)).await, k);
    }
    // A private key in the header's jwk (written by hand: jsonwebtoken's Jwk drops it).
    let mut leaky = public(&pop.jwk);
    leaky["d"] = json!("AAAA");
    let input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD
            .encode(json!({"typ": "dpop+jwt", "alg": "ES256", "jwk": leaky}).to_string()),
        URL_SAFE_NO_PAD.encode(proof_claims(&m, &token).to_string())
    );
    let sig = jsonwebtoken::crypto::sign(input.as_bytes(), &pop.encoding, pop.alg)
        .unwrap_or_else(|e| panic!("{e}"));
    let p = format!("{input}.{sig}");
    refused(&call(&m, &dpop, Some(&p)).await, "private jwk");

    // An unbound token works as Bearer, not as DPoP.
    let plain = sign(&as_key, &claims(&auth, m.addr, "mcp"));
    assert_eq!(call(&m, &format!("Bearer {plain}"), None).await.status, 200);
    let p = proof_with(&pop, public(&pop.jwk), &proof_claims(&m, &plain));
    refused(
        &call(&m, &format!("DPoP {plain}"), Some(&p)).await,
        "unbound as DPoP",
    );
}

#[tokio::test]
async fn metadata_and_challenge_offer_dpop() {
    let (_auth, m, _) = setup().await;
    let r = snodo_testkit::http::send(
        m.addr,
        &format!(
            "GET /.well-known/oauth-protected-resource/mcp HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            m.addr
        ),
    )
    .await;
    assert_eq!(r.status, 200);
    assert!(
        r.json()["dpop_signing_alg_values_supported"]
            .as_array()
            .is_some_and(|a| a.contains(&json!("ES256")))
    );
    let r = call(&m, "Bearer x", None).await;
    refused(&r, "garbage");
    assert!(r.challenge().contains("DPoP algs="), "{}", r.challenge());
}

fn with_nonce(m: &Mcp, token: &str, nonce: &str) -> Value {
    let mut c = proof_claims(m, token);
    c["nonce"] = json!(nonce);
    c
}

#[tokio::test]
async fn server_nonces_are_asked_for_and_accepted_by_every_instance_with_the_key() {
    let as_key = support::rsa("k1");
    let auth = AuthServer::start(&[&as_key]).await;
    let instance = |key: &'static [u8]| {
        let addr = free_port();
        let c = config(&auth, addr)
            .dpop(Duration::from_secs(60))
            .dpop_nonces(key, Duration::from_secs(300));
        async move { mcp(c, addr, true).await }
    };
    let a = instance(b"shared").await;
    let b = instance(b"shared").await;
    let stranger = instance(b"another key").await;
    let pop = support::ec("pop");
    let bound = |m: &Mcp| {
        let mut c = claims(&auth, m.addr, "mcp");
        c["cnf"] = json!({"jkt": thumbprint(&pop.jwk)});
        sign(&as_key, &c)
    };

    // No nonce: 401 use_dpop_nonce, with one to use.
    let token_a = bound(&a);
    let dpop_a = format!("DPoP {token_a}");
    let plain = proof_with(&pop, public(&pop.jwk), &proof_claims(&a, &token_a));
    let r = call(&a, &dpop_a, Some(&plain)).await;
    refused(&r, "no nonce");
    assert!(
        r.challenge().contains("use_dpop_nonce"),
        "{}",
        r.challenge()
    );
    let nonce = r.header("dpop-nonce").unwrap_or_default().to_owned();
    assert!(!nonce.is_empty(), "{r:?}");

    // With it: accepted here, and on the other instance holding the key.
    let p = proof_with(&pop, public(&pop.jwk), &with_nonce(&a, &token_a, &nonce));
    assert_eq!(call(&a, &dpop_a, Some(&p)).await.status, 200);
    let token_b = bound(&b);
    let p = proof_with(&pop, public(&pop.jwk), &with_nonce(&b, &token_b, &nonce));
    let r = call(&b, &format!("DPoP {token_b}"), Some(&p)).await;
    assert_eq!(r.status, 200, "instance B with A's nonce: {r:?}");

    // Not on an instance with another key, nor a forged or garbled nonce.
    let token_s = bound(&stranger);
    let p = proof_with(
        &pop,
        public(&pop.jwk),
        &with_nonce(&stranger, &token_s, &nonce),
    );
    let r = call(&stranger, &format!("DPoP {token_s}"), Some(&p)).await;
    refused(&r, "another key's nonce");
    assert!(
        r.challenge().contains("use_dpop_nonce"),
        "{}",
        r.challenge()
    );
    for bad in ["", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "not base64!"] {
        let p = proof_with(&pop, public(&pop.jwk), &with_nonce(&a, &token_a, bad));
        let r = call(&a, &dpop_a, Some(&p)).await;
        refused(&r, bad);
        assert!(r.challenge().contains("use_dpop_nonce"), "{bad}: {r:?}");
    }
    // A bad proof is still a bad proof, nonce or not.
    let mut c = with_nonce(&a, &token_a, &nonce);
    c["htm"] = json!("GET");
    let p = proof_with(&pop, public(&pop.jwk), &c);
    let r = call(&a, &dpop_a, Some(&p)).await;
    assert!(r.challenge().contains("invalid_dpop_proof"), "{r:?}");
}
