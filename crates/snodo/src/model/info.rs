//! Server identity and cache hints.

use serde::Serialize;

/// An icon for a server or component.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Icon {
    /// An `https:` or `data:` URI.
    pub src: String,
    /// MIME type, e.g. `image/png`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Sizes such as `"48x48"` or `"any"`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sizes: Vec<String>,
    /// `"light"` or `"dark"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub theme: Option<String>,
}

impl Icon {
    /// An icon with a source URI.
    pub fn new(src: impl Into<String>) -> Self {
        Self {
            src: src.into(),
            mime_type: None,
            sizes: Vec::new(),
            theme: None,
        }
    }

    /// Sets the MIME type.
    #[must_use]
    pub fn mime_type(mut self, mime: impl Into<String>) -> Self {
        self.mime_type = Some(mime.into());
        self
    }

    /// Adds a size.
    #[must_use]
    pub fn size(mut self, size: impl Into<String>) -> Self {
        self.sizes.push(size.into());
        self
    }

    pub(crate) fn validate(&self) -> Result<(), String> {
        if self.src.starts_with("https://") || self.src.starts_with("data:") {
            Ok(())
        } else {
            Err(format!(
                "icon src must be an https: or data: URI, got {:?}",
                self.src
            ))
        }
    }
}

/// The server's identity (`Implementation` on the wire).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerInfo {
    pub(crate) name: String,
    pub(crate) version: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) website_url: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) icons: Vec<Icon>,
}

impl ServerInfo {
    /// Identity with a name and version.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            version: version.into(),
            title: None,
            description: None,
            website_url: None,
            icons: Vec::new(),
        }
    }

    /// The name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The version.
    #[must_use]
    pub fn version(&self) -> &str {
        &self.version
    }

    pub(crate) fn validate(&self) -> Result<(), String> {
        if self.name.trim().is_empty() {
            return Err("server name must not be empty".into());
        }
        if self.version.trim().is_empty() {
            return Err("server version must not be empty".into());
        }
        if let Some(url) = &self.website_url {
            if !(url.starts_with("https://") || url.starts_with("http://")) {
                return Err(format!("websiteUrl must be an http(s) URL, got {url:?}"));
            }
        }
        self.icons.iter().try_for_each(Icon::validate)
    }
}

/// Who may share a cached result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheScope {
    /// No user data: shareable across authorization contexts.
    Public,
    /// Per authorization context.
    Private,
}

/// A cache hint (`ttlMs`, `cacheScope`) for 2026-07-28 cacheable results.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheHint {
    /// Time to live in milliseconds (0 = stale at once).
    pub ttl_ms: u64,
    /// Who may share it.
    pub scope: CacheScope,
}

impl CacheHint {
    /// A hint.
    #[must_use]
    pub const fn new(ttl_ms: u64, scope: CacheScope) -> Self {
        Self { ttl_ms, scope }
    }
}

impl Default for CacheHint {
    /// Immediately stale and private: safe for any server whose lists may vary by caller.
    fn default() -> Self {
        Self::new(0, CacheScope::Private)
    }
}
