/// Misspelt hint.
#[snodo::tool(readonly)]
async fn echo(text: String) -> String {
    text
}

fn main() {}
