/// Prompt arguments are strings.
#[snodo::prompt]
async fn review(
    /// How many lines.
    lines: u32,
) -> String {
    lines.to_string()
}

fn main() {}
