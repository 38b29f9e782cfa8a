//! `subscriptions/listen` over HTTP: a long-lived POST answered with an SSE stream that
//! carries the engine's [`Subscription`] (acknowledgement, tagged change notifications,
//! the final result at shutdown) with keep-alive comments in between.
//!
//! The response body drives the subscription itself: when a change arrives, the
//! connection's own task wakes, frames the notification and writes it. No task and no
//! queue per stream (issue 35 §4: at 10,000 streams, each of them was a wake-up and a
//! kilobyte per stream); a client slow to read is not polled, and its subscription's
//! bounded backlog tells it, when it catches up, that every watched list changed.

use std::sync::Arc;

use bytes::Bytes;
use http::Response;
use tokio::time::Interval;

use super::body::Body;
use super::response;
use super::service::Shared;
use crate::caller::Principal;
use crate::engine::{Engine, Failure, Framing, ListenStep, Subscription};
use crate::protocol::RequestId;
use crate::router::Call;

/// Answers a `subscriptions/listen` request.
pub(crate) fn serve(
    shared: &Arc<Shared>,
    id: RequestId,
    call: &Call,
    principal: Option<&Principal>,
) -> Result<Response<Body>, Failure> {
    let subscription = Subscription::open(&shared.engine, id, call, principal)?;
    let state = State {
        subscription,
        engine: Arc::clone(&shared.engine),
        ticker: super::sse::keep_alive_ticker(shared.config.keep_alive),
        done: false,
    };
    let events = futures_util::stream::unfold(state, |mut state| async move {
        let chunk = state.next().await?;
        Some((chunk, state))
    });
    Ok(response::event_stream(Body::events(events)))
}

/// What a listen stream's body holds.
struct State {
    subscription: Subscription,
    engine: Arc<Engine>,
    ticker: Interval,
    /// The final result was sent: the body ends.
    done: bool,
}

impl State {
    /// The next chunk to write (every message of one step as SSE events, written
    /// framed into one buffer by the subscription: one allocation, one write), or a
    /// keep-alive comment, or `None` at the end.
    async fn next(&mut self) -> Option<Bytes> {
        if self.done {
            return None;
        }
        let step = tokio::select! {
            biased;
            step = self.subscription.next_framed(&self.engine, SSE) => step,
            _ = self.ticker.tick() => return Some(response::sse_keepalive()),
        };
        match step {
            ListenStep::Messages(events) => Some(events),
            ListenStep::Closing(result) => {
                self.done = true;
                Some(response::sse_frame(&result))
            }
            ListenStep::Gone => None,
        }
    }
}

/// Each message as an SSE event (`data: …` and a blank line).
const SSE: Framing = Framing {
    prefix: b"data: ",
    suffix: b"\n\n",
};
