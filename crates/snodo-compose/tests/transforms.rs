//! Transforms on a mounted source (allow/deny, rename, description and annotation
//! overrides, per-tool policy, visibility), one list over two sources with pagination,
//! and an application-defined source under the initialize-era shaping rules.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use snodo::{Principal, Refusal, RequestContext, RpcError};
use snodo_client::Client;
use snodo_compose::{
    BoxFuture, Gate, Listing, Mount, Source, SourceError, Status, ToolPolicy, Transforms,
};
use support::{Seen, VERSIONS, client, front, tool_names};
use tokio::sync::watch;

const T: Duration = Duration::from_secs(10);

#[tokio::test]
async fn allow_deny_rename_describe_annotate_and_policy() {
    let front = front().build().unwrap();
    let seen = Seen::default();
    let t = Transforms::new()
        .namespace("b")
        .separator(".")
        .deny("fail")
        .allow("*")
        .rename("echo", "say")
        .describe("slow", "Slow, overridden")
        .annotate("slow", "readOnlyHint", true)
        .deny("note://{id}")
        .policy(
            "wait",
            ToolPolicy {
                timeout: Some(Duration::from_millis(100)),
                ..ToolPolicy::default()
            },
        );
    let (_mount, _) = support::mount(&front, "b", &seen, t).await;
    let c = client(&front, "2026-07-28").await;
    assert_eq!(tool_names(&c).await, ["b.slow", "b.wait", "local", "say"]);
    let tools = c.list_tools().await.unwrap();
    let slow = tools.iter().find(|t| t.name == "b.slow").unwrap();
    assert_eq!(slow.description.as_deref(), Some("Slow, overridden"));
    assert_eq!(slow.extra["annotations"]["readOnlyHint"], json!(true));
    assert_eq!(
        c.call_tool("say", json!({"text": "x"}))
            .await
            .unwrap()
            .text(),
        "x"
    );
    // The policy's timeout answers with a tool error, and the backend call is cancelled.
    let r = c.call_tool("b.wait", json!({})).await.unwrap();
    assert!(r.is_error, "{r:?}");
    assert!(
        Seen::wait(&seen.cancelled).await,
        "the backend call was cancelled"
    );
    // The denied template is not mounted; the fixed resource is.
    assert!(c.list_resource_templates().await.unwrap().is_empty());
    assert_eq!(c.list_resources().await.unwrap()[0].uri, "note://b/readme");
    assert!(c.call_tool("b.fail", json!({})).await.is_err(), "denied");
}

#[tokio::test]
async fn one_list_over_two_sources_pages_with_cursors() {
    let front = front().page_size(2).build().unwrap();
    let (s1, s2) = (Seen::default(), Seen::default());
    let (_m1, _) = support::mount(&front, "one", &s1, Transforms::new().namespace("one")).await;
    let (_m2, _) = support::mount(&front, "two", &s2, Transforms::new().namespace("two")).await;
    for v in VERSIONS {
        let c = client(&front, v).await;
        let names = tool_names(&c).await;
        assert_eq!(names.len(), 9, "{v}: {names:?}");
        assert!(names.contains(&"one_echo".to_owned()) && names.contains(&"two_echo".to_owned()));
        // The first page alone has a cursor.
        let page = c.request("tools/list", json!({})).await.unwrap();
        assert_eq!(page["tools"].as_array().unwrap().len(), 2, "{v}");
        assert!(page["nextCursor"].is_string(), "{v}");
        assert_eq!(
            c.call_tool("two_echo", json!({"text": "2"}))
                .await
                .unwrap()
                .text(),
            "2"
        );
        assert_eq!(c.list_resources().await.unwrap().len(), 2, "{v}");
    }
}

#[tokio::test]
async fn visibility_by_scope() {
    let gate = Gate::new();
    let front = front()
        .authorizer(gate.clone(), Refusal::Conceal)
        .build()
        .unwrap();
    let seen = Seen::default();
    let (mount, _) = support::mount(
        &front,
        "b",
        &seen,
        Transforms::new()
            .namespace("ops")
            .require_scope(&gate, "admin"),
    )
    .await;
    use snodo::{Authorizer, Component};
    let admin = Principal::new("a").with_scope("read admin");
    let user = Principal::new("u").with_scope("read");
    assert!(gate.allows(Some(&admin), Component::Tool("ops_echo")));
    assert!(!gate.allows(Some(&user), Component::Tool("ops_echo")));
    assert!(!gate.allows(None, Component::Tool("ops_echo")));
    assert!(
        gate.allows(None, Component::Tool("local")),
        "local tools have no rule"
    );
    // An anonymous caller at the wire sees only the local tool.
    let c = client(&front, "2026-07-28").await;
    assert_eq!(tool_names(&c).await, ["local"]);
    drop(mount);
    assert!(
        gate.allows(None, Component::Tool("ops_echo")),
        "rules leave with the mount"
    );
}

/// An application-defined source: a tool whose input is not an object (snodo refuses
/// it: left out, the others mounted), one whose output is not an object (hidden from
/// initialize-era clients), and a list that changes when the application says so.
struct App {
    tx: watch::Sender<u64>,
    extra: std::sync::Mutex<bool>,
}

impl Source for App {
    fn name(&self) -> &str {
        "app"
    }
    fn list(&self) -> BoxFuture<'_, Result<Listing, SourceError>> {
        Box::pin(async move {
            let mut tools = vec![
                json!({"name": "plain", "inputSchema": {"type": "object"}}),
                json!({"name": "scalar_in", "inputSchema": {"type": "string"}}),
                json!({"name": "list_out", "inputSchema": {"type": "object"},
                       "outputSchema": {"type": "array"}}),
            ];
            if *self.extra.lock().unwrap() {
                tools.push(json!({"name": "late", "inputSchema": {"type": "object"}}));
            }
            Ok(Listing {
                tools,
                ..Listing::default()
            })
        })
    }
    fn request<'a>(
        &'a self,
        method: &'a str,
        params: Value,
        _ctx: &'a RequestContext,
    ) -> BoxFuture<'a, Result<Value, SourceError>> {
        Box::pin(async move {
            match (method, params["name"].as_str()) {
                ("tools/call", Some(n)) => Ok(json!({"content": [{"type": "text", "text": n}]})),
                _ => Err(SourceError::Rpc(RpcError::method_not_found(method))),
            }
        })
    }
    fn changes(&self) -> watch::Receiver<u64> {
        self.tx.subscribe()
    }
}

#[tokio::test]
async fn an_application_source_under_the_legacy_shaping_rules_and_its_changes() {
    let front = front().build().unwrap();
    let app = std::sync::Arc::new(App {
        tx: watch::channel(0).0,
        extra: std::sync::Mutex::new(false),
    });
    let mount = Mount::with_options(
        &front,
        app.clone(),
        Transforms::new().namespace("app"),
        snodo_compose::MountOptions::default(),
    );
    let st = mount.ready(T).await;
    assert!(matches!(st, Status::Up { components: 2, .. }), "{st:?}");
    let modern = client(&front, "2026-07-28").await;
    assert_eq!(
        tool_names(&modern).await,
        ["app_list_out", "app_plain", "local"]
    );
    // 2025-03-26 has no structured output at all: the tool is offered, schema dropped.
    for v in ["2025-11-25", "2025-06-18"] {
        let c = client(&front, v).await;
        let names = tool_names(&c).await;
        assert_eq!(
            names,
            ["app_plain", "local"],
            "{v}: the array output is not offered"
        );
    }
    assert_eq!(
        modern
            .call_tool("app_plain", json!({}))
            .await
            .unwrap()
            .text(),
        "plain"
    );
    // The application announces a change: the mount lists again.
    *app.extra.lock().unwrap() = true;
    app.tx.send_modify(|n| *n += 1);
    let st = mount
        .wait_for(T, |s| {
            matches!(
                s,
                Status::Up {
                    generation: 2..,
                    ..
                }
            )
        })
        .await;
    assert!(matches!(st, Status::Up { components: 3, .. }), "{st:?}");
    let c = Client::builder("t", "1")
        .connect_runtime(front.clone())
        .await
        .unwrap();
    assert!(tool_names(&c).await.contains(&"app_late".to_owned()));
}
