//! `WWW-Authenticate` challenges (RFC 9110 §11.6.1): the scheme and its parameters,
//! as a `401`/`403` from a resource server sends them (RFC 6750 §3, RFC 9728 §5.1).

use http::HeaderMap;

/// One challenge: `Bearer error="insufficient_scope", scope="a b", resource_metadata="…"`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Challenge {
    /// The scheme, lower-cased (`bearer`, `dpop`).
    pub(crate) scheme: String,
    /// The parameters in order, names lower-cased, values unquoted.
    pub(crate) params: Vec<(String, String)>,
}

impl Challenge {
    pub(crate) fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// What a resource server's refusal says, merged over its challenges.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Refusal {
    /// `resource_metadata`: where the protected-resource metadata is.
    pub(crate) resource_metadata: Option<String>,
    /// `scope`, split on spaces.
    pub(crate) scope: Option<Vec<String>>,
    /// `error` (`invalid_token`, `insufficient_scope`, `use_dpop_nonce`).
    pub(crate) error: Option<String>,
    /// The schemes offered, lower-cased.
    pub(crate) schemes: Vec<String>,
}

impl Refusal {
    /// Reads every `WWW-Authenticate` header of a response.
    pub(crate) fn from_headers(h: &HeaderMap) -> Self {
        let mut out = Self::default();
        for v in h.get_all(http::header::WWW_AUTHENTICATE) {
            let Ok(text) = v.to_str() else { continue };
            for c in parse(text) {
                if out.resource_metadata.is_none() {
                    out.resource_metadata = c.param("resource_metadata").map(str::to_owned);
                }
                if out.scope.is_none() {
                    out.scope = c
                        .param("scope")
                        .map(|s| s.split_whitespace().map(str::to_owned).collect());
                }
                if out.error.is_none() {
                    out.error = c.param("error").map(str::to_owned);
                }
                out.schemes.push(c.scheme);
            }
        }
        out
    }
}

/// Parses one header value into its challenges. Malformed parts are skipped, never an
/// error: a refusal is read as far as it makes sense.
pub(crate) fn parse(s: &str) -> Vec<Challenge> {
    let b = s.as_bytes();
    let mut i = 0;
    let mut out: Vec<Challenge> = Vec::new();
    let skip_ws = |i: &mut usize| {
        while *i < b.len() && (b[*i] == b' ' || b[*i] == b'\t' || b[*i] == b',') {
            *i += 1;
        }
    };
    while i < b.len() {
        skip_ws(&mut i);
        let start = i;
        while i < b.len() && !matches!(b[i], b' ' | b'\t' | b',' | b'=' | b'"') {
            i += 1;
        }
        if start == i {
            i += 1;
            continue;
        }
        let word = s[start..i].to_ascii_lowercase();
        // A token followed by '=' (not '==', token68 padding) is a parameter.
        let mut j = i;
        while j < b.len() && (b[j] == b' ' || b[j] == b'\t') {
            j += 1;
        }
        if j < b.len() && b[j] == b'=' && out.last().is_some() {
            j += 1;
            while j < b.len() && (b[j] == b' ' || b[j] == b'\t') {
                j += 1;
            }
            let mut value = String::new();
            if j < b.len() && b[j] == b'"' {
                j += 1;
                while j < b.len() && b[j] != b'"' {
                    if b[j] == b'\\' && j + 1 < b.len() {
                        j += 1;
                    }
                    let ch_len = utf8_len(b[j]);
                    value.push_str(&s[j..(j + ch_len).min(b.len())]);
                    j += ch_len;
                }
                j += 1;
            } else {
                let vs = j;
                while j < b.len() && b[j] != b',' && b[j] != b' ' {
                    j += 1;
                }
                value.push_str(&s[vs..j]);
            }
            if let Some(c) = out.last_mut() {
                c.params.push((word, value));
            }
            i = j.min(b.len());
        } else {
            out.push(Challenge {
                scheme: word,
                params: Vec::new(),
            });
        }
    }
    out
}

fn utf8_len(first: u8) -> usize {
    match first {
        0xF0..=0xFF => 4,
        0xE0..=0xEF => 3,
        0xC0..=0xDF => 2,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_with_quoted_and_bare_params() {
        let c = parse(
            r#"Bearer error="insufficient_scope", scope="mcp:basic mcp:write", resource_metadata="http://h/.well-known/oauth-protected-resource/mcp", realm=x"#,
        );
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].scheme, "bearer");
        assert_eq!(c[0].param("error"), Some("insufficient_scope"));
        assert_eq!(c[0].param("scope"), Some("mcp:basic mcp:write"));
        assert_eq!(c[0].param("realm"), Some("x"));
    }

    #[test]
    fn two_schemes_and_escapes() {
        let c = parse(r#"DPoP algs="ES256", error="use_dpop_nonce", Bearer realm="a\"b""#);
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].scheme, "dpop");
        assert_eq!(c[0].param("algs"), Some("ES256"));
        assert_eq!(c[1].param("realm"), Some("a\"b"));
    }

    #[test]
    fn garbage_is_not_a_panic() {
        for s in [
            "",
            "=",
            "\"",
            "Bearer =",
            "Bearer a=\"unterminated",
            ",,,",
            "Bearer a=é",
        ] {
            let _ = parse(s);
        }
    }
}
