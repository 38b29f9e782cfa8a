//! MCP Apps (`io.modelcontextprotocol/ui`): a tool that comes with an interactive HTML
//! view the host renders in a sandboxed frame.
//!
//! The view is a resource at a `ui://` URI with the MIME type
//! `text/html;profile=mcp-app` ([`AppView`]); a tool links to it with
//! `_meta.ui.resourceUri` ([`Tool::ui`](crate::Tool::ui)). Register both with
//! [`RuntimeBuilder::app`](crate::RuntimeBuilder::app), which also declares the extension
//! where the dialect has `capabilities.extensions`.
//!
//! **Fallback.** A host without the extension ignores `_meta.ui` and shows the tool's
//! result as usual, so a linked tool still answers with text (and, for the view,
//! `structuredContent`): [`ToolResult::structured`](crate::ToolResult::structured) does
//! both. [`client_supports`] says whether the calling client declared the extension
//! (2026-07-28 requests carry their capabilities), for a handler that wants to send a
//! longer text to clients that will not render the view.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::model::ResourceContents;
use crate::runtime::context::RequestContext;
use crate::runtime::resource::Resource;

/// The extension's identifier.
pub const EXTENSION_ID: &str = "io.modelcontextprotocol/ui";

/// The MIME type of an app view.
pub const MIME_TYPE: &str = "text/html;profile=mcp-app";

/// The origins a view may reach (its Content Security Policy): without one, the host
/// allows the view no network access.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Csp {
    connect: Vec<String>,
    resources: Vec<String>,
    frames: Vec<String>,
}

impl Csp {
    /// No origins.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Lets the view `fetch`/WebSocket to `origin` (`connectDomains`).
    #[must_use]
    pub fn connect(mut self, origin: impl Into<String>) -> Self {
        self.connect.push(origin.into());
        self
    }

    /// Lets the view load scripts, styles, images and fonts from `origin`
    /// (`resourceDomains`).
    #[must_use]
    pub fn resource(mut self, origin: impl Into<String>) -> Self {
        self.resources.push(origin.into());
        self
    }

    /// Lets the view embed frames from `origin` (`frameDomains`).
    #[must_use]
    pub fn frame(mut self, origin: impl Into<String>) -> Self {
        self.frames.push(origin.into());
        self
    }

    fn to_json(&self) -> Value {
        let mut m = Map::new();
        for (key, list) in [
            ("connectDomains", &self.connect),
            ("resourceDomains", &self.resources),
            ("frameDomains", &self.frames),
        ] {
            if !list.is_empty() {
                m.insert(key.into(), json!(list));
            }
        }
        Value::Object(m)
    }
}

/// An app view: an HTML document served at a `ui://` URI.
#[derive(Clone, Debug)]
pub struct AppView {
    uri: String,
    name: String,
    description: Option<String>,
    html: Arc<str>,
    csp: Option<Csp>,
    prefers_border: Option<bool>,
}

impl AppView {
    /// The view at `uri` (`ui://server/view.html`), named `name`, with this HTML.
    pub fn new(uri: impl Into<String>, name: impl Into<String>, html: impl Into<Arc<str>>) -> Self {
        Self {
            uri: uri.into(),
            name: name.into(),
            description: None,
            html: html.into(),
            csp: None,
            prefers_border: None,
        }
    }

    /// Sets the description.
    #[must_use]
    pub fn description(mut self, d: impl Into<String>) -> Self {
        self.description = Some(d.into());
        self
    }

    /// Sets the origins the view may reach.
    #[must_use]
    pub fn csp(mut self, csp: Csp) -> Self {
        self.csp = Some(csp);
        self
    }

    /// Asks the host to draw (or not) a border around the view.
    #[must_use]
    pub fn prefers_border(mut self, on: bool) -> Self {
        self.prefers_border = Some(on);
        self
    }

    /// The URI.
    #[must_use]
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// `_meta.ui` of the resource: CSP and border preference.
    fn ui_meta(&self) -> Option<Value> {
        let mut ui = Map::new();
        if let Some(csp) = &self.csp {
            ui.insert("csp".into(), csp.to_json());
        }
        if let Some(b) = self.prefers_border {
            ui.insert("prefersBorder".into(), Value::Bool(b));
        }
        (!ui.is_empty()).then_some(Value::Object(ui))
    }

    /// The view as a resource: listed, and read as `text/html;profile=mcp-app` with its
    /// `_meta.ui` on both the listing and the contents.
    #[must_use]
    pub fn resource(&self) -> Resource {
        let meta = self.ui_meta();
        let html = Arc::clone(&self.html);
        let contents_meta = meta.clone();
        let mut r = Resource::new(&self.uri, &self.name)
            .mime_type(MIME_TYPE)
            .reader(move |req, _ctx| {
                let mut c = ResourceContents::text(req.uri, html.as_ref()).mime_type(MIME_TYPE);
                if let Some(m) = &contents_meta {
                    c = c.with_meta("ui", m.clone());
                }
                async move { Ok(vec![c]) }
            });
        if let Some(d) = &self.description {
            r = r.description(d);
        }
        if let Some(m) = meta {
            r = r.meta("ui", m);
        }
        r
    }
}

/// Whether the calling client declared the extension with the app MIME type (in
/// `extensions["io.modelcontextprotocol/ui"].mimeTypes`). Initialize-era requests carry no
/// capabilities of their own here: `false`, and the text result stands.
#[must_use]
pub fn client_supports(ctx: &RequestContext) -> bool {
    ctx.client_capabilities()
        .and_then(|c| c.get("extensions"))
        .and_then(|e| e.get(EXTENSION_ID))
        .and_then(|u| u.get("mimeTypes"))
        .and_then(Value::as_array)
        .is_some_and(|m| m.iter().any(|t| t == MIME_TYPE))
}

impl crate::RuntimeBuilder {
    /// Registers an app view (MCP Apps, [`crate::apps`]) as a resource and declares the
    /// `io.modelcontextprotocol/ui` extension; link tools to it with
    /// [`Tool::ui`](crate::Tool::ui).
    pub fn app(self, view: AppView) -> Self {
        self.declare_extension(EXTENSION_ID, json!({}))
            .resource(view.resource())
    }
}

impl crate::Tool {
    /// Links the tool to an app view (MCP Apps, [`crate::apps`]): `_meta.ui.resourceUri`.
    /// Register the view too ([`RuntimeBuilder::app`](crate::RuntimeBuilder::app)).
    #[must_use]
    pub fn ui(mut self, view: &AppView) -> Self {
        let meta = self.meta.get_or_insert_with(Map::new);
        let ui = meta
            .entry("ui")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(ui) = ui {
            ui.insert("resourceUri".into(), Value::String(view.uri().to_owned()));
        }
        self
    }
}
