//! One SSE response stream: what an execution and a listen request both send through.
//!
//! The sending half frames each JSON-RPC message as an event, keeps an idle connection open
//! with a comment every `keep_alive`, and notices a client that went away, so the loops
//! that feed it say only what to send.
//!
//! A frame that waits longer than the write timeout for room in the queue ends the
//! stream as if the client had gone: over HTTP/2 a client that never opens a stream's
//! flow-control window (while reading the socket and answering PINGs) leaves hyper
//! unable to take the body's frames, and no socket write ever pends, so the connection's
//! write deadline would never fire; this one does, per stream, and the task feeding the
//! stream lets go of its execution or listen slots.

use std::time::Duration;

use bytes::Bytes;
use http::Response;
use tokio::sync::mpsc;
use tokio::time::{Instant, Interval};

use super::body::Body;
use super::budget::LARGE;
use super::response;

/// The client closed the stream.
#[derive(Debug)]
pub(crate) struct Gone;

/// The sending half of an SSE response body.
#[derive(Debug)]
pub(crate) struct SseStream {
    tx: mpsc::Sender<Bytes>,
    ticker: Interval,
    /// How long one frame may wait for room in the queue.
    write_timeout: Duration,
}

impl SseStream {
    /// A stream of at most `depth` queued frames, and the response that carries it; a
    /// frame that finds no room for `write_timeout` ends the stream ([`Gone`]).
    pub(crate) fn open(
        depth: usize,
        keep_alive: Duration,
        write_timeout: Duration,
    ) -> (Self, Response<Body>) {
        let (tx, rx) = mpsc::channel(depth);
        let ticker = keep_alive_ticker(keep_alive);
        (
            Self {
                tx,
                ticker,
                write_timeout,
            },
            response::event_stream(Body::stream(rx)),
        )
    }

    /// Queues a message as an event without waiting (the stream was just opened with
    /// room for [`FRAMES_PER_EVENT`] frames a message).
    pub(crate) fn push(&self, message: Bytes) {
        for frame in frames(message).into_iter().flatten() {
            let _ = self.tx.try_send(frame);
        }
    }

    /// Queues an already framed event without waiting (the stream was just opened).
    pub(crate) fn push_frame(&self, frame: Bytes) {
        let _ = self.tx.try_send(frame);
    }

    /// Sends one message as an event, waiting while the client is slow to read (each
    /// frame at most the write timeout).
    pub(crate) async fn send(&self, message: Bytes) -> Result<(), Gone> {
        for frame in frames(message).into_iter().flatten() {
            self.send_frame(frame).await?;
        }
        Ok(())
    }

    /// Queues one frame, waiting at most the write timeout for room (a timer only when
    /// the queue is full: a frame that finds room, nearly every one, sets none).
    async fn send_frame(&self, frame: Bytes) -> Result<(), Gone> {
        let frame = match self.tx.try_send(frame) {
            Ok(()) => return Ok(()),
            Err(mpsc::error::TrySendError::Closed(_)) => return Err(Gone),
            Err(mpsc::error::TrySendError::Full(frame)) => frame,
        };
        match tokio::time::timeout(self.write_timeout, self.tx.send(frame)).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(_)) | Err(_) => Err(Gone),
        }
    }

    /// Keeps the stream alive while there is nothing to send; ends when the client has gone.
    /// Cancel-safe: meant as a `select!` branch beside the source of messages.
    pub(crate) async fn idle(&mut self) -> Gone {
        loop {
            tokio::select! {
                () = self.tx.closed() => return Gone,
                _ = self.ticker.tick() => {
                    if self.send_frame(response::sse_keepalive()).await.is_err() {
                        return Gone;
                    }
                }
            }
        }
    }
}

/// Ticks every `keep_alive`, the first a whole period from now.
pub(crate) fn keep_alive_ticker(keep_alive: Duration) -> tokio::time::Interval {
    tokio::time::interval_at(
        crate::engine::deadline(Instant::now(), keep_alive),
        keep_alive,
    )
}

/// The most frames one event takes.
pub(crate) const FRAMES_PER_EVENT: usize = 3;

/// The frames of one message as an event: one copy when it is small (one write), the
/// message itself between its prefix and suffix when it is large (no copy of a large
/// answer).
fn frames(message: Bytes) -> [Option<Bytes>; FRAMES_PER_EVENT] {
    if message.len() < LARGE {
        return [Some(response::sse_frame(&message)), None, None];
    }
    [
        Some(Bytes::from_static(response::SSE_EVENT.prefix)),
        Some(message),
        Some(Bytes::from_static(response::SSE_EVENT.suffix)),
    ]
}
