//! A mount facing a source that misbehaves: a listing or a check that never answers, a
//! backoff too large to double, a URI a front-local resource already has, and
//! visibility rules kept through re-lists, tools' limits kept while listed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use snodo::protocol::ALL;
use snodo::{Refusal, RequestContext, Resource, Runtime};
use snodo_client::Client;
use snodo_compose::{
    BoxFuture, Gate, Listing, Mount, MountOptions, Source, SourceError, Status, Transforms,
};
use tokio::sync::watch;

/// What the fake source does.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
enum Mode {
    #[default]
    Serve,
    /// Its listings never answer.
    ListHangs,
    /// Its checks never answer (listings do).
    CheckHangs,
    /// Its listings fail.
    Fails,
}

#[derive(Default)]
struct Fake {
    mode: Mode,
    listing: Listing,
    /// When set, listed instead of `listing`.
    relisting: Arc<std::sync::Mutex<Option<Listing>>>,
    lists: Arc<AtomicUsize>,
    changes: watch::Sender<u64>,
}

impl Source for Fake {
    fn name(&self) -> &str {
        "fake"
    }
    fn list(&self) -> BoxFuture<'_, Result<Listing, SourceError>> {
        Box::pin(async {
            self.lists.fetch_add(1, Ordering::SeqCst);
            match self.mode {
                Mode::ListHangs => std::future::pending().await,
                Mode::Fails => Err(SourceError::Down("connection refused".into())),
                Mode::Serve | Mode::CheckHangs => Ok(self
                    .relisting
                    .lock()
                    .unwrap()
                    .clone()
                    .unwrap_or_else(|| self.listing.clone())),
            }
        })
    }
    fn request<'a>(
        &'a self,
        method: &'a str,
        _: Value,
        _: &'a RequestContext,
    ) -> BoxFuture<'a, Result<Value, SourceError>> {
        Box::pin(async move {
            Ok(match method {
                "resources/read" => {
                    json!({"contents": [{"uri": "note://readme", "text": "the backend's"}]})
                }
                _ => json!({"content": [{"type": "text", "text": "hi"}]}),
            })
        })
    }
    fn changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }
    fn check(&self) -> BoxFuture<'_, Result<(), SourceError>> {
        Box::pin(async {
            if self.mode == Mode::CheckHangs {
                std::future::pending::<()>().await;
            }
            Ok(())
        })
    }
}

fn one_tool() -> Listing {
    Listing {
        tools: vec![json!({"name": "hello", "inputSchema": {"type": "object"}})],
        ..Listing::default()
    }
}

fn front() -> snodo::RuntimeBuilder {
    Runtime::builder("front", "1")
        .protocols(ALL.iter().copied())
        .declare_all_kinds()
}

fn quick() -> MountOptions {
    MountOptions {
        health_interval: Duration::from_millis(30),
        min_backoff: Duration::from_millis(20),
        max_backoff: Duration::from_millis(50),
        check_timeout: Duration::from_millis(300),
    }
}

#[tokio::test]
async fn a_listing_that_never_answers_is_down_not_connecting_forever() {
    let front = front().build().unwrap();
    let source = Fake {
        mode: Mode::ListHangs,
        listing: one_tool(),
        ..Fake::default()
    };
    let m = Mount::with_options(&front, Arc::new(source), Transforms::new(), quick());
    let status = m.ready(Duration::from_secs(5)).await;
    assert!(
        matches!(&status, Status::Down(why) if why.contains("no answer")),
        "{status:?}"
    );
}

#[tokio::test]
async fn a_check_that_never_answers_takes_the_backend_down() {
    let front = front().build().unwrap();
    let source = Fake {
        mode: Mode::CheckHangs,
        listing: one_tool(),
        ..Fake::default()
    };
    let m = Mount::with_options(&front, Arc::new(source), Transforms::new(), quick());
    assert!(matches!(
        m.ready(Duration::from_secs(5)).await,
        Status::Up { components: 1, .. }
    ));
    let status = m
        .wait_for(Duration::from_secs(5), |s| matches!(s, Status::Down(_)))
        .await;
    assert!(
        matches!(&status, Status::Down(why) if why.contains("no answer to a check")),
        "{status:?}"
    );
}

#[tokio::test]
async fn a_backoff_too_large_to_double_does_not_stop_the_mount() {
    let front = front().build().unwrap();
    let lists = Arc::new(AtomicUsize::new(0));
    let source = Fake {
        mode: Mode::Fails,
        lists: Arc::clone(&lists),
        ..Fake::default()
    };
    let options = MountOptions {
        min_backoff: Duration::MAX / 2 + Duration::from_secs(1),
        max_backoff: Duration::MAX,
        ..MountOptions::default()
    };
    let m = Mount::with_options(&front, Arc::new(source), Transforms::new(), options);
    assert!(matches!(
        m.ready(Duration::from_secs(5)).await,
        Status::Down(_)
    ));
    // The retry is woken early; doubling the backoff then must not panic the task.
    for _ in 0..3 {
        m.refresh();
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for _ in 0..100 {
        if lists.load(Ordering::SeqCst) >= 3 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!(
        "the mount stopped listing after {} listing(s)",
        lists.load(Ordering::SeqCst)
    );
}

#[tokio::test]
async fn a_backend_without_a_namespace_does_not_take_a_local_resource() {
    let front = front()
        .resource(Resource::new("note://readme", "readme").static_text("text/plain", "local"))
        .build()
        .unwrap();
    let source = Fake {
        listing: Listing {
            resources: vec![
                json!({"uri": "note://readme", "name": "readme"}),
                json!({"uri": "note://other", "name": "other"}),
            ],
            templates: vec![json!({"uriTemplate": "note://{id}", "name": "note"})],
            ..Listing::default()
        },
        ..Fake::default()
    };
    let changes = source.changes.clone();
    let m = Mount::with_options(&front, Arc::new(source), Transforms::new(), quick());
    let status = m.ready(Duration::from_secs(5)).await;
    // The taken URI is left out; the other resource and the template are mounted.
    assert!(
        matches!(status, Status::Up { components: 2, .. }),
        "{status:?}"
    );
    let c = Client::builder("t", "1")
        .connect_runtime(front.clone())
        .await
        .unwrap();
    let read = c.read_resource("note://readme").await.unwrap();
    assert_eq!(read.contents[0].text.as_deref(), Some("local"));
    // A re-list, then unmounting, leave the local resource where it was.
    changes.send_modify(|n| *n += 1);
    m.wait_for(Duration::from_secs(5), |s| {
        matches!(s, Status::Up { generation: 2, .. })
    })
    .await;
    drop(m);
    let read = c.read_resource("note://readme").await.unwrap();
    assert_eq!(read.contents[0].text.as_deref(), Some("local"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hidden_component_stays_hidden_while_its_mount_lists_again() {
    let gate = Gate::new();
    let front = front()
        .authorizer(gate.clone(), Refusal::Conceal)
        .build()
        .unwrap();
    let source = Fake {
        listing: one_tool(),
        ..Fake::default()
    };
    let changes = source.changes.clone();
    let m = Mount::with_options(
        &front,
        Arc::new(source),
        Transforms::new()
            .namespace("ops")
            .require_scope(&gate, "admin"),
        quick(),
    );
    assert!(matches!(
        m.ready(Duration::from_secs(5)).await,
        Status::Up { .. }
    ));
    let relist = tokio::spawn(async move {
        for _ in 0..2000 {
            changes.send_modify(|n| *n += 1);
            tokio::task::yield_now().await;
        }
    });
    let c = Client::builder("t", "1")
        .connect_runtime(front.clone())
        .await
        .unwrap();
    let mut lists = 0;
    while !relist.is_finished() || lists < 200 {
        let names: Vec<String> = c
            .list_tools()
            .await
            .unwrap()
            .into_iter()
            .map(|t| t.name)
            .collect();
        assert!(names.is_empty(), "an anonymous caller saw {names:?}");
        lists += 1;
    }
    assert!(m.status() != Status::Connecting);
}

#[tokio::test]
async fn a_tools_limits_keep_their_state_across_listings() {
    let front = front().build().unwrap();
    let source = Fake {
        listing: one_tool(),
        ..Fake::default()
    };
    let changes = source.changes.clone();
    let once_a_minute = snodo_compose::ToolPolicy {
        rate_limit: Some(snodo::RateLimit::per_principal(1, Duration::from_secs(60))),
        ..snodo_compose::ToolPolicy::default()
    };
    let m = Mount::with_options(
        &front,
        Arc::new(source),
        Transforms::new().policy("*", once_a_minute),
        quick(),
    );
    assert!(matches!(
        m.ready(Duration::from_secs(5)).await,
        Status::Up { generation: 1, .. }
    ));
    let c = Client::builder("t", "1")
        .connect_runtime(front.clone())
        .await
        .unwrap();
    let first = c.call_tool("hello", json!({})).await.unwrap();
    assert!(!first.is_error, "{first:?}");
    changes.send_modify(|n| *n += 1);
    let status = m
        .wait_for(Duration::from_secs(5), |s| {
            matches!(s, Status::Up { generation: 2, .. })
        })
        .await;
    assert!(matches!(status, Status::Up { generation: 2, .. }));
    // The budget spent before the re-list is still spent.
    let second = c.call_tool("hello", json!({})).await.unwrap();
    assert!(
        second.is_error,
        "a re-list gave the budget back: {second:?}"
    );
}

#[tokio::test]
async fn a_tools_limits_are_forgotten_once_it_is_no_longer_listed() {
    let front = front().build().unwrap();
    let source = Fake {
        listing: one_tool(),
        ..Fake::default()
    };
    let (changes, relisting) = (source.changes.clone(), Arc::clone(&source.relisting));
    let once_a_minute = snodo_compose::ToolPolicy {
        rate_limit: Some(snodo::RateLimit::per_principal(1, Duration::from_secs(60))),
        ..snodo_compose::ToolPolicy::default()
    };
    let m = Mount::with_options(
        &front,
        Arc::new(source),
        Transforms::new().policy("*", once_a_minute),
        quick(),
    );
    assert!(matches!(
        m.ready(Duration::from_secs(5)).await,
        Status::Up { generation: 1, .. }
    ));
    let c = Client::builder("t", "1")
        .connect_runtime(front.clone())
        .await
        .unwrap();
    assert!(!c.call_tool("hello", json!({})).await.unwrap().is_error);
    assert!(c.call_tool("hello", json!({})).await.unwrap().is_error);
    // Listed without `hello` (the policy matches any name, so a backend that goes
    // through names must not grow the kept state), then with it again.
    let relist = |generation: u64, listing: Listing| {
        *relisting.lock().unwrap() = Some(listing);
        changes.send_modify(|n| *n += 1);
        m.wait_for(
            Duration::from_secs(5),
            move |s| matches!(s, Status::Up { generation: g, .. } if *g == generation),
        )
    };
    let other = Listing {
        tools: vec![json!({"name": "other", "inputSchema": {"type": "object"}})],
        ..Listing::default()
    };
    assert!(matches!(
        relist(2, other).await,
        Status::Up { generation: 2, .. }
    ));
    assert!(matches!(
        relist(3, one_tool()).await,
        Status::Up { generation: 3, .. }
    ));
    let back = c.call_tool("hello", json!({})).await.unwrap();
    assert!(
        !back.is_error,
        "a tool listed again kept a forgotten budget: {back:?}"
    );
}
