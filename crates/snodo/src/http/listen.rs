//! `subscriptions/listen` over HTTP: a long-lived POST answered with an SSE stream that
//! carries the engine's [`Subscription`] (acknowledgement, tagged change notifications,
//! the final result at shutdown) with keep-alive comments in between.

use std::sync::Arc;

use http::Response;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::body::Body;
use super::response;
use super::service::Shared;
use crate::engine::{ListenStep, Subscription};
use crate::protocol::{RequestId, RpcError};
use crate::router::Call;

/// Answers a `subscriptions/listen` request.
pub(crate) fn serve(
    shared: &Arc<Shared>,
    id: RequestId,
    call: &Call,
) -> Result<Response<Body>, (RpcError, bool)> {
    let mut subscription = Subscription::open(&shared.engine, id, call)?;
    let (tx, rx) = mpsc::channel(32);
    let keep_alive = shared.config.keep_alive;
    let engine = Arc::clone(&shared.engine);
    tokio::spawn(async move {
        let mut ticker = tokio::time::interval_at(Instant::now() + keep_alive, keep_alive);
        loop {
            let frames = tokio::select! {
                biased;
                step = subscription.next(&engine) => match step {
                    ListenStep::Messages(ms) => ms.iter().map(|m| response::sse_frame(m)).collect(),
                    ListenStep::Closing(result) => {
                        let _ = tx.send(response::sse_frame(&result)).await;
                        return;
                    }
                    ListenStep::Gone => return,
                },
                () = tx.closed() => return,
                _ = ticker.tick() => vec![response::sse_keepalive()],
            };
            for frame in frames {
                if tx.send(frame).await.is_err() {
                    return;
                }
            }
        }
    });
    Ok(response::event_stream(Body::stream(rx)))
}
