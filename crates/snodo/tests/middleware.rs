//! Middleware at the wire, over HTTP (a loopback socket) and stdio (a socket pair):
//! order, short-circuits with a result and with an error, runtime vs component layers, a
//! panicking layer, progress through a layer, and tasks-mode calls.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use snodo::http::{HttpConfig, Server};
use snodo::middleware::{Middleware, Next, Outcome, Reply, Request};
use snodo::protocol::{V2025_06_18, V2026_07_28};
use snodo::stdio::StdioConfig;
use snodo::tasks::TaskSupport;
use snodo::{HandlerError, NoArguments, RpcError, Runtime, Tool, ToolResult};
use snodo_testkit::errors::assert_http_error;
use snodo_testkit::schema::assert_valid;
use snodo_testkit::{Lines, R2025_06_18, R2026_07_28, Revision};
use tokio::net::UnixStream;
use tokio::sync::oneshot;

type Log = Arc<Mutex<Vec<String>>>;

/// Records `name>method:target` on the way in and `<name` on the way out.
struct Trace {
    name: &'static str,
    log: Log,
}

impl Middleware for Trace {
    async fn call(&self, request: Request<'_>, next: Next<'_>) -> Outcome {
        let entry = format!(
            "{}>{}:{}",
            self.name,
            request.method(),
            request.target().unwrap_or("-")
        );
        self.log.lock().unwrap().push(entry);
        let out = next.run(request).await;
        self.log.lock().unwrap().push(format!("<{}", self.name));
        out
    }
}

/// Answers calls of `shortcut` itself, refuses `forbidden` and `failing_layer`,
/// panics on `boom`; passes the rest on.
struct Gate;

impl Middleware for Gate {
    async fn call(&self, request: Request<'_>, next: Next<'_>) -> Outcome {
        match request.target() {
            Some("shortcut") => {
                let result = json!({"content": [{"type": "text", "text": "from the layer"}], "isError": false});
                let Value::Object(result) = result else {
                    unreachable!()
                };
                Ok(Reply::new(result))
            }
            Some("forbidden") => Err(RpcError::invalid_params("refused by the gate").into()),
            Some("failing_layer") => Err(HandlerError::new("the gate failed")),
            Some("boom") => panic!("the gate panicked"),
            _ => next.run(request).await,
        }
    }
}

struct Fixture {
    runtime: Runtime,
    log: Log,
    calls: Arc<AtomicUsize>,
}

fn fixture() -> Fixture {
    let log = Log::default();
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = |name: &str| {
        let calls = Arc::clone(&calls);
        Tool::new(name)
            .description("counts its calls")
            .handler(move |_: NoArguments| {
                let calls = Arc::clone(&calls);
                async move {
                    calls.fetch_add(1, Ordering::SeqCst);
                    ToolResult::text("from the tool")
                }
            })
    };
    let runtime = Runtime::builder("middleware-test", "1.0.0")
        .protocols([&V2026_07_28, &V2025_06_18])
        .layer(Trace {
            name: "a",
            log: Arc::clone(&log),
        })
        .layer(Trace {
            name: "b",
            log: Arc::clone(&log),
        })
        .layer(Gate)
        .tool(counted("plain"))
        .tool(counted("layered").layer(Trace {
            name: "c",
            log: Arc::clone(&log),
        }))
        .tool(counted("shortcut"))
        .tool(counted("forbidden"))
        .tool(counted("failing_layer"))
        .tool(counted("boom"))
        .tool(
            Tool::new("progress")
                .description("Reports progress 0/50/100")
                .layer(Trace {
                    name: "p",
                    log: Arc::clone(&log),
                })
                .handler(|_: NoArguments, ctx: snodo::RequestContext| async move {
                    for p in [0.0, 50.0, 100.0] {
                        ctx.progress(p, Some(100.0), None).await;
                    }
                    ToolResult::text("done")
                }),
        )
        .build()
        .unwrap();
    Fixture {
        runtime,
        log,
        calls,
    }
}

fn call(rev: Revision, id: u64, name: &str) -> snodo_testkit::Request {
    rev.request("tools/call")
        .id(id)
        .params(json!({"name": name, "arguments": {}}))
}

struct Http {
    addr: SocketAddr,
    _stop: oneshot::Sender<()>,
}

async fn http(runtime: Runtime) -> Http {
    let server = Server::bind(
        runtime,
        "127.0.0.1:0".parse().unwrap(),
        HttpConfig::default(),
    )
    .await
    .unwrap();
    let addr = server.local_addr().unwrap();
    let (stop, rx) = oneshot::channel::<()>();
    tokio::spawn(server.run_until(async {
        let _ = rx.await;
    }));
    Http { addr, _stop: stop }
}

/// The fixture, served over HTTP.
async fn served() -> (Fixture, Http) {
    let f = fixture();
    let s = http(f.runtime.clone()).await;
    (f, s)
}

type Stdio = Lines<tokio::net::unix::OwnedReadHalf, tokio::net::unix::OwnedWriteHalf>;

fn stdio(runtime: Runtime) -> Stdio {
    let (ours, theirs) = UnixStream::pair().unwrap();
    let (read, write) = theirs.into_split();
    tokio::spawn(snodo::stdio::serve_stream(
        runtime,
        read,
        write,
        StdioConfig::default(),
    ));
    let (read, write) = ours.into_split();
    Lines::new(read, write)
}

/// The final message answering `request` over stdio (notifications before it skipped).
async fn over_stdio(lines: &mut Stdio, request: &snodo_testkit::Request) -> Value {
    lines.request(request).await;
    loop {
        let m = lines.recv().await;
        if m.get("id").is_some() {
            return m;
        }
    }
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

#[tokio::test]
async fn layers_run_in_order_runtime_outside_component() {
    let (f, s) = served().await;
    let r = call(R2026_07_28, 1, "layered").post(s.addr).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_valid("2026-07-28", "tools/call", &r);
    assert_eq!(text(&r.result()), "from the tool");
    assert_eq!(
        *f.log.lock().unwrap(),
        [
            "a>tools/call:layered",
            "b>tools/call:layered",
            "c>tools/call:layered",
            "<c",
            "<b",
            "<a"
        ]
    );
    // A component layer runs for its own component only; runtime layers see every method.
    f.log.lock().unwrap().clear();
    let r = call(R2026_07_28, 2, "plain").post(s.addr).await;
    assert_eq!(text(&r.result()), "from the tool");
    let r = R2026_07_28.request("tools/list").id(3).post(s.addr).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        *f.log.lock().unwrap(),
        [
            "a>tools/call:plain",
            "b>tools/call:plain",
            "<b",
            "<a",
            "a>tools/list:-",
            "b>tools/list:-",
            "<b",
            "<a"
        ]
    );
    // Same order over stdio.
    f.log.lock().unwrap().clear();
    let mut lines = stdio(f.runtime.clone());
    let m = over_stdio(&mut lines, &call(R2026_07_28, 4, "layered")).await;
    assert_eq!(text(&m["result"]), "from the tool", "{m}");
    assert_eq!(f.log.lock().unwrap().len(), 6);
    assert_eq!(f.calls.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn a_layer_answers_with_a_result_in_the_dialects_envelope() {
    let (f, s) = served().await;
    for rev in [R2026_07_28, R2025_06_18] {
        let r = call(rev, 1, "shortcut").post(s.addr).await;
        assert_eq!(r.status, 200, "{rev}: {}", r.text());
        assert_valid(rev.version(), "tools/call", &r);
        let result = r.result();
        assert_eq!(text(&result), "from the layer", "{rev}");
        if rev.is_stateless() {
            assert_eq!(result["resultType"], "complete", "{result}");
            assert!(result["_meta"]["io.modelcontextprotocol/serverInfo"].is_object());
        } else {
            assert!(result.get("resultType").is_none(), "{result}");
        }
    }
    let mut lines = stdio(f.runtime.clone());
    let m = over_stdio(&mut lines, &call(R2026_07_28, 2, "shortcut")).await;
    assert_eq!(text(&m["result"]), "from the layer", "{m}");
    assert_eq!(f.calls.load(Ordering::SeqCst), 0, "the tool never ran");
}

#[tokio::test]
async fn a_layer_refuses_with_an_error_mapped_like_a_handlers() {
    let (f, s) = served().await;
    for rev in [R2026_07_28, R2025_06_18] {
        let r = call(rev, 1, "forbidden").post(s.addr).await;
        let e = assert_http_error(&r, rev, "tools/call", &json!(1), -32602);
        assert_eq!(e["message"], "refused by the gate");
        let r = call(rev, 2, "failing_layer").post(s.addr).await;
        let e = assert_http_error(&r, rev, "tools/call", &json!(2), -32603);
        assert_eq!(e["message"], "the gate failed");
    }
    let mut lines = stdio(f.runtime.clone());
    let m = over_stdio(&mut lines, &call(R2026_07_28, 3, "forbidden")).await;
    assert_eq!(m["error"]["code"], -32602, "{m}");
    assert_eq!(f.calls.load(Ordering::SeqCst), 0, "the tool never ran");
}

#[tokio::test]
async fn a_panicking_layer_fails_its_request_only() {
    let (f, s) = served().await;
    for rev in [R2026_07_28, R2025_06_18] {
        let r = call(rev, 1, "boom").post(s.addr).await;
        assert_http_error(&r, rev, "tools/call", &json!(1), -32603);
        let r = call(rev, 2, "plain").post(s.addr).await;
        assert_eq!(
            text(&r.result()),
            "from the tool",
            "{rev}: alive after the panic"
        );
    }
    let mut lines = stdio(f.runtime.clone());
    let m = over_stdio(&mut lines, &call(R2026_07_28, 3, "boom")).await;
    assert_eq!(m["error"]["code"], -32603, "{m}");
    let m = over_stdio(&mut lines, &call(R2026_07_28, 4, "plain")).await;
    assert_eq!(text(&m["result"]), "from the tool", "{m}");
}

#[tokio::test]
async fn progress_flows_through_layers() {
    let (f, s) = served().await;
    let r = call(R2026_07_28, 5, "progress")
        .meta("progressToken", json!("tok"))
        .post(s.addr)
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    let events = r.events();
    assert_eq!(events.len(), 4, "{events:?}");
    for n in &events[..3] {
        assert_eq!(n["method"], "notifications/progress", "{n}");
        assert_eq!(n["params"]["progressToken"], "tok", "{n}");
    }
    assert_eq!(text(&events[3]["result"]), "done");
    let mut lines = stdio(f.runtime.clone());
    lines
        .request(&call(R2026_07_28, 9, "progress").meta("progressToken", json!("tok")))
        .await;
    for _ in 0..3 {
        let n = lines.recv().await;
        assert_eq!(n["method"], "notifications/progress", "{n}");
    }
    let m = lines.recv().await;
    assert_eq!(text(&m["result"]), "done", "{m}");
    let log = f.log.lock().unwrap();
    assert_eq!(log.iter().filter(|l| l.starts_with("p>")).count(), 2);
}

/// Counts the requests it sees per method, and refuses task calls of `closed`.
struct TaskWatch(Log);

impl Middleware for TaskWatch {
    async fn call(&self, request: Request<'_>, next: Next<'_>) -> Outcome {
        let seen = format!("{} {}", request.method(), request.target().unwrap_or("-"));
        self.0.lock().unwrap().push(seen);
        if request.target() == Some("closed") {
            return Err(RpcError::invalid_params("closed by the layer").into());
        }
        next.run(request).await
    }
}

#[tokio::test]
async fn layers_see_tasks_mode_calls_and_task_operations() {
    let log = Log::default();
    let task_tool = |name: &str| {
        Tool::new(name)
            .description("runs as a task")
            .task(TaskSupport::Optional)
            .handler(|_: NoArguments| async {
                tokio::time::sleep(Duration::from_millis(20)).await;
                ToolResult::text("task done")
            })
    };
    let runtime = Runtime::builder("middleware-tasks", "1.0.0")
        .layer(TaskWatch(Arc::clone(&log)))
        .tool(task_tool("work"))
        .tool(task_tool("closed"))
        .build()
        .unwrap();
    let s = http(runtime).await;
    let caps = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    let r = call(R2026_07_28, 1, "work")
        .capabilities(caps.clone())
        .post(s.addr)
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let created = r.result();
    assert_eq!(created["resultType"], "task", "passed through: {created}");
    let id = created["taskId"].as_str().unwrap().to_owned();
    let mut status = Value::Null;
    for _ in 0..200 {
        let r = R2026_07_28
            .request("tasks/get")
            .id(2)
            .capabilities(caps.clone())
            .params(json!({"taskId": id}))
            .header("Mcp-Name", &id)
            .post(s.addr)
            .await;
        status = r.result();
        if status["status"] == "completed" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(status["status"], "completed", "{status}");
    let r = call(R2026_07_28, 3, "closed")
        .capabilities(caps)
        .post(s.addr)
        .await;
    assert_http_error(&r, R2026_07_28, "tools/call", &json!(3), -32602);
    let log = log.lock().unwrap();
    assert_eq!(log.first().map(String::as_str), Some("tools/call work"));
    assert!(log.contains(&format!("tasks/get {id}")), "{log:?}");
    assert_eq!(log.last().map(String::as_str), Some("tools/call closed"));
}

#[tokio::test]
async fn cancellation_reaches_a_handler_behind_a_layer() {
    let log = Log::default();
    let (seen_tx, seen_rx) = oneshot::channel::<()>();
    let seen = Arc::new(Mutex::new(Some(seen_tx)));
    let runtime = Runtime::builder("middleware-cancel", "1.0.0")
        .layer(Trace {
            name: "a",
            log: Arc::clone(&log),
        })
        .tool(
            Tool::new("wait")
                .description("waits until cancelled")
                .layer(Trace {
                    name: "w",
                    log: Arc::clone(&log),
                })
                .handler(move |_: NoArguments, ctx: snodo::RequestContext| {
                    let seen = Arc::clone(&seen);
                    async move {
                        ctx.cancellation().cancelled().await;
                        if let Some(tx) = seen.lock().unwrap().take() {
                            let _ = tx.send(());
                        }
                        ToolResult::text("cancelled")
                    }
                }),
        )
        .build()
        .unwrap();
    let mut lines = stdio(runtime);
    lines.request(&call(R2026_07_28, 7, "wait")).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    lines
        .send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}}))
        .await;
    tokio::time::timeout(Duration::from_secs(5), seen_rx)
        .await
        .expect("the handler saw the cancellation")
        .unwrap();
    // The layers saw the call on its way in.
    assert_eq!(
        log.lock().unwrap()[..2],
        ["a>tools/call:wait", "w>tools/call:wait"]
    );
    // The server goes on.
    let m = over_stdio(&mut lines, &R2026_07_28.request("ping").id(8)).await;
    assert_eq!(m["id"], 8, "{m}");
}
