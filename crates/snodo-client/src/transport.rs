//! What a connector does for the client: send one message, and for a request hand back
//! the stream of messages that belong to it (notifications, server requests, the
//! answer). Dropping that stream abandons the request: HTTP closes the response, stdio
//! sends `notifications/cancelled`.

use std::future::Future;
use std::pin::Pin;

use bytes::Bytes;
use futures_util::stream::BoxStream;
use serde_json::Value;
use snodo::protocol::RequestId;
use tokio::sync::mpsc;

use crate::error::ClientError;

/// A boxed, sendable future.
pub(crate) type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The messages that belong to one request, in arrival order.
pub(crate) type Messages = BoxStream<'static, Result<Message, ClientError>>;

/// One message that belongs to a request.
#[derive(Debug)]
pub(crate) enum Message {
    /// Any message, as a tree.
    Tree(Value),
    /// An answer with a `result` (and no `method`), its result kept as JSON text: a
    /// transport that reads answers without building a tree of the result (stdio).
    Answer(RequestId, Box<serde_json::value::RawValue>),
}

impl Message {
    /// Whether this is a request or a notification (not an answer).
    pub(crate) fn has_method(&self) -> bool {
        matches!(self, Self::Tree(v) if v.get("method").is_some())
    }
}

/// One outgoing message and what a transport may need to know about it.
#[derive(Clone, Debug, Default)]
pub(crate) struct Outgoing {
    /// The serialised JSON-RPC message.
    pub(crate) body: Bytes,
    /// The request's id (requests only).
    pub(crate) id: Option<RequestId>,
    /// `Mcp-Method` (HTTP, 2026-07-28) and the method name (borrowed for a method
    /// snodo knows).
    pub(crate) method: std::borrow::Cow<'static, str>,
    /// `MCP-Protocol-Version` (HTTP), when one goes with this message.
    pub(crate) version: Option<String>,
    /// Whether the 2026-07-28 mirror headers go with this message.
    pub(crate) mirrors: bool,
    /// `Mcp-Name`, already encoded.
    pub(crate) name: Option<String>,
    /// `Mcp-Param-{Name}` headers, already encoded.
    pub(crate) param_headers: Vec<(String, String)>,
    /// The request's progress token, so stdio can route progress to it.
    pub(crate) progress_token: Option<Value>,
}

/// A connector.
pub(crate) trait Transport: Send + Sync + 'static {
    /// Sends a request; the stream yields every message that belongs to it.
    fn request(&self, out: Outgoing) -> BoxFuture<'_, Result<Messages, ClientError>>;

    /// Sends a notification or the answer to a server request.
    fn send(&self, out: Outgoing) -> BoxFuture<'_, Result<(), ClientError>>;

    /// Whether the transport itself tells the server about a request whose stream was
    /// dropped before its answer (stdio does); otherwise an initialize-era client POSTs
    /// `notifications/cancelled` for it.
    fn cancels_abandoned(&self) -> bool {
        false
    }

    /// Whether messages go out with headers (HTTP): `Mcp-Name` and `Mcp-Param-*`
    /// values are worked out only for a transport that sends them.
    fn has_headers(&self) -> bool {
        true
    }

    /// Messages that belong to no request (stdio: server requests, list changes, logs).
    fn unsolicited(&self) -> Option<mpsc::Receiver<Value>> {
        None
    }

    /// Opens the initialize era's standalone stream for server messages that belong to
    /// no request (HTTP: `GET`; a server without one answers 405). They arrive on
    /// [`unsolicited`](Self::unsolicited). Returns once the stream is open (or refused).
    fn listen(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }

    /// Ends the connection (HTTP: `DELETE` of a session; stdio: the child exits).
    fn close(&self) -> BoxFuture<'_, ()>;
}
