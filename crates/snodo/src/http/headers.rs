//! The request headers snodo reads, found in one pass over the header map.
//!
//! Admission, dialect selection and tracing read about ten headers of every request.
//! Looked up one by one, each costs a hash of its name and a probe (a name given as
//! text is parsed and lower-cased first): about 2 200 instructions for a 2026-07-28
//! `tools/call`, more than the floor server spends on its whole JSON body. One walk over
//! the map's entries, matching each name once, finds them all for a tenth of that. The
//! rare lookups (every value of a repeated `Accept`, `tracestate` beside a
//! `traceparent`, a tool's `Mcp-Param-*` headers) still go to the map.

use http::{HeaderMap, HeaderName, HeaderValue, header};

use crate::protocol::RpcError;

/// How often one header appears.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) enum Seen<'h> {
    /// Not sent.
    #[default]
    Absent,
    /// Sent once, with this value.
    Once(&'h HeaderValue),
    /// Sent more than once; its first value.
    Repeated(&'h HeaderValue),
}

impl<'h> Seen<'h> {
    /// The first value, however often it was sent.
    pub(crate) fn first(self) -> Option<&'h HeaderValue> {
        match self {
            Self::Absent => None,
            Self::Once(v) | Self::Repeated(v) => Some(v),
        }
    }

    /// A header that must appear at most once, trimmed of optional whitespace; `Err`
    /// when it is repeated or not visible ASCII (`name` says which, in the message).
    pub(crate) fn single(self, name: &HeaderName) -> Result<Option<&'h str>, RpcError> {
        match self {
            Self::Absent => Ok(None),
            Self::Once(v) => v
                .to_str()
                .map(|s| Some(s.trim_matches([' ', '\t'])))
                .map_err(|_| RpcError::header_mismatch(format!("Header {name} is malformed"))),
            Self::Repeated(_) => Err(RpcError::header_mismatch(format!(
                "Header {name} is repeated"
            ))),
        }
    }

    pub(super) fn add(&mut self, value: &'h HeaderValue) {
        *self = match *self {
            Self::Absent => Self::Once(value),
            Self::Once(first) | Self::Repeated(first) => Self::Repeated(first),
        };
    }
}

/// The headers of one request that snodo reads, each with how often it was sent.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RequestHeaders<'h> {
    /// The whole map, for the rare lookups.
    pub(crate) map: &'h HeaderMap,
    pub(crate) host: Seen<'h>,
    pub(crate) origin: Seen<'h>,
    pub(crate) content_type: Seen<'h>,
    pub(crate) content_length: Seen<'h>,
    pub(crate) accept: Seen<'h>,
    /// `MCP-Protocol-Version`.
    pub(crate) protocol_version: Seen<'h>,
    /// `Mcp-Method` (2026-07-28).
    pub(crate) mcp_method: Seen<'h>,
    /// `Mcp-Name` (2026-07-28).
    pub(crate) mcp_name: Seen<'h>,
    /// The W3C `traceparent`.
    pub(crate) traceparent: Seen<'h>,
}

impl<'h> RequestHeaders<'h> {
    /// Walks `map` once.
    pub(crate) fn scan(map: &'h HeaderMap) -> Self {
        let mut seen = Self {
            map,
            host: Seen::Absent,
            origin: Seen::Absent,
            content_type: Seen::Absent,
            content_length: Seen::Absent,
            accept: Seen::Absent,
            protocol_version: Seen::Absent,
            mcp_method: Seen::Absent,
            mcp_name: Seen::Absent,
            traceparent: Seen::Absent,
        };
        for (name, value) in map {
            // A standard name is compared as the small number it is; only the others
            // are compared as text (lower case in a `HeaderMap`).
            let slot = if *name == header::HOST {
                &mut seen.host
            } else if *name == header::CONTENT_TYPE {
                &mut seen.content_type
            } else if *name == header::CONTENT_LENGTH {
                &mut seen.content_length
            } else if *name == header::ACCEPT {
                &mut seen.accept
            } else if *name == header::ORIGIN {
                &mut seen.origin
            } else {
                match name.as_str() {
                    "mcp-protocol-version" => &mut seen.protocol_version,
                    "mcp-method" => &mut seen.mcp_method,
                    "mcp-name" => &mut seen.mcp_name,
                    "traceparent" => &mut seen.traceparent,
                    _ => continue,
                }
            };
            slot.add(value);
        }
        seen
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_static(v));
        }
        h
    }

    /// Every header the scan knows is found under any spelling of its name, counted
    /// once or as repeated, and read as the lookups read it.
    #[test]
    fn one_pass_finds_what_lookups_find() {
        let h = map(&[
            ("Host", "localhost:3000"),
            ("MCP-Protocol-Version", " 2026-07-28\t"),
            ("mcp-method", "tools/call"),
            ("Mcp-Name", "a"),
            ("mcp-name", "b"),
            ("x-other", "ignored"),
            (
                "TraceParent",
                "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            ),
        ]);
        let seen = RequestHeaders::scan(&h);
        assert!(matches!(seen.host, Seen::Once(v) if v == "localhost:3000"));
        assert!(matches!(seen.origin, Seen::Absent));
        assert!(matches!(seen.accept, Seen::Absent));
        assert!(matches!(seen.content_type, Seen::Absent));
        assert!(matches!(seen.content_length, Seen::Absent));
        assert!(matches!(seen.mcp_name, Seen::Repeated(v) if v == "a"));
        assert!(seen.traceparent.first().is_some());
        let version = HeaderName::from_static("mcp-protocol-version");
        assert_eq!(
            seen.protocol_version.single(&version).ok().flatten(),
            Some("2026-07-28")
        );
        let repeated = seen.mcp_name.single(&HeaderName::from_static("mcp-name"));
        assert!(repeated.is_err_and(|e| e.message().contains("mcp-name is repeated")));
        assert_eq!(
            seen.mcp_method.single(&version).ok().flatten(),
            Some("tools/call")
        );

        let mut bad = HeaderMap::new();
        if let Ok(v) = HeaderValue::from_bytes(b"caf\xc3\xa9") {
            bad.insert("mcp-method", v);
        }
        let seen = RequestHeaders::scan(&bad);
        assert!(matches!(seen.mcp_method, Seen::Once(_)));
        assert!(seen.mcp_method.single(&version).is_err());
    }
}
