//! Discovery: the protected resource's metadata (RFC 9728) from the challenge's
//! `resource_metadata`, then the path-suffixed and root well-known URLs; its
//! `resource` checked against the server; the authorization server's metadata by
//! RFC 8414 path insertion, then OpenID Connect discovery (insertion, then append), its
//! `issuer` compared with the identifier the URL was built from; and the 2025-03-26
//! fallback for servers without resource metadata (metadata at the server's root,
//! else `/authorize`, `/token`, `/register` there).

use http::Uri;
use serde_json::{Map, Value};

use super::net::{Net, redact};
use crate::error::ClientError;

/// Protected-resource metadata, the fields the client uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ResourceMeta {
    /// `resource`, exactly as published (sent back byte for byte).
    pub(crate) resource: String,
    /// `authorization_servers`.
    pub(crate) authorization_servers: Vec<String>,
    /// `scopes_supported`.
    pub(crate) scopes_supported: Option<Vec<String>>,
}

/// Authorization-server metadata, the fields the client uses.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ServerMeta {
    pub(crate) issuer: String,
    pub(crate) authorization_endpoint: Option<String>,
    pub(crate) token_endpoint: String,
    pub(crate) registration_endpoint: Option<String>,
    pub(crate) scopes_supported: Option<Vec<String>>,
    pub(crate) token_endpoint_auth_methods_supported: Option<Vec<String>>,
    pub(crate) grant_types_supported: Option<Vec<String>>,
    pub(crate) cimd_supported: bool,
    pub(crate) iss_supported: bool,
    pub(crate) dpop_algs: Option<Vec<String>>,
    pub(crate) code_challenge_methods: Option<Vec<String>>,
}

/// What discovery found for one server.
#[derive(Clone, Debug)]
pub(crate) struct Discovery {
    /// `None` for a 2025-03-26 server without resource metadata.
    pub(crate) resource: Option<ResourceMeta>,
    pub(crate) server: ServerMeta,
}

fn strings(m: &Map<String, Value>, k: &str) -> Option<Vec<String>> {
    m.get(k).and_then(Value::as_array).map(|a| {
        a.iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect()
    })
}

fn string(m: &Map<String, Value>, k: &str) -> Option<String> {
    m.get(k).and_then(Value::as_str).map(str::to_owned)
}

/// `scheme://authority` (lower-cased) and the path without a trailing `/`.
pub(crate) fn split(url: &str) -> Option<(String, String)> {
    let u: Uri = url.parse().ok()?;
    let scheme = u.scheme_str()?.to_ascii_lowercase();
    let authority = u.authority()?.as_str().to_ascii_lowercase();
    let path = u.path().trim_end_matches('/').to_owned();
    Some((format!("{scheme}://{authority}"), path))
}

/// Where to look for the resource metadata, in the specification's order.
pub(crate) fn resource_meta_urls(server: &str, from_header: Option<&str>) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(h) = from_header {
        out.push(h.to_owned());
    }
    if let Some((origin, path)) = split(server) {
        if !path.is_empty() {
            out.push(format!(
                "{origin}/.well-known/oauth-protected-resource{path}"
            ));
        }
        out.push(format!("{origin}/.well-known/oauth-protected-resource"));
    }
    out.dedup();
    out
}

/// Where to look for an authorization server's metadata, in the specification's order.
pub(crate) fn server_meta_urls(issuer: &str) -> Vec<String> {
    let Some((origin, path)) = split(issuer) else {
        return Vec::new();
    };
    if path.is_empty() {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server"),
            format!("{origin}/.well-known/openid-configuration"),
        ]
    } else {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{origin}/.well-known/openid-configuration{path}"),
            format!("{origin}{path}/.well-known/openid-configuration"),
        ]
    }
}

/// Whether the metadata's `resource` names the server the client talks to: the same
/// origin, and the server's path inside the resource's (RFC 9728 §3.3, RFC 8707 §2).
pub(crate) fn resource_matches(resource: &str, server: &str) -> bool {
    if resource.contains('#') {
        return false;
    }
    let (Some((ro, rp)), Some((so, sp))) = (split(resource), split(server)) else {
        return false;
    };
    ro == so && (sp == rp || sp.starts_with(&format!("{rp}/")))
}

fn parse_resource_meta(m: &Map<String, Value>) -> Option<ResourceMeta> {
    Some(ResourceMeta {
        resource: string(m, "resource")?,
        authorization_servers: strings(m, "authorization_servers").unwrap_or_default(),
        scopes_supported: strings(m, "scopes_supported"),
    })
}

fn parse_server_meta(m: &Map<String, Value>) -> Option<ServerMeta> {
    Some(ServerMeta {
        issuer: string(m, "issuer")?,
        authorization_endpoint: string(m, "authorization_endpoint"),
        token_endpoint: string(m, "token_endpoint")?,
        registration_endpoint: string(m, "registration_endpoint"),
        scopes_supported: strings(m, "scopes_supported"),
        token_endpoint_auth_methods_supported: strings(m, "token_endpoint_auth_methods_supported"),
        grant_types_supported: strings(m, "grant_types_supported"),
        cimd_supported: m
            .get("client_id_metadata_document_supported")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        iss_supported: m
            .get("authorization_response_iss_parameter_supported")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        dpop_algs: strings(m, "dpop_signing_alg_values_supported"),
        code_challenge_methods: strings(m, "code_challenge_methods_supported"),
    })
}

/// Fetches the resource metadata for `server`.
pub(crate) async fn resource_meta(
    net: &Net,
    server: &str,
    from_header: Option<&str>,
) -> Result<Option<ResourceMeta>, ClientError> {
    for url in resource_meta_urls(server, from_header) {
        if let Some(m) = net.metadata(&url).await? {
            let meta = parse_resource_meta(&m).ok_or_else(|| {
                ClientError::Auth(format!(
                    "the resource metadata at {} has no resource",
                    redact(&url)
                ))
            })?;
            return Ok(Some(meta));
        }
    }
    Ok(None)
}

/// Fetches the authorization server's metadata for `issuer`: the first document
/// found, refused when its `issuer` is not `issuer` exactly.
pub(crate) async fn server_meta(
    net: &Net,
    issuer: &str,
) -> Result<Option<ServerMeta>, ClientError> {
    for url in server_meta_urls(issuer) {
        let Some(m) = net.metadata(&url).await? else {
            continue;
        };
        let meta = parse_server_meta(&m).ok_or_else(|| {
            ClientError::Auth(format!(
                "the authorization server metadata at {} lacks issuer or token_endpoint",
                redact(&url)
            ))
        })?;
        if meta.issuer != issuer {
            return Err(ClientError::Auth(format!(
                "the authorization server metadata at {} names issuer {:?}, not {issuer:?}: refused",
                redact(&url),
                meta.issuer.chars().take(200).collect::<String>()
            )));
        }
        return Ok(Some(meta));
    }
    Ok(None)
}

/// Whether `url` may carry credentials: `https://`, or `http://` to a loopback host
/// (OAuth 2.1 §1.5; RFC 8252 §8.3).
pub(crate) fn secure_or_loopback(url: &str) -> bool {
    let Ok(u) = url.parse::<Uri>() else {
        return false;
    };
    match u.scheme_str() {
        Some("https") => true,
        Some("http") => matches!(
            u.host()
                .map(|h| h.trim_start_matches('[').trim_end_matches(']')),
            Some("localhost" | "127.0.0.1" | "::1")
        ),
        _ => false,
    }
}

fn check_endpoints(m: &ServerMeta) -> Result<(), ClientError> {
    let endpoints = [
        Some(m.token_endpoint.as_str()),
        m.authorization_endpoint.as_deref(),
        m.registration_endpoint.as_deref(),
    ];
    for e in endpoints.into_iter().flatten() {
        if !secure_or_loopback(e) {
            return Err(ClientError::Auth(format!(
                "the authorization server endpoint {} is neither https nor loopback: refused",
                redact(e)
            )));
        }
    }
    Ok(())
}

/// The whole discovery for `server`, given the refusal's `resource_metadata`; every
/// endpoint found is `https://` or loopback.
pub(crate) async fn discover(
    net: &Net,
    server: &str,
    from_header: Option<&str>,
) -> Result<Discovery, ClientError> {
    let d = discover_any(net, server, from_header).await?;
    check_endpoints(&d.server)?;
    Ok(d)
}

async fn discover_any(
    net: &Net,
    server: &str,
    from_header: Option<&str>,
) -> Result<Discovery, ClientError> {
    if let Some(prm) = resource_meta(net, server, from_header).await? {
        if !resource_matches(&prm.resource, server) {
            return Err(ClientError::Auth(format!(
                "the resource metadata names resource {:?}, which is not {}: refused",
                prm.resource.chars().take(200).collect::<String>(),
                redact(server)
            )));
        }
        let issuer = prm.authorization_servers.first().cloned().ok_or_else(|| {
            ClientError::Auth("the resource metadata lists no authorization server".into())
        })?;
        let server_meta = server_meta(net, &issuer).await?.ok_or_else(|| {
            ClientError::Auth(format!(
                "no authorization server metadata for {}",
                redact(&issuer)
            ))
        })?;
        return Ok(Discovery {
            resource: Some(prm),
            server: server_meta,
        });
    }
    // 2025-03-26: the MCP server's origin is the authorization server.
    let (origin, _) =
        split(server).ok_or_else(|| ClientError::Auth(format!("not a URL: {}", redact(server))))?;
    let meta = match server_meta(net, &origin).await? {
        Some(m) => m,
        None => ServerMeta {
            issuer: origin.clone(),
            authorization_endpoint: Some(format!("{origin}/authorize")),
            token_endpoint: format!("{origin}/token"),
            registration_endpoint: Some(format!("{origin}/register")),
            ..ServerMeta::default()
        },
    };
    Ok(Discovery {
        resource: None,
        server: meta,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_urls_in_order() {
        assert_eq!(
            resource_meta_urls("http://h:1/mcp", Some("http://h:1/x.json")),
            [
                "http://h:1/x.json",
                "http://h:1/.well-known/oauth-protected-resource/mcp",
                "http://h:1/.well-known/oauth-protected-resource"
            ]
        );
        assert_eq!(
            resource_meta_urls("http://h:1/", None),
            ["http://h:1/.well-known/oauth-protected-resource"]
        );
    }

    #[test]
    fn server_urls_insert_then_append() {
        assert_eq!(
            server_meta_urls("http://a:2/tenant1"),
            [
                "http://a:2/.well-known/oauth-authorization-server/tenant1",
                "http://a:2/.well-known/openid-configuration/tenant1",
                "http://a:2/tenant1/.well-known/openid-configuration"
            ]
        );
        assert_eq!(server_meta_urls("http://a:2").len(), 2);
    }

    #[test]
    fn credentials_only_over_https_or_loopback() {
        assert!(secure_or_loopback("https://as.example.com/token"));
        assert!(secure_or_loopback("http://localhost:1/token"));
        assert!(secure_or_loopback("http://127.0.0.1/token"));
        assert!(secure_or_loopback("http://[::1]:8/token"));
        assert!(!secure_or_loopback("http://as.example.com/token"));
        assert!(!secure_or_loopback("http://localhost.evil.com/token"));
        assert!(!secure_or_loopback("ftp://localhost/token"));
    }

    #[test]
    fn resource_match_is_origin_and_path_prefix() {
        assert!(resource_matches("http://h:1/mcp", "http://h:1/mcp"));
        assert!(resource_matches("http://h:1", "http://h:1/mcp"));
        assert!(resource_matches("HTTP://H:1/", "http://h:1/mcp"));
        assert!(!resource_matches(
            "https://evil.example.com/mcp",
            "http://h:1/mcp"
        ));
        assert!(!resource_matches("http://h:1/mc", "http://h:1/mcp"));
        assert!(!resource_matches("http://h:1/mcp/x", "http://h:1/mcp"));
        assert!(!resource_matches("http://h:2/mcp", "http://h:1/mcp"));
        assert!(!resource_matches("http://h:1/mcp#f", "http://h:1/mcp"));
    }
}
