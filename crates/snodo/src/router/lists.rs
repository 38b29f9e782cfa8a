//! `initialize`, `server/discover` and the four paginated lists.

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::result::raw_array;
use super::{Answer, Call, Member, Output, ResultObject, Router};
use crate::caller::Principal;
use crate::protocol::{Method, RpcError};
use crate::runtime::authz::Component;
use crate::runtime::catalogue::{Catalogue, DialectView, Listing};
use crate::runtime::context::RequestContext;
use crate::runtime::cursor;
use crate::runtime::resource::ListRequest;

/// One page of a list: the range of items and the cursor of the next page.
fn page(
    len: usize,
    hash: impl Fn() -> u64,
    call: &Call,
    page_size: usize,
) -> Result<(std::ops::Range<usize>, Option<String>), RpcError> {
    let start = match call.params.cursor()? {
        None => 0,
        Some(c) => cursor::decode(c, call.dialect.version(), list_method(call), hash(), len)?,
    };
    Ok(page_from(start, len, hash, call, page_size))
}

fn page_from(
    start: usize,
    len: usize,
    hash: impl Fn() -> u64,
    call: &Call,
    page_size: usize,
) -> (std::ops::Range<usize>, Option<String>) {
    let end = (start + page_size).min(len);
    let next =
        (end < len).then(|| cursor::encode(call.dialect.version(), list_method(call), end, hash()));
    (start..end, next)
}

fn list_method(call: &Call) -> &'static str {
    match call.method {
        Method::ToolsList => "tools/list",
        Method::PromptsList => "prompts/list",
        Method::ResourcesList => "resources/list",
        _ => "resources/templates/list",
    }
}

/// `"key":[items of the page],"nextCursor":…` from serialised items.
fn page_members(
    key: &str,
    raw: &[Arc<str>],
    (range, next): (std::ops::Range<usize>, Option<String>),
) -> Arc<str> {
    let mut out = format!("\"{key}\":{}", raw_array(raw[range].iter()));
    if let Some(next) = next {
        out.push_str(",\"nextCursor\":");
        out.push_str(&Value::String(next).to_string());
    }
    Arc::from(out)
}

fn list_result(members: Arc<str>) -> ResultObject {
    ResultObject::from_member(Member::Text(members))
}

/// One list of the dialect's view.
fn listing<'a>(
    catalogue: &'a Catalogue,
    call: &Call,
    pick: impl Fn(&'a DialectView) -> &'a Listing,
) -> Result<&'a Listing, RpcError> {
    catalogue
        .view(call.dialect)
        .map(pick)
        .ok_or_else(|| RpcError::internal("dialect is not enabled"))
}

impl Router<'_> {
    pub(super) fn initialize(&self, call: &Call) -> Output {
        call.params.initialize()?.check()?;
        let catalogue = &call.catalogue;
        let view = catalogue
            .view(call.dialect)
            .ok_or_else(|| RpcError::internal("dialect is not enabled"))?;
        let mut out = Map::new();
        out.insert(
            "protocolVersion".into(),
            Value::String(call.dialect.version().into()),
        );
        out.insert("capabilities".into(), self.answer_capabilities(call));
        out.insert("serverInfo".into(), view.server_info.clone());
        if let Some(i) = self.runtime.instructions() {
            out.insert("instructions".into(), Value::String(i.to_owned()));
        }
        Ok(out)
    }

    /// The `ServerCapabilities` a request is answered with: the runtime's (with the
    /// extensions it declares, where the dialect has them), plus the tasks extension
    /// when the dialect offers it and a tool runs as a task.
    fn answer_capabilities(&self, call: &Call) -> Value {
        let mut capabilities = self.runtime.capabilities_for(call.dialect);
        self.declare_tasks(call, &mut capabilities);
        capabilities
    }

    /// `server/discover`: versions, capabilities, instructions.
    pub(super) fn discover(&self, call: &Call) -> Map<String, Value> {
        let mut out = Map::new();
        out.insert(
            "supportedVersions".into(),
            Value::Array(
                self.runtime
                    .supported_versions()
                    .iter()
                    .map(|v| Value::String((*v).into()))
                    .collect(),
            ),
        );
        out.insert("capabilities".into(), self.answer_capabilities(call));
        if let Some(i) = self.runtime.instructions() {
            out.insert("instructions".into(), Value::String(i.to_owned()));
        }
        out
    }

    /// The serialised items `principal` may see (all of them without an authorizer).
    fn visible<'a>(
        &self,
        principal: Option<&Principal>,
        listing: (&'a [Value], &'a [Arc<str>]),
        key: &str,
        component: fn(&str) -> Component<'_>,
    ) -> Cow<'a, [Arc<str>]> {
        let (items, raw) = listing;
        if !self.runtime.has_authorizer() {
            return Cow::Borrowed(raw);
        }
        let allowed = |item: &Value| {
            item.get(key)
                .and_then(Value::as_str)
                .is_some_and(|k| self.runtime.allows(principal, component(k)))
        };
        Cow::Owned(
            items
                .iter()
                .zip(raw)
                .filter(|(i, _)| allowed(i))
                .map(|(_, r)| Arc::clone(r))
                .collect(),
        )
    }

    fn list(
        &self,
        call: &Call,
        ctx: &RequestContext,
        pick: fn(&DialectView) -> &Listing,
        key: &'static str,
    ) -> Answer {
        let catalogue = &call.catalogue;
        let l = listing(catalogue, call, pick)?;
        let (field, component): (&str, fn(&str) -> Component<'_>) = match key {
            "tools" => ("name", |k| Component::Tool(k)),
            "prompts" => ("name", |k| Component::Prompt(k)),
            _ => ("uriTemplate", |k| Component::ResourceTemplate(k)),
        };
        if let Some(first) = self.first_page(l, call, key) {
            return Ok(list_result(first));
        }
        let raw = self.visible(ctx.principal(), (&l.items, &l.raw), field, component);
        Ok(list_result(page_members(
            key,
            &raw,
            page(raw.len(), || l.hash(), call, self.runtime.page_size())?,
        )))
    }

    /// The first page as every caller sees it (no cursor, no authorizer), serialised
    /// once per catalogue: a new catalogue has new listings.
    fn first_page(&self, l: &Listing, call: &Call, key: &str) -> Option<Arc<str>> {
        let cursor = call.params.cursor().map(|c| c.is_some());
        // Invalid params (an `Err` here) are refused by `page`.
        if self.runtime.has_authorizer() || cursor.unwrap_or(true) {
            return None;
        }
        let page_size = self.runtime.page_size();
        let text = l.first_page.get_or_init(|| {
            page_members(
                key,
                &l.raw,
                page_from(0, l.raw.len(), || l.hash(), call, page_size),
            )
        });
        Some(Arc::clone(text))
    }

    pub(super) fn list_tools(&self, call: &Call, ctx: &RequestContext) -> Answer {
        self.list(call, ctx, |v| &v.tools, "tools")
    }

    pub(super) fn list_prompts(&self, call: &Call, ctx: &RequestContext) -> Answer {
        self.list(call, ctx, |v| &v.prompts, "prompts")
    }

    pub(super) fn list_templates(&self, call: &Call, ctx: &RequestContext) -> Answer {
        self.list(call, ctx, |v| &v.templates, "resourceTemplates")
    }

    pub(super) async fn list_resources(&self, call: &Call, ctx: RequestContext) -> Answer {
        let catalogue = &call.catalogue;
        let fixed = listing(catalogue, call, |v| &v.resources)?;
        let listers: Vec<_> = catalogue
            .templates
            .iter()
            .filter_map(|t| t.template.lister.get().cloned())
            .collect();
        let resource: fn(&str) -> Component<'_> = |k| Component::Resource(k);
        if listers.is_empty() {
            if let Some(first) = self.first_page(fixed, call, "resources") {
                return Ok(list_result(first));
            }
            let raw = self.visible(ctx.principal(), (&fixed.items, &fixed.raw), "uri", resource);
            return Ok(list_result(page_members(
                "resources",
                &raw,
                page(raw.len(), || fixed.hash(), call, self.runtime.page_size())?,
            )));
        }
        // Templates with listers contribute the resources they currently address; the
        // cursor hash then covers what was listed, so a changed folder restarts paging.
        let mut items = fixed.items.clone();
        for lister in listers {
            for info in lister(ListRequest::default(), ctx.clone()).await? {
                if let Ok(Value::Object(mut m)) = serde_json::to_value(&info) {
                    call.dialect.shape_component(&mut m);
                    items.push(Value::Object(m));
                }
            }
        }
        let hash = || {
            let mut h: u64 = fixed.hash();
            for item in &items {
                if let Some(uri) = item.get("uri").and_then(Value::as_str) {
                    for b in uri.bytes() {
                        h = h.rotate_left(5) ^ u64::from(b);
                        h = h.wrapping_mul(0x0100_0000_01b3);
                    }
                }
            }
            h
        };
        let raw: Vec<Arc<str>> = items.iter().map(|i| Arc::from(i.to_string())).collect();
        let raw = self.visible(ctx.principal(), (&items, &raw), "uri", resource);
        Ok(list_result(page_members(
            "resources",
            &raw,
            page(raw.len(), hash, call, self.runtime.page_size())?,
        )))
    }
}
