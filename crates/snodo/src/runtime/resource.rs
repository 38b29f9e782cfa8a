//! Resources: fixed URIs and URI templates, their readers, listers and completers.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures_util::FutureExt as _;
use futures_util::future::BoxFuture;
use serde::Serialize;
use serde_json::{Map, Value};

use super::completion::{Completer, CompletionRequest};
use super::context::RequestContext;
use super::error::HandlerError;
use super::uri_template::UriTemplate;
use crate::model::{Annotations, Icon, ResourceContents};
use crate::protocol::RpcError;

/// What a reader is asked for.
#[derive(Clone, Debug)]
pub struct ReadRequest {
    /// The requested URI.
    pub uri: String,
    /// Template variables (empty for fixed resources).
    pub variables: HashMap<String, String>,
}

pub(crate) type Reader = Arc<
    dyn Fn(
            ReadRequest,
            RequestContext,
        ) -> BoxFuture<'static, Result<Vec<ResourceContents>, HandlerError>>
        + Send
        + Sync,
>;

pub(crate) type Lister = Arc<
    dyn Fn(RequestContext) -> BoxFuture<'static, Result<Vec<ResourceInfo>, RpcError>> + Send + Sync,
>;

/// The listed description of a resource (`Resource` on the wire).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceInfo {
    uri: String,
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mime_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    size: Option<u64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    icons: Vec<Icon>,
    #[serde(skip_serializing_if = "Option::is_none")]
    annotations: Option<Annotations>,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    meta: Option<Map<String, Value>>,
}

impl ResourceInfo {
    /// A listed resource with a URI and a name.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            size: None,
            icons: Vec::new(),
            annotations: None,
            meta: None,
        }
    }

    /// Sets the description.
    #[must_use]
    pub fn description(mut self, d: impl Into<String>) -> Self {
        self.description = Some(d.into());
        self
    }

    /// Sets the title.
    #[must_use]
    pub fn title(mut self, t: impl Into<String>) -> Self {
        self.title = Some(t.into());
        self
    }

    /// Sets the MIME type.
    #[must_use]
    pub fn mime_type(mut self, m: impl Into<String>) -> Self {
        self.mime_type = Some(m.into());
        self
    }

    /// Sets the size in bytes.
    #[must_use]
    pub fn size(mut self, size: u64) -> Self {
        self.size = Some(size);
        self
    }

    /// Adds an icon.
    #[must_use]
    pub fn icon(mut self, icon: Icon) -> Self {
        self.icons.push(icon);
        self
    }

    /// Sets the audience, priority and last-modified hints.
    #[must_use]
    pub fn annotations(mut self, hints: Annotations) -> Self {
        self.annotations = (!hints.is_empty()).then_some(hints);
        self
    }

    /// Adds a `_meta` entry.
    #[must_use]
    pub fn meta(mut self, key: impl Into<String>, value: Value) -> Self {
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
}

/// A resource at a fixed URI.
#[derive(Clone)]
pub struct Resource {
    pub(crate) info: ResourceInfo,
    pub(crate) reader: Option<Reader>,
}

impl fmt::Debug for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Resource")
            .field("uri", &self.info.uri)
            .finish_non_exhaustive()
    }
}

fn boxed_reader<F, Fut>(f: F) -> Reader
where
    F: Fn(ReadRequest, RequestContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Vec<ResourceContents>, HandlerError>> + Send + 'static,
{
    Arc::new(move |req, ctx| Box::pin(f(req, ctx)))
}

impl Resource {
    /// A resource at `uri` named `name`.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            info: ResourceInfo::new(uri, name),
            reader: None,
        }
    }

    /// Sets the description.
    #[must_use]
    pub fn description(mut self, d: impl Into<String>) -> Self {
        self.info = self.info.description(d);
        self
    }

    /// Sets the title.
    #[must_use]
    pub fn title(mut self, t: impl Into<String>) -> Self {
        self.info = self.info.title(t);
        self
    }

    /// Sets the MIME type.
    #[must_use]
    pub fn mime_type(mut self, m: impl Into<String>) -> Self {
        self.info = self.info.mime_type(m);
        self
    }

    /// Adds an icon.
    #[must_use]
    pub fn icon(mut self, icon: Icon) -> Self {
        self.info = self.info.icon(icon);
        self
    }

    /// Sets the audience, priority and last-modified hints.
    #[must_use]
    pub fn annotations(mut self, hints: Annotations) -> Self {
        self.info = self.info.annotations(hints);
        self
    }

    /// Adds a `_meta` entry to the listed resource.
    #[must_use]
    pub fn meta(mut self, key: impl Into<String>, value: Value) -> Self {
        self.info = self.info.meta(key, value);
        self
    }

    /// Sets the reader.
    #[must_use]
    pub fn reader<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(ReadRequest, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<ResourceContents>, HandlerError>> + Send + 'static,
    {
        self.reader = Some(boxed_reader(f));
        self
    }

    /// A fixed text resource.
    #[must_use]
    pub fn static_text(self, mime_type: &str, text: impl Into<String>) -> Self {
        let text: Arc<str> = Arc::from(text.into());
        let mime = mime_type.to_owned();
        self.mime_type(mime_type).reader(move |req, _ctx| {
            let contents = ResourceContents::text(req.uri, text.as_ref()).mime_type(mime.clone());
            async move { Ok(vec![contents]) }
        })
    }

    /// A fixed binary resource.
    #[must_use]
    pub fn static_blob(self, mime_type: &str, bytes: impl Into<Arc<[u8]>>) -> Self {
        let bytes: Arc<[u8]> = bytes.into();
        let mime = mime_type.to_owned();
        self.mime_type(mime_type).reader(move |req, _ctx| {
            let contents = ResourceContents::blob(req.uri, &bytes).mime_type(mime.clone());
            async move { Ok(vec![contents]) }
        })
    }
}

/// Resources addressed by an RFC 6570 URI template.
#[derive(Clone)]
pub struct ResourceTemplate {
    pub(crate) template: String,
    pub(crate) name: String,
    pub(crate) title: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) mime_type: Option<String>,
    pub(crate) icons: Vec<Icon>,
    pub(crate) annotations: Option<Annotations>,
    pub(crate) reader: Option<Reader>,
    pub(crate) lister: Option<Lister>,
    pub(crate) completer: Option<Completer>,
}

impl fmt::Debug for ResourceTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResourceTemplate")
            .field("template", &self.template)
            .finish_non_exhaustive()
    }
}

/// The wire shape of a template (`ResourceTemplate`).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TemplateInfo<'a> {
    uri_template: &'a str,
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    title: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mime_type: Option<&'a str>,
    #[serde(skip_serializing_if = "<[Icon]>::is_empty")]
    icons: &'a [Icon],
    #[serde(skip_serializing_if = "Option::is_none")]
    annotations: Option<&'a Annotations>,
}

impl ResourceTemplate {
    /// A template such as `file:///{+path}` named `name`.
    pub fn new(template: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            template: template.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            icons: Vec::new(),
            annotations: None,
            reader: None,
            lister: None,
            completer: None,
        }
    }

    /// Sets the description.
    #[must_use]
    pub fn description(mut self, d: impl Into<String>) -> Self {
        self.description = Some(d.into());
        self
    }

    /// Sets the title.
    #[must_use]
    pub fn title(mut self, t: impl Into<String>) -> Self {
        self.title = Some(t.into());
        self
    }

    /// Sets the MIME type of every resource it addresses.
    #[must_use]
    pub fn mime_type(mut self, m: impl Into<String>) -> Self {
        self.mime_type = Some(m.into());
        self
    }

    /// Sets the audience, priority and last-modified hints of every resource it
    /// addresses.
    #[must_use]
    pub fn annotations(mut self, hints: Annotations) -> Self {
        self.annotations = (!hints.is_empty()).then_some(hints);
        self
    }

    /// Sets the reader; it receives the template variables.
    #[must_use]
    pub fn reader<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(ReadRequest, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<ResourceContents>, HandlerError>> + Send + 'static,
    {
        self.reader = Some(boxed_reader(f));
        self
    }

    /// Sets a lister: the concrete resources this template currently addresses, listed
    /// in `resources/list` after the fixed resources.
    #[must_use]
    pub fn lister<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<ResourceInfo>, HandlerError>> + Send + 'static,
    {
        self.lister = Some(Arc::new(move |ctx| {
            f(ctx)
                .map(|r| r.map_err(HandlerError::into_rpc_error))
                .boxed()
        }));
        self
    }

    /// Sets a completer for the template's variables (`completion/complete` with a
    /// `ref/resource` reference).
    #[must_use]
    pub fn completer<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(CompletionRequest, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<String>, HandlerError>> + Send + 'static,
    {
        self.completer = Some(super::completion::boxed(f));
        self
    }

    pub(crate) fn info(&self) -> TemplateInfo<'_> {
        TemplateInfo {
            uri_template: &self.template,
            name: &self.name,
            title: self.title.as_deref(),
            description: self.description.as_deref(),
            mime_type: self.mime_type.as_deref(),
            icons: &self.icons,
            annotations: self.annotations.as_ref(),
        }
    }
}

/// A template with its parsed matcher.
#[derive(Clone, Debug)]
pub(crate) struct CompiledTemplate {
    pub(crate) template: ResourceTemplate,
    pub(crate) matcher: UriTemplate,
}

/// Anything a resource reader written with `#[snodo::resource]` may return.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not resource contents",
    label = "a resource returns String, ResourceContents, Vec<ResourceContents>, or a Result of one"
)]
pub trait IntoResourceContents {
    /// Converts into the contents read at `uri` (`mime_type`: the declared one, for
    /// text given as a `String`).
    fn into_contents(
        self,
        uri: &str,
        mime_type: Option<&str>,
    ) -> Result<Vec<ResourceContents>, HandlerError>;
}

/// Text contents at the requested URI.
impl IntoResourceContents for String {
    fn into_contents(
        self,
        uri: &str,
        mime_type: Option<&str>,
    ) -> Result<Vec<ResourceContents>, HandlerError> {
        let c = ResourceContents::text(uri, self);
        Ok(vec![match mime_type {
            Some(m) => c.mime_type(m),
            None => c,
        }])
    }
}

impl IntoResourceContents for ResourceContents {
    fn into_contents(
        self,
        _: &str,
        _: Option<&str>,
    ) -> Result<Vec<ResourceContents>, HandlerError> {
        Ok(vec![self])
    }
}

impl IntoResourceContents for Vec<ResourceContents> {
    fn into_contents(
        self,
        _: &str,
        _: Option<&str>,
    ) -> Result<Vec<ResourceContents>, HandlerError> {
        Ok(self)
    }
}

impl<T: IntoResourceContents, E: Into<HandlerError>> IntoResourceContents for Result<T, E> {
    fn into_contents(
        self,
        uri: &str,
        mime_type: Option<&str>,
    ) -> Result<Vec<ResourceContents>, HandlerError> {
        self.map_err(Into::into)
            .and_then(|c| c.into_contents(uri, mime_type))
    }
}
