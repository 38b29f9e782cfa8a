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
//! breaks the connection. Under load the writer takes every queued line at once and
//! writes them with one `write` (small lines are copied once, into its buffer; a large
//! one goes out as it is). Whenever the connection breaks (end of the peer's output, a
//! line over the size limit, a stalled or failed write) every request in flight is
//! answered at once with an error that says why.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt as _;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use snodo::protocol::RequestId;
use tokio::io::{AsyncBufReadExt as _, AsyncRead, AsyncWrite, AsyncWriteExt as _, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

use crate::error::ClientError;
use crate::message;
use crate::stall::Stalling;
use crate::transport::{BoxFuture, Message, Messages, Outgoing, Transport};

/// The longest line accepted from the peer, in bytes.
const MAX_LINE: usize = 16 * 1024 * 1024;
/// Whole lines waiting for the writer (callers wait beyond that).
const WRITE_QUEUE: usize = 64;
/// Queued lines the writer gathers into one write, at most; and the bytes, at most
/// (a line longer than that is written on its own, not copied).
const WRITE_BATCH: usize = 64;
const COALESCE_BYTES: usize = 64 * 1024;
/// Messages waiting for one request's reader; notifications beyond it are dropped.
const REQUEST_QUEUE: usize = 64;
/// How long a write may make no progress by default before the connection breaks.
pub(crate) const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// What one request's stream receives.
type Item = Result<Message, ClientError>;

/// Where one request's messages go.
struct Route {
    tx: mpsc::Sender<Item>,
    /// Its progress token's key in [`Routes::tokens`], if it has one.
    token: Option<String>,
}

#[derive(Default)]
struct Routes {
    requests: HashMap<RequestId, Route>,
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
        for (_, route) in self.requests.drain() {
            // A full queue: dropping the sender ends the stream all the same.
            let _ = route
                .tx
                .try_send(Err(ClientError::Transport(why.to_owned())));
        }
        self.tokens.clear();
    }

    /// Removes a request's route and its progress token's.
    fn remove(&mut self, id: &RequestId) -> Option<mpsc::Sender<Item>> {
        let route = self.requests.remove(id)?;
        if let Some(t) = &route.token {
            self.tokens.remove(t);
        }
        Some(route.tx)
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
    lines: Mutex<Option<mpsc::Sender<Bytes>>>,
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

    fn sender(&self) -> Result<mpsc::Sender<Bytes>, ClientError> {
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

    /// Queues one message (the writer ends its line); waits while the queue is full
    /// (the writer breaks the connection when the peer stops reading, which ends the
    /// wait).
    async fn write(&self, body: Bytes) -> Result<(), ClientError> {
        self.sender()?.send(body).await.map_err(|_| self.broken())
    }
}

/// Writes queued messages as whole lines, every one queued at the time in one write;
/// a write that makes no progress for `limit` (however long the batch takes while the
/// peer reads), or fails, breaks the connection.
async fn write_loop(
    w: impl AsyncWrite + Send + Unpin,
    mut lines: mpsc::Receiver<Bytes>,
    routes: Arc<Mutex<Routes>>,
    limit: Duration,
) {
    let mut w = Stalling::new(w, limit);
    let mut batch = Vec::with_capacity(WRITE_BATCH);
    let mut buf = Vec::new();
    while lines.recv_many(&mut batch, WRITE_BATCH).await > 0 {
        let why = match write_lines(&mut w, &mut batch, &mut buf).await {
            Ok(()) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => format!(
                "the peer stopped reading its input (a write made no progress for {limit:?})"
            ),
            Err(e) => format!("cannot write to the peer: {e}"),
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

/// Writes `batch` as lines: small ones gathered in `buf` and written together, one
/// longer than [`COALESCE_BYTES`] written from its own bytes (after what precedes it).
async fn write_lines(
    w: &mut (impl AsyncWrite + Unpin),
    batch: &mut Vec<Bytes>,
    buf: &mut Vec<u8>,
) -> std::io::Result<()> {
    buf.clear();
    for body in batch.drain(..) {
        if body.len() >= COALESCE_BYTES {
            if !buf.is_empty() {
                w.write_all(buf).await?;
                buf.clear();
            }
            w.write_all(&body).await?;
        } else {
            if buf.len() + body.len() >= COALESCE_BYTES {
                w.write_all(buf).await?;
                buf.clear();
            }
            buf.extend_from_slice(&body);
        }
        buf.push(b'\n');
    }
    if !buf.is_empty() {
        w.write_all(buf).await?;
        buf.clear();
    }
    w.flush().await
}

/// Writes `notifications/cancelled` for requests abandoned by their caller (best
/// effort: dropped when the write queue is full).
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
        let v = match parse_line(&buf) {
            Line::Answer(id, result) => {
                garbage.1 = 0;
                let tx = routes.lock().ok().and_then(|mut g| g.remove(&id));
                if let Some(tx) = tx {
                    let _ = tx.send(Ok(Message::Answer(id, result))).await;
                }
                continue;
            }
            Line::Message(v) => v,
            Line::Blank => continue,
            Line::Garbage(text) => match garbage.note(&text) {
                Ok(()) => continue,
                Err(why) => break why,
            },
        };
        garbage.1 = 0;
        let is_answer = v.get("method").is_none();
        match route(&routes, &v) {
            Some(tx) if is_answer => {
                let _ = tx.send(Ok(Message::Tree(v))).await;
            }
            Some(tx) => {
                // A notification its caller has not read yet: dropped, not buffered.
                // The queue's last slot is the answer's: this loop is its only sender,
                // so the answer's send never waits on a caller that reads slowly (a
                // call driven by a front request stuck on a slow client), and the
                // other calls' answers never wait behind it.
                if tx.capacity() <= 1 || tx.try_send(Ok(Message::Tree(v))).is_err() {
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

/// One line from the peer, read.
enum Line {
    /// An answer with a `result` (no `method`) and an id a request may have: its
    /// result kept as JSON text.
    Answer(RequestId, Box<RawValue>),
    /// A JSON object.
    Message(Value),
    /// Only whitespace.
    Blank,
    /// Anything else, as text (for the log).
    Garbage(String),
}

/// Parses a line straight from its bytes; only a line that does not parse so is read
/// as (lossy) text, trimmed, and parsed again — what is accepted stays the same.
///
/// The line is checked as UTF-8 once, whole, and parsed as text: parsed from bytes,
/// each string in it would be checked on its own (a call per string). An answer
/// ([`Envelope`]) is read without a tree of its result.
fn parse_line(buf: &[u8]) -> Line {
    if let Ok(text) = std::str::from_utf8(buf) {
        if let Some(answer) = Envelope::answer(text) {
            return answer;
        }
        if let Ok(v @ Value::Object(_)) = serde_json::from_str::<Value>(text) {
            return Line::Message(v);
        }
    }
    let text = String::from_utf8_lossy(buf);
    let text = text.trim();
    if text.is_empty() {
        return Line::Blank;
    }
    match serde_json::from_str::<Value>(text) {
        Ok(v @ Value::Object(_)) => Line::Message(v),
        _ => Line::Garbage(text.to_owned()),
    }
}

/// The members of a message that tell an answer from the rest, each kept as the JSON
/// text it is (checked as JSON, not built into a tree); other members are skipped.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    /// Whether a `method` member is there (`null` too).
    #[serde(default, deserialize_with = "present")]
    method: bool,
    #[serde(borrow)]
    result: Option<&'a RawValue>,
}

/// A member that is there, whatever its value.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    serde::de::IgnoredAny::deserialize(d).map(|_| true)
}

impl Envelope<'_> {
    /// `text` as [`Line::Answer`] when it is an object that has a `result`, no
    /// `method` and an id [`RequestId`] reads (what [`Incoming::classify`] takes for a
    /// request's answer, read the same way); `None` for anything else, which is then
    /// read as a tree (a duplicate member, too: the tree keeps the last one).
    ///
    /// [`Incoming::classify`]: crate::message::Incoming::classify
    fn answer(text: &str) -> Option<Line> {
        // A struct also reads from an array: only an object is a message.
        if !text.trim_start().starts_with('{') {
            return None;
        }
        let e: Envelope<'_> = serde_json::from_str(text).ok()?;
        if e.method {
            return None;
        }
        let result = e.result?;
        let id = crate::message::request_id(&serde_json::from_str(e.id?.get()).ok()?)?;
        Some(Line::Answer(id, result.to_owned()))
    }
}

fn route(routes: &Mutex<Routes>, v: &Value) -> Option<mpsc::Sender<Item>> {
    let method = v.get("method");
    if method.is_none() {
        // Read from the tree in place (no copy of the id).
        let id = crate::message::request_id(v.get("id")?)?;
        return routes.lock().ok()?.remove(&id);
    }
    if method.and_then(Value::as_str) == Some("notifications/progress") {
        let key = token_key(v.pointer("/params/progressToken")?);
        let g = routes.lock().ok()?;
        let owner = g.tokens.get(&key)?;
        return g.requests.get(owner).map(|r| r.tx.clone());
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
        g.remove(&self.id);
        if !self.answered && g.closed.is_none() {
            let _ = self.cancel.send(self.id.clone());
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
                let token = out.progress_token.as_ref().map(token_key);
                if let Some(t) = &token {
                    g.tokens.insert(t.clone(), id.clone());
                }
                g.requests.insert(id.clone(), Route { tx, token });
            }
            let pending = Pending {
                id: id.clone(),
                routes: self.routes.clone(),
                cancel: self.cancel_tx.clone(),
                answered: false,
            };
            self.write(out.body).await?;
            let stream =
                futures_util::stream::unfold((rx, pending), |(mut rx, mut p)| async move {
                    if p.answered {
                        return None;
                    }
                    let v = rx.recv().await?;
                    match &v {
                        Ok(m) if m.has_method() => {}
                        _ => p.answered = true,
                    }
                    Some((v, (rx, p)))
                });
            Ok(stream.boxed())
        })
    }

    fn send(&self, out: Outgoing) -> BoxFuture<'_, Result<(), ClientError>> {
        Box::pin(async move { self.write(out.body).await })
    }

    fn cancels_abandoned(&self) -> bool {
        true
    }

    fn has_headers(&self) -> bool {
        false
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_read_as_before() {
        let msg = |b: &[u8]| match parse_line(b) {
            Line::Message(v) => v,
            Line::Answer(id, r) => {
                json!({"id": id, "result": serde_json::from_str::<Value>(r.get()).unwrap_or_default()})
            }
            Line::Blank => panic!("blank: {b:?}"),
            Line::Garbage(t) => panic!("garbage: {t}"),
        };
        assert_eq!(msg(br#"{"id":1}"#), json!({"id": 1}));
        // Surrounding whitespace, a CR of a CRLF, Unicode spaces (trimmed as text).
        assert_eq!(msg(b"  {\"id\":1}\r"), json!({"id": 1}));
        assert_eq!(msg("\u{a0}{\"id\":2}\u{2003}".as_bytes()), json!({"id": 2}));
        // Invalid UTF-8 inside a string: read lossily, as before.
        assert_eq!(msg(b"{\"t\":\"a\xffb\"}"), json!({"t": "a\u{fffd}b"}));
        assert!(matches!(parse_line(b" \t\r"), Line::Blank));
        assert!(matches!(parse_line(b""), Line::Blank));
        for bad in [&b"not json"[..], b"[1,2]", b"3", b"\xff\xfe"] {
            assert!(matches!(parse_line(bad), Line::Garbage(_)), "{bad:?}");
        }
    }

    #[test]
    fn answers_keep_their_result_as_text_and_everything_else_is_a_tree() {
        let answer = |b: &str| match parse_line(b.as_bytes()) {
            Line::Answer(id, r) => Some((id, r.get().to_owned())),
            _ => None,
        };
        let r = r#"{"content":[{"type":"text","text":"a\"b"}],"isError":false}"#;
        assert_eq!(
            answer(&format!(r#"{{"jsonrpc":"2.0","id":7,"result":{r}}}"#)),
            Some((RequestId::Number(7), r.to_owned()))
        );
        assert_eq!(
            answer(&format!(r#" {{"result":{r},"id":"x"}} "#)),
            Some((RequestId::String("x".into()), r.to_owned()))
        );
        // The result wins over an error, as `Incoming::classify` has it.
        assert!(answer(r#"{"id":1,"error":{"code":1,"message":"m"},"result":{}}"#).is_some());
        // Not answers with a result: read as trees (as before).
        for other in [
            r#"{"id":1,"method":"ping"}"#,
            r#"{"id":1,"method":null,"result":{}}"#,
            r#"{"id":1,"result":null}"#,
            r#"{"id":null,"result":{}}"#,
            r#"{"id":1.5,"result":{}}"#,
            r#"{"result":{}}"#,
            r#"{"id":1,"error":{"code":1,"message":"m"}}"#,
            r#"{"id":1,"result":{},"result":{"a":1}}"#,
        ] {
            assert!(answer(other).is_none(), "{other}");
            assert!(
                matches!(parse_line(other.as_bytes()), Line::Message(_)),
                "{other}"
            );
        }
        // An array is not a message, whatever a struct reads from it.
        assert!(matches!(parse_line(br#"[1,null,{}]"#), Line::Garbage(_)));
        // Invalid JSON inside the result: garbage, as before.
        assert!(matches!(
            parse_line(br#"{"id":1,"result":{"a":}}"#),
            Line::Garbage(_)
        ));
    }

    #[tokio::test]
    async fn queued_lines_are_written_whole_and_in_order() {
        use tokio::io::AsyncReadExt as _;
        let (mine, mut peer) = tokio::io::duplex(1 << 12);
        let routes = Arc::new(Mutex::new(Routes::default()));
        let (tx, rx) = mpsc::channel(WRITE_QUEUE);
        let writer = tokio::spawn(write_loop(mine, rx, routes, WRITE_TIMEOUT));
        // Small lines around ones longer than the coalescing buffer, queued before the
        // writer runs (so they are taken as batches).
        let big = |c: u8, n: usize| Bytes::from(vec![c; n]);
        let sent = vec![
            Bytes::from_static(b"one"),
            big(b'a', COALESCE_BYTES + 7),
            Bytes::from_static(b"two"),
            big(b'b', COALESCE_BYTES - 2),
            big(b'c', COALESCE_BYTES / 2),
            Bytes::from_static(b"three"),
            big(b'd', 3 * COALESCE_BYTES),
        ];
        let feed = {
            let sent = sent.clone();
            tokio::spawn(async move {
                for s in sent {
                    tx.send(s).await.map_err(|_| "closed")?;
                }
                Ok::<_, &str>(())
            })
        };
        let mut got = Vec::new();
        peer.read_to_end(&mut got)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(feed.await, Ok(Ok(()))));
        assert!(writer.await.is_ok());
        let mut want = Vec::new();
        for s in &sent {
            want.extend_from_slice(s);
            want.push(b'\n');
        }
        assert_eq!(got.len(), want.len());
        assert!(got == want, "the lines arrive whole, in order");
    }
}
