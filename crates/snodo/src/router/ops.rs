//! `prompts/get`, `resources/read`, `completion/complete` and `logging/setLevel`.

use std::collections::HashMap;

use serde_json::{Map, Value, json};

use super::{Call, Interactive, Output, Router, Stop};
use crate::protocol::RpcError;
use crate::protocol::method_params::{MethodParams, Reference, string_map};
use crate::runtime::authz::Component;
use crate::runtime::completion::{CompletionRequest, MAX_COMPLETION_VALUES};
use crate::runtime::context::RequestContext;
use crate::runtime::error::ErrorAnswer;
use crate::runtime::resource::ReadRequest;

pub(super) fn set_level(params: &MethodParams) -> Output {
    params.set_level().map(|_| Map::new())
}

fn to_map<T: serde::Serialize>(key: &str, value: T) -> Output {
    let mut out = Map::new();
    out.insert(
        key.into(),
        serde_json::to_value(value).map_err(|e| RpcError::internal(e.to_string()))?,
    );
    Ok(out)
}

impl Router<'_> {
    pub(super) async fn get_prompt(&self, call: &Call, ctx: RequestContext) -> Interactive {
        let name = call.params.interactive()?.target.as_str();
        let args = string_map(call.arguments.as_ref(), "arguments")?;
        let unknown = || RpcError::invalid_params(format!("Unknown prompt: {name}"));
        let catalogue = &call.catalogue;
        let prompt = catalogue.prompt(name).ok_or_else(unknown)?;
        self.runtime
            .check_use(ctx.principal(), &[Component::Prompt(name)], unknown)?;
        let missing = prompt.missing_arguments(&args);
        if !missing.is_empty() {
            return Err(
                RpcError::invalid_params("Missing required prompt arguments")
                    .with_data(json!({ "missing": missing }))
                    .into(),
            );
        }
        let handler = prompt
            .handler
            .get()
            .cloned()
            .ok_or_else(|| RpcError::internal("prompt has no handler"))?;
        let result = handler(args, ctx).await.map_err(|e| {
            Stop::from_handler(e, || {
                RpcError::invalid_params(format!("Unknown prompt: {name}"))
            })
        })?;
        let Ok(Value::Object(mut out)) = serde_json::to_value(&result) else {
            return Err(RpcError::internal("Prompt result could not be serialised").into());
        };
        if call.dialect.reshapes_content() {
            if let Some(Value::Array(msgs)) = out.get_mut("messages") {
                for c in msgs
                    .iter_mut()
                    .filter_map(|m| m.get_mut("content"))
                    .filter_map(Value::as_object_mut)
                {
                    call.dialect.shape_content(c);
                }
            }
        }
        Ok(out)
    }

    pub(super) async fn read_resource(&self, call: &Call, ctx: RequestContext) -> Interactive {
        let uri = call.params.interactive()?.target.clone();
        if !uri.contains(':') {
            return Err(RpcError::invalid_params("Resource URI must be absolute").into());
        }
        let catalogue = &call.catalogue;
        let principal = ctx.principal();
        let found = if let Some(r) = catalogue.resource(&uri) {
            r.reader
                .get()
                .cloned()
                .map(|reader| (reader, HashMap::new(), None))
        } else {
            catalogue.templates.iter().find_map(|t| {
                let vars = t.matcher.matches(&uri)?;
                t.template
                    .reader
                    .get()
                    .cloned()
                    .map(|reader| (reader, vars, Some(t.template.template.as_str())))
            })
        };
        let not_found = || {
            RpcError::new(call.dialect.resource_not_found_code(), "Resource not found")
                .with_data(json!({ "uri": uri }))
        };
        let Some((reader, variables, template)) = found else {
            return Err(not_found().into());
        };
        match template {
            None => self
                .runtime
                .check_use(principal, &[Component::Resource(&uri)], not_found)?,
            Some(t) => self.runtime.check_use(
                principal,
                &[Component::ResourceTemplate(t), Component::Resource(&uri)],
                not_found,
            )?,
        }
        match reader(
            ReadRequest {
                uri: uri.clone(),
                variables,
            },
            ctx,
        )
        .await
        {
            Ok(contents) if contents.is_empty() => Err(not_found().into()),
            Ok(contents) => Ok(to_map("contents", contents)?),
            Err(e) => Err(Stop::from_handler(e, not_found)),
        }
    }

    pub(super) async fn complete(
        &self,
        call: &mut Call,
        ctx: RequestContext,
    ) -> Result<Map<String, Value>, ErrorAnswer> {
        let p = match std::mem::replace(&mut call.params, MethodParams::None) {
            MethodParams::Complete(p) => p,
            other => return Err(other.refusal().into()),
        };
        let catalogue = &call.catalogue;
        let completer = match &p.reference {
            Reference::Prompt(name) => {
                let unknown = || RpcError::invalid_params(format!("Unknown prompt: {name}"));
                let prompt = catalogue.prompt(name).ok_or_else(unknown)?;
                self.runtime
                    .check_use(ctx.principal(), &[Component::Prompt(name)], unknown)?;
                if !prompt.arguments.iter().any(|a| a.name() == p.argument) {
                    return Err(RpcError::invalid_params(format!(
                        "Prompt {name} has no argument {}",
                        p.argument
                    ))
                    .into());
                }
                prompt.completer.get().cloned()
            }
            Reference::Resource(uri) => {
                let unknown =
                    || RpcError::invalid_params(format!("Unknown resource template: {uri}"));
                let t = catalogue
                    .templates
                    .iter()
                    .find(|t| &t.template.template == uri)
                    .ok_or_else(unknown)?;
                self.runtime.check_use(
                    ctx.principal(),
                    &[Component::ResourceTemplate(uri)],
                    unknown,
                )?;
                t.template.completer.get().cloned()
            }
        };
        let mut values = match completer {
            Some(c) => {
                c(
                    CompletionRequest {
                        argument: p.argument,
                        value: p.value,
                        context: p.context,
                    },
                    ctx,
                )
                .await?
            }
            None => Vec::new(),
        };
        let total = values.len();
        values.truncate(MAX_COMPLETION_VALUES);
        Ok(to_map(
            "completion",
            json!({ "values": values, "total": total, "hasMore": total > MAX_COMPLETION_VALUES }),
        )?)
    }
}
