//! Asking the client for input: elicitation, sampling and roots.
//!
//! One handler API for both eras. A handler calls
//! [`RequestContext::ask`](super::context::RequestContext::ask):
//! - on 2026-07-28 the answer comes from the request's `inputResponses` (or the signed
//!   `requestState` of an earlier round); when it is missing the handler returns
//!   [`HandlerError::InputRequired`](super::error::HandlerError) with `?`, and the
//!   client retries with the answers (multi round-trip requests);
//! - on initialize-era dialects (when the runtime enables server requests) the question
//!   goes to the client as a JSON-RPC request on the calling request's SSE stream, and
//!   the client's answer, POSTed separately, is routed back by its server-minted id.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use serde::Serialize;
use serde_json::{Map, Value, json};
use sha2::Sha256;

use crate::protocol::RpcError;

/// One question for the client: a method and its params (`elicitation/create`,
/// `sampling/createMessage` or `roots/list`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct InputRequest {
    method: &'static str,
    params: Value,
}

impl InputRequest {
    /// Form elicitation: ask the user to fill `requested_schema` (an object schema of
    /// primitive properties).
    pub fn elicit(message: impl Into<String>, mut requested_schema: Value) -> Self {
        // The protocol requires an object schema with `properties`.
        if let Value::Object(schema) = &mut requested_schema {
            schema.entry("type").or_insert_with(|| json!("object"));
            schema.entry("properties").or_insert_with(|| json!({}));
        }
        Self {
            method: "elicitation/create",
            params: json!({"mode": "form", "message": message.into(), "requestedSchema": requested_schema}),
        }
    }

    /// URL elicitation: send the user to `url`.
    pub fn elicit_url(message: impl Into<String>, url: impl Into<String>) -> Self {
        Self {
            method: "elicitation/create",
            params: json!({"mode": "url", "message": message.into(), "url": url.into()}),
        }
    }

    /// Sampling: ask the client's model for a completion of one user message.
    pub fn sample(prompt: impl Into<String>, max_tokens: u32) -> Self {
        Self {
            method: "sampling/createMessage",
            params: json!({
                "messages": [{"role": "user", "content": {"type": "text", "text": prompt.into()}}],
                "maxTokens": max_tokens
            }),
        }
    }

    /// Sampling with explicit `sampling/createMessage` params.
    #[must_use]
    pub fn sample_with(params: Value) -> Self {
        Self {
            method: "sampling/createMessage",
            params,
        }
    }

    /// The client's roots.
    #[must_use]
    pub fn list_roots() -> Self {
        Self {
            method: "roots/list",
            params: json!({}),
        }
    }

    /// A question as another server sent it (a proxy relaying a backend's question):
    /// `elicitation/create`, `sampling/createMessage` or `roots/list` with its params;
    /// `None` for any other method.
    ///
    /// ```
    /// use serde_json::json;
    /// use snodo::InputRequest;
    /// let q = InputRequest::from_wire("roots/list", json!({})).unwrap();
    /// assert_eq!(q, InputRequest::list_roots());
    /// assert!(InputRequest::from_wire("tools/call", json!({})).is_none());
    /// ```
    #[must_use]
    pub fn from_wire(method: &str, params: Value) -> Option<Self> {
        let method = match method {
            "elicitation/create" => "elicitation/create",
            "sampling/createMessage" => "sampling/createMessage",
            "roots/list" => "roots/list",
            _ => return None,
        };
        let params = if params.is_null() { json!({}) } else { params };
        Some(Self { method, params })
    }

    /// The method.
    #[must_use]
    pub fn method(&self) -> &'static str {
        self.method
    }

    /// The params.
    #[must_use]
    pub fn params(&self) -> &Value {
        &self.params
    }

    /// The client capability this question needs, as a ClientCapabilities object.
    pub(crate) fn required_capability(&self) -> (&'static str, Value) {
        match self.method {
            "sampling/createMessage" => ("sampling", json!({"sampling": {}})),
            "roots/list" => ("roots", json!({"roots": {}})),
            _ if self.params.get("mode").and_then(Value::as_str) == Some("url") => {
                ("elicitation", json!({"elicitation": {"url": {}}}))
            }
            _ => ("elicitation", json!({"elicitation": {}})),
        }
    }

    /// Whether the client's capabilities cover this question.
    pub(crate) fn allowed_by(&self, caps: Option<&Map<String, Value>>) -> bool {
        let (name, _) = self.required_capability();
        let Some(cap) = caps.and_then(|c| c.get(name)) else {
            return false;
        };
        if self.method != "elicitation/create" {
            return true;
        }
        // `elicitation: {}` means form only; modes are listed otherwise.
        let mode = self
            .params
            .get("mode")
            .and_then(Value::as_str)
            .unwrap_or("form");
        let listed = cap.as_object().is_some_and(|m| !m.is_empty());
        if listed {
            cap.get(mode).is_some()
        } else {
            mode == "form"
        }
    }

    /// Whether `response` is a well-formed answer to this question.
    pub(crate) fn accepts(&self, response: &Value) -> bool {
        match self.method {
            "elicitation/create" => response
                .get("action")
                .and_then(Value::as_str)
                .is_some_and(|a| matches!(a, "accept" | "decline" | "cancel")),
            "sampling/createMessage" => {
                response.get("role").is_some() && response.get("content").is_some()
            }
            "roots/list" => response.get("roots").is_some_and(Value::is_array),
            _ => false,
        }
    }
}

/// Questions a handler needs answered before it can finish (2026-07-28:
/// `resultType: "input_required"`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct InputRequired {
    pub(crate) requests: Map<String, Value>,
    pub(crate) state: Option<Value>,
}

impl InputRequired {
    /// No questions yet.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a question under `key`.
    #[must_use]
    pub fn ask(mut self, key: impl Into<String>, request: InputRequest) -> Self {
        self.requests.insert(
            key.into(),
            serde_json::to_value(request).unwrap_or_default(),
        );
        self
    }

    /// Attaches application state, returned by
    /// [`RequestContext::request_state`](super::context::RequestContext::request_state)
    /// on the retry. It travels signed: the client cannot change it.
    #[must_use]
    pub fn with_state(mut self, state: Value) -> Self {
        self.state = Some(state);
        self
    }
}

/// What a verified `requestState` carries.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct StateContents {
    /// Answers collected in earlier rounds.
    pub(crate) answers: Map<String, Value>,
    /// The application's own state.
    pub(crate) app: Option<Value>,
}

/// Signs and verifies `requestState` with HMAC-SHA256; every instance that holds the
/// same key accepts the others' states.
#[derive(Clone)]
pub(crate) struct StateSigner {
    mac: Hmac<Sha256>,
    ttl: Duration,
}

impl std::fmt::Debug for StateSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateSigner")
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

impl StateSigner {
    /// A signer with `key` (any length; `None` only if the MAC refuses the key).
    pub(crate) fn new(key: &[u8], ttl: Duration) -> Option<Self> {
        <Hmac<Sha256> as Mac>::new_from_slice(key)
            .ok()
            .map(|mac| Self { mac, ttl })
    }

    fn mac(&self) -> Hmac<Sha256> {
        self.mac.clone()
    }

    /// Seals the state of one request: bound to its method, target and principal.
    pub(crate) fn seal(&self, scope: &str, contents: &StateContents) -> String {
        let body = json!({
            "s": scope,
            "x": now() + self.ttl.as_secs(),
            "a": contents.answers,
            "u": contents.app,
        })
        .to_string();
        let mut mac = self.mac();
        mac.update(body.as_bytes());
        let tag = mac.finalize().into_bytes();
        format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(body),
            URL_SAFE_NO_PAD.encode(tag)
        )
    }

    /// Opens a state sealed by [`seal`](Self::seal) for the same scope.
    pub(crate) fn open(&self, scope: &str, state: &str) -> Result<StateContents, RpcError> {
        let invalid = || {
            RpcError::invalid_params(
                "Invalid requestState: it was altered, has expired or belongs to another request",
            )
        };
        let (body, tag) = state.split_once('.').ok_or_else(invalid)?;
        let body = URL_SAFE_NO_PAD.decode(body).map_err(|_| invalid())?;
        let tag = URL_SAFE_NO_PAD.decode(tag).map_err(|_| invalid())?;
        let mut mac = self.mac();
        mac.update(&body);
        mac.verify_slice(&tag).map_err(|_| invalid())?;
        let v: Value = serde_json::from_slice(&body).map_err(|_| invalid())?;
        if v.get("s").and_then(Value::as_str) != Some(scope) {
            return Err(invalid());
        }
        if v.get("x").and_then(Value::as_u64).is_none_or(|x| x < now()) {
            return Err(invalid());
        }
        let answers = v
            .get("a")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let app = v.get("u").filter(|u| !u.is_null()).cloned();
        Ok(StateContents { answers, app })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_round_trip_and_tampering() {
        let signer = |k: &[u8], ttl| StateSigner::new(k, ttl).unwrap_or_else(|| panic!("key"));
        let s = signer(b"k", Duration::from_secs(60));
        let c = StateContents {
            answers: Map::from_iter([("a".into(), json!(1))]),
            app: Some(json!("x")),
        };
        let sealed = s.seal("tools/call:t", &c);
        assert_eq!(s.open("tools/call:t", &sealed).ok(), Some(c));
        assert!(s.open("tools/call:u", &sealed).is_err());
        assert!(
            s.open("tools/call:t", &format!("{sealed}-TAMPERED"))
                .is_err()
        );
        let other = signer(b"other", Duration::from_secs(60));
        assert!(other.open("tools/call:t", &sealed).is_err());
        let expired = signer(b"k", Duration::ZERO);
        let old = expired.seal("x", &StateContents::default());
        std::thread::sleep(Duration::from_millis(1100));
        assert!(expired.open("x", &old).is_err());
    }

    #[test]
    fn capabilities_and_answers() {
        let caps: Map<String, Value> =
            serde_json::from_value(json!({"sampling": {}, "elicitation": {}})).unwrap_or_default();
        assert!(InputRequest::sample("p", 10).allowed_by(Some(&caps)));
        assert!(InputRequest::elicit("m", json!({})).allowed_by(Some(&caps)));
        assert!(!InputRequest::elicit_url("m", "https://x").allowed_by(Some(&caps)));
        assert!(!InputRequest::list_roots().allowed_by(Some(&caps)));
        assert!(
            InputRequest::elicit("m", json!({}))
                .accepts(&json!({"action": "accept", "content": {}}))
        );
        assert!(!InputRequest::elicit("m", json!({})).accepts(&json!(12345)));
        assert!(InputRequest::list_roots().accepts(&json!({"roots": []})));
    }
}
