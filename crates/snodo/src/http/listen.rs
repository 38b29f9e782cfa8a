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
use crate::engine::{Engine, Failure, ListenStep, Subscription};
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
    /// The next chunk to write (every message of one step as SSE events in one buffer,
    /// or a keep-alive comment), or `None` at the end.
    async fn next(&mut self) -> Option<Bytes> {
        if self.done {
            return None;
        }
        let step = tokio::select! {
            biased;
            step = self.subscription.next(&self.engine) => step,
            _ = self.ticker.tick() => return Some(response::sse_keepalive()),
        };
        match step {
            ListenStep::Messages(ms) => Some(events(&ms)),
            ListenStep::Closing(result) => {
                self.done = true;
                Some(events(std::slice::from_ref(&result)))
            }
            ListenStep::Gone => None,
        }
    }
}

/// `messages` as SSE events, one after the other in one buffer (one write).
fn events(messages: &[Bytes]) -> Bytes {
    let len = messages.iter().map(|m| m.len() + 8).sum();
    let mut out = Vec::with_capacity(len);
    for m in messages {
        response::write_sse_frame(&mut out, m);
    }
    Bytes::from(out)
}
