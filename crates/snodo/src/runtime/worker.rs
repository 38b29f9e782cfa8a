//! [`Worker`]: the job a request context runs as, when it runs as one (a task of the
//! tasks extension), seen by the context without naming the extension.

use futures_util::future::BoxFuture;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::error::HandlerError;

/// What a handler's context can ask of the job it works for.
pub(crate) trait Worker: Send + Sync + 'static {
    /// The job's id.
    fn id(&self) -> &str;

    /// Sets the job's status message (the handler's progress).
    fn status(&self, message: String) -> BoxFuture<'_, ()>;

    /// Parks the job until every one of `outstanding` is answered (`accepts`: whether
    /// an answer is well-formed); the answers.
    fn collect<'a>(
        &'a self,
        outstanding: Map<String, Value>,
        accepts: &'a (dyn Fn(&str, &Value) -> bool + Send + Sync),
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<Map<String, Value>, HandlerError>>;
}
