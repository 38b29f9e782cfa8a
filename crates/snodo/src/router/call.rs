//! `tools/call`.

use serde_json::{Map, Value};

use super::{Call, Output, req_str};
use crate::model::ToolResult;
use crate::protocol::RpcError;
use crate::runtime::Runtime;
use crate::runtime::context::RequestContext;
use crate::runtime::tool::ToolError;

/// Params that only the 2026-07-28 multi round-trip flow (or 2025-11-25 tasks) use.
const STATEFUL_PARAMS: [&str; 3] = ["task", "inputResponses", "requestState"];

impl Runtime {
    pub(super) async fn call_tool(&self, mut call: Call, ctx: RequestContext) -> Output {
        let name = req_str(&call.params, "name")?.to_owned();
        if !call.dialect.is_stateless()
            && STATEFUL_PARAMS.iter().any(|k| call.params.contains_key(*k))
        {
            return Err(RpcError::invalid_params(
                "Tasks and multi-round-trip inputs are not supported",
            ));
        }
        let arguments = match call.params.remove("arguments") {
            None | Some(Value::Null) => Value::Object(Map::new()),
            Some(v @ Value::Object(_)) => v,
            Some(_) => return Err(RpcError::invalid_params("arguments must be an object")),
        };
        let tool = self
            .inner
            .catalogue
            .tool(&name)
            .ok_or_else(|| RpcError::invalid_params(format!("Unknown tool: {name}")))?;
        if !call.dialect.structured_content_any_json() && !tool.object_schemas {
            return Err(RpcError::invalid_params(format!(
                "Tool {name} is not available on {}: its input and output schemas must be JSON objects",
                call.dialect
            )));
        }
        let problems: Vec<String> = tool
            .validator
            .iter_errors(&arguments)
            .map(|e| {
                let at = e.instance_path().to_string();
                if at.is_empty() {
                    e.to_string()
                } else {
                    format!("{at}: {e}")
                }
            })
            .collect();
        if !problems.is_empty() {
            // A readable execution error lets the model correct its call.
            return shape(
                &call,
                ToolResult::error(format!(
                    "Invalid arguments for tool {name}: {}",
                    problems.join("; ")
                )),
            );
        }
        let result = match (tool.handler)(arguments, ctx).await {
            Ok(r) => r,
            Err(ToolError::Execution(msg)) => ToolResult::error(msg),
            Err(ToolError::Protocol(e)) => return Err(e),
        };
        shape(&call, result)
    }
}

/// Serialises a tool result for the dialect.
fn shape(call: &Call, result: ToolResult) -> Output {
    if !call.dialect.structured_content_any_json()
        && result.structured_content().is_some_and(|v| !v.is_object())
    {
        return Err(RpcError::internal(format!(
            "Tool output for {} is not expressible: structuredContent must be an object",
            call.dialect
        )));
    }
    let Ok(Value::Object(mut out)) = serde_json::to_value(&result) else {
        return Err(RpcError::internal("Tool result could not be serialised"));
    };
    if !call.dialect.has_icons() {
        if let Some(Value::Array(blocks)) = out.get_mut("content") {
            for block in blocks.iter_mut().filter_map(Value::as_object_mut) {
                call.dialect.shape_component(block);
            }
        }
    }
    Ok(out)
}
