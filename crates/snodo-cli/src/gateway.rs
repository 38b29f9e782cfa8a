//! `snodo gateway`: MCP servers — a stdio command, remote URLs, more commands — behind
//! one stateless endpoint at `/mcp` (issue 33, first cut), through `snodo-compose`.
//!
//! ```sh
//! snodo gateway -- npx -y @modelcontextprotocol/server-everything        # no prefix
//! snodo gateway --backend fs=stdio:'npx -y @modelcontextprotocol/server-filesystem /tmp' \
//!               --backend py=http://127.0.0.1:8001/mcp                    # fs_*, py_*
//! ```

use std::time::Duration;

use snodo::Runtime;
use snodo::http::{HttpConfig, ListenAddr, Server};
use snodo_compose::{McpSource, Mount, Status, Transforms};

/// The arguments of `snodo gateway`.
#[derive(clap::Args, Debug)]
pub(crate) struct GatewayArgs {
    /// Address to listen on: HOST:PORT, or unix:PATH for a Unix socket.
    #[arg(long, default_value = "127.0.0.1:8080")]
    addr: ListenAddr,
    /// Enabled protocol versions at the front, comma-separated, in preference order.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "2026-07-28,2025-11-25,2025-06-18,2025-03-26"
    )]
    protocols: Vec<String>,
    /// A backend whose components are served as NAME_component (resources
    /// scheme://NAME/…): NAME=URL (Streamable HTTP) or NAME=stdio:'COMMAND ARGS'
    /// (repeatable).
    #[arg(long = "backend", value_name = "NAME=URL|NAME=stdio:CMD")]
    backends: Vec<String>,
    /// How long to wait for each backend's first listing before serving (a backend
    /// still down then is retried in the background).
    #[arg(long, default_value_t = 30)]
    ready_timeout_secs: u64,
    /// A stdio server served without a prefix: `snodo gateway -- COMMAND ARGS...`.
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<String>,
}

/// The flags of `snodo` every subcommand shares that the gateway uses.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) state_key: Option<String>,
    pub(crate) config: HttpConfig,
    /// TLS and the Unix socket's mode, as `serve` has them.
    pub(crate) listen: crate::listen::ListenArgs,
}

/// The sources to mount, each with its transforms.
fn sources(args: &GatewayArgs) -> Result<Vec<(McpSource, Transforms)>, String> {
    let mut out = Vec::new();
    if let Some((program, rest)) = args.command.split_first() {
        out.push((
            McpSource::stdio(program.clone(), program.clone(), rest.iter().cloned()),
            Transforms::new(),
        ));
    }
    for spec in &args.backends {
        let source = McpSource::from_spec(spec)?;
        let ns = snodo_compose::Source::name(&source).to_owned();
        out.push((source, Transforms::new().namespace(ns)));
    }
    if out.is_empty() {
        return Err("nothing to serve: give `-- COMMAND ARGS...` or --backend NAME=TARGET".into());
    }
    Ok(out)
}

/// Runs the gateway until SIGTERM or Ctrl-C.
pub(crate) async fn run(args: GatewayArgs, shared: Shared) -> Result<(), String> {
    let sources = sources(&args)?;
    // A call to a component of a backend that is down names the backend.
    let outages = snodo_compose::Outages::new();
    let mut builder = Runtime::builder("snodo-gateway", env!("CARGO_PKG_VERSION"))
        .protocols(crate::dialects(&args.protocols)?)
        .declare_all_kinds()
        .layer(outages.clone())
        .logging()
        // Backends' questions reach initialize-era callers as server requests.
        .legacy_server_requests(Duration::from_secs(120));
    if let Some(k) = shared.state_key {
        builder = builder.request_state_key(k.into_bytes());
    }
    let front = builder.build().map_err(|e| e.to_string())?;
    let mounts: Vec<Mount> = sources
        .into_iter()
        .map(|(s, t)| Mount::new(&front, s, t).report_outages(&outages))
        .collect();
    for m in &mounts {
        match m.ready(Duration::from_secs(args.ready_timeout_secs)).await {
            Status::Up { components, .. } => {
                eprintln!("snodo gateway: {m:?} up with {components} components");
            }
            st => eprintln!("snodo gateway: {m:?} not up yet ({st:?}); retrying in the background"),
        }
    }
    let certificates = shared.listen.certificates()?;
    let server = Server::bind_to(
        front.clone(),
        &args.addr,
        shared.listen.socket_mode(),
        shared.config,
    )
    .await
    .map_err(|e| format!("cannot listen on {}: {e}", args.addr))?;
    let tls = certificates.is_some();
    let server = match certificates {
        Some(c) => server.tls(c),
        None => server,
    };
    let endpoint = crate::listen::endpoint(&server, tls)?;
    println!(
        "snodo gateway: {endpoint} (protocols: {})",
        front.supported_versions().join(", ")
    );
    let served = server.run_until(snodo::http::shutdown_signal()).await;
    // Unmount before leaving: the backends' connections close and stdio children are
    // stopped (their stdin closes, then they are killed).
    drop(mounts);
    drop(front);
    served.map_err(|e| e.to_string())
}
