//! What the typed calls return. The list items and the results keep the members they do
//! not name in `extra`, so nothing the server sent is lost (schemas stay verbatim).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// What the server said about itself when the client connected.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ServerDetails {
    /// The protocol version in use.
    pub protocol_version: String,
    /// Whether the connection is stateless (2026-07-28) rather than initialize-era.
    pub stateless: bool,
    /// `serverInfo` (name, version, …), when the server sent it.
    pub server_info: Option<Value>,
    /// The server's capabilities.
    pub capabilities: Value,
    /// `instructions`, when sent.
    pub instructions: Option<String>,
    /// Every version the server listed (`server/discover`), when known.
    pub supported_versions: Vec<String>,
}

/// A tool definition from `tools/list`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    /// The tool's name.
    pub name: String,
    /// A description for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The JSON Schema of the arguments, verbatim.
    #[serde(default)]
    pub input_schema: Value,
    /// The JSON Schema of `structuredContent`, verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Every other member (title, annotations, icons, `_meta`, …).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A prompt argument.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
pub struct PromptArgument {
    /// The argument's name.
    pub name: String,
    /// A description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether it must be given.
    #[serde(default)]
    pub required: bool,
    /// Every other member.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A prompt definition from `prompts/list`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
pub struct Prompt {
    /// The prompt's name.
    pub name: String,
    /// A description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its arguments.
    #[serde(default)]
    pub arguments: Vec<PromptArgument>,
    /// Every other member.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A resource from `resources/list`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Resource {
    /// The resource's URI.
    pub uri: String,
    /// Its name.
    #[serde(default)]
    pub name: String,
    /// A description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Every other member.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A resource template from `resources/templates/list`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceTemplate {
    /// The RFC 6570 template.
    pub uri_template: String,
    /// Its name.
    #[serde(default)]
    pub name: String,
    /// A description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The MIME type of matching resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Every other member.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One content block of a tool result or prompt message.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Content {
    /// `{"type":"text"}`.
    Text(String),
    /// `{"type":"image"}`: base64 data and MIME type.
    Image {
        /// Base64 data.
        data: String,
        /// MIME type.
        mime_type: String,
    },
    /// `{"type":"audio"}`: base64 data and MIME type.
    Audio {
        /// Base64 data.
        data: String,
        /// MIME type.
        mime_type: String,
    },
    /// `{"type":"resource"}`: an embedded resource.
    Resource(ResourceContents),
    /// `{"type":"resource_link"}` or any other block, as sent.
    Other(Value),
}

impl Content {
    /// The text of a text block.
    #[must_use]
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Self::Text(t) => Some(t),
            _ => None,
        }
    }
}

fn str_of(v: &Value, k: &str) -> String {
    v.get(k)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        Ok(match v.get("type").and_then(Value::as_str) {
            Some("text") => Self::Text(str_of(&v, "text")),
            Some("image") => Self::Image {
                data: str_of(&v, "data"),
                mime_type: str_of(&v, "mimeType"),
            },
            Some("audio") => Self::Audio {
                data: str_of(&v, "data"),
                mime_type: str_of(&v, "mimeType"),
            },
            Some("resource") => match v.get("resource").cloned().map(serde_json::from_value) {
                Some(Ok(r)) => Self::Resource(r),
                _ => Self::Other(v),
            },
            _ => Self::Other(v),
        })
    }
}

/// One item of `resources/read` contents (text or blob).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceContents {
    /// The URI.
    pub uri: String,
    /// MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Text contents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Base64 contents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blob: Option<String>,
}

/// The result of `tools/call`. A failed tool is a value: `is_error` is set.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    /// The content blocks.
    #[serde(default)]
    pub content: Vec<Content>,
    /// `structuredContent`, when sent.
    #[serde(default)]
    pub structured_content: Option<Value>,
    /// Whether the tool reported failure.
    #[serde(default)]
    pub is_error: bool,
    /// Every other member (`_meta`, `resultType`, ...).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl CallToolResult {
    /// The text blocks joined with newlines.
    #[must_use]
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(Content::as_text)
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// The result of `resources/read`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct ReadResourceResult {
    /// The contents.
    #[serde(default)]
    pub contents: Vec<ResourceContents>,
    /// Every other member (`_meta`, `ttlMs`, ...).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One message of a prompt.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct PromptMessage {
    /// `user` or `assistant`.
    pub role: String,
    /// The content block.
    pub content: Content,
}

/// The result of `prompts/get`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct GetPromptResult {
    /// A description.
    #[serde(default)]
    pub description: Option<String>,
    /// The messages.
    #[serde(default)]
    pub messages: Vec<PromptMessage>,
    /// Every other member (`_meta`, `resultType`, ...).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The result of `completion/complete`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Completion {
    /// Suggested values.
    #[serde(default)]
    pub values: Vec<String>,
    /// How many values exist in all.
    #[serde(default)]
    pub total: Option<u64>,
    /// Whether there are more than `values`.
    #[serde(default)]
    pub has_more: bool,
}

/// A `notifications/progress` for one of the client's requests.
#[derive(Clone, Debug, PartialEq)]
pub struct Progress {
    /// Progress so far.
    pub progress: f64,
    /// The total, when known.
    pub total: Option<f64>,
    /// A message.
    pub message: Option<String>,
}

/// A `notifications/message` (a log line from the server).
#[derive(Clone, Debug, PartialEq)]
pub struct LogMessage {
    /// The level (`debug` … `emergency`).
    pub level: String,
    /// The logger name.
    pub logger: Option<String>,
    /// The data.
    pub data: Value,
}

/// A change the server announced (`listen`, or unsolicited on stdio).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ServerEvent {
    /// `notifications/tools/list_changed`.
    ToolsChanged,
    /// `notifications/prompts/list_changed`.
    PromptsChanged,
    /// `notifications/resources/list_changed`.
    ResourcesChanged,
    /// `notifications/resources/updated` for a URI.
    ResourceUpdated(String),
    /// Any other notification: method and params.
    Other(String, Value),
}

impl ServerEvent {
    pub(crate) fn from_notification(method: &str, params: &Value) -> Self {
        match method {
            "notifications/tools/list_changed" => Self::ToolsChanged,
            "notifications/prompts/list_changed" => Self::PromptsChanged,
            "notifications/resources/list_changed" => Self::ResourcesChanged,
            "notifications/resources/updated" => Self::ResourceUpdated(str_of(params, "uri")),
            _ => Self::Other(method.to_owned(), params.clone()),
        }
    }
}

/// What `listen` subscribes to (`subscriptions/listen`, 2026-07-28).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Subscriptions {
    /// `notifications/tools/list_changed`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub tools_list_changed: bool,
    /// `notifications/prompts/list_changed`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub prompts_list_changed: bool,
    /// `notifications/resources/list_changed`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub resources_list_changed: bool,
    /// `notifications/resources/updated` for these URIs.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub resource_subscriptions: Vec<String>,
}
