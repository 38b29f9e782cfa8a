//! The client against a snodo runtime in process (its `McpService`, no socket), every
//! version, auto and pinned.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use snodo::Runtime;
use snodo_client::{Client, ClientError, Protocol};
use support::{Flags, all_versions, builder, exercise, runtime_for};

async fn in_process(server: &[&str], protocol: Protocol) -> Client {
    let rt = runtime_for(server, &Flags::default());
    builder()
        .protocol(protocol)
        .connect_runtime(rt)
        .await
        .unwrap_or_else(|e| panic!("connect: {e}"))
}

#[tokio::test]
async fn auto_picks_2026_from_a_server_of_every_version() {
    let c = in_process(&all_versions(), Protocol::Auto).await;
    assert_eq!(c.protocol_version(), "2026-07-28");
    let d = c.server();
    assert!(d.stateless);
    assert_eq!(d.supported_versions.len(), 4, "{d:?}");
    assert_eq!(
        d.instructions.as_deref(),
        Some("Test server for snodo-client.")
    );
    exercise(&c).await;
}

#[tokio::test]
async fn auto_falls_back_to_initialize_on_an_initialize_era_server() {
    for server in [["2025-11-25"], ["2025-06-18"], ["2025-03-26"]] {
        let c = in_process(&server, Protocol::Auto).await;
        assert_eq!(c.protocol_version(), server[0]);
        assert!(!c.server().stateless);
        assert_eq!(
            c.server().server_info.and_then(|i| i.get("name").cloned()),
            Some(json!("client-test-server"))
        );
        exercise(&c).await;
    }
}

#[tokio::test]
async fn pinned_versions_on_a_server_of_every_version() {
    for v in all_versions() {
        let c = in_process(&all_versions(), Protocol::Pinned(v.to_owned())).await;
        assert_eq!(c.protocol_version(), v);
        exercise(&c).await;
    }
}

#[tokio::test]
async fn a_pinned_version_the_server_lacks_is_a_version_error() {
    let rt = runtime_for(&["2026-07-28"], &Flags::default());
    let err = builder()
        .protocol(Protocol::Pinned("2025-06-18".into()))
        .connect_runtime(rt)
        .await
        .err()
        .unwrap_or_else(|| panic!("connected"));
    assert!(
        matches!(err, ClientError::Version(_) | ClientError::Protocol(_)),
        "{err:?}"
    );
    let rt = runtime_for(&["2025-11-25"], &Flags::default());
    let err = builder()
        .protocol(Protocol::Pinned("2026-07-28".into()))
        .connect_runtime(rt)
        .await
        .err()
        .unwrap_or_else(|| panic!("connected"));
    assert!(!matches!(err, ClientError::Timeout(_)), "{err:?}");
}

#[tokio::test]
async fn without_handlers_a_question_is_a_typed_error() {
    for v in ["2026-07-28", "2025-11-25"] {
        let rt = runtime_for(&[v], &Flags::default());
        let c = Client::builder("bare", "1")
            .timeout(Duration::from_secs(10))
            .connect_runtime(rt)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let err = c
            .call_tool("ask_name", json!({}))
            .await
            .err()
            .unwrap_or_else(|| panic!("{v}: answered without an elicitation handler"));
        // The server sees no elicitation capability: -32021 (2026) or a refusal.
        assert!(
            err.code().is_some() || matches!(err, ClientError::NoHandler(_)),
            "{v}: {err:?}"
        );
    }
}

#[tokio::test]
async fn logs_reach_the_log_callback() {
    for v in ["2026-07-28", "2025-11-25", "2025-03-26"] {
        let logs = Arc::new(Mutex::new(Vec::new()));
        let l = logs.clone();
        let rt = runtime_for(&[v], &Flags::default());
        let c = builder()
            .log_level("debug")
            .on_log(move |m| {
                if let Ok(mut g) = l.lock() {
                    g.push((m.level, m.data));
                }
            })
            .connect_runtime(rt)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let r = c
            .call_tool("log", json!({}))
            .await
            .unwrap_or_else(|e| panic!("{v}: {e}"));
        assert_eq!(r.text(), "logged");
        let got = logs.lock().map(|g| g.clone()).unwrap_or_default();
        assert_eq!(got, vec![("warning".to_owned(), json!("careful"))], "{v}");
    }
}

#[tokio::test]
async fn dropping_a_call_cancels_it() {
    for v in ["2026-07-28", "2025-11-25"] {
        let flags = Flags::default();
        let rt = runtime_for(&[v], &flags);
        let c = builder()
            .connect_runtime(rt)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let opts = snodo_client::CallOptions::default().on_progress(|_| {});
        let call = c.call_tool_with("wait", json!({}), &opts);
        flags.drop_once_started(call, v).await;
    }
}

#[tokio::test]
async fn a_call_timeout_is_a_timeout_error() {
    let flags = Flags::default();
    let rt = runtime_for(&["2026-07-28"], &flags);
    let c = builder()
        .connect_runtime(rt)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let opts = snodo_client::CallOptions::default().timeout(Duration::from_millis(200));
    let err = c.call_tool_with("wait", json!({}), &opts).await.err();
    assert!(matches!(err, Some(ClientError::Timeout(_))), "{err:?}");
    assert!(flags.saw_cancel().await, "the abandoned call is cancelled");
}

#[tokio::test]
async fn raw_requests_and_list_streams() {
    use futures_util::StreamExt as _;
    let c = in_process(&all_versions(), Protocol::Auto).await;
    let r = c
        .request("resources/list", json!({}))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        r["resources"].as_array().map(Vec::len),
        Some(2),
        "one page: {r}"
    );
    assert!(r["nextCursor"].is_string());
    let items: Vec<_> = c.list_stream("resources/list").collect().await;
    assert_eq!(items.len(), 3);
    let err = c.request("tools/call", json!([1])).await.err();
    assert!(matches!(err, Some(ClientError::Unexpected(_))), "{err:?}");
    let err = c
        .request("no/such", json!({}))
        .await
        .err()
        .and_then(|e| e.code());
    assert_eq!(err.map(|c| c.0), Some(-32601));
}

#[tokio::test]
async fn listen_delivers_change_events() {
    use futures_util::StreamExt as _;
    let rt = Runtime::builder("events", "1")
        .resource_subscriptions(true)
        .list_changed(true)
        .resource(snodo::Resource::new("test://w", "w").static_text("text/plain", "v1"))
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let c = builder()
        .connect_runtime(rt.clone())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let subs = snodo_client::Subscriptions {
        resource_subscriptions: vec!["test://w".into()],
        ..Default::default()
    };
    let mut events = c.listen(&subs).await.unwrap_or_else(|e| panic!("{e}"));
    // The stream is open once the server acknowledged it; publish until one arrives.
    let got = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            rt.notify_resource_updated("test://w");
            if let Ok(Some(ev)) =
                tokio::time::timeout(Duration::from_millis(100), events.next()).await
            {
                return ev;
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no event within 5 s"));
    assert_eq!(
        got.unwrap_or_else(|e| panic!("{e}")),
        snodo_client::ServerEvent::ResourceUpdated("test://w".into())
    );
    // An initialize-era connection has no listen.
    let legacy = in_process(&["2025-11-25"], Protocol::Auto).await;
    let err = legacy.listen(&subs).await.err();
    assert!(matches!(err, Some(ClientError::Unexpected(_))), "{err:?}");
}

#[tokio::test]
async fn cacheable_results_are_reused_when_asked() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let reads = Arc::new(AtomicUsize::new(0));
    let r = reads.clone();
    let runtime =
        |ttl| {
            let r = r.clone();
            Runtime::builder("cache", "1")
            .read_cache(snodo::CacheHint::new(ttl, snodo::CacheScope::Public))
            .resource(snodo::Resource::new("test://n", "n").reader(move |req, _ctx| {
                let n = r.fetch_add(1, Ordering::SeqCst);
                async move { Ok(vec![snodo::ResourceContents::text(req.uri, n.to_string())]) }
            }))
            .build()
            .unwrap_or_else(|e| panic!("{e}"))
        };
    let read = |c: Client| async move {
        c.read_resource("test://n")
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .contents[0]
            .text
            .clone()
    };
    let cached = builder()
        .cache(true)
        .connect_runtime(runtime(60_000))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        read(cached.clone()).await,
        read(cached.clone()).await,
        "ttlMs 60 s: one read"
    );
    assert_eq!(reads.load(Ordering::SeqCst), 1);
    let uncached = builder()
        .connect_runtime(runtime(60_000))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_ne!(
        read(uncached.clone()).await,
        read(uncached).await,
        "no cache unless asked"
    );
    let stale = builder()
        .cache(true)
        .connect_runtime(runtime(0))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_ne!(
        read(stale.clone()).await,
        read(stale).await,
        "ttlMs 0: never reused"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_is_shared_across_tasks() {
    fn send_sync<T: Send + Sync + Clone + 'static>(_: &T) {}
    for server in [&["2026-07-28"][..], &["2025-11-25"][..]] {
        let c = in_process(server, Protocol::Auto).await;
        send_sync(&c);
        let calls: Vec<_> = (0..16)
            .map(|i| {
                let c = c.clone();
                tokio::spawn(
                    async move { c.call_tool("echo", json!({"text": format!("n{i}")})).await },
                )
            })
            .collect();
        for (i, call) in calls.into_iter().enumerate() {
            let r = call
                .await
                .unwrap_or_else(|e| panic!("{e}"))
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(r.text(), format!("n{i}"));
        }
    }
}
