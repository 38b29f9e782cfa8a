//! HTTP transport settings.

use std::time::Duration;

/// Host names that loopback servers accept by default.
pub const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// Settings of the Streamable HTTP transport. Defaults are safe for a server bound to
/// loopback: Host and Origin must name a loopback host.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct HttpConfig {
    /// Host names (without port) the `Host` header may carry. `None` disables the check
    /// (for servers behind a proxy that rewrites Host).
    pub allowed_hosts: Option<Vec<String>>,
    /// Hosts (without port) a browser `Origin` may name; requests without `Origin` are
    /// not browser requests and are allowed.
    pub allowed_origins: Vec<String>,
    /// Largest request body accepted, in bytes (413 beyond).
    pub max_body_bytes: usize,
    /// Interval of SSE keep-alive comments on streamed responses.
    pub keep_alive: Duration,
}

impl Default for HttpConfig {
    fn default() -> Self {
        let loopback: Vec<String> = LOOPBACK_HOSTS.iter().map(|h| (*h).to_owned()).collect();
        Self {
            allowed_hosts: Some(loopback.clone()),
            allowed_origins: loopback,
            max_body_bytes: 4 * 1024 * 1024,
            keep_alive: Duration::from_secs(15),
        }
    }
}

impl HttpConfig {
    /// Allows these host names in `Host` and `Origin` in addition to nothing else:
    /// replaces both allow-lists.
    #[must_use]
    pub fn allow_hosts<I: IntoIterator<Item = S>, S: Into<String>>(mut self, hosts: I) -> Self {
        let hosts: Vec<String> = hosts.into_iter().map(Into::into).collect();
        self.allowed_origins.clone_from(&hosts);
        self.allowed_hosts = Some(hosts);
        self
    }

    /// Turns the `Host` check off (Origin is still checked).
    #[must_use]
    pub fn any_host(mut self) -> Self {
        self.allowed_hosts = None;
        self
    }

    /// Sets the body limit.
    #[must_use]
    pub fn max_body_bytes(mut self, n: usize) -> Self {
        self.max_body_bytes = n;
        self
    }
}
