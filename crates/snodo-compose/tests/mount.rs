//! Mounting a runtime in process under a namespace, beside a local tool: lists, calls,
//! reads and prompts through the front, on every front revision.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use serde_json::json;
use snodo_compose::{Status, Transforms};
use support::{Seen, VERSIONS, client, front, tool_names};

#[tokio::test]
async fn a_runtime_mounted_under_a_namespace_beside_a_local_tool() {
    let front = front().build().unwrap();
    let seen = Seen::default();
    let (mount, status) =
        support::mount(&front, "b", &seen, Transforms::new().namespace("b")).await;
    // 4 tools, 1 prompt, 1 resource, 1 template.
    assert!(
        matches!(status, Status::Up { components: 7, .. }),
        "{status:?}"
    );
    for v in VERSIONS {
        let c = client(&front, v).await;
        assert_eq!(
            tool_names(&c).await,
            ["b_echo", "b_fail", "b_slow", "b_wait", "local"],
            "{v}"
        );
        let r = c.call_tool("b_echo", json!({"text": "hi"})).await.unwrap();
        assert_eq!(r.text(), "hi", "{v}");
        assert_eq!(
            c.call_tool("local", json!({})).await.unwrap().text(),
            "local"
        );
        let read = c.read_resource("note://b/readme").await.unwrap();
        assert_eq!(read.contents[0].text.as_deref(), Some("read me"), "{v}");
        assert_eq!(
            read.contents[0].uri, "note://b/readme",
            "{v}: the URI is the front's"
        );
        let read = c.read_resource("note://b/42").await.unwrap();
        assert_eq!(read.contents[0].text.as_deref(), Some("note 42"), "{v}");
        let p = c
            .get_prompt("b_greet", json!({"name": "Ada"}))
            .await
            .unwrap();
        assert_eq!(p.messages[0].content.as_text(), Some("Hello Ada"), "{v}");
        let templates = c.list_resource_templates().await.unwrap();
        assert_eq!(templates[0].uri_template, "note://b/{id}", "{v}");
        // A URI outside the namespace is not the backend's.
        assert!(c.read_resource("note://readme").await.is_err(), "{v}");
    }
    drop(mount);
    let c = client(&front, "2026-07-28").await;
    assert_eq!(tool_names(&c).await, ["local"], "unmounted");
}

#[tokio::test]
async fn backend_errors_keep_their_codes_on_every_front_revision() {
    let front = front().build().unwrap();
    let seen = Seen::default();
    let (_mount, _) = support::mount(&front, "b", &seen, Transforms::new().namespace("b")).await;
    for v in VERSIONS {
        let c = client(&front, v).await;
        let err = c.call_tool("b_fail", json!({})).await.err().unwrap();
        match err {
            snodo_client::ClientError::Protocol(e) => {
                assert_eq!(e.code().0, -32042, "{v}");
                assert_eq!(e.message(), "custom failure", "{v}");
            }
            e => panic!("{v}: {e:?}"),
        }
        // Bad arguments are refused by the front, with the backend's schema.
        let err = c.call_tool("b_echo", json!({"text": 5})).await;
        assert!(
            err.is_err() || err.as_ref().is_ok_and(|r| r.is_error),
            "{v}: {err:?}"
        );
    }
}
