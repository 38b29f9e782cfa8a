#[derive(Clone)]
struct Db;

#[derive(Clone)]
struct Cache;

/// One state per handler.
#[snodo::resource(uri = "note://{id}")]
async fn note(_db: snodo::State<Db>, _cache: snodo::State<Cache>, id: String) -> String {
    id
}

fn main() {}
