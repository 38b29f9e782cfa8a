//! Per-request authentication, owned by the application.
//!
//! An [`Authenticator`] runs on every request (requests, notifications and client
//! answers alike) before anything is dispatched, and yields the caller's [`Principal`]
//! or a refusal. Session or client metadata never becomes an identity: only what the
//! authenticator derives from the HTTP request does.

use std::collections::HashMap;
use std::fmt;

use futures_util::future::BoxFuture;
use http::request::Parts;

use crate::caller::Principal;

pub use crate::caller::AuthRejection;

/// Identifies the caller of each request.
pub trait Authenticator: Send + Sync + 'static {
    /// Inspects the request head (the body has not been read yet). `Ok(None)` admits an
    /// anonymous caller.
    fn authenticate<'a>(
        &'a self,
        request: &'a Parts,
    ) -> BoxFuture<'a, Result<Option<Principal>, AuthRejection>>;
}

/// Static bearer tokens, each naming a principal: the simplest real authenticator, and
/// an example of writing one.
///
/// ```
/// use snodo::http::{BearerTokens, HttpConfig};
/// use snodo::Principal;
/// let auth = BearerTokens::new("https://mcp.example.com/.well-known/oauth-protected-resource")
///     .token("s3cret-alice", Principal::new("alice"))
///     .token("s3cret-bob", Principal::new("bob"));
/// let config = HttpConfig::default().authenticator(auth);
/// # let _ = config;
/// ```
pub struct BearerTokens {
    tokens: HashMap<String, Principal>,
    resource_metadata: String,
}

impl fmt::Debug for BearerTokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BearerTokens")
            .field("tokens", &self.tokens.len())
            .finish_non_exhaustive()
    }
}

impl BearerTokens {
    /// No tokens yet; `resource_metadata` is the URL of the protected-resource metadata
    /// advertised in the 401 challenge.
    pub fn new(resource_metadata: impl Into<String>) -> Self {
        Self {
            tokens: HashMap::new(),
            resource_metadata: resource_metadata.into(),
        }
    }

    /// Accepts `token` as `principal`.
    #[must_use]
    pub fn token(mut self, token: impl Into<String>, principal: Principal) -> Self {
        self.tokens.insert(token.into(), principal);
        self
    }

    fn challenge(&self, error: Option<&str>) -> String {
        match error {
            Some(e) => format!(
                "Bearer error=\"{e}\", resource_metadata=\"{}\"",
                self.resource_metadata
            ),
            None => format!("Bearer resource_metadata=\"{}\"", self.resource_metadata),
        }
    }
}

impl Authenticator for BearerTokens {
    fn authenticate<'a>(
        &'a self,
        request: &'a Parts,
    ) -> BoxFuture<'a, Result<Option<Principal>, AuthRejection>> {
        let outcome = match request
            .headers
            .get(http::header::AUTHORIZATION)
            .map(|v| v.to_str())
        {
            None => Err(self.challenge(None)),
            Some(Ok(value)) => match value.split_once(' ') {
                Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") => self
                    .tokens
                    .get(token.trim())
                    .cloned()
                    .map(Some)
                    .ok_or_else(|| self.challenge(Some("invalid_token"))),
                _ => Err(self.challenge(Some("invalid_request"))),
            },
            Some(Err(_)) => Err(self.challenge(Some("invalid_request"))),
        };
        Box::pin(std::future::ready(outcome.map_err(|www_authenticate| {
            AuthRejection::Unauthorized { www_authenticate }
        })))
    }
}
