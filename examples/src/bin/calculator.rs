//! rmcp's README tool example (a calculator with one `add` tool, served on stdio),
//! written with snodo's macros; docs/authoring.md compares the two line by line.

#[snodo::tool(description = "Add two numbers")]
async fn add(a: i32, b: i32) -> String {
    (a + b).to_string()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runtime = snodo::Runtime::builder("calculator", "1.0.0")
        .tool(add::tool())
        .build()?;
    snodo::stdio::serve(runtime).await?;
    Ok(())
}
