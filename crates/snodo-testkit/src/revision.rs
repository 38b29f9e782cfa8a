//! The MCP revisions as a test sees them: a version string and the facts the wire tests
//! assert per revision. Written from the specification (`shared/reference/spec.md`), not
//! read from the library, so a test states what the wire must be.

use serde_json::{Value, json};

use crate::Request;
use crate::request::{META_CAPABILITIES, META_VERSION};

/// One MCP revision, as a client speaks it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Revision {
    version: &'static str,
    stateless: bool,
}

/// 2026-07-28: stateless, every request carries its version and capabilities in
/// `params._meta` and mirrors its method (and name) in headers.
pub const R2026_07_28: Revision = Revision {
    version: "2026-07-28",
    stateless: true,
};
/// 2025-11-25: negotiated by `initialize`.
pub const R2025_11_25: Revision = Revision {
    version: "2025-11-25",
    stateless: false,
};
/// 2025-06-18: negotiated by `initialize`.
pub const R2025_06_18: Revision = Revision {
    version: "2025-06-18",
    stateless: false,
};
/// 2025-03-26: negotiated by `initialize`; requests may come without a version header.
pub const R2025_03_26: Revision = Revision {
    version: "2025-03-26",
    stateless: false,
};

/// Every revision, newest first.
pub const REVISIONS: [Revision; 4] = [R2026_07_28, R2025_11_25, R2025_06_18, R2025_03_26];

/// The revisions negotiated by `initialize`, newest first.
pub const INITIALIZE_ERA: [Revision; 3] = [R2025_11_25, R2025_06_18, R2025_03_26];

impl Revision {
    /// The revision named `version`, if the tests know it.
    pub fn of(version: &str) -> Option<Self> {
        REVISIONS.into_iter().find(|r| r.version == version)
    }

    /// The revision named `version`; panics on an unknown one.
    pub fn named(version: &str) -> Self {
        Self::of(version).unwrap_or_else(|| panic!("no revision {version}"))
    }

    /// The version string (`2026-07-28`).
    pub const fn version(self) -> &'static str {
        self.version
    }

    /// Whether each request carries its version in `_meta` (no `initialize`).
    pub const fn is_stateless(self) -> bool {
        self.stateless
    }

    /// Whether a JSON-RPC error answering a request of this revision travels in an HTTP
    /// 200: initialize-era clients read any other status as a transport failure.
    pub const fn errors_in_band(self) -> bool {
        !self.stateless
    }

    /// Whether the server may send requests to the client, so that a client sends
    /// JSON-RPC responses: only in the initialize era (2026-07-28 asks for input inside
    /// the result instead).
    pub const fn has_server_requests(self) -> bool {
        !self.stateless
    }

    /// The HTTP status of a JSON-RPC error with `code` answering a request of this
    /// revision (once the revision is known; before that, [`status_of_code`]).
    pub fn status_of(self, code: i64) -> u16 {
        if self.errors_in_band() {
            200
        } else {
            status_of_code(code)
        }
    }

    /// The schema definition of an error response.
    pub fn error_definition(self) -> &'static str {
        match self.version {
            "2025-06-18" | "2025-03-26" => "JSONRPCError",
            _ => "JSONRPCErrorResponse",
        }
    }

    /// The `_meta` members a request of this revision carries, with no capabilities:
    /// the protocol version and the (empty) client capabilities on 2026-07-28, none
    /// before.
    pub fn meta(self) -> Value {
        if self.stateless {
            json!({META_VERSION: self.version, META_CAPABILITIES: {}})
        } else {
            json!({})
        }
    }

    /// A request of `method` as a client of this revision sends it (see [`Request`]).
    pub fn request(self, method: &str) -> Request {
        Request::new(self, method)
    }
}

impl std::fmt::Display for Revision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.version)
    }
}

/// The status of a JSON-RPC error where statuses follow codes: on 2026-07-28, and for a
/// request refused before its revision is known.
pub fn status_of_code(code: i64) -> u16 {
    match code {
        // Parse error, invalid request, invalid params, header mismatch, missing client
        // capability, unsupported protocol version.
        -32700 | -32600 | -32602 | -32020 | -32021 | -32022 => 400,
        -32601 => 404,
        -32603 => 500,
        _ => 200,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn revisions_are_found_by_name() {
        for r in REVISIONS {
            assert_eq!(Revision::named(r.version()), r);
        }
        assert!(Revision::of("2024-11-05").is_none());
    }

    #[test]
    fn errors_travel_in_band_before_2026_only() {
        assert_eq!(R2026_07_28.status_of(-32601), 404);
        assert_eq!(R2026_07_28.status_of(-32602), 400);
        for r in INITIALIZE_ERA {
            assert_eq!(r.status_of(-32601), 200, "{r}");
        }
    }
}
