//! The time a connection has to send its next request head, armed once per period
//! rather than once per request.
//!
//! hyper's own `header_read_timeout` arms a timer each time it starts reading a head:
//! on a keep-alive connection that is every request — a boxed sleep made, registered in
//! the runtime's timer wheel, taken out again when the head arrives — about 1 700
//! instructions of a 2026-07-28 `tools/call` (4 %; issue 15). The same protection, as a
//! lazy deadline: each connection notes when it started waiting for a head (accepted,
//! or its last response body ended) and whether a response is still being answered;
//! one sleep per connection wakes at the deadline the note gives, and only then reads
//! the note again. A connection that keeps answering moves the note, not the timer; a
//! client that sends nothing, stalls mid-head or trickles its head byte by byte is cut
//! off once the deadline passes, as before; while a response is being answered (an
//! execution, an SSE stream) the deadline does not run.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Frame, SizeHint};
use tokio::time::Instant;

/// What one connection's deadline reads.
#[derive(Debug)]
pub(super) struct HeadDeadline {
    /// When the connection was accepted: the clock the note counts from.
    origin: Instant,
    timeout: Duration,
    /// Microseconds from `origin` to when the connection last started waiting for a
    /// head, in the low 48 bits; the responses in progress in the high 16.
    note: AtomicU64,
}

const BUSY_ONE: u64 = 1 << 48;
const SINCE_MASK: u64 = BUSY_ONE - 1;

impl HeadDeadline {
    /// A connection accepted now, waiting for its first head.
    pub(super) fn new(timeout: Duration) -> Arc<Self> {
        Arc::new(Self {
            origin: Instant::now(),
            timeout,
            note: AtomicU64::new(0),
        })
    }

    /// A request head arrived: its response is in progress until the returned guard
    /// (moved into the response body) is dropped.
    pub(super) fn begin(self: &Arc<Self>) -> Answering {
        self.note.fetch_add(BUSY_ONE, Ordering::Relaxed);
        Answering(Arc::clone(self))
    }

    fn since_origin(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_micros())
            .unwrap_or(SINCE_MASK)
            .min(SINCE_MASK)
    }

    /// Completes when the connection has waited longer than the timeout for a head
    /// with no response in progress.
    pub(super) async fn expired(&self) {
        let sleep = tokio::time::sleep(self.timeout);
        tokio::pin!(sleep);
        loop {
            sleep.as_mut().await;
            let note = self.note.load(Ordering::Relaxed);
            let next = if note >= BUSY_ONE {
                // Answering: look again a whole period later (the deadline runs from
                // the end of the response).
                crate::engine::deadline(Instant::now(), self.timeout)
            } else {
                let due = crate::engine::deadline(
                    self.origin + Duration::from_micros(note & SINCE_MASK),
                    self.timeout,
                );
                if Instant::now() >= due {
                    return;
                }
                due
            };
            sleep.as_mut().reset(next);
        }
    }
}

/// A response in progress on a connection; dropped when its body has ended (or was
/// abandoned), which starts the wait for the next head.
#[derive(Debug)]
pub(super) struct Answering(Arc<HeadDeadline>);

impl Drop for Answering {
    fn drop(&mut self) {
        let since = self.0.since_origin();
        // One update of both halves: one response fewer, and the wait begins now.
        let _ = self
            .0
            .note
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |note| {
                Some((note & !SINCE_MASK).saturating_sub(BUSY_ONE) | since)
            });
    }
}

/// A response body that ends its connection's [`Answering`] when it is dropped.
#[derive(Debug)]
pub(super) struct Tracked<B> {
    body: B,
    _answering: Answering,
}

impl<B> Tracked<B> {
    pub(super) fn new(body: B, answering: Answering) -> Self {
        Self {
            body,
            _answering: answering,
        }
    }
}

impl<B: http_body::Body<Data = Bytes> + Unpin> http_body::Body for Tracked<B> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The deadline runs while the connection waits, not while it answers, and
    /// restarts when a response ends.
    #[tokio::test(start_paused = true)]
    async fn runs_only_between_responses() {
        let t = Duration::from_millis(500);
        let d = HeadDeadline::new(t);
        let start = Instant::now();
        d.expired().await;
        assert!(start.elapsed() >= t && start.elapsed() < t * 2);

        let d = HeadDeadline::new(t);
        let answering = d.begin();
        let watch = {
            let d = Arc::clone(&d);
            tokio::spawn(async move { d.expired().await })
        };
        tokio::time::sleep(t * 5).await;
        assert!(!watch.is_finished(), "expired while answering");
        let ended = Instant::now();
        drop(answering);
        let _ = watch.await;
        let waited = ended.elapsed();
        // Expires a timeout after the response ended (the busy check looks once per
        // period, so at most two periods).
        assert!(waited >= t && waited <= t * 2, "{waited:?}");
    }

    /// Two overlapping responses: the deadline waits for both.
    #[tokio::test(start_paused = true)]
    async fn counts_responses_in_progress() {
        let t = Duration::from_millis(100);
        let d = HeadDeadline::new(t);
        let (a, b) = (d.begin(), d.begin());
        drop(a);
        assert!(d.note.load(Ordering::Relaxed) >= BUSY_ONE);
        drop(b);
        assert!(d.note.load(Ordering::Relaxed) < BUSY_ONE);
    }
}
