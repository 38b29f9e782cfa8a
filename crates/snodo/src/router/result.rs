//! [`ResultObject`]: a result as JSON fields plus members serialised ahead of time (list
//! pages, the server info, the 2026-07-28 envelope, a tool result), written once into
//! the response message.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::{Map, Value};

use crate::model::ToolResult;
use crate::protocol::json_text::str_len;
use crate::protocol::jsonrpc::write_id;
use crate::protocol::{Method, RequestId};

/// Members of a result that are already JSON text.
#[derive(Debug)]
pub(crate) enum Member {
    /// `"key":value`, the value shared (a list page, the server info).
    Keyed(&'static str, Arc<str>),
    /// One or more complete `"key":value` members, comma-separated.
    Text(Arc<str>),
    /// The same, known at compile time.
    Static(&'static str),
    /// A tool result, serialised straight into the message when it is written.
    Tool(ToolResult),
}

/// A JSON-RPC `result` object.
#[derive(Debug, Default)]
pub(crate) struct ResultObject {
    /// Ordinary members.
    pub(crate) fields: Map<String, Value>,
    /// Members already serialised (keys distinct from `fields` and from each other).
    pub(crate) members: Vec<Member>,
}

impl From<Map<String, Value>> for ResultObject {
    fn from(fields: Map<String, Value>) -> Self {
        Self {
            fields,
            members: Vec::new(),
        }
    }
}

impl ResultObject {
    /// A result made of one tool result.
    pub(crate) fn tool(result: ToolResult) -> Self {
        Self::from_member(Member::Tool(result))
    }

    /// Whether this is a tool result that reports an error (`isError`), serialised or
    /// reshaped into a tree.
    pub(crate) fn is_tool_error(&self) -> bool {
        self.fields.get("isError") == Some(&Value::Bool(true))
            || self
                .members
                .iter()
                .any(|m| matches!(m, Member::Tool(t) if t.is_error()))
    }

    /// The reason a tool's own limit gave (`_meta["io.snodo/limit"].reason`), if any.
    pub(crate) fn limit_reason(&self) -> Option<&str> {
        let key = crate::runtime::policy::LIMIT_META_KEY;
        let entry = self
            .fields
            .get("_meta")
            .and_then(|m| m.get(key))
            .or_else(|| {
                self.members.iter().find_map(|m| match m {
                    Member::Tool(t) => t.meta_entry(key),
                    _ => None,
                })
            })?;
        entry.get("reason").and_then(Value::as_str)
    }

    /// A result of one member, with room for the envelope members `finish` adds.
    pub(crate) fn from_member(member: Member) -> Self {
        let mut members = Vec::with_capacity(3);
        members.push(member);
        Self {
            fields: Map::new(),
            members,
        }
    }

    /// Writes the object as JSON text.
    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        let mut empty = true;
        let mut members = self.members.iter().peekable();
        if let (true, Some(Member::Tool(first))) = (self.fields.is_empty(), members.peek()) {
            // The usual tools/call result: the tool's object opens the result and is
            // reopened for the envelope members, written in place (no copy).
            let start = out.len();
            if first.write_json(out).is_ok() {
                out.pop();
                empty = out.len() == start + 1;
            } else {
                out.truncate(start);
                out.push(b'{');
            }
            members.next();
        } else if self.fields.is_empty() {
            out.push(b'{');
        } else {
            // A map of JSON values always serialises; reopen it for the raw members.
            let _ = serde_json::to_writer(&mut *out, &self.fields);
            out.pop();
            empty = false;
        }
        for member in members {
            let owned;
            let text = match member {
                Member::Keyed(key, json) => {
                    if !empty {
                        out.push(b',');
                    }
                    out.push(b'"');
                    out.extend_from_slice(key.as_bytes());
                    out.extend_from_slice(b"\":");
                    out.extend_from_slice(json.as_bytes());
                    empty = false;
                    continue;
                }
                Member::Text(t) => &**t,
                Member::Static(t) => t,
                Member::Tool(r) => {
                    let mut text = Vec::new();
                    owned = match r.write_json(&mut text) {
                        Ok(()) => String::from_utf8(text).unwrap_or_default(),
                        Err(_) => String::new(),
                    };
                    owned
                        .get(1..owned.len().saturating_sub(1))
                        .unwrap_or_default()
                }
            };
            if text.is_empty() {
                continue;
            }
            if !empty {
                out.push(b',');
            }
            out.extend_from_slice(text.as_bytes());
            empty = false;
        }
        out.push(b'}');
    }

    /// The object as JSON text.
    pub(crate) fn to_json(&self) -> String {
        let mut out = Vec::new();
        self.write(&mut out);
        String::from_utf8(out).unwrap_or_default()
    }

    /// The response message `{"jsonrpc":"2.0","id":…,"result":…}`, written in one buffer.
    pub(crate) fn message(&self, id: &RequestId) -> Bytes {
        Bytes::from(self.message_buffer(id))
    }

    /// The message's bytes, in a buffer sized from the result beforehand: grown by
    /// doubling, a large result would take up to twice its size at the peak, and the
    /// answer would keep the spare capacity while it waits to be written.
    fn message_buffer(&self, id: &RequestId) -> Vec<u8> {
        let fields = self
            .fields
            .iter()
            .map(|(k, v)| str_len(k) + 2 + json_len(v))
            .sum::<usize>();
        let guess = self
            .members
            .iter()
            .map(|m| match m {
                Member::Keyed(k, v) => k.len() + v.len() + 4,
                Member::Text(t) => t.len() + 1,
                Member::Static(t) => t.len() + 1,
                Member::Tool(r) => r.size_hint(),
            })
            .sum::<usize>();
        let mut out = Vec::with_capacity(guess + fields + 64);
        out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
        write_id(&mut out, id);
        out.extend_from_slice(b",\"result\":");
        self.write(&mut out);
        out.push(b'}');
        out
    }
}

/// About how many bytes `v` takes as JSON text: exact but for numbers (24 at most).
fn json_len(v: &Value) -> usize {
    match v {
        Value::Null | Value::Bool(_) => 5,
        Value::Number(_) => 24,
        Value::String(s) => str_len(s),
        Value::Array(items) => 2 + items.iter().map(|i| json_len(i) + 1).sum::<usize>(),
        Value::Object(map) => {
            2 + map
                .iter()
                .map(|(k, v)| str_len(k) + 2 + json_len(v))
                .sum::<usize>()
        }
    }
}

/// A JSON array of already-serialised items.
pub(crate) fn raw_array<'a>(items: impl Iterator<Item = &'a Arc<str>>) -> String {
    let mut out = String::from("[");
    for (i, item) in items.enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(item);
    }
    out.push(']');
    out
}

pub(crate) use crate::runtime::envelopes::{COMPLETE, Envelopes};

/// `resultType` (and the cache hint, for cacheable results) of a complete result.
pub(crate) fn complete(envelopes: &Envelopes, method: Method) -> Member {
    envelopes
        .hinted(method)
        .map_or(Member::Static(COMPLETE), |text| {
            Member::Text(Arc::clone(text))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::Caches;

    #[test]
    fn splices_raw_members() {
        let mut r = ResultObject::default();
        assert_eq!(r.to_json(), "{}");
        r.members.push(Member::Keyed(
            "tools",
            raw_array([Arc::from("{\"a\":1}"), Arc::from("2")].iter()).into(),
        ));
        assert_eq!(r.to_json(), r#"{"tools":[{"a":1},2]}"#);
        r.fields.insert("x".into(), Value::Bool(true));
        r.members.push(Member::Text("".into()));
        r.members.push(Member::Text(r#""y":[]"#.into()));
        r.members.push(Member::Static(COMPLETE));
        let v: Value = serde_json::from_str(&r.to_json()).unwrap_or_default();
        assert_eq!(
            v,
            serde_json::json!({"x": true, "tools": [{"a": 1}, 2], "y": [], "resultType": "complete"})
        );
        let only = ResultObject {
            members: vec![Member::Text("".into())],
            ..ResultObject::default()
        };
        assert_eq!(only.to_json(), "{}");
        let m = only.message(&RequestId::Number(-7));
        assert_eq!(&m[..], br#"{"jsonrpc":"2.0","id":-7,"result":{}}"#);
        // A tool result opens the object, wherever it is listed.
        let mut tool = ResultObject::tool(ToolResult::text("hi"));
        tool.members.push(Member::Static(COMPLETE));
        let expected = serde_json::json!({
            "content": [{"type": "text", "text": "hi"}], "isError": false, "resultType": "complete"
        });
        assert_eq!(
            serde_json::from_str::<Value>(&tool.to_json()).ok(),
            Some(expected.clone())
        );
        let mut later = ResultObject::default();
        later.fields.insert("resultType".into(), "complete".into());
        later.members.push(Member::Tool(ToolResult::text("hi")));
        assert_eq!(
            serde_json::from_str::<Value>(&later.to_json()).ok(),
            Some(expected)
        );
    }

    #[test]
    fn the_message_buffer_is_sized_once() {
        // Escapes, nesting and a text field: the buffer is not grown past what it holds.
        let text = "line\n\u{1}\"quoted\"\t".repeat(100_000);
        let mut r = ResultObject::default();
        r.fields.insert(
            "contents".into(),
            serde_json::json!([{"uri": "file:///a", "text": text, "n": [1, 2.5, null, true]}]),
        );
        r.members.push(Member::Static(COMPLETE));
        for r in [r, ResultObject::tool(ToolResult::text(text))] {
            let out = r.message_buffer(&RequestId::Number(1));
            let spare = out.capacity() - out.len();
            assert!(spare < 256, "{} of {}", out.len(), out.capacity());
        }
    }

    #[test]
    fn cache_hints_are_serialised_once() {
        let e = Envelopes::new(&Caches::default());
        let v: Value = serde_json::from_str(&format!(
            "{{{}}}",
            match complete(&e, Method::ToolsList) {
                Member::Text(t) => t.to_string(),
                _ => String::new(),
            }
        ))
        .unwrap_or_default();
        assert_eq!(
            v,
            serde_json::json!({"resultType": "complete", "ttlMs": 0, "cacheScope": "private"})
        );
        assert!(matches!(
            complete(&e, Method::ToolsCall),
            Member::Static(COMPLETE)
        ));
    }
}
