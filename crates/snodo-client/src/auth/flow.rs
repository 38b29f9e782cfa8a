//! One server's OAuth session: the current token for each request, and what a
//! refusal (`401`, `403 insufficient_scope`, `use_dpop_nonce`) sets off — a refresh, or
//! a whole authorization. One flow at a time: concurrent refusals wait for the running
//! one and then retry with its token (single flight).

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};

use super::challenge::Refusal;
use super::crypto::now;
use super::discovery::{Discovery, ServerMeta, discover, resource_matches};
use super::dpop::Dpop;
use super::net::Net;
use super::registration::{identify, known};
use super::store::Tokens;
use super::token::{ClientAuth, TokenRequest};
use super::{Grant, OAuthConfig};
use crate::error::ClientError;
use crate::http::Sender;

/// Refresh this many seconds before the access token expires (at most half its life).
const EARLY: u64 = 30;

/// What the last flow found, for refreshes and step-ups.
#[derive(Default)]
struct FlowState {
    discovery: Option<Discovery>,
    scopes: Vec<String>,
    failures: usize,
    /// The current token has been accepted at least once (a refresh can then help
    /// with a `401`; for a token just issued and refused, only a new login can).
    proven: bool,
}

/// The headers one request carries, and the token they carry.
#[derive(Debug, Default)]
pub(crate) struct Credentials {
    pub(crate) headers: Vec<(HeaderName, HeaderValue)>,
    pub(crate) token: Option<String>,
}

/// The OAuth session of one HTTP connection.
pub(crate) struct Session {
    pub(super) cfg: OAuthConfig,
    pub(super) net: Net,
    server: String,
    current: Mutex<Option<Tokens>>,
    loaded: AtomicBool,
    flow: tokio::sync::Mutex<FlowState>,
    dpop: Option<Dpop>,
    /// A JWT-bearer assertion was refused: it is not sent again.
    spent: AtomicBool,
}

const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

fn union(a: &[String], b: &[String]) -> Vec<String> {
    let mut out = a.to_vec();
    for s in b {
        if !out.contains(s) {
            out.push(s.clone());
        }
    }
    out
}

impl Session {
    pub(crate) fn new(cfg: OAuthConfig, sender: Arc<dyn Sender>, server: &str) -> Self {
        let dpop = cfg.dpop.then(Dpop::new);
        Self {
            cfg,
            net: Net::new(sender),
            server: server.to_owned(),
            current: Mutex::new(None),
            loaded: AtomicBool::new(false),
            flow: tokio::sync::Mutex::new(FlowState::default()),
            dpop,
            spent: AtomicBool::new(false),
        }
    }

    fn current(&self) -> Option<Tokens> {
        self.current.lock().ok().and_then(|g| g.clone())
    }

    fn set_current(&self, t: Option<Tokens>) {
        if let Ok(mut g) = self.current.lock() {
            *g = t;
        }
    }

    fn current_token(&self) -> Option<String> {
        self.current().map(|t| t.access_token)
    }

    /// Loads a stored token once, if it was issued for this server.
    fn load(&self) {
        if self.loaded.swap(true, Ordering::SeqCst) {
            return;
        }
        match self.cfg.store.load(&self.server) {
            Ok(Some(t)) if t.resource.is_empty() || resource_matches(&t.resource, &self.server) => {
                if let (Some(d), Some(pem)) = (&self.dpop, &t.dpop_key) {
                    if !d.restore(pem) {
                        tracing::warn!("the stored DPoP key is unusable");
                    }
                }
                self.set_current(Some(t));
                // A stored token worked before: a 401 on it tries a refresh first.
                if let Ok(mut st) = self.flow.try_lock() {
                    st.proven = true;
                }
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "token store"),
        }
    }

    /// The headers for a request `method url`: the token (refreshed first when it is
    /// about to expire) and, with DPoP, a proof.
    pub(crate) async fn credentials(
        &self,
        method: &Method,
        url: &str,
    ) -> Result<Credentials, ClientError> {
        self.load();
        let expiring = |t: &Tokens| {
            let Some(e) = t.expires_at.filter(|_| t.refresh_token.is_some()) else {
                return false;
            };
            let margin = t
                .issued_at
                .map_or(EARLY, |i| EARLY.min(e.saturating_sub(i) / 2));
            e <= now() + margin
        };
        if let Some(seen) = self.current().filter(expiring) {
            let mut st = self.flow.lock().await;
            // Single flight: only the token seen before waiting is refreshed; a waiter
            // that finds another one uses it (even if it is short-lived as well).
            if let Some(t) = self
                .current()
                .filter(|t| t.access_token == seen.access_token)
            {
                if let Err(e) = self.refresh(&mut st, &t, None).await {
                    tracing::info!(error = %e, "refresh before expiry failed");
                    self.forget();
                }
            }
        }
        let Some(t) = self.current() else {
            return Ok(Credentials::default());
        };
        let headers = self.headers_for(&t, method, url);
        if headers.is_empty() {
            self.forget();
            return Err(ClientError::Auth(
                "the access token is not header-safe".into(),
            ));
        }
        Ok(Credentials {
            headers,
            token: Some(t.access_token),
        })
    }

    /// The current token's headers without refreshing (streams opened with `GET`).
    pub(crate) fn credentials_now(
        &self,
        method: &Method,
        url: &str,
    ) -> Vec<(HeaderName, HeaderValue)> {
        let Some(t) = self.current() else {
            return Vec::new();
        };
        self.headers_for(&t, method, url)
    }

    fn headers_for(
        &self,
        t: &Tokens,
        method: &Method,
        url: &str,
    ) -> Vec<(HeaderName, HeaderValue)> {
        let mut headers = Vec::new();
        let dpop_bound = t.token_type.eq_ignore_ascii_case("dpop");
        let scheme = if dpop_bound { "DPoP" } else { "Bearer" };
        if let Ok(v) = HeaderValue::from_str(&format!("{scheme} {}", t.access_token)) {
            headers.push((http::header::AUTHORIZATION, v));
        }
        if let (true, Some(d)) = (dpop_bound, &self.dpop) {
            let proof = d.proof(method.as_str(), url, Some(&t.access_token), None);
            if let Ok(v) = HeaderValue::from_str(&proof) {
                headers.push((HeaderName::from_static("dpop"), v));
            }
        }
        headers
    }

    /// A request succeeded: the authorization loop guard starts over.
    pub(crate) async fn succeeded(&self) {
        if let Ok(mut st) = self.flow.try_lock() {
            st.failures = 0;
            st.proven = true;
        }
    }

    fn forget(&self) {
        self.set_current(None);
        if let Err(e) = self.cfg.store.remove(&self.server) {
            tracing::warn!(error = %e, "token store");
        }
    }

    /// The server refused a request that carried `sent`. `Ok(true)`: retry it (with
    /// new credentials); `Ok(false)`: the refusal is not about authorization.
    pub(crate) async fn refused(
        &self,
        status: StatusCode,
        headers: &HeaderMap,
        url: &str,
        sent: Option<&str>,
    ) -> Result<bool, ClientError> {
        let r = Refusal::from_headers(headers);
        if let Some(d) = &self.dpop {
            if let Some(n) = headers.get("dpop-nonce").and_then(|v| v.to_str().ok()) {
                d.remember_nonce(url, n);
                if r.error.as_deref() == Some("use_dpop_nonce") {
                    return Ok(true);
                }
            }
        }
        let step_up = status == StatusCode::FORBIDDEN;
        if step_up && r.error.as_deref() != Some("insufficient_scope") {
            return Ok(false);
        }
        let mut st = self.flow.lock().await;
        let now_token = self.current_token();
        if now_token.is_some() && now_token.as_deref() != sent {
            return Ok(true);
        }
        if !step_up {
            if let (Some(t), Some(_), true) = (self.current(), sent, st.proven) {
                if t.refresh_token.is_some() {
                    match self
                        .refresh(&mut st, &t, r.resource_metadata.as_deref())
                        .await
                    {
                        Ok(()) => return Ok(true),
                        Err(e) => tracing::info!(error = %e, "refresh after 401 failed"),
                    }
                }
            }
        }
        if st.failures >= self.cfg.max_authorizations {
            return Err(ClientError::Auth(format!(
                "the server still refuses (HTTP {}) after {} authorizations",
                status.as_u16(),
                st.failures
            )));
        }
        st.failures += 1;
        let challenged = r.scope.clone().unwrap_or_default();
        let scopes = step_up.then(|| union(&st.scopes, &challenged));
        if !step_up {
            // The token is refused: it goes. A step-up keeps it until a better one comes.
            self.forget();
        }
        self.authorize(&mut st, &r, scopes).await?;
        Ok(true)
    }

    /// Refreshes `t`; `hint` is a refusal's `resource_metadata`, for discovery when
    /// this session has not run it yet (a token from the store).
    async fn refresh(
        &self,
        st: &mut FlowState,
        t: &Tokens,
        hint: Option<&str>,
    ) -> Result<(), ClientError> {
        let Some(rt) = &t.refresh_token else {
            return Err(ClientError::Auth("no refresh token".into()));
        };
        if st.discovery.is_none() {
            st.discovery = Some(discover(&self.net, &self.server, hint).await?);
        }
        let Some(d) = &st.discovery else {
            return Err(ClientError::Auth("no discovery".into()));
        };
        if d.server.issuer != t.issuer {
            return Err(ClientError::Auth(
                "the server moved to another authorization server".into(),
            ));
        }
        let auth = known(&self.cfg, &d.server, &t.client_id)?.ok_or_else(|| {
            ClientError::Auth("the client the token was issued to is no longer known".into())
        })?;
        let req = self.token_request(&d.server, &auth);
        let mut form = vec![
            ("grant_type", "refresh_token"),
            ("refresh_token", rt.as_str()),
        ];
        if !t.resource.is_empty() {
            form.push(("resource", t.resource.as_str()));
        }
        let mut fresh = req.send(&form, &t.resource, t.scope.as_deref()).await?;
        if fresh.refresh_token.is_none() {
            fresh.refresh_token = t.refresh_token.clone();
        }
        self.bind_key(&mut fresh);
        // The rotated refresh token is durable before the new access token is used.
        self.cfg.store.save(&self.server, &fresh)?;
        self.set_current(Some(fresh));
        st.proven = false;
        Ok(())
    }

    /// A request to the token endpoint of `server`, as `auth`, with this flow's DPoP
    /// key if it has one.
    fn token_request<'a>(
        &'a self,
        server: &'a ServerMeta,
        auth: &'a ClientAuth,
    ) -> TokenRequest<'a> {
        TokenRequest {
            net: &self.net,
            issuer: &server.issuer,
            endpoint: &server.token_endpoint,
            auth,
            dpop: self.dpop.as_ref(),
        }
    }

    /// A DPoP-bound token keeps its key, so that it (and its refresh token) outlive
    /// the process with the token file.
    fn bind_key(&self, t: &mut Tokens) {
        if let Some(d) = &self.dpop {
            if t.token_type.eq_ignore_ascii_case("dpop") {
                t.dpop_key = d.key_pem();
            }
        }
    }

    fn redirect_uri(&self) -> Result<String, ClientError> {
        match &self.cfg.headless {
            Some(u) => Ok(u.clone()),
            None => self.cfg.agent.redirect_uri(),
        }
    }

    /// A whole authorization: discovery (fresh: the server may have moved), identity,
    /// the grant; the tokens are saved and become current.
    async fn authorize(
        &self,
        st: &mut FlowState,
        r: &Refusal,
        step_up: Option<Vec<String>>,
    ) -> Result<(), ClientError> {
        let d = discover(&self.net, &self.server, r.resource_metadata.as_deref()).await?;
        let resource = d
            .resource
            .as_ref()
            .map(|p| p.resource.clone())
            .unwrap_or_default();
        let mut scopes = match step_up {
            Some(s) if !s.is_empty() => s,
            _ => r
                .scope
                .clone()
                .filter(|s| !s.is_empty())
                .or_else(|| d.resource.as_ref().and_then(|p| p.scopes_supported.clone()))
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| self.cfg.scopes.clone()),
        };
        let offers_offline = d
            .server
            .scopes_supported
            .as_ref()
            .is_some_and(|s| s.iter().any(|x| x == "offline_access"));
        if self.cfg.grant == Grant::AuthorizationCode && offers_offline {
            scopes = union(&scopes, &["offline_access".to_owned()]);
        } else {
            scopes.retain(|s| s != "offline_access");
        }
        let scope = (!scopes.is_empty()).then(|| scopes.join(" "));
        let redirect_uri = self.redirect_uri()?;
        let auth = identify(&self.cfg, &self.net, &d.server, &redirect_uri).await?;
        let req = self.token_request(&d.server, &auth);
        let tokens = match &self.cfg.grant {
            Grant::ClientCredentials => {
                let mut form = vec![("grant_type", "client_credentials")];
                if let Some(s) = &scope {
                    form.push(("scope", s));
                }
                if !resource.is_empty() {
                    form.push(("resource", &resource));
                }
                req.send(&form, &resource, scope.as_deref()).await?
            }
            Grant::JwtBearer { assertion } => {
                if self.spent.load(Ordering::SeqCst) {
                    return Err(ClientError::Auth(
                        "the workload assertion was refused before; it is not sent again".into(),
                    ));
                }
                let mut form = vec![("grant_type", JWT_BEARER), ("assertion", assertion)];
                if let Some(s) = &scope {
                    form.push(("scope", s));
                }
                if !resource.is_empty() {
                    form.push(("resource", &resource));
                }
                let r = req.send(&form, &resource, scope.as_deref()).await;
                if r.is_err() {
                    self.spent.store(true, Ordering::SeqCst);
                }
                r?
            }
            Grant::EnterpriseManaged { .. } => {
                let jag = self
                    .id_jag(&d.server.issuer, &resource, scope.as_deref())
                    .await?;
                let mut form = vec![("grant_type", JWT_BEARER), ("assertion", jag.as_str())];
                if let Some(s) = &scope {
                    form.push(("scope", s));
                }
                req.send(&form, &resource, scope.as_deref()).await?
            }
            Grant::AuthorizationCode => {
                let (code, verifier) = self
                    .code(&d, auth.id(), &redirect_uri, &resource, scope.as_deref())
                    .await?;
                let mut form = vec![
                    ("grant_type", "authorization_code"),
                    ("code", code.as_str()),
                    ("redirect_uri", redirect_uri.as_str()),
                    ("code_verifier", verifier.as_str()),
                ];
                if !resource.is_empty() {
                    form.push(("resource", &resource));
                }
                req.send(&form, &resource, scope.as_deref()).await?
            }
        };
        let mut tokens = tokens;
        self.bind_key(&mut tokens);
        self.cfg.store.save(&self.server, &tokens)?;
        self.set_current(Some(tokens));
        st.proven = false;
        st.discovery = Some(d);
        st.scopes = scopes;
        Ok(())
    }
}
