//! The request span, for every transport.
//!
//! The span follows the OpenTelemetry semantic conventions for MCP servers; with the
//! `otlp` feature its parent is set from the request's [`TraceContext`] (the protocol
//! model's), so an exporter links it into the client's trace.

use crate::protocol::trace::TraceContext;
use crate::protocol::{Method, RequestId};
use crate::router::Call;

/// The `tracing` target of the request spans (level `debug`).
pub const SPAN_TARGET: &str = "snodo::span";

/// The span of one executing request (disabled unless a subscriber wants
/// [`SPAN_TARGET`] at debug): OpenTelemetry MCP server conventions.
pub(crate) fn request_span(
    id: &RequestId,
    call: &Call,
    parent: Option<&TraceContext>,
) -> tracing::Span {
    let span = tracing::debug_span!(
        target: SPAN_TARGET,
        "mcp.server",
        otel.name = tracing::field::Empty,
        otel.kind = "server",
        otel.status_code = tracing::field::Empty,
        mcp.method.name = &*call.method_name,
        mcp.protocol.version = call.dialect.version(),
        jsonrpc.request.id = %id,
        gen_ai.operation.name = tracing::field::Empty,
        gen_ai.tool.name = tracing::field::Empty,
        gen_ai.prompt.name = tracing::field::Empty,
        mcp.resource.uri = tracing::field::Empty,
        error.type = tracing::field::Empty,
    );
    if span.is_disabled() {
        return span;
    }
    let target = call.target();
    match (call.method, target) {
        (Method::ToolsCall, Some(name)) => {
            span.record("gen_ai.tool.name", name);
            span.record("gen_ai.operation.name", "execute_tool");
        }
        (Method::PromptsGet, Some(name)) => {
            span.record("gen_ai.prompt.name", name);
        }
        (Method::ResourcesRead, Some(uri)) => {
            span.record("mcp.resource.uri", uri);
        }
        _ => {}
    }
    // Span name: `{mcp.method.name} {target}` (the URI is not a low-cardinality name).
    let name = match (call.method, target) {
        (Method::ToolsCall | Method::PromptsGet, Some(t)) => format!("{} {t}", call.method_name),
        _ => call.method_name.clone().into_owned(),
    };
    span.record("otel.name", name);
    #[cfg(feature = "otlp")]
    if let Some(parent) = parent {
        crate::otlp::set_parent(&span, parent);
    }
    #[cfg(not(feature = "otlp"))]
    let _ = parent;
    span
}

/// Records how the request ended on its span.
pub(crate) fn record_error(span: &tracing::Span, error_type: Option<&str>) {
    if span.is_disabled() {
        return;
    }
    if let Some(t) = error_type {
        span.record("error.type", t);
        span.record("otel.status_code", "ERROR");
    }
}
