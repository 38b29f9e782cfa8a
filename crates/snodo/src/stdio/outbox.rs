//! The connection's outbound side: whole messages queued for one writer task, bounded
//! in messages and in bytes.
//!
//! A message takes its size (plus its newline) out of the byte budget before it is
//! queued and gives it back once written, so what waits to be written never exceeds the
//! budget; a message larger than the whole budget takes all of it and is written alone.
//! A sender waits while the budget is spent (the executions block), and the reader waits
//! for room before it admits another request: a client that stops reading makes the
//! server stop reading, with memory bounded by the budget and the answers already being
//! built.

use std::sync::Arc;

use bytes::Bytes;
use tokio::io::{AsyncWrite, AsyncWriteExt as _, BufWriter};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio_util::sync::CancellationToken;

/// A message waiting to be written and the bytes of the budget it holds.
pub(super) struct Queued {
    message: Bytes,
    _bytes: OwnedSemaphorePermit,
}

/// The writer stopped (the client closed its end, or the connection is over).
#[derive(Debug)]
pub(super) struct Closed;

/// The sending side, cloned by every execution of the connection.
#[derive(Clone, Debug)]
pub(super) struct Outbox {
    tx: mpsc::Sender<Queued>,
    /// The byte budget: one permit per byte (closed when the writer stops).
    bytes: Arc<Semaphore>,
    budget: u32,
}

impl Outbox {
    /// A queue of at most `messages` messages and `budget` bytes (at least 1, at most
    /// `u32::MAX`), and its receiving end for [`write_loop`].
    pub(super) fn new(messages: usize, budget: usize) -> (Self, Writer) {
        let budget = u32::try_from(budget.max(1)).unwrap_or(u32::MAX);
        let (tx, rx) = mpsc::channel(messages.max(1));
        let bytes = Arc::new(Semaphore::new(budget as usize));
        let writer = Writer {
            rx,
            bytes: Arc::clone(&bytes),
        };
        (Self { tx, bytes, budget }, writer)
    }

    /// Queues `message` once the budget has room for it.
    pub(super) async fn send(&self, message: Bytes) -> Result<(), Closed> {
        let size = u32::try_from(message.len().saturating_add(1)).unwrap_or(u32::MAX);
        let held = Arc::clone(&self.bytes)
            .acquire_many_owned(size.min(self.budget))
            .await
            .map_err(|_| Closed)?;
        self.tx
            .send(Queued {
                message,
                _bytes: held,
            })
            .await
            .map_err(|_| Closed)
    }

    /// Whether the budget has room now.
    pub(super) fn has_room(&self) -> bool {
        self.bytes.available_permits() > 0
    }

    /// Waits until the budget has room (after the senders that wait before it), or the
    /// writer stopped.
    pub(super) async fn room(&self) {
        let _ = self.bytes.acquire().await;
    }
}

/// The receiving end, for [`write_loop`].
pub(super) struct Writer {
    rx: mpsc::Receiver<Queued>,
    bytes: Arc<Semaphore>,
}

/// Writes whole messages, one per line, flushing when the queue is empty; a message's
/// bytes return to the budget once it is written. When writing fails the budget is
/// closed (senders and the reader stop waiting) and `gone` is cancelled.
pub(super) async fn write_loop<W: AsyncWrite + Unpin>(
    writer: W,
    queue: Writer,
    gone: CancellationToken,
) {
    let Writer { mut rx, bytes } = queue;
    let mut w = BufWriter::with_capacity(64 * 1024, writer);
    'outer: while let Some(m) = rx.recv().await {
        let mut next = Some(m);
        while let Some(Queued { message, _bytes }) = next {
            if w.write_all(&message).await.is_err() || w.write_all(b"\n").await.is_err() {
                break 'outer;
            }
            next = rx.try_recv().ok();
        }
        if w.flush().await.is_err() {
            break;
        }
    }
    bytes.close();
    rx.close();
    let _ = w.shutdown().await;
    gone.cancel();
}
