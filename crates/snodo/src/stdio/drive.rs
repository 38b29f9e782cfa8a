//! One request executing on a stdio connection: its messages and its end written to the
//! connection's outbox, unless the client cancelled it.

use tokio_util::sync::CancellationToken;

use super::outbox::Outbox;
use crate::engine::failure::stopped_error;
use crate::engine::{Ended, Execution, Step};
use crate::protocol::RequestId;
use crate::protocol::jsonrpc::error_message;

/// Writes an execution's messages and its end. A request the client cancelled writes
/// nothing more; one the drain period cut off (`cut`) ends with the engine's shutdown error, as on HTTP.
pub(super) async fn drive(
    mut exec: Execution,
    id: &RequestId,
    out: &Outbox,
    cancel: &CancellationToken,
    cut: &CancellationToken,
) {
    loop {
        let step = tokio::select! {
            biased;
            () = cancel.cancelled() => return exec.abandon().await,
            step = exec.next() => step,
        };
        match step {
            Step::Message(_) if exec.is_cancelled() => {}
            Step::Message(m) => {
                let sent = tokio::select! {
                    biased;
                    () = cancel.cancelled() => return exec.abandon().await,
                    sent = out.send(m) => sent,
                };
                if sent.is_err() {
                    return exec.abandon().await;
                }
            }
            Step::Ended(ended) => {
                let cancelled = cancel.is_cancelled();
                if !exec.is_cancelled() && !cancelled {
                    for m in exec.drain() {
                        let _ = out.send(m).await;
                    }
                }
                let message = exec.finish(&ended, None);
                if cancelled {
                    return;
                }
                let message = match (message, ended) {
                    (Some(m), _) => m,
                    (None, Ended::Cancelled) if cut.is_cancelled() => {
                        error_message(Some(id), &stopped_error())
                    }
                    (None, _) => return,
                };
                let _ = out.send(message).await;
                return;
            }
        }
    }
}
