//! The Skills extension's methods: `skills/list`, `skills/get`,
//! `resources/directory/read` (the files themselves are read with `resources/read`).

use crate::protocol::RpcError;
use crate::router::{Call, ResultObject, Router};
use crate::runtime::context::RequestContext;

impl Router<'_> {
    /// Whether the runtime serves skills.
    pub(crate) fn has_skills(&self) -> bool {
        self.runtime.skills().is_some()
    }

    /// Answers one of the extension's methods.
    pub(crate) fn skills_method(
        &self,
        call: &Call,
        ctx: &RequestContext,
    ) -> Result<ResultObject, RpcError> {
        use serde_json::{Map, Value};

        use crate::protocol::Method;
        use crate::runtime::authz::Component;
        use crate::runtime::cursor;

        let Some(skills) = self.runtime.skills().map(std::sync::Arc::as_ref) else {
            return Err(RpcError::method_not_found(&call.method_name));
        };
        let visible = |uri: &str| {
            self.runtime
                .allows(ctx.principal(), Component::Resource(uri))
        };
        let uri_of = |v: &Value| {
            v.get("uri")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        // One page of `items` (bound to `hash`) under `key`.
        let page =
            |key: &str, items: Vec<Value>, hash: u64| -> Result<Map<String, Value>, RpcError> {
                let (version, method) = (call.dialect.version(), call.method.as_str());
                let start = match call.params.cursor()? {
                    None => 0,
                    Some(c) => cursor::decode(c, version, method, hash, items.len())?,
                };
                let end = (start + self.runtime.page_size()).min(items.len());
                let mut out = Map::new();
                if end < items.len() {
                    out.insert(
                        "nextCursor".into(),
                        Value::String(cursor::encode(version, method, end, hash)),
                    );
                }
                out.insert(key.into(), Value::Array(items[start..end].to_vec()));
                Ok(out)
            };
        let out = match call.method {
            Method::SkillsList => {
                let items: Vec<Value> = skills
                    .entries()
                    .iter()
                    .filter(|e| visible(&uri_of(e)))
                    .cloned()
                    .collect();
                page("skills", items, skills.hash())?
            }
            Method::SkillsGet => {
                let uri = call.params.uri()?.uri.as_str();
                let entry = skills.entry(uri).filter(|_| visible(uri)).ok_or_else(|| {
                    RpcError::invalid_params(format!("Unknown skill: {uri}"))
                        .with_data(serde_json::json!({ "uri": uri }))
                })?;
                let mut out = Map::new();
                out.insert("skill".into(), entry.clone());
                out
            }
            _ => {
                let uri = call.params.uri()?.uri.as_str();
                let children = skills.directory(uri).ok_or_else(|| {
                    RpcError::invalid_params(format!("Not a directory resource: {uri}"))
                        .with_data(serde_json::json!({ "uri": uri }))
                })?;
                let items: Vec<Value> = children
                    .iter()
                    .filter(|c| {
                        c.get("mimeType").and_then(Value::as_str)
                            == Some(super::DIRECTORY_MIME_TYPE)
                            || visible(&uri_of(c))
                    })
                    .cloned()
                    .collect();
                let hash = uri
                    .bytes()
                    .fold(skills.hash(), |h, b| h.rotate_left(5) ^ u64::from(b));
                page("resources", items, hash)?
            }
        };
        Ok(out.into())
    }
}
