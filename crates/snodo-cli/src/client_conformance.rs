//! `snodo client-conformance URL`: the client driver the official conformance runner
//! starts (`conformance client --command 'snodo client-conformance'`). It reads
//! `MCP_CONFORMANCE_SCENARIO`, `MCP_CONFORMANCE_PROTOCOL_VERSION` and
//! `MCP_CONFORMANCE_CONTEXT`, connects with snodo-client, and does what the scenario's
//! mock server expects of a client: list, call the tools (with the context's
//! arguments when it gives any), read, get, answer the server's questions.

use std::process::ExitCode;
use std::time::Duration;

use serde_json::{Map, Value, json};
use snodo_client::auth::{Grant, OAuthConfig};
use snodo_client::{Client, ClientError, Protocol};

/// An answer to an elicitation form: each field's default, else a value of its type.
fn fill_form(params: &Value) -> Value {
    let mut answer = snodo_client::accept_with_defaults(params);
    let Some(props) = params
        .pointer("/requestedSchema/properties")
        .and_then(Value::as_object)
    else {
        return answer;
    };
    let required: Vec<&str> = params
        .pointer("/requestedSchema/required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if let Some(content) = answer.get_mut("content").and_then(Value::as_object_mut) {
        for (k, p) in props {
            if content.contains_key(k) || !required.contains(&k.as_str()) {
                continue;
            }
            let v = match p.get("type").and_then(Value::as_str) {
                Some("boolean") => json!(true),
                Some("integer" | "number") => json!(1),
                _ => match p.pointer("/enum/0") {
                    Some(first) => first.clone(),
                    None if k.contains("mail") => json!("conformance@example.com"),
                    None => json!("conformance"),
                },
            };
            content.insert(k.clone(), v);
        }
    }
    answer
}

/// The redirect URI of the headless authorization (never fetched: the driver reads the
/// authorization endpoint's redirect to it).
const REDIRECT_URI: &str = "http://localhost:3000/callback";
/// The client-ID metadata document URL the runner's mock authorization servers accept.
const CIMD_URL: &str = "https://conformance-test.local/client-metadata.json";

/// The OAuth set-up for a scenario: headless, a client-ID metadata document URL, and
/// the credentials, key and grant the runner's context gives.
fn oauth_config(name: &str, context: &Value) -> Result<OAuthConfig, String> {
    let text = |k: &str| context.get(k).and_then(Value::as_str).map(str::to_owned);
    let mut cfg = OAuthConfig::new("snodo-conformance-client")
        .headless(REDIRECT_URI)
        .client_metadata_url(CIMD_URL);
    if let Some(id) = text("client_id") {
        cfg = cfg.client(id, text("client_secret"));
    }
    if let Some(pem) = text("private_key_pem") {
        cfg = cfg.private_key_pem(&pem).map_err(|e| e.to_string())?;
    }
    if name.starts_with("auth/client-credentials") {
        cfg = cfg.grant(Grant::ClientCredentials);
    }
    if let Some(jwt) = text("valid_jwt") {
        cfg = cfg.grant(Grant::JwtBearer { assertion: jwt });
    }
    if let (Some(endpoint), Some(id_token), Some(idp_client_id)) = (
        text("idp_token_endpoint"),
        text("idp_id_token"),
        text("idp_client_id"),
    ) {
        cfg = cfg.grant(Grant::EnterpriseManaged {
            idp_token_endpoint: endpoint,
            id_token,
            idp_client_id,
            idp_client_secret: None,
        });
    }
    if name.starts_with("auth/dpop") {
        cfg = cfg.dpop(true);
    }
    Ok(cfg)
}

fn client_builder(version: Option<&str>) -> Result<snodo_client::ClientBuilder, String> {
    let protocol = match version {
        Some(v) => v.parse::<Protocol>()?,
        None => Protocol::Auto,
    };
    Ok(
        Client::builder("snodo-conformance-client", env!("CARGO_PKG_VERSION"))
            .protocol(protocol)
            .timeout(Duration::from_secs(20))
            .probe_timeout(Duration::from_secs(10))
            .on_elicitation(|p| async move { Ok(fill_form(&p)) })
            .on_sampling(|_| async move {
                Ok(json!({"role": "assistant", "model": "snodo-conformance",
                "content": {"type": "text", "text": "Paris"}, "stopReason": "endTurn"}))
            })
            .on_roots(|_| async move { Ok(json!({"roots": []})) }),
    )
}

/// Logs a failed step; the scenario's checks judge the outcome.
fn note<T>(what: &str, r: Result<T, ClientError>) -> Option<T> {
    match r {
        Ok(v) => Some(v),
        Err(e) => {
            eprintln!("client-conformance: {what}: {e}");
            None
        }
    }
}

async fn scenario(client: &Client, name: &str, context: &Value) {
    let tools = note("tools/list", client.list_tools().await).unwrap_or_default();
    if name == "json-schema-ref-no-deref" || name == "request-metadata" {
        return;
    }
    if name == "json-schema-2020-12-preservation" {
        if let Some(focal) = tools.iter().find(|t| t.name == "json_schema_2020_12_tool") {
            let args = json!({"schema": focal.input_schema});
            note(
                "tools/call",
                client.call_tool("json_schema_echo", args).await,
            );
        }
        return;
    }
    if let Some(calls) = context.get("toolCalls").and_then(Value::as_array) {
        for call in calls {
            let tool = call.get("name").and_then(Value::as_str).unwrap_or_default();
            let args = call.get("arguments").cloned().unwrap_or_else(|| json!({}));
            note(tool, client.call_tool(tool, args).await);
        }
        return;
    }
    if name == "initialize" || name == "tools_call" || name == "tools-call" {
        if let Some(t) = tools.first() {
            note(
                &t.name,
                client.call_tool(&t.name, json!({"a": 2, "b": 3})).await,
            );
        }
        return;
    }
    for t in &tools {
        note(&t.name, client.call_tool(&t.name, json!({})).await);
    }
    if name == "http-standard-headers" {
        for r in note("resources/list", client.list_resources().await).unwrap_or_default() {
            note(&r.uri, client.read_resource(&r.uri).await);
        }
        for p in note("prompts/list", client.list_prompts().await).unwrap_or_default() {
            note(
                &p.name,
                client.get_prompt(&p.name, Value::Object(Map::new())).await,
            );
        }
    }
}

/// Runs the driver against `url`.
pub(crate) async fn run(url: &str) -> ExitCode {
    let name = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let version = std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION").ok();
    let context = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or(Value::Null);
    let builder = match client_builder(version.as_deref())
        .and_then(|b| Ok(b.oauth(oauth_config(&name, &context)?)))
    {
        Ok(b) => b,
        Err(e) => {
            eprintln!("client-conformance: {e}");
            return ExitCode::from(2);
        }
    };
    let client = match builder.connect_http(url).await {
        Ok(c) => c,
        Err(e) => {
            eprintln!("client-conformance: connect: {e}");
            return ExitCode::from(1);
        }
    };
    eprintln!(
        "client-conformance: {name} at {} ({url})",
        client.protocol_version()
    );
    scenario(&client, &name, &context).await;
    client.close().await;
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_get_defaults_then_typed_values() {
        let p = json!({"requestedSchema": {"type": "object", "properties": {
            "name": {"type": "string", "default": "Ada"}, "email": {"type": "string"},
            "ok": {"type": "boolean"}, "n": {"type": "integer"}, "free": {"type": "string"}},
            "required": ["email", "ok", "n"]}});
        assert_eq!(
            fill_form(&p),
            json!({"action": "accept", "content": {"name": "Ada",
                "email": "conformance@example.com", "ok": true, "n": 1}})
        );
    }
}
