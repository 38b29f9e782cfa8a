//! A writer that fails when it makes no progress for a while: the stdio writer's bound
//! on a peer that stops reading its input.
//!
//! The bound is on progress, not on a whole write: a peer that reads slowly but
//! steadily takes a large batch of lines however long it needs, while one that stops
//! reading fails the write `limit` after the last byte it took.

use std::future::Future as _;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::AsyncWrite;
use tokio::time::{Instant, Sleep};

/// `inner`, whose writes and flushes fail with [`io::ErrorKind::TimedOut`] once one has
/// waited `limit` without the peer taking a byte.
pub(crate) struct Stalling<W> {
    inner: W,
    limit: Duration,
    /// Runs while a write or flush waits; reset when one makes progress.
    timer: Pin<Box<Sleep>>,
    waiting: bool,
}

impl<W> Stalling<W> {
    pub(crate) fn new(inner: W, limit: Duration) -> Self {
        Self {
            inner,
            limit,
            timer: Box::pin(tokio::time::sleep(limit)),
            waiting: false,
        }
    }

    /// `r`, the inner writer's answer: progress (or an error) ends the wait; `Pending`
    /// starts it, or fails once it has lasted `limit`.
    fn watch<T>(&mut self, r: Poll<io::Result<T>>, cx: &mut Context<'_>) -> Poll<io::Result<T>> {
        if r.is_ready() {
            self.waiting = false;
            return r;
        }
        if !self.waiting {
            self.waiting = true;
            self.timer.as_mut().reset(Instant::now() + self.limit);
        }
        match self.timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the peer took nothing for the write timeout",
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<W: AsyncWrite + Unpin> AsyncWrite for Stalling<W> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.watch(r, cx)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.inner).poll_flush(cx);
        this.watch(r, cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    const LIMIT: Duration = Duration::from_millis(150);

    #[tokio::test]
    async fn a_slow_but_steady_reader_takes_a_write_longer_than_the_limit() {
        let (mine, mut peer) = tokio::io::duplex(64);
        let reader = tokio::spawn(async move {
            let (mut got, mut chunk) = (Vec::new(), [0u8; 64]);
            loop {
                tokio::time::sleep(Duration::from_millis(10)).await;
                match peer.read(&mut chunk).await {
                    Ok(0) | Err(_) => return got,
                    Ok(n) => got.extend_from_slice(&chunk[..n]),
                }
            }
        });
        let mut w = Stalling::new(mine, LIMIT);
        let data = vec![b'x'; 64 * 40];
        let started = Instant::now();
        let wrote = w.write_all(&data).await;
        assert!(wrote.is_ok(), "{wrote:?}");
        // Far longer than the limit in all: a bound on the whole write would fail it.
        assert!(started.elapsed() > 2 * LIMIT, "{:?}", started.elapsed());
        assert!(w.shutdown().await.is_ok());
        drop(w);
        assert_eq!(reader.await.map(|g| g.len()).ok(), Some(data.len()));
    }

    #[tokio::test]
    async fn a_reader_that_stops_fails_the_write_a_limit_after_its_last_byte() {
        let (mine, mut peer) = tokio::io::duplex(64);
        let mut w = Stalling::new(mine, LIMIT);
        // It takes 64 bytes at once, then 64 more after a while, then nothing.
        let reader = tokio::spawn(async move {
            let mut chunk = [0u8; 64];
            tokio::time::sleep(LIMIT / 2).await;
            let n = peer.read(&mut chunk).await.unwrap_or(0);
            tokio::time::sleep(Duration::from_secs(5)).await;
            n
        });
        let started = Instant::now();
        let wrote = w.write_all(&[b'x'; 64 * 4]).await;
        let took = started.elapsed();
        assert!(
            matches!(&wrote, Err(e) if e.kind() == io::ErrorKind::TimedOut),
            "{wrote:?}"
        );
        // Progress half-way restarted the wait: failed about 1.5 limits in, not 1.
        assert!(took >= LIMIT + LIMIT / 2, "{took:?}");
        assert!(took < 4 * LIMIT, "{took:?}");
        reader.abort();
    }
}
