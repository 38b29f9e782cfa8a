/// Not async.
#[snodo::tool]
fn echo(text: String) -> String {
    text
}

fn main() {}
