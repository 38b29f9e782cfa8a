//! DPoP (RFC 9449), the client side: one key per session, a fresh proof per request
//! (`htm`, `htu` without query or fragment, `iat`, `jti`, `ath` for a resource request,
//! and the server's latest `DPoP-Nonce`), nonces remembered per origin.

use std::collections::HashMap;
use std::sync::{Mutex, RwLock};

use serde_json::json;

use super::crypto::{EsKey, now, random, s256};
use super::discovery::split;

/// A DPoP key and the nonces servers handed out.
#[derive(Debug)]
pub(crate) struct Dpop {
    key: RwLock<EsKey>,
    nonces: Mutex<HashMap<String, String>>,
}

fn origin(url: &str) -> String {
    split(url).map(|(o, _)| o).unwrap_or_default()
}

impl Dpop {
    pub(crate) fn new() -> Self {
        Self {
            key: RwLock::new(EsKey::generate()),
            nonces: Mutex::new(HashMap::new()),
        }
    }

    fn key(&self) -> EsKey {
        self.key.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The key's thumbprint (`jkt`).
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn jkt(&self) -> String {
        self.key().thumbprint()
    }

    /// The key as PKCS#8 PEM, to be kept with the tokens bound to it.
    pub(crate) fn key_pem(&self) -> Option<String> {
        self.key().to_pem()
    }

    /// Uses the key of stored tokens (a PEM written by [`key_pem`](Self::key_pem)).
    pub(crate) fn restore(&self, pem: &str) -> bool {
        match EsKey::from_pem(pem) {
            Ok(k) => {
                *self.key.write().unwrap_or_else(|e| e.into_inner()) = k;
                true
            }
            Err(_) => false,
        }
    }

    /// Remembers `nonce` for `url`'s origin.
    pub(crate) fn remember_nonce(&self, url: &str, nonce: &str) {
        if let Ok(mut m) = self.nonces.lock() {
            m.insert(origin(url), nonce.to_owned());
        }
    }

    /// The latest nonce of `url`'s origin.
    pub(crate) fn nonce_for(&self, url: &str) -> Option<String> {
        self.nonces.lock().ok()?.get(&origin(url)).cloned()
    }

    /// A proof for `method url`; `access_token` adds `ath`. Without an explicit
    /// `nonce` the origin's latest is used.
    pub(crate) fn proof(
        &self,
        method: &str,
        url: &str,
        access_token: Option<&str>,
        nonce: Option<&str>,
    ) -> String {
        let htu = url.split(['?', '#']).next().unwrap_or_default();
        let mut claims = json!({"jti": random(16), "htm": method, "htu": htu, "iat": now()});
        if let Some(t) = access_token {
            claims["ath"] = json!(s256(t));
        }
        if let Some(n) = nonce.map(str::to_owned).or_else(|| self.nonce_for(url)) {
            claims["nonce"] = json!(n);
        }
        let key = self.key();
        key.sign(json!({"typ": "dpop+jwt", "jwk": key.public_jwk()}), &claims)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;

    #[test]
    fn proof_claims() {
        let d = Dpop::new();
        d.remember_nonce("http://rs:1/x", "n1");
        let p = d.proof("POST", "http://rs:1/mcp?q=1#f", Some("tok"), None);
        let parts: Vec<&str> = p.split('.').collect();
        let h: serde_json::Value = serde_json::from_slice(&B64.decode(parts[0]).unwrap()).unwrap();
        let c: serde_json::Value = serde_json::from_slice(&B64.decode(parts[1]).unwrap()).unwrap();
        assert_eq!(h["typ"], "dpop+jwt");
        assert_eq!(h["alg"], "ES256");
        assert!(h["jwk"].get("d").is_none());
        assert_eq!(c["htu"], "http://rs:1/mcp");
        assert_eq!(c["htm"], "POST");
        assert_eq!(c["nonce"], "n1");
        assert_eq!(c["ath"], s256("tok"));
        assert_eq!(d.jkt().len(), 43);
    }
}
