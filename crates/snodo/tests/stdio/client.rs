//! A line-level stdio client over an in-memory duplex, and schema checks per message.

use std::time::Duration;

use serde_json::{Value, json};
use snodo::Runtime;
use snodo::stdio::{StdioConfig, StdioError, serve_stream};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf};
use tokio::task::JoinHandle;

use crate::support::{assert_schema, result_definition};

pub const V: &str = "2026-07-28";

/// The client end of a served duplex.
pub struct Client {
    pub write: WriteHalf<DuplexStream>,
    pub read: BufReader<ReadHalf<DuplexStream>>,
    pub server: JoinHandle<Result<(), StdioError>>,
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
            write: cw,
            read: BufReader::new(cr),
            server,
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

    /// A 2026-07-28 request with its `_meta` (capabilities `caps`).
    pub async fn modern(&mut self, id: Value, method: &str, mut params: Value, caps: Value) {
        let meta = params
            .as_object_mut()
            .unwrap()
            .entry("_meta")
            .or_insert_with(|| json!({}));
        meta["io.modelcontextprotocol/protocolVersion"] = json!(V);
        meta["io.modelcontextprotocol/clientCapabilities"] = caps;
        self.send(&json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}))
            .await;
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

    /// The next message (within 5 s).
    pub async fn recv(&mut self) -> Value {
        let line = self
            .next_line(Duration::from_secs(5))
            .await
            .expect("a message within 5 s");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    /// Nothing arrives within `wait`.
    pub async fn silent(&mut self, wait: Duration) {
        if let Some(line) = self.next_line(wait).await {
            panic!("expected silence, got {line}");
        }
    }

    /// Closes the input and waits for the server to end (within 10 s); returns what it
    /// wrote after the close.
    pub async fn finish(mut self) -> Vec<Value> {
        self.write.shutdown().await.unwrap();
        let mut rest = Vec::new();
        while let Some(line) = self.next_line(Duration::from_secs(10)).await {
            rest.push(serde_json::from_str(&line).unwrap());
        }
        let ended = tokio::time::timeout(Duration::from_secs(10), self.server)
            .await
            .expect("the server ends after EOF");
        assert!(ended.unwrap().is_ok());
        rest
    }
}

/// Validates a response (result or error) of `method` in `revision`.
pub fn assert_response(revision: &str, method: &str, m: &Value) {
    if m.get("error").is_some() {
        let def = match revision {
            "2025-06-18" => "JSONRPCError",
            _ => "JSONRPCErrorResponse",
        };
        if m["id"].is_null() {
            // JSON-RPC 2.0 answers an unreadable message with a null id, which the MCP
            // schemas do not model (they make the id optional): check the rest.
            let mut rest = m.clone();
            rest.as_object_mut().unwrap().remove("id");
            if revision != "2025-06-18" {
                assert_schema(revision, def, &rest);
            }
            return;
        }
        assert_schema(revision, def, m);
    } else if m["result"]["resultType"] == "input_required" {
        assert_schema(revision, "InputRequiredResult", &m["result"]);
    } else {
        assert_schema(revision, result_definition(method), &m["result"]);
    }
}

/// Validates a notification by its method.
pub fn assert_notification(revision: &str, n: &Value) {
    let def = match n["method"].as_str() {
        Some("notifications/progress") => "ProgressNotification",
        Some("notifications/message") => "LoggingMessageNotification",
        Some("notifications/cancelled") => "CancelledNotification",
        Some("notifications/subscriptions/acknowledged") => "SubscriptionsAcknowledgedNotification",
        Some("notifications/tools/list_changed") => "ToolListChangedNotification",
        Some("notifications/resources/updated") => "ResourceUpdatedNotification",
        other => panic!("unexpected notification {other:?}"),
    };
    assert_schema(revision, def, n);
}

/// Asserts an error with `code` answering `id`.
pub fn assert_error(m: &Value, id: &Value, code: i64) {
    assert_eq!(&m["id"], id, "{m}");
    assert_eq!(m["error"]["code"], code, "{m}");
}
