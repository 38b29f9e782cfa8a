//! The `--oauth` options of `snodo client`: log in once (authorization code with PKCE in
//! the browser, the redirect taken on 127.0.0.1, or client credentials), then reuse and
//! refresh the token kept in a token file (mode 0600).

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use snodo_client::auth::{FileStore, Grant, LoopbackAgent, OAuthConfig};

/// OAuth options of `snodo client`.
#[derive(Args, Debug, Default)]
pub(crate) struct OAuthArgs {
    /// Authorize with OAuth when the server answers 401 (HTTP only).
    #[arg(long)]
    oauth: bool,
    /// A pre-registered client id (else client-ID metadata or dynamic registration).
    #[arg(long, requires = "oauth")]
    client_id: Option<String>,
    /// The pre-registered client's secret.
    #[arg(
        long,
        env = "SNODO_CLIENT_SECRET",
        hide_env_values = true,
        requires = "client_id"
    )]
    client_secret: Option<String>,
    /// Authenticate with private_key_jwt: a P-256 private key in PEM (PKCS#8 or SEC1)
    /// signing ES256 client assertions, instead of a secret.
    #[arg(long, value_name = "PATH", requires = "client_id")]
    client_key: Option<PathBuf>,
    /// Present the pre-registered credentials only to this authorization server (its
    /// issuer identifier); others get a registration of their own.
    #[arg(long, value_name = "ISSUER", requires = "client_id")]
    client_issuer: Option<String>,
    /// A client-ID metadata document URL (https) to use as client id where the
    /// authorization server accepts one, instead of registering.
    #[arg(long, value_name = "URL", requires = "oauth")]
    client_metadata_url: Option<String>,
    /// A scope to ask for when the server names none (repeatable, or space-separated).
    #[arg(long = "scope", requires = "oauth")]
    scopes: Vec<String>,
    /// Where tokens and registrations are kept (default
    /// $XDG_CONFIG_HOME/snodo/tokens.json, else ~/.config/snodo/tokens.json).
    #[arg(long, value_name = "PATH", requires = "oauth")]
    token_file: Option<PathBuf>,
    /// The port of the loopback redirect listener on 127.0.0.1 (default: any free port).
    #[arg(long, default_value_t = 0, requires = "oauth")]
    redirect_port: u16,
    /// Machine to machine: the client credentials grant (needs --client-id and
    /// --client-secret or --client-key), no browser.
    #[arg(long, requires = "client_id")]
    client_credentials: bool,
    /// Follow the authorization endpoint's redirect instead of opening a browser (for
    /// authorization servers that approve without a login page).
    #[arg(long, requires = "oauth")]
    headless: bool,
    /// Bind tokens to a key with DPoP (RFC 9449).
    #[arg(long, requires = "oauth")]
    dpop: bool,
}

fn default_token_file() -> PathBuf {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))
        .unwrap_or_else(|| PathBuf::from("."));
    base.join("snodo").join("tokens.json")
}

impl OAuthArgs {
    /// The OAuth set-up, when `--oauth` is given.
    pub(crate) fn config(&self) -> Result<Option<OAuthConfig>, String> {
        if !self.oauth {
            return Ok(None);
        }
        let path = self.token_file.clone().unwrap_or_else(default_token_file);
        let mut cfg = OAuthConfig::new("snodo")
            .store(Arc::new(FileStore::new(path)))
            .agent(Arc::new(LoopbackAgent::new(self.redirect_port)))
            .dpop(self.dpop);
        if let Some(id) = &self.client_id {
            cfg = cfg.client(id.clone(), self.client_secret.clone());
        }
        if let Some(url) = &self.client_metadata_url {
            cfg = cfg.client_metadata_url(url.clone());
        }
        if let Some(issuer) = &self.client_issuer {
            cfg = cfg.client_issuer(issuer.clone());
        }
        if let Some(path) = &self.client_key {
            let pem = std::fs::read_to_string(path)
                .map_err(|e| format!("--client-key {}: {e}", path.display()))?;
            cfg = cfg.private_key_pem(&pem).map_err(|e| match e {
                snodo_client::ClientError::Auth(m) => {
                    format!("--client-key {}: {m}", path.display())
                }
                other => format!("--client-key {}: {other}", path.display()),
            })?;
        }
        for s in &self.scopes {
            cfg = cfg.scope(s.clone());
        }
        if self.client_credentials {
            cfg = cfg.grant(Grant::ClientCredentials);
        }
        if self.headless {
            cfg = cfg.headless(format!("http://127.0.0.1:{}/callback", self.redirect_port));
        }
        Ok(Some(cfg))
    }
}
