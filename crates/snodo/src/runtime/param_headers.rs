//! `x-mcp-header`: tool arguments mirrored into `Mcp-Param-{Name}` HTTP headers
//! (2026-07-28). Extracted and validated once when the tool is registered; checked on
//! every `tools/call` against the body.

use serde_json::Value;

use crate::protocol::RpcError;

/// One mirrored argument.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamHeader {
    /// The `{Name}` of `Mcp-Param-{Name}`.
    pub name: String,
    /// Property path from the arguments root.
    pub path: Vec<String>,
}

/// Why a schema's `x-mcp-header` annotations are invalid (a client excludes such a
/// tool, a server refuses it).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParamHeaderError {
    /// The annotation is not a non-empty HTTP token.
    #[error("x-mcp-header on {path} must be a non-empty HTTP token")]
    NotAToken {
        /// The property path, dot-separated.
        path: String,
    },
    /// The annotated property is not a string, integer or boolean.
    #[error("x-mcp-header {name:?} must annotate a string, integer or boolean property")]
    NotAScalar {
        /// The header name.
        name: String,
    },
    /// Two annotations name the same header (case-insensitively).
    #[error("x-mcp-header {name:?} is declared twice")]
    Duplicate {
        /// The header name.
        name: String,
    },
}

impl ParamHeader {
    /// Finds every `x-mcp-header` annotation of a tool's input schema, reachable
    /// through `properties` only; `Err` names the first invalid one.
    pub fn from_schema(schema: &Value) -> Result<Vec<Self>, ParamHeaderError> {
        extract(schema)
    }
}

fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// Finds every `x-mcp-header` annotation reachable through `properties` only; `Err`
/// names the first invalid one (a client excludes such a tool, a server refuses it).
pub(crate) fn extract(schema: &Value) -> Result<Vec<ParamHeader>, ParamHeaderError> {
    let mut out: Vec<ParamHeader> = Vec::new();
    walk(schema, &mut Vec::new(), &mut out)?;
    for (i, h) in out.iter().enumerate() {
        if out[..i]
            .iter()
            .any(|o| o.name.eq_ignore_ascii_case(&h.name))
        {
            return Err(ParamHeaderError::Duplicate {
                name: h.name.clone(),
            });
        }
    }
    Ok(out)
}

fn walk(
    schema: &Value,
    path: &mut Vec<String>,
    out: &mut Vec<ParamHeader>,
) -> Result<(), ParamHeaderError> {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return Ok(());
    };
    for (key, prop) in props {
        path.push(key.clone());
        if let Some(name) = prop.get("x-mcp-header") {
            let name = name.as_str().filter(|n| is_token(n)).ok_or_else(|| {
                ParamHeaderError::NotAToken {
                    path: path.join("."),
                }
            })?;
            let ty = prop.get("type").and_then(Value::as_str);
            if !matches!(ty, Some("string" | "integer" | "boolean")) {
                return Err(ParamHeaderError::NotAScalar {
                    name: name.to_owned(),
                });
            }
            out.push(ParamHeader {
                name: name.to_owned(),
                path: path.clone(),
            });
        }
        walk(prop, path, out)?;
        path.pop();
    }
    Ok(())
}

impl ParamHeader {
    /// Checks the header against the argument value. `header` is the decoded header
    /// value, if the header was sent.
    pub fn check(&self, arguments: Option<&Value>, header: Option<&str>) -> Result<(), RpcError> {
        let mut value = arguments;
        for key in &self.path {
            value = value.and_then(|v| v.get(key));
        }
        let value = value.filter(|v| !v.is_null());
        let field = format!("Mcp-Param-{}", self.name);
        let matches = match (value, header) {
            (None, None) => return Ok(()),
            (Some(_), None) => {
                return Err(RpcError::header_mismatch(format!(
                    "Missing {field} header for a value present in the body"
                )));
            }
            (None, Some(_)) => false,
            (Some(Value::String(s)), Some(h)) => s == h,
            (Some(Value::Bool(b)), Some(h)) => h == if *b { "true" } else { "false" },
            (Some(Value::Number(n)), Some(h)) => h
                .parse::<f64>()
                .ok()
                .zip(n.as_f64())
                .is_some_and(|(a, b)| a == b),
            (Some(_), Some(_)) => false,
        };
        if matches {
            Ok(())
        } else {
            Err(RpcError::header_mismatch(format!(
                "{field} header does not match the body"
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn extracts_and_checks() {
        let s = json!({"type":"object","properties":{
            "region":{"type":"string","x-mcp-header":"Region"},
            "n":{"type":"integer","x-mcp-header":"Count"},
            "nested":{"type":"object","properties":{"flag":{"type":"boolean","x-mcp-header":"Flag"}}}
        }});
        let h = extract(&s).unwrap_or_default();
        assert_eq!(h.len(), 3);
        let args = json!({"region":"eu","n":42,"nested":{"flag":true}});
        let by = |n: &str| {
            h.iter()
                .find(|x| x.name == n)
                .cloned()
                .unwrap_or_else(|| panic!("{n}"))
        };
        assert!(by("Region").check(Some(&args), Some("eu")).is_ok());
        assert!(by("Region").check(Some(&args), Some("us")).is_err());
        assert!(by("Region").check(Some(&args), None).is_err());
        assert!(by("Count").check(Some(&args), Some("42.0")).is_ok());
        assert!(by("Flag").check(Some(&args), Some("true")).is_ok());
        assert!(by("Region").check(Some(&json!({})), None).is_ok());
        assert!(by("Region").check(Some(&json!({})), Some("eu")).is_err());
        assert!(
            extract(&json!({"properties":{"x":{"type":"number","x-mcp-header":"X"}}})).is_err()
        );
        assert!(
            extract(&json!({"properties":{"x":{"type":"string","x-mcp-header":"bad name"}}}))
                .is_err()
        );
        assert!(extract(&json!({"properties":{"a":{"type":"string","x-mcp-header":"A"},"b":{"type":"string","x-mcp-header":"a"}}})).is_err());
    }
}
