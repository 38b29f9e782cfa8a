//! A stdio client over an in-memory duplex: the shared line driver
//! (`snodo_testkit::Lines`) with the server task behind it, and schema checks per message.

use std::ops::{Deref, DerefMut};
use std::time::Duration;

use serde_json::{Value, json};
use snodo::Runtime;
use snodo::stdio::{StdioConfig, StdioError, serve_stream};
use snodo_testkit::{Lines, R2026_07_28};
use tokio::io::{DuplexStream, ReadHalf, WriteHalf};
use tokio::task::JoinHandle;

pub use snodo_testkit::errors::assert_error;
pub use snodo_testkit::schema::{assert_notification, assert_response};

pub const V: &str = "2026-07-28";

/// The client end of a served duplex; reads and writes lines through [`Lines`].
pub struct Client {
    pub lines: Lines<ReadHalf<DuplexStream>, WriteHalf<DuplexStream>>,
    pub server: JoinHandle<Result<(), StdioError>>,
}

impl Deref for Client {
    type Target = Lines<ReadHalf<DuplexStream>, WriteHalf<DuplexStream>>;

    fn deref(&self) -> &Self::Target {
        &self.lines
    }
}

impl DerefMut for Client {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.lines
    }
}

impl Client {
    pub fn start(runtime: Runtime) -> Self {
        Self::start_with(runtime, StdioConfig::default(), 1 << 16)
    }

    /// Serves `runtime` on a duplex with `buffer` bytes of pipe capacity each way.
    pub fn start_with(runtime: Runtime, config: StdioConfig, buffer: usize) -> Self {
        let (client, server) = tokio::io::duplex(buffer);
        let (sr, sw) = tokio::io::split(server);
        let server = tokio::spawn(serve_stream(runtime, sr, sw, config));
        let (cr, cw) = tokio::io::split(client);
        Self {
            lines: Lines::new(cr, cw),
            server,
        }
    }

    /// A 2026-07-28 request with its `_meta` (capabilities `caps`).
    pub async fn modern(&mut self, id: Value, method: &str, params: Value, caps: Value) {
        let request = R2026_07_28
            .request(method)
            .id(id)
            .params(params)
            .capabilities(caps);
        self.lines.request(&request).await;
    }

    /// A request without `_meta`.
    pub async fn request(&mut self, id: Value, method: &str, params: Value) {
        self.send(&json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}))
            .await;
    }

    pub async fn cancel(&mut self, id: Value) {
        self.send(&json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":id,"reason":"test"}}))
            .await;
    }

    /// Closes the input and waits for the server to end (within 10 s); returns what it
    /// wrote after the close.
    pub async fn finish(mut self) -> Vec<Value> {
        let rest = self.lines.close(Duration::from_secs(10)).await;
        let ended = tokio::time::timeout(Duration::from_secs(10), self.server)
            .await
            .expect("the server ends after EOF");
        assert!(ended.unwrap().is_ok());
        rest
    }
}
