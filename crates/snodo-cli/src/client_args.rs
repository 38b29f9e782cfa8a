//! `snodo client … call TOOL key=value …`: the arguments typed by the tool's input
//! schema, fetched from the server before the call.
//!
//! A value is taken as the schema's property says: a string stays a string (`query=5`
//! sends `"5"`); `integer`, `number`, `boolean` and `null` are parsed; `object` and
//! `array` are read as JSON. When a property allows several types and one of them is
//! `string`, the text is sent as a string; otherwise the first type it parses as wins.
//! A value that fits none of the property's types, or outside its `enum`, is refused
//! before anything is sent, and so is a key the schema closes out
//! (`additionalProperties: false`). A key the schema says nothing about (or a tool the
//! server did not list) keeps the untyped rule: JSON if it parses, else a string.

use serde_json::{Map, Value, json};
use snodo_client::Client;

/// `call TOOL k=v …` as typed on the command line.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct CallShortcut {
    /// The tool's name.
    pub(crate) tool: String,
    /// The `key=value` pairs, in order, values as typed.
    pub(crate) pairs: Vec<(String, String)>,
}

impl CallShortcut {
    /// Splits `TOOL k=v …`.
    pub(crate) fn parse(words: &[String]) -> Result<Self, String> {
        let Some((tool, rest)) = words.split_first() else {
            return Err(
                "call needs a tool name: snodo client ... call TOOL [key=value ...]".into(),
            );
        };
        let pairs = rest
            .iter()
            .map(|kv| {
                kv.split_once('=')
                    .map(|(k, v)| (k.to_owned(), v.to_owned()))
                    .ok_or_else(|| format!("{kv:?} is not key=value"))
            })
            .collect::<Result<_, _>>()?;
        Ok(Self {
            tool: tool.clone(),
            pairs,
        })
    }

    /// The `tools/call` params, each value typed by `input_schema` (the tool's, or
    /// `None` when the server did not list it).
    pub(crate) fn params(&self, input_schema: Option<&Value>) -> Result<Value, String> {
        let root = input_schema.unwrap_or(&Value::Null);
        let properties = root.get("properties").and_then(Value::as_object);
        let closed = root.get("additionalProperties") == Some(&Value::Bool(false));
        let mut args = Map::new();
        for (key, text) in &self.pairs {
            let value = match properties.and_then(|p| p.get(key)) {
                Some(property) => type_value(root, property, text)
                    .map_err(|e| format!("argument {key}={text}: {e} (tool {})", self.tool))?,
                None if closed => {
                    let known: Vec<&str> = properties
                        .map(|p| p.keys().map(String::as_str).collect())
                        .unwrap_or_default();
                    return Err(format!(
                        "tool {} has no argument {key:?} (its arguments: {})",
                        self.tool,
                        if known.is_empty() {
                            "none".to_owned()
                        } else {
                            known.join(", ")
                        }
                    ));
                }
                None => untyped(text),
            };
            args.insert(key.clone(), value);
        }
        Ok(json!({"name": self.tool, "arguments": args}))
    }
}

/// The params of `method`: for the shortcut `call` (`words` = TOOL k=v …), each value
/// typed by the tool's input schema (the server's tools/list; untyped if it cannot be
/// listed); for any other method, `params` as they are.
pub(crate) async fn call_params(
    client: &Client,
    method: &str,
    words: &[String],
    params: Value,
) -> Result<Value, String> {
    if method != "call" {
        return Ok(params);
    }
    let call = CallShortcut::parse(words)?;
    let tools = client.list_tools().await.unwrap_or_default();
    let tool = tools.iter().find(|t| t.name == call.tool);
    call.params(tool.map(|t| &t.input_schema))
}

/// The untyped rule: JSON if it parses, else the text as a string.
fn untyped(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()))
}

/// Most `$ref` hops followed (a cycle in a schema is not followed forever).
const MAX_REFS: usize = 16;

/// Follows a local `$ref` (`#/$defs/…`, `#/definitions/…`) from the schema's root.
fn deref<'a>(root: &'a Value, mut schema: &'a Value) -> &'a Value {
    for _ in 0..MAX_REFS {
        let Some(pointer) = schema
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix('#'))
        else {
            break;
        };
        match root.pointer(pointer) {
            Some(target) => schema = target,
            None => break,
        }
    }
    schema
}

/// The JSON types `schema` allows (from `type`, `anyOf`/`oneOf` members, or the values
/// of `enum`/`const`), in the order written; empty when it says nothing.
fn types(root: &Value, schema: &Value, depth: usize) -> Vec<String> {
    let schema = deref(root, schema);
    let mut out: Vec<String> = match schema.get("type") {
        Some(Value::String(t)) => vec![t.clone()],
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    };
    if out.is_empty() && depth < MAX_REFS {
        for key in ["anyOf", "oneOf"] {
            for member in schema
                .get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                out.extend(types(root, member, depth + 1));
            }
        }
    }
    if out.is_empty() {
        let values = schema
            .get("enum")
            .and_then(Value::as_array)
            .cloned()
            .or_else(|| schema.get("const").map(|c| vec![c.clone()]))
            .unwrap_or_default();
        out.extend(values.iter().map(|v| type_of(v).to_owned()));
    }
    let mut seen = Vec::new();
    out.retain(|t| {
        let new = !seen.contains(t);
        seen.push(t.clone());
        new
    });
    out
}

fn type_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// `text` as one of `ty`, if it is one.
fn parse_as(ty: &str, text: &str) -> Option<Value> {
    match ty {
        "string" => Some(Value::String(text.to_owned())),
        "boolean" => match text {
            "true" => Some(Value::Bool(true)),
            "false" => Some(Value::Bool(false)),
            _ => None,
        },
        "null" => (text == "null").then_some(Value::Null),
        "integer" => text
            .parse::<i64>()
            .map(Value::from)
            .or_else(|_| text.parse::<u64>().map(Value::from))
            .ok(),
        "number" => serde_json::from_str::<Value>(text)
            .ok()
            .filter(Value::is_number),
        "object" => serde_json::from_str::<Value>(text)
            .ok()
            .filter(Value::is_object),
        "array" => serde_json::from_str::<Value>(text)
            .ok()
            .filter(Value::is_array),
        _ => None,
    }
}

/// `text` typed by `property`.
fn type_value(root: &Value, property: &Value, text: &str) -> Result<Value, String> {
    let allowed = types(root, property, 0);
    let value = if allowed.is_empty() {
        untyped(text)
    } else if allowed.iter().any(|t| t == "string") {
        Value::String(text.to_owned())
    } else {
        allowed
            .iter()
            .find_map(|t| parse_as(t, text))
            .ok_or_else(|| {
                let what = allowed
                    .iter()
                    .map(|t| match t.as_str() {
                        "integer" => "an integer",
                        "number" => "a number",
                        "boolean" => "true or false",
                        "null" => "null",
                        "object" => "a JSON object",
                        "array" => "a JSON array",
                        other => other,
                    })
                    .collect::<Vec<_>>()
                    .join(" or ");
                format!("expected {what}")
            })?
    };
    let property = deref(root, property);
    if let Some(choices) = property.get("enum").and_then(Value::as_array) {
        if !choices.contains(&value) {
            let list: Vec<String> = choices.iter().map(Value::to_string).collect();
            return Err(format!("expected one of {}", list.join(", ")));
        }
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(words: &[&str]) -> CallShortcut {
        let words: Vec<String> = words.iter().map(|s| (*s).to_owned()).collect();
        CallShortcut::parse(&words).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn without_a_schema_json_if_it_parses() {
        let c = call(&["echo", "text=hi", "n=3", "o={\"a\":1}"]);
        assert_eq!(
            c.params(None).unwrap_or_default(),
            json!({"name": "echo", "arguments": {"text": "hi", "n": 3, "o": {"a": 1}}})
        );
        assert!(CallShortcut::parse(&[]).is_err());
        assert!(CallShortcut::parse(&["t".into(), "novalue".into()]).is_err());
    }

    #[test]
    fn typed_by_the_schema() {
        let schema = json!({
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "max": {"type": "integer", "minimum": 0},
                "ratio": {"type": "number"},
                "deep": {"type": "boolean"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "opts": {"$ref": "#/$defs/Opts"},
                "mode": {"enum": ["fast", "slow"]},
                "either": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
                "loose": {}
            },
            "$defs": {"Opts": {"type": "object"}}
        });
        let c = call(&[
            "t",
            "query=5",
            "max=7",
            "ratio=0.5",
            "deep=true",
            "tags=[\"a\"]",
            "opts={\"x\":1}",
            "mode=slow",
            "either=null",
            "loose=2",
            "other=true",
        ]);
        assert_eq!(
            c.params(Some(&schema)).unwrap_or_default()["arguments"],
            json!({"query": "5", "max": 7, "ratio": 0.5, "deep": true, "tags": ["a"],
                   "opts": {"x": 1}, "mode": "slow", "either": null, "loose": 2, "other": true})
        );
        for (bad, says) in [
            ("max=seven", "expected an integer"),
            ("max=1.5", "expected an integer"),
            ("ratio=x", "expected a number"),
            ("deep=yes", "expected true or false"),
            ("tags=a,b", "expected a JSON array"),
            ("opts=[1]", "expected a JSON object"),
            ("mode=medium", "expected one of \"fast\", \"slow\""),
        ] {
            let e = call(&["t", bad]).params(Some(&schema)).unwrap_err();
            assert!(e.contains(says) && e.contains(bad), "{bad}: {e}");
        }
    }

    #[test]
    fn a_closed_schema_names_its_arguments() {
        let schema = json!({"type": "object", "additionalProperties": false,
            "properties": {"query": {"type": "string"}}});
        let e = call(&["search", "qeury=x"])
            .params(Some(&schema))
            .unwrap_err();
        assert!(e.contains("\"qeury\"") && e.contains("query"), "{e}");
    }
}

/// How `snodo client` reaches an HTTP server beyond its URL (issue 36): HTTP/2 in
/// cleartext, a Unix socket, extra trust anchors. `https://` URLs pick HTTP/2 by ALPN.
#[derive(clap::Args, Debug, Default)]
pub(crate) struct TransportArgs {
    /// Speak HTTP/2 from the first byte to an http:// URL (h2c; like curl's flag).
    #[arg(long)]
    http2_prior_knowledge: bool,
    /// Connect through this Unix socket (like curl's flag); --url then gives the path
    /// and the Host, e.g. http://localhost/mcp.
    #[arg(long, value_name = "PATH")]
    unix_socket: Option<std::path::PathBuf>,
    /// Trust the PEM certificates in FILE for https:// (beside the system's).
    #[arg(long, value_name = "FILE")]
    cacert: Option<std::path::PathBuf>,
}

impl TransportArgs {
    /// `builder` with these options.
    pub(crate) fn apply(
        &self,
        mut builder: snodo_client::ClientBuilder,
    ) -> Result<snodo_client::ClientBuilder, String> {
        if self.http2_prior_knowledge {
            builder = builder.http2_prior_knowledge();
        }
        if let Some(path) = &self.unix_socket {
            builder = builder.unix_socket(path);
        }
        if let Some(file) = &self.cacert {
            let pem =
                std::fs::read(file).map_err(|e| format!("--cacert {}: {e}", file.display()))?;
            builder = builder.root_certificates_pem(pem);
        }
        Ok(builder)
    }
}
