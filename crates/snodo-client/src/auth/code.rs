//! The interactive half of the grants: the authorization request and its response
//! (PKCE, `state`, RFC 9207 `iss`, a headless walk through the authorization
//! endpoint's redirects), and enterprise-managed authorization's token exchange at the
//! identity provider.

use http::Method;

use super::Grant;
use super::agent::parse_callback;
use super::crypto::{Pkce, random};
use super::discovery::{Discovery, split};
use super::flow::Session;
use super::net::redact;
use crate::error::ClientError;

/// How many redirects a headless authorization follows.
const MAX_HOPS: usize = 5;

impl Session {
    /// Enterprise-managed authorization, step 1: the ID token exchanged at the
    /// identity provider (RFC 8693) for an ID-JAG naming `issuer` and `resource`.
    pub(super) async fn id_jag(
        &self,
        issuer: &str,
        resource: &str,
        scope: Option<&str>,
    ) -> Result<String, ClientError> {
        let Grant::EnterpriseManaged {
            idp_token_endpoint,
            id_token,
            idp_client_id,
            idp_client_secret,
        } = &self.cfg.grant
        else {
            return Err(ClientError::Auth("not an enterprise-managed grant".into()));
        };
        let mut form = vec![
            (
                "grant_type",
                "urn:ietf:params:oauth:grant-type:token-exchange",
            ),
            (
                "requested_token_type",
                "urn:ietf:params:oauth:token-type:id-jag",
            ),
            ("audience", issuer),
            ("subject_token", id_token.as_str()),
            (
                "subject_token_type",
                "urn:ietf:params:oauth:token-type:id_token",
            ),
            ("client_id", idp_client_id.as_str()),
        ];
        if !resource.is_empty() {
            form.push(("resource", resource));
        }
        if let Some(s) = scope {
            form.push(("scope", s));
        }
        if let Some(secret) = idp_client_secret {
            form.push(("client_secret", secret.as_str()));
        }
        let a = self.net.post_form(idp_token_endpoint, &form, &[]).await?;
        if !a.status.is_success() {
            return Err(ClientError::Auth(format!(
                "the identity provider refused the token exchange: {}",
                a.oauth_error()
            )));
        }
        a.json()
            .and_then(|m| {
                m.get("access_token")
                    .and_then(|v| v.as_str())
                    .map(str::to_owned)
            })
            .filter(|t| !t.is_empty())
            .ok_or_else(|| {
                ClientError::Auth("the identity provider's answer has no access_token".into())
            })
    }

    /// The authorization request and its response: returns the code and the PKCE
    /// verifier, after checking `state` and `iss`.
    pub(super) async fn code(
        &self,
        d: &Discovery,
        client_id: &str,
        redirect_uri: &str,
        resource: &str,
        scope: Option<&str>,
    ) -> Result<(String, String), ClientError> {
        let meta = &d.server;
        if meta
            .code_challenge_methods
            .as_ref()
            .is_some_and(|m| !m.iter().any(|x| x == "S256"))
        {
            return Err(ClientError::Auth(format!(
                "{} does not support PKCE S256: refused",
                meta.issuer
            )));
        }
        let endpoint = meta.authorization_endpoint.as_deref().ok_or_else(|| {
            ClientError::Auth(format!("{} has no authorization endpoint", meta.issuer))
        })?;
        let pkce = Pkce::new();
        let state = random(24);
        let query = {
            let mut q = form_urlencoded::Serializer::new(String::new());
            q.append_pair("response_type", "code")
                .append_pair("client_id", client_id)
                .append_pair("redirect_uri", redirect_uri)
                .append_pair("code_challenge", &pkce.challenge)
                .append_pair("code_challenge_method", "S256")
                .append_pair("state", &state);
            if let Some(s) = scope {
                q.append_pair("scope", s);
            }
            if !resource.is_empty() {
                q.append_pair("resource", resource);
            }
            q.finish()
        };
        let sep = if endpoint.contains('?') { '&' } else { '?' };
        let url = format!("{endpoint}{sep}{query}");
        let back = match &self.cfg.headless {
            Some(_) => self.follow(&url, redirect_uri).await?,
            None => self.cfg.agent.authorize(&url).await?,
        };
        let cb = parse_callback(&back);
        if let Some(e) = &cb.error {
            let desc = cb
                .error_description
                .as_deref()
                .map(|d| format!(": {}", d.chars().take(200).collect::<String>()))
                .unwrap_or_default();
            return Err(ClientError::Auth(format!(
                "the authorization server refused: {}{desc}",
                e.chars().take(100).collect::<String>()
            )));
        }
        if cb.state.as_deref() != Some(state.as_str()) {
            return Err(ClientError::Auth(
                "the authorization response's state does not match: refused".into(),
            ));
        }
        match &cb.iss {
            Some(iss) if iss != &meta.issuer => {
                return Err(ClientError::Auth(format!(
                    "the authorization response comes from issuer {:?}, not {:?}: refused",
                    iss.chars().take(200).collect::<String>(),
                    meta.issuer
                )));
            }
            None if meta.iss_supported => {
                return Err(ClientError::Auth(
                    "the authorization response lacks the iss its server advertises: refused"
                        .into(),
                ));
            }
            _ => {}
        }
        let code = cb
            .code
            .filter(|c| !c.is_empty())
            .ok_or_else(|| ClientError::Auth("the authorization response has no code".into()))?;
        Ok((code, pkce.verifier))
    }

    /// Headless: follows the authorization endpoint's redirects until one leads to
    /// `redirect_uri`, which is returned (and not fetched).
    async fn follow(&self, url: &str, redirect_uri: &str) -> Result<String, ClientError> {
        let want = redirect_uri.split(['?', '#']).next().unwrap_or_default();
        let mut next = url.to_owned();
        for _ in 0..MAX_HOPS {
            let a = self.net.send(Method::GET, &next, &[], None).await?;
            if !a.status.is_redirection() {
                return Err(ClientError::Auth(format!(
                    "the authorization endpoint answered HTTP {} instead of redirecting \
                     (a headless client cannot log in)",
                    a.status.as_u16()
                )));
            }
            let loc = a
                .headers
                .get(http::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .ok_or_else(|| ClientError::Auth("a redirect without Location".into()))?;
            let abs = if loc.starts_with('/') {
                let (origin, _) = split(&next).unwrap_or_default();
                format!("{origin}{loc}")
            } else {
                loc.to_owned()
            };
            if abs.split(['?', '#']).next() == Some(want) {
                return Ok(abs);
            }
            next = abs;
        }
        Err(ClientError::Auth(format!(
            "{} redirected more than {MAX_HOPS} times",
            redact(url)
        )))
    }
}
