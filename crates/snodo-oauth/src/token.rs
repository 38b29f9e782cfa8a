//! What a validated access token says about its bearer: attached to the request's
//! [`snodo::Principal`] and read by authorizers and handlers.

use std::collections::BTreeSet;

use serde_json::{Map, Value};
use snodo::{Principal, RequestContext};

/// A validated access token's facts.
#[derive(Clone, Debug, PartialEq)]
pub struct TokenInfo {
    pub(crate) subject: Option<String>,
    pub(crate) client_id: Option<String>,
    pub(crate) scopes: BTreeSet<String>,
    pub(crate) claims: Map<String, Value>,
    pub(crate) expires_at: Option<u64>,
}

impl TokenInfo {
    /// Reads the facts from a claim set (a JWT payload or an introspection answer):
    /// `sub`; `client_id` (or `azp`, `cid`); `scope` (space-separated) or `scp` (an
    /// array or a string); `exp`; and the `chosen` claims.
    pub(crate) fn from_claims(claims: &Map<String, Value>, chosen: &[String]) -> Self {
        let text = |k: &str| claims.get(k).and_then(Value::as_str).map(str::to_owned);
        let mut scopes = BTreeSet::new();
        for key in ["scope", "scp"] {
            match claims.get(key) {
                Some(Value::String(s)) => {
                    scopes.extend(s.split(' ').filter(|s| !s.is_empty()).map(str::to_owned))
                }
                Some(Value::Array(a)) => {
                    scopes.extend(a.iter().filter_map(Value::as_str).map(str::to_owned));
                }
                _ => {}
            }
        }
        Self {
            subject: text("sub"),
            client_id: text("client_id")
                .or_else(|| text("azp"))
                .or_else(|| text("cid")),
            scopes,
            claims: chosen
                .iter()
                .filter_map(|k| claims.get(k).map(|v| (k.clone(), v.clone())))
                .collect(),
            expires_at: claims.get("exp").and_then(Value::as_u64),
        }
    }

    /// The token of the request `ctx` serves, if it was authenticated by a
    /// [`crate::ResourceServer`].
    #[must_use]
    pub fn of(ctx: &RequestContext) -> Option<&Self> {
        Self::of_principal(ctx.principal()?)
    }

    /// The token behind `principal`, if any.
    #[must_use]
    pub fn of_principal(principal: &Principal) -> Option<&Self> {
        principal.extension::<Self>()
    }

    /// The `sub` claim.
    #[must_use]
    pub fn subject(&self) -> Option<&str> {
        self.subject.as_deref()
    }

    /// The client the token was issued to (`client_id`, `azp` or `cid`).
    #[must_use]
    pub fn client_id(&self) -> Option<&str> {
        self.client_id.as_deref()
    }

    /// The granted scopes.
    #[must_use]
    pub fn scopes(&self) -> &BTreeSet<String> {
        &self.scopes
    }

    /// Whether `scope` was granted.
    #[must_use]
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.contains(scope)
    }

    /// The claims chosen with [`crate::OAuthConfig::claim`].
    #[must_use]
    pub fn claims(&self) -> &Map<String, Value> {
        &self.claims
    }

    /// `exp`, in seconds since the epoch.
    #[must_use]
    pub fn expires_at(&self) -> Option<u64> {
        self.expires_at
    }

    /// The principal for this token: named by its subject (else its client), with the
    /// client as cancellation scope, carrying these facts.
    pub(crate) fn into_principal(self) -> Principal {
        let id = self
            .subject
            .clone()
            .or_else(|| self.client_id.clone())
            .unwrap_or_else(|| "anonymous-token".into());
        let mut p = Principal::new(id);
        if let Some(c) = &self.client_id {
            p = p.with_scope(c.as_str());
        }
        p.with_extension(self)
    }
}
