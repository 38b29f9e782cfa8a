//! Protocol dialects: one value per supported revision, stating only what differs.
//!
//! The router, the runtime and the HTTP transport are shared by every revision; where a
//! revision differs they ask the [`Dialect`] of the request. Nothing else in the crate
//! compares version strings.

use std::fmt;

use serde_json::{Map, Value};

use super::error::ErrorCode;
use super::method::Method;

/// How a revision carries version, identity and capabilities.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Era {
    /// 2026-07-28: every request carries its version and client capabilities in
    /// `params._meta`; no handshake; `server/discover`.
    Stateless,
    /// 2025-11-25 and 2025-06-18: an `initialize` handshake, then the negotiated version
    /// in the `MCP-Protocol-Version` header of every later request.
    Initialize,
}

/// One protocol revision as this server speaks it.
///
/// Dialects are values ([`V2026_07_28`], [`V2025_11_25`], [`V2025_06_18`]); a runtime
/// enables a list of them in preference order. Defining or linking one enables nothing.
#[derive(Debug, PartialEq, Eq)]
pub struct Dialect {
    version: &'static str,
    era: Era,
    /// `icons` on components and `description`/`websiteUrl` on implementations exist.
    icons: bool,
    /// Elicitation has URL mode (and the `mode` field).
    url_elicitation: bool,
}

/// The 2026-07-28 revision: stateless, the default.
pub static V2026_07_28: Dialect = Dialect {
    version: "2026-07-28",
    era: Era::Stateless,
    icons: true,
    url_elicitation: true,
};

/// The 2025-11-25 revision (initialize era), opt-in.
pub static V2025_11_25: Dialect = Dialect {
    version: "2025-11-25",
    era: Era::Initialize,
    icons: true,
    url_elicitation: true,
};

/// The 2025-06-18 revision (initialize era), opt-in.
pub static V2025_06_18: Dialect = Dialect {
    version: "2025-06-18",
    era: Era::Initialize,
    icons: false,
    url_elicitation: false,
};

/// Every dialect this crate implements, newest first.
pub static ALL: [&Dialect; 3] = [&V2026_07_28, &V2025_11_25, &V2025_06_18];

impl Dialect {
    /// Looks a dialect up by its version string.
    #[must_use]
    pub fn by_version(version: &str) -> Option<&'static Self> {
        ALL.iter().copied().find(|d| d.version == version)
    }

    /// The protocol version string, e.g. `"2026-07-28"`.
    #[must_use]
    pub fn version(&self) -> &'static str {
        self.version
    }

    /// The era of this revision.
    #[must_use]
    pub fn era(&self) -> Era {
        self.era
    }

    /// Whether requests carry their own version and capabilities (2026-07-28).
    #[must_use]
    pub fn is_stateless(&self) -> bool {
        self.era == Era::Stateless
    }

    /// Whether components and implementations may carry `icons` (and implementations
    /// `description` and `websiteUrl`).
    #[must_use]
    pub fn has_icons(&self) -> bool {
        self.icons
    }

    /// Whether elicitation supports URL mode.
    #[must_use]
    pub fn has_url_elicitation(&self) -> bool {
        self.url_elicitation
    }

    /// Whether this dialect serves `method` at all. Methods it does not serve answer
    /// `-32601`.
    #[must_use]
    pub fn serves(&self, method: Method) -> bool {
        use Method as M;
        match method {
            M::ToolsList
            | M::ToolsCall
            | M::PromptsList
            | M::PromptsGet
            | M::ResourcesList
            | M::ResourceTemplatesList
            | M::ResourcesRead
            | M::CompletionComplete
            | M::Cancelled => true,
            M::Discover | M::SubscriptionsListen => self.era == Era::Stateless,
            M::Initialize | M::Ping | M::LoggingSetLevel | M::Initialized => {
                self.era == Era::Initialize
            }
            // A stateless server cannot deliver updates for a subscription made by an
            // earlier request, so it does not pretend to accept one.
            M::ResourcesSubscribe | M::ResourcesUnsubscribe | M::Unknown => false,
        }
    }

    /// Whether JSON-RPC errors produced while executing a request travel in an HTTP 200
    /// response. Initialize-era clients read any non-2xx answer as a transport failure
    /// and 404 as an expired session; 2026-07-28 maps codes to statuses.
    #[must_use]
    pub fn errors_in_band(&self) -> bool {
        self.era == Era::Initialize
    }

    /// Whether results carry `resultType`, cache hints and `_meta` server info.
    #[must_use]
    pub fn has_result_envelope(&self) -> bool {
        self.era == Era::Stateless
    }

    /// Whether `structuredContent` and `outputSchema` may be any JSON value (else they
    /// must be objects).
    #[must_use]
    pub fn structured_content_any_json(&self) -> bool {
        self.era == Era::Stateless
    }

    /// The code for "resource not found".
    #[must_use]
    pub fn resource_not_found_code(&self) -> ErrorCode {
        match self.era {
            Era::Stateless => ErrorCode::INVALID_PARAMS,
            Era::Initialize => ErrorCode::RESOURCE_NOT_FOUND,
        }
    }

    /// Removes from a component definition (tool, prompt, resource, template, content
    /// link) the fields this revision lacks.
    pub(crate) fn shape_component(&self, def: &mut Map<String, Value>) {
        if !self.icons {
            def.remove("icons");
        }
    }

    /// Removes from an `Implementation` object the fields this revision lacks.
    pub(crate) fn shape_implementation(&self, imp: &mut Map<String, Value>) {
        if !self.icons {
            imp.remove("icons");
            imp.remove("description");
            imp.remove("websiteUrl");
        }
    }

    /// Adapts a JSON Schema published in a tool definition.
    pub(crate) fn shape_schema(&self, schema: &mut Value) {
        if !self.icons {
            // 2025-06-18 clients expect `type/properties/required`; `$schema` is not in
            // that revision's tool type.
            if let Value::Object(map) = schema {
                map.remove("$schema");
            }
        }
    }

    /// Whether a request's log level comes from its own `_meta` (else from what the
    /// connection or the runtime set).
    pub(crate) fn log_level_per_request(&self) -> bool {
        self.era == Era::Stateless
    }

    /// Whether the server may send the client JSON-RPC requests (sampling, elicitation,
    /// roots) while a request executes; 2026-07-28 asks through `input_required` instead.
    pub(crate) fn has_server_requests(&self) -> bool {
        self.era == Era::Initialize
    }
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.version)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_and_method_sets() {
        assert_eq!(Dialect::by_version("2025-06-18"), Some(&V2025_06_18));
        assert_eq!(Dialect::by_version("2024-11-05"), None);
        assert!(V2026_07_28.serves(Method::Discover));
        assert!(!V2026_07_28.serves(Method::Initialize));
        assert!(!V2026_07_28.serves(Method::Ping));
        assert!(V2025_11_25.serves(Method::Ping));
        assert!(!V2025_11_25.serves(Method::Discover));
        assert!(!V2025_06_18.serves(Method::ResourcesSubscribe));
    }

    #[test]
    fn shaping() {
        let mut imp =
            serde_json::json!({"name":"n","version":"1","icons":[],"websiteUrl":"https://x"});
        if let Value::Object(m) = &mut imp {
            V2025_06_18.shape_implementation(m);
        }
        assert_eq!(imp, serde_json::json!({"name":"n","version":"1"}));
        assert_eq!(
            V2025_11_25.resource_not_found_code(),
            ErrorCode::RESOURCE_NOT_FOUND
        );
        assert_eq!(
            V2026_07_28.resource_not_found_code(),
            ErrorCode::INVALID_PARAMS
        );
    }
}
