//! The issuer's metadata (RFC 8414 / OpenID Connect Discovery): where its keys and its
//! introspection endpoint are.

use serde_json::Value;

use crate::fetch::Fetcher;

/// What the resource server needs from the issuer's metadata.
#[derive(Debug, Clone, Default)]
pub(crate) struct IssuerMetadata {
    pub(crate) jwks_uri: Option<String>,
    pub(crate) introspection_endpoint: Option<String>,
}

/// The well-known URLs for `issuer`, in the order MCP clients try them.
pub(crate) fn metadata_urls(issuer: &str) -> Vec<String> {
    let issuer = issuer.trim_end_matches('/');
    let Some((scheme, rest)) = issuer.split_once("://") else {
        return Vec::new();
    };
    match rest.split_once('/') {
        None => vec![
            format!("{issuer}/.well-known/oauth-authorization-server"),
            format!("{issuer}/.well-known/openid-configuration"),
        ],
        Some((host, path)) => vec![
            format!("{scheme}://{host}/.well-known/oauth-authorization-server/{path}"),
            format!("{scheme}://{host}/.well-known/openid-configuration/{path}"),
            format!("{issuer}/.well-known/openid-configuration"),
        ],
    }
}

/// Fetches the first metadata document whose `issuer` is exactly `issuer`.
pub(crate) async fn discover(fetcher: &Fetcher, issuer: &str) -> Result<IssuerMetadata, String> {
    let mut problems = Vec::new();
    for url in metadata_urls(issuer) {
        match fetcher.get_json(&url).await {
            Ok(doc) => {
                if doc.get("issuer").and_then(Value::as_str) != Some(issuer) {
                    problems.push(format!("{url}: its issuer is not {issuer}"));
                    continue;
                }
                let text = |k: &str| doc.get(k).and_then(Value::as_str).map(str::to_owned);
                return Ok(IssuerMetadata {
                    jwks_uri: text("jwks_uri"),
                    introspection_endpoint: text("introspection_endpoint"),
                });
            }
            Err(e) => problems.push(e.to_string()),
        }
    }
    Err(format!(
        "no usable metadata for issuer {issuer}: {}",
        problems.join("; ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        assert_eq!(
            metadata_urls("https://as.example"),
            [
                "https://as.example/.well-known/oauth-authorization-server",
                "https://as.example/.well-known/openid-configuration"
            ]
        );
        assert_eq!(
            metadata_urls("https://as.example/tenant1"),
            [
                "https://as.example/.well-known/oauth-authorization-server/tenant1",
                "https://as.example/.well-known/openid-configuration/tenant1",
                "https://as.example/tenant1/.well-known/openid-configuration"
            ]
        );
    }
}
