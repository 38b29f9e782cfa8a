/// Returns a number, which is no tool result.
#[snodo::tool]
async fn count(text: String) -> usize {
    text.len()
}

fn main() {}
