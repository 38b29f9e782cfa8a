//! The smallest snodo server: one tool, over HTTP, with the library's default features.
//!
//! Run: `cargo run -p snodo --example echo -- 127.0.0.1:8080`, then POST MCP requests to
//! `http://127.0.0.1:8080/mcp`. It speaks 2026-07-28 and, opted in, 2025-11-25 (the
//! revisions the benchmarks drive). `bench/compare.sh` starts it beside the `snodo
//! fixture --profile echo` of the CLI (the same tool, in a binary that also carries the
//! CLI, the request log, OAuth, the SQL task stores and the client), to tell what a
//! server built on the library pays at start from what the CLI's features add.

use schemars::JsonSchema;
use serde::Deserialize;
use snodo::protocol::{V2025_11_25, V2026_07_28};
use snodo::{Runtime, Tool, ToolResult};

#[derive(Deserialize, JsonSchema)]
struct Echo {
    /// The text to send back.
    text: String,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8080".to_owned());
    let runtime = Runtime::builder("echo-example", "1.0.0")
        .protocols([&V2026_07_28, &V2025_11_25])
        .tool(
            Tool::new("echo")
                .description("Returns its text")
                .handler(|args: Echo| async move { ToolResult::text(args.text) }),
        )
        .build()?;
    snodo::http::serve(runtime, addr.parse()?).await?;
    Ok(())
}
