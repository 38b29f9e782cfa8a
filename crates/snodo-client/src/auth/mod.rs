//! The OAuth client: what a client does when a server answers `401`.
//!
//! [`OAuthConfig`] is handed to [`ClientBuilder::oauth`](crate::ClientBuilder::oauth);
//! the HTTP connector then puts the token on every request and, on a `401` (or a `403`
//! with `insufficient_scope`), runs the authorization:
//!
//! - **discovery**: the protected resource's metadata (the challenge's
//!   `resource_metadata`, then the path-suffixed and the root well-known URL), its
//!   `resource` checked against the server before anything else; the authorization
//!   server's metadata (RFC 8414 path insertion, then OpenID discovery), its `issuer`
//!   compared with the identifier it was found under; a 2025-03-26 server without
//!   resource metadata: metadata at its root, else `/authorize`, `/token`, `/register`;
//! - **the client's identity**: pre-registered credentials, a client-ID metadata
//!   document URL, or dynamic registration (RFC 7591), bound to the issuer;
//! - **the grant**: authorization code with PKCE S256, `state`, the `resource`
//!   indicator exactly as published, RFC 9207 `iss` checked by string comparison; or
//!   client credentials (`client_secret_basic` or `private_key_jwt`);
//! - **scopes**: the challenge's, else the metadata's `scopes_supported`, else none;
//!   a `403 insufficient_scope` re-authorizes with the union, at most
//!   [`max_authorizations`](OAuthConfig::max_authorizations) times in a row;
//! - **tokens**: refreshed shortly before expiry and on a `401`, one refresh for
//!   concurrent calls, the rotated refresh token saved before it is used, kept in a
//!   [`TokenStore`] ([`MemoryStore`], [`FileStore`]);
//! - **DPoP** (RFC 9449) when [`dpop`](OAuthConfig::dpop) is on.
//!
//! No token appears in a log line, an error or a URL.
//!
//! ```no_run
//! use std::sync::Arc;
//! use snodo_client::Client;
//! use snodo_client::auth::{FileStore, OAuthConfig};
//!
//! # async fn run() -> Result<(), snodo_client::ClientError> {
//! let oauth = OAuthConfig::new("my-app")
//!     .scope("mcp:tools")
//!     .store(Arc::new(FileStore::new("tokens.json")));
//! let client = Client::builder("my-app", "1.0.0")
//!     .oauth(oauth)
//!     .connect_http("https://mcp.example.com/mcp")
//!     .await?;
//! let tools = client.list_tools().await?;
//! # Ok(()) }
//! ```

mod agent;
mod challenge;
mod code;
mod crypto;
mod discovery;
mod dpop;
mod flow;
mod net;
mod registration;
mod store;
mod token;

use std::sync::Arc;

pub use agent::{LoopbackAgent, UserAgent};
pub(crate) use flow::Session;
pub use store::{FileStore, MemoryStore, Registration, TokenStore, Tokens};

use crate::error::ClientError;

/// Which grant obtains tokens.
#[derive(Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Grant {
    /// Authorization code with PKCE: a user logs in (through the [`UserAgent`]).
    #[default]
    AuthorizationCode,
    /// Client credentials (machine to machine): no user, the client's own
    /// credentials (`client_secret_basic` or `private_key_jwt`).
    ClientCredentials,
    /// The JWT-bearer grant (RFC 7523 §2.1) with an assertion the workload holds
    /// (workload identity federation). A refused assertion is not sent again.
    JwtBearer {
        /// The workload's signed JWT.
        assertion: String,
    },
    /// Enterprise-managed authorization: the user's ID token is exchanged at the
    /// identity provider (RFC 8693) for an identity assertion grant (ID-JAG) for this
    /// authorization server and resource, then presented with the JWT-bearer grant.
    EnterpriseManaged {
        /// The identity provider's token endpoint.
        idp_token_endpoint: String,
        /// The user's ID token from the identity provider.
        id_token: String,
        /// The client id at the identity provider.
        idp_client_id: String,
        /// The client secret at the identity provider, if any.
        idp_client_secret: Option<String>,
    },
}

impl std::fmt::Debug for Grant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::AuthorizationCode => "AuthorizationCode",
            Self::ClientCredentials => "ClientCredentials",
            Self::JwtBearer { .. } => "JwtBearer",
            Self::EnterpriseManaged { .. } => "EnterpriseManaged",
        })
    }
}

/// How the client obtains and keeps OAuth tokens. See the [module](self) page. Its
/// `Debug` shows no secret.
#[derive(Clone)]
pub struct OAuthConfig {
    pub(crate) client_name: String,
    pub(crate) client_id: Option<String>,
    pub(crate) client_secret: Option<String>,
    pub(crate) client_issuer: Option<String>,
    pub(crate) private_key: Option<crypto::EsKey>,
    pub(crate) client_metadata_url: Option<String>,
    pub(crate) application_type: String,
    pub(crate) scopes: Vec<String>,
    pub(crate) grant: Grant,
    pub(crate) headless: Option<String>,
    pub(crate) agent: Arc<dyn UserAgent>,
    pub(crate) store: Arc<dyn TokenStore>,
    pub(crate) max_authorizations: usize,
    pub(crate) dpop: bool,
}

impl std::fmt::Debug for OAuthConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthConfig")
            .field("client_name", &self.client_name)
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| ".."))
            .field("client_issuer", &self.client_issuer)
            .field("private_key", &self.private_key.is_some())
            .field("client_metadata_url", &self.client_metadata_url)
            .field("scopes", &self.scopes)
            .field("grant", &self.grant)
            .field("headless", &self.headless)
            .field("agent", &self.agent)
            .field("store", &self.store)
            .field("max_authorizations", &self.max_authorizations)
            .field("dpop", &self.dpop)
            .finish_non_exhaustive()
    }
}

impl OAuthConfig {
    /// A public client named `client_name` (used in dynamic registration), with the
    /// authorization-code grant, a [`LoopbackAgent`] on any free port and a
    /// [`MemoryStore`].
    ///
    /// ```
    /// use snodo_client::auth::OAuthConfig;
    /// let cfg = OAuthConfig::new("my-app").client("id-1", Some("s3cret".into()));
    /// assert!(!format!("{cfg:?}").contains("s3cret"));
    /// ```
    #[must_use]
    pub fn new(client_name: impl Into<String>) -> Self {
        Self {
            client_name: client_name.into(),
            client_id: None,
            client_secret: None,
            client_issuer: None,
            private_key: None,
            client_metadata_url: None,
            application_type: "native".into(),
            scopes: Vec::new(),
            grant: Grant::AuthorizationCode,
            headless: None,
            agent: Arc::new(LoopbackAgent::new(0)),
            store: Arc::new(MemoryStore::new()),
            max_authorizations: 3,
            dpop: false,
        }
    }

    /// A pre-registered client id (and secret, for a confidential client). With
    /// [`client_issuer`](Self::client_issuer) they are only presented to that issuer.
    #[must_use]
    pub fn client(mut self, id: impl Into<String>, secret: Option<String>) -> Self {
        self.client_id = Some(id.into());
        self.client_secret = secret;
        self
    }

    /// Binds the pre-registered credentials to one authorization server.
    #[must_use]
    pub fn client_issuer(mut self, issuer: impl Into<String>) -> Self {
        self.client_issuer = Some(issuer.into());
        self
    }

    /// Authenticate with `private_key_jwt`: a P-256 key in PEM (PKCS#8 or SEC1),
    /// signing ES256 assertions (needs [`client`](Self::client)).
    pub fn private_key_pem(mut self, pem: &str) -> Result<Self, ClientError> {
        self.private_key = Some(crypto::EsKey::from_pem(pem)?);
        Ok(self)
    }

    /// The client-ID metadata document URL to use as client id where the
    /// authorization server accepts one (`client_id_metadata_document_supported`).
    #[must_use]
    pub fn client_metadata_url(mut self, url: impl Into<String>) -> Self {
        self.client_metadata_url = Some(url.into());
        self
    }

    /// `application_type` for dynamic registration (default `native`).
    #[must_use]
    pub fn application_type(mut self, t: impl Into<String>) -> Self {
        self.application_type = t.into();
        self
    }

    /// A scope to request when the server's challenge and metadata name none
    /// (repeatable).
    #[must_use]
    pub fn scope(mut self, s: impl Into<String>) -> Self {
        for part in s.into().split_whitespace() {
            if !self.scopes.iter().any(|x| x == part) {
                self.scopes.push(part.to_owned());
            }
        }
        self
    }

    /// The grant (default [`Grant::AuthorizationCode`]).
    #[must_use]
    pub fn grant(mut self, g: Grant) -> Self {
        self.grant = g;
        self
    }

    /// The user-agent step (default a [`LoopbackAgent`] on any free port).
    #[must_use]
    pub fn agent(mut self, a: Arc<dyn UserAgent>) -> Self {
        self.agent = a;
        self
    }

    /// Headless: no browser; the authorization endpoint's redirect to `redirect_uri`
    /// is followed and read (for authorization servers that approve at once, such as
    /// test servers and pre-consented clients).
    #[must_use]
    pub fn headless(mut self, redirect_uri: impl Into<String>) -> Self {
        self.headless = Some(redirect_uri.into());
        self
    }

    /// Where tokens and registrations are kept (default a [`MemoryStore`]).
    #[must_use]
    pub fn store(mut self, s: Arc<dyn TokenStore>) -> Self {
        self.store = s;
        self
    }

    /// How many authorizations may follow each other without a successful request
    /// (default 3): a server that keeps refusing ends in an error, not a loop.
    #[must_use]
    pub fn max_authorizations(mut self, n: usize) -> Self {
        self.max_authorizations = n.max(1);
        self
    }

    /// Bind tokens to a key with DPoP (RFC 9449).
    #[must_use]
    pub fn dpop(mut self, on: bool) -> Self {
        self.dpop = on;
        self
    }
}
