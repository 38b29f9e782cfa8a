//! `snodo gateway`: MCP servers — a stdio command, remote URLs, more commands — behind
//! one stateless endpoint at `/mcp` (issue 33), through `snodo-compose`; see
//! docs/gateway.md.
//!
//! ```sh
//! snodo gateway -- npx -y @modelcontextprotocol/server-everything        # no prefix
//! snodo gateway --backend fs=stdio:'npx -y @modelcontextprotocol/server-filesystem /tmp' \
//!               --backend py=http://127.0.0.1:8001/mcp                    # fs_*, py_*
//! snodo gateway --config deploy/gateway.toml --metrics-addr 127.0.0.1:9464
//! ```
//!
//! The flags `serve` has for an HTTP front work here too, through the same code:
//! `--oauth-*`, `--task-store`, `--bus`, and the global `--metrics-addr`,
//! `--log-format`, `--workers`, `--state-key`, `--allow-host`, TLS.

mod config;
mod health;
mod observe;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use snodo::Runtime;
use snodo::http::{HttpConfig, ListenAddr};
use snodo_compose::{McpSource, Mount, MountOptions, Status, Transforms};

use config::Plan;

/// The listen address when neither `--addr` nor the configuration gives one.
const DEFAULT_ADDR: &str = "127.0.0.1:8080";
/// The front revisions when neither `--protocols` nor the configuration gives them.
const DEFAULT_PROTOCOLS: &str = "2026-07-28,2025-11-25,2025-06-18,2025-03-26";
/// How long to wait for the backends' first listings by default.
const DEFAULT_READY_SECS: u64 = 30;
/// How long shutdown waits for the backends' children to be reaped (their 1 s grace
/// between SIGTERM and SIGKILL, and then some).
const REAP_LIMIT: Duration = Duration::from_secs(5);

/// The arguments of `snodo gateway`.
#[derive(clap::Args, Debug)]
pub(crate) struct GatewayArgs {
    /// Address to listen on: HOST:PORT, or unix:PATH for a Unix socket [default:
    /// 127.0.0.1:8080, or `addr` of the configuration's [gateway]].
    #[arg(long)]
    addr: Option<ListenAddr>,
    /// Enabled protocol versions at the front, comma-separated, in preference order
    /// [default: all four, or `protocols` of the configuration's [gateway]].
    #[arg(long, value_delimiter = ',')]
    protocols: Vec<String>,
    /// A TOML file describing the backends (command, args, env, cwd or url, headers,
    /// credentials, revision, namespace, allow/deny, renames, policy, timeouts, pool,
    /// restart); see docs/gateway.md. Combines with --backend and `-- COMMAND`.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// A backend whose components are served as NAME_component (resources
    /// scheme://NAME/…): NAME=URL (Streamable HTTP) or NAME=stdio:'COMMAND ARGS'
    /// (repeatable).
    #[arg(long = "backend", value_name = "NAME=URL|NAME=stdio:CMD")]
    backends: Vec<String>,
    /// How long to wait for each backend's first listing before serving (a backend
    /// still down then is retried in the background) [default: 30].
    #[arg(long)]
    ready_timeout_secs: Option<u64>,
    #[command(flatten)]
    tasks: crate::task_store::TaskStoreArgs,
    #[command(flatten)]
    oauth: crate::oauth::OAuthArgs,
    #[command(flatten)]
    bus: crate::bus::BusArgs,
    /// A stdio server served without a prefix: `snodo gateway -- COMMAND ARGS...`.
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<String>,
}

/// The flags of `snodo` every subcommand shares that the gateway uses.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) state_key: Option<Vec<u8>>,
    pub(crate) config: HttpConfig,
    /// TLS and the Unix socket's mode, as `serve` has them.
    pub(crate) listen: crate::listen::ListenArgs,
    pub(crate) metrics_addr: Option<SocketAddr>,
}

/// What to run: the front's settings and the backends, from the flags and the file.
struct Setup {
    addr: ListenAddr,
    protocols: Vec<String>,
    ready: Duration,
    backends: Vec<Plan>,
}

/// A backend from the command line (`-- CMD`, `--backend`).
fn flag_plan(source: McpSource, transforms: Transforms) -> Plan {
    Plan {
        name: snodo_compose::Source::name(&source).to_owned(),
        source,
        transforms,
        options: MountOptions::default(),
        required: true,
    }
}

/// Combines the flags and the file: a flag wins over the file's `[gateway]`; the
/// backends are the file's, then `--backend`s, then `-- COMMAND`.
fn setup(args: &GatewayArgs) -> Result<Setup, String> {
    let (file, text) = match &args.config {
        Some(path) => {
            let (file, text) = config::load(path)?;
            (Some((path.as_path(), file)), text)
        }
        None => (None, String::new()),
    };
    let mut addr = None;
    let mut protocols = None;
    let mut ready = None;
    let mut backends = Vec::new();
    if let Some((path, file)) = file {
        addr = config::front(path, &text, &file.gateway)?;
        protocols = file.gateway.protocols;
        ready = file.gateway.ready_timeout_secs;
        backends = config::plan(path, &text, file.backend, &|v| std::env::var(v).ok())?;
    }
    for spec in &args.backends {
        let source = McpSource::from_spec(spec)?;
        let ns = snodo_compose::Source::name(&source).to_owned();
        config::check_name(&ns).map_err(|m| format!("--backend {spec:?}: {m}"))?;
        backends.push(flag_plan(source, Transforms::new().namespace(ns)));
    }
    if let Some((program, rest)) = args.command.split_first() {
        let source = McpSource::stdio(program.clone(), program.clone(), rest.iter().cloned());
        backends.push(flag_plan(source, Transforms::new()));
    }
    if backends.is_empty() {
        return Err(
            "nothing to serve: give `-- COMMAND ARGS...`, --backend NAME=TARGET or --config FILE"
                .into(),
        );
    }
    for (i, b) in backends.iter().enumerate() {
        if backends[..i].iter().any(|o| o.name == b.name) {
            return Err(format!(
                "two backends are named {:?}: each needs a name of its own",
                b.name
            ));
        }
    }
    let addr = match args.addr.clone().or(addr) {
        Some(a) => a,
        None => DEFAULT_ADDR.parse().map_err(|e: String| e)?,
    };
    let protocols = if !args.protocols.is_empty() {
        args.protocols.clone()
    } else {
        protocols.unwrap_or_else(|| DEFAULT_PROTOCOLS.split(',').map(str::to_owned).collect())
    };
    let ready = args
        .ready_timeout_secs
        .or(ready)
        .unwrap_or(DEFAULT_READY_SECS);
    Ok(Setup {
        addr,
        protocols,
        ready: Duration::from_secs(ready),
        backends,
    })
}

/// Runs the gateway until SIGTERM or Ctrl-C.
pub(crate) async fn run(args: GatewayArgs, shared: Shared) -> Result<(), String> {
    let setup = setup(&args)?;
    let (series, registry) = observe::Series::new();
    let metrics = match shared.metrics_addr {
        Some(addr) => Some(
            crate::serve_metrics(addr, snodo::metrics::Metrics::with_registry(registry)).await?,
        ),
        None => None,
    };
    // A call to a component of a backend that is down names the backend.
    let outages = snodo_compose::Outages::new();
    let dialects = crate::dialects(&setup.protocols)?;
    // A 2026-07-28-only front tells its listen streams about the backends' list changes
    // and resource updates (initialize-era dialects cannot deliver them: refused).
    let listens = dialects
        .iter()
        .all(|d| d.serves(snodo::protocol::Method::SubscriptionsListen));
    let mut builder = Runtime::builder("snodo-gateway", env!("CARGO_PKG_VERSION"))
        .protocols(dialects)
        .list_changed(listens)
        .resource_subscriptions(listens)
        .declare_all_kinds()
        .layer(outages.clone())
        .logging()
        // Backends' questions reach initialize-era callers as server requests.
        .legacy_server_requests(Duration::from_secs(120));
    if let Some(k) = &shared.state_key {
        builder = builder.request_state_key(k.clone());
    }
    let front = crate::Front {
        tasks: &args.tasks,
        oauth: &args.oauth,
        bus: &args.bus,
        metrics,
        state_key: shared.state_key.as_deref(),
    };
    let (builder, config, protection) = front.apply(builder, shared.config, &setup.addr).await?;
    let front = builder.build().map_err(|e| e.to_string())?;
    let mut reaped = Vec::new();
    let backends: Vec<health::Backend> = setup
        .backends
        .into_iter()
        .map(|b| {
            let name: Arc<str> = b.name.into();
            reaped.push(b.source.reaped());
            let source = observe::Observed::new(b.source, Arc::clone(&name), series.clone());
            health::Backend {
                name,
                required: b.required,
                mount: Mount::with_options(&front, Arc::new(source), b.transforms, b.options)
                    .report_outages(&outages),
            }
        })
        .collect();
    // One deadline for all: the backends start together, in their own tasks.
    let deadline = tokio::time::Instant::now() + setup.ready;
    for b in &backends {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        match b.mount.ready(left).await {
            Status::Up { components, .. } => {
                eprintln!(
                    "snodo gateway: {:?} up with {components} components",
                    b.name
                );
            }
            st => eprintln!(
                "snodo gateway: {:?} not up yet ({st:?}); retrying in the background",
                b.name
            ),
        }
    }
    let health = health::Health::new(backends, series);
    let (server, endpoint) = crate::listen::bind(
        front.clone(),
        &setup.addr,
        &shared.listen,
        config,
        protection.as_ref(),
    )
    .await?;
    let server = health.serve(server);
    println!(
        "snodo gateway: {endpoint} (protocols: {})",
        front.supported_versions().join(", ")
    );
    let served = server.run().await;
    // Unmount before leaving: the backends' connections close and each stdio child's
    // process group gets SIGTERM, then SIGKILL after snodo-compose's 1 s grace. Those
    // watchers are tasks of this runtime, which drops its tasks when `run` returns: wait
    // for every child to be reaped (at most a few seconds), or a grandchild that
    // ignores SIGTERM would outlive us.
    drop(health);
    drop(front);
    let deadline = tokio::time::Instant::now() + REAP_LIMIT;
    for r in reaped {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        if !r.wait(left).await {
            eprintln!("snodo gateway: a backend child was not reaped within {REAP_LIMIT:?}");
            break;
        }
    }
    served.map_err(|e| e.to_string())
}
