//! Protocol dialects: one value per supported revision, stating only what differs.
//!
//! The router, the runtime and the HTTP transport are shared by every revision; where a
//! revision differs they ask the [`Dialect`] of the request. Nothing else in the crate
//! compares version strings.

use std::fmt;

use serde_json::{Map, Value};

use super::error::ErrorCode;
use super::method::Method;

/// How a revision carries version, identity and capabilities. Used by negotiation
/// only; every behaviour that differs between revisions is a named fact of [`Dialect`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Era {
    /// 2026-07-28: every request carries its version and client capabilities in
    /// `params._meta`; no handshake; `server/discover`.
    Stateless,
    /// 2025-11-25, 2025-06-18 and 2025-03-26: an `initialize` handshake, then the
    /// negotiated version in the `MCP-Protocol-Version` header of every later request
    /// (2025-03-26 has no such header).
    Initialize,
}

/// How a handler's question (elicitation, sampling, roots) reaches the client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Asking {
    /// The request answers `input_required`; the client retries with
    /// `inputResponses` and the signed `requestState` (multi round-trip requests).
    Rounds,
    /// The server sends a JSON-RPC request on the calling request's stream and waits
    /// for the client's answer (when the runtime enables server requests).
    ServerRequests,
}

/// Where the level threshold of a request's log notifications comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LogLevels {
    /// The request's own `_meta` (`io.modelcontextprotocol/logLevel`).
    PerRequest,
    /// The runtime's level (a stateless server keeps no `logging/setLevel` state).
    Runtime,
}

/// How a tool's structured output (`structuredContent`, `outputSchema`) travels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StructuredOutput {
    /// Any JSON value.
    AnyJson,
    /// JSON objects only: tools with another output schema are not offered.
    ObjectOnly,
    /// Not in this revision: dropped; the result's text content stands on its own.
    Absent,
}

/// Which kinds of elicitation exist.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Elicitation {
    /// No elicitation at all.
    Absent,
    /// Form elicitation only, without the `mode` field.
    Form,
    /// Form and URL modes, with `mode`.
    FormAndUrl,
}

/// One protocol revision as this server speaks it.
///
/// Dialects are values ([`V2026_07_28`], [`V2025_11_25`], [`V2025_06_18`],
/// [`V2025_03_26`]); a runtime enables a list of them in preference order. Defining or
/// linking one enables nothing. Each field is one fact in which revisions differ;
/// adding a revision means writing one more value.
#[derive(Debug, Eq)]
pub struct Dialect {
    version: &'static str,
    era: Era,
    /// `icons` on components and `description`/`websiteUrl` on implementations exist.
    icons: bool,
    /// `title` on components, implementations and prompt arguments exists.
    titles: bool,
    /// `_meta` on components and content blocks, and `annotations.lastModified`, exist.
    component_meta: bool,
    /// `resource_link` content blocks exist.
    resource_links: bool,
    /// Tool schemas may carry `$schema`.
    schema_keyword: bool,
    structured_output: StructuredOutput,
    elicitation: Elicitation,
    asking: Asking,
    log_levels: LogLevels,
    /// Requests after `initialize` carry `MCP-Protocol-Version`. A revision without
    /// the header is what a header-less request is taken to speak.
    version_header: bool,
    /// JSON-RPC batches (arrays of messages) are part of the revision.
    batches: bool,
    /// The tasks extension (`io.modelcontextprotocol/tasks`) can be negotiated: it is
    /// declared per request in `clientCapabilities.extensions` and advertised in
    /// `server/discover`. Initialize-era revisions never offer it (their core tasks are
    /// not implemented).
    tasks: bool,
    /// `capabilities.extensions` exists, so extensions (Skills) can be declared and
    /// their methods served.
    extensions: bool,
}

/// A dialect is its revision: the values are this module's statics, one per version,
/// so the version decides (a comparison of every fact was ~150 instructions of each
/// request's catalogue lookup).
impl PartialEq for Dialect {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self, other) || self.version == other.version
    }
}

/// The 2026-07-28 revision: stateless, the default.
pub static V2026_07_28: Dialect = Dialect {
    version: "2026-07-28",
    era: Era::Stateless,
    icons: true,
    titles: true,
    component_meta: true,
    resource_links: true,
    schema_keyword: true,
    structured_output: StructuredOutput::AnyJson,
    elicitation: Elicitation::FormAndUrl,
    asking: Asking::Rounds,
    log_levels: LogLevels::PerRequest,
    version_header: true,
    batches: false,
    tasks: true,
    extensions: true,
};

/// The 2025-11-25 revision (initialize era), opt-in.
pub static V2025_11_25: Dialect = Dialect {
    version: "2025-11-25",
    era: Era::Initialize,
    icons: true,
    titles: true,
    component_meta: true,
    resource_links: true,
    schema_keyword: true,
    structured_output: StructuredOutput::ObjectOnly,
    elicitation: Elicitation::FormAndUrl,
    asking: Asking::ServerRequests,
    log_levels: LogLevels::Runtime,
    version_header: true,
    batches: false,
    tasks: false,
    extensions: false,
};

/// The 2025-06-18 revision (initialize era), opt-in.
pub static V2025_06_18: Dialect = Dialect {
    version: "2025-06-18",
    era: Era::Initialize,
    icons: false,
    titles: true,
    component_meta: true,
    resource_links: true,
    // 2025-06-18 clients expect `type/properties/required`; `$schema` is not in that
    // revision's tool type.
    schema_keyword: false,
    structured_output: StructuredOutput::ObjectOnly,
    elicitation: Elicitation::Form,
    asking: Asking::ServerRequests,
    log_levels: LogLevels::Runtime,
    version_header: true,
    batches: false,
    tasks: false,
    extensions: false,
};

/// The 2025-03-26 revision (initialize era), opt-in: no `MCP-Protocol-Version` header
/// (a request without one is taken to speak it when it is enabled), JSON-RPC batches,
/// no structured tool output, titles, resource links or elicitation.
pub static V2025_03_26: Dialect = Dialect {
    version: "2025-03-26",
    era: Era::Initialize,
    icons: false,
    titles: false,
    component_meta: false,
    resource_links: false,
    schema_keyword: false,
    structured_output: StructuredOutput::Absent,
    elicitation: Elicitation::Absent,
    asking: Asking::ServerRequests,
    log_levels: LogLevels::Runtime,
    version_header: false,
    batches: true,
    tasks: false,
    extensions: false,
};

/// Every dialect this crate implements, newest first.
pub static ALL: [&Dialect; 4] = [&V2026_07_28, &V2025_11_25, &V2025_06_18, &V2025_03_26];

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
        self.elicitation == Elicitation::FormAndUrl
    }

    /// How a handler's question reaches the client.
    #[must_use]
    pub(crate) fn asking(&self) -> Asking {
        self.asking
    }

    /// Where a request's log threshold comes from.
    #[must_use]
    pub(crate) fn log_levels(&self) -> LogLevels {
        self.log_levels
    }

    /// How structured tool output travels.
    #[must_use]
    pub(crate) fn structured_output(&self) -> StructuredOutput {
        self.structured_output
    }

    /// Whether requests after `initialize` carry `MCP-Protocol-Version`.
    #[must_use]
    pub fn has_version_header(&self) -> bool {
        self.version_header
    }

    /// Whether capabilities may declare extensions (`capabilities.extensions`).
    #[must_use]
    pub fn has_extensions(&self) -> bool {
        self.extensions
    }

    /// Whether a body may be a JSON-RPC batch (an array of messages).
    #[must_use]
    pub fn accepts_batches(&self) -> bool {
        self.batches
    }

    /// Whether the tasks extension can be negotiated on this revision.
    #[must_use]
    pub fn offers_tasks(&self) -> bool {
        self.tasks
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
            M::TasksGet | M::TasksUpdate | M::TasksCancel => self.tasks,
            M::SkillsList | M::SkillsGet | M::ResourcesDirectoryRead => self.extensions,
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
    /// must be objects, or do not exist).
    #[must_use]
    pub fn structured_content_any_json(&self) -> bool {
        self.structured_output == StructuredOutput::AnyJson
    }

    /// Whether a tool is offered: its output schema is an object (`object_output`) or
    /// this revision does not restrict it.
    #[must_use]
    pub fn offers_tool(&self, object_output: bool) -> bool {
        object_output || self.structured_output != StructuredOutput::ObjectOnly
    }

    /// The code for "resource not found".
    #[must_use]
    pub fn resource_not_found_code(&self) -> ErrorCode {
        match self.era {
            Era::Stateless => ErrorCode::INVALID_PARAMS,
            Era::Initialize => ErrorCode::RESOURCE_NOT_FOUND,
        }
    }

    /// Whether content blocks of results (tool results, prompt messages) need any
    /// reshaping on this revision.
    pub(crate) fn reshapes_content(&self) -> bool {
        !(self.icons && self.titles && self.component_meta && self.resource_links)
    }

    /// Removes from a component definition (tool, prompt, resource, template) the
    /// fields this revision lacks.
    pub(crate) fn shape_component(&self, def: &mut Map<String, Value>) {
        if !self.icons {
            def.remove("icons");
        }
        if !self.titles {
            def.remove("title");
            if let Some(Value::Array(args)) = def.get_mut("arguments") {
                for arg in args.iter_mut().filter_map(Value::as_object_mut) {
                    arg.remove("title");
                }
            }
        }
        if !self.component_meta {
            def.remove("_meta");
            strip_last_modified(def);
        }
        if self.structured_output == StructuredOutput::Absent {
            def.remove("outputSchema");
        }
        for key in ["inputSchema", "outputSchema"] {
            if let Some(Value::Object(schema)) = def.get_mut(key) {
                if !self.schema_keyword {
                    schema.remove("$schema");
                }
            }
        }
    }

    /// Shapes a tool definition: [`shape_component`](Self::shape_component), and where
    /// the revision has no tool `title` (2025-03-26) the title moves into
    /// `annotations.title`, which every revision has (unless one is set there already).
    pub(crate) fn shape_tool(&self, def: &mut Map<String, Value>) {
        if !self.titles {
            if let Some(title) = def.remove("title") {
                if let Value::Object(a) = def
                    .entry("annotations")
                    .or_insert_with(|| Value::Object(Map::new()))
                {
                    a.entry("title").or_insert(title);
                }
            }
        }
        self.shape_component(def);
    }

    /// Reshapes one content block of a result for this revision: drops the fields it
    /// lacks, and turns a `resource_link` it lacks into a text block naming the link.
    pub(crate) fn shape_content(&self, block: &mut Map<String, Value>) {
        if !self.resource_links
            && block.get("type").and_then(Value::as_str) == Some("resource_link")
        {
            let uri = block.get("uri").and_then(Value::as_str).unwrap_or_default();
            let name = block.get("name").and_then(Value::as_str).unwrap_or(uri);
            let text = if name == uri {
                format!("Resource: {uri}")
            } else {
                format!("Resource {name}: {uri}")
            };
            let annotations = block.remove("annotations");
            block.clear();
            block.insert("type".into(), Value::String("text".into()));
            block.insert("text".into(), Value::String(text));
            if let Some(a) = annotations {
                block.insert("annotations".into(), a);
            }
        }
        if let Some(Value::Object(resource)) = block.get_mut("resource") {
            if !self.component_meta {
                resource.remove("_meta");
            }
        }
        self.shape_component(block);
    }

    /// Reshapes a tool result object for this revision.
    pub(crate) fn shape_tool_result(&self, result: &mut Map<String, Value>) {
        if self.structured_output == StructuredOutput::Absent {
            result.remove("structuredContent");
        }
        if self.reshapes_content() {
            if let Some(Value::Array(blocks)) = result.get_mut("content") {
                for block in blocks.iter_mut().filter_map(Value::as_object_mut) {
                    self.shape_content(block);
                }
            }
        }
    }

    /// Whether a tool result must go through a JSON tree to be shaped: structured
    /// output this revision lacks, or content it reshapes.
    pub(crate) fn reshapes_tool_results(&self) -> bool {
        self.structured_output == StructuredOutput::Absent || self.reshapes_content()
    }

    /// Removes from an `Implementation` object the fields this revision lacks.
    pub(crate) fn shape_implementation(&self, imp: &mut Map<String, Value>) {
        if !self.icons {
            imp.remove("icons");
            imp.remove("description");
            imp.remove("websiteUrl");
        }
        if !self.titles {
            imp.remove("title");
        }
    }

    /// Adapts the params of a server-to-client request (initialize era) to this
    /// revision; `Err` with the reason when the revision cannot carry it.
    pub(crate) fn shape_server_request(
        &self,
        method: &str,
        params: &mut Value,
    ) -> Result<(), &'static str> {
        if method != "elicitation/create" {
            return Ok(());
        }
        let url = params.get("mode").and_then(Value::as_str) == Some("url");
        match self.elicitation {
            Elicitation::Absent => Err("this protocol version has no elicitation"),
            Elicitation::Form if url => Err("this protocol version has no URL elicitation"),
            Elicitation::Form => {
                if let Some(p) = params.as_object_mut() {
                    p.remove("mode");
                }
                Ok(())
            }
            Elicitation::FormAndUrl => Ok(()),
        }
    }
}

/// Removes `annotations.lastModified` (2025-03-26 annotations lack it).
fn strip_last_modified(def: &mut Map<String, Value>) {
    if let Some(Value::Object(a)) = def.get_mut("annotations") {
        a.remove("lastModified");
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
