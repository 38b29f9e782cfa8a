//! One backend request on behalf of a front request: the backend's progress and log
//! notifications for it go out on the front request's stream, and the front's
//! cancellation (a `notifications/cancelled`, a disconnect, the deadline) abandons the
//! backend request, which `snodo-client` turns into the backend's cancellation
//! (`notifications/cancelled` on stdio, the response closed over HTTP).

use serde_json::Value;
use snodo::RequestContext;
use snodo::protocol::LogLevel;
use snodo_client::{CallOptions, Client, ClientError, LogMessage, Progress};
use tokio::sync::mpsc;

enum Note {
    Progress(Progress),
    Log(LogMessage),
}

/// Sends `method` with `params` to `client`, relaying progress and logs to `ctx`.
pub(crate) async fn call(
    client: &Client,
    method: &str,
    params: Value,
    ctx: &RequestContext,
) -> Result<Value, ClientError> {
    let (tx, mut rx) = mpsc::unbounded_channel::<Note>();
    let mut opts = CallOptions::default();
    if ctx.wants_progress() {
        let tx = tx.clone();
        opts = opts.on_progress(move |p| {
            let _ = tx.send(Note::Progress(p));
        });
    }
    opts = opts.on_log(move |m| {
        let _ = tx.send(Note::Log(m));
    });
    let call = client.request_with(method, params, &opts);
    tokio::pin!(call);
    let cancelled = ctx.cancellation().clone();
    loop {
        tokio::select! {
            biased;
            // Dropping the call future abandons the backend request (its cancellation).
            () = cancelled.cancelled() => {
                return Err(ClientError::Transport("the front request was cancelled".into()));
            }
            Some(note) = rx.recv() => relay(ctx, note).await,
            r = &mut call => {
                // What arrived before the answer still goes out first.
                while let Ok(note) = rx.try_recv() {
                    relay(ctx, note).await;
                }
                return r;
            }
        }
    }
}

async fn relay(ctx: &RequestContext, note: Note) {
    match note {
        Note::Progress(p) => {
            ctx.progress(p.progress, p.total, p.message.as_deref())
                .await
        }
        Note::Log(m) => {
            let level = LogLevel::parse(&m.level).unwrap_or(LogLevel::Info);
            ctx.log(level, m.logger.as_deref(), m.data).await;
        }
    }
}
