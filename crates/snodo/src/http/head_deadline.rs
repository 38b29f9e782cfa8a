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
//!
//! The same note keeps the connection's **write deadline** (issue 37): a response that
//! the client does not read leaves hyper's writes pending. The socket wrapper
//! ([`Watched`]) notes when a write first stayed pending and clears the note when a
//! later write moves bytes, so a client that reads slowly but steadily keeps its
//! connection for as long as its answer takes, and one that stops reading is dropped
//! `write_timeout` after its last progress — not by the head deadline, which no longer
//! runs while a write is pending (and restarts from the last write's progress). The
//! common path (a write that completes) reads one atomic; the clock is read only on a
//! pending write and on the progress after it.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Frame, SizeHint};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;
use tokio::time::Instant;

/// What one connection's deadline reads.
#[derive(Debug)]
pub(super) struct HeadDeadline {
    /// When the connection was accepted: the clock the note counts from.
    origin: Instant,
    timeout: Duration,
    /// Time a pending write may go without progress.
    write_timeout: Duration,
    /// Microseconds from `origin` to when the connection last started waiting for a
    /// head, in the low 48 bits; the responses in progress in the high 16.
    note: AtomicU64,
    /// Microseconds from `origin` (plus one) to when a write first stayed pending
    /// since the last progress; zero when no write is pending.
    blocked: AtomicU64,
    /// Wakes the deadline's task when a write starts pending (its deadline may be
    /// nearer than the one the task sleeps to).
    wake: Notify,
}

/// Why a connection's deadline passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Expired {
    /// No request head in time.
    Head,
    /// A pending write made no progress in time (the client stopped reading).
    Write,
}

const BUSY_ONE: u64 = 1 << 48;
const SINCE_MASK: u64 = BUSY_ONE - 1;

/// The most responses one connection's note counts (its high 16 bits): the most
/// HTTP/2 streams a connection may have open ([`Http2Limits`](super::Http2Limits)
/// holds its setting to it), so the count never wraps to look idle.
pub(super) const MAX_RESPONSES: u32 = u16::MAX as u32;

impl HeadDeadline {
    /// A connection accepted now, waiting for its first head.
    pub(super) fn new(timeout: Duration, write_timeout: Duration) -> Arc<Self> {
        Arc::new(Self {
            origin: Instant::now(),
            timeout,
            write_timeout,
            note: AtomicU64::new(0),
            blocked: AtomicU64::new(0),
            wake: Notify::new(),
        })
    }

    /// Whether the connection is between requests: no response in progress and no
    /// write pending (at shutdown, such a connection is closed at once).
    pub(super) fn is_idle(&self) -> bool {
        self.note.load(Ordering::Relaxed) < BUSY_ONE && self.blocked.load(Ordering::Relaxed) == 0
    }

    /// A write stayed pending: the write deadline starts, unless it already runs.
    fn write_pending(&self) {
        if self.blocked.load(Ordering::Relaxed) == 0 {
            self.blocked
                .store(self.since_origin().saturating_add(1), Ordering::Relaxed);
            self.wake.notify_one();
        }
    }

    /// A write moved bytes: a pending write's deadline ends, and the wait for the next
    /// head counts from now.
    fn write_progress(&self) {
        if self.blocked.load(Ordering::Relaxed) != 0 {
            self.blocked.store(0, Ordering::Relaxed);
            let since = self.since_origin();
            let _ = self
                .note
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |note| {
                    Some((note & !SINCE_MASK) | since)
                });
        }
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
    /// with no response in progress and no write pending, or when a pending write made
    /// no progress for the write timeout.
    pub(super) async fn expired(&self) -> Expired {
        let sleep = tokio::time::sleep(self.timeout);
        tokio::pin!(sleep);
        loop {
            tokio::select! {
                () = sleep.as_mut() => {}
                () = self.wake.notified() => {}
            }
            let now = Instant::now();
            let blocked = self.blocked.load(Ordering::Relaxed);
            let next = if blocked != 0 {
                let due = crate::engine::deadline(
                    self.origin + Duration::from_micros(blocked - 1),
                    self.write_timeout,
                );
                if now >= due {
                    return Expired::Write;
                }
                due
            } else {
                let note = self.note.load(Ordering::Relaxed);
                if note >= BUSY_ONE {
                    // Answering: look again a whole period later (the deadline runs
                    // from the end of the response).
                    crate::engine::deadline(now, self.timeout)
                } else {
                    let due = crate::engine::deadline(
                        self.origin + Duration::from_micros(note & SINCE_MASK),
                        self.timeout,
                    );
                    if now >= due {
                        return Expired::Head;
                    }
                    due
                }
            };
            sleep.as_mut().reset(next);
        }
    }
}

/// A connection's socket, noting the progress of its writes in its [`HeadDeadline`].
#[derive(Debug)]
pub(super) struct Watched<S> {
    io: S,
    deadline: Arc<HeadDeadline>,
}

impl<S> Watched<S> {
    pub(super) fn new(io: S, deadline: Arc<HeadDeadline>) -> Self {
        Self { io, deadline }
    }

    fn noted<T>(&self, polled: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        match &polled {
            Poll::Pending => self.deadline.write_pending(),
            Poll::Ready(Ok(_)) => self.deadline.write_progress(),
            Poll::Ready(Err(_)) => {}
        }
        polled
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.io).poll_write(cx, buf);
        self.noted(polled)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.noted(polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
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
        let d = HeadDeadline::new(t, t);
        let start = Instant::now();
        assert_eq!(d.expired().await, Expired::Head);
        assert!(start.elapsed() >= t && start.elapsed() < t * 2);

        let d = HeadDeadline::new(t, t);
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
        let d = HeadDeadline::new(t, t);
        let (a, b) = (d.begin(), d.begin());
        drop(a);
        assert!(d.note.load(Ordering::Relaxed) >= BUSY_ONE);
        drop(b);
        assert!(d.note.load(Ordering::Relaxed) < BUSY_ONE);
    }

    /// The most responses a connection may have open still count as busy.
    #[test]
    fn the_most_responses_do_not_wrap() {
        let limits = super::super::Http2Limits::default().max_concurrent_streams(u32::MAX);
        assert_eq!(limits.max_concurrent_streams, MAX_RESPONSES);
        let d = HeadDeadline::new(Duration::from_secs(1), Duration::from_secs(1));
        let open: Vec<Answering> = (0..MAX_RESPONSES).map(|_| d.begin()).collect();
        assert!(!d.is_idle());
        assert_eq!(
            d.note.load(Ordering::Relaxed) >> 48,
            u64::from(MAX_RESPONSES)
        );
        drop(open);
        assert!(d.is_idle());
    }

    /// A pending write is cut off by the write deadline, whatever the head deadline;
    /// progress moves it, and the head deadline then runs from the last progress.
    #[tokio::test(start_paused = true)]
    async fn a_pending_write_has_its_own_deadline() {
        let (head, write) = (Duration::from_secs(60), Duration::from_secs(2));
        let d = HeadDeadline::new(head, write);
        let answering = d.begin();
        drop(answering);
        let watch = {
            let d = Arc::clone(&d);
            tokio::spawn(async move { d.expired().await })
        };
        let start = Instant::now();
        d.write_pending();
        tokio::time::sleep(Duration::from_secs(1)).await;
        // Progress, then pending again: the deadline counts from the new stall.
        d.write_progress();
        d.write_pending();
        assert!(!d.is_idle());
        let expired = watch.await.ok();
        assert_eq!(expired, Some(Expired::Write));
        let waited = start.elapsed();
        assert!(
            waited >= Duration::from_secs(3) && waited < head,
            "{waited:?}"
        );
    }
}
