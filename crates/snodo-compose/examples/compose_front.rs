//! A front snodo serving one local tool (`local_echo`) beside backends mounted under
//! their names, on every revision, for interop/compose/run.sh:
//!
//! ```sh
//! cargo run -p snodo-compose --example compose_front -- 127.0.0.1:8080 \
//!     ev=stdio:npx -y @modelcontextprotocol/server-everything py=http://127.0.0.1:8001/mcp
//! ```
//!
//! Prints `ready` on stdout once every backend was listed once (mounted or down), then
//! serves `/mcp` until SIGTERM or Ctrl-C.

use std::time::Duration;

use snodo::protocol::ALL;
use snodo::{Runtime, Tool};
use snodo_compose::{McpSource, Mount, Transforms};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Echo {
    text: String,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let mut args = std::env::args().skip(1);
    let addr: std::net::SocketAddr = args
        .next()
        .ok_or("usage: compose_front ADDR NAME=TARGET...")?
        .parse()?;
    let front = Runtime::builder("snodo-compose-front", "1")
        .protocols(ALL.iter().copied())
        .declare_all_kinds()
        .logging()
        // Backends' questions reach initialize-era callers as server requests.
        .legacy_server_requests(Duration::from_secs(120))
        .tool(
            Tool::new("local_echo")
                .description("Echoes its text (a tool of the front itself)")
                .handler(|a: Echo| async move { format!("local: {}", a.text) }),
        )
        .build()?;
    let mut mounts = Vec::new();
    for spec in args {
        let source = McpSource::from_spec(&spec)?;
        let ns = source_name(&spec);
        mounts.push(Mount::new(&front, source, Transforms::new().namespace(ns)));
    }
    for m in &mounts {
        let st = m.ready(Duration::from_secs(60)).await;
        eprintln!("{m:?}: {st:?}");
    }
    let server = snodo::http::Server::bind(front, addr, snodo::http::HttpConfig::default()).await?;
    println!("ready");
    server.run_until(snodo::http::shutdown_signal()).await?;
    Ok(())
}

fn source_name(spec: &str) -> String {
    spec.split_once('=').map_or(spec, |(n, _)| n).to_owned()
}
