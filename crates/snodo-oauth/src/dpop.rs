//! DPoP-bound access tokens (RFC 9449) at the resource server: the proof in the `DPoP`
//! header checked (§4.3: `typ`, an asymmetric `alg`, a public `jwk` that verifies the
//! signature, `jti` not seen within the window, `htm`, `htu`, `iat`, and `ath` = the
//! token's hash), then the token's `cnf.jkt` compared with the proof key's RFC 7638
//! thumbprint (§6.1). A DPoP-bound token presented as `Bearer` is refused (§7.2).
//! With server nonces (§9), the proof's `nonce` must be one this deployment issued.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, DecodingKey, Validation, decode};
use serde_json::{Map, Value};
use sha2::{Digest as _, Sha256};

use crate::nonce::Nonces;

/// The proof algorithms accepted (asymmetric only, RFC 9449 §4.3 item 5).
pub(crate) const ALGORITHMS: &[(&str, Algorithm)] = &[
    ("ES256", Algorithm::ES256),
    ("ES384", Algorithm::ES384),
    ("RS256", Algorithm::RS256),
    ("RS384", Algorithm::RS384),
    ("RS512", Algorithm::RS512),
    ("PS256", Algorithm::PS256),
    ("PS384", Algorithm::PS384),
    ("PS512", Algorithm::PS512),
    ("EdDSA", Algorithm::EdDSA),
];

/// How many proof ids are remembered at most (older ones are dropped first).
const MAX_SEEN: usize = 100_000;

/// Checks proofs and remembers their `jti` for the acceptance window.
#[derive(Debug)]
pub(crate) struct DpopChecker {
    window: u64,
    seen: Mutex<HashMap<String, u64>>,
    nonces: Option<Nonces>,
}

/// Why a proof was refused.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// `invalid_dpop_proof`, with a description for the challenge.
    Proof(&'static str),
    /// `use_dpop_nonce`: no nonce, or one this deployment did not issue or that expired.
    Nonce,
}

impl From<&'static str> for Refused {
    fn from(description: &'static str) -> Self {
        Self::Proof(description)
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// `scheme://authority/path`, scheme and authority lower-cased, no query or fragment.
pub(crate) fn normalize_htu(url: &str) -> Option<String> {
    let base = url.split(['?', '#']).next()?;
    let (scheme, rest) = base.split_once("://")?;
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, "/"),
    };
    if authority.is_empty() {
        return None;
    }
    Some(format!(
        "{}://{}{}",
        scheme.to_ascii_lowercase(),
        authority.to_ascii_lowercase(),
        path
    ))
}

fn text<'a>(m: &'a Map<String, Value>, k: &str) -> Option<&'a str> {
    m.get(k).and_then(Value::as_str)
}

/// The RFC 7638 thumbprint of a public JWK (EC, RSA, OKP), base64url.
pub(crate) fn thumbprint(jwk: &Map<String, Value>) -> Option<String> {
    let q = |k: &str| text(jwk, k).map(|v| Value::String(v.to_owned()).to_string());
    let canon = match text(jwk, "kty")? {
        "EC" => format!(
            r#"{{"crv":{},"kty":"EC","x":{},"y":{}}}"#,
            q("crv")?,
            q("x")?,
            q("y")?
        ),
        "RSA" => format!(r#"{{"e":{},"kty":"RSA","n":{}}}"#, q("e")?, q("n")?),
        "OKP" => format!(r#"{{"crv":{},"kty":"OKP","x":{}}}"#, q("crv")?, q("x")?),
        _ => return None,
    };
    Some(B64.encode(Sha256::digest(canon.as_bytes())))
}

impl DpopChecker {
    /// Proofs are accepted `window` seconds either side of now; with `nonces`, only
    /// those that carry a good nonce.
    pub(crate) fn new(window: u64, nonces: Option<Nonces>) -> Self {
        Self {
            window,
            seen: Mutex::new(HashMap::new()),
            nonces,
        }
    }

    /// A fresh nonce, when proofs must carry one.
    pub(crate) fn fresh_nonce(&self) -> Option<String> {
        self.nonces.as_ref().map(Nonces::issue)
    }

    /// Checks `proof` for a request `method url` carrying `token`; returns the proof
    /// key's thumbprint.
    pub(crate) fn verify(
        &self,
        proof: &str,
        method: &str,
        url: &str,
        token: &str,
    ) -> Result<String, Refused> {
        const BAD: &str = "The DPoP proof is malformed";
        if proof.len() > 8 * 1024 {
            return Err("The DPoP proof is too long".into());
        }
        let head = proof.split('.').next().ok_or(BAD)?;
        let header: Map<String, Value> = B64
            .decode(head)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .ok_or(BAD)?;
        if text(&header, "typ") != Some("dpop+jwt") {
            return Err("The DPoP proof's typ is not dpop+jwt".into());
        }
        let alg = text(&header, "alg")
            .and_then(|a| ALGORITHMS.iter().find(|(n, _)| *n == a))
            .map(|(_, a)| *a)
            .ok_or("The DPoP proof's alg is not an accepted asymmetric algorithm")?;
        let jwk_map = header
            .get("jwk")
            .and_then(Value::as_object)
            .ok_or("The DPoP proof has no jwk")?;
        if ["d", "p", "q", "dp", "dq", "qi", "k"]
            .iter()
            .any(|k| jwk_map.contains_key(*k))
        {
            return Err("The DPoP proof's jwk holds a private key".into());
        }
        let jkt = thumbprint(jwk_map).ok_or("The DPoP proof's jwk is not a usable public key")?;
        let jwk: Jwk = serde_json::from_value(Value::Object(jwk_map.clone()))
            .map_err(|_| "The DPoP proof's jwk is not a usable public key")?;
        let key = DecodingKey::from_jwk(&jwk)
            .map_err(|_| "The DPoP proof's jwk is not a usable public key")?;
        let mut v = Validation::new(alg);
        v.required_spec_claims.clear();
        v.validate_exp = false;
        v.validate_nbf = false;
        v.validate_aud = false;
        let claims = decode::<Map<String, Value>>(proof, &key, &v)
            .map_err(|_| "The DPoP proof's signature is invalid")?
            .claims;
        let jti = text(&claims, "jti")
            .filter(|j| !j.is_empty() && j.len() <= 256)
            .ok_or("The DPoP proof has no jti")?;
        if text(&claims, "htm") != Some(method) {
            return Err("The DPoP proof's htm is not this request's method".into());
        }
        let htu = text(&claims, "htu").and_then(normalize_htu);
        if htu.is_none() || htu != normalize_htu(url) {
            return Err("The DPoP proof's htu is not this request's URL".into());
        }
        let iat = claims
            .get("iat")
            .and_then(Value::as_u64)
            .ok_or("The DPoP proof has no iat")?;
        let t = now();
        if iat + self.window < t || iat > t + self.window {
            return Err("The DPoP proof's iat is outside the acceptance window".into());
        }
        let ath = B64.encode(Sha256::digest(token.as_bytes()));
        if text(&claims, "ath") != Some(ath.as_str()) {
            return Err("The DPoP proof's ath does not match the access token".into());
        }
        // Before the proof id is remembered: the retry with a nonce is a new proof.
        if let Some(nonces) = &self.nonces
            && !text(&claims, "nonce").is_some_and(|n| nonces.check(n))
        {
            return Err(Refused::Nonce);
        }
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        let horizon = t.saturating_sub(2 * self.window);
        if seen.len() >= MAX_SEEN {
            seen.retain(|_, at| *at >= horizon);
        }
        if seen.len() >= MAX_SEEN {
            return Err("Too many DPoP proofs; try again".into());
        }
        let key = format!("{jkt} {jti}");
        if seen.get(&key).is_some_and(|at| *at >= horizon) {
            return Err("The DPoP proof was used before".into());
        }
        seen.insert(key, t);
        Ok(jkt)
    }
}

/// The `cnf.jkt` of token claims.
pub(crate) fn bound_jkt(claims: &Map<String, Value>) -> Option<&str> {
    claims
        .get("cnf")
        .and_then(|c| c.get("jkt"))
        .and_then(Value::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn htu_and_thumbprint() {
        assert_eq!(
            normalize_htu("HTTP://H:1/mcp?x#y").as_deref(),
            Some("http://h:1/mcp")
        );
        assert_eq!(normalize_htu("nope"), None);
        // RFC 7638 §3.1's example key.
        let jwk: Map<String, Value> = serde_json::from_value(serde_json::json!({
            "kty": "RSA", "e": "AQAB", "alg": "RS256", "kid": "2011-04-29",
            "n": "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw"
        }))
        .unwrap();
        assert_eq!(
            thumbprint(&jwk).as_deref(),
            Some("NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs")
        );
    }
}
