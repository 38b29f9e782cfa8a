//! Mounting the MCP endpoint in an existing axum application, next to other routes.
//!
//! Run: `cargo run -p snodo --example axum`, then POST MCP requests to
//! `http://127.0.0.1:3000/mcp` (`GET /` answers a plain page).

use axum::Router;
use axum::routing::get;
use schemars::JsonSchema;
use serde::Deserialize;
use snodo::http::McpService;
use snodo::{Runtime, Tool, ToolResult};

#[derive(Deserialize, JsonSchema)]
struct Add {
    /// First term.
    a: i64,
    /// Second term.
    b: i64,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runtime = Runtime::builder("axum-example", "1.0.0")
        .tool(
            Tool::new("add")
                .description("Adds two integers")
                .handler(|x: Add| async move { ToolResult::text((x.a + x.b).to_string()) }),
        )
        .build()?;
    let app = Router::new()
        .route(
            "/",
            get(|| async { "an axum application that also speaks MCP at /mcp" }),
        )
        .route_service("/mcp", McpService::new(runtime));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
    println!("listening on http://{}/mcp", listener.local_addr()?);
    axum::serve(listener, app).await?;
    Ok(())
}
