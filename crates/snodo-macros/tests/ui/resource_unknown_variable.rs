/// The parameter is not a template variable.
#[snodo::resource(uri = "file:///{+path}")]
async fn file(name: String) -> String {
    name
}

fn main() {}
