//! RFC 6570 URI templates, for matching a concrete URI against a resource template.
//!
//! Supported expressions: `{var}` (simple, matches up to the next `/`, `?` or `#`),
//! `{+var}` (reserved, matches anything including `/`), `{#var}` (fragment) and
//! `{/var}` (path segment). Several variables per expression (`{a,b}`) are not
//! supported and are refused when the template is registered.

use std::collections::HashMap;

#[derive(Clone, Debug, PartialEq, Eq)]
enum Part {
    Literal(String),
    Var { name: String, op: Op },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Simple,
    Reserved,
    Fragment,
    Path,
}

/// A parsed URI template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UriTemplate {
    source: String,
    parts: Vec<Part>,
}

impl UriTemplate {
    /// Parses a template, or says what is wrong with it.
    pub fn parse(source: &str) -> Result<Self, String> {
        let mut parts = Vec::new();
        let mut rest = source;
        while let Some(open) = rest.find('{') {
            if open > 0 {
                parts.push(Part::Literal(rest[..open].to_owned()));
            }
            let after = &rest[open + 1..];
            let close = after
                .find('}')
                .ok_or_else(|| format!("unclosed '{{' in {source:?}"))?;
            let expr = &after[..close];
            let (op, name) = match expr.as_bytes().first() {
                Some(b'+') => (Op::Reserved, &expr[1..]),
                Some(b'#') => (Op::Fragment, &expr[1..]),
                Some(b'/') => (Op::Path, &expr[1..]),
                _ => (Op::Simple, expr),
            };
            if name.is_empty()
                || !name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.')
            {
                return Err(format!("unsupported expression {{{expr}}} in {source:?}"));
            }
            if matches!(parts.last(), Some(Part::Var { .. })) {
                return Err(format!(
                    "two adjacent expressions in {source:?} cannot be matched"
                ));
            }
            parts.push(Part::Var {
                name: name.to_owned(),
                op,
            });
            rest = &after[close + 1..];
        }
        if rest.contains('}') {
            return Err(format!("stray '}}' in {source:?}"));
        }
        if !rest.is_empty() {
            parts.push(Part::Literal(rest.to_owned()));
        }
        Ok(Self {
            source: source.to_owned(),
            parts,
        })
    }

    /// The template text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// The variable names, in order.
    pub fn variables(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|p| match p {
            Part::Var { name, .. } => Some(name.as_str()),
            Part::Literal(_) => None,
        })
    }

    /// Matches a concrete URI, returning the (percent-decoded) variable values.
    #[must_use]
    pub fn matches(&self, uri: &str) -> Option<HashMap<String, String>> {
        let mut vars = HashMap::new();
        let mut rest = uri;
        let mut parts = self.parts.iter().peekable();
        while let Some(part) = parts.next() {
            match part {
                Part::Literal(lit) => rest = rest.strip_prefix(lit.as_str())?,
                Part::Var { name, op } => {
                    let mut prefix_ok = true;
                    if *op == Op::Fragment {
                        rest = rest.strip_prefix('#').unwrap_or_else(|| {
                            prefix_ok = false;
                            rest
                        });
                    } else if *op == Op::Path {
                        rest = rest.strip_prefix('/').unwrap_or_else(|| {
                            prefix_ok = false;
                            rest
                        });
                    }
                    if !prefix_ok {
                        return None;
                    }
                    let end = match parts.peek() {
                        Some(Part::Literal(next)) => rest.find(next.as_str())?,
                        _ => rest.len(),
                    };
                    let value = &rest[..end];
                    let allowed = match op {
                        Op::Simple | Op::Path => !value.contains(['/', '?', '#']),
                        Op::Reserved | Op::Fragment => true,
                    };
                    if value.is_empty() || !allowed {
                        return None;
                    }
                    vars.insert(name.clone(), percent_decode(value)?);
                    rest = &rest[end..];
                }
            }
        }
        rest.is_empty().then_some(vars)
    }
}

fn percent_decode(s: &str) -> Option<String> {
    if !s.contains('%') {
        return Some(s.to_owned());
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            // Exactly two hex digits (from_str_radix alone would accept "+0").
            if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return None;
            }
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simple_and_reserved() {
        let t = UriTemplate::parse("test://template/{id}/data").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            t.matches("test://template/123/data")
                .and_then(|v| v.get("id").cloned()),
            Some("123".into())
        );
        assert!(t.matches("test://template/1/2/data").is_none());
        assert!(t.matches("test://template//data").is_none());
        assert!(t.matches("test://other/1/data").is_none());
        let t = UriTemplate::parse("file:///root/{+path}").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            t.matches("file:///root/a/b%20c.txt")
                .and_then(|v| v.get("path").cloned()),
            Some("a/b c.txt".into())
        );
        assert!(UriTemplate::parse("x://{a}{b}").is_err());
        assert!(UriTemplate::parse("x://{a,b}").is_err());
        assert!(UriTemplate::parse("x://{a").is_err());
        assert!(percent_decode("%zz").is_none());
        assert!(percent_decode("a%+0b").is_none());
    }
}
