//! A child process over stdio, or any byte stream: newline-delimited JSON-RPC.
//!
//! One reader task sorts what the child writes: answers go to the waiting request (by
//! id), progress to the request that owns the token, everything else (server requests,
//! list changes, logs) to the client's unsolicited queue. A request whose message
//! stream is dropped before its answer is cancelled with `notifications/cancelled`.
//!
//! One writer task writes whole lines from a bounded queue, so a caller that gives up
//! never cuts a line in half, and a peer that stops reading its input cannot make the
//! client buffer without bound: a write that makes no progress for the write timeout
//! breaks the connection. Whenever the connection breaks (end of the peer's output, a
//! line over the size limit, a stalled or failed write) every request in flight is
//! answered at once with an error that says why.

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

/// The longest line accepted from the peer, in bytes.
const MAX_LINE: usize = 16 * 1024 * 1024;
/// Whole lines waiting for the writer (callers wait beyond that).
const WRITE_QUEUE: usize = 64;
/// Messages waiting for one request's reader; notifications beyond it are dropped.
const REQUEST_QUEUE: usize = 64;
/// How long a write may make no progress by default before the connection breaks.
pub(crate) const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// What one request's stream receives.
type Item = Result<Value, ClientError>;

#[derive(Default)]
struct Routes {
    requests: HashMap<RequestId, mpsc::Sender<Item>>,
    tokens: HashMap<String, RequestId>,
    /// Why the connection broke, once it has.
    closed: Option<String>,
}

impl Routes {
    /// Breaks the connection: every request in flight gets `why` now.
    fn close(&mut self, why: &str) {
        if self.closed.is_none() {
            self.closed = Some(why.to_owned());
        }
        for (_, tx) in self.requests.drain() {
            // A full queue: dropping the sender ends the stream all the same.
            let _ = tx.try_send(Err(ClientError::Transport(why.to_owned())));
        }
        self.tokens.clear();
    }
}

fn close_routes(routes: &Mutex<Routes>, why: &str) {
    if let Ok(mut g) = routes.lock() {
        g.close(why);
    }
}

/// The byte-stream half the client reads from.
type Reader = BufReader<Box<dyn AsyncRead + Send + Unpin>>;

/// The stdio connector.
pub(crate) struct StdioTransport {
    lines: Mutex<Option<mpsc::Sender<Vec<u8>>>>,
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
    pub(crate) fn spawn(
        command: std::process::Command,
        write_timeout: Duration,
    ) -> Result<Arc<Self>, ClientError> {
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
        Ok(Self::over(stdout, stdin, Some(child), write_timeout))
    }

    /// Speaks on `reader`/`writer` (e.g. one end of a `tokio::io::duplex`).
    pub(crate) fn over(
        reader: impl AsyncRead + Send + Unpin + 'static,
        writer: impl AsyncWrite + Send + Unpin + 'static,
        child: Option<Child>,
        write_timeout: Duration,
    ) -> Arc<Self> {
        let reader: Box<dyn AsyncRead + Send + Unpin> = Box::new(reader);
        let routes = Arc::new(Mutex::new(Routes::default()));
        let (tx, rx) = mpsc::channel(256);
        let (cancel_tx, cancel_rx) = mpsc::unbounded_channel();
        let (lines_tx, lines_rx) = mpsc::channel(WRITE_QUEUE);
        let t = Arc::new(Self {
            lines: Mutex::new(Some(lines_tx)),
            child: tokio::sync::Mutex::new(child),
            routes: routes.clone(),
            unsolicited: Mutex::new(Some(rx)),
            cancel_tx,
        });
        tokio::spawn(write_loop(writer, lines_rx, routes.clone(), write_timeout));
        tokio::spawn(read_loop(BufReader::new(reader), routes, tx));
        tokio::spawn(cancel_loop(Arc::downgrade(&t), cancel_rx));
        t
    }

    fn sender(&self) -> Result<mpsc::Sender<Vec<u8>>, ClientError> {
        let closed = || ClientError::Transport("the connection is closed".into());
        self.lines
            .lock()
            .map_err(|_| closed())?
            .clone()
            .ok_or_else(closed)
    }

    /// Why the connection broke, as an error (or a generic one).
    fn broken(&self) -> ClientError {
        let why = self.routes.lock().ok().and_then(|g| g.closed.clone());
        ClientError::Transport(why.unwrap_or_else(|| "the connection is closed".into()))
    }

    /// Queues one whole line; waits while the queue is full (the writer breaks the
    /// connection when the peer stops reading, which ends the wait).
    async fn write(&self, body: &[u8]) -> Result<(), ClientError> {
        let mut line = Vec::with_capacity(body.len() + 1);
        line.extend_from_slice(body);
        line.push(b'\n');
        self.sender()?.send(line).await.map_err(|_| self.broken())
    }
}

/// Writes queued lines whole; a write that makes no progress for `limit`, or fails,
/// breaks the connection.
async fn write_loop(
    mut w: impl AsyncWrite + Send + Unpin,
    mut lines: mpsc::Receiver<Vec<u8>>,
    routes: Arc<Mutex<Routes>>,
    limit: Duration,
) {
    while let Some(line) = lines.recv().await {
        let r = tokio::time::timeout(limit, async {
            w.write_all(&line).await?;
            w.flush().await
        })
        .await;
        let why = match r {
            Ok(Ok(())) => continue,
            Ok(Err(e)) => format!("cannot write to the peer: {e}"),
            Err(_) => format!(
                "the peer stopped reading its input (a write made no progress for {limit:?})"
            ),
        };
        tracing::warn!(error = %why, "stdio: connection broken");
        close_routes(&routes, &why);
        // Waiting callers fail now; later ones see the closed routes.
        lines.close();
        return;
    }
    // Every sender went (closed): the peer sees the end of its input.
    let _ = w.shutdown().await;
}

/// Writes `notifications/cancelled` for requests abandoned by their caller (best
/// effort: dropped when the write queue is full).
async fn cancel_loop(
    t: std::sync::Weak<StdioTransport>,
    mut rx: mpsc::UnboundedReceiver<RequestId>,
) {
    while let Some(id) = rx.recv().await {
        let Some(t) = t.upgrade() else { return };
        let mut note = message::notification(
            "notifications/cancelled",
            Some(json!({"requestId": id, "reason": "the client abandoned the request"})),
        )
        .to_vec();
        note.push(b'\n');
        if let Ok(tx) = t.sender() {
            let _ = tx.try_send(note);
        }
    }
}

/// One line from the peer, without its `\n`; `Ok(false)` at the end of the stream.
async fn read_line(r: &mut Reader, buf: &mut Vec<u8>) -> std::io::Result<bool> {
    buf.clear();
    loop {
        let avail = r.fill_buf().await?;
        if avail.is_empty() {
            return Ok(!buf.is_empty());
        }
        if let Some(pos) = avail.iter().position(|&b| b == b'\n') {
            if buf.len() + pos > MAX_LINE {
                return Err(too_long());
            }
            buf.extend_from_slice(&avail[..pos]);
            r.consume(pos + 1);
            return Ok(true);
        }
        let n = avail.len();
        if buf.len() + n > MAX_LINE {
            return Err(too_long());
        }
        buf.extend_from_slice(avail);
        r.consume(n);
    }
}

fn too_long() -> std::io::Error {
    std::io::Error::other(format!(
        "the peer wrote a line longer than {} MiB",
        MAX_LINE >> 20
    ))
}

/// Lines in a row that are not JSON-RPC after which the peer is taken as broken.
const GARBAGE_IN_A_ROW: u64 = 10_000;

/// Counts lines that are not JSON-RPC and logs the 1st, 10th, 100th… (a peer that
/// prints to stdout by mistake is served all the same; one that floods it cannot fill
/// the log, and one that writes nothing else breaks the connection).
#[derive(Default)]
struct Garbage(u64, u64);

impl Garbage {
    /// Counts one; an error once [`GARBAGE_IN_A_ROW`] came in a row.
    fn note(&mut self, line: &str) -> Result<(), String> {
        self.1 += 1;
        if self.1 >= GARBAGE_IN_A_ROW {
            return Err(format!(
                "the peer wrote {GARBAGE_IN_A_ROW} lines in a row that are not JSON-RPC"
            ));
        }
        self.0 += 1;
        let mut n = self.0;
        while n % 10 == 0 {
            n /= 10;
        }
        if n == 1 {
            let start: String = line.chars().take(120).collect();
            tracing::warn!(
                lines = self.0,
                line = %start,
                "stdio: the peer wrote a line that is not JSON-RPC (ignored)"
            );
        }
        Ok(())
    }
}

async fn read_loop(mut r: Reader, routes: Arc<Mutex<Routes>>, unsolicited: mpsc::Sender<Value>) {
    let mut buf = Vec::new();
    let mut garbage = Garbage::default();
    let why = loop {
        match read_line(&mut r, &mut buf).await {
            Ok(true) => {}
            Ok(false) => break "the peer closed its output (the process exited?)".to_owned(),
            Err(e) => break format!("cannot read from the peer: {e}"),
        }
        let text = String::from_utf8_lossy(&buf);
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        let v = match serde_json::from_str::<Value>(text) {
            Ok(v @ Value::Object(_)) => v,
            _ => match garbage.note(text) {
                Ok(()) => continue,
                Err(why) => break why,
            },
        };
        garbage.1 = 0;
        let is_answer = v.get("method").is_none();
        match route(&routes, &v) {
            Some(tx) if is_answer => {
                let _ = tx.send(Ok(v)).await;
            }
            Some(tx) => {
                // A notification its caller has not read yet: dropped, not buffered.
                if tx.try_send(Ok(v)).is_err() {
                    tracing::debug!("stdio: a notification dropped (its request's queue is full)");
                }
            }
            None => {
                let _ = unsolicited.send(v).await;
            }
        }
    };
    tracing::debug!(reason = %why, "stdio: connection ended");
    close_routes(&routes, &why);
}

fn route(routes: &Mutex<Routes>, v: &Value) -> Option<mpsc::Sender<Item>> {
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
        if !self.answered && g.closed.is_none() {
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
            let (tx, rx) = mpsc::channel(REQUEST_QUEUE);
            {
                let mut g = self
                    .routes
                    .lock()
                    .map_err(|_| ClientError::Transport("poisoned".into()))?;
                if let Some(why) = &g.closed {
                    return Err(ClientError::Transport(why.clone()));
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
                    match &v {
                        Ok(m) if m.get("method").is_some() => {}
                        _ => p.answered = true,
                    }
                    Some((v, (rx, p)))
                });
            Ok(stream.boxed())
        })
    }

    fn send(&self, out: Outgoing) -> BoxFuture<'_, Result<(), ClientError>> {
        Box::pin(async move { self.write(&out.body).await })
    }

    fn cancels_abandoned(&self) -> bool {
        true
    }

    fn unsolicited(&self) -> Option<mpsc::Receiver<Value>> {
        self.unsolicited.lock().ok()?.take()
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            // End the child's input (once the queue is written), give it a moment to
            // exit, then kill it.
            if let Ok(mut g) = self.lines.lock() {
                g.take();
            }
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
