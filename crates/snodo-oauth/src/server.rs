//! [`ResourceServer`]: validates bearer tokens on every request (an
//! [`Authenticator`]) and describes itself (RFC 9728 metadata).

use std::fmt;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::future::BoxFuture;
use http::request::Parts;
use http::{HeaderValue, Method, Response, StatusCode, header};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};
use snodo::Principal;
use snodo::http::{AuthRejection, Authenticator, Body, Server};

use crate::config::{OAuthConfig, canonical_uri};
use crate::discovery;
use crate::dpop::{ALGORITHMS as DPOP_ALGORITHMS, DpopChecker, Refused, bound_jkt};
use crate::fetch::Fetcher;
use crate::introspect::Introspector;
use crate::jwks::JwksCache;
use crate::nonce::Nonces;
use crate::token::TokenInfo;
use crate::validate::{Invalid, JwtRules, looks_like_jwt, verify_jwt};

/// The well-known path of protected-resource metadata (RFC 9728).
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// Why a resource server could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SetupError {
    /// The configuration is inconsistent.
    #[error("OAuth configuration: {0}")]
    Config(String),
    /// The issuer's metadata could not be read.
    #[error("OAuth issuer discovery: {0}")]
    Discovery(String),
}

/// An OAuth 2.1 resource server for one MCP endpoint. Cheap to clone.
///
/// Install it as the endpoint's authenticator
/// (`HttpConfig::default().authenticator(rs.clone())`), serve its metadata
/// ([`ResourceServer::mount`] on a [`Server`], or [`ResourceServer::metadata_response`]
/// from any router), and give the runtime a [`crate::ScopePolicy`] for per-component
/// scopes.
#[derive(Clone)]
pub struct ResourceServer {
    inner: Arc<Inner>,
}

struct Inner {
    config: OAuthConfig,
    /// The canonical resource URI: the audience.
    audience: String,
    metadata_url: String,
    /// Path of the resource (`/mcp`), for the path-suffixed metadata URL.
    resource_path: String,
    metadata: Bytes,
    jwks: Option<Arc<JwksCache>>,
    introspector: Option<Introspector>,
    dpop: Option<DpopChecker>,
}

impl fmt::Debug for ResourceServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResourceServer")
            .field("issuer", &self.inner.config.issuer)
            .field("resource", &self.inner.config.resource)
            .field(
                "jwks",
                &self.inner.jwks.as_ref().map(|j| j.url().to_owned()),
            )
            .field("introspection", &self.inner.introspector.is_some())
            .finish_non_exhaustive()
    }
}

impl ResourceServer {
    /// Reads the issuer's metadata (unless the JWKS URL is configured and no
    /// introspection endpoint needs discovering) and fetches its keys once. A JWKS
    /// that cannot be fetched yet is not fatal: it is fetched again on demand.
    pub async fn discover(config: OAuthConfig) -> Result<Self, SetupError> {
        let audience = canonical_uri(&config.resource).ok_or_else(|| {
            SetupError::Config(format!(
                "the resource {:?} is not an absolute http(s) URI",
                config.resource
            ))
        })?;
        if config.algorithms.is_empty() {
            return Err(SetupError::Config(
                "no signature algorithm is accepted".into(),
            ));
        }
        let fetcher = Fetcher::new(config.fetch_timeout, &config.tls_roots_pem)
            .map_err(SetupError::Config)?;
        let needs_metadata = config.jwks_url.is_none()
            || config
                .introspection
                .as_ref()
                .is_some_and(|i| i.endpoint.is_none());
        let found = if needs_metadata {
            discovery::discover(&fetcher, &config.issuer)
                .await
                .map_err(SetupError::Discovery)?
        } else {
            discovery::IssuerMetadata::default()
        };
        let jwks_url = config.jwks_url.clone().or(found.jwks_uri);
        let introspector = match &config.introspection {
            None => None,
            Some(i) => {
                let endpoint = i
                    .endpoint
                    .clone()
                    .or(found.introspection_endpoint)
                    .ok_or_else(|| {
                        SetupError::Discovery(
                            "introspection is configured but the issuer names no introspection_endpoint".into(),
                        )
                    })?;
                Some(Introspector::new(
                    endpoint,
                    i.client_id.clone(),
                    i.client_secret.clone(),
                    fetcher.clone(),
                ))
            }
        };
        if jwks_url.is_none() && introspector.is_none() {
            return Err(SetupError::Discovery(
                "the issuer's metadata names no jwks_uri".into(),
            ));
        }
        let jwks = jwks_url.map(|url| {
            Arc::new(JwksCache::new(
                url,
                fetcher,
                config.jwks_min_refresh,
                config.jwks_max_age,
            ))
        });
        if let Some(j) = &jwks {
            j.refresh().await;
        }
        let (origin, resource_path) = split_origin(&audience);
        let suffix = if resource_path == "/" {
            ""
        } else {
            resource_path
        };
        let metadata_url = format!("{origin}{METADATA_PATH}{suffix}");
        let mut inner = Inner {
            audience: audience.clone(),
            metadata_url,
            resource_path: resource_path.to_owned(),
            metadata: Bytes::new(),
            jwks,
            introspector,
            dpop: config.dpop_window.map(|w| {
                let nonces = config
                    .dpop_nonces
                    .as_ref()
                    .map(|(key, lifetime)| Nonces::new(key.clone(), *lifetime));
                DpopChecker::new(w.as_secs().max(1), nonces)
            }),
            config,
        };
        inner.metadata = Bytes::from(inner.metadata_document().to_string());
        Ok(Self {
            inner: Arc::new(inner),
        })
    }

    /// The URL of the protected-resource metadata (path-suffixed with the resource's
    /// path), as advertised in every challenge.
    #[must_use]
    pub fn metadata_url(&self) -> &str {
        &self.inner.metadata_url
    }

    /// The paths the metadata is served at: the root well-known path and the
    /// path-suffixed one (`/.well-known/oauth-protected-resource/mcp`).
    #[must_use]
    pub fn metadata_paths(&self) -> Vec<String> {
        let mut paths = vec![METADATA_PATH.to_owned()];
        if self.inner.resource_path != "/" {
            paths.push(format!("{METADATA_PATH}{}", self.inner.resource_path));
        }
        paths
    }

    /// The RFC 9728 metadata document.
    #[must_use]
    pub fn metadata_document(&self) -> Value {
        self.inner.metadata_document()
    }

    /// The answer to a request for the metadata: 200 JSON to GET (and HEAD), 405
    /// otherwise.
    #[must_use]
    pub fn metadata_response(&self, request: &Parts) -> Response<Body> {
        let mut r = if request.method == Method::GET || request.method == Method::HEAD {
            let mut r = Response::new(Body::full(self.inner.metadata.clone()));
            r.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            r.headers_mut().insert(
                header::CACHE_CONTROL,
                HeaderValue::from_static("public, max-age=300"),
            );
            r
        } else {
            let mut r = Response::new(Body::empty());
            *r.status_mut() = StatusCode::METHOD_NOT_ALLOWED;
            r.headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
            r
        };
        // Public metadata: browser-based clients read it cross-origin.
        r.headers_mut().insert(
            header::ACCESS_CONTROL_ALLOW_ORIGIN,
            HeaderValue::from_static("*"),
        );
        r
    }

    /// Serves the metadata at [`ResourceServer::metadata_paths`] beside the MCP
    /// endpoint of `server`.
    #[must_use]
    pub fn mount(&self, mut server: Server) -> Server {
        for path in self.metadata_paths() {
            let this = self.clone();
            server = server.route(path, move |parts| {
                let r = this.metadata_response(&parts);
                async move { r }
            });
        }
        server
    }

    /// Validates a bearer token (JWT by signature, opaque by introspection).
    pub async fn validate(&self, token: &str) -> Result<TokenInfo, TokenError> {
        self.check(token).await.map(|(i, _)| i).map_err(TokenError)
    }

    /// The token's information and its DPoP key binding (`cnf.jkt`), if any.
    async fn check(&self, token: &str) -> Result<(TokenInfo, Option<String>), Invalid> {
        let inner = &self.inner;
        let cfg = &inner.config;
        if token.len() > cfg.max_token_bytes {
            return Err(Invalid::TooLong);
        }
        let claims = if looks_like_jwt(token) {
            let Some(jwks) = &inner.jwks else {
                return Err(Invalid::Unverifiable);
            };
            let rules = JwtRules {
                issuer: &cfg.issuer,
                audience: &inner.audience,
                algorithms: &cfg.algorithms,
                leeway: cfg.leeway.as_secs(),
            };
            verify_jwt(token, jwks, &rules).await?
        } else if let Some(i) = &inner.introspector {
            i.introspect(token, &cfg.issuer, &inner.audience).await?
        } else {
            return Err(Invalid::Malformed);
        };
        let jkt = bound_jkt(&claims).map(str::to_owned);
        Ok((TokenInfo::from_claims(&claims, &cfg.claims), jkt))
    }

    /// The scopes every request needs.
    pub(crate) fn required_scopes(&self) -> &[String] {
        &self.inner.config.required_scopes
    }

    /// A `Bearer` challenge with these parameters (values quoted), always naming the
    /// metadata.
    pub(crate) fn challenge(&self, error: Option<(&str, &str)>, scopes: &[&str]) -> String {
        let mut out = String::from("Bearer ");
        let mut params: Vec<(&str, String)> = Vec::new();
        if let Some((code, description)) = error {
            params.push(("error", code.to_owned()));
            params.push(("error_description", description.to_owned()));
        }
        if !scopes.is_empty() {
            params.push(("scope", scopes.join(" ")));
        }
        params.push(("resource_metadata", self.inner.metadata_url.clone()));
        let parts: Vec<String> = params
            .into_iter()
            .map(|(k, v)| format!("{k}=\"{}\"", quote(&v)))
            .collect();
        out.push_str(&parts.join(", "));
        if self.inner.dpop.is_some() {
            out.push_str(&format!(", DPoP algs=\"{}\"", dpop_algs().join(" ")));
        }
        out
    }

    /// A `DPoP` challenge for a refused proof (RFC 9449 §7.1).
    fn dpop_refusal(&self, description: &str) -> AuthRejection {
        let www_authenticate = format!(
            "DPoP error=\"invalid_dpop_proof\", error_description=\"{}\", algs=\"{}\", resource_metadata=\"{}\"",
            quote(description),
            dpop_algs().join(" "),
            quote(&self.inner.metadata_url)
        );
        AuthRejection::Unauthorized { www_authenticate }
    }

    /// A `DPoP` challenge asking for a proof with the server's nonce (RFC 9449 §9).
    fn nonce_refusal(&self, nonce: String) -> AuthRejection {
        let www_authenticate = format!(
            "DPoP error=\"use_dpop_nonce\", error_description=\"The DPoP proof must carry a nonce this server issued\", algs=\"{}\", resource_metadata=\"{}\"",
            dpop_algs().join(" "),
            quote(&self.inner.metadata_url)
        );
        AuthRejection::UseDpopNonce {
            www_authenticate,
            nonce,
        }
    }

    /// The scopes a 401 suggests: those every request needs, else those supported.
    fn suggested_scopes(&self) -> Vec<&str> {
        let cfg = &self.inner.config;
        let from = if cfg.required_scopes.is_empty() {
            &cfg.scopes_supported
        } else {
            &cfg.required_scopes
        };
        from.iter().map(String::as_str).collect()
    }

    fn unauthorized(&self, error: Option<Invalid>) -> AuthRejection {
        let scopes = self.suggested_scopes();
        let www_authenticate = match error {
            None => self.challenge(None, &scopes),
            Some(e) => self.challenge(Some(("invalid_token", e.description())), &scopes),
        };
        AuthRejection::Unauthorized { www_authenticate }
    }

    async fn authenticate_parts(
        &self,
        request: &Parts,
    ) -> Result<Option<Principal>, AuthRejection> {
        if query_has_token(request.uri.query()) {
            return Err(AuthRejection::BadRequest {
                www_authenticate: self.challenge(
                    Some((
                        "invalid_request",
                        "Access tokens are not accepted in the query string",
                    )),
                    &[],
                ),
            });
        }
        let mut values = request.headers.get_all(header::AUTHORIZATION).iter();
        let value = match (values.next(), values.next()) {
            (None, _) => return Err(self.unauthorized(None)),
            (Some(v), None) => v,
            (Some(_), Some(_)) => {
                return Err(AuthRejection::BadRequest {
                    www_authenticate: self.challenge(
                        Some(("invalid_request", "More than one Authorization header")),
                        &[],
                    ),
                });
            }
        };
        let Ok(value) = value.to_str() else {
            return Err(self.unauthorized(Some(Invalid::Malformed)));
        };
        let (scheme, token) = value.split_once(' ').unwrap_or((value, ""));
        let dpop = scheme.eq_ignore_ascii_case("dpop") && self.inner.dpop.is_some();
        if !scheme.eq_ignore_ascii_case("bearer") && !dpop {
            // Credentials of another scheme: the challenge says which one to use.
            return Err(self.unauthorized(None));
        }
        let token = token.trim();
        if token.is_empty() {
            return Err(self.unauthorized(Some(Invalid::Malformed)));
        }
        let proof_key = match (&self.inner.dpop, dpop) {
            (Some(checker), true) => {
                let mut proofs = request.headers.get_all("dpop").iter();
                let proof = match (proofs.next(), proofs.next()) {
                    (Some(p), None) => p.to_str().unwrap_or_default(),
                    _ => {
                        return Err(self.dpop_refusal("Exactly one DPoP proof is needed"));
                    }
                };
                let url = format!(
                    "{}{}",
                    split_origin(&self.inner.audience).0,
                    request.uri.path()
                );
                match checker.verify(proof, request.method.as_str(), &url, token) {
                    Ok(jkt) => Some(jkt),
                    Err(Refused::Proof(reason)) => {
                        tracing::debug!(reason, token = %fingerprint(token), "DPoP proof refused");
                        return Err(self.dpop_refusal(reason));
                    }
                    Err(Refused::Nonce) => {
                        let nonce = checker.fresh_nonce().unwrap_or_default();
                        return Err(self.nonce_refusal(nonce));
                    }
                }
            }
            _ => None,
        };
        let checked = self
            .check(token)
            .await
            .and_then(|(info, bound)| match (bound, &proof_key) {
                (None, None) => Ok(info),
                (Some(b), Some(k)) if &b == k => Ok(info),
                (None, Some(_)) => Err(Invalid::Unbound),
                (Some(_), _) => Err(Invalid::Bound),
            });
        let info = match checked {
            Ok(info) => info,
            Err(e) => {
                tracing::debug!(
                    reason = e.description(),
                    token = %fingerprint(token),
                    "bearer token refused"
                );
                return Err(self.unauthorized(Some(e)));
            }
        };
        let missing: Vec<&str> = self
            .required_scopes()
            .iter()
            .filter(|s| !info.has_scope(s))
            .map(String::as_str)
            .collect();
        if !missing.is_empty() {
            let needed: Vec<&str> = self.required_scopes().iter().map(String::as_str).collect();
            return Err(AuthRejection::Forbidden {
                www_authenticate: Some(self.challenge(
                    Some((
                        "insufficient_scope",
                        "The access token lacks a scope every request needs",
                    )),
                    &needed,
                )),
            });
        }
        Ok(Some(info.into_principal()))
    }
}

impl Inner {
    fn metadata_document(&self) -> Value {
        let cfg = &self.config;
        let mut scopes: Vec<&str> = cfg.required_scopes.iter().map(String::as_str).collect();
        for s in &cfg.scopes_supported {
            if !scopes.contains(&s.as_str()) {
                scopes.push(s);
            }
        }
        let mut doc = json!({
            "resource": cfg.resource,
            "authorization_servers": [cfg.issuer],
            "bearer_methods_supported": ["header"],
        });
        if let Value::Object(m) = &mut doc {
            if !scopes.is_empty() {
                m.insert("scopes_supported".into(), json!(scopes));
            }
            if let Some(n) = &cfg.resource_name {
                m.insert("resource_name".into(), json!(n));
            }
            let algs: Vec<Value> = cfg
                .algorithms
                .iter()
                .filter_map(|a| serde_json::to_value(a).ok())
                .collect();
            m.insert(
                "resource_signing_alg_values_supported".into(),
                Value::Array(algs),
            );
            if self.config.dpop_window.is_some() {
                m.insert(
                    "dpop_signing_alg_values_supported".into(),
                    json!(dpop_algs()),
                );
            }
        }
        doc
    }
}

impl Authenticator for ResourceServer {
    fn authenticate<'a>(
        &'a self,
        request: &'a Parts,
    ) -> BoxFuture<'a, Result<Option<Principal>, AuthRejection>> {
        Box::pin(self.authenticate_parts(request))
    }
}

/// Why a token was refused (its description never quotes the token).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{}", .0.description())]
pub struct TokenError(Invalid);

fn dpop_algs() -> Vec<&'static str> {
    DPOP_ALGORITHMS.iter().map(|(n, _)| *n).collect()
}

/// `scheme://authority` and the path of a canonical URI.
fn split_origin(uri: &str) -> (&str, &str) {
    let after = uri.find("://").map_or(0, |i| i + 3);
    match uri[after..].find('/') {
        Some(i) => uri.split_at(after + i),
        None => (uri, "/"),
    }
}

/// Whether a query string carries an `access_token` parameter (RFC 6750 2.3).
fn query_has_token(query: Option<&str>) -> bool {
    query.is_some_and(|q| {
        q.split('&').any(|p| {
            p.split('=')
                .next()
                .is_some_and(|k| k.eq_ignore_ascii_case("access_token"))
        })
    })
}

fn quote(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"")
}

/// A short, non-reversible name for a token in logs.
fn fingerprint(token: &str) -> String {
    let d = Sha256::digest(token.as_bytes());
    d.iter().take(4).map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helpers() {
        assert_eq!(split_origin("https://h:1/mcp"), ("https://h:1", "/mcp"));
        assert_eq!(split_origin("https://h/"), ("https://h", "/"));
        assert!(query_has_token(Some("a=1&access_token=x")));
        assert!(!query_has_token(Some("token=x")));
        assert!(!query_has_token(None));
        assert_eq!(quote(r#"a"b\c"#), r#"a\"b\\c"#);
        assert_eq!(fingerprint("x").len(), 8);
    }
}
