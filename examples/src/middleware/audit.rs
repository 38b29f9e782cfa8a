//! An audit log: one `tracing` event (target `audit`) per request, after it is
//! answered.

use std::time::Instant;

use snodo::middleware::{Middleware, Next, Outcome, Request};

/// Logs method, target, principal, outcome and duration of every request it wraps.
/// Install it first (outermost) to time everything below it, refusals included.
#[derive(Clone, Copy, Debug, Default)]
pub struct Audit;

impl Middleware for Audit {
    async fn call(&self, request: Request<'_>, next: Next<'_>) -> Outcome {
        let method = request.method().to_owned();
        let component = request.target().map(str::to_owned);
        let principal = request.principal().map(|p| p.id().to_owned());
        let started = Instant::now();
        let out = next.run(request).await;
        let outcome = match &out {
            Ok(reply) if reply.is_tool_error() => "tool_error".to_owned(),
            Ok(_) => "ok".to_owned(),
            Err(e) => format!("error: {e}"),
        };
        tracing::info!(
            target: "audit",
            method = %method,
            component = component.as_deref().unwrap_or("-"),
            principal = principal.as_deref().unwrap_or("-"),
            outcome = %outcome,
            duration_us = started.elapsed().as_micros() as u64,
            "request"
        );
        out
    }
}
