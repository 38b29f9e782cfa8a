/// An undocumented argument.
#[snodo::prompt]
async fn review(code: String) -> String {
    code
}

fn main() {}
