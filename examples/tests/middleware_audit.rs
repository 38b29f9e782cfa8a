//! The middleware example's audit log: one event per request, with its method,
//! component, principal, outcome and duration. Alone in its binary, with the process-wide
//! subscriber: no other test thread can meet the audit callsite first with no subscriber
//! and leave its interest cached as "never" (it did, once in a CI run).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod middleware_support;

use middleware_support::{call, client, serve};
use snodo_testkit::logs::Captured;

#[tokio::test]
async fn the_audit_log_records_every_request() {
    let captured = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(captured.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::INFO)
        .finish();
    tracing::subscriber::set_global_default(subscriber).unwrap();
    let s = serve().await;
    let dev = client(&s, "t-dev").await;
    assert_eq!(call(&dev, "hello").await, Ok("hello".to_owned()));
    assert_eq!(call(&dev, "deploy_prod").await, Err(-32602));
    let text = captured.text();
    let audit: Vec<&str> = text.lines().filter(|l| l.contains(" audit: ")).collect();
    let hello = audit
        .iter()
        .find(|l| l.contains("component=\"hello\"") || l.contains("component=hello"))
        .unwrap_or_else(|| panic!("no audit event for hello in {text}"));
    assert!(hello.contains("method=tools/call"), "{hello}");
    assert!(
        hello.contains("principal=\"dev\"") || hello.contains("principal=dev"),
        "{hello}"
    );
    assert!(hello.contains("outcome=ok"), "{hello}");
    assert!(hello.contains("duration_us="), "{hello}");
    let denied = audit
        .iter()
        .find(|l| l.contains("deploy_prod"))
        .unwrap_or_else(|| panic!("no audit event for deploy_prod in {text}"));
    assert!(
        denied.contains("outcome=error: Unknown tool: deploy_prod"),
        "{denied}"
    );
}
