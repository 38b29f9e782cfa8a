#[derive(serde::Deserialize, schemars::JsonSchema)]
struct AddArgs {
    a: i64,
}

/// An #[args] parameter and another value.
#[snodo::tool]
async fn add(#[args] args: AddArgs, b: i64) -> String {
    (args.a + b).to_string()
}

fn main() {}
