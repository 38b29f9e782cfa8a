//! Semantics through a mount: progress and logs relayed on the front request, a front
//! cancellation reaching the backend, and a backend that goes down and comes back
//! (over a real socket, the backend served with snodo's stdio framing).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use snodo_client::{CallOptions, Client, Protocol};
use snodo_compose::{McpSource, Mount, MountOptions, Source, Status, StreamFactory, Transforms};
use support::{Seen, VERSIONS, backend, client, front, tool_names};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

const T: Duration = Duration::from_secs(10);

#[tokio::test]
async fn progress_and_logs_of_a_backend_call_reach_the_front_caller() {
    let front = front().logging().build().unwrap();
    let seen = Seen::default();
    let (_mount, _) = support::mount(&front, "b", &seen, Transforms::new().namespace("b")).await;
    for v in ["2026-07-28", "2025-11-25", "2025-06-18"] {
        let logs = Arc::new(Mutex::new(Vec::new()));
        let l = logs.clone();
        let c = Client::builder("t", "1")
            .protocol(Protocol::Pinned(v.into()))
            .log_level("debug")
            .on_log(move |m| l.lock().unwrap().push(m.data))
            .connect_runtime(front.clone())
            .await
            .unwrap();
        let steps = Arc::new(Mutex::new(Vec::new()));
        let s = steps.clone();
        let opts = CallOptions::default().on_progress(move |p| s.lock().unwrap().push(p.progress));
        let r = c.call_tool_with("b_slow", json!({}), &opts).await.unwrap();
        assert_eq!(r.text(), "done", "{v}");
        assert_eq!(
            *steps.lock().unwrap(),
            [1.0, 2.0, 3.0],
            "{v}: progress relayed"
        );
        assert_eq!(
            *logs.lock().unwrap(),
            [json!("halfway")],
            "{v}: the log line relayed"
        );
    }
}

#[tokio::test]
async fn a_front_cancellation_reaches_the_backend() {
    for v in ["2026-07-28", "2025-11-25"] {
        let front = front().build().unwrap();
        let seen = Seen::default();
        let (mount, _) = support::mount(&front, "b", &seen, Transforms::new().namespace("b")).await;
        let c = client(&front, v).await;
        let opts = CallOptions::default().timeout(Duration::from_millis(300));
        let call = c.call_tool_with("b_wait", json!({}), &opts);
        let r = call.await;
        assert!(r.is_err(), "{v}: {r:?}");
        assert!(
            Seen::wait(&seen.started).await,
            "{v}: the backend call started"
        );
        assert!(
            Seen::wait(&seen.cancelled).await,
            "{v}: the backend call was cancelled"
        );
        // The connection to the backend is still good.
        let r = c
            .call_tool("b_echo", json!({"text": "again"}))
            .await
            .unwrap();
        assert_eq!(r.text(), "again");
        assert_eq!(
            mount.down_count(),
            0,
            "{v}: a cancellation is not an outage"
        );
    }
}

/// A backend on a TCP port, each connection served with snodo's stdio framing.
async fn serve_backend(listener: TcpListener, seen: Seen) -> JoinSet<()> {
    let mut set = JoinSet::new();
    set.spawn(async move {
        let mut conns = JoinSet::new();
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            let rt = backend("b", &seen);
            // The socket lives in this task only: stopping the server closes it, as a
            // backend process's exit would, whatever the runtime still runs.
            let (near, far) = tokio::io::duplex(1 << 16);
            tokio::spawn(async move {
                let (r, w) = tokio::io::split(far);
                let cfg = snodo::stdio::StdioConfig::default();
                let _ = snodo::stdio::serve_stream(rt, r, w, cfg).await;
            });
            conns.spawn(async move {
                let mut near = near;
                let _ = tokio::io::copy_bidirectional(&mut sock, &mut near).await;
            });
        }
    });
    set
}

fn tcp(addr: std::net::SocketAddr) -> StreamFactory {
    Arc::new(move || {
        Box::pin(async move {
            let s = TcpStream::connect(addr).await?;
            let (r, w) = s.into_split();
            let r: Box<dyn tokio::io::AsyncRead + Send + Unpin> = Box::new(r);
            let w: Box<dyn tokio::io::AsyncWrite + Send + Unpin> = Box::new(w);
            Ok((r, w))
        })
    })
}

/// The same over snodo's stdio framing (the client's stdio reader and writer): for an
/// initialize-era front the backend call is driven by the front request itself, with no
/// task of its own; dropped with it, it still tells the backend.
#[tokio::test]
async fn a_front_cancellation_reaches_a_stream_backend() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Seen::default();
    let _server = serve_backend(listener, seen.clone()).await;
    let front = front().build().unwrap();
    let source: Arc<dyn Source> = Arc::new(McpSource::stream("tcp-b", tcp(addr)));
    let mount = Mount::with_options(
        &front,
        source,
        Transforms::new().namespace("b"),
        MountOptions::default(),
    );
    assert!(matches!(mount.ready(T).await, Status::Up { .. }));
    for v in ["2026-07-28", "2025-11-25", "2025-06-18"] {
        seen.started
            .store(false, std::sync::atomic::Ordering::SeqCst);
        seen.cancelled
            .store(false, std::sync::atomic::Ordering::SeqCst);
        let c = client(&front, v).await;
        let opts = CallOptions::default().timeout(Duration::from_millis(300));
        let r = c.call_tool_with("b_wait", json!({}), &opts).await;
        assert!(r.is_err(), "{v}: {r:?}");
        assert!(
            Seen::wait(&seen.started).await,
            "{v}: the backend call started"
        );
        assert!(
            Seen::wait(&seen.cancelled).await,
            "{v}: the backend call was cancelled"
        );
        let r = c
            .call_tool("b_echo", json!({"text": "again"}))
            .await
            .unwrap();
        assert_eq!(r.text(), "again", "{v}");
    }
    assert_eq!(mount.down_count(), 0, "a cancellation is not an outage");
}

#[tokio::test]
async fn a_backend_that_goes_down_leaves_the_lists_and_comes_back() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Seen::default();
    let server = serve_backend(listener, seen.clone()).await;
    let front = front().build().unwrap();
    let options = MountOptions {
        health_interval: Duration::from_millis(100),
        min_backoff: Duration::from_millis(50),
        max_backoff: Duration::from_millis(200),
        ..MountOptions::default()
    };
    let source: Arc<dyn Source> = Arc::new(McpSource::stream("tcp-b", tcp(addr)));
    let mount = Mount::with_options(&front, source, Transforms::new().namespace("b"), options);
    assert!(matches!(mount.ready(T).await, Status::Up { .. }));
    let c = client(&front, "2026-07-28").await;
    assert!(tool_names(&c).await.contains(&"b_echo".to_owned()));

    // Down: the server and its connections stop.
    drop(server);
    let st = mount.wait_for(T, |s| matches!(s, Status::Down(_))).await;
    let Status::Down(why) = st else {
        panic!("{st:?}")
    };
    assert!(why.contains("tcp-b"), "the error names the backend: {why}");
    assert_eq!(mount.down_count(), 1);
    for v in VERSIONS {
        let c = client(&front, v).await;
        assert_eq!(
            tool_names(&c).await,
            ["local"],
            "{v}: only the local tool is listed"
        );
        assert_eq!(
            c.call_tool("local", json!({})).await.unwrap().text(),
            "local"
        );
    }

    // Back on the same port.
    let listener = TcpListener::bind(addr).await.unwrap();
    let _server = serve_backend(listener, seen).await;
    let st = mount.wait_for(T, |s| matches!(s, Status::Up { .. })).await;
    assert!(matches!(st, Status::Up { .. }), "{st:?}");
    let r = c
        .call_tool("b_echo", json!({"text": "back"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "back");
    drop(mount);
}

#[tokio::test]
async fn a_call_in_flight_when_the_backend_dies_fails_naming_it() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Seen::default();
    let server = serve_backend(listener, seen.clone()).await;
    let front = front().build().unwrap();
    let source: Arc<dyn Source> = Arc::new(McpSource::stream("tcp-b", tcp(addr)));
    let mount = Mount::with_options(
        &front,
        source,
        Transforms::new().namespace("b"),
        MountOptions::default(),
    );
    mount.ready(T).await;
    let c = client(&front, "2025-06-18").await;
    let call = tokio::spawn(async move { c.call_tool("b_wait", json!({})).await });
    assert!(Seen::wait(&seen.started).await);
    drop(server);
    let err = tokio::time::timeout(T, call)
        .await
        .unwrap()
        .unwrap()
        .err()
        .unwrap();
    assert!(err.to_string().contains("backend \"tcp-b\""), "{err}");
    let st = mount.wait_for(T, |s| matches!(s, Status::Down(_))).await;
    assert!(matches!(st, Status::Down(_)), "{st:?}");
}
