//! Wire tests of the transports (issue 36): every suite runs on HTTP/1.1, HTTP/2
//! cleartext (prior knowledge), HTTP/2 over TLS (ALPN) and the Unix socket, from one
//! table; then HTTP/2's bad inputs, written frame by frame, and TLS reloads. Real
//! sockets; see `docs/deployment.md` and `docs/limits.md`.

// Tests panic on purpose when an expectation fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "transports/h2_raw.rs"]
#[allow(dead_code)]
mod h2_raw;
#[path = "wire/support.rs"]
#[allow(dead_code, unused_imports)]
mod support;
#[path = "transports/table.rs"]
#[allow(dead_code)]
mod table;

use std::time::Duration;

use serde_json::json;
use snodo::http::{Http2Limits, HttpConfig, Server, TlsCertificates};
use snodo_testkit::R2026_07_28;
use tokio::io::AsyncWriteExt;

use h2_raw::{Frame, GOAWAY, PING, SETTINGS, WINDOW_UPDATE};
use support::{MODERN, builder};
use table::{ALL, Served, Transport};

const WAIT: Duration = Duration::from_secs(10);

async fn start(t: Transport, config: HttpConfig) -> Served {
    Served::start(t, builder(&MODERN).build().unwrap(), config).await
}

fn call(id: u64, tool: &str, args: serde_json::Value) -> snodo_testkit::Request {
    R2026_07_28
        .request("tools/call")
        .id(id)
        .params(json!({"name": tool, "arguments": args}))
}

#[tokio::test]
async fn each_transport_answers_json_and_sse() {
    for t in ALL {
        let s = start(t, HttpConfig::default()).await;
        let mut c = s.connect().await;
        let (version, r) = c.request(&R2026_07_28.request("tools/list").id(1)).await;
        assert_eq!(r.status, 200, "{t:?}: {}", r.text());
        let want = if t.is_h2() {
            http::Version::HTTP_2
        } else {
            http::Version::HTTP_11
        };
        assert_eq!(version, want, "{t:?}");
        assert!(r.result()["tools"].as_array().unwrap().len() > 3, "{t:?}");
        // The same connection again: an SSE answer with progress events.
        let req = call(2, "progress", json!({})).meta("progressToken", json!("p"));
        let (_, r) = c.request(&req).await;
        assert_eq!(r.status, 200, "{t:?}: {}", r.text());
        assert!(r.is_sse(), "{t:?}: {}", r.text());
        let events = r.events();
        assert!(events.len() >= 2, "{t:?}: {events:?}");
        assert_eq!(events.last().unwrap()["id"], 2, "{t:?}");
    }
}

#[tokio::test]
async fn each_transport_keeps_the_limits() {
    for t in ALL {
        let config = HttpConfig::default().max_body_bytes(1024).max_headers(20);
        let s = start(t, config).await;
        let mut c = s.connect().await;
        // Body over the limit: 413, and the connection still serves.
        let big = call(1, "echo", json!({"text": "x".repeat(4096)}));
        let (_, r) = c.request(&big).await;
        assert_eq!(r.status, 413, "{t:?}: {}", r.text());
        let mut c = s.connect().await;
        // Too many headers: 431 on either version.
        let mut many = call(2, "echo", json!({"text": "a"}));
        for i in 0..30 {
            many = many.header(&format!("x-filler-{i}"), "v");
        }
        let (_, r) = c.request(&many).await;
        assert_eq!(r.status, 431, "{t:?}: {}", r.text());
        // A Host outside the allow-list (an :authority over HTTP/2): 403.
        let mut c = s.connect().await;
        let ok = call(3, "echo", json!({"text": "a"}));
        let mut req = c.post(&ok.headers(), ok.body());
        if t.is_h2() {
            *req.uri_mut() = "http://evil.example/mcp".parse().unwrap();
        } else {
            req.headers_mut()
                .insert("host", "evil.example".parse().unwrap());
        }
        let (_, r) = c.send(req).await;
        assert_eq!(r.status, 403, "{t:?}: {}", r.text());
    }
}

#[tokio::test]
async fn each_transport_drains_at_shutdown() {
    for t in ALL {
        let mut s = start(t, HttpConfig::default()).await;
        let mut c = s.connect().await;
        let slow = tokio::spawn(async move {
            c.request(&call(1, "wait", json!({"ms": 300, "tag": "drain"})))
                .await
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        s.shutdown();
        let (_, r) = tokio::time::timeout(WAIT, slow).await.unwrap().unwrap();
        assert_eq!(r.status, 200, "{t:?}: {}", r.text());
        assert_eq!(r.result()["content"][0]["text"], "waited 300", "{t:?}");
        tokio::time::timeout(WAIT, s.done.take().unwrap())
            .await
            .unwrap()
            .unwrap();
        if let Some(path) = &s.socket {
            assert!(!path.exists(), "the socket file is removed at exit");
        }
    }
}

#[tokio::test]
async fn a_hundred_concurrent_calls_share_one_h2_connection() {
    for t in [Transport::H2c, Transport::H2Tls] {
        let s = start(t, HttpConfig::default()).await;
        let c = s.connect().await;
        let calls = (0..100u64).map(|i| {
            let mut c = c.clone_h2();
            tokio::spawn(async move {
                c.request(&call(i, "wait", json!({"ms": 200, "tag": "h2"})))
                    .await
            })
        });
        let started = std::time::Instant::now();
        for (i, call) in calls.collect::<Vec<_>>().into_iter().enumerate() {
            let (_, r) = call.await.unwrap();
            assert_eq!(r.message()["id"], i, "{t:?}: {}", r.text());
            assert_eq!(r.result()["content"][0]["text"], "waited 200");
        }
        // Concurrent, not one after another (100 x 200 ms).
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
    }
}

/// Reads SSE data from `body` until a message whose text contains `mark`; that message.
async fn next_event(
    body: &mut hyper::body::Incoming,
    buf: &mut Vec<u8>,
    mark: &str,
) -> serde_json::Value {
    use http_body_util::BodyExt;
    loop {
        while let Some(end) = buf.windows(2).position(|w| w == b"\n\n") {
            let event: Vec<u8> = buf.drain(..end + 2).collect();
            let text = String::from_utf8_lossy(&event).into_owned();
            if let Some(data) = text.strip_prefix("data: ") {
                if data.contains(mark) {
                    return serde_json::from_str(data.trim_end()).unwrap();
                }
            }
        }
        let frame = tokio::time::timeout(WAIT, body.frame())
            .await
            .unwrap_or_else(|_| panic!("no {mark:?} within {WAIT:?}"))
            .expect("the stream ended")
            .unwrap();
        if let Ok(data) = frame.into_data() {
            buf.extend_from_slice(&data);
        }
    }
}

/// Listen streams multiplexed on one HTTP/2 connection (issue 35 §4: how many streams
/// share one connection's buffers): each is acknowledged, each hears a change tagged
/// with its own id, and one the client resets gives its subscription slot back (the
/// body that drives the subscription is dropped with the stream).
#[tokio::test]
async fn listen_streams_share_one_h2_connection() {
    const N: usize = 8;
    for t in [Transport::H2c, Transport::H2Tls] {
        let rt = builder(&MODERN)
            .list_changed(true)
            .resource_subscriptions(true)
            .build()
            .unwrap();
        let config = HttpConfig::default().max_listen_streams(N);
        let s = Served::start(t, rt.clone(), config).await;
        let c = s.connect().await;
        let listen = |id: String| {
            let r = R2026_07_28.request("subscriptions/listen").id(id).params(
                json!({"notifications": {"resourceSubscriptions": ["test://static/readme"]}}),
            );
            c.post(&r.headers(), r.body())
        };
        let mut streams = Vec::new();
        for i in 0..N {
            let mut c = c.clone_h2();
            let resp = c.open(listen(format!("l{i}"))).await;
            assert_eq!(resp.status(), 200, "{t:?}");
            assert_eq!(resp.version(), http::Version::HTTP_2);
            let mut body = resp.into_body();
            let mut buf = Vec::new();
            next_event(&mut body, &mut buf, "acknowledged").await;
            streams.push((i, body, buf));
        }
        // Full: one more is refused.
        let refused = c.clone_h2().open(listen("over".into())).await;
        assert_eq!(refused.status(), 503, "{t:?}");
        // One reset by the client frees its slot.
        drop(streams.remove(0));
        let started = std::time::Instant::now();
        let (body, buf) = loop {
            let resp = c.clone_h2().open(listen("again".into())).await;
            if resp.status() == 200 {
                let mut body = resp.into_body();
                let mut buf = Vec::new();
                next_event(&mut body, &mut buf, "acknowledged").await;
                break (body, buf);
            }
            assert!(
                started.elapsed() < WAIT,
                "{t:?}: the reset stream kept its slot"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        streams.push((usize::MAX, body, buf));
        rt.notify_resource_updated("test://static/readme");
        for (i, body, buf) in &mut streams {
            let n = next_event(body, buf, "notifications/resources/updated").await;
            let id = if *i == usize::MAX {
                "again".to_owned()
            } else {
                format!("l{i}")
            };
            assert_eq!(
                n["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
                id.as_str(),
                "{t:?}"
            );
            assert_eq!(n["params"]["uri"], "test://static/readme");
        }
    }
}

/// A raw HTTP/2 connection that has exchanged SETTINGS.
async fn raw_h2(s: &Served, settings: &[(u16, u32)]) -> Box<dyn table::Io> {
    let mut io = s.stream().await;
    io.write_all(&h2_raw::preface(settings)).await.unwrap();
    io
}

/// Sends a `tools/list` on `stream` and reads until its `200`.
async fn served_on(io: &mut Box<dyn table::Io>, host: &str, stream: u32) -> Vec<Frame> {
    let r = R2026_07_28.request("tools/list").id(u64::from(stream));
    let headers = r.headers();
    let block = h2_raw::block(&h2_raw::post_fields(host, &headers));
    io.write_all(&h2_raw::request(stream, &block, r.body().as_bytes()))
        .await
        .unwrap();
    h2_raw::read_until(io, WAIT, |f| f.stream == stream && f.is_ok_headers())
        .await
        .unwrap_or_else(|| panic!("stream {stream} was not answered"))
}

#[tokio::test]
async fn a_rapid_reset_flood_is_bounded_and_others_are_served() {
    let s = start(Transport::H2c, HttpConfig::default()).await;
    let host = s.host();
    let mut io = raw_h2(&s, &[]).await;
    let r = call(1, "wait", json!({"ms": 5000, "tag": "raw"}));
    let headers = r.headers();
    let block = h2_raw::block(&h2_raw::post_fields(&host, &headers));
    let mut flood = Vec::new();
    for i in 0..5000u32 {
        let id = 2 * i + 1;
        flood.extend(h2_raw::request(id, &block, r.body().as_bytes()));
        flood.extend(h2_raw::frame(
            h2_raw::RST_STREAM,
            0,
            id,
            &8u32.to_be_bytes(),
        ));
    }
    // The server may close the connection while this is written.
    let _ = io.write_all(&flood).await;
    // Told to calm down (GOAWAY ENHANCE_YOUR_CALM) or cut off: bounded either way.
    let seen = h2_raw::read_until(&mut io, WAIT, |f| f.kind == GOAWAY).await;
    if let Some(frames) = seen {
        let goaway = frames.last().unwrap();
        assert_eq!(goaway.error_code(), Some(0xb), "{goaway:?}");
    }
    // Another connection is served at once.
    let mut c = s.connect().await;
    let (_, r) = tokio::time::timeout(WAIT, c.request(&call(1, "echo", json!({"text": "ok"}))))
        .await
        .unwrap();
    assert_eq!(r.result()["content"][0]["text"], "ok");
}

#[tokio::test]
async fn ping_and_settings_floods_leave_the_connection_serving() {
    for kind in [PING, SETTINGS] {
        let s = start(Transport::H2c, HttpConfig::default()).await;
        let mut io = raw_h2(&s, &[]).await;
        let one = if kind == PING {
            h2_raw::frame(PING, 0, 0, &[7; 8])
        } else {
            h2_raw::frame(SETTINGS, 0, 0, &[])
        };
        let flood: Vec<u8> = one
            .iter()
            .copied()
            .cycle()
            .take(one.len() * 10_000)
            .collect();
        // Written while the answers are read (a client that reads its acks).
        let (mut rd, mut wr) = tokio::io::split(io);
        let writer = tokio::spawn(async move {
            let _ = wr.write_all(&flood).await;
            wr
        });
        let mut acks = 0usize;
        while acks < 10_000 {
            let Some(f) = h2_raw::next_frame(&mut rd, WAIT).await else {
                break;
            };
            if f.kind == kind && f.flags & 1 == 1 {
                acks += 1;
            }
            assert_ne!(f.kind, GOAWAY, "kind {kind}: {f:?}");
        }
        let wr = writer.await.unwrap();
        io = Box::new(rd.unsplit(wr));
        let frames = served_on(&mut io, &s.host(), 1).await;
        assert!(frames.iter().all(|f| f.kind != GOAWAY), "kind {kind}");
    }
}

#[tokio::test]
async fn an_oversized_header_block_is_refused_and_the_connection_serves_on() {
    let limits = Http2Limits::default().max_header_list_bytes(16 * 1024);
    let s = start(Transport::H2c, HttpConfig::default().http2_limits(limits)).await;
    let host = s.host();
    let mut io = raw_h2(&s, &[]).await;
    let r = call(1, "echo", json!({"text": "a"}));
    let mut headers = r.headers();
    headers.push(("x-big".to_owned(), "b".repeat(40 * 1024)));
    let block = h2_raw::block(&h2_raw::post_fields(&host, &headers));
    io.write_all(&h2_raw::request(1, &block, r.body().as_bytes()))
        .await
        .unwrap();
    // Stream 1: a refusal (431 HEADERS, or RST_STREAM), never a 200.
    let frames = h2_raw::read_until(&mut io, WAIT, |f| {
        f.stream == 1 && (f.kind == h2_raw::HEADERS || f.kind == h2_raw::RST_STREAM)
    })
    .await
    .expect("stream 1 answered");
    assert!(!frames.last().unwrap().is_ok_headers(), "{frames:?}");
    served_on(&mut io, &host, 3).await;
}

#[tokio::test]
async fn a_continuation_flood_is_cut_off_and_others_are_served() {
    // CVE-2024-27316's shape: one header block that never ends, CONTINUATION after
    // CONTINUATION (64 MiB of them), which a server that buffers the block until
    // END_HEADERS would hold in memory.
    let s = start(Transport::H2c, HttpConfig::default()).await;
    let mut io = raw_h2(&s, &[]).await;
    let host = s.host();
    let r = call(1, "echo", json!({"text": "a"}));
    let headers = r.headers();
    let first = h2_raw::block(&h2_raw::post_fields(&host, &headers));
    io.write_all(&h2_raw::frame(h2_raw::HEADERS, 0, 1, &first))
        .await
        .unwrap();
    let filler = h2_raw::frame(h2_raw::CONTINUATION, 0, 1, &[0x40; 16_384]);
    let (mut rd, mut wr) = tokio::io::split(io);
    let writer = tokio::spawn(async move {
        for _ in 0..4096 {
            // The server may close the connection while this is written.
            if wr.write_all(&filler).await.is_err() {
                return false;
            }
        }
        true
    });
    // A connection error (GOAWAY: PROTOCOL_ERROR, as the block's fields are no valid
    // HPACK, or ENHANCE_YOUR_CALM for too many CONTINUATIONs), then the connection ends.
    let mut goaway = None;
    while let Some(f) = h2_raw::next_frame(&mut rd, WAIT).await {
        if f.kind == GOAWAY {
            goaway = Some(f);
            break;
        }
    }
    let goaway = goaway.expect("a GOAWAY before the connection ended");
    assert!(matches!(goaway.error_code(), Some(0x1 | 0xb)), "{goaway:?}");
    let wrote_all = tokio::time::timeout(WAIT, writer).await.unwrap().unwrap();
    assert!(!wrote_all, "the server read the whole flood");
    // Another connection is served at once.
    let mut c = s.connect().await;
    let (_, r) = tokio::time::timeout(WAIT, c.request(&call(2, "echo", json!({"text": "ok"}))))
        .await
        .unwrap();
    assert_eq!(r.result()["content"][0]["text"], "ok");
}

#[tokio::test]
async fn a_stream_that_never_reads_its_sse_does_not_block_the_others() {
    let config = HttpConfig::default()
        .disconnect_probe(Some(Duration::from_millis(20)), Duration::from_millis(5));
    let s = start(Transport::H2c, config).await;
    let host = s.host();
    // Streams may send 64 bytes before the client opens their window; the client
    // opens stream 3's only.
    let mut io = raw_h2(&s, &[(0x4, 64)]).await;
    let r = call(1, "wait", json!({"ms": 5000, "tag": "raw"}));
    let headers = r.headers();
    let block = h2_raw::block(&h2_raw::post_fields(&host, &headers));
    io.write_all(&h2_raw::request(1, &block, r.body().as_bytes()))
        .await
        .unwrap();
    // Stream 1 turns to SSE and its keep-alives fill its window.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let list = R2026_07_28.request("tools/list").id(3);
    let lh = list.headers();
    let block = h2_raw::block(&h2_raw::post_fields(&host, &lh));
    io.write_all(&h2_raw::request(3, &block, list.body().as_bytes()))
        .await
        .unwrap();
    io.write_all(&h2_raw::frame(
        WINDOW_UPDATE,
        0,
        3,
        &(1u32 << 20).to_be_bytes(),
    ))
    .await
    .unwrap();
    io.write_all(&h2_raw::frame(
        WINDOW_UPDATE,
        0,
        0,
        &(1u32 << 20).to_be_bytes(),
    ))
    .await
    .unwrap();
    let frames = h2_raw::read_until(&mut io, WAIT, |f| {
        f.stream == 3 && f.kind == h2_raw::DATA && f.flags & h2_raw::END_STREAM != 0
    })
    .await
    .expect("stream 3 answered in full");
    assert!(frames.iter().any(|f| f.stream == 3 && f.is_ok_headers()));
    let data: usize = frames
        .iter()
        .filter(|f| f.stream == 1 && f.kind == h2_raw::DATA)
        .map(|f| f.payload.len())
        .sum();
    assert!(data <= 64, "stream 1 sent past its window: {data}");
}

/// A stream whose flow-control window the client never opens, while it reads the
/// socket and answers PINGs (so no socket write ever pends), is ended after the write
/// timeout: the task feeding it lets go and the execution is cancelled, rather than
/// holding its slot for as long as the client likes.
#[tokio::test]
async fn a_stream_whose_window_never_opens_ends_after_the_write_timeout() {
    let config = HttpConfig::default()
        .disconnect_probe(Some(Duration::from_millis(20)), Duration::from_millis(5))
        .write_timeout(Duration::from_millis(300));
    let s = start(Transport::H2c, config).await;
    let host = s.host();
    // Every stream starts with a window of 0, and the client never sends WINDOW_UPDATE.
    let mut io = raw_h2(&s, &[(0x4, 0)]).await;
    let r = call(1, "wait", json!({"ms": 60_000, "tag": "h2-window-zero"}));
    let headers = r.headers();
    let block = h2_raw::block(&h2_raw::post_fields(&host, &headers));
    io.write_all(&h2_raw::request(1, &block, r.body().as_bytes()))
        .await
        .unwrap();
    // The client keeps reading (and answering SETTINGS and PINGs) meanwhile.
    let reader = async {
        while let Some(f) = h2_raw::read_frame(&mut io, WAIT).await {
            assert_ne!(f.kind, GOAWAY, "{f:?}");
        }
    };
    tokio::select! {
        () = reader => panic!("the connection ended"),
        cancelled = support::saw_cancellation("h2-window-zero") => {
            assert!(cancelled, "the stalled stream's execution was never cancelled");
        }
    }
}

/// An idle HTTP/2 connection at its head deadline is sent GOAWAY before it closes, so
/// the client knows not to start a stream on it.
#[tokio::test]
async fn an_idle_h2_connection_is_sent_goaway_at_the_head_deadline() {
    let config = HttpConfig::default().header_read_timeout(Duration::from_millis(300));
    let s = start(Transport::H2c, config).await;
    let mut io = raw_h2(&s, &[]).await;
    let host = s.host();
    served_on(&mut io, &host, 1).await;
    let mut goaway = None;
    while let Some(f) = h2_raw::read_frame(&mut io, WAIT).await {
        if f.kind == GOAWAY {
            goaway = Some(f);
        }
    }
    let goaway = goaway.expect("a GOAWAY before the connection closed");
    assert_eq!(goaway.error_code(), Some(0), "NO_ERROR: {goaway:?}");
}

/// A connection whose answer can never be written (an HTTP/2 stream whose window the
/// client never opens) does not outlive the server: once the drain and its grace have
/// passed, it is cut off.
#[tokio::test]
async fn a_stalled_connection_is_cut_off_when_the_server_stops() {
    let mut s = start(Transport::H2c, HttpConfig::default()).await;
    let host = s.host();
    let mut io = raw_h2(&s, &[(0x4, 0)]).await;
    let r = R2026_07_28.request("tools/list").id(1);
    let headers = r.headers();
    let block = h2_raw::block(&h2_raw::post_fields(&host, &headers));
    io.write_all(&h2_raw::request(1, &block, r.body().as_bytes()))
        .await
        .unwrap();
    h2_raw::read_until(&mut io, WAIT, |f| f.stream == 1 && f.is_ok_headers())
        .await
        .expect("the answer's head is sent (its body waits for the window)");
    s.shutdown();
    tokio::time::timeout(Duration::from_secs(15), s.done.take().unwrap())
        .await
        .expect("the server stopped")
        .unwrap();
    // The connection ends soon after (read_frame: None at its end).
    let ended = tokio::time::timeout(Duration::from_secs(3), async {
        while h2_raw::read_frame(&mut io, Duration::from_secs(5))
            .await
            .is_some()
        {}
    })
    .await;
    assert!(ended.is_ok(), "the connection outlived the server");
}

#[tokio::test]
async fn tls_reload_keeps_connections_and_refuses_a_bad_pair() {
    let s = start(Transport::H2Tls, HttpConfig::default()).await;
    let certs: TlsCertificates = s.certificates.clone().unwrap();
    let mut before = s.connect().await;
    // A key of another certificate in place of the right one: refused, old pair kept.
    let (_, other_key, _) = table::certificate(s.dir.path(), "other");
    let (cert, key) = (
        s.dir.path().join("server.crt"),
        s.dir.path().join("server.key"),
    );
    let good_key = std::fs::read(&key).unwrap();
    std::fs::copy(&other_key, &key).unwrap();
    let err = certs.reload().expect_err("a mismatched pair");
    assert!(err.to_string().contains("is not the private key"), "{err}");
    assert!(TlsCertificates::load(&cert, &key).is_err());
    std::fs::write(&key, b"not PEM").unwrap();
    assert!(certs.reload().is_err());
    // New connections still get the old pair, old ones still serve.
    let mut c = s.connect().await;
    let (_, r) = c.request(&call(1, "echo", json!({"text": "a"}))).await;
    assert_eq!(r.status, 200);
    std::fs::write(&key, good_key).unwrap();
    certs.reload().unwrap();
    let (_, r) = before.request(&call(2, "echo", json!({"text": "b"}))).await;
    assert_eq!(r.status, 200);
}

/// A server bound to the socket at `path` (not run).
fn bind_unix(path: &std::path::Path) -> Result<Server, snodo::http::ServeError> {
    Server::bind_unix(
        builder(&MODERN).build().unwrap(),
        path,
        None,
        HttpConfig::default(),
    )
}

#[tokio::test]
async fn a_stale_socket_is_replaced_and_a_live_one_refused() {
    let s = start(Transport::Unix, HttpConfig::default()).await;
    let path = s.socket.clone().unwrap();
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    // Bound in a private folder and linked into place: no folder is left behind.
    let beside: Vec<_> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().starts_with(".snodo-bind-"))
        .collect();
    assert!(beside.is_empty(), "{beside:?}");
    let live = bind_unix(&path).expect_err("someone listens there");
    assert!(
        live.to_string().contains("another server is listening"),
        "{live}"
    );
    // A socket file nobody listens on (a server that died).
    let stale = s.dir.path().join("stale.sock");
    drop(std::os::unix::net::UnixListener::bind(&stale).unwrap());
    assert!(stale.exists());
    let server = bind_unix(&stale).expect("a stale socket file is replaced");
    drop(server);
    assert!(!stale.exists(), "removed when the server is dropped");
    // Not a socket: refused, left alone.
    let file = s.dir.path().join("file");
    std::fs::write(&file, b"x").unwrap();
    let err = bind_unix(&file).expect_err("not a socket");
    assert!(err.to_string().contains("not a socket"), "{err}");
    assert!(file.exists());
}
