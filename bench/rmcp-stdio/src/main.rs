//! Measurement-only baseline: rmcp 3.11 (official Rust SDK) over stdio, one tool `echo`.
//! Env: RMCP_BENCH_WORKERS=N tokio worker threads (default: number of CPUs).
use rmcp::{handler::server::wrapper::Parameters, tool, tool_router, ServiceExt};

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct EchoArgs {
    /// Text to echo back
    pub text: String,
}

#[derive(Clone, Default)]
pub struct Bench;

#[tool_router(server_handler)]
impl Bench {
    #[tool(description = "Echo the given text back")]
    async fn echo(&self, Parameters(EchoArgs { text }): Parameters<EchoArgs>) -> String {
        text
    }
}

fn main() -> anyhow::Result<()> {
    let workers: usize = std::env::var("RMCP_BENCH_WORKERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let service = Bench.serve(rmcp::transport::stdio()).await?;
        service.waiting().await?;
        anyhow::Ok(())
    })
}
