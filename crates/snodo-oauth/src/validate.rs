//! Checking one JWT access token: algorithm allow-list, signature by the issuer's key,
//! `iss`, `exp`/`nbf` with leeway, and the audience bound to this resource.

use std::sync::Arc;

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, Validation, decode, decode_header};
use serde_json::{Map, Value};

use crate::config::canonical_uri;
use crate::jwks::{JwksCache, KeyError};

/// Why a token was refused. The messages are safe to send: they never quote the token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Invalid {
    Malformed,
    Algorithm,
    UnknownKey,
    Signature,
    Issuer,
    Audience,
    Expired,
    NotYetValid,
    TooLong,
    Inactive,
    Unverifiable,
    /// A DPoP-bound token presented without its proof, or a proof by another key.
    Bound,
    /// A token presented with the DPoP scheme that is not DPoP-bound.
    Unbound,
}

impl Invalid {
    /// The `error_description` of the challenge.
    pub(crate) fn description(self) -> &'static str {
        match self {
            Self::Malformed => "The access token is malformed",
            Self::Algorithm => "The access token's signature algorithm is not accepted",
            Self::UnknownKey => "The access token is signed with an unknown key",
            Self::Signature => "The access token's signature is invalid",
            Self::Issuer => "The access token was issued by another issuer",
            Self::Audience => "The access token was not issued for this resource",
            Self::Expired => "The access token expired",
            Self::NotYetValid => "The access token is not valid yet",
            Self::TooLong => "The access token is too long",
            Self::Inactive => "The access token is not active",
            Self::Unverifiable => "The access token cannot be verified",
            Self::Bound => "The access token is bound to another key (DPoP)",
            Self::Unbound => "The access token is not DPoP-bound",
        }
    }
}

/// What a JWT check needs.
pub(crate) struct JwtRules<'a> {
    pub(crate) issuer: &'a str,
    /// The canonical resource URI.
    pub(crate) audience: &'a str,
    pub(crate) algorithms: &'a [Algorithm],
    pub(crate) leeway: u64,
}

/// Whether `token` looks like a JWS compact serialisation (three base64url parts).
pub(crate) fn looks_like_jwt(token: &str) -> bool {
    let mut parts = token.split('.');
    let ok = |p: Option<&str>| {
        p.is_some_and(|p| {
            !p.is_empty()
                && p.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
    };
    ok(parts.next()) && ok(parts.next()) && ok(parts.next()) && parts.next().is_none()
}

/// Verifies a JWT and returns its claims.
pub(crate) async fn verify_jwt(
    token: &str,
    keys: &Arc<JwksCache>,
    rules: &JwtRules<'_>,
) -> Result<Map<String, Value>, Invalid> {
    // `alg: none` and unknown algorithms do not parse into `Algorithm`.
    let header = decode_header(token).map_err(|_| match declared_alg(token) {
        Some(_) => Invalid::Algorithm,
        None => Invalid::Malformed,
    })?;
    let alg = header.alg;
    if !rules.algorithms.contains(&alg) {
        return Err(Invalid::Algorithm);
    }
    let candidates = keys
        .keys_for(header.kid.as_deref(), alg)
        .await
        .map_err(|KeyError::Unknown| Invalid::UnknownKey)?;
    let mut validation = Validation::new(alg);
    validation.set_issuer(&[rules.issuer]);
    validation.set_required_spec_claims(&["exp", "iss", "aud"]);
    validation.leeway = rules.leeway;
    validation.validate_nbf = true;
    // Checked below, comparing canonical URIs.
    validation.validate_aud = false;
    let mut last = Invalid::Signature;
    for key in candidates {
        match decode::<Map<String, Value>>(token, &key.key, &validation) {
            Ok(data) => {
                check_audience(&data.claims, rules.audience)?;
                return Ok(data.claims);
            }
            Err(e) => {
                last = match e.kind() {
                    ErrorKind::InvalidSignature => Invalid::Signature,
                    ErrorKind::ExpiredSignature => return Err(Invalid::Expired),
                    ErrorKind::ImmatureSignature => return Err(Invalid::NotYetValid),
                    ErrorKind::InvalidIssuer => return Err(Invalid::Issuer),
                    ErrorKind::MissingRequiredClaim(c) if c == "iss" => {
                        return Err(Invalid::Issuer);
                    }
                    ErrorKind::MissingRequiredClaim(c) if c == "aud" => {
                        return Err(Invalid::Audience);
                    }
                    ErrorKind::InvalidAlgorithm => Invalid::Algorithm,
                    ErrorKind::InvalidEcdsaKey | ErrorKind::InvalidRsaKey(_) => {
                        Invalid::Unverifiable
                    }
                    _ => Invalid::Malformed,
                };
            }
        }
    }
    Err(last)
}

/// The `alg` a token's header names, read without trusting anything else in it.
fn declared_alg(token: &str) -> Option<String> {
    use base64::Engine as _;
    let head = token.split('.').next()?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(head)
        .ok()?;
    let header: Value = serde_json::from_slice(&bytes).ok()?;
    header.get("alg")?.as_str().map(str::to_owned)
}

/// `aud` (a string or an array) names the resource, compared as canonical URIs.
pub(crate) fn check_audience(claims: &Map<String, Value>, audience: &str) -> Result<(), Invalid> {
    let names = |v: &Value| {
        v.as_str()
            .and_then(canonical_uri)
            .is_some_and(|a| a == audience)
    };
    let ok = match claims.get("aud") {
        Some(Value::Array(items)) => items.iter().any(names),
        Some(v) => names(v),
        None => false,
    };
    if ok { Ok(()) } else { Err(Invalid::Audience) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jwt_shape() {
        assert!(looks_like_jwt("a.b.c"));
        assert!(looks_like_jwt("eyJ-_.x1.Zz"));
        assert!(!looks_like_jwt("a.b"));
        assert!(!looks_like_jwt("a.b.c.d"));
        assert!(!looks_like_jwt("a..c"));
        assert!(!looks_like_jwt("a.b=.c"));
        assert!(!looks_like_jwt("opaque-token"));
    }

    #[test]
    fn audience() {
        let claims = |aud: Value| {
            let mut m = Map::new();
            m.insert("aud".into(), aud);
            m
        };
        let me = "https://mcp.example.com/mcp";
        assert!(
            check_audience(&claims(Value::from("HTTPS://MCP.EXAMPLE.COM:443/mcp")), me).is_ok()
        );
        assert!(
            check_audience(
                &claims(serde_json::json!(["x", "https://mcp.example.com/mcp"])),
                me
            )
            .is_ok()
        );
        assert!(check_audience(&claims(Value::from("https://mcp.example.com/other")), me).is_err());
        assert!(check_audience(&claims(Value::from(7)), me).is_err());
        assert!(check_audience(&Map::new(), me).is_err());
    }
}
