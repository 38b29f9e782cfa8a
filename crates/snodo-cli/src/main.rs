//! The `snodo` command: `snodo serve` runs a demo MCP server over a folder;
//! `snodo fixture` runs the conformance fixture; `snodo client` sends one request to
//! any MCP server.

#![forbid(unsafe_code)]

mod bus;
#[cfg(feature = "client")]
mod client;
#[cfg(feature = "client")]
mod client_args;
#[cfg(feature = "client")]
mod client_conformance;
#[cfg(feature = "client")]
mod client_oauth;
mod demo;
mod fixture;
mod fixture_skills;
#[cfg(feature = "client")]
mod gateway;
mod listen;
mod logs;
mod oauth;
mod task_store;
mod tasks;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use snodo::http::{HttpConfig, ListenAddr};
use snodo::protocol::{ALL, Dialect};

#[derive(Parser, Debug)]
#[command(name = "snodo", version, about = "A stateless MCP server runtime")]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Key that signs multi round-trip requestState; give every instance of a deployment
    /// the same key (default: random per process).
    #[arg(long, env = "SNODO_STATE_KEY", global = true, hide_env_values = true)]
    state_key: Option<String>,
    /// Number of worker threads (default: one per core).
    #[arg(long, global = true)]
    workers: Option<usize>,
    /// A host name clients may use in Host and Origin (repeatable; replaces the
    /// loopback defaults). Needed to listen on a non-loopback address.
    #[arg(long = "allow-host", global = true)]
    allow_hosts: Vec<String>,
    /// Do not check Host (behind a proxy that checks it); Origin is still checked.
    #[arg(long, global = true)]
    any_host: bool,
    /// How many `subscriptions/listen` streams this instance holds open at once (default
    /// 256); one more is refused with 503.
    #[arg(long, global = true)]
    max_listen_streams: Option<usize>,
    /// How many connections this instance holds open at once (default 1024); further
    /// connections wait to be accepted.
    #[arg(long, global = true)]
    max_connections: Option<usize>,
    /// Log format on stderr: one line per event (`human`) or one JSON object (`json`).
    /// Every request is logged at info (target `snodo::request`); filter with RUST_LOG.
    #[arg(long, value_enum, default_value_t = LogFormat::Human, global = true)]
    log_format: LogFormat,
    /// Serve Prometheus metrics at http://ADDR/metrics (e.g. 127.0.0.1:9464).
    #[arg(long, global = true)]
    metrics_addr: Option<SocketAddr>,
    /// Export request spans over OTLP/HTTP to URL (e.g.
    /// http://127.0.0.1:4318/v1/traces); needs a build with the `otlp` feature.
    #[arg(long, global = true)]
    otlp_endpoint: Option<String>,
    // TLS and the Unix socket (issue 36).
    #[command(flatten)]
    listen: listen::ListenArgs,
}

/// Log formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum LogFormat {
    /// Human-readable lines.
    Human,
    /// One JSON object per line.
    Json,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Serve a folder read-only over MCP: files as resources, a search tool, a review prompt.
    Serve {
        /// Address to listen on: HOST:PORT, or unix:PATH for a Unix socket.
        #[arg(long, default_value = "127.0.0.1:8080")]
        addr: ListenAddr,
        /// Folder to expose (default: the current directory).
        #[arg(long)]
        root: Option<PathBuf>,
        /// Enabled protocol versions, comma-separated, in preference order (default:
        /// every version snodo speaks, so that every client connects).
        #[arg(
            long,
            value_delimiter = ',',
            default_value = "2026-07-28,2025-11-25,2025-06-18,2025-03-26",
            conflicts_with = "legacy"
        )]
        protocols: Vec<String>,
        /// Every version snodo speaks (the default; kept as an alias of the full
        /// `--protocols` list).
        #[arg(long)]
        legacy: bool,
        /// Speak MCP on stdin/stdout instead of HTTP (for clients that launch the server).
        #[arg(long, conflicts_with = "oauth_issuer")]
        stdio: bool,
        #[command(flatten)]
        tasks: task_store::TaskStoreArgs,
        #[command(flatten)]
        oauth: oauth::OAuthArgs,
        #[command(flatten)]
        bus: bus::BusArgs,
    },
    /// Send one request to an MCP server and print the result as JSON (list methods
    /// follow every page).
    #[cfg(feature = "client")]
    Client(client::ClientArgs),
    /// The client driver for the official conformance runner (reads
    /// MCP_CONFORMANCE_SCENARIO, _PROTOCOL_VERSION and _CONTEXT).
    #[cfg(feature = "client")]
    #[command(hide = true)]
    ClientConformance {
        /// The scenario's server URL.
        url: String,
    },
    /// Serve MCP servers (a stdio command after `--`, and `--backend`s) behind one
    /// endpoint at /mcp.
    #[cfg(feature = "client")]
    Gateway(gateway::GatewayArgs),
    /// Serve the official conformance fixture.
    Fixture {
        /// Address to listen on: HOST:PORT, or unix:PATH for a Unix socket.
        #[arg(long, default_value = "127.0.0.1:3000")]
        addr: ListenAddr,
        /// Enabled protocol versions, comma-separated, in preference order.
        #[arg(
            long,
            value_delimiter = ',',
            default_value = "2026-07-28,2025-11-25,2025-06-18"
        )]
        protocols: Vec<String>,
        /// Which components to serve.
        #[arg(long, value_enum, default_value_t = Profile::Conformance)]
        profile: Profile,
        /// Items per list page.
        #[arg(long, default_value_t = 100)]
        page_size: usize,
        /// Speak MCP on stdin/stdout instead of HTTP.
        #[arg(long)]
        stdio: bool,
        /// Pass-through middleware layers around every request (they only call the next
        /// one): what the middleware path costs, for `bench/profile.sh`.
        #[arg(long, default_value_t = 0)]
        layers: usize,
        #[command(flatten)]
        tasks: task_store::TaskStoreArgs,
        #[command(flatten)]
        bus: bus::BusArgs,
    },
}

/// Fixture profiles.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Profile {
    /// Every tool, resource and prompt the conformance runner calls.
    Conformance,
    /// Only the `echo {text}` tool (for benchmarks).
    Echo,
}

fn dialects(versions: &[String]) -> Result<Vec<&'static Dialect>, String> {
    versions
        .iter()
        .map(|v| {
            let v = v.trim();
            Dialect::by_version(v).ok_or_else(|| {
                let known: Vec<&str> = ALL.iter().map(|d| d.version()).collect();
                format!(
                    "unknown protocol version {v:?} (known: {})",
                    known.join(", ")
                )
            })
        })
        .collect()
}

/// Binds the metrics listener and serves `metrics` on it in the background.
async fn serve_metrics(
    addr: SocketAddr,
    metrics: snodo::metrics::Metrics,
) -> Result<snodo::metrics::Metrics, String> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| format!("cannot listen for metrics on {addr}: {e}"))?;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    eprintln!("snodo metrics: http://{local}/metrics");
    let served = metrics.clone();
    tokio::spawn(async move {
        if let Err(e) = served.serve(listener).await {
            tracing::warn!(error = %e, "the metrics listener stopped");
        }
    });
    Ok(metrics)
}

/// The flags of `serve` an HTTP front shares with `gateway`: the task store, metrics,
/// OAuth and the bus, applied to `builder` and `config`.
pub(crate) struct Front<'a> {
    pub(crate) tasks: &'a task_store::TaskStoreArgs,
    pub(crate) oauth: &'a oauth::OAuthArgs,
    pub(crate) bus: &'a bus::BusArgs,
    pub(crate) metrics: Option<snodo::metrics::Metrics>,
    /// Tags DPoP server nonces (`--oauth-dpop-nonce`).
    pub(crate) state_key: Option<&'a [u8]>,
}

impl Front<'_> {
    /// The builder and HTTP configuration with the flags applied, and the OAuth
    /// resource server they ask for (mounted by [`listen::bind`]).
    pub(crate) async fn apply(
        self,
        mut builder: snodo::RuntimeBuilder,
        mut config: HttpConfig,
        addr: &ListenAddr,
    ) -> Result<(snodo::RuntimeBuilder, HttpConfig, Option<oauth::Protection>), String> {
        let protection = oauth::setup(self.oauth, addr, self.state_key).await?;
        builder = builder.tasks(task_store::options(self.tasks).await?);
        if let Some(metrics) = self.metrics {
            builder = builder.metrics(metrics);
        }
        if let Some(p) = &protection {
            builder = p.authorize(builder);
            config = p.configure(config);
        }
        // The shared bus (issue 35).
        builder = bus::Shared::connect(self.bus).await?.apply(builder);
        Ok((builder, config, protection))
    }
}

async fn run(cli: Cli) -> Result<(), String> {
    let key = cli.state_key.map(String::into_bytes);
    let mut config = HttpConfig::default();
    if !cli.allow_hosts.is_empty() {
        config = config.allow_hosts(cli.allow_hosts);
    }
    if cli.any_host {
        config = config.any_host();
    }
    if let Some(n) = cli.max_listen_streams {
        config = config.max_listen_streams(n);
    }
    if let Some(n) = cli.max_connections {
        config = config.max_connections(n);
    }
    let command = match cli.command {
        #[cfg(feature = "client")]
        Command::Gateway(args) => {
            let shared = gateway::Shared {
                state_key: key,
                config,
                listen: cli.listen,
                metrics_addr: cli.metrics_addr,
            };
            return gateway::run(args, shared).await;
        }
        c => c,
    };
    let metrics = match cli.metrics_addr {
        Some(addr) => Some(serve_metrics(addr, snodo::metrics::Metrics::new()).await?),
        None => None,
    };
    let mut protection = None;
    let (runtime, addr, banner, stdio) = match command {
        Command::Serve {
            addr,
            root,
            protocols,
            legacy,
            stdio,
            tasks,
            oauth,
            bus,
        } => {
            let root = match root {
                Some(r) => r,
                None => std::env::current_dir()
                    .map_err(|e| format!("cannot read the current directory: {e}"))?,
            };
            let protocols = if legacy {
                ALL.to_vec()
            } else {
                dialects(&protocols)?
            };
            let nonce_key = key.clone();
            let front = Front {
                tasks: &tasks,
                oauth: &oauth,
                bus: &bus,
                metrics,
                state_key: nonce_key.as_deref(),
            };
            let (builder, with_auth, p) = front
                .apply(demo::builder(&root, protocols, key)?, config, &addr)
                .await?;
            (config, protection) = (with_auth, p);
            let runtime = builder.build().map_err(|e| e.to_string())?;
            (
                runtime,
                addr,
                format!("serving {} read-only", root.display()),
                stdio,
            )
        }
        #[cfg(feature = "client")]
        Command::Client(_) | Command::ClientConformance { .. } | Command::Gateway(_) => {
            return Err("snodo client runs from main".into());
        }
        Command::Fixture {
            addr,
            protocols,
            profile,
            page_size,
            stdio,
            layers,
            tasks,
            bus,
        } => {
            let tasks = Some(task_store::options(&tasks).await?);
            // The shared bus (issue 35), and the scale lane's tools and token with it.
            let shared = bus::Shared::connect(&bus).await?;
            let mut lane = None;
            let extend = |b| {
                let b = fixture::pass_through_layers(b, layers);
                let (b, c) = shared.fixture(shared.apply(b), config.clone());
                lane = Some(c);
                b
            };
            let runtime = fixture::runtime(
                dialects(&protocols)?,
                profile,
                key,
                page_size,
                metrics,
                tasks,
                extend,
            )
            .map_err(|e| e.to_string())?;
            config = lane.unwrap_or(config);
            (
                runtime,
                addr,
                format!("conformance fixture ({})", protocols.join(",")),
                stdio,
            )
        }
    };
    if stdio {
        // stdout carries MCP messages only: the banner goes to stderr.
        eprintln!(
            "snodo {banner}: stdio (protocols: {})",
            runtime.supported_versions().join(", ")
        );
        return snodo::stdio::serve(runtime)
            .await
            .map_err(|e| e.to_string());
    }
    let (server, endpoint) = listen::bind(
        runtime.clone(),
        &addr,
        &cli.listen,
        config,
        protection.as_ref(),
    )
    .await?;
    println!(
        "snodo {banner}: {endpoint} (protocols: {})",
        runtime.supported_versions().join(", ")
    );
    server.run().await.map_err(|e| e.to_string())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let telemetry = match logs::init(cli.log_format, cli.otlp_endpoint.as_deref()) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("snodo: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = cli.workers {
        builder.worker_threads(n.max(1));
    }
    let rt = match builder.enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("snodo: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    #[cfg(feature = "client")]
    if let Command::Client(args) = cli.command {
        let code = rt.block_on(client::run(args));
        rt.shutdown_timeout(std::time::Duration::from_millis(200));
        return code;
    }
    #[cfg(feature = "client")]
    if let Command::ClientConformance { url } = &cli.command {
        let code = rt.block_on(client_conformance::run(url));
        rt.shutdown_timeout(std::time::Duration::from_millis(200));
        return code;
    }
    // The gateway's children get longer to be stopped; otherwise, do not wait for a
    // blocked stdin read (stdio mode ended by a signal).
    #[cfg(feature = "client")]
    let grace = if matches!(cli.command, Command::Gateway(_)) {
        500
    } else {
        200
    };
    #[cfg(not(feature = "client"))]
    let grace = 200;
    let outcome = rt.block_on(run(cli));
    rt.shutdown_timeout(std::time::Duration::from_millis(grace));
    telemetry.shutdown();
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("snodo: {e}");
            ExitCode::FAILURE
        }
    }
}
