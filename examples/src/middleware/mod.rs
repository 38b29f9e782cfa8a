//! Three middleware layers (`snodo::middleware`), each a small type that implements
//! [`Middleware`](snodo::middleware::Middleware):
//!
//! - [`audit::Audit`]: one `tracing` event per request: method, target, principal,
//!   outcome and duration;
//! - [`cache::ResultCache`]: keeps results the server marks cacheable (`ttlMs` > 0,
//!   2026-07-28) for that long, per principal unless `cacheScope` is `public`;
//! - [`deny::DenyList`]: refuses tools by name or glob, for everyone or for one
//!   principal, and leaves them out of `tools/list`.
//!
//! [`runtime`] installs all three on a small server; `cargo run -p snodo-examples --bin
//! middleware` serves it at `http://127.0.0.1:8080/mcp`.

pub mod audit;
pub mod cache;
pub mod deny;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use snodo::{
    CacheHint, CacheScope, NoArguments, Resource, ResourceContents, Runtime, Tool, ToolResult,
};

/// A server with a tool, a deploy tool and a cacheable resource (its text counts the
/// reads that reached it), behind an audit log, a deny-list (`deploy_*` refused to
/// everyone but `ops`, `hello` refused to `guest`) and a result cache.
pub fn runtime() -> Result<Runtime, Box<dyn std::error::Error>> {
    let deny = deny::DenyList::new()
        .deny("deploy_*")?
        .deny_for("guest", "hello")?
        .exempt("ops");
    let reads = Arc::new(AtomicUsize::new(0));
    Ok(Runtime::builder("middleware-example", "1.0.0")
        .layer(audit::Audit)
        .layer(deny)
        .layer(cache::ResultCache::new(1024))
        .read_cache(CacheHint::new(200, CacheScope::Public))
        .tool(
            Tool::new("hello")
                .description("Says hello")
                .handler(|_: NoArguments| async { ToolResult::text("hello") }),
        )
        .tool(
            Tool::new("deploy_prod")
                .description("Deploys to production")
                .handler(|_: NoArguments| async { ToolResult::text("deployed") }),
        )
        .resource(
            Resource::new("config://app", "app config")
                .mime_type("text/plain")
                .reader(move |_, _| {
                    let n = reads.fetch_add(1, Ordering::SeqCst) + 1;
                    async move {
                        Ok(vec![ResourceContents::text(
                            "config://app",
                            format!("read {n}"),
                        )])
                    }
                }),
        )
        .build()?)
}
