/// A prompt's arguments are named one by one.
#[snodo::prompt]
async fn review(#[args] args: std::collections::HashMap<String, String>) -> String {
    format!("{args:?}")
}

fn main() {}
