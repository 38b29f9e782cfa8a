//! A backend's resource updates and list changes reach the front's
//! `subscriptions/listen`: the front URI a listen stream watches is subscribed at the
//! backend (its own listen on a 2026-07-28 backend, `resources/subscribe` on an
//! initialize-era one: server-everything), its updates announced under the front's
//! URI, and the subscription dropped when no stream watches it any more.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod external;

use std::time::Duration;

use futures_util::StreamExt as _;
use serde_json::json;
use snodo::{Resource, ResourceContents, Runtime, Tool};
use snodo_client::{Client, ServerEvent, Subscriptions};
use snodo_compose::{McpSource, Mount, Status, Transforms};

/// A 2026-07-28 runtime announcing list changes and resource updates.
fn listening(name: &str) -> snodo::RuntimeBuilder {
    Runtime::builder(name, "1")
        .declare_all_kinds()
        .list_changed(true)
        .resource_subscriptions(true)
}

fn backend() -> Runtime {
    listening("backend")
        .resource(
            Resource::new("demo://doc", "doc")
                .reader(|_, _| async { Ok(vec![ResourceContents::text("demo://doc", "v1")]) }),
        )
        .build()
        .unwrap()
}

async fn mounted(front: &Runtime, source: McpSource, ns: &str) -> Mount {
    let m = Mount::new(front, source, Transforms::new().namespace(ns));
    let st = m.ready(Duration::from_secs(20)).await;
    assert!(matches!(st, Status::Up { .. }), "{st:?}");
    m
}

/// Waits (at most 10 s) until `pred` holds for the URIs `rt`'s listen streams watch.
async fn watched_until(rt: &Runtime, pred: impl Fn(&Vec<String>) -> bool) -> Vec<String> {
    let mut last = Vec::new();
    for _ in 0..200 {
        last = rt.watched_resources().borrow().keys().cloned().collect();
        if pred(&last) {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("never got there: watched {last:?}");
}

#[tokio::test]
async fn a_2026_backend_resource_update_reaches_a_front_listen_stream() {
    let back = backend();
    let front = listening("front").build().unwrap();
    let _m = mounted(&front, McpSource::runtime("b", back.clone()), "b").await;
    let c = Client::builder("t", "1")
        .connect_runtime(front.clone())
        .await
        .unwrap();
    let subs = Subscriptions {
        tools_list_changed: true,
        resource_subscriptions: vec!["demo://b/doc".into()],
        ..Subscriptions::default()
    };
    let mut events = c.listen(&subs).await.unwrap();
    // The front's stream watches the front URI; the mount watches the backend's.
    watched_until(&front, |w| *w == ["demo://b/doc"]).await;
    watched_until(&back, |w| *w == ["demo://doc"]).await;
    back.notify_resource_updated("demo://doc");
    let e = tokio::time::timeout(Duration::from_secs(10), events.next())
        .await
        .expect("an update within 10 s");
    assert!(
        matches!(&e, Some(Ok(ServerEvent::ResourceUpdated(u))) if u == "demo://b/doc"),
        "{e:?}"
    );
    // A backend list change is the front's list change (the mount lists again).
    back.update(|c| {
        c.add_tool(
            Tool::new("late")
                .description("Added later")
                .handler(|_: snodo::NoArguments| async { "late" }),
        );
    })
    .unwrap();
    let e = tokio::time::timeout(Duration::from_secs(10), events.next())
        .await
        .expect("a list change within 10 s");
    assert!(matches!(&e, Some(Ok(ServerEvent::ToolsChanged))), "{e:?}");
    assert_eq!(
        c.call_tool("b_late", json!({})).await.unwrap().text(),
        "late"
    );
    // No front stream watches it any more: nor does the mount at the backend.
    drop(events);
    watched_until(&front, Vec::is_empty).await;
    watched_until(&back, Vec::is_empty).await;
}

#[tokio::test]
async fn server_everything_resource_updates_reach_a_front_listen_stream() {
    let Some(ev) = external::server_everything() else {
        return;
    };
    let front = listening("front").build().unwrap();
    let ev = McpSource::stdio("ev", "node", [ev.display().to_string(), "stdio".to_owned()]);
    let _m = mounted(&front, ev, "ev").await;
    let c = Client::builder("t", "1")
        .connect_runtime(front.clone())
        .await
        .unwrap();
    let uri = c
        .list_resources()
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.uri)
        .find(|u| u.starts_with("demo://ev/resource/static/"))
        .expect("a static resource of server-everything");
    let subs = Subscriptions {
        resource_subscriptions: vec![uri.clone()],
        ..Subscriptions::default()
    };
    let mut events = c.listen(&subs).await.unwrap();
    watched_until(&front, |w| *w == [uri.clone()]).await;
    // Give the mount a moment to subscribe at the backend, then start its updates
    // (sent at once, then every 5 s, for the URIs this connection subscribed to).
    tokio::time::sleep(Duration::from_millis(500)).await;
    c.call_tool("ev_toggle-subscriber-updates", json!({}))
        .await
        .unwrap();
    let e = tokio::time::timeout(Duration::from_secs(15), events.next())
        .await
        .expect("an update within 15 s");
    assert!(
        matches!(&e, Some(Ok(ServerEvent::ResourceUpdated(u))) if *u == uri),
        "{e:?}"
    );
}
