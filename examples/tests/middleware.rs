//! The middleware example over a loopback socket, driven by snodo-client: the cache
//! honouring `ttlMs`, the deny-list per principal. The audit log has a binary of its own
//! (`middleware_audit.rs`): it installs a tracing subscriber, which must not race the
//! callsite interest of tests running beside it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod middleware_support;

use std::time::Duration;

use middleware_support::{call, client, serve};
use serde_json::json;
use snodo_client::Client;

async fn tool_names(c: &Client) -> Vec<String> {
    let r = c.request("tools/list", json!({})).await.unwrap();
    r["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn the_deny_list_refuses_and_hides_per_principal() {
    let s = serve().await;
    let dev = client(&s, "t-dev").await;
    assert_eq!(call(&dev, "hello").await, Ok("hello".to_owned()));
    assert_eq!(call(&dev, "deploy_prod").await, Err(-32602));
    assert_eq!(tool_names(&dev).await, ["hello"]);
    let guest = client(&s, "t-guest").await;
    assert_eq!(call(&guest, "hello").await, Err(-32602));
    assert!(tool_names(&guest).await.is_empty());
    let ops = client(&s, "t-ops").await;
    assert_eq!(call(&ops, "deploy_prod").await, Ok("deployed".to_owned()));
    assert_eq!(tool_names(&ops).await, ["hello", "deploy_prod"]);
}

async fn read(c: &Client) -> String {
    let r = c
        .request("resources/read", json!({"uri": "config://app"}))
        .await
        .unwrap();
    assert_eq!(r["ttlMs"], 200, "{r}");
    r["contents"][0]["text"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn the_cache_keeps_a_result_for_its_ttl() {
    let s = serve().await;
    let dev = client(&s, "t-dev").await;
    let first = read(&dev).await;
    assert_eq!(first, "read 1");
    // Within ttlMs (200 ms) the reader is not reached again, for anyone (public scope).
    assert_eq!(read(&dev).await, "read 1");
    assert_eq!(read(&client(&s, "t-ops").await).await, "read 1");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(read(&dev).await, "read 2");
    // Tool results carry no ttlMs: never kept.
    assert_eq!(call(&dev, "hello").await, Ok("hello".to_owned()));
}
