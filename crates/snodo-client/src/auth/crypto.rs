//! The little cryptography the OAuth client needs: random values (PKCE verifier,
//! `state`, `jti`), the S256 code challenge (RFC 7636 §4.2), and ES256 compact JWS for
//! `private_key_jwt` assertions (RFC 7523 §2.2) and DPoP proofs (RFC 9449 §4.2).

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use p256::ecdsa::signature::Signer as _;
use p256::ecdsa::{Signature, SigningKey};
use p256::pkcs8::DecodePrivateKey as _;
use rand_core::{OsRng, RngCore as _};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

use crate::error::ClientError;

/// `n` random bytes, base64url without padding.
pub(crate) fn random(n: usize) -> String {
    let mut b = vec![0u8; n];
    OsRng.fill_bytes(&mut b);
    B64.encode(b)
}

/// base64url(SHA-256(`s`)), no padding.
pub(crate) fn s256(s: &str) -> String {
    B64.encode(Sha256::digest(s.as_bytes()))
}

/// A PKCE pair: a 43-character verifier (32 random bytes) and its S256 challenge.
#[derive(Clone, Debug)]
pub(crate) struct Pkce {
    pub(crate) verifier: String,
    pub(crate) challenge: String,
}

impl Pkce {
    pub(crate) fn new() -> Self {
        let verifier = random(32);
        let challenge = s256(&verifier);
        Self {
            verifier,
            challenge,
        }
    }
}

/// Seconds since the Unix epoch.
pub(crate) fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// An ES256 (P-256) signing key.
#[derive(Clone)]
pub(crate) struct EsKey(SigningKey);

impl std::fmt::Debug for EsKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EsKey(..)")
    }
}

impl EsKey {
    /// A fresh key (DPoP).
    pub(crate) fn generate() -> Self {
        Self(SigningKey::random(&mut OsRng))
    }

    /// A PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`) or SEC1 PEM (`BEGIN EC PRIVATE KEY`).
    pub(crate) fn from_pem(pem: &str) -> Result<Self, ClientError> {
        if let Ok(k) = SigningKey::from_pkcs8_pem(pem) {
            return Ok(Self(k));
        }
        p256::SecretKey::from_sec1_pem(pem)
            .map(|s| Self(SigningKey::from(s)))
            .map_err(|_| {
                ClientError::Auth(
                    "the private key is not a P-256 key in PEM (PKCS#8 or SEC1)".into(),
                )
            })
    }

    /// The key as PKCS#8 PEM (kept with the tokens it binds).
    pub(crate) fn to_pem(&self) -> Option<String> {
        use p256::pkcs8::EncodePrivateKey as _;
        self.0
            .to_pkcs8_pem(p256::pkcs8::LineEnding::LF)
            .ok()
            .map(|z| z.to_string())
    }

    /// The public key as a JWK (`kty`, `crv`, `x`, `y`: the RFC 7638 members, in order).
    pub(crate) fn public_jwk(&self) -> Value {
        let point = self.0.verifying_key().to_encoded_point(false);
        let x = point.x().map(|x| B64.encode(x)).unwrap_or_default();
        let y = point.y().map(|y| B64.encode(y)).unwrap_or_default();
        json!({"crv": "P-256", "kty": "EC", "x": x, "y": y})
    }

    /// The JWK SHA-256 thumbprint (RFC 7638), base64url: DPoP's `jkt`.
    pub(crate) fn thumbprint(&self) -> String {
        let jwk = self.public_jwk();
        let canon = format!(
            r#"{{"crv":"P-256","kty":"EC","x":"{}","y":"{}"}}"#,
            jwk["x"].as_str().unwrap_or_default(),
            jwk["y"].as_str().unwrap_or_default()
        );
        B64.encode(Sha256::digest(canon.as_bytes()))
    }

    /// A compact JWS over `claims` with `header` (its `alg` is set to ES256).
    pub(crate) fn sign(&self, mut header: Value, claims: &Value) -> String {
        if let Some(h) = header.as_object_mut() {
            h.insert("alg".into(), json!("ES256"));
        }
        let input = format!(
            "{}.{}",
            B64.encode(header.to_string()),
            B64.encode(claims.to_string())
        );
        let sig: Signature = self.0.sign(input.as_bytes());
        format!("{input}.{}", B64.encode(sig.to_bytes()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s256_matches_rfc7636_appendix_b() {
        assert_eq!(
            s256("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
        let p = Pkce::new();
        assert_eq!(p.verifier.len(), 43);
        assert_eq!(s256(&p.verifier), p.challenge);
    }

    #[test]
    fn es256_signature_verifies() {
        use p256::ecdsa::signature::Verifier as _;
        let k = EsKey::generate();
        let jws = k.sign(json!({"typ": "JWT"}), &json!({"a": 1}));
        let parts: Vec<&str> = jws.split('.').collect();
        assert_eq!(parts.len(), 3);
        let sig = Signature::from_slice(&B64.decode(parts[2]).unwrap()).unwrap();
        let msg = format!("{}.{}", parts[0], parts[1]);
        assert!(k.0.verifying_key().verify(msg.as_bytes(), &sig).is_ok());
        assert_eq!(k.thumbprint().len(), 43);
        assert!(EsKey::from_pem("not a key").is_err());
        let again = EsKey::from_pem(&k.to_pem().unwrap()).unwrap();
        assert_eq!(again.thumbprint(), k.thumbprint());
    }
}
