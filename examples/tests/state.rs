//! Tools and a resource that share state see the same value, with the builder and with
//! the macros; a tool asking for state nobody registered is refused at build time.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;
use snodo::{BuildError, NoArguments, Runtime, State, Tool};
use snodo_client::Client;

async fn text_of(c: &Client, name: &str, args: serde_json::Value) -> String {
    let r = c
        .request("tools/call", json!({"name": name, "arguments": args}))
        .await
        .unwrap();
    r["content"][0]["text"].as_str().unwrap().to_owned()
}

/// A client of the example's runtime, once built with the builder and once with the
/// macros.
async fn clients() -> Vec<Client> {
    let mut clients = Vec::new();
    for runtime in [
        snodo_examples::state::runtime().unwrap(),
        snodo_examples::state::runtime_with_macros().unwrap(),
    ] {
        let c = Client::builder("state-test", "1.0.0")
            .connect_runtime(runtime)
            .await
            .unwrap();
        clients.push(c);
    }
    clients
}

#[tokio::test]
async fn tools_share_the_registered_state() {
    for c in clients().await {
        assert_eq!(
            text_of(&c, "note_add", json!({"text": "a"})).await,
            "1 notes"
        );
        assert_eq!(
            text_of(&c, "note_add", json!({"text": "b"})).await,
            "2 notes"
        );
        assert_eq!(text_of(&c, "note_list", json!({})).await, "a\nb");
    }
}

#[tokio::test]
async fn a_resource_reads_the_same_state() {
    for c in clients().await {
        text_of(&c, "note_add", json!({"text": "a"})).await;
        let r = c
            .request("resources/read", json!({"uri": "notes://all"}))
            .await
            .unwrap();
        assert_eq!(
            r["contents"][0],
            json!({"uri": "notes://all", "mimeType": "text/plain", "text": "a"})
        );
    }
}

#[test]
fn missing_state_is_a_build_error() {
    #[derive(Clone)]
    struct Db;
    let e = Runtime::builder("s", "1")
        .tool(Tool::new("t").handler(|State(_): State<Db>, _: NoArguments| async { "x" }))
        .build()
        .err();
    assert!(
        matches!(&e, Some(BuildError::MissingState { name, .. }) if name == "t"),
        "{e:?}"
    );
    let ok = Runtime::builder("s", "1")
        .with_state(Db)
        .tool(Tool::new("t").handler(|State(_): State<Db>, _: NoArguments| async { "x" }))
        .build();
    assert!(ok.is_ok());
}
