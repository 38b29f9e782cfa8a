//! Settings of the stdio (byte-stream) transport.

use std::time::Duration;

/// Settings of one stdio connection. Build with [`StdioConfig::default`] and the setters.
#[derive(Clone, Debug)]
pub struct StdioConfig {
    pub(crate) max_line_bytes: usize,
    pub(crate) max_in_flight: usize,
    pub(crate) outbound_queue: usize,
    pub(crate) outbound_bytes: usize,
    pub(crate) request_timeout: Duration,
    pub(crate) drain_timeout: Duration,
    pub(crate) server_request_timeout: Duration,
    pub(crate) max_listen_streams: usize,
}

impl Default for StdioConfig {
    fn default() -> Self {
        Self {
            // The HTTP transport's default body limit.
            max_line_bytes: 4 * 1024 * 1024,
            max_in_flight: 64,
            outbound_queue: 64,
            outbound_bytes: 16 * 1024 * 1024,
            request_timeout: Duration::from_secs(120),
            drain_timeout: Duration::from_secs(5),
            server_request_timeout: Duration::from_secs(60),
            max_listen_streams: 64,
        }
    }
}

impl StdioConfig {
    /// Sets the longest line (one message) accepted, in bytes; a longer line is answered
    /// with `-32600` and skipped, and the stream goes on.
    #[must_use]
    pub fn max_line_bytes(mut self, n: usize) -> Self {
        self.max_line_bytes = n.max(1);
        self
    }

    /// Sets the most requests executing at once on the connection; beyond, the server
    /// stops reading until one finishes.
    #[must_use]
    pub fn max_in_flight(mut self, n: usize) -> Self {
        self.max_in_flight = n.max(1);
        self
    }

    /// Sets how many messages may wait to be written; when the client stops reading,
    /// the server stops reading too once this many are queued.
    #[must_use]
    pub fn outbound_queue(mut self, n: usize) -> Self {
        self.outbound_queue = n.max(1);
        self
    }

    /// Sets how many bytes of messages may wait to be written (at most `u32::MAX`);
    /// when the client stops reading, the server stops reading requests once they are
    /// spent. A single message larger than this is still written, alone.
    #[must_use]
    pub fn outbound_bytes(mut self, n: usize) -> Self {
        self.outbound_bytes = n.clamp(1, u32::MAX as usize);
        self
    }

    /// Sets the per-request deadline (then `-32603` and the handler is cancelled).
    #[must_use]
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Sets how long the end of input (or a shutdown signal) waits for in-flight
    /// requests before cancelling them.
    #[must_use]
    pub fn drain_timeout(mut self, timeout: Duration) -> Self {
        self.drain_timeout = timeout;
        self
    }

    /// Sets how long an initialize-era server-to-client request (sampling, elicitation,
    /// roots) waits for the client's answer.
    #[must_use]
    pub fn server_request_timeout(mut self, timeout: Duration) -> Self {
        self.server_request_timeout = timeout;
        self
    }

    /// Sets the most `subscriptions/listen` subscriptions open at once.
    #[must_use]
    pub fn max_listen_streams(mut self, n: usize) -> Self {
        self.max_listen_streams = n;
        self
    }

    /// The longest line accepted, in bytes.
    #[must_use]
    pub fn line_limit(&self) -> usize {
        self.max_line_bytes
    }
}
