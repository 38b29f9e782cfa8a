//! `subscriptions/listen` over HTTP: a long-lived POST answered with an SSE stream that
//! carries the engine's [`Subscription`] (acknowledgement, tagged change notifications,
//! the final result at shutdown) with keep-alive comments in between.

use std::sync::Arc;

use http::Response;

use super::body::Body;
use super::service::Shared;
use super::sse::{Gone, SseStream};
use crate::caller::Principal;
use crate::engine::{Failure, ListenStep, Subscription};
use crate::protocol::RequestId;
use crate::router::Call;

/// Queue depth of a listen stream's body.
const STREAM_DEPTH: usize = 32;

/// Answers a `subscriptions/listen` request.
pub(crate) fn serve(
    shared: &Arc<Shared>,
    id: RequestId,
    call: &Call,
    principal: Option<&Principal>,
) -> Result<Response<Body>, Failure> {
    let mut subscription = Subscription::open(&shared.engine, id, call, principal)?;
    let (mut sse, response) = SseStream::open(
        STREAM_DEPTH,
        shared.config.keep_alive,
        shared.config.write_timeout,
    );
    let engine = Arc::clone(&shared.engine);
    tokio::spawn(async move {
        loop {
            let step = tokio::select! {
                biased;
                step = subscription.next(&engine) => step,
                Gone = sse.idle() => return,
            };
            match step {
                ListenStep::Messages(ms) => {
                    for m in ms {
                        if sse.send(m).await.is_err() {
                            return;
                        }
                    }
                }
                ListenStep::Closing(result) => {
                    let _ = sse.send(result).await;
                    return;
                }
                ListenStep::Gone => return,
            }
        }
    });
    Ok(response)
}
