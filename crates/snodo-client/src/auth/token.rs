//! The token endpoint: the grant's form, client authentication
//! (`client_secret_basic`, `client_secret_post`, `none`, `private_key_jwt`), an
//! optional DPoP proof with one `use_dpop_nonce` retry, and the answer read into
//! [`Tokens`]. Errors carry the server's `error` and `error_description`, never a
//! token or a secret.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use http::{HeaderName, HeaderValue};
use serde_json::{Value, json};

use super::crypto::{EsKey, now, random};
use super::dpop::Dpop;
use super::net::Net;
use super::store::Tokens;
use crate::error::ClientError;

/// How the client authenticates at the token endpoint. Its `Debug` shows no secret.
#[derive(Clone)]
pub(crate) enum ClientAuth {
    /// A public client: `client_id` in the form.
    None { id: String },
    /// `client_secret_basic` (RFC 6749 §2.3.1: both parts form-encoded first).
    Basic { id: String, secret: String },
    /// `client_secret_post`.
    Post { id: String, secret: String },
    /// `private_key_jwt` (RFC 7523 §2.2): an ES256 assertion, `iss` = `sub` = the
    /// client id, `aud` = the issuer.
    PrivateKeyJwt { id: String, key: EsKey },
}

impl std::fmt::Debug for ClientAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ClientAuth({} {})", self.method(), self.id())
    }
}

impl ClientAuth {
    pub(crate) fn id(&self) -> &str {
        match self {
            Self::None { id }
            | Self::Basic { id, .. }
            | Self::Post { id, .. }
            | Self::PrivateKeyJwt { id, .. } => id,
        }
    }

    /// Picks the method: the registration's, else what the server supports and the
    /// client can do (basic, then post, else none; RFC 8414's default is basic).
    pub(crate) fn choose(
        id: &str,
        secret: Option<&str>,
        registered: Option<&str>,
        supported: Option<&[String]>,
    ) -> Self {
        let id = id.to_owned();
        let Some(secret) = secret.map(str::to_owned) else {
            return Self::None { id };
        };
        let supports = |m: &str| supported.is_none_or(|s| s.iter().any(|x| x == m));
        match registered {
            Some("client_secret_post") => return Self::Post { id, secret },
            Some("client_secret_basic") => return Self::Basic { id, secret },
            Some("none") => return Self::None { id },
            _ => {}
        }
        if supports("client_secret_basic") {
            Self::Basic { id, secret }
        } else if supports("client_secret_post") {
            Self::Post { id, secret }
        } else {
            Self::None { id }
        }
    }

    /// The method's name, as registration metadata spells it.
    pub(crate) fn method(&self) -> &'static str {
        match self {
            Self::None { .. } => "none",
            Self::Basic { .. } => "client_secret_basic",
            Self::Post { .. } => "client_secret_post",
            Self::PrivateKeyJwt { .. } => "private_key_jwt",
        }
    }
}

fn form_encode(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// A token request to `endpoint` of `issuer`.
pub(crate) struct TokenRequest<'a> {
    pub(crate) net: &'a Net,
    pub(crate) issuer: &'a str,
    pub(crate) endpoint: &'a str,
    pub(crate) auth: &'a ClientAuth,
    pub(crate) dpop: Option<&'a Dpop>,
}

impl TokenRequest<'_> {
    /// Sends `form` (the grant's parameters) and reads the answer.
    pub(crate) async fn send(
        &self,
        form: &[(&str, &str)],
        resource: &str,
        scope: Option<&str>,
    ) -> Result<Tokens, ClientError> {
        let mut pairs: Vec<(&str, String)> =
            form.iter().map(|(k, v)| (*k, (*v).to_owned())).collect();
        let mut headers: Vec<(HeaderName, HeaderValue)> = Vec::new();
        match self.auth {
            ClientAuth::None { id } => pairs.push(("client_id", id.clone())),
            ClientAuth::Basic { id, secret } => {
                let raw = format!("{}:{}", form_encode(id), form_encode(secret));
                let v = HeaderValue::from_str(&format!("Basic {}", STANDARD.encode(raw))).map_err(
                    |_| ClientError::Auth("the client secret is not header-safe".into()),
                )?;
                headers.push((http::header::AUTHORIZATION, v));
            }
            ClientAuth::Post { id, secret } => {
                pairs.push(("client_id", id.clone()));
                pairs.push(("client_secret", secret.clone()));
            }
            ClientAuth::PrivateKeyJwt { id, key } => {
                let iat = now();
                let claims = json!({"iss": id, "sub": id, "aud": self.issuer,
                    "iat": iat, "exp": iat + 300, "jti": random(16)});
                pairs.push(("client_id", id.clone()));
                pairs.push((
                    "client_assertion_type",
                    "urn:ietf:params:oauth:client-assertion-type:jwt-bearer".into(),
                ));
                pairs.push(("client_assertion", key.sign(json!({"typ": "JWT"}), &claims)));
            }
        }
        let mut nonce: Option<String> = None;
        for attempt in 0..2 {
            let mut h = headers.clone();
            if let Some(d) = self.dpop {
                let proof = d.proof("POST", self.endpoint, None, nonce.as_deref());
                if let Ok(v) = HeaderValue::from_str(&proof) {
                    h.push((HeaderName::from_static("dpop"), v));
                }
            }
            let borrowed: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let a = self.net.post_form(self.endpoint, &borrowed, &h).await?;
            if let Some(d) = self.dpop {
                if let Some(n) = a.headers.get("dpop-nonce").and_then(|v| v.to_str().ok()) {
                    d.remember_nonce(self.endpoint, n);
                    nonce = Some(n.to_owned());
                }
            }
            let error = a
                .json()
                .and_then(|m| m.get("error").and_then(Value::as_str).map(str::to_owned));
            if !a.status.is_success() {
                if attempt == 0 && self.dpop.is_some() && error.as_deref() == Some("use_dpop_nonce")
                {
                    continue;
                }
                return Err(ClientError::Auth(format!(
                    "the token endpoint refused: {}",
                    a.oauth_error()
                )));
            }
            let m = a.json().ok_or_else(|| {
                ClientError::Auth("the token endpoint's answer is not a JSON object".into())
            })?;
            let access_token = m
                .get("access_token")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .ok_or_else(|| {
                    ClientError::Auth("the token endpoint's answer has no access_token".into())
                })?
                .to_owned();
            let token_type = m
                .get("token_type")
                .and_then(Value::as_str)
                .unwrap_or("Bearer")
                .to_owned();
            if !token_type.eq_ignore_ascii_case("bearer")
                && !token_type.eq_ignore_ascii_case("dpop")
            {
                return Err(ClientError::Auth(format!(
                    "the token endpoint issued an unsupported token type {:?}",
                    token_type.chars().take(40).collect::<String>()
                )));
            }
            let expires_at = m
                .get("expires_in")
                .and_then(|v| v.as_u64().or_else(|| v.as_str()?.parse().ok()))
                .map(|s| now() + s);
            return Ok(Tokens {
                issuer: self.issuer.to_owned(),
                client_id: self.auth.id().to_owned(),
                resource: resource.to_owned(),
                access_token,
                token_type,
                refresh_token: m
                    .get("refresh_token")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                expires_at,
                issued_at: Some(now()),
                scope: m
                    .get("scope")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .or_else(|| scope.map(str::to_owned)),
                dpop_key: None,
            });
        }
        Err(ClientError::Auth(
            "the token endpoint kept asking for a DPoP nonce".into(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn method_choice() {
        let s = |v: &[&str]| v.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();
        assert_eq!(ClientAuth::choose("c", None, None, None).method(), "none");
        assert_eq!(
            ClientAuth::choose("c", Some("x"), None, None).method(),
            "client_secret_basic"
        );
        assert_eq!(
            ClientAuth::choose("c", Some("x"), None, Some(&s(&["client_secret_post"]))).method(),
            "client_secret_post"
        );
        assert_eq!(
            ClientAuth::choose("c", Some("x"), None, Some(&s(&["none"]))).method(),
            "none"
        );
        assert_eq!(
            ClientAuth::choose("c", Some("x"), Some("client_secret_post"), None).method(),
            "client_secret_post"
        );
    }
}
