//! RFC 7662 introspection of opaque access tokens, each answer cached up to the
//! token's expiry (keyed by the token's SHA-256, never the token itself).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value};
use sha2::{Digest as _, Sha256};
use tokio::time::Instant;

use crate::fetch::Fetcher;
use crate::validate::{Invalid, check_audience};

/// Most answers kept; past that, expired ones go, then all.
const MAX_CACHED: usize = 10_000;
/// Longest an answer is trusted, whatever the token's expiry.
const MAX_TTL: Duration = Duration::from_secs(300);

/// An answer and until when it is trusted.
type Cached = (Instant, Map<String, Value>);

#[derive(Debug)]
pub(crate) struct Introspector {
    endpoint: String,
    client_id: String,
    client_secret: String,
    fetcher: Fetcher,
    cache: Mutex<HashMap<[u8; 32], Cached>>,
}

impl Introspector {
    pub(crate) fn new(
        endpoint: String,
        client_id: String,
        client_secret: String,
        fetcher: Fetcher,
    ) -> Self {
        Self {
            endpoint,
            client_id,
            client_secret,
            fetcher,
            cache: Mutex::default(),
        }
    }

    /// The active token's claims, checked against issuer and audience.
    pub(crate) async fn introspect(
        &self,
        token: &str,
        issuer: &str,
        audience: &str,
    ) -> Result<Map<String, Value>, Invalid> {
        let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        if let Some(claims) = self.cached(&digest) {
            return Ok(claims);
        }
        let answer = self
            .fetcher
            .post_form(
                &self.endpoint,
                &[("token", token), ("token_type_hint", "access_token")],
                Some((&self.client_id, &self.client_secret)),
            )
            .await
            .map_err(|e| {
                tracing::warn!(error = %e, "token introspection failed");
                Invalid::Unverifiable
            })?;
        let Value::Object(claims) = answer else {
            return Err(Invalid::Unverifiable);
        };
        if claims.get("active") != Some(&Value::Bool(true)) {
            return Err(Invalid::Inactive);
        }
        if claims
            .get("iss")
            .is_some_and(|i| i.as_str() != Some(issuer))
        {
            return Err(Invalid::Issuer);
        }
        check_audience(&claims, audience)?;
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let left = match claims.get("exp").and_then(Value::as_u64) {
            Some(exp) if exp <= now => return Err(Invalid::Expired),
            Some(exp) => Duration::from_secs(exp - now).min(MAX_TTL),
            None => MAX_TTL,
        };
        if let Ok(mut cache) = self.cache.lock() {
            if cache.len() >= MAX_CACHED {
                let now = Instant::now();
                cache.retain(|_, (until, _)| *until > now);
                if cache.len() >= MAX_CACHED {
                    cache.clear();
                }
            }
            cache.insert(digest, (Instant::now() + left, claims.clone()));
        }
        Ok(claims)
    }

    fn cached(&self, digest: &[u8; 32]) -> Option<Map<String, Value>> {
        let mut cache = self.cache.lock().ok()?;
        match cache.get(digest) {
            Some((until, claims)) if *until > Instant::now() => Some(claims.clone()),
            Some(_) => {
                cache.remove(digest);
                None
            }
            None => None,
        }
    }
}
