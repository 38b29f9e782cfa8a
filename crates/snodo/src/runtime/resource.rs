//! Resources: fixed URIs and URI templates, their readers, listers and completers.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value};

use super::completion::{Completer, CompletionRequest};
use super::context::RequestContext;
use super::error::HandlerError;
use super::handler::{Erased, Handler, Slot, States, erase};
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

/// What a template's lister is asked (nothing yet: the lister names every resource the
/// template currently addresses).
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct ListRequest {}

pub(crate) type Reader = Erased<ReadRequest, Result<Vec<ResourceContents>, HandlerError>>;

pub(crate) type Lister = Erased<ListRequest, Result<Vec<ResourceInfo>, RpcError>>;

/// Erases a reader (any [`Handler`] form).
fn boxed_reader<M, H>(handler: H) -> Slot<Reader>
where
    H: Handler<ReadRequest, M, Output = Result<Vec<ResourceContents>, HandlerError>>,
{
    erase(handler, std::convert::identity)
}

/// `on_read` (documented by the caller, whose doc example differs) and its `reader`
/// shorthand: the same two builder methods on [`Resource`] and [`ResourceTemplate`],
/// whose `reader` field both hold a [`Slot<Reader>`].
macro_rules! read_methods {
    ($(#[$doc:meta])*) => {
        $(#[$doc])*
        #[must_use]
        pub fn on_read<M, H>(mut self, handler: H) -> Self
        where
            H: Handler<ReadRequest, M, Output = Result<Vec<ResourceContents>, HandlerError>>,
        {
            self.reader = boxed_reader(handler);
            self
        }

        /// Sets the reader: [`on_read`](Self::on_read) for the `(request, context)`
        /// closure, whose parameter types need no annotation.
        #[must_use]
        pub fn reader<F, Fut>(self, f: F) -> Self
        where
            F: Fn(ReadRequest, RequestContext) -> Fut + Send + Sync + 'static,
            Fut: Future<Output = Result<Vec<ResourceContents>, HandlerError>> + Send + 'static,
        {
            self.on_read(f)
        }
    };
}

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
    pub(crate) reader: Slot<Reader>,
    /// Middleware around reads of this resource ([`Resource::layer`]).
    pub(crate) layers: crate::middleware::Layers,
}

impl fmt::Debug for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Resource")
            .field("uri", &self.info.uri)
            .finish_non_exhaustive()
    }
}

impl Resource {
    /// A resource at `uri` named `name`.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            info: ResourceInfo::new(uri, name),
            reader: Slot::Empty,
            layers: crate::middleware::Layers::new(),
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

    read_methods! {
        /// Sets the reader of `resources/read`: an async function (or closure) of the
        /// [`ReadRequest`], optionally with the [`RequestContext`] after it and a
        /// [`State`](crate::State) before it ([`Handler`] lists the forms).
        ///
        /// ```
        /// # use snodo::{ReadRequest, Resource, ResourceContents, State};
        /// # #[derive(Clone)] struct Motd(&'static str);
        /// let r = Resource::new("motd://today", "motd").on_read(|State(m): State<Motd>, req: ReadRequest| async move {
        ///     Ok(vec![ResourceContents::text(req.uri, m.0)])
        /// });
        /// # let _ = r;
        /// ```
    }

    /// Binds a reader that takes state; `Err(type name)` when it is not registered.
    pub(crate) fn bind(&mut self, states: &States) -> Result<(), &'static str> {
        self.reader.bind(states)
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
    pub(crate) reader: Slot<Reader>,
    pub(crate) lister: Slot<Lister>,
    pub(crate) completer: Slot<Completer>,
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
            reader: Slot::Empty,
            lister: Slot::Empty,
            completer: Slot::Empty,
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

    read_methods! {
        /// Sets the reader of the resources it addresses: any [`Handler`] form of a
        /// [`ReadRequest`], whose `variables` are the template's.
        ///
        /// ```
        /// # use snodo::{ReadRequest, ResourceContents, ResourceTemplate, State};
        /// # #[derive(Clone)] struct Notes;
        /// let t = ResourceTemplate::new("note://{id}", "note")
        ///     .on_read(|State(_notes): State<Notes>, req: ReadRequest| async move {
        ///         let id = req.variables.get("id").cloned().unwrap_or_default();
        ///         Ok(vec![ResourceContents::text(req.uri, format!("note {id}"))])
        ///     });
        /// # let _ = t;
        /// ```
    }

    /// Sets the lister: the concrete resources this template currently addresses,
    /// listed in `resources/list` after the fixed resources. Any [`Handler`] form of a
    /// [`ListRequest`].
    #[must_use]
    pub fn on_list<M, H>(mut self, handler: H) -> Self
    where
        H: Handler<ListRequest, M, Output = Result<Vec<ResourceInfo>, HandlerError>>,
    {
        self.lister = erase(handler, |r| r.map_err(HandlerError::into_rpc_error));
        self
    }

    /// Sets a lister of the context alone ([`on_list`](Self::on_list) takes every
    /// form).
    #[must_use]
    pub fn lister<F, Fut>(self, f: F) -> Self
    where
        F: Fn(RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<ResourceInfo>, HandlerError>> + Send + 'static,
    {
        self.on_list(move |_: ListRequest, ctx: RequestContext| f(ctx))
    }

    /// Sets the completer of the template's variables (`completion/complete` with a
    /// `ref/resource` reference): any [`Handler`] form of a [`CompletionRequest`].
    #[must_use]
    pub fn on_complete<M, H>(mut self, handler: H) -> Self
    where
        H: Handler<CompletionRequest, M, Output = Result<Vec<String>, HandlerError>>,
    {
        self.completer = super::completion::boxed(handler);
        self
    }

    /// Sets a completer: [`on_complete`](Self::on_complete) for the `(request,
    /// context)` closure, whose parameter types need no annotation.
    #[must_use]
    pub fn completer<F, Fut>(self, f: F) -> Self
    where
        F: Fn(CompletionRequest, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<String>, HandlerError>> + Send + 'static,
    {
        self.on_complete(f)
    }

    /// Binds the handlers that take state; `Err(type name)` when one is not registered.
    pub(crate) fn bind(&mut self, states: &States) -> Result<(), &'static str> {
        self.reader.bind(states)?;
        self.lister.bind(states)?;
        self.completer.bind(states)
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
