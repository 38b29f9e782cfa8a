//! Input rounds through a mount, at the wire (the front served over HTTP on a real
//! socket): a 2026-07-28 backend's `input_required` and an initialize-era backend's
//! server requests reach the front caller on every front dialect (a 2026-07-28 one as
//! `input_required` rounds, a legacy one as server requests); a 2026-07-28 backend's
//! round continues on another front instance sharing the state key; an initialize-era
//! backend's parked call, continued elsewhere, gets a clear error without a bus, and is
//! continued on the instance that holds it when the fronts share a bus (and a clear
//! error when that bus is down or the holder does not listen).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use snodo::bus::contract::Faulty;
use snodo::bus::{Bus, BusState, MemoryBus};
use snodo::http::{HttpConfig, Server};
use snodo::protocol::ALL;
use snodo::{HandlerError, InputRequest, NoArguments, RequestContext, Runtime, Tool, ToolResult};
use snodo_client::{CallOptions, Client, ClientError, Protocol};
use snodo_compose::{McpSource, Mount, Status, Transforms};
use tokio::sync::oneshot;

const KEY: &[u8] = b"shared state key of every front instance";
const FRONTS: [&str; 3] = ["2026-07-28", "2025-11-25", "2025-06-18"];

/// A backend whose tools ask: twice in a row, and three things at once.
fn backend() -> Runtime {
    Runtime::builder("asking", "1")
        .protocols(ALL.iter().copied())
        .legacy_server_requests(Duration::from_secs(10))
        .tool(
            Tool::new("ask_twice")
                .description("Asks two questions, one after the other")
                .handler(|_: NoArguments, ctx: RequestContext| async move {
                    let form = |m: &str| {
                        InputRequest::elicit(m, json!({"properties": {"v": {"type": "string"}}}))
                    };
                    let first = ctx.ask("q", form("First?")).await?;
                    // The same key again: a new round must not reuse the first answer.
                    let second = ctx.ask("q2", form("Second?")).await?;
                    Ok::<_, HandlerError>(ToolResult::text(format!(
                        "{} {}",
                        first["content"]["v"].as_str().unwrap_or("?"),
                        second["content"]["v"].as_str().unwrap_or("?")
                    )))
                }),
        )
        .tool(
            Tool::new("ask_all")
                .description("Asks for a sample and the roots")
                .handler(|_: NoArguments, ctx: RequestContext| async move {
                    let a = ctx
                        .ask_all([
                            ("sample".to_owned(), InputRequest::sample("Hi?", 10)),
                            ("roots".to_owned(), InputRequest::list_roots()),
                        ])
                        .await?;
                    Ok::<_, HandlerError>(ToolResult::text(format!(
                        "{} / {}",
                        a["sample"]["content"]["text"].as_str().unwrap_or("?"),
                        a["roots"]["roots"][0]["uri"].as_str().unwrap_or("?")
                    )))
                }),
        )
        .build()
        .unwrap()
}

/// A front instance serving `source` under `b_`, on a real socket.
struct Front {
    addr: SocketAddr,
    _mount: Mount,
    stop: Option<oneshot::Sender<()>>,
}

impl Drop for Front {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
    }
}

async fn front(source: McpSource) -> Front {
    front_on(source, None).await
}

/// A front instance on `bus`, if given.
async fn front_on(source: McpSource, bus: Option<Arc<dyn Bus>>) -> Front {
    let mut b = Runtime::builder("front", "1")
        .protocols(ALL.iter().copied())
        .declare_all_kinds()
        .legacy_server_requests(Duration::from_secs(10))
        .request_state_key(KEY);
    if let Some(bus) = bus {
        b = b.bus(bus);
    }
    let rt = b.build().unwrap();
    let mount = Mount::new(&rt, source, Transforms::new().namespace("b"));
    assert!(matches!(
        mount.ready(Duration::from_secs(10)).await,
        Status::Up { .. }
    ));
    let server = Server::bind(rt, "127.0.0.1:0".parse().unwrap(), HttpConfig::default())
        .await
        .unwrap();
    let addr = server.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(server.run_until(async move {
        let _ = stopped.await;
    }));
    Front {
        addr,
        _mount: mount,
        stop: Some(stop),
    }
}

/// The backend through a connection of a front instance's own (the backend is one
/// server, or instances sharing its own state key).
fn backend_2026(rt: &Runtime) -> McpSource {
    McpSource::runtime("b", rt.clone())
}

fn backend_legacy(rt: &Runtime) -> McpSource {
    McpSource::runtime("b", rt.clone()).protocol(Protocol::Pinned("2025-06-18".into()))
}

/// A front caller speaking `version` that answers every question.
async fn caller(f: &Front, version: &str) -> Client {
    Client::builder("caller", "1")
        .protocol(Protocol::Pinned(version.into()))
        .on_elicitation(|p: Value| async move {
            let m = p["message"].as_str().unwrap_or_default().trim_end_matches('?').to_lowercase();
            Ok(json!({"action": "accept", "content": {"v": m}}))
        })
        .on_sampling(|_| async { Ok(json!({"role": "assistant", "content": {"type": "text", "text": "hello"}, "model": "m"})) })
        .on_roots(|_| async { Ok(json!({"roots": [{"uri": "file:///work", "name": "work"}]})) })
        .connect_http(&format!("http://{}/mcp", f.addr))
        .await
        .unwrap()
}

async fn both_tools(f: &Front, what: &str) {
    for v in FRONTS {
        let c = caller(f, v).await;
        let r = c.call_tool("b_ask_twice", json!({})).await;
        assert_eq!(
            r.map(|r| r.text()).map_err(|e| e.to_string()),
            Ok("first second".into()),
            "{what}, front {v}"
        );
        let r = c.call_tool("b_ask_all", json!({})).await;
        assert_eq!(
            r.map(|r| r.text()).map_err(|e| e.to_string()),
            Ok("hello / file:///work".into()),
            "{what}, front {v}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_backend_input_round_is_the_front_callers_on_every_front_dialect() {
    let f = front(backend_2026(&backend())).await;
    both_tools(&f, "2026-07-28 backend").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_backend_server_request_reaches_the_front_caller_on_every_front_dialect() {
    let f = front(backend_legacy(&backend())).await;
    both_tools(&f, "2025-06-18 backend").await;
}

/// The first round of `b_ask_twice` from `a`, kept as it is.
async fn first_round(a: &Front) -> Value {
    let c = caller(a, "2026-07-28").await;
    let r = support::first_round_of(&c, "b_ask_twice").await;
    let asked: Vec<&Value> = r["inputRequests"].as_object().unwrap().values().collect();
    assert_eq!(asked.len(), 1, "{r}");
    assert_eq!(asked[0]["method"], "elicitation/create", "{r}");
    assert_eq!(asked[0]["params"]["message"], "First?", "{r}");
    r
}

async fn continue_on(f: &Front, round: &Value, answer: &str) -> Result<Value, ClientError> {
    let c = caller(f, "2026-07-28").await;
    let keep = CallOptions::default().keep_input_required();
    let p = support::continuation(round, "b_ask_twice", answer);
    c.request_with("tools/call", p, &keep).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_backend_round_continues_on_another_front_instance() {
    let rt = backend();
    let (a, b) = (
        front(backend_2026(&rt)).await,
        front(backend_2026(&rt)).await,
    );
    let one = first_round(&a).await;
    // The backend's own requestState is not visible to the front caller.
    assert!(!one.to_string().contains("\"b\""), "{one}");
    let two = continue_on(&b, &one, "one").await.unwrap();
    assert_eq!(two["resultType"], "input_required", "{two}");
    let asked: Vec<&Value> = two["inputRequests"].as_object().unwrap().values().collect();
    assert_eq!(asked[0]["params"]["message"], "Second?", "{two}");
    let done = continue_on(&a, &two, "two").await.unwrap();
    assert_eq!(done["content"][0]["text"], "one two", "{done}");
    // An altered requestState is refused by the front, before the backend sees it.
    let mut bad = one.clone();
    bad["requestState"] = json!(format!("{}x", one["requestState"].as_str().unwrap()));
    let e = continue_on(&b, &bad, "one").await.unwrap_err();
    assert!(e.to_string().contains("Invalid requestState"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_backend_call_parked_on_one_instance_is_refused_clearly_on_another() {
    let rt = backend();
    let (a, b) = (
        front(backend_legacy(&rt)).await,
        front(backend_legacy(&rt)).await,
    );
    let one = first_round(&a).await;
    // Another instance opens the state (same key) but does not hold the call: an error
    // that says so, at once.
    let e = tokio::time::timeout(Duration::from_secs(5), continue_on(&b, &one, "one"))
        .await
        .expect("an answer, not a hang")
        .unwrap_err();
    assert!(e.to_string().contains("another instance"), "{e}");
    // The instance holding it continues the call; nothing was lost.
    let two = continue_on(&a, &one, "one").await.unwrap();
    assert_eq!(two["resultType"], "input_required", "{two}");
    let done = continue_on(&a, &two, "two").await.unwrap();
    assert_eq!(done["content"][0]["text"], "one two", "{done}");
    // Continued once: the same state again is refused (the call went on).
    let e = continue_on(&a, &one, "one").await.unwrap_err();
    assert!(
        e.to_string().contains("expired or was already continued"),
        "{e}"
    );
}

/// Two front instances on one bus, each with its own connection to the same legacy
/// backend (as two gateways, each running its own stdio child).
async fn two_on_a_bus(deaf_a: bool) -> (Front, Front, Arc<Faulty>, Arc<Faulty>) {
    let rt = backend();
    let shared = Arc::new(MemoryBus::new());
    // Each instance's connection to the shared bus: its state set by the test, and A's
    // mailbox, when `deaf_a`, hearing nothing (an instance that stopped listening).
    let link = || Arc::new(Faulty::own_state(shared.clone(), BusState::Up));
    let (la, lb) = (link(), link());
    if deaf_a {
        la.deafen();
    }
    let a = front_on(backend_legacy(&rt), Some(la.clone())).await;
    let b = front_on(backend_legacy(&rt), Some(lb.clone())).await;
    (a, b, la, lb)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_backend_call_parked_on_one_instance_continues_on_another_over_the_bus() {
    let (a, b, _, _) = two_on_a_bus(false).await;
    let one = first_round(&a).await;
    // Only a state the front's key opens is carried: an altered one is refused on B.
    let mut bad = one.clone();
    bad["requestState"] = json!(format!("{}x", one["requestState"].as_str().unwrap()));
    let e = continue_on(&b, &bad, "one").await.unwrap_err();
    assert!(e.to_string().contains("Invalid requestState"), "{e}");
    // An answer too large to carry on the bus: said so, and the call stays parked.
    let e = continue_on(&b, &one, &"x".repeat(1_500_000))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("at most 1048576"), "{e}");
    // B holds nothing: the answer is carried to A, whose backend call asks again
    // (parked again on A); B answers with that round.
    let two = continue_on(&b, &one, "one").await.unwrap();
    assert_eq!(two["resultType"], "input_required", "{two}");
    let asked: Vec<&Value> = two["inputRequests"].as_object().unwrap().values().collect();
    assert_eq!(asked[0]["params"]["message"], "Second?", "{two}");
    // Continued on B again: the backend's result, through A.
    let done = continue_on(&b, &two, "two").await.unwrap();
    assert_eq!(done["content"][0]["text"], "one two", "{done}");
    // Continued once: the same state again is refused, by A, through B.
    let e = continue_on(&b, &one, "one").await.unwrap_err();
    assert!(
        e.to_string().contains("expired or was already continued"),
        "{e}"
    );
    // A round continued on the instance that holds it still works as before.
    let one = first_round(&a).await;
    let two = continue_on(&b, &one, "uno").await.unwrap();
    let done = continue_on(&a, &two, "dos").await.unwrap();
    assert_eq!(done["content"][0]["text"], "uno dos", "{done}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_continuation_whose_holder_is_unreachable_gets_a_clear_error_in_time() {
    // The bus down on B: at once, and the call stays parked on A.
    let (a, b, _, lb) = two_on_a_bus(false).await;
    let one = first_round(&a).await;
    lb.set_state(BusState::Down);
    let t = Instant::now();
    let e = continue_on(&b, &one, "one").await.unwrap_err();
    assert!(e.to_string().contains("bus is down"), "{e}");
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    lb.set_state(BusState::Up);
    let two = continue_on(&b, &one, "one").await.unwrap();
    assert_eq!(two["resultType"], "input_required", "{two}");

    // A holder that does not listen: a clear error within the accept time.
    let (a, b, _, _) = two_on_a_bus(true).await;
    let one = first_round(&a).await;
    let t = Instant::now();
    let e = continue_on(&b, &one, "one").await.unwrap_err();
    assert!(e.to_string().contains("went silent"), "{e}");
    let waited = t.elapsed();
    assert!(
        waited >= snodo::bus::ACCEPT_WITHIN && waited < snodo::bus::ACCEPT_WITHIN * 2,
        "{waited:?}"
    );
}
