//! What a resource server is configured with.

use std::time::Duration;

use jsonwebtoken::Algorithm;

/// The asymmetric algorithms accepted by default. `none` and the HMAC family are never
/// accepted: a resource server holds no shared secret, and an HMAC "key" made of a
/// public key is the classic confusion attack.
pub const DEFAULT_ALGORITHMS: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// RFC 7662 token introspection for opaque (non-JWT) access tokens.
#[derive(Clone)]
pub struct Introspection {
    pub(crate) endpoint: Option<String>,
    pub(crate) client_id: String,
    pub(crate) client_secret: String,
}

impl std::fmt::Debug for Introspection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Introspection")
            .field("endpoint", &self.endpoint)
            .field("client_id", &self.client_id)
            .finish_non_exhaustive()
    }
}

impl Introspection {
    /// Introspects with these client credentials (HTTP Basic) at the endpoint the
    /// issuer's metadata names (`introspection_endpoint`).
    pub fn new(client_id: impl Into<String>, client_secret: impl Into<String>) -> Self {
        Self {
            endpoint: None,
            client_id: client_id.into(),
            client_secret: client_secret.into(),
        }
    }

    /// An explicit endpoint instead of the discovered one.
    #[must_use]
    pub fn endpoint(mut self, url: impl Into<String>) -> Self {
        self.endpoint = Some(url.into());
        self
    }
}

/// The configuration of one protected resource (one MCP endpoint).
///
/// ```
/// use snodo_oauth::OAuthConfig;
/// let config = OAuthConfig::new("https://auth.example.com", "https://mcp.example.com/mcp")
///     .required_scope("mcp")
///     .claim("email");
/// # let _ = config;
/// ```
#[derive(Clone, Debug)]
pub struct OAuthConfig {
    pub(crate) issuer: String,
    pub(crate) resource: String,
    pub(crate) jwks_url: Option<String>,
    pub(crate) introspection: Option<Introspection>,
    pub(crate) required_scopes: Vec<String>,
    pub(crate) scopes_supported: Vec<String>,
    pub(crate) algorithms: Vec<Algorithm>,
    pub(crate) leeway: Duration,
    pub(crate) jwks_min_refresh: Duration,
    pub(crate) jwks_max_age: Duration,
    pub(crate) fetch_timeout: Duration,
    pub(crate) claims: Vec<String>,
    pub(crate) max_token_bytes: usize,
    pub(crate) resource_name: Option<String>,
    /// Extra trust anchors (PEM) for https:// authorization servers.
    pub(crate) tls_roots_pem: Vec<Vec<u8>>,
    /// Accept DPoP-bound tokens (RFC 9449), with proofs fresh within this window.
    pub(crate) dpop_window: Option<Duration>,
    /// Require server nonces in DPoP proofs: the key that tags them, their lifetime.
    pub(crate) dpop_nonces: Option<(Vec<u8>, Duration)>,
}

impl OAuthConfig {
    /// Tokens issued by `issuer` (its identifier, exactly as in the tokens' `iss`) for
    /// `resource`, the canonical URI of this MCP endpoint (RFC 8707: the audience every
    /// token must name, e.g. `https://mcp.example.com/mcp`).
    pub fn new(issuer: impl Into<String>, resource: impl Into<String>) -> Self {
        Self {
            issuer: issuer.into(),
            resource: resource.into(),
            jwks_url: None,
            introspection: None,
            required_scopes: Vec::new(),
            scopes_supported: Vec::new(),
            algorithms: DEFAULT_ALGORITHMS.to_vec(),
            leeway: Duration::from_secs(30),
            jwks_min_refresh: Duration::from_secs(30),
            jwks_max_age: Duration::from_secs(3600),
            fetch_timeout: Duration::from_secs(5),
            claims: Vec::new(),
            max_token_bytes: 16 * 1024,
            resource_name: None,
            tls_roots_pem: Vec::new(),
            dpop_window: None,
            dpop_nonces: None,
        }
    }

    /// Accept DPoP-bound access tokens (RFC 9449): `Authorization: DPoP <token>` with a
    /// proof in the `DPoP` header, checked (signature by its `jwk`, `htm`, `htu`, `iat`
    /// within `window` of now, `jti` not used before within the window, `ath`) and
    /// bound (`cnf.jkt` of the token = the proof key's thumbprint). A DPoP-bound token
    /// presented as `Bearer` is refused either way; unbound bearer tokens still work.
    #[must_use]
    pub fn dpop(mut self, window: Duration) -> Self {
        self.dpop_window = Some(window);
        self
    }

    /// With [`dpop`](Self::dpop): every DPoP proof must carry a nonce this deployment
    /// issued within `lifetime` (RFC 9449 §9). A proof without one, or with one that is
    /// stale or forged, is answered `401` with `WWW-Authenticate: DPoP
    /// error="use_dpop_nonce"` and a fresh nonce in the `DPoP-Nonce` header; the
    /// client signs a new proof with it and retries. A nonce is its issue time and an
    /// HMAC-SHA256 tag under `key`: give every instance the same key (the deployment's
    /// state key) and each accepts the others' nonces, with no shared store.
    ///
    /// ```
    /// use std::time::Duration;
    /// use snodo_oauth::OAuthConfig;
    /// let config = OAuthConfig::new("https://auth.example.com", "https://mcp.example.com/mcp")
    ///     .dpop(Duration::from_secs(60))
    ///     .dpop_nonces(b"the deployment's state key".to_vec(), Duration::from_secs(300));
    /// # let _ = config;
    /// ```
    #[must_use]
    pub fn dpop_nonces(mut self, key: impl Into<Vec<u8>>, lifetime: Duration) -> Self {
        self.dpop_nonces = Some((key.into(), lifetime));
        self
    }

    /// The JWKS URL, instead of discovering it from the issuer's metadata.
    #[must_use]
    pub fn jwks_url(mut self, url: impl Into<String>) -> Self {
        self.jwks_url = Some(url.into());
        self
    }

    /// Accepts opaque tokens by RFC 7662 introspection (cached up to their expiry).
    #[must_use]
    pub fn introspection(mut self, introspection: Introspection) -> Self {
        self.introspection = Some(introspection);
        self
    }

    /// A scope every request needs (repeatable). Listed in `scopes_supported` and in
    /// every challenge.
    #[must_use]
    pub fn required_scope(mut self, scope: impl Into<String>) -> Self {
        let scope = scope.into();
        if !self.required_scopes.contains(&scope) {
            self.required_scopes.push(scope);
        }
        self
    }

    /// A further scope advertised in the metadata's `scopes_supported`.
    #[must_use]
    pub fn scope_supported(mut self, scope: impl Into<String>) -> Self {
        let scope = scope.into();
        if !self.scopes_supported.contains(&scope) {
            self.scopes_supported.push(scope);
        }
        self
    }

    /// The accepted signature algorithms (default [`DEFAULT_ALGORITHMS`]). HMAC
    /// algorithms are dropped: they are never accepted.
    #[must_use]
    pub fn algorithms(mut self, algorithms: impl IntoIterator<Item = Algorithm>) -> Self {
        self.algorithms = algorithms
            .into_iter()
            .filter(|a| !matches!(a, Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512))
            .collect();
        self
    }

    /// Clock skew allowed on `exp` and `nbf` (default 30 s).
    #[must_use]
    pub fn leeway(mut self, leeway: Duration) -> Self {
        self.leeway = leeway;
        self
    }

    /// The least time between two JWKS fetches caused by unknown key ids (default 30 s).
    #[must_use]
    pub fn jwks_min_refresh(mut self, d: Duration) -> Self {
        self.jwks_min_refresh = d;
        self
    }

    /// After this long the JWKS is fetched again on the next request (default 1 h);
    /// the old keys keep serving if that fails.
    #[must_use]
    pub fn jwks_max_age(mut self, d: Duration) -> Self {
        self.jwks_max_age = d;
        self
    }

    /// Timeout of each request to the authorization server (default 5 s).
    #[must_use]
    pub fn fetch_timeout(mut self, d: Duration) -> Self {
        self.fetch_timeout = d;
        self
    }

    /// A token claim copied into [`crate::TokenInfo::claims`] (repeatable).
    #[must_use]
    pub fn claim(mut self, name: impl Into<String>) -> Self {
        self.claims.push(name.into());
        self
    }

    /// Longest token accepted (default 16 KiB); longer ones are refused unread.
    #[must_use]
    pub fn max_token_bytes(mut self, n: usize) -> Self {
        self.max_token_bytes = n;
        self
    }

    /// `resource_name` in the protected-resource metadata.
    #[must_use]
    pub fn resource_name(mut self, name: impl Into<String>) -> Self {
        self.resource_name = Some(name.into());
        self
    }

    /// Also trusts the CA certificates in `pem` (one or more PEM `CERTIFICATE` blocks)
    /// for https:// authorization servers, besides the system's trust anchors (e.g. a
    /// company CA). A PEM that holds no certificate is a setup error.
    #[cfg(feature = "https")]
    #[must_use]
    pub fn tls_root_certificates_pem(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.tls_roots_pem.push(pem.into());
        self
    }
}

/// A URI reduced for audience comparison (RFC 8707 / RFC 3986 6.2.2): scheme and host
/// lower-cased, default ports dropped, an empty path read as `/`, no fragment.
pub(crate) fn canonical_uri(uri: &str) -> Option<String> {
    let uri = uri.split('#').next().unwrap_or_default();
    let (scheme, rest) = uri.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    let split = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(split);
    if authority.is_empty() || authority.contains('@') {
        return None;
    }
    let mut host = authority.to_ascii_lowercase();
    for (s, port) in [("http", ":80"), ("https", ":443")] {
        if scheme == s && host.ends_with(port) {
            host.truncate(host.len() - port.len());
        }
    }
    let path = if path.is_empty() || path.starts_with('?') {
        format!("/{path}")
    } else {
        path.to_owned()
    };
    Some(format!("{scheme}://{host}{path}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical() {
        assert_eq!(
            canonical_uri("HTTPS://MCP.Example.com:443/mcp").as_deref(),
            Some("https://mcp.example.com/mcp")
        );
        assert_eq!(canonical_uri("http://h:80").as_deref(), Some("http://h/"));
        assert_eq!(
            canonical_uri("http://h:8080/MCP#x").as_deref(),
            Some("http://h:8080/MCP")
        );
        assert_ne!(canonical_uri("http://h/mcp"), canonical_uri("http://h/MCP"));
        assert_eq!(canonical_uri("not a uri"), None);
        assert_eq!(canonical_uri("http://user@h/"), None);
    }
}
