//! The demo's one mapping from a refused path or a failed system call to what the
//! client reads.
//!
//! A hidden, missing or outside path is the dialect's not-found error, the same for
//! all three. A system that cannot do it *now* (out of file descriptors or memory) is
//! said as such and marked retryable — [`RpcError::retry_later`] on a JSON-RPC error
//! (`data: {"retryable": true}`, and `503` where statuses follow codes: a read did
//! nothing, so a retry is safe), and `_meta["io.snodo/retryable"]: true` on a tool error
//! (which the model reads).

use serde_json::Value;
use snodo::{HandlerError, RpcError, ToolResult};

use super::fs::{MAX_FILE_BYTES, Refusal};

/// The `_meta` key that marks a tool error worth retrying.
pub(crate) const RETRYABLE_META: &str = "io.snodo/retryable";

/// What a reader, lister, completer or prompt answers when `what` (a relative path, or
/// "the folder") could not be served.
pub(crate) fn handler_error(refusal: Refusal, what: &str) -> HandlerError {
    match refusal {
        Refusal::NotFound | Refusal::Outside => HandlerError::NotFound,
        Refusal::TooLarge => RpcError::invalid_params(format!(
            "{what} is larger than the {} MiB read limit",
            MAX_FILE_BYTES / (1024 * 1024)
        ))
        .into(),
        Refusal::Unavailable(e) => RpcError::internal(unavailable(what, &e))
            .retry_later()
            .into(),
        Refusal::Failed(e) => RpcError::internal(format!("Cannot read {what}: {e}")).into(),
    }
}

/// The tool error of a tool that could not read `what`.
pub(crate) fn tool_error(refusal: Refusal, what: &str) -> ToolResult {
    match refusal {
        Refusal::Unavailable(e) => {
            ToolResult::error(unavailable(what, &e)).with_meta(RETRYABLE_META, Value::Bool(true))
        }
        Refusal::Failed(e) => ToolResult::error(format!("Cannot read {what}: {e}")),
        Refusal::NotFound | Refusal::Outside => ToolResult::error(format!("No such file: {what}")),
        Refusal::TooLarge => ToolResult::error(format!(
            "{what} is larger than the {} MiB read limit",
            MAX_FILE_BYTES / (1024 * 1024)
        )),
    }
}

fn unavailable(what: &str, e: &str) -> String {
    format!("Cannot read {what} now: the server is short of system resources ({e}); retry shortly")
}
