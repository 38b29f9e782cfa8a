//! The response body: a complete buffer, complete buffers one after the other, or a
//! stream of SSE frames.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::fmt;
use std::pin::Pin;
use std::sync::Mutex;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures_util::Stream;
use http_body::{Frame, SizeHint};
use tokio::sync::mpsc;

/// The body of every response the MCP service sends.
#[derive(Debug)]
pub struct Body {
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    Full(Option<Bytes>),
    /// Complete buffers, written in turn (a batch's answers, each as it was built), and
    /// their total length.
    Chunks(VecDeque<Bytes>, u64),
    Stream(mpsc::Receiver<Bytes>),
    /// Framed chunks produced as the connection asks for them (a listen stream): no
    /// task and no queue of its own.
    Events(Events),
}

/// A stream of framed chunks polled by the connection itself. In a mutex only so that
/// [`Body`] stays `Sync`; polling reaches it through `get_mut`, never locking.
struct Events(Mutex<Pin<Box<dyn Stream<Item = Bytes> + Send>>>);

impl fmt::Debug for Events {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Events")
    }
}

impl Body {
    /// A complete body.
    #[must_use]
    pub fn full(bytes: Bytes) -> Self {
        Self {
            kind: Kind::Full((!bytes.is_empty()).then_some(bytes)),
        }
    }

    /// An empty body.
    #[must_use]
    pub fn empty() -> Self {
        Self {
            kind: Kind::Full(None),
        }
    }

    /// A complete body made of `chunks`, written one after the other (no copy into
    /// one buffer).
    pub(crate) fn chunks(chunks: Vec<Bytes>) -> Self {
        let len = chunks.iter().map(|c| c.len() as u64).sum();
        Self {
            kind: Kind::Chunks(chunks.into_iter().filter(|c| !c.is_empty()).collect(), len),
        }
    }

    /// A body fed by a channel of already-framed chunks; it ends when the sender drops.
    pub(crate) fn stream(rx: mpsc::Receiver<Bytes>) -> Self {
        Self {
            kind: Kind::Stream(rx),
        }
    }

    /// A body of the chunks `events` yields, polled when the connection can write; it
    /// ends when `events` does.
    pub(crate) fn events(events: impl Stream<Item = Bytes> + Send + 'static) -> Self {
        Self {
            kind: Kind::Events(Events(Mutex::new(Box::pin(events)))),
        }
    }
}

impl http_body::Body for Body {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match &mut self.kind {
            Kind::Full(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            Kind::Chunks(chunks, len) => Poll::Ready(chunks.pop_front().map(|b| {
                *len -= b.len() as u64;
                Ok(Frame::data(b))
            })),
            Kind::Stream(rx) => rx.poll_recv(cx).map(|o| o.map(|b| Ok(Frame::data(b)))),
            Kind::Events(Events(events)) => {
                // A panic while polling poisons nothing worth refusing: the stream is ours.
                let events = events
                    .get_mut()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                events
                    .as_mut()
                    .poll_next(cx)
                    .map(|o| o.map(|b| Ok(Frame::data(b))))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.kind {
            Kind::Full(b) => b.is_none(),
            Kind::Chunks(chunks, _) => chunks.is_empty(),
            Kind::Stream(_) | Kind::Events(_) => false,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            Kind::Full(Some(b)) => SizeHint::with_exact(b.len() as u64),
            Kind::Full(None) => SizeHint::with_exact(0),
            Kind::Chunks(_, len) => SizeHint::with_exact(*len),
            Kind::Stream(_) | Kind::Events(_) => SizeHint::default(),
        }
    }
}
