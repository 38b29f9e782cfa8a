//! The 2026-07-28 mirror headers a client computes: `Mcp-Name`, and `Mcp-Param-{Name}`
//! from a tool's `x-mcp-header` annotations (found and validated by the same code the
//! server uses, [`snodo::ParamHeader::from_schema`]).

use base64::Engine as _;
use serde_json::Value;
use snodo::{ParamHeader, ParamHeaderError};

/// Encodes a header value: as-is when it is visible ASCII with inner spaces only,
/// else the `=?base64?…?=` sentinel form.
pub(crate) fn encode(value: &str) -> String {
    let plain = value.bytes().all(|b| (0x20..0x7f).contains(&b))
        && value.trim_matches(' ') == value
        && !(value.starts_with("=?base64?") && value.ends_with("?="));
    if plain {
        value.to_owned()
    } else {
        format!(
            "=?base64?{}?=",
            base64::engine::general_purpose::STANDARD.encode(value.as_bytes())
        )
    }
}

/// The tool's mirrored arguments; `Err` when an annotation is invalid (the client then
/// excludes the tool).
pub(crate) fn tool_headers(input_schema: &Value) -> Result<Vec<ParamHeader>, ParamHeaderError> {
    ParamHeader::from_schema(input_schema)
}

/// The `Mcp-Param-*` headers (name suffix, encoded value) for a call's arguments.
pub(crate) fn param_values(headers: &[ParamHeader], arguments: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for h in headers {
        let mut v = Some(arguments);
        for key in &h.path {
            v = v.and_then(|x| x.get(key));
        }
        let text = match v {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Bool(b)) => b.to_string(),
            Some(Value::Number(n)) => n.to_string(),
            _ => continue,
        };
        out.push((h.name.clone(), encode(&text)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn encodes_only_what_needs_it() {
        assert_eq!(encode("us west 1"), "us west 1");
        assert_eq!(encode(" padded "), "=?base64?IHBhZGRlZCA=?=");
        assert_eq!(encode("\tindented"), "=?base64?CWluZGVudGVk?=");
        assert!(encode("Hello, 世界").starts_with("=?base64?"));
        assert_eq!(encode(""), "");
    }

    #[test]
    fn mirrors_annotated_present_values() {
        let schema = json!({"type":"object","properties":{
            "region":{"type":"string","x-mcp-header":"Region"},
            "n":{"type":"integer","x-mcp-header":"N"},
            "v":{"type":"boolean","x-mcp-header":"V"},
            "q":{"type":"string"}}});
        let h = tool_headers(&schema).unwrap_or_default();
        let mut got = param_values(&h, &json!({"region":"eu","n":42,"v":null,"q":"x"}));
        got.sort();
        assert_eq!(
            got,
            vec![("N".into(), "42".into()), ("Region".into(), "eu".into())]
        );
        assert!(
            tool_headers(&json!({"properties":{"x":{"type":"number","x-mcp-header":"X"}}}))
                .is_err()
        );
    }
}
