//! A call to a component whose backend went down (the mount took it out of the lists)
//! is answered with an error naming the backend when the front installs [`Outages`];
//! without it, the front's unknown-tool error. Back up, the call goes through again.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use snodo::protocol::ALL;
use snodo::{RequestContext, RpcError, Runtime};
use snodo_client::Client;
use snodo_compose::{
    BoxFuture, Listing, Mount, MountOptions, Outages, Source, SourceError, Status, Transforms,
};
use tokio::sync::watch;

/// One tool, listed while `up`.
struct Flaky {
    up: Arc<AtomicBool>,
    changes: watch::Sender<u64>,
}

impl Source for Flaky {
    fn name(&self) -> &str {
        "flaky"
    }
    fn list(&self) -> BoxFuture<'_, Result<Listing, SourceError>> {
        Box::pin(async {
            if !self.up.load(Ordering::SeqCst) {
                return Err(SourceError::Down("connection refused".into()));
            }
            Ok(Listing {
                tools: vec![json!({"name": "hello", "inputSchema": {"type": "object"}})],
                templates: vec![json!({"uriTemplate": "demo://item/{id}", "name": "item"})],
                ..Listing::default()
            })
        })
    }
    fn request<'a>(
        &'a self,
        method: &'a str,
        params: Value,
        _: &'a RequestContext,
    ) -> BoxFuture<'a, Result<Value, SourceError>> {
        Box::pin(async move {
            if method == "resources/read" {
                return Ok(json!({"contents": [{"uri": params["uri"], "text": "item"}]}));
            }
            Ok(json!({"content": [{"type": "text", "text": "hi"}]}))
        })
    }
    fn changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }
}

async fn call(front: &Runtime) -> Result<String, String> {
    let c = Client::builder("t", "1")
        .connect_runtime(front.clone())
        .await
        .unwrap();
    c.call_tool("f_hello", json!({}))
        .await
        .map(|r| r.text())
        .map_err(|e| e.to_string())
}

/// Reads an item of the mounted template.
async fn read(front: &Runtime) -> Result<String, String> {
    let c = Client::builder("t", "1")
        .connect_runtime(front.clone())
        .await
        .unwrap();
    c.read_resource("demo://f/item/7")
        .await
        .map(|r| format!("{:?}", r.contents))
        .map_err(|e| e.to_string())
}

#[tokio::test]
async fn a_call_to_a_component_of_a_down_backend_names_the_backend() {
    let outages = Outages::new();
    let with = Runtime::builder("front", "1")
        .protocols(ALL.iter().copied())
        .declare_all_kinds()
        .layer(outages.clone())
        .build()
        .unwrap();
    let without = Runtime::builder("plain", "1")
        .protocols(ALL.iter().copied())
        .declare_all_kinds()
        .build()
        .unwrap();
    let up = Arc::new(AtomicBool::new(true));
    let opts = MountOptions {
        min_backoff: Duration::from_millis(20),
        max_backoff: Duration::from_millis(50),
        ..MountOptions::default()
    };
    let mount = |front: &Runtime| {
        let source = Flaky {
            up: up.clone(),
            changes: watch::channel(0).0,
        };
        Mount::with_options(
            front,
            Arc::new(source),
            Transforms::new().namespace("f"),
            opts,
        )
    };
    let (m1, m2) = (mount(&with).report_outages(&outages), mount(&without));
    for m in [&m1, &m2] {
        assert!(matches!(
            m.ready(Duration::from_secs(5)).await,
            Status::Up { .. }
        ));
    }
    assert_eq!(call(&with).await, Ok("hi".into()));
    assert!(read(&with).await.unwrap().contains("item"));

    up.store(false, Ordering::SeqCst);
    for m in [&m1, &m2] {
        m.refresh();
        let st = m
            .wait_for(Duration::from_secs(5), |s| matches!(s, Status::Down(_)))
            .await;
        assert!(matches!(st, Status::Down(_)), "{st:?}");
    }
    let e = call(&with).await.unwrap_err();
    assert!(
        e.contains("backend \"flaky\" is unavailable: connection refused"),
        "{e}"
    );
    assert!(
        e.contains(&RpcError::internal("").code().0.to_string()),
        "{e}"
    );
    // A URI of a template taken out names the backend too.
    let e = read(&with).await.unwrap_err();
    assert!(
        e.contains("backend \"flaky\" is unavailable: connection refused"),
        "{e}"
    );
    let e = call(&without).await.unwrap_err();
    assert!(e.contains("Unknown tool"), "{e}");
    let e = read(&without).await.unwrap_err();
    assert!(!e.contains("flaky"), "{e}");

    up.store(true, Ordering::SeqCst);
    m1.refresh();
    let st = m1
        .wait_for(Duration::from_secs(5), |s| matches!(s, Status::Up { .. }))
        .await;
    assert!(matches!(st, Status::Up { .. }), "{st:?}");
    assert_eq!(call(&with).await, Ok("hi".into()));
    assert!(read(&with).await.unwrap().contains("item"));

    // Unmounted: the name is nobody's, the front's own error again.
    up.store(false, Ordering::SeqCst);
    m1.refresh();
    m1.wait_for(Duration::from_secs(5), |s| matches!(s, Status::Down(_)))
        .await;
    drop(m1);
    let e = call(&with).await.unwrap_err();
    assert!(e.contains("Unknown tool"), "{e}");
    let e = read(&with).await.unwrap_err();
    assert!(!e.contains("flaky"), "{e}");
}
