//! W3C Trace Context: a request's parent trace, part of the protocol model.
//!
//! A request's parent context is `params._meta.traceparent` (and `tracestate`), the keys
//! SEP-414 reserves, on every transport; over HTTP the `traceparent`/`tracestate`
//! headers are the fallback when `_meta` has none.

use std::fmt;

use super::RequestMeta;

/// `_meta` key (and HTTP header) of the W3C parent.
pub const TRACEPARENT: &str = "traceparent";
/// `_meta` key (and HTTP header) of the W3C vendor state.
pub const TRACESTATE: &str = "tracestate";

/// Longest `tracestate` kept (W3C: at most 32 members; 512 bytes is what a receiver
/// must at least propagate).
const MAX_TRACESTATE: usize = 512;

/// A W3C Trace Context parent, as a client sent it: a well-formed `traceparent` (and its
/// `tracestate`, if any).
#[derive(Clone, PartialEq, Eq)]
pub struct TraceContext {
    trace_id: [u8; 16],
    parent_id: [u8; 8],
    flags: u8,
    state: Option<Box<str>>,
}

impl fmt::Debug for TraceContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TraceContext")
            .field("traceparent", &self.traceparent())
            .field("tracestate", &self.state)
            .finish()
    }
}

fn hex<const N: usize>(s: &str) -> Option<[u8; N]> {
    let bytes = s.as_bytes();
    if bytes.len() != N * 2 {
        return None;
    }
    let nibble = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    let mut out = [0u8; N];
    for (i, o) in out.iter_mut().enumerate() {
        *o = (nibble(bytes[2 * i])? << 4) | nibble(bytes[2 * i + 1])?;
    }
    Some(out)
}

fn to_hex(bytes: &[u8]) -> String {
    use fmt::Write as _;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

impl TraceContext {
    /// Parses a `traceparent` (`00-<trace-id>-<parent-id>-<flags>`, lowercase hex;
    /// later versions are read by their first four fields) and an optional
    /// `tracestate`. `None` when malformed, or when an id is all zeros.
    #[must_use]
    pub fn parse(traceparent: &str, tracestate: Option<&str>) -> Option<Self> {
        let traceparent = traceparent.trim();
        let mut parts = traceparent.splitn(5, '-');
        let version = hex::<1>(parts.next()?)?[0];
        let trace_id = hex::<16>(parts.next()?)?;
        let parent_id = hex::<8>(parts.next()?)?;
        let flags = hex::<1>(parts.next()?)?[0];
        let rest = parts.next();
        // Version ff is invalid; version 00 has exactly four fields.
        if version == 0xff || (version == 0 && rest.is_some()) {
            return None;
        }
        if trace_id == [0; 16] || parent_id == [0; 8] {
            return None;
        }
        let state = tracestate
            .map(str::trim)
            .filter(|s| !s.is_empty() && s.len() <= MAX_TRACESTATE && s.is_ascii())
            .map(Into::into);
        Some(Self {
            trace_id,
            parent_id,
            flags,
            state,
        })
    }

    /// From a request's `_meta` (`traceparent`, `tracestate` strings).
    pub(crate) fn from_meta(meta: &RequestMeta) -> Option<Self> {
        let parent = meta.other.get(TRACEPARENT)?.as_str()?;
        let state = meta
            .other
            .get(TRACESTATE)
            .and_then(serde_json::Value::as_str);
        Self::parse(parent, state)
    }

    /// The trace id (16 bytes).
    #[must_use]
    pub fn trace_id(&self) -> [u8; 16] {
        self.trace_id
    }

    /// The parent span id (8 bytes).
    #[must_use]
    pub fn parent_id(&self) -> [u8; 8] {
        self.parent_id
    }

    /// The trace flags (bit 0: sampled).
    #[must_use]
    pub fn flags(&self) -> u8 {
        self.flags
    }

    /// Whether the caller sampled this trace.
    #[must_use]
    pub fn is_sampled(&self) -> bool {
        self.flags & 1 == 1
    }

    /// The `tracestate`, if one came with it.
    #[must_use]
    pub fn tracestate(&self) -> Option<&str> {
        self.state.as_deref()
    }

    /// The `traceparent` text (version 00), to propagate further.
    #[must_use]
    pub fn traceparent(&self) -> String {
        format!(
            "00-{}-{}-{:02x}",
            to_hex(&self.trace_id),
            to_hex(&self.parent_id),
            self.flags
        )
    }
}

#[cfg(test)]
mod tests {
    use super::TraceContext;

    #[test]
    fn parses_w3c_traceparent() {
        let tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let t = TraceContext::parse(tp, Some("congo=t61rcWkgMzE")).unwrap_or_else(|| panic!());
        assert_eq!(t.traceparent(), tp);
        assert!(t.is_sampled());
        assert_eq!(t.tracestate(), Some("congo=t61rcWkgMzE"));
        assert_eq!(t.parent_id()[0], 0x00);
        assert_eq!(t.trace_id()[0], 0x4b);
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01",
        ] {
            assert!(TraceContext::parse(bad, None).is_none(), "{bad}");
        }
        // A later version may carry more fields.
        assert!(
            TraceContext::parse(
                "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
                None
            )
            .is_some()
        );
    }
}
