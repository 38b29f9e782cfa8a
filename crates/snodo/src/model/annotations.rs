//! Annotations: audience, priority and last-modified hints on content blocks and
//! resources, and the behaviour hints of a tool.

use serde::{Deserialize, Serialize};

use super::content::Role;

/// Audience, priority and last-modified hints on a content block, a resource or a
/// resource template.
///
/// `lastModified` does not exist in 2025-03-26; that dialect drops it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    /// Who the content is for: `"user"` and/or `"assistant"`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub audience: Vec<Role>,
    /// Importance from 0 (least) to 1 (most).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<f64>,
    /// ISO 8601 timestamp of the last modification.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
}

impl Annotations {
    /// No hints.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a role to the audience.
    #[must_use]
    pub fn audience(mut self, role: Role) -> Self {
        if !self.audience.contains(&role) {
            self.audience.push(role);
        }
        self
    }

    /// Sets the priority, clamped to 0..=1 (a NaN is left out).
    #[must_use]
    pub fn priority(mut self, priority: f64) -> Self {
        self.priority = (!priority.is_nan()).then(|| priority.clamp(0.0, 1.0));
        self
    }

    /// Sets the last-modified timestamp (ISO 8601, e.g. `2026-07-28T10:00:00Z`).
    #[must_use]
    pub fn last_modified(mut self, timestamp: impl Into<String>) -> Self {
        self.last_modified = Some(timestamp.into());
        self
    }

    /// Whether no hint is set.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.audience.is_empty() && self.priority.is_none() && self.last_modified.is_none()
    }
}

/// A tool's behaviour hints (`ToolAnnotations`, the same members in every revision).
///
/// Every member is optional; a client assumes the spec's default for an absent one:
/// `readOnlyHint: false`, `destructiveHint: true`, `idempotentHint: false`,
/// `openWorldHint: true`. Hints describe, they do not enforce; clients are told not to
/// trust them from untrusted servers.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolAnnotations {
    /// A human-readable title. Prefer [`Tool::title`](crate::Tool::title): a dialect
    /// without a tool `title` (2025-03-26) carries that one here.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool does not modify its environment.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The tool may destroy or overwrite (meaningful when not read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Repeating a call with the same arguments has no further effect (meaningful
    /// when not read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// The tool reaches an open world of outside entities (the web, other systems).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

impl ToolAnnotations {
    /// No hints.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the annotation title.
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Sets `readOnlyHint`.
    #[must_use]
    pub fn read_only(mut self, on: bool) -> Self {
        self.read_only_hint = Some(on);
        self
    }

    /// Sets `destructiveHint`.
    #[must_use]
    pub fn destructive(mut self, on: bool) -> Self {
        self.destructive_hint = Some(on);
        self
    }

    /// Sets `idempotentHint`.
    #[must_use]
    pub fn idempotent(mut self, on: bool) -> Self {
        self.idempotent_hint = Some(on);
        self
    }

    /// Sets `openWorldHint`.
    #[must_use]
    pub fn open_world(mut self, on: bool) -> Self {
        self.open_world_hint = Some(on);
        self
    }

    /// Whether no hint is set.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn wire_names() {
        let t = ToolAnnotations::new()
            .title("Delete")
            .read_only(false)
            .destructive(true)
            .idempotent(true)
            .open_world(false);
        assert_eq!(
            serde_json::to_value(&t).unwrap_or_default(),
            json!({"title":"Delete","readOnlyHint":false,"destructiveHint":true,"idempotentHint":true,"openWorldHint":false})
        );
        assert!(ToolAnnotations::new().is_empty());
        let a = Annotations::new()
            .audience(Role::User)
            .audience(Role::User)
            .priority(3.0)
            .last_modified("2026-07-28T00:00:00Z");
        assert_eq!(
            serde_json::to_value(&a).unwrap_or_default(),
            json!({"audience":["user"],"priority":1.0,"lastModified":"2026-07-28T00:00:00Z"})
        );
        assert!(Annotations::new().priority(f64::NAN).is_empty());
    }
}
