//! `tools/call`.

use serde_json::{Map, Value};

use super::{Call, ResultObject, Stop, req_str};
use crate::model::ToolResult;
use crate::protocol::{RpcError, StructuredOutput};
use crate::runtime::Runtime;
use crate::runtime::authz::Component;
use crate::runtime::context::RequestContext;
use crate::runtime::error::HandlerError;

impl Runtime {
    pub(super) async fn call_tool(
        &self,
        call: &mut Call,
        ctx: RequestContext,
    ) -> Result<ResultObject, Stop> {
        let name = req_str(&call.params, "name")?.to_owned();
        let arguments = match call.arguments.take() {
            None | Some(Value::Null) => Value::Object(Map::new()),
            Some(v @ Value::Object(_)) => v,
            Some(_) => return Err(RpcError::invalid_params("arguments must be an object").into()),
        };
        let unknown = || RpcError::invalid_params(format!("Unknown tool: {name}"));
        let catalogue = &call.catalogue;
        let tool = catalogue.tool(&name).ok_or_else(unknown)?;
        self.check_use(ctx.principal(), &[Component::Tool(&name)], unknown)?;
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
            return Ok(shape(call, ToolResult::error(message))?);
        }
        let result = match (tool.handler)(arguments, ctx).await {
            Ok(r) => r,
            Err(HandlerError::Failed(msg)) => ToolResult::error(msg),
            Err(e) => {
                return Err(Stop::from_handler(e, || {
                    RpcError::invalid_params("Not found")
                }));
            }
        };
        Ok(shape(call, result)?)
    }
}

/// Serialises a tool result for the dialect: straight to text when nothing needs
/// reshaping, through a JSON tree when the dialect reshapes results.
fn shape(call: &Call, result: ToolResult) -> Result<ResultObject, RpcError> {
    let dialect = call.dialect;
    if dialect.structured_output() == StructuredOutput::ObjectOnly
        && result.structured_content().is_some_and(|v| !v.is_object())
    {
        return Err(RpcError::internal(format!(
            "Tool output for {dialect} is not expressible: structuredContent must be an object"
        )));
    }
    let failed = |_| RpcError::internal("Tool result could not be serialised");
    // A `_meta` of the handler's own gets the server info added by `finish`: keep it a tree.
    if !dialect.reshapes_tool_results() && !result.has_meta() {
        return Ok(ResultObject::tool(result));
    }
    let Value::Object(mut out) = serde_json::to_value(&result).map_err(failed)? else {
        return Err(RpcError::internal("Tool result could not be serialised"));
    };
    dialect.shape_tool_result(&mut out);
    Ok(out.into())
}
