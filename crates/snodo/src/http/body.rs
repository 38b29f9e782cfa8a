//! The response body: a complete buffer, complete buffers one after the other, or a
//! stream of SSE frames.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
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
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.kind {
            Kind::Full(b) => b.is_none(),
            Kind::Chunks(chunks, _) => chunks.is_empty(),
            Kind::Stream(_) => false,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            Kind::Full(Some(b)) => SizeHint::with_exact(b.len() as u64),
            Kind::Full(None) => SizeHint::with_exact(0),
            Kind::Chunks(_, len) => SizeHint::with_exact(*len),
            Kind::Stream(_) => SizeHint::default(),
        }
    }
}
