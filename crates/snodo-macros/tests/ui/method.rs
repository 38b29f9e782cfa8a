struct Server;

impl Server {
    /// A method.
    #[snodo::tool]
    async fn echo(&self, text: String) -> String {
        text
    }
}

fn main() {}
