/// No URI.
#[snodo::resource(name = "file")]
async fn file() -> String {
    String::new()
}

fn main() {}
