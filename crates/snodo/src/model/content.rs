//! Content blocks, resource contents, tool results and prompt results.

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::annotations::Annotations;
use crate::protocol::json_text::{str_len, write_str};

/// A conversation role.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The human side.
    User,
    /// The model side.
    Assistant,
}

/// The contents of a resource: text or binary (base64 on the wire).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceContents {
    uri: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    mime_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    blob: Option<String>,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    meta: Option<Map<String, Value>>,
}

impl ResourceContents {
    /// Text contents.
    pub fn text(uri: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            mime_type: None,
            text: Some(text.into()),
            blob: None,
            meta: None,
        }
    }

    /// Binary contents; `bytes` are base64-encoded on the wire.
    pub fn blob(uri: impl Into<String>, bytes: &[u8]) -> Self {
        Self {
            uri: uri.into(),
            mime_type: None,
            text: None,
            blob: Some(base64::engine::general_purpose::STANDARD.encode(bytes)),
            meta: None,
        }
    }

    /// Sets the MIME type.
    #[must_use]
    pub fn mime_type(mut self, mime: impl Into<String>) -> Self {
        self.mime_type = Some(mime.into());
        self
    }

    /// Adds a `_meta` entry (2025-03-26 drops `_meta`).
    #[must_use]
    pub fn with_meta(mut self, key: impl Into<String>, value: Value) -> Self {
        self.meta
            .get_or_insert_with(Map::new)
            .insert(key.into(), value);
        self
    }

    /// The URI.
    #[must_use]
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// The text, for text contents.
    #[must_use]
    pub fn as_text(&self) -> Option<&str> {
        self.text.as_deref()
    }
}

/// One content block of a tool result or prompt message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
#[non_exhaustive]
pub enum Content {
    /// Plain text.
    Text {
        /// The text.
        text: String,
        /// Optional annotations.
        #[serde(skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations>,
    },
    /// An image, base64-encoded.
    Image {
        /// Base64 data.
        data: String,
        /// MIME type, e.g. `image/png`.
        mime_type: String,
        /// Optional annotations.
        #[serde(skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations>,
    },
    /// Audio, base64-encoded.
    Audio {
        /// Base64 data.
        data: String,
        /// MIME type, e.g. `audio/wav`.
        mime_type: String,
        /// Optional annotations.
        #[serde(skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations>,
    },
    /// A link to a resource the client may read.
    ResourceLink {
        /// The resource URI.
        uri: String,
        /// The resource name.
        name: String,
        /// Optional description.
        #[serde(skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        /// Optional MIME type.
        #[serde(skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// Optional annotations.
        #[serde(skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations>,
    },
    /// An embedded resource.
    Resource {
        /// The contents.
        resource: ResourceContents,
        /// Optional annotations.
        #[serde(skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations>,
    },
}

impl Content {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text {
            text: text.into(),
            annotations: None,
        }
    }

    /// An image block from raw bytes.
    pub fn image(bytes: &[u8], mime_type: impl Into<String>) -> Self {
        Self::Image {
            data: base64::engine::general_purpose::STANDARD.encode(bytes),
            mime_type: mime_type.into(),
            annotations: None,
        }
    }

    /// An audio block from raw bytes.
    pub fn audio(bytes: &[u8], mime_type: impl Into<String>) -> Self {
        Self::Audio {
            data: base64::engine::general_purpose::STANDARD.encode(bytes),
            mime_type: mime_type.into(),
            annotations: None,
        }
    }

    /// A resource link.
    pub fn resource_link(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Self::ResourceLink {
            uri: uri.into(),
            name: name.into(),
            description: None,
            mime_type: None,
            annotations: None,
        }
    }

    /// An embedded resource.
    #[must_use]
    pub fn resource(contents: ResourceContents) -> Self {
        Self::Resource {
            resource: contents,
            annotations: None,
        }
    }

    /// Sets the block's audience, priority and last-modified hints (an empty set
    /// removes them).
    #[must_use]
    pub fn with_annotations(mut self, hints: Annotations) -> Self {
        let hints = (!hints.is_empty()).then_some(hints);
        match &mut self {
            Self::Text { annotations, .. }
            | Self::Image { annotations, .. }
            | Self::Audio { annotations, .. }
            | Self::ResourceLink { annotations, .. }
            | Self::Resource { annotations, .. } => *annotations = hints,
        }
        self
    }

    /// The block's hints, if any.
    #[must_use]
    pub fn annotations(&self) -> Option<&Annotations> {
        match self {
            Self::Text { annotations, .. }
            | Self::Image { annotations, .. }
            | Self::Audio { annotations, .. }
            | Self::ResourceLink { annotations, .. }
            | Self::Resource { annotations, .. } => annotations.as_ref(),
        }
    }
}

/// The result of a tool call.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResult {
    #[serde(default)]
    content: Vec<Content>,
    #[serde(skip_serializing_if = "Option::is_none")]
    structured_content: Option<Value>,
    #[serde(default)]
    is_error: bool,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    meta: Option<Map<String, Value>>,
}

impl ToolResult {
    /// A successful result with these content blocks.
    #[must_use]
    pub fn new(content: Vec<Content>) -> Self {
        Self {
            content,
            ..Self::default()
        }
    }

    /// A successful result with one text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::new(vec![Content::text(text)])
    }

    /// A successful structured result: `value` as `structuredContent`, mirrored as a
    /// JSON text block for clients that do not read structured output.
    #[must_use]
    pub fn structured(value: Value) -> Self {
        let text = value.to_string();
        Self {
            content: vec![Content::text(text)],
            structured_content: Some(value),
            ..Self::default()
        }
    }

    /// An execution failure the model can read and act on (`isError: true`).
    pub fn error(message: impl Into<String>) -> Self {
        Self {
            content: vec![Content::text(message)],
            is_error: true,
            ..Self::default()
        }
    }

    /// Adds a content block.
    #[must_use]
    pub fn with_content(mut self, block: Content) -> Self {
        self.content.push(block);
        self
    }

    /// Adds a `_meta` entry.
    #[must_use]
    pub fn with_meta(mut self, key: impl Into<String>, value: Value) -> Self {
        self.meta
            .get_or_insert_with(Map::new)
            .insert(key.into(), value);
        self
    }

    /// The content blocks.
    #[must_use]
    pub fn content(&self) -> &[Content] {
        &self.content
    }

    /// Whether the handler set a result `_meta`.
    pub(crate) fn has_meta(&self) -> bool {
        self.meta.is_some()
    }

    /// One `_meta` entry.
    pub(crate) fn meta_entry(&self, key: &str) -> Option<&Value> {
        self.meta.as_ref()?.get(key)
    }

    /// About how many bytes [`write_json`](Self::write_json) writes (text blocks
    /// counted escaped), to size the response buffer once.
    pub(crate) fn size_hint(&self) -> usize {
        let blocks: usize = self
            .content
            .iter()
            .map(|b| match b {
                Content::Text { text, .. } => str_len(text) + 30,
                _ => 256,
            })
            .sum();
        let structured = self.structured_content.as_ref().map_or(0, |_| 256);
        blocks + structured + 48
    }

    /// Appends the result as JSON, byte for byte what its `Serialize` writes, with the
    /// text of plain text blocks escaped by the fast writer (large tool outputs are
    /// mostly such text). Serialising only strings and JSON values cannot fail.
    pub(crate) fn write_json(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        out.extend_from_slice(b"{\"content\":[");
        for (i, block) in self.content.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            match block {
                Content::Text {
                    text,
                    annotations: None,
                } => {
                    out.extend_from_slice(b"{\"type\":\"text\",\"text\":");
                    write_str(out, text);
                    out.push(b'}');
                }
                other => serde_json::to_writer(&mut *out, other)?,
            }
        }
        out.push(b']');
        if let Some(structured) = &self.structured_content {
            out.extend_from_slice(b",\"structuredContent\":");
            serde_json::to_writer(&mut *out, structured)?;
        }
        out.extend_from_slice(if self.is_error {
            b",\"isError\":true"
        } else {
            b",\"isError\":false"
        });
        if let Some(meta) = &self.meta {
            out.extend_from_slice(b",\"_meta\":");
            serde_json::to_writer(&mut *out, meta)?;
        }
        out.push(b'}');
        Ok(())
    }

    /// The structured content, if any.
    #[must_use]
    pub fn structured_content(&self) -> Option<&Value> {
        self.structured_content.as_ref()
    }

    /// Whether this is an execution failure.
    #[must_use]
    pub fn is_error(&self) -> bool {
        self.is_error
    }
}

/// One message of a prompt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PromptMessage {
    /// Who speaks.
    pub role: Role,
    /// What is said: exactly one content block.
    pub content: Content,
}

impl PromptMessage {
    /// A user message.
    #[must_use]
    pub fn user(content: Content) -> Self {
        Self {
            role: Role::User,
            content,
        }
    }

    /// An assistant message.
    #[must_use]
    pub fn assistant(content: Content) -> Self {
        Self {
            role: Role::Assistant,
            content,
        }
    }
}

/// The result of `prompts/get`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PromptResult {
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    #[serde(default)]
    messages: Vec<PromptMessage>,
}

impl PromptResult {
    /// A result with these messages.
    #[must_use]
    pub fn new(messages: Vec<PromptMessage>) -> Self {
        Self {
            description: None,
            messages,
        }
    }

    /// Sets the description.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// The messages.
    #[must_use]
    pub fn messages(&self) -> &[PromptMessage] {
        &self.messages
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn write_json_is_what_serialize_writes() {
        let annotated = Content::Text {
            text: "with \"annotations\"\n".into(),
            annotations: Some(Annotations {
                priority: Some(0.5),
                ..Annotations::default()
            }),
        };
        let results = [
            ToolResult::default(),
            ToolResult::text("hello"),
            ToolResult::text("tab\there, quote \" and 日本 \u{1}"),
            ToolResult::error("it failed"),
            ToolResult::structured(json!({"a": [1, "two", null]})),
            ToolResult::text("x")
                .with_content(annotated)
                .with_content(Content::image(b"png", "image/png"))
                .with_content(Content::resource_link("file:///a", "a"))
                .with_meta("k", json!({"v": true})),
        ];
        for r in results {
            let mut ours = Vec::new();
            assert!(r.write_json(&mut ours).is_ok());
            assert_eq!(
                String::from_utf8_lossy(&ours),
                serde_json::to_string(&r).unwrap_or_default()
            );
        }
    }

    #[test]
    fn content_wire_shapes() {
        let v = serde_json::to_value(Content::image(b"\x89PNG", "image/png")).unwrap_or_default();
        assert_eq!(
            v,
            json!({"type":"image","data":"iVBORw==","mimeType":"image/png"})
        );
        let v = serde_json::to_value(Content::resource(
            ResourceContents::text("test://x", "hi").mime_type("text/plain"),
        ))
        .unwrap_or_default();
        assert_eq!(
            v,
            json!({"type":"resource","resource":{"uri":"test://x","mimeType":"text/plain","text":"hi"}})
        );
        let v = serde_json::to_value(Content::resource_link("file:///a", "a")).unwrap_or_default();
        assert_eq!(
            v,
            json!({"type":"resource_link","uri":"file:///a","name":"a"})
        );
    }

    #[test]
    fn structured_results_mirror_text() {
        let r = ToolResult::structured(json!({"ok": true}));
        let v = serde_json::to_value(&r).unwrap_or_default();
        assert_eq!(
            v,
            json!({"content":[{"type":"text","text":"{\"ok\":true}"}],"structuredContent":{"ok":true},"isError":false})
        );
    }
}
