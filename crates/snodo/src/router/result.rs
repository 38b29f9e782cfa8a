//! [`ResultObject`]: a result as JSON fields plus members serialised ahead of time
//! (list items, the server info), so that hot paths do not rebuild them per request.

use std::fmt::Write as _;
use std::sync::Arc;

use serde_json::{Map, Value};

/// A JSON-RPC `result` object.
#[derive(Debug, Default)]
pub(crate) struct ResultObject {
    /// Ordinary members.
    pub(crate) fields: Map<String, Value>,
    /// Members whose values are already JSON text (keys distinct from `fields`).
    pub(crate) raw: Vec<(&'static str, Arc<str>)>,
}

impl From<Map<String, Value>> for ResultObject {
    fn from(fields: Map<String, Value>) -> Self {
        Self {
            fields,
            raw: Vec::new(),
        }
    }
}

impl ResultObject {
    /// The object as JSON text.
    pub(crate) fn to_json(&self) -> String {
        let mut out = serde_json::to_string(&self.fields).unwrap_or_else(|_| "{}".to_owned());
        if self.raw.is_empty() {
            return out;
        }
        out.pop(); // the closing brace
        for (i, (key, json)) in self.raw.iter().enumerate() {
            if i > 0 || !self.fields.is_empty() {
                out.push(',');
            }
            let _ = write!(out, "\"{key}\":{json}");
        }
        out.push('}');
        out
    }
}

/// A JSON array of already-serialised items.
pub(crate) fn raw_array<'a>(items: impl Iterator<Item = &'a Arc<str>>) -> Arc<str> {
    let mut out = String::from("[");
    for (i, item) in items.enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(item);
    }
    out.push(']');
    Arc::from(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splices_raw_members() {
        let mut r = ResultObject::default();
        assert_eq!(r.to_json(), "{}");
        r.raw.push((
            "tools",
            raw_array([Arc::from("{\"a\":1}"), Arc::from("2")].iter()),
        ));
        assert_eq!(r.to_json(), r#"{"tools":[{"a":1},2]}"#);
        r.fields.insert("x".into(), Value::Bool(true));
        let v: Value = serde_json::from_str(&r.to_json()).unwrap_or_default();
        assert_eq!(v, serde_json::json!({"x": true, "tools": [{"a": 1}, 2]}));
    }
}
