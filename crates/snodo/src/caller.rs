//! Who asks and why a caller is refused: the authenticated [`Principal`] of a request,
//! and the authenticator's [`AuthRejection`]. The ground floor: the transports produce
//! them, the runtime and the protocol's errors carry them, none of them defines them.

use std::any::Any;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// The authenticated caller of a request, as the application's authenticator named it.
///
/// Its identifier scopes cancellation (a principal can only cancel its own requests)
/// and `requestState`. An optional cancellation scope separates request-id namespaces
/// of peers that share a principal (e.g. one value per client instance). An optional
/// extension carries whatever else the authenticator knows (e.g. a validated token's
/// scopes and claims) to authorizers and handlers; it takes no part in equality.
#[derive(Clone)]
pub struct Principal {
    id: Arc<str>,
    scope: Option<Arc<str>>,
    extension: Option<Arc<dyn Any + Send + Sync>>,
}

impl PartialEq for Principal {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id && self.scope == other.scope
    }
}

impl Eq for Principal {}

impl Hash for Principal {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.id.hash(state);
        self.scope.hash(state);
    }
}

impl fmt::Debug for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Principal")
            .field("id", &self.id)
            .field("scope", &self.scope)
            .field("extension", &self.extension.is_some())
            .finish()
    }
}

impl Principal {
    /// A principal with this identifier.
    pub fn new(id: impl Into<Arc<str>>) -> Self {
        Self {
            id: id.into(),
            scope: None,
            extension: None,
        }
    }

    /// Sets the cancellation scope: requests are cancellable by id only within it.
    #[must_use]
    pub fn with_scope(mut self, scope: impl Into<Arc<str>>) -> Self {
        self.scope = Some(scope.into());
        self
    }

    /// Sets the cancellation scope when there is one (a principal carried between
    /// instances as its id and scope).
    #[must_use]
    pub(crate) fn with_scope_of(self, scope: Option<String>) -> Self {
        match scope {
            Some(s) => self.with_scope(s),
            None => self,
        }
    }

    /// Attaches a typed extension (one per principal; a second call replaces it), read
    /// back with [`Principal::extension`].
    #[must_use]
    pub fn with_extension<T: Any + Send + Sync>(mut self, extension: T) -> Self {
        self.extension = Some(Arc::new(extension));
        self
    }

    /// The identifier.
    #[must_use]
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The cancellation scope, if any.
    #[must_use]
    pub fn scope(&self) -> Option<&str> {
        self.scope.as_deref()
    }

    /// The extension, if one of type `T` is attached.
    #[must_use]
    pub fn extension<T: Any>(&self) -> Option<&T> {
        self.extension.as_deref()?.downcast_ref()
    }
}

/// Why a request was refused by the authenticator.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum AuthRejection {
    /// 401 with this `WWW-Authenticate` challenge: no or invalid credentials.
    Unauthorized {
        /// The challenge, e.g. `Bearer resource_metadata="https://…"`.
        www_authenticate: String,
    },
    /// 400 with this `WWW-Authenticate` challenge: a malformed request, e.g. a token
    /// sent where none may be (RFC 6750 `invalid_request`).
    BadRequest {
        /// The challenge, e.g. `Bearer error="invalid_request"`.
        www_authenticate: String,
    },
    /// 401 with this challenge and a fresh nonce in a `DPoP-Nonce` header: the DPoP proof
    /// must carry a nonce this server issued (RFC 9449 §9, `error="use_dpop_nonce"`);
    /// the client signs a new proof with it and sends the request again.
    UseDpopNonce {
        /// The challenge, e.g. `DPoP error="use_dpop_nonce", algs="ES256"`.
        www_authenticate: String,
        /// The nonce to put in the next proof.
        nonce: String,
    },
    /// 403: valid credentials without the needed rights (the challenge is optional,
    /// e.g. `Bearer error="insufficient_scope", scope="files:read"`).
    Forbidden {
        /// The challenge, if any.
        www_authenticate: Option<String>,
    },
}
