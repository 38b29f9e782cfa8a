//! An initialize-era backend over stdio framing asks during a call: its server request
//! names no request, so the front gives it to the only call in flight on that
//! connection, and refuses it clearly (the backend's tool then fails with that
//! message) when several calls share the connection. A question the front caller cannot
//! answer (it did not declare the capability) is answered to the backend as such a
//! client would, and the call goes on.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use snodo::protocol::ALL;
use snodo::{HandlerError, InputRequest, NoArguments, RequestContext, Runtime, Tool, ToolResult};
use snodo_client::{Client, Protocol};
use snodo_compose::{McpSource, Mount, Status, StreamFactory, Transforms};

fn backend() -> Runtime {
    Runtime::builder("stdio-backend", "1")
        .protocols(ALL.iter().copied())
        .legacy_server_requests(Duration::from_secs(10))
        .tool(Tool::new("ask").description("Asks a name").handler(
            |_: NoArguments, ctx: RequestContext| async move {
                let a = ctx
                    .ask(
                        "n",
                        InputRequest::elicit(
                            "Name?",
                            json!({"properties": {"v": {"type": "string"}}}),
                        ),
                    )
                    .await?;
                Ok::<_, HandlerError>(ToolResult::text(format!(
                    "hi {}",
                    a["content"]["v"].as_str().unwrap_or("?")
                )))
            },
        ))
        .tool(
            Tool::new("roots")
                .description("Lists roots if it can")
                .handler(|_: NoArguments, ctx: RequestContext| async move {
                    Ok::<_, HandlerError>(ToolResult::text(
                        match ctx.ask("r", InputRequest::list_roots()).await {
                            Ok(a) => format!("roots {}", a["roots"]),
                            Err(e) => format!("no roots: {e}"),
                        },
                    ))
                }),
        )
        .tool(
            Tool::new("hold")
                .description("Takes a while")
                .handler(|_: NoArguments| async {
                    tokio::time::sleep(Duration::from_secs(3)).await;
                    "held"
                }),
        )
        .build()
        .unwrap()
}

/// The backend served with snodo's stdio framing on one end of a duplex per connection.
fn duplex(rt: Runtime) -> StreamFactory {
    Arc::new(move || {
        let rt = rt.clone();
        Box::pin(async move {
            let (near, far) = tokio::io::duplex(1 << 16);
            tokio::spawn(async move {
                let (r, w) = tokio::io::split(far);
                let _ = snodo::stdio::serve_stream(rt, r, w, snodo::stdio::StdioConfig::default())
                    .await;
            });
            let (r, w) = tokio::io::split(near);
            let r: Box<dyn tokio::io::AsyncRead + Send + Unpin> = Box::new(r);
            let w: Box<dyn tokio::io::AsyncWrite + Send + Unpin> = Box::new(w);
            Ok((r, w))
        })
    })
}

async fn setup() -> (Runtime, Mount) {
    let front = Runtime::builder("front", "1")
        .protocols(ALL.iter().copied())
        .declare_all_kinds()
        .legacy_server_requests(Duration::from_secs(10))
        .build()
        .unwrap();
    let source =
        McpSource::stream("s", duplex(backend())).protocol(Protocol::Pinned("2025-06-18".into()));
    let mount = Mount::new(&front, source, Transforms::new().namespace("s"));
    assert!(matches!(
        mount.ready(Duration::from_secs(10)).await,
        Status::Up { .. }
    ));
    (front, mount)
}

async fn caller(front: &Runtime, v: &str) -> Client {
    Client::builder("caller", "1")
        .protocol(Protocol::Pinned(v.into()))
        .on_elicitation(|_| async { Ok(json!({"action": "accept", "content": {"v": "Ada"}})) })
        .connect_runtime(front.clone())
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdio_backend_question_goes_to_the_only_call_in_flight() {
    let (front, _mount) = setup().await;
    for v in ["2026-07-28", "2025-11-25", "2025-06-18"] {
        let c = caller(&front, v).await;
        let r = c
            .call_tool("s_ask", json!({}))
            .await
            .map(|r| r.text())
            .map_err(|e| e.to_string());
        assert_eq!(r, Ok("hi Ada".into()), "front {v}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdio_backend_question_with_several_calls_in_flight_is_refused_clearly() {
    let (front, _mount) = setup().await;
    let c = caller(&front, "2025-06-18").await;
    let c2 = c.clone();
    let hold = tokio::spawn(async move { c2.call_tool("s_hold", json!({})).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let r = tokio::time::timeout(Duration::from_secs(5), c.call_tool("s_ask", json!({})))
        .await
        .expect("an answer, not a hang");
    let e = r.map(|r| r.text()).unwrap_err().to_string();
    assert!(e.contains("cannot tell whose"), "{e}");
    // The other call is unharmed, and once alone a question goes through again.
    assert_eq!(hold.await.unwrap().unwrap().text(), "held");
    assert_eq!(
        c.call_tool("s_ask", json!({})).await.unwrap().text(),
        "hi Ada"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parked_call_leaves_the_connection_to_the_next_question() {
    let (front, _mount) = setup().await;
    // A 2026-07-28 caller's call is parked, waiting for its answer...
    let modern = caller(&front, "2026-07-28").await;
    let round = support::first_round_of(&modern, "s_ask").await;
    let keep = snodo_client::CallOptions::default().keep_input_required();
    // ...so the next question on that connection is the other call's.
    let legacy = caller(&front, "2025-06-18").await;
    assert_eq!(
        legacy.call_tool("s_ask", json!({})).await.unwrap().text(),
        "hi Ada"
    );
    // The parked call goes on when its caller continues.
    let p = support::continuation(&round, "s_ask", "Bo");
    let done = modern.request_with("tools/call", p, &keep).await.unwrap();
    assert_eq!(done["content"][0]["text"], "hi Bo", "{done}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_the_caller_cannot_answer_is_refused_to_the_backend_and_the_call_goes_on() {
    let (front, _mount) = setup().await;
    // The caller answers elicitations only: no roots capability, on any revision.
    for v in ["2026-07-28", "2025-11-25", "2025-06-18"] {
        let c = caller(&front, v).await;
        let r = tokio::time::timeout(Duration::from_secs(5), c.call_tool("s_roots", json!({})))
            .await
            .expect("an answer, not a hang")
            .map(|r| r.text())
            .map_err(|e| e.to_string());
        let text = r.unwrap_or_else(|e| panic!("front {v}: the call failed: {e}"));
        assert!(text.starts_with("no roots:"), "front {v}: {text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parked_call_whose_connection_died_leaves_the_new_connection_alone() {
    let front = Runtime::builder("front", "1")
        .protocols(ALL.iter().copied())
        .declare_all_kinds()
        .legacy_server_requests(Duration::from_secs(10))
        .build()
        .unwrap();
    // Each connection's wire, to cut the first one.
    let served = Arc::new(std::sync::Mutex::new(Vec::new()));
    let rt = backend();
    let tasks = Arc::clone(&served);
    let factory: StreamFactory = Arc::new(move || {
        let (rt, tasks) = (rt.clone(), Arc::clone(&tasks));
        Box::pin(async move {
            let (near, mut far) = tokio::io::duplex(1 << 16);
            // The wire between the two: aborting it closes both ends at once.
            let (mut to_backend, backend_end) = tokio::io::duplex(1 << 16);
            tokio::spawn(async move {
                let (r, w) = tokio::io::split(backend_end);
                let _ = snodo::stdio::serve_stream(rt, r, w, snodo::stdio::StdioConfig::default())
                    .await;
            });
            let wire = tokio::spawn(async move {
                let _ = tokio::io::copy_bidirectional(&mut far, &mut to_backend).await;
            });
            tasks.lock().unwrap().push(wire.abort_handle());
            let (r, w) = tokio::io::split(near);
            let r: Box<dyn tokio::io::AsyncRead + Send + Unpin> = Box::new(r);
            let w: Box<dyn tokio::io::AsyncWrite + Send + Unpin> = Box::new(w);
            Ok((r, w))
        })
    });
    let source = McpSource::stream("s", factory).protocol(Protocol::Pinned("2025-06-18".into()));
    let health = source.health();
    let mount = Mount::new(&front, source, Transforms::new().namespace("s"));
    assert!(matches!(
        mount.ready(Duration::from_secs(10)).await,
        Status::Up { .. }
    ));
    // A 2026-07-28 caller's call is parked on the first connection…
    let modern = caller(&front, "2026-07-28").await;
    let round = support::first_round_of(&modern, "s_ask").await;
    // …which is cut; the next call finds it broken, and the pool starts a new one.
    served.lock().unwrap()[0].abort();
    let legacy = caller(&front, "2025-06-18").await;
    for _ in 0..100 {
        if legacy.call_tool("s_ask", json!({})).await.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(health.restarts(), 1, "{health:?}");
    // The continuation holds the new connection; the parked call failed on the old
    // one: an error naming the backend, and the new connection is not restarted.
    let p = support::continuation(&round, "s_ask", "Bo");
    let keep = snodo_client::CallOptions::default().keep_input_required();
    let e = modern
        .request_with("tools/call", p, &keep)
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("backend \"s\""), "{e}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        health.restarts(),
        1,
        "the new connection was restarted: {health:?}"
    );
    assert_eq!(
        legacy.call_tool("s_ask", json!({})).await.unwrap().text(),
        "hi Ada"
    );
}
