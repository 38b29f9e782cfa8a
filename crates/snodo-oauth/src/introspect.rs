//! RFC 7662 introspection of opaque access tokens, each answer cached up to the
//! token's expiry, a refusal for a short while, so that a stream of made-up tokens does
//! not become a stream of requests to the authorization server (keyed by the token's
//! SHA-256, never the token itself).

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

/// How long a refusal (inactive, another issuer or audience, expired) is remembered.
const REFUSAL_TTL: Duration = Duration::from_secs(30);

/// An answer (the claims, or why the token is refused) and until when it is trusted.
type Cached = (Instant, Result<Map<String, Value>, Invalid>);

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
        if let Some(outcome) = self.cached(&digest) {
            return outcome;
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
        let (ttl, outcome) = match judge(claims, issuer, audience) {
            Ok((ttl, claims)) => (ttl, Ok(claims)),
            Err(e) => (REFUSAL_TTL, Err(e)),
        };
        self.remember(digest, ttl, outcome.clone());
        outcome
    }

    fn remember(
        &self,
        digest: [u8; 32],
        ttl: Duration,
        outcome: Result<Map<String, Value>, Invalid>,
    ) {
        if let Ok(mut cache) = self.cache.lock() {
            if cache.len() >= MAX_CACHED {
                let now = Instant::now();
                cache.retain(|_, (until, _)| *until > now);
                if cache.len() >= MAX_CACHED {
                    cache.clear();
                }
            }
            cache.insert(digest, (Instant::now() + ttl, outcome));
        }
    }

    fn cached(&self, digest: &[u8; 32]) -> Option<Result<Map<String, Value>, Invalid>> {
        let mut cache = self.cache.lock().ok()?;
        match cache.get(digest) {
            Some((until, outcome)) if *until > Instant::now() => Some(outcome.clone()),
            Some(_) => {
                cache.remove(digest);
                None
            }
            None => None,
        }
    }
}

/// An introspection answer judged: how long the active token's claims may be trusted,
/// or why it is refused.
fn judge(
    claims: Map<String, Value>,
    issuer: &str,
    audience: &str,
) -> Result<(Duration, Map<String, Value>), Invalid> {
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
    let ttl = match claims.get("exp").and_then(Value::as_u64) {
        Some(exp) if exp <= now => return Err(Invalid::Expired),
        Some(exp) => Duration::from_secs(exp - now).min(MAX_TTL),
        None => MAX_TTL,
    };
    Ok((ttl, claims))
}
