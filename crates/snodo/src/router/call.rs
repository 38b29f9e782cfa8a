//! `tools/call`.

use serde_json::Value;

use super::{Call, ResultObject, Router, Stop};
use crate::model::{Content, ToolResult};
use crate::protocol::method_params::tool_arguments;
use crate::protocol::{Dialect, RpcError, StructuredOutput};
use crate::runtime::authz::Component;
use crate::runtime::context::RequestContext;
use crate::runtime::error::HandlerError;
use crate::runtime::policy::{Enforcer, Limited};

impl Router<'_> {
    pub(super) async fn call_tool(
        &self,
        call: &mut Call,
        ctx: RequestContext,
    ) -> Result<ResultObject, Stop> {
        let arguments = tool_arguments(call.arguments.take())?;
        let call: &Call = call;
        let name = call.params.interactive()?.target.as_str();
        let unknown = || RpcError::invalid_params(format!("Unknown tool: {name}"));
        let catalogue = &call.catalogue;
        let tool = catalogue.tool(name).ok_or_else(unknown)?;
        self.runtime
            .check_use(ctx.principal(), &[Component::Tool(name)], unknown)?;
        let as_task = self.as_task(call, tool, &ctx)?;
        if !call.dialect.offers_tool(tool.object_schemas) {
            return Err(RpcError::invalid_params(format!(
                "Tool {name} is not available on {}: its input and output schemas must be JSON objects",
                call.dialect
            ))
            .into());
        }
        let problems: Vec<String> = if tool.validator.is_valid(&arguments) {
            Vec::new()
        } else {
            tool.validator
                .iter_errors(&arguments)
                .map(|e| {
                    let at = e.instance_path().to_string();
                    if at.is_empty() {
                        e.to_string()
                    } else {
                        format!("{at}: {e}")
                    }
                })
                .collect()
        };
        if !problems.is_empty() {
            // A readable execution error lets the model correct its call.
            let message = format!("Invalid arguments for tool {name}: {}", problems.join("; "));
            return Ok(shape(call.dialect, ToolResult::error(message))?);
        }
        let limit = match tool.enforcer.as_deref() {
            Some(e) => Some(
                e.admit(name, ctx.principal(), self.runtime.bus().map(|l| &**l))
                    .await,
            ),
            None => None,
        };
        let admitted = match limit {
            Some(Err(limited)) => return Ok(shape(call.dialect, limited.tool_result(name))?),
            Some(Ok(admitted)) => Some(admitted),
            None => None,
        };
        if as_task {
            // Boxed: the task path is rare and its future large; inline, every tools/call
            // would carry (and copy) its state.
            return Box::pin(self.start_task(call, tool, arguments, ctx, admitted)).await;
        }
        let run = (tool.handler)(arguments, ctx);
        let deadline = tool.enforcer.as_deref().and_then(Enforcer::timeout);
        let outcome = match deadline {
            None => run.await,
            Some(after) => match tokio::time::timeout(after, run).await {
                Ok(outcome) => outcome,
                Err(_) => {
                    let limited = Limited::Timeout { after };
                    return Ok(shape(call.dialect, limited.tool_result(name))?);
                }
            },
        };
        drop(admitted);
        let result = match outcome {
            Ok(r) => r,
            Err(HandlerError::Failed(msg)) => ToolResult::error(msg),
            Err(e) => {
                return Err(Stop::from_handler(e, || {
                    RpcError::invalid_params("Not found")
                }));
            }
        };
        Ok(shape(call.dialect, result)?)
    }
}

/// Serialises a tool result for the dialect: straight to text when nothing needs
/// reshaping, through a JSON tree when the dialect reshapes results.
pub(crate) fn shape(dialect: &Dialect, result: ToolResult) -> Result<ResultObject, RpcError> {
    if dialect.structured_output() == StructuredOutput::ObjectOnly
        && result.structured_content().is_some_and(|v| !v.is_object())
    {
        return Err(RpcError::internal(format!(
            "Tool output for {dialect} is not expressible: structuredContent must be an object"
        )));
    }
    let failed = |_| RpcError::internal("Tool result could not be serialised");
    // A `_meta` of the handler's own gets the server info added by `finish` (a dialect
    // with the result envelope): keep it a tree then. Otherwise the result is written
    // straight from its fields (a gateway's backend results carry the backend's `_meta`)
    // unless the dialect changes something in it.
    if !reshapes(dialect, &result) && (!result.has_meta() || !dialect.has_result_envelope()) {
        return Ok(ResultObject::tool(result));
    }
    let Value::Object(mut out) = serde_json::to_value(&result).map_err(failed)? else {
        return Err(RpcError::internal("Tool result could not be serialised"));
    };
    dialect.shape_tool_result(&mut out);
    Ok(out.into())
}

/// Whether [`Dialect::shape_tool_result`] would change `result`: structured content
/// the dialect lacks, or a content block other than plain text (a text block without
/// annotations has nothing any revision removes or rewrites).
fn reshapes(dialect: &Dialect, result: &ToolResult) -> bool {
    if !dialect.reshapes_tool_results() {
        return false;
    }
    (dialect.structured_output() == StructuredOutput::Absent
        && result.structured_content().is_some())
        || (dialect.reshapes_content()
            && !result.content().iter().all(|b| {
                matches!(
                    b,
                    Content::Text {
                        annotations: None,
                        ..
                    }
                )
            }))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::model::Annotations;
    use crate::protocol::ALL;

    /// The result as the dialect's client reads it: through the tree and its reshaping
    /// (what `shape` did for every result a dialect might reshape), or as `shape` wrote it.
    fn through_tree(dialect: &Dialect, result: &ToolResult) -> Value {
        let Ok(Value::Object(mut out)) = serde_json::to_value(result) else {
            panic!("a tool result serialises to an object");
        };
        dialect.shape_tool_result(&mut out);
        Value::Object(out)
    }

    #[test]
    fn results_written_without_the_tree_are_what_the_tree_gives() {
        let annotated = Content::text("a").with_annotations(Annotations {
            priority: Some(0.5),
            ..Annotations::default()
        });
        let results = [
            ToolResult::text("plain"),
            ToolResult::text("with meta").with_meta("k", json!({"x": 1})),
            ToolResult::error("failed").with_meta("k", json!(1)),
            ToolResult::structured(json!({"a": 1})),
            ToolResult::text("x").with_content(annotated),
            ToolResult::text("x").with_content(Content::resource_link("file:///a", "a")),
            ToolResult::new(vec![Content::image(b"png", "image/png")]),
        ];
        let mut direct = 0;
        for dialect in ALL {
            for result in &results {
                let Ok(shaped) = shape(dialect, result.clone()) else {
                    continue;
                };
                let written: Value = serde_json::from_str(&shaped.to_json()).unwrap_or_default();
                assert_eq!(
                    written,
                    through_tree(dialect, result),
                    "{} {result:?}",
                    dialect.version()
                );
                direct += usize::from(shaped.fields.is_empty());
            }
        }
        // The direct path is taken where nothing is reshaped (e.g. plain text, with a
        // `_meta`, for 2025-06-18), not only where the dialect reshapes nothing.
        let plain_meta = shape(&crate::protocol::V2025_06_18, results[1].clone());
        assert!(plain_meta.is_ok_and(|r| r.fields.is_empty()));
        let link = shape(&crate::protocol::V2025_03_26, results[5].clone());
        assert!(link.is_ok_and(|r| !r.fields.is_empty()));
        assert!(direct > 0);
    }
}
