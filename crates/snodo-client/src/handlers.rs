//! What the application registers: answers to the server's questions (elicitation,
//! sampling, roots) and callbacks for progress, logs and change events.

use std::fmt;
use std::sync::Arc;

use serde_json::{Map, Value, json};
use snodo::RpcError;

use crate::transport::BoxFuture;
use crate::types::{LogMessage, Progress, ServerEvent};

/// Answers one kind of server question: gets its params, returns its result.
pub type Handler = Arc<dyn Fn(Value) -> BoxFuture<'static, Result<Value, RpcError>> + Send + Sync>;

/// Answers the server's questions that belong to one call (see
/// [`CallOptions::on_server_request`](crate::CallOptions::on_server_request)): gets the
/// method (`elicitation/create`, `sampling/createMessage`, `roots/list`) and its params.
pub type CallHandler =
    Arc<dyn Fn(String, Value) -> BoxFuture<'static, Result<Value, RpcError>> + Send + Sync>;

/// Receives progress for a request.
pub type ProgressFn = Arc<dyn Fn(Progress) + Send + Sync>;
/// Receives log messages.
pub type LogFn = Arc<dyn Fn(LogMessage) + Send + Sync>;
/// Receives change events.
pub type EventFn = Arc<dyn Fn(ServerEvent) + Send + Sync>;

/// The registered handlers and callbacks.
#[derive(Clone, Default)]
pub(crate) struct Handlers {
    pub(crate) elicitation: Option<Handler>,
    pub(crate) sampling: Option<Handler>,
    pub(crate) roots: Option<Handler>,
    pub(crate) progress: Option<ProgressFn>,
    pub(crate) log: Option<LogFn>,
    pub(crate) event: Option<EventFn>,
}

impl fmt::Debug for Handlers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handlers")
            .field("elicitation", &self.elicitation.is_some())
            .field("sampling", &self.sampling.is_some())
            .field("roots", &self.roots.is_some())
            .finish_non_exhaustive()
    }
}

impl Handlers {
    /// The client capabilities these handlers make true.
    pub(crate) fn capabilities(&self) -> Value {
        let mut caps = Map::new();
        if self.elicitation.is_some() {
            caps.insert("elicitation".into(), json!({}));
        }
        if self.sampling.is_some() {
            caps.insert("sampling".into(), json!({}));
        }
        if self.roots.is_some() {
            caps.insert("roots".into(), json!({}));
        }
        Value::Object(caps)
    }

    /// The handler for a server request method, if one is registered.
    pub(crate) fn for_method(&self, method: &str) -> Option<&Handler> {
        match method {
            "elicitation/create" => self.elicitation.as_ref(),
            "sampling/createMessage" => self.sampling.as_ref(),
            "roots/list" => self.roots.as_ref(),
            _ => None,
        }
    }

    /// Answers a server request.
    pub(crate) async fn answer(&self, method: &str, params: Value) -> Result<Value, RpcError> {
        self.answer_for(method, params, None).await
    }

    /// Answers a server request that belongs to a call: the call's own handler (if it
    /// has one) answers the questions this client declared; the client's otherwise.
    pub(crate) async fn answer_for(
        &self,
        method: &str,
        params: Value,
        call: Option<&CallHandler>,
    ) -> Result<Value, RpcError> {
        if method == "ping" {
            return Ok(json!({}));
        }
        if let (Some(h), Some(_)) = (call, self.for_method(method)) {
            return h(method.to_owned(), params).await;
        }
        match self.for_method(method) {
            Some(h) => h(params).await,
            None => Err(RpcError::method_not_found(method)),
        }
    }

    /// Delivers a notification to the callbacks; `progress` and `log` override the
    /// client-wide ones.
    pub(crate) fn notify(
        &self,
        method: &str,
        params: &Value,
        progress: Option<&ProgressFn>,
        log: Option<&LogFn>,
    ) {
        match method {
            "notifications/progress" => {
                if let Some(cb) = progress.or(self.progress.as_ref()) {
                    cb(Progress {
                        progress: params
                            .get("progress")
                            .and_then(Value::as_f64)
                            .unwrap_or(0.0),
                        total: params.get("total").and_then(Value::as_f64),
                        message: params
                            .get("message")
                            .and_then(Value::as_str)
                            .map(str::to_owned),
                    });
                }
            }
            "notifications/message" => {
                if let Some(cb) = log.or(self.log.as_ref()) {
                    cb(LogMessage {
                        level: params
                            .get("level")
                            .and_then(Value::as_str)
                            .unwrap_or("info")
                            .to_owned(),
                        logger: params
                            .get("logger")
                            .and_then(Value::as_str)
                            .map(str::to_owned),
                        data: params.get("data").cloned().unwrap_or(Value::Null),
                    });
                }
            }
            "notifications/cancelled" | "notifications/subscriptions/acknowledged" => {}
            _ => {
                if let Some(cb) = &self.event {
                    cb(ServerEvent::from_notification(method, params));
                }
            }
        }
    }
}

/// An elicitation answer that accepts with every default the requested schema
/// declares (a helper for tests and unattended clients).
#[must_use]
pub fn accept_with_defaults(params: &Value) -> Value {
    let mut content = Map::new();
    if let Some(props) = params
        .pointer("/requestedSchema/properties")
        .and_then(Value::as_object)
    {
        for (k, p) in props {
            if let Some(d) = p.get("default") {
                content.insert(k.clone(), d.clone());
            }
        }
    }
    json!({"action": "accept", "content": content})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_fill_the_answer() {
        let p = json!({"message":"m","requestedSchema":{"type":"object","properties":{
            "name":{"type":"string","default":"John Doe"},"age":{"type":"integer","default":30},
            "free":{"type":"string"}}}});
        assert_eq!(
            accept_with_defaults(&p),
            json!({"action":"accept","content":{"name":"John Doe","age":30}})
        );
    }
}
