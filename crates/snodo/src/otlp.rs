//! OpenTelemetry trace export (feature `otlp`).
//!
//! snodo opens one `tracing` span per executing request (target
//! [`SPAN_TARGET`](crate::SPAN_TARGET), level `debug`) named and attributed after the
//! OpenTelemetry semantic conventions for MCP servers (`mcp.method.name`,
//! `mcp.protocol.version`, `jsonrpc.request.id`, `gen_ai.tool.name`,
//! `gen_ai.prompt.name`, `mcp.resource.uri`, `error.type`). With this feature the
//! span's parent is the caller's context from `params._meta.traceparent`/`tracestate`
//! (or, over HTTP, the W3C headers), so [`layer`] exports it inside the client's trace.
//!
//! ```no_run
//! # fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use tracing_subscriber::layer::SubscriberExt as _;
//! let provider = snodo::otlp::provider("http://127.0.0.1:4318/v1/traces", "my-server")?;
//! let subscriber = tracing_subscriber::registry().with(snodo::otlp::layer(&provider));
//! tracing::subscriber::set_global_default(subscriber)?;
//! // ... serve; at exit, `provider.shutdown()` flushes what is left.
//! # Ok(()) }
//! ```

use opentelemetry::trace::{
    SpanContext, SpanId, TraceContextExt as _, TraceFlags, TraceId, TraceState, TracerProvider as _,
};
use opentelemetry_otlp::WithExportConfig as _;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

pub use opentelemetry_otlp::ExporterBuildError;
pub use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};

use crate::TraceContext;

/// A tracer provider that batches spans to an OTLP/HTTP (protobuf) `endpoint`, e.g.
/// `http://127.0.0.1:4318/v1/traces`, as `service.name = service_name`.
pub fn provider(
    endpoint: &str,
    service_name: &'static str,
) -> Result<SdkTracerProvider, ExporterBuildError> {
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_endpoint(endpoint)
        .build()?;
    let resource = opentelemetry_sdk::Resource::builder()
        .with_service_name(service_name)
        .build();
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource)
        .build())
}

/// The `tracing` layer that turns snodo's request spans into spans of `provider`.
/// Filter it to [`SPAN_TARGET`](crate::SPAN_TARGET) at `debug` (or wider) as you need.
#[must_use]
pub fn layer<S>(
    provider: &SdkTracerProvider,
) -> tracing_opentelemetry::OpenTelemetryLayer<S, SdkTracer>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    tracing_opentelemetry::layer()
        .with_tracked_inactivity(false)
        .with_tracer(provider.tracer("snodo"))
}

/// Makes the caller's context the parent of a request span.
pub(crate) fn set_parent(span: &tracing::Span, parent: &TraceContext) {
    let state = parent
        .tracestate()
        .and_then(|s| s.parse::<TraceState>().ok())
        .unwrap_or_default();
    let remote = SpanContext::new(
        TraceId::from_bytes(parent.trace_id()),
        SpanId::from_bytes(parent.parent_id()),
        TraceFlags::new(parent.flags()),
        true,
        state,
    );
    let cx = opentelemetry::Context::new().with_remote_span_context(remote);
    // Fails only when no OpenTelemetry layer sees the span: nothing to parent then.
    let _ = span.set_parent(cx);
}
