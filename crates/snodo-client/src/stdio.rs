//! A child process over stdio, or any byte stream: newline-delimited JSON-RPC.
//!
//! One reader task sorts what the child writes: answers go to the waiting request (by
//! id), progress to the request that owns the token, everything else (server requests,
//! list changes, logs) to the client's unsolicited queue. A request whose message
//! stream is dropped before its answer is cancelled with `notifications/cancelled`.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt as _;
use serde_json::{Value, json};
use snodo::protocol::RequestId;
use tokio::io::{AsyncBufReadExt as _, AsyncRead, AsyncWrite, AsyncWriteExt as _, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

use crate::error::ClientError;
use crate::message;
use crate::transport::{BoxFuture, Messages, Outgoing, Transport};

/// The longest line accepted from the child, in bytes.
const MAX_LINE: usize = 16 * 1024 * 1024;

#[derive(Default)]
struct Routes {
    requests: HashMap<RequestId, mpsc::Sender<Value>>,
    tokens: HashMap<String, RequestId>,
    closed: bool,
}

/// The byte-stream half the client writes to.
type Writer = Box<dyn AsyncWrite + Send + Unpin>;
/// The byte-stream half the client reads from.
type Reader = BufReader<Box<dyn AsyncRead + Send + Unpin>>;

/// The stdio connector.
pub(crate) struct StdioTransport {
    stdin: tokio::sync::Mutex<Option<Writer>>,
    child: tokio::sync::Mutex<Option<Child>>,
    routes: Arc<Mutex<Routes>>,
    unsolicited: Mutex<Option<mpsc::Receiver<Value>>>,
    cancel_tx: mpsc::UnboundedSender<RequestId>,
}

fn token_key(v: &Value) -> String {
    v.to_string()
}

impl StdioTransport {
    /// Starts `command` with piped stdin/stdout; its stderr is inherited.
    pub(crate) fn spawn(command: std::process::Command) -> Result<Arc<Self>, ClientError> {
        let program = command.get_program().to_owned();
        let mut child = Command::from(command)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| ClientError::Transport(format!("cannot start {program:?}: {e}")))?;
        let stdin = child
            .stdin
            .take()
            .ok_or_else(|| ClientError::Transport("the child has no stdin".into()))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| ClientError::Transport("the child has no stdout".into()))?;
        Ok(Self::over(stdout, stdin, Some(child)))
    }

    /// Speaks on `reader`/`writer` (e.g. one end of a `tokio::io::duplex`).
    pub(crate) fn over(
        reader: impl AsyncRead + Send + Unpin + 'static,
        writer: impl AsyncWrite + Send + Unpin + 'static,
        child: Option<Child>,
    ) -> Arc<Self> {
        let reader: Box<dyn AsyncRead + Send + Unpin> = Box::new(reader);
        let writer: Writer = Box::new(writer);
        let routes = Arc::new(Mutex::new(Routes::default()));
        let (tx, rx) = mpsc::channel(256);
        let (cancel_tx, cancel_rx) = mpsc::unbounded_channel();
        let t = Arc::new(Self {
            stdin: tokio::sync::Mutex::new(Some(writer)),
            child: tokio::sync::Mutex::new(child),
            routes: routes.clone(),
            unsolicited: Mutex::new(Some(rx)),
            cancel_tx,
        });
        tokio::spawn(read_loop(BufReader::new(reader), routes, tx));
        tokio::spawn(cancel_loop(Arc::downgrade(&t), cancel_rx));
        t
    }

    async fn write(&self, body: &[u8]) -> Result<(), ClientError> {
        let mut guard = self.stdin.lock().await;
        let stdin = guard
            .as_mut()
            .ok_or_else(|| ClientError::Transport("the child's stdin is closed".into()))?;
        let mut line = Vec::with_capacity(body.len() + 1);
        line.extend_from_slice(body);
        line.push(b'\n');
        stdin
            .write_all(&line)
            .await
            .map_err(ClientError::transport)?;
        stdin.flush().await.map_err(ClientError::transport)
    }
}

/// Writes `notifications/cancelled` for requests abandoned by their caller.
async fn cancel_loop(
    t: std::sync::Weak<StdioTransport>,
    mut rx: mpsc::UnboundedReceiver<RequestId>,
) {
    while let Some(id) = rx.recv().await {
        let Some(t) = t.upgrade() else { return };
        let note = message::notification(
            "notifications/cancelled",
            Some(json!({"requestId": id, "reason": "the client abandoned the request"})),
        );
        let _ = t.write(&note).await;
    }
}

async fn read_line(r: &mut Reader, buf: &mut Vec<u8>) -> std::io::Result<bool> {
    buf.clear();
    loop {
        let avail = r.fill_buf().await?;
        if avail.is_empty() {
            return Ok(!buf.is_empty());
        }
        if let Some(pos) = avail.iter().position(|&b| b == b'\n') {
            buf.extend_from_slice(&avail[..pos]);
            r.consume(pos + 1);
            return Ok(true);
        }
        let n = avail.len();
        buf.extend_from_slice(avail);
        r.consume(n);
        if buf.len() > MAX_LINE {
            return Err(std::io::Error::other(
                "a line from the child exceeds the size limit",
            ));
        }
    }
}

async fn read_loop(mut r: Reader, routes: Arc<Mutex<Routes>>, unsolicited: mpsc::Sender<Value>) {
    let mut buf = Vec::new();
    while let Ok(true) = read_line(&mut r, &mut buf).await {
        let text = String::from_utf8_lossy(&buf);
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        let Ok(v) = serde_json::from_str::<Value>(text) else {
            tracing::debug!("stdio: ignoring a line that is not JSON");
            continue;
        };
        let target = route(&routes, &v);
        match target {
            Some(tx) => {
                let _ = tx.send(v).await;
            }
            None => {
                let _ = unsolicited.send(v).await;
            }
        }
    }
    if let Ok(mut g) = routes.lock() {
        g.closed = true;
        g.requests.clear();
        g.tokens.clear();
    }
}

fn route(routes: &Mutex<Routes>, v: &Value) -> Option<mpsc::Sender<Value>> {
    let mut g = routes.lock().ok()?;
    if v.get("method").is_none() {
        let id = serde_json::from_value::<RequestId>(v.get("id")?.clone()).ok()?;
        let tx = g.requests.remove(&id);
        g.tokens.retain(|_, owner| *owner != id);
        return tx;
    }
    if v.get("method").and_then(Value::as_str) == Some("notifications/progress") {
        let token = v.pointer("/params/progressToken")?;
        let owner = g.tokens.get(&token_key(token))?.clone();
        return g.requests.get(&owner).cloned();
    }
    None
}

/// Removes a request's routes when its stream goes; cancels it if unanswered.
struct Pending {
    id: RequestId,
    routes: Arc<Mutex<Routes>>,
    cancel: mpsc::UnboundedSender<RequestId>,
    answered: bool,
}

impl Drop for Pending {
    fn drop(&mut self) {
        let Ok(mut g) = self.routes.lock() else {
            return;
        };
        g.requests.remove(&self.id);
        let id = self.id.clone();
        g.tokens.retain(|_, owner| *owner != id);
        if !self.answered && !g.closed {
            let _ = self.cancel.send(id);
        }
    }
}

impl Transport for StdioTransport {
    fn request(&self, out: Outgoing) -> BoxFuture<'_, Result<Messages, ClientError>> {
        Box::pin(async move {
            let id = out
                .id
                .clone()
                .ok_or_else(|| ClientError::Transport("a request without an id".into()))?;
            let (tx, rx) = mpsc::channel(64);
            {
                let mut g = self
                    .routes
                    .lock()
                    .map_err(|_| ClientError::Transport("poisoned".into()))?;
                if g.closed {
                    return Err(ClientError::Transport(
                        "the child process has exited".into(),
                    ));
                }
                g.requests.insert(id.clone(), tx);
                if let Some(t) = &out.progress_token {
                    g.tokens.insert(token_key(t), id.clone());
                }
            }
            let pending = Pending {
                id: id.clone(),
                routes: self.routes.clone(),
                cancel: self.cancel_tx.clone(),
                answered: false,
            };
            self.write(&out.body).await?;
            let stream =
                futures_util::stream::unfold((rx, pending), |(mut rx, mut p)| async move {
                    if p.answered {
                        return None;
                    }
                    let v = rx.recv().await?;
                    if v.get("method").is_none() {
                        p.answered = true;
                    }
                    Some((Ok(v), (rx, p)))
                });
            Ok(stream.boxed())
        })
    }

    fn send(&self, out: Outgoing) -> BoxFuture<'_, Result<(), ClientError>> {
        Box::pin(async move { self.write(&out.body).await })
    }

    fn unsolicited(&self) -> Option<mpsc::Receiver<Value>> {
        self.unsolicited.lock().ok()?.take()
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            // Close stdin, give the child a moment to exit, then kill it.
            drop(self.stdin.lock().await.take());
            let Some(mut child) = self.child.lock().await.take() else {
                return;
            };
            if tokio::time::timeout(Duration::from_secs(2), child.wait())
                .await
                .is_err()
            {
                let _ = child.kill().await;
            }
        })
    }
}
