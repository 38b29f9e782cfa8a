//! OAuth 2.1 resource server for [snodo] MCP endpoints (MCP `basic/authorization`,
//! RFC 9728, RFC 8707, RFC 6750, RFC 7662).
//!
//! - [`ResourceServer`] validates bearer tokens on every request — JWTs against the
//!   issuer's JWKS (discovered from its metadata or configured; cached by `kid`,
//!   refetched on an unknown `kid` at most once per interval, stale keys kept when a
//!   refresh fails), checking the algorithm allow-list, `iss`, `exp`/`nbf` with
//!   leeway and the audience (the canonical resource URI); opaque tokens by RFC 7662
//!   introspection — and answers `401`/`403` with `WWW-Authenticate: Bearer
//!   resource_metadata="…", scope="…"` challenges. It serves its RFC 9728 metadata.
//! - [`ScopePolicy`] gives tools, prompts and resources their scopes: lists hide what
//!   the token cannot use, uses without the scopes get `403 insufficient_scope` naming
//!   every scope the operation needs (on every dialect).
//! - [`TokenInfo`] (subject, client, scopes, chosen claims) reaches handlers:
//!   `TokenInfo::of(&ctx)`.
//! - DPoP-bound tokens (RFC 9449), opt-in with [`OAuthConfig::dpop`]: each request's
//!   proof is checked (signature by its `jwk`, `htm`, `htu`, `iat`, `ath`, `jti` replay)
//!   and must be by the key the token names in `cnf.jkt`; a bound token sent as
//!   `Bearer` is refused. With [`OAuthConfig::dpop_nonces`] a proof must also carry a
//!   nonce this deployment issued (RFC 9449 §9): a proof without one, or with a stale
//!   one, gets `401 use_dpop_nonce` and a fresh nonce in `DPoP-Nonce`. Nonces are tagged
//!   with a shared key, so every instance accepts the others' and none keeps state.
//!
//! ```no_run
//! # async fn run(runtime_builder: snodo::RuntimeBuilder) -> Result<(), Box<dyn std::error::Error>> {
//! use snodo::http::{HttpConfig, Server};
//! use snodo_oauth::{OAuthConfig, ResourceServer, ScopePolicy};
//!
//! let rs = ResourceServer::discover(
//!     OAuthConfig::new("http://127.0.0.1:9000", "http://127.0.0.1:8080/mcp").required_scope("mcp"),
//! )
//! .await?;
//! let policy = ScopePolicy::new(&rs).tool("delete_file", ["files:write"]);
//! let runtime = runtime_builder.authorizer(policy, snodo::Refusal::Conceal).build()?;
//! let config = HttpConfig::default().authenticator(rs.clone());
//! let server = Server::bind(runtime, "127.0.0.1:8080".parse()?, config).await?;
//! rs.mount(server).run().await?;
//! # Ok(()) }
//! ```
//!
//! Metadata, JWKS and introspection are fetched with hyper-util's client: `https://`
//! over rustls with the system's trust anchors (cargo feature `https`, on by default;
//! more anchors with `OAuthConfig::tls_root_certificates_pem`), plain `http://` always.

#![forbid(unsafe_code)]

mod config;
mod discovery;
mod dpop;
mod fetch;
mod introspect;
mod jwks;
mod nonce;
mod scopes;
mod server;
mod token;
mod validate;

pub use config::{DEFAULT_ALGORITHMS, Introspection, OAuthConfig};
pub use fetch::FetchError;
pub use jsonwebtoken::Algorithm;
pub use scopes::ScopePolicy;
pub use server::{METADATA_PATH, ResourceServer, SetupError, TokenError};
pub use token::TokenInfo;
