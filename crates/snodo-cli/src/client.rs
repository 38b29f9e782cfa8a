//! `snodo client`: one MCP request to any server, over Streamable HTTP or a child
//! process's stdio; the result as JSON on stdout.
//!
//! Exit status: 0 with the result on stdout; 1 with the server's JSON-RPC error (as
//! JSON) on stderr; 2 when the connection or the arguments fail.

use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use serde_json::{Value, json};
use snodo_client::{Client, ClientError, Protocol};

use crate::client_args::{self, CallShortcut};

/// Arguments of `snodo client`.
#[derive(Args, Debug)]
#[command(group(clap::ArgGroup::new("server").required(true).args(["url", "stdio"])))]
pub(crate) struct ClientArgs {
    /// The server's Streamable HTTP endpoint (http://HOST:PORT/PATH).
    #[arg(long)]
    url: Option<String>,
    /// Start the server as a child process and speak on its stdio: 'CMD ARGS...'
    /// (split on spaces; '...' and "..." group words).
    #[arg(long)]
    stdio: Option<String>,
    /// `auto` (probe server/discover, fall back to initialize) or a version to pin.
    #[arg(long, default_value = "auto")]
    protocol: Protocol,
    /// An extra HTTP header, `Name: value` (repeatable; e.g. Authorization).
    #[arg(long = "header", value_name = "NAME: VALUE")]
    headers: Vec<String>,
    /// Give up after this many seconds.
    #[arg(long, default_value_t = 60)]
    timeout: u64,
    #[command(flatten)]
    oauth: crate::client_oauth::OAuthArgs,
    #[command(flatten)]
    transport: client_args::TransportArgs,
    /// The JSON-RPC method (`tools/list`, `tools/call`, `resources/read`, ...), or the
    /// shortcut `call` (then TOOL and key=value arguments follow).
    method: String,
    /// The params as a JSON object (default `{}`); for `call`: TOOL [key=value ...].
    params: Vec<String>,
}

fn split_command(line: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    for ch in line.chars() {
        match (quote, ch) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(ch);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if quote.is_some() {
        return Err(format!("unbalanced quote in --stdio {line:?}"));
    }
    if in_word {
        out.push(word);
    }
    if out.is_empty() {
        return Err("--stdio needs a command".into());
    }
    Ok(out)
}

fn request(args: &ClientArgs) -> Result<(String, Value), String> {
    if args.method == "call" {
        // Checked before connecting; typed by the tool's schema once connected.
        let call = CallShortcut::parse(&args.params)?;
        return Ok(("tools/call".into(), call.params(None)?));
    }
    let params = match args.params.as_slice() {
        [] => json!({}),
        [one] => serde_json::from_str(one).map_err(|e| format!("PARAMS_JSON is not JSON: {e}"))?,
        _ => return Err("give the params as one JSON argument".into()),
    };
    if !params.is_object() {
        return Err("PARAMS_JSON must be a JSON object".into());
    }
    Ok((args.method.clone(), params))
}

async fn connect(args: &ClientArgs) -> Result<Client, ClientError> {
    let mut b = Client::builder("snodo-client", env!("CARGO_PKG_VERSION"))
        .protocol(args.protocol.clone())
        .timeout(Duration::from_secs(args.timeout))
        .probe_timeout(Duration::from_secs(args.timeout.min(10)));
    for h in &args.headers {
        let (name, value) = h
            .split_once(':')
            .ok_or_else(|| ClientError::Transport(format!("--header {h:?} is not NAME: VALUE")))?;
        let name = http::HeaderName::try_from(name.trim())
            .map_err(|e| ClientError::Transport(format!("--header {h:?}: {e}")))?;
        let value = http::HeaderValue::try_from(value.trim())
            .map_err(|e| ClientError::Transport(format!("--header {h:?}: {e}")))?;
        b = b.header(name, value);
    }
    b = args.transport.apply(b).map_err(ClientError::Transport)?;
    if let Some(cfg) = args.oauth.config().map_err(ClientError::Transport)? {
        b = b.oauth(cfg);
    }
    match (&args.url, &args.stdio) {
        (Some(url), _) => b.connect_http(url).await,
        (None, Some(cmd)) => {
            let words = split_command(cmd).map_err(ClientError::Transport)?;
            b.connect_stdio(&words[0], &words[1..]).await
        }
        (None, None) => Err(ClientError::Transport("give --url or --stdio".into())),
    }
}

async fn execute(client: &Client, method: &str, params: Value) -> Result<Value, ClientError> {
    let list_key = match method {
        "tools/list" => Some("tools"),
        "prompts/list" => Some("prompts"),
        "resources/list" => Some("resources"),
        "resources/templates/list" => Some("resourceTemplates"),
        _ => None,
    };
    if let (Some(key), true) = (list_key, params.get("cursor").is_none()) {
        let items = client.list_all(method).await?;
        return Ok(json!({ key: items }));
    }
    if method == "tools/call" && client.server().stateless {
        // 2026-07-28: learn the tools' x-mcp-header annotations for the Mcp-Param-* headers.
        let _ = client.list_tools().await;
    }
    client.request(method, params).await
}

fn print_error(e: &ClientError) -> ExitCode {
    match e.rpc() {
        Some(rpc) => {
            let mut err = json!({"code": rpc.code().0, "message": rpc.message()});
            if let Some(data) = rpc.data() {
                err["data"] = data.clone();
            }
            eprintln!("{err}");
            ExitCode::from(1)
        }
        None => {
            eprintln!("snodo client: {e}");
            ExitCode::from(2)
        }
    }
}

/// Runs `snodo client`.
pub(crate) async fn run(args: ClientArgs) -> ExitCode {
    let (method, params) = match request(&args) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("snodo client: {e}");
            return ExitCode::from(2);
        }
    };
    let client = match connect(&args).await {
        Ok(c) => c,
        Err(e) => return print_error(&e),
    };
    let params = match client_args::call_params(&client, &args.method, &args.params, params).await {
        Ok(p) => p,
        Err(e) => {
            client.close().await;
            eprintln!("snodo client: {e}");
            return ExitCode::from(2);
        }
    };
    let outcome = execute(&client, &method, params).await;
    client.close().await;
    match outcome {
        Ok(v) => {
            use std::io::Write as _;
            let mut out = std::io::stdout().lock();
            // A closed stdout (`| head`) is not an error worth a panic.
            let _ = serde_json::to_writer_pretty(&mut out, &v);
            let _ = writeln!(out);
            ExitCode::SUCCESS
        }
        Err(e) => print_error(&e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_commands_with_quotes() {
        assert_eq!(
            split_command("snodo serve --root '/a b' \"x\"y").unwrap_or_default(),
            ["snodo", "serve", "--root", "/a b", "xy"]
        );
        assert!(split_command("a 'b").is_err());
        assert!(split_command("   ").is_err());
    }
}
