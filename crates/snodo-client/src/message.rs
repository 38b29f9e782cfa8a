//! JSON-RPC messages as the client sees them: what it sends and how it sorts what
//! arrives.

use bytes::Bytes;
use serde_json::{Map, Value, json};
use snodo::RpcError;
use snodo::protocol::RequestId;

use crate::error::rpc_error;

/// One message from the server, sorted by kind.
#[derive(Debug)]
pub(crate) enum Incoming {
    /// The answer to a request: its id and result or error.
    Response {
        id: Option<RequestId>,
        outcome: Result<Value, RpcError>,
    },
    /// A request from the server (legacy sampling, elicitation, roots, ping).
    Request {
        id: RequestId,
        method: String,
        params: Value,
    },
    /// A notification.
    Notification { method: String, params: Value },
}

impl Incoming {
    /// Sorts one parsed JSON value; `None` for anything that is not a JSON-RPC message.
    pub(crate) fn classify(v: Value) -> Option<Self> {
        let Value::Object(mut m) = v else {
            return None;
        };
        let id = m.get("id").and_then(request_id);
        let params = m.remove("params").unwrap_or(Value::Null);
        if let Some(Value::String(method)) = m.remove("method") {
            return Some(match id {
                Some(id) => Self::Request { id, method, params },
                None => Self::Notification { method, params },
            });
        }
        if let Some(result) = m.remove("result") {
            return Some(Self::Response {
                id,
                outcome: Ok(result),
            });
        }
        let error = m.remove("error")?;
        Some(Self::Response {
            outcome: Err(rpc_error(&error)),
            id,
        })
    }
}

/// A message's `id` as [`RequestId`]'s `Deserialize` reads it (an integer that fits
/// an `i64`, or a string; anything else is none), read from the tree in place (that
/// `Deserialize` is untagged: it would first copy the value into a buffer).
pub(crate) fn request_id(v: &Value) -> Option<RequestId> {
    match v {
        Value::Number(n) => n.as_i64().map(RequestId::Number),
        Value::String(s) => Some(RequestId::String(s.as_str().into())),
        _ => None,
    }
}

/// Serialises a request.
pub(crate) fn request(id: &RequestId, method: &str, params: &Map<String, Value>) -> Bytes {
    request_with(id, method, Params { params, added: &[] })
}

/// A value borrowed into an outgoing message.
#[derive(Clone, Copy)]
pub(crate) enum Borrowed<'a> {
    Str(&'a str),
    Json(&'a Value),
    /// JSON text, written as it is.
    Raw(&'a serde_json::value::RawValue),
}

impl Borrowed<'_> {
    fn write(&self, out: &mut Vec<u8>) {
        match self {
            Self::Str(v) => push_json(out, v),
            Self::Json(v) => push_json(out, v),
            Self::Raw(v) => out.extend_from_slice(v.get().as_bytes()),
        }
    }
}

/// A request's `params`, written from the caller's map without copying it: its own
/// `_meta` (when an object) with `added` over it, the other members as they are. An
/// empty `_meta` is left out, as are empty `params`. The keys of `added` are this
/// crate's constants, written as they are (they hold nothing JSON escapes).
pub(crate) struct Params<'a> {
    pub(crate) params: &'a Map<String, Value>,
    pub(crate) added: &'a [(&'static str, Borrowed<'a>)],
}

impl<'a> Params<'a> {
    fn base(&self) -> Option<&'a Map<String, Value>> {
        match self.params.get("_meta") {
            Some(Value::Object(m)) => Some(m),
            _ => None,
        }
    }

    fn has_meta(&self) -> bool {
        !self.added.is_empty() || self.base().is_some_and(|b| !b.is_empty())
    }

    fn is_empty(&self) -> bool {
        let own = self.params.len() - usize::from(self.params.contains_key("_meta"));
        own == 0 && !self.has_meta()
    }

    /// Writes the params object: the caller's members but `_meta` in their order, then
    /// `_meta` (the caller's members that `added` does not name, then `added`).
    fn write(&self, out: &mut Vec<u8>) {
        out.push(b'{');
        let mut first = true;
        for (k, v) in self.params {
            if k != "_meta" {
                member(out, &mut first, k);
                push_json(out, v);
            }
        }
        if !self.has_meta() {
            out.push(b'}');
            return;
        }
        member_static(out, &mut first, "_meta");
        out.push(b'{');
        let mut first = true;
        let added = self.added;
        for (k, v) in self.base().into_iter().flatten() {
            if !added.iter().any(|(a, _)| a == k) {
                member(out, &mut first, k);
                push_json(out, v);
            }
        }
        for (k, v) in added {
            member_static(out, &mut first, k);
            v.write(out);
        }
        out.extend_from_slice(b"}}");
    }
}

/// Appends `value` as JSON text (a map of strings and JSON values cannot fail).
fn push_json<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    let _ = serde_json::to_writer(&mut *out, value);
}

/// Starts an object member: the separator, then `"key":` escaped as needed.
fn member(out: &mut Vec<u8>, first: &mut bool, key: &str) {
    if !std::mem::take(first) {
        out.push(b',');
    }
    push_json(out, key);
    out.push(b':');
}

/// Starts an object member whose key is a constant of this crate (nothing to escape).
fn member_static(out: &mut Vec<u8>, first: &mut bool, key: &'static str) {
    debug_assert!(
        key.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\'),
        "{key}"
    );
    if !std::mem::take(first) {
        out.push(b',');
    }
    out.push(b'"');
    out.extend_from_slice(key.as_bytes());
    out.extend_from_slice(b"\":");
}

/// Writes a request whose `_meta` gets `added` (see [`Params`]) straight into its
/// bytes: `{"jsonrpc":"2.0","id":…,"method":…,"params":{…}}`, members in that order.
pub(crate) fn request_with(id: &RequestId, method: &str, params: Params<'_>) -> Bytes {
    let raw: usize = params
        .added
        .iter()
        .map(|(k, v)| {
            k.len()
                + match v {
                    Borrowed::Raw(r) => r.get().len(),
                    _ => 16,
                }
        })
        .sum();
    let mut out = Vec::with_capacity(192 + raw);
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    push_json(&mut out, id);
    out.extend_from_slice(b",\"method\":");
    push_json(&mut out, method);
    if !params.is_empty() {
        out.extend_from_slice(b",\"params\":");
        params.write(&mut out);
    }
    out.push(b'}');
    Bytes::from(out)
}

/// Serialises a notification.
pub(crate) fn notification(method: &str, params: Option<Value>) -> Bytes {
    let mut m = Map::new();
    m.insert("jsonrpc".into(), json!("2.0"));
    m.insert("method".into(), json!(method));
    if let Some(p) = params {
        m.insert("params".into(), p);
    }
    Bytes::from(Value::Object(m).to_string())
}

/// Serialises the answer to a server request.
pub(crate) fn response(id: &RequestId, outcome: &Result<Value, RpcError>) -> Bytes {
    let body = match outcome {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err(e) => {
            let mut err = json!({"code": e.code().0, "message": e.message()});
            if let (Some(data), Value::Object(m)) = (e.data(), &mut err) {
                m.insert("data".into(), data.clone());
            }
            json!({"jsonrpc": "2.0", "id": id, "error": err})
        }
    };
    Bytes::from(body.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize as _;

    #[test]
    fn sorts_messages() {
        let r = Incoming::classify(json!({"jsonrpc":"2.0","id":3,"result":{"a":1}}));
        assert!(matches!(
            r,
            Some(Incoming::Response {
                id: Some(RequestId::Number(3)),
                outcome: Ok(_)
            })
        ));
        let e = Incoming::classify(
            json!({"jsonrpc":"2.0","id":"x","error":{"code":-32601,"message":"m"}}),
        );
        match e {
            Some(Incoming::Response {
                outcome: Err(e), ..
            }) => assert_eq!(e.code().0, -32601),
            other => panic!("{other:?}"),
        }
        let q = Incoming::classify(json!({"jsonrpc":"2.0","id":1,"method":"roots/list"}));
        assert!(matches!(q, Some(Incoming::Request { .. })));
        let n = Incoming::classify(
            json!({"jsonrpc":"2.0","method":"notifications/progress","params":{}}),
        );
        assert!(matches!(n, Some(Incoming::Notification { .. })));
        assert!(Incoming::classify(json!([1])).is_none());
    }

    #[test]
    fn requests_are_written_without_copying_params() {
        let id = RequestId::Number(7);
        let parse = |b: Bytes| serde_json::from_slice::<Value>(&b).unwrap();
        // No params at all, and params that are only an empty or non-object `_meta`.
        for p in [json!({}), json!({"_meta": {}}), json!({"_meta": 3})] {
            let Value::Object(p) = p else { unreachable!() };
            let v = parse(request(&id, "ping", &p));
            assert_eq!(v, json!({"jsonrpc": "2.0", "id": 7, "method": "ping"}));
        }
        // The caller's `_meta` kept, the added members written over it.
        let Value::Object(p) = json!({
            "name": "echo",
            "arguments": {"text": "hi"},
            "_meta": {"mine": 1, "progressToken": "old"},
        }) else {
            unreachable!()
        };
        let caps = json!({"sampling": {}});
        let token = json!("p7");
        let added = [
            (
                "io.modelcontextprotocol/protocolVersion",
                Borrowed::Str("2026-07-28"),
            ),
            (
                "io.modelcontextprotocol/clientCapabilities",
                Borrowed::Json(&caps),
            ),
            ("progressToken", Borrowed::Json(&token)),
        ];
        let v = parse(request_with(
            &id,
            "tools/call",
            Params {
                params: &p,
                added: &added,
            },
        ));
        assert_eq!(
            v,
            json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
                "name": "echo",
                "arguments": {"text": "hi"},
                "_meta": {
                    "mine": 1,
                    "progressToken": "p7",
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {"sampling": {}},
                },
            }})
        );
        // JSON text written as it is: the same message as the tree it came from.
        let raw = serde_json::value::to_raw_value(&caps).unwrap_or_default();
        let with = |b: Borrowed<'_>| {
            parse(request_with(
                &id,
                "ping",
                Params {
                    params: &Map::new(),
                    added: &[("c", b)],
                },
            ))
        };
        assert_eq!(with(Borrowed::Raw(&raw)), with(Borrowed::Json(&caps)));
        assert_eq!(with(Borrowed::Raw(&raw))["params"]["_meta"]["c"], caps);
        // Added members alone make a `_meta` for params that had none.
        let v = parse(request_with(
            &id,
            "ping",
            Params {
                params: &Map::new(),
                added: &added[..1],
            },
        ));
        assert_eq!(
            v["params"],
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}})
        );
    }

    #[test]
    fn requests_are_written_byte_for_byte_as_before() {
        // The text the serde writer made: members in this order, params sorted with
        // `_meta` last, the caller's `_meta` members before the added ones.
        let Value::Object(p) = json!({
            "name": "e\"cho",
            "arguments": {"text": "h\ni", "b": [1, 2.5, null]},
            "_meta": {"mine": 1, "progressToken": "old", "z\u{1}": true},
        }) else {
            unreachable!()
        };
        let caps = serde_json::value::to_raw_value(&json!({"roots": {}})).unwrap_or_default();
        let token = json!("p7");
        let added = [
            (
                "io.modelcontextprotocol/protocolVersion",
                Borrowed::Str("2026-07-28"),
            ),
            (
                "io.modelcontextprotocol/clientCapabilities",
                Borrowed::Raw(&caps),
            ),
            ("progressToken", Borrowed::Json(&token)),
        ];
        let b = request_with(
            &RequestId::String("a\"b".into()),
            "tools/call",
            Params {
                params: &p,
                added: &added,
            },
        );
        assert_eq!(
            std::str::from_utf8(&b).unwrap(),
            concat!(
                r#"{"jsonrpc":"2.0","id":"a\"b","method":"tools/call","params":{"#,
                r#""arguments":{"b":[1,2.5,null],"text":"h\ni"},"name":"e\"cho","_meta":{"#,
                r#""mine":1,"z\u0001":true,"#,
                r#""io.modelcontextprotocol/protocolVersion":"2026-07-28","#,
                r#""io.modelcontextprotocol/clientCapabilities":{"roots":{}},"#,
                r#""progressToken":"p7"}}}"#
            )
        );
        let b = request(&RequestId::Number(-3), "ping", &Map::new());
        assert_eq!(&b[..], br#"{"jsonrpc":"2.0","id":-3,"method":"ping"}"#);
    }

    #[test]
    fn ids_are_read_as_their_deserialize_reads_them() {
        for v in [
            json!(0),
            json!(-7),
            json!(i64::MAX),
            json!(u64::MAX),
            json!(1.0),
            json!(1.5),
            json!("x\"y"),
            json!(""),
            json!(null),
            json!(true),
            json!([1]),
            json!({"a": 1}),
        ] {
            assert_eq!(request_id(&v), RequestId::deserialize(&v).ok(), "{v}");
        }
    }
}
