//! `snodo serve --oauth-*`: the demo as an OAuth 2.1 resource server (crate
//! snodo-oauth, cargo feature `oauth`).

use clap::Args;
use snodo::RuntimeBuilder;
use snodo::http::{HttpConfig, Server};

/// The OAuth flags of `snodo serve`.
#[derive(Args, Debug, Default)]
pub(crate) struct OAuthArgs {
    /// Require bearer tokens issued by this authorization server (its issuer
    /// identifier; its metadata is read from the well-known URLs).
    #[arg(long, value_name = "URL")]
    oauth_issuer: Option<String>,
    /// The canonical URI of this endpoint, which tokens must name in `aud`
    /// (default: http://ADDR/mcp).
    #[arg(long, value_name = "URI", requires = "oauth_issuer")]
    oauth_audience: Option<String>,
    /// The issuer's JWKS URL, instead of discovering it.
    #[arg(long, value_name = "URL", requires = "oauth_issuer")]
    oauth_jwks_url: Option<String>,
    /// PEM CA certificates to trust for an https:// issuer, besides the system's.
    #[arg(long, value_name = "PATH", requires = "oauth_issuer")]
    oauth_ca_file: Option<std::path::PathBuf>,
    /// A scope every request needs (repeatable).
    #[arg(long = "oauth-scope", value_name = "SCOPE", requires = "oauth_issuer")]
    oauth_scopes: Vec<String>,
    /// A scope one tool needs, as TOOL=SCOPE (repeatable): calls without it get the
    /// step-up challenge, lists hide the tool.
    #[arg(
        long = "oauth-tool-scope",
        value_name = "TOOL=SCOPE",
        requires = "oauth_issuer"
    )]
    oauth_tool_scopes: Vec<String>,
    /// Also accept DPoP-bound tokens (RFC 9449; proofs fresh within 60 s).
    #[arg(long, requires = "oauth_issuer")]
    oauth_dpop: bool,
    /// With --oauth-dpop: DPoP proofs must carry a nonce this server issued, good for 5
    /// minutes (RFC 9449 §9; clients get it from a `401 use_dpop_nonce`). Nonces are
    /// tagged with --state-key, so every instance given the same key accepts them.
    #[arg(long, requires = "oauth_dpop")]
    oauth_dpop_nonce: bool,
}

#[cfg(feature = "oauth")]
mod enabled {
    use super::*;
    use snodo_oauth::{OAuthConfig, ResourceServer, ScopePolicy};

    /// 32 bytes from the process's random hasher seeds (a key for this process alone).
    fn random_key() -> Vec<u8> {
        use std::hash::BuildHasher as _;
        (0u64..4)
            .flat_map(|i| {
                std::collections::hash_map::RandomState::new()
                    .hash_one(i)
                    .to_le_bytes()
            })
            .collect()
    }

    /// A configured resource server.
    #[derive(Debug)]
    pub(crate) struct Protection {
        rs: ResourceServer,
        policy: ScopePolicy,
    }

    /// The resource server the flags ask for, if any. `state_key` tags DPoP nonces
    /// (without one, a random key: nonces good on this instance only).
    pub(crate) async fn setup(
        args: &OAuthArgs,
        addr: &snodo::http::ListenAddr,
        state_key: Option<&[u8]>,
    ) -> Result<Option<Protection>, String> {
        let Some(issuer) = &args.oauth_issuer else {
            return Ok(None);
        };
        let audience = args.oauth_audience.clone().unwrap_or_else(|| match addr {
            snodo::http::ListenAddr::Tcp(a) => format!("http://{a}/mcp"),
            _ => "http://localhost/mcp".to_owned(),
        });
        let mut config = OAuthConfig::new(issuer.clone(), audience);
        if let Some(jwks) = &args.oauth_jwks_url {
            config = config.jwks_url(jwks.clone());
        }
        if let Some(path) = &args.oauth_ca_file {
            let pem = std::fs::read(path)
                .map_err(|e| format!("--oauth-ca-file {}: {e}", path.display()))?;
            config = config.tls_root_certificates_pem(pem);
        }
        for s in &args.oauth_scopes {
            config = config.required_scope(s.clone());
        }
        if args.oauth_dpop {
            config = config.dpop(std::time::Duration::from_secs(60));
        }
        if args.oauth_dpop_nonce {
            let key = state_key.map_or_else(random_key, <[u8]>::to_vec);
            config = config.dpop_nonces(key, std::time::Duration::from_secs(300));
        }
        let mut tools: Vec<(String, Vec<String>)> = Vec::new();
        for pair in &args.oauth_tool_scopes {
            let Some((tool, scope)) = pair.split_once('=') else {
                return Err(format!("--oauth-tool-scope {pair:?}: expected TOOL=SCOPE"));
            };
            config = config.scope_supported(scope);
            match tools.iter_mut().find(|(t, _)| t == tool) {
                Some((_, scopes)) => scopes.push(scope.to_owned()),
                None => tools.push((tool.to_owned(), vec![scope.to_owned()])),
            }
        }
        let rs = ResourceServer::discover(config)
            .await
            .map_err(|e| e.to_string())?;
        let policy = tools
            .iter()
            .fold(ScopePolicy::new(&rs), |p, (tool, scopes)| {
                p.tool(tool, scopes.iter().cloned())
            });
        Ok(Some(Protection { rs, policy }))
    }

    impl Protection {
        /// Adds the per-component scopes.
        pub(crate) fn authorize(&self, builder: RuntimeBuilder) -> RuntimeBuilder {
            builder.authorizer(self.policy.clone(), snodo::Refusal::Conceal)
        }

        /// Adds the token check.
        pub(crate) fn configure(&self, config: HttpConfig) -> HttpConfig {
            config.authenticator(self.rs.clone())
        }

        /// Serves the protected-resource metadata.
        pub(crate) fn mount(&self, server: Server) -> Server {
            self.rs.mount(server)
        }

        /// Where the metadata is.
        pub(crate) fn metadata_url(&self) -> &str {
            self.rs.metadata_url()
        }
    }
}

#[cfg(not(feature = "oauth"))]
mod enabled {
    use super::*;

    /// Without the `oauth` feature there is never a resource server.
    #[derive(Debug)]
    pub(crate) enum Protection {}

    pub(crate) async fn setup(
        args: &OAuthArgs,
        _addr: &snodo::http::ListenAddr,
        _state_key: Option<&[u8]>,
    ) -> Result<Option<Protection>, String> {
        match args.oauth_issuer {
            None => Ok(None),
            Some(_) => Err("--oauth-issuer needs snodo built with the `oauth` feature".into()),
        }
    }

    impl Protection {
        pub(crate) fn authorize(&self, _: RuntimeBuilder) -> RuntimeBuilder {
            match *self {}
        }
        pub(crate) fn configure(&self, _: HttpConfig) -> HttpConfig {
            match *self {}
        }
        pub(crate) fn mount(&self, _: Server) -> Server {
            match *self {}
        }
        pub(crate) fn metadata_url(&self) -> &str {
            match *self {}
        }
    }
}

pub(crate) use enabled::{Protection, setup};
