//! Serves the middleware example (audit log, deny-list, result cache) at
//! http://127.0.0.1:8080/mcp; the audit events go to stderr.

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .init();
    let runtime = snodo_examples::middleware::runtime()?;
    snodo::http::serve(runtime, "127.0.0.1:8080".parse()?).await?;
    Ok(())
}
