//! The issuer's signing keys: fetched from its JWKS, cached by `kid`, fetched again on
//! an unknown `kid` at most once per interval (and when the set is old); when a fetch
//! fails the keys already known keep serving.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, JwkSet, PublicKeyUse};
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey};
use tokio::time::Instant;

use crate::fetch::Fetcher;

/// One usable verification key.
pub(crate) struct Key {
    pub(crate) key: DecodingKey,
    /// The `alg` the JWK pins, if any.
    alg: Option<Algorithm>,
    /// The curve of an EC key.
    curve: Option<EllipticCurve>,
}

impl Key {
    /// Whether this key may verify a signature made with `alg`.
    pub(crate) fn fits(&self, alg: Algorithm) -> bool {
        let family_ok = self.key.family() == alg.family()
            && matches!(
                alg.family(),
                AlgorithmFamily::Rsa | AlgorithmFamily::Ec | AlgorithmFamily::Ed
            );
        let curve_ok = match (alg, &self.curve) {
            (Algorithm::ES256, Some(c)) => *c == EllipticCurve::P256,
            (Algorithm::ES384, Some(c)) => *c == EllipticCurve::P384,
            _ => true,
        };
        family_ok && curve_ok && self.alg.is_none_or(|a| a == alg)
    }
}

#[derive(Default)]
struct Keys {
    by_kid: HashMap<String, Arc<Key>>,
    /// Keys published without a `kid`.
    unnamed: Vec<Arc<Key>>,
}

/// Why no key verifies a token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyError {
    /// No key with the token's `kid` (or none fitting its `alg`), even after a fetch.
    Unknown,
}

pub(crate) struct JwksCache {
    url: String,
    fetcher: Fetcher,
    keys: RwLock<Keys>,
    /// When a fetch was last attempted, and when one last succeeded.
    times: Mutex<(Option<Instant>, Option<Instant>)>,
    /// Concurrent misses share one fetch.
    fetching: tokio::sync::Mutex<()>,
    min_refresh: Duration,
    max_age: Duration,
}

impl std::fmt::Debug for JwksCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwksCache")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl JwksCache {
    pub(crate) fn new(
        url: String,
        fetcher: Fetcher,
        min_refresh: Duration,
        max_age: Duration,
    ) -> Self {
        Self {
            url,
            fetcher,
            keys: RwLock::default(),
            times: Mutex::new((None, None)),
            fetching: tokio::sync::Mutex::new(()),
            min_refresh,
            max_age,
        }
    }

    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// The candidate keys for a token with this `kid` and `alg`. A miss fetches the
    /// set again (at most once per interval); an old set is refreshed in the
    /// background while its keys keep serving.
    pub(crate) async fn keys_for(
        self: &Arc<Self>,
        kid: Option<&str>,
        alg: Algorithm,
    ) -> Result<Vec<Arc<Key>>, KeyError> {
        if let Some(found) = self.lookup(kid, alg) {
            let old = self
                .times
                .lock()
                .map(|t| t.1.is_none_or(|at| at.elapsed() >= self.max_age))
                .unwrap_or(false);
            if old && self.may_fetch() {
                let this = Arc::clone(self);
                tokio::spawn(async move { this.refresh().await });
            }
            return Ok(found);
        }
        self.refresh().await;
        self.lookup(kid, alg).ok_or(KeyError::Unknown)
    }

    fn may_fetch(&self) -> bool {
        self.times
            .lock()
            .map(|t| t.0.is_none_or(|at| at.elapsed() >= self.min_refresh))
            .unwrap_or(false)
    }

    fn lookup(&self, kid: Option<&str>, alg: Algorithm) -> Option<Vec<Arc<Key>>> {
        let keys = self.keys.read().ok()?;
        let found: Vec<Arc<Key>> = match kid {
            Some(kid) => keys.by_kid.get(kid).into_iter().cloned().collect(),
            None => keys
                .by_kid
                .values()
                .chain(&keys.unnamed)
                .filter(|k| k.fits(alg))
                .take(8)
                .cloned()
                .collect(),
        };
        let found: Vec<_> = found.into_iter().filter(|k| k.fits(alg)).collect();
        (!found.is_empty()).then_some(found)
    }

    /// Fetches the set again, unless a fetch was attempted less than the minimum
    /// interval ago. A failed fetch keeps the keys already known.
    pub(crate) async fn refresh(&self) {
        let _one = self.fetching.lock().await;
        if !self.may_fetch() {
            return;
        }
        if let Ok(mut t) = self.times.lock() {
            t.0 = Some(Instant::now());
        }
        match self.fetch().await {
            Ok(keys) => {
                tracing::debug!(
                    url = %self.url,
                    keys = keys.by_kid.len() + keys.unnamed.len(),
                    "JWKS fetched"
                );
                if let Ok(mut k) = self.keys.write() {
                    *k = keys;
                }
                if let Ok(mut t) = self.times.lock() {
                    t.1 = Some(Instant::now());
                }
            }
            Err(e) => tracing::warn!(
                url = %self.url,
                error = %e,
                "JWKS fetch failed; keeping the keys already known"
            ),
        }
    }

    async fn fetch(&self) -> Result<Keys, String> {
        let doc = self
            .fetcher
            .get_json(&self.url)
            .await
            .map_err(|e| e.to_string())?;
        let set: JwkSet = match doc.get("keys") {
            Some(serde_json::Value::Array(items)) => JwkSet {
                // One unreadable or unsupported key does not spoil the others.
                keys: items
                    .iter()
                    .filter_map(|k| serde_json::from_value::<Jwk>(k.clone()).ok())
                    .collect(),
            },
            _ => return Err("the JWKS has no keys array".into()),
        };
        let mut keys = Keys::default();
        for jwk in set.keys {
            if let Some((kid, key)) = usable(&jwk) {
                match kid {
                    Some(kid) => {
                        keys.by_kid.insert(kid, Arc::new(key));
                    }
                    None => keys.unnamed.push(Arc::new(key)),
                }
            }
        }
        Ok(keys)
    }
}

/// A public signing key from a JWK; secret (`oct`) keys and encryption keys are skipped.
fn usable(jwk: &Jwk) -> Option<(Option<String>, Key)> {
    if matches!(jwk.common.public_key_use, Some(PublicKeyUse::Encryption)) {
        return None;
    }
    let curve = match &jwk.algorithm {
        AlgorithmParameters::OctetKey(_) => return None,
        AlgorithmParameters::EllipticCurve(p) => Some(p.curve.clone()),
        _ => None,
    };
    let alg = match jwk.common.key_algorithm {
        None => None,
        Some(a) => Some(
            serde_json::to_value(a)
                .ok()?
                .as_str()?
                .parse::<Algorithm>()
                .ok()?,
        ),
    };
    let key = DecodingKey::from_jwk(jwk).ok()?;
    Some((jwk.common.key_id.clone(), Key { key, alg, curve }))
}
