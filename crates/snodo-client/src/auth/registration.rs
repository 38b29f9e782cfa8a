//! Who the client is at an authorization server: pre-registered credentials (bound to
//! an issuer when configured so), a registration made earlier at this issuer, a
//! client-ID metadata document URL when the server accepts one, else dynamic client
//! registration (RFC 7591, with `application_type`). A registration belongs to the
//! issuer that made it and is never presented to another.

use serde_json::{Value, json};

use super::discovery::ServerMeta;
use super::net::Net;
use super::store::Registration;
use super::token::ClientAuth;
use super::{Grant, OAuthConfig};
use crate::error::ClientError;

/// The credentials of the client `client_id` at `meta`'s issuer, for a refresh: the
/// client the token was issued to, whatever redirect URI it registered.
pub(crate) fn known(
    cfg: &OAuthConfig,
    meta: &ServerMeta,
    client_id: &str,
) -> Result<Option<ClientAuth>, ClientError> {
    let supported = meta.token_endpoint_auth_methods_supported.as_deref();
    if cfg.client_id.as_deref() == Some(client_id)
        && cfg
            .client_issuer
            .as_deref()
            .is_none_or(|i| i == meta.issuer)
    {
        if let Some(key) = &cfg.private_key {
            return Ok(Some(ClientAuth::PrivateKeyJwt {
                id: client_id.to_owned(),
                key: key.clone(),
            }));
        }
        return Ok(Some(ClientAuth::choose(
            client_id,
            cfg.client_secret.as_deref(),
            None,
            supported,
        )));
    }
    if let Some(r) = cfg.store.load_registration(&meta.issuer)? {
        if r.issuer == meta.issuer && r.client_id == client_id {
            return Ok(Some(ClientAuth::choose(
                &r.client_id,
                r.client_secret.as_deref(),
                Some(&r.auth_method),
                supported,
            )));
        }
    }
    if meta.cimd_supported && cfg.client_metadata_url.as_deref() == Some(client_id) {
        return Ok(Some(ClientAuth::None {
            id: client_id.to_owned(),
        }));
    }
    Ok(None)
}

/// The client's credentials at `meta`'s issuer.
pub(crate) async fn identify(
    cfg: &OAuthConfig,
    net: &Net,
    meta: &ServerMeta,
    redirect_uri: &str,
) -> Result<ClientAuth, ClientError> {
    let supported = meta.token_endpoint_auth_methods_supported.as_deref();
    if let Some(id) = &cfg.client_id {
        let bound = cfg
            .client_issuer
            .as_deref()
            .is_none_or(|i| i == meta.issuer);
        if bound {
            if let Some(key) = &cfg.private_key {
                return Ok(ClientAuth::PrivateKeyJwt {
                    id: id.clone(),
                    key: key.clone(),
                });
            }
            return Ok(ClientAuth::choose(
                id,
                cfg.client_secret.as_deref(),
                None,
                supported,
            ));
        }
    }
    if let Some(r) = cfg.store.load_registration(&meta.issuer)? {
        if r.issuer == meta.issuer && r.redirect_uri.as_deref().is_none_or(|u| u == redirect_uri) {
            return Ok(ClientAuth::choose(
                &r.client_id,
                r.client_secret.as_deref(),
                Some(&r.auth_method),
                supported,
            ));
        }
    }
    if meta.cimd_supported {
        if let Some(url) = &cfg.client_metadata_url {
            return Ok(ClientAuth::None { id: url.clone() });
        }
    }
    let Some(endpoint) = &meta.registration_endpoint else {
        return Err(ClientError::Auth(format!(
            "no client id for {}: it offers no dynamic registration and no client-ID \
             metadata documents; configure a client id",
            meta.issuer
        )));
    };
    let grant_types = match cfg.grant {
        Grant::AuthorizationCode => json!(["authorization_code", "refresh_token"]),
        Grant::ClientCredentials => json!(["client_credentials"]),
        Grant::JwtBearer { .. } | Grant::EnterpriseManaged { .. } => {
            json!(["urn:ietf:params:oauth:grant-type:jwt-bearer"])
        }
    };
    let mut body = json!({
        "client_name": cfg.client_name,
        "redirect_uris": [redirect_uri],
        "grant_types": grant_types,
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        "application_type": cfg.application_type,
    });
    if supported.is_some_and(|s| !s.iter().any(|m| m == "none")) {
        let m = if supported.is_some_and(|s| s.iter().any(|m| m == "client_secret_basic")) {
            "client_secret_basic"
        } else {
            "client_secret_post"
        };
        body["token_endpoint_auth_method"] = json!(m);
    }
    if !cfg.scopes.is_empty() {
        body["scope"] = json!(cfg.scopes.join(" "));
    }
    let a = net.post_json(endpoint, &body).await?;
    if !a.status.is_success() {
        return Err(ClientError::Auth(format!(
            "dynamic client registration at {} refused: {}",
            meta.issuer,
            a.oauth_error()
        )));
    }
    let m = a
        .json()
        .ok_or_else(|| ClientError::Auth("the registration answer is not a JSON object".into()))?;
    let text = |k: &str| m.get(k).and_then(Value::as_str).map(str::to_owned);
    let client_id = text("client_id")
        .filter(|s| !s.is_empty())
        .ok_or_else(|| ClientError::Auth("the registration answer has no client_id".into()))?;
    let secret = text("client_secret");
    let auth = ClientAuth::choose(
        &client_id,
        secret.as_deref(),
        text("token_endpoint_auth_method").as_deref(),
        supported,
    );
    cfg.store.save_registration(&Registration {
        issuer: meta.issuer.clone(),
        client_id,
        client_secret: secret,
        auth_method: auth.method().to_owned(),
        redirect_uri: Some(redirect_uri.to_owned()),
    })?;
    Ok(auth)
}
