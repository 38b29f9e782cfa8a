//! `subscriptions/listen` over HTTP: a long-lived POST answered with an SSE stream that
//! carries the engine's [`Subscription`] (acknowledgement, tagged change notifications,
//! the final result at shutdown) with keep-alive comments in between.
//!
//! The response body drives the subscription itself: when a change arrives, the
//! connection's own task wakes, frames the notification and writes it. No task and no
//! queue per stream (issue 35 §4: at 10,000 streams, each of them was a wake-up and a
//! kilobyte per stream); a client slow to read is not polled, and its subscription's
//! bounded backlog tells it, when it catches up, that every watched list changed.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::Response;
use tokio::time::Sleep;

use super::body::Body;
use super::response;
use super::service::Shared;
use crate::caller::Principal;
use crate::engine::{Engine, Failure, ListenStep, Registered, Subscription};
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
        keep_alive: KeepAlive::new(shared.config.keep_alive),
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
    keep_alive: KeepAlive,
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
            step = self.subscription.next_framed(&self.engine, response::SSE_EVENT) => step,
            () = std::future::poll_fn(|cx| self.keep_alive.poll_tick(cx)) => {
                return Some(response::sse_keepalive());
            }
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

/// The keep-alive comment's timer: a tick every period, the first a whole period from
/// now (as [`super::sse::keep_alive_ticker`]'s), polled only when it fired or another
/// task polls it. An interval polled beside the subscription re-registered its waker in
/// the timer on every poll: about 300 instructions per stream per event.
struct KeepAlive {
    sleep: Pin<Box<Sleep>>,
    every: Duration,
    waker: Registered,
}

impl KeepAlive {
    fn new(every: Duration) -> Self {
        let first = crate::engine::deadline(tokio::time::Instant::now(), every);
        Self {
            sleep: Box::pin(tokio::time::sleep_until(first)),
            every,
            waker: Registered::default(),
        }
    }

    /// Ready once a period has passed since the last tick.
    fn poll_tick(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let sleep = &mut self.sleep;
        let polled = self
            .waker
            .poll(cx, sleep.is_elapsed(), |cx| sleep.as_mut().poll(cx));
        if polled.is_ready() {
            let next = crate::engine::deadline(sleep.deadline(), self.every);
            sleep.as_mut().reset(next);
        }
        polled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Spends the current task's budget.
    fn spend_budget(cx: &mut Context<'_>) {
        while tokio::task::coop::has_budget_remaining() {
            match tokio::task::coop::poll_proceed(cx) {
                Poll::Ready(spent) => spent.made_progress(),
                Poll::Pending => break,
            }
        }
    }

    /// A tick polled when the task's budget is spent (a backlog of changes the stream
    /// does not want can spend it) still comes: the timer registers on a later poll.
    #[tokio::test(start_paused = true)]
    async fn a_tick_polled_without_budget_still_comes() {
        let mut keep_alive = KeepAlive::new(Duration::from_millis(50));
        std::future::poll_fn(|cx| {
            spend_budget(cx);
            assert!(keep_alive.poll_tick(cx).is_pending());
            Poll::Ready(())
        })
        .await;
        let ticked = tokio::time::timeout(
            Duration::from_secs(1),
            std::future::poll_fn(|cx| keep_alive.poll_tick(cx)),
        )
        .await;
        assert!(ticked.is_ok(), "the keep-alive never ticked");
    }
}
