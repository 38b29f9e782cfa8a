//! One line driver for newline-delimited JSON-RPC (stdio) over any byte stream.

use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

use crate::Request;

/// The client end of a newline-delimited JSON-RPC stream: writes lines, reads lines.
#[derive(Debug)]
pub struct Lines<R, W> {
    /// The server's output, read line by line.
    pub read: BufReader<R>,
    /// The server's input.
    pub write: W,
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Lines<R, W> {
    /// Reads from `read` and writes to `write`.
    pub fn new(read: R, write: W) -> Self {
        Self {
            read: BufReader::new(read),
            write,
        }
    }

    /// Writes raw bytes.
    pub async fn raw(&mut self, bytes: &[u8]) {
        self.write.write_all(bytes).await.unwrap();
    }

    /// Writes one line.
    pub async fn line(&mut self, line: &str) {
        self.raw(format!("{line}\n").as_bytes()).await;
    }

    /// Writes a message as one line.
    pub async fn send(&mut self, message: &Value) {
        self.line(&message.to_string()).await;
    }

    /// Writes a request as one line (its `_meta` as its revision sends it).
    pub async fn request(&mut self, request: &Request) {
        self.line(&request.body()).await;
    }

    /// The next line as written (without its newline), or `None` at EOF or after `wait`.
    pub async fn next_line(&mut self, wait: Duration) -> Option<String> {
        let mut line = String::new();
        let n = tokio::time::timeout(wait, self.read.read_line(&mut line))
            .await
            .ok()?
            .unwrap();
        if n == 0 {
            return None;
        }
        assert!(line.ends_with('\n'), "every message ends its line: {line}");
        line.pop();
        Some(line)
    }

    /// The next message (within `wait`).
    pub async fn recv_within(&mut self, wait: Duration) -> Value {
        let line = self
            .next_line(wait)
            .await
            .unwrap_or_else(|| panic!("a message within {wait:?}"));
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    /// The next message (within 5 s).
    pub async fn recv(&mut self) -> Value {
        self.recv_within(Duration::from_secs(5)).await
    }

    /// Nothing arrives within `wait`.
    pub async fn silent(&mut self, wait: Duration) {
        if let Some(line) = self.next_line(wait).await {
            panic!("expected silence, got {line}");
        }
    }

    /// Closes the input; returns every message written after that, up to EOF (each
    /// within `wait` of the one before).
    pub async fn close(&mut self, wait: Duration) -> Vec<Value> {
        self.write.shutdown().await.unwrap();
        let mut rest = Vec::new();
        while let Some(line) = self.next_line(wait).await {
            rest.push(serde_json::from_str(&line).unwrap());
        }
        rest
    }
}
