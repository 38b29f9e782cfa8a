//! Serves the five-tool server written with the macros at http://127.0.0.1:8080/mcp.

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runtime = snodo_examples::macros::runtime()?;
    snodo::http::serve(runtime, "127.0.0.1:8080".parse()?).await?;
    Ok(())
}
