//! A backend's task tool is a task at the front: a 2026-07-28 caller with the tasks
//! extension gets a front task (its store), polls it and gets the result; its
//! `tasks/cancel` cancels the backend's task; an initialize-era caller waits for the
//! result. Against a hand-written 2025-11-25 task backend (every step checked on the
//! backend's side) and server-everything's `simulate-research-query`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod external;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use snodo::Runtime;
use snodo::protocol::ALL;
use snodo_client::{CallOptions, Client, Protocol};
use snodo_compose::{McpSource, Mount, Status, StreamFactory, Transforms};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};
use tokio::sync::mpsc;

const EXT: &str = "io.modelcontextprotocol/tasks";
const RELATED: &str = "io.modelcontextprotocol/related-task";

/// What the hand-written backend saw, and how its task stands.
#[derive(Default)]
struct Backend {
    /// Every method received, in order.
    methods: Vec<String>,
    /// `working`, `completed` or `cancelled`.
    status: String,
    /// The `tasks/result` request waiting for the end.
    waiting: Option<Value>,
    /// Set by the test: the task completes.
    finish: bool,
}

type Shared = Arc<Mutex<Backend>>;

fn reply(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// One message from the front's client, answered (or held: `tasks/result`).
fn answer(b: &Shared, m: &Value) -> Vec<Value> {
    let (Some(method), id) = (m["method"].as_str(), &m["id"]) else {
        return Vec::new();
    };
    let mut s = b.lock().unwrap();
    s.methods.push(method.to_owned());
    if id.is_null() {
        return Vec::new();
    }
    let task = |s: &Backend| {
        json!({"taskId": "b-1", "status": s.status, "statusMessage": format!("backend {}", s.status),
               "createdAt": "2026-01-01T00:00:00Z", "lastUpdatedAt": "2026-01-01T00:00:00Z",
               "ttl": 60000, "pollInterval": 100})
    };
    let out = match method {
        "initialize" => reply(
            id,
            json!({"protocolVersion": "2025-11-25",
                   "capabilities": {"tools": {}, "tasks": {"cancel": {}, "requests": {"tools": {"call": {}}}}},
                   "serverInfo": {"name": "legacy-tasks", "version": "1"}}),
        ),
        "tools/list" => reply(
            id,
            json!({"tools": [{"name": "crunch", "inputSchema": {"type": "object"},
                              "execution": {"taskSupport": "required"}}]}),
        ),
        "ping" => reply(id, json!({})),
        "tools/call" if m["params"]["task"].is_object() => {
            s.status = "working".into();
            reply(id, json!({"task": task(&s)}))
        }
        "tools/call" => json!({"jsonrpc": "2.0", "id": id,
                               "error": {"code": -32601, "message": "crunch is a task"}}),
        "tasks/get" => {
            if s.finish && s.status == "working" {
                s.status = "completed".into();
            }
            let mut out = vec![reply(id, task(&s))];
            if s.status == "completed" {
                if let Some(w) = s.waiting.take() {
                    // 2025-11-25: a task's result names its task in `_meta`.
                    out.push(reply(
                        &w,
                        json!({"content": [{"type": "text", "text": "crunched"}],
                               "_meta": {RELATED: {"taskId": "b-1"}, "x/kept": 1}}),
                    ));
                }
            }
            return out;
        }
        "tasks/result" => {
            s.waiting = Some(id.clone());
            return Vec::new();
        }
        "tasks/cancel" => {
            s.status = "cancelled".into();
            let mut out = vec![reply(id, task(&s))];
            if let Some(w) = s.waiting.take() {
                out.push(json!({"jsonrpc": "2.0", "id": w,
                                "error": {"code": -32603, "message": "the task was cancelled"}}));
            }
            return out;
        }
        _ => json!({"jsonrpc": "2.0", "id": id,
                    "error": {"code": -32601, "message": "Method not found"}}),
    };
    vec![out]
}

/// Serves the hand-written backend on one end of a duplex.
async fn serve_backend(b: Shared, io: DuplexStream) {
    let (r, mut w) = tokio::io::split(io);
    let mut lines = BufReader::new(r).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let Ok(m) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        for out in answer(&b, &m) {
            let mut bytes = serde_json::to_vec(&out).unwrap();
            bytes.push(b'\n');
            if w.write_all(&bytes).await.is_err() {
                return;
            }
        }
    }
}

fn legacy_task_backend(b: &Shared) -> McpSource {
    let b = Arc::clone(b);
    let factory: StreamFactory = Arc::new(move || {
        let b = Arc::clone(&b);
        Box::pin(async move {
            let (ours, theirs) = tokio::io::duplex(1 << 16);
            tokio::spawn(serve_backend(b, theirs));
            let (r, w) = tokio::io::split(ours);
            Ok((
                Box::new(r) as Box<dyn tokio::io::AsyncRead + Send + Unpin>,
                Box::new(w) as Box<dyn tokio::io::AsyncWrite + Send + Unpin>,
            ))
        })
    });
    McpSource::stream("lt", factory)
}

fn front() -> Runtime {
    Runtime::builder("front", "1")
        .protocols(ALL.iter().copied())
        .declare_all_kinds()
        .build()
        .unwrap()
}

/// A 2026-07-28 caller with the tasks extension, on the front's stdio (raw lines).
struct Caller {
    tx: tokio::io::WriteHalf<DuplexStream>,
    rx: mpsc::UnboundedReceiver<Value>,
}

impl Caller {
    fn start(front: Runtime) -> Self {
        let (ours, theirs) = tokio::io::duplex(1 << 16);
        let (sr, sw) = tokio::io::split(theirs);
        tokio::spawn(snodo::stdio::serve_stream(
            front,
            sr,
            sw,
            snodo::stdio::StdioConfig::default(),
        ));
        let (r, tx) = tokio::io::split(ours);
        let (out, rx) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut lines = BufReader::new(r).lines();
            while let Ok(Some(l)) = lines.next_line().await {
                if let Ok(v) = serde_json::from_str::<Value>(&l) {
                    let _ = out.send(v);
                }
            }
        });
        Self { tx, rx }
    }

    /// Sends a request with the 2026-07-28 `_meta` and the tasks extension; its answer.
    async fn ask(&mut self, id: u64, method: &str, mut params: Value) -> Value {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"extensions": {EXT: {}}},
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
        });
        let m = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let mut bytes = serde_json::to_vec(&m).unwrap();
        bytes.push(b'\n');
        self.tx.write_all(&bytes).await.unwrap();
        loop {
            let got = tokio::time::timeout(Duration::from_secs(20), self.rx.recv())
                .await
                .expect("an answer within 20 s")
                .expect("the front is serving");
            if got["id"] == json!(id) {
                return got;
            }
        }
    }

    /// Polls the front task until `pred` holds (within 20 s); its last `tasks/get`.
    async fn until(&mut self, task: &str, pred: impl Fn(&Value) -> bool) -> Value {
        let mut last = Value::Null;
        for n in 0..400 {
            last = self
                .ask(1000 + n, "tasks/get", json!({"taskId": task}))
                .await;
            if pred(&last["result"]) {
                return last["result"].clone();
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("task {task} never got there: {last}");
    }
}

async fn mounted(front: &Runtime, source: McpSource, ns: &str) -> Mount {
    let m = Mount::new(front, source, Transforms::new().namespace(ns));
    let st = m.ready(Duration::from_secs(20)).await;
    assert!(matches!(st, Status::Up { .. }), "{st:?}");
    m
}

fn created(r: &Value) -> String {
    assert_eq!(r["result"]["resultType"], "task", "{r}");
    r["result"]["taskId"].as_str().unwrap().to_owned()
}

/// `lt_crunch` of a mounted [`legacy_task_backend`] called as a task at the front: the
/// mount, the caller and the front task's id.
async fn crunching(b: &Shared) -> (Mount, Caller, String) {
    let front = front();
    let m = mounted(&front, legacy_task_backend(b), "lt").await;
    let mut c = Caller::start(front);
    let r = c
        .ask(
            1,
            "tools/call",
            json!({"name": "lt_crunch", "arguments": {}}),
        )
        .await;
    let id = created(&r);
    (m, c, id)
}

#[tokio::test]
async fn a_backend_task_is_a_front_task_polled_to_its_result() {
    let b = Shared::default();
    let (_m, mut c, id) = crunching(&b).await;
    // The backend's status message is the front task's.
    let t = c
        .until(&id, |t| t["statusMessage"] == "backend working")
        .await;
    assert_eq!(t["status"], "working", "{t}");
    b.lock().unwrap().finish = true;
    let t = c.until(&id, |t| t["status"] == "completed").await;
    assert_eq!(t["result"]["content"][0]["text"], "crunched", "{t}");
    // The backend's task id stays behind; the rest of its `_meta` comes along.
    assert!(t["result"]["_meta"].get(RELATED).is_none(), "{t}");
    assert_eq!(t["result"]["_meta"]["x/kept"], 1, "{t}");
    let seen = b.lock().unwrap().methods.clone();
    assert!(
        seen.contains(&"tasks/result".to_owned()) && !seen.contains(&"tasks/cancel".to_owned()),
        "{seen:?}"
    );
}

#[tokio::test]
async fn cancelling_the_front_task_cancels_the_backend_task() {
    let b = Shared::default();
    let (_m, mut c, id) = crunching(&b).await;
    c.until(&id, |t| t["statusMessage"] == "backend working")
        .await;
    let ack = c.ask(2, "tasks/cancel", json!({"taskId": id})).await;
    assert!(ack.get("result").is_some(), "{ack}");
    let t = c.until(&id, |t| t["status"] == "cancelled").await;
    assert!(t.get("result").is_none(), "{t}");
    for _ in 0..200 {
        if b.lock().unwrap().status == "cancelled" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let s = b.lock().unwrap();
    assert_eq!(s.status, "cancelled", "{:?}", s.methods);
}

#[tokio::test]
async fn an_initialize_era_caller_waits_for_the_backend_task_result() {
    let b = Shared::default();
    b.lock().unwrap().finish = true;
    let front = front();
    let _m = mounted(&front, legacy_task_backend(&b), "lt").await;
    for v in ["2025-11-25", "2025-06-18"] {
        let c = Client::builder("t", "1")
            .protocol(Protocol::Pinned(v.into()))
            .connect_runtime(front.clone())
            .await
            .unwrap();
        let r = c
            .call_tool_raw("lt_crunch", json!({}), &CallOptions::default())
            .await
            .unwrap();
        assert_eq!(r["content"][0]["text"], "crunched", "{v}: {r}");
        assert!(r["_meta"].get(RELATED).is_none(), "{v}: {r}");
    }
}

#[tokio::test]
async fn server_everything_research_query_is_a_front_task() {
    let Some(ev) = external::server_everything() else {
        return;
    };
    let front = front();
    let ev = McpSource::stdio("ev", "node", [ev.display().to_string(), "stdio".to_owned()]);
    let _m = mounted(&front, ev, "ev").await;
    let mut c = Caller::start(front.clone());
    let args = json!({"name": "ev_simulate-research-query", "arguments": {"topic": "otters"}});
    let id = created(&c.ask(1, "tools/call", args.clone()).await);
    let t = c.until(&id, |t| t["status"] == "completed").await;
    let text = t["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("Research Report: otters"), "{t}");
    assert!(t["result"]["_meta"].get(RELATED).is_none(), "{t}");
    // Cancelled while it works: the front task ends cancelled.
    let id = created(&c.ask(2, "tools/call", args).await);
    let ack = c.ask(3, "tasks/cancel", json!({"taskId": id})).await;
    assert!(ack.get("result").is_some(), "{ack}");
    let t = c.until(&id, |t| t["status"] == "cancelled").await;
    assert!(t.get("result").is_none(), "{t}");
    // An initialize-era caller gets the result of the required task in one call.
    let legacy = Client::builder("t", "1")
        .protocol(Protocol::Pinned("2025-11-25".into()))
        .connect_runtime(front)
        .await
        .unwrap();
    let r = legacy
        .call_tool("ev_simulate-research-query", json!({"topic": "beavers"}))
        .await
        .unwrap();
    assert!(
        r.text().contains("Research Report: beavers"),
        "{}",
        r.text()
    );
}
