//! Two snodo runtimes sharing a bus, each behind its own HTTP server on loopback: what
//! one instance does reaches the other, at the wire. Every scenario runs on one
//! `MemoryBus` (always), on PostgreSQL (`SNODO_TEST_PG_URL`) and on Redis
//! (`SNODO_TEST_REDIS_URL`), each instance with a bus handle of its own.

mod support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use snodo::bus::{
    Address, Bus, BusError, BusState, Count, Event, Fanout, InstanceId, MemoryBus, Message,
    Subscription,
};
use snodo::http::{BearerTokens, HttpConfig, Server};

use snodo::protocol::{V2025_11_25, V2026_07_28};
use snodo::{NoArguments, Principal, RateLimit, RequestContext, Runtime, Tool, ToolResult};
use snodo_bus::{PgBusOptions, RedisBusOptions};
use snodo_testkit::http::{Stream, post};
use tokio::sync::oneshot;

const MODERN: &str = "2026-07-28";
const LEGACY: &str = "2025-11-25";
const WAIT: Duration = Duration::from_secs(5);

/// One instance: its runtime and the address of its HTTP server (stopped on drop).
struct Instance {
    runtime: Runtime,
    addr: SocketAddr,
    _stop: oneshot::Sender<()>,
}

fn runtime(bus: Arc<dyn Bus>, cancelled: Arc<tokio::sync::Notify>) -> Runtime {
    Runtime::builder("bus-test", "1.0.0")
        .protocols([&V2026_07_28, &V2025_11_25])
        .list_changed(false)
        .legacy_server_requests(WAIT)
        .bus(bus)
        .tool(
            Tool::new("limited")
                .description("Five a minute, deployment-wide")
                .rate_limit(RateLimit::per_principal(5, Duration::from_secs(60)))
                .handler(|_: NoArguments| async {
                    Ok::<_, snodo::HandlerError>(ToolResult::text("ok"))
                }),
        )
        .tool(
            Tool::new("wait")
                .description("Waits to be cancelled")
                .handler(move |_: NoArguments, ctx: RequestContext| {
                    let cancelled = Arc::clone(&cancelled);
                    async move {
                        tokio::select! {
                            () = ctx.cancellation().cancelled() => cancelled.notify_one(),
                            () = tokio::time::sleep(WAIT) => {}
                        }
                        Ok::<_, snodo::HandlerError>(ToolResult::text("not cancelled"))
                    }
                }),
        )
        .tool(Tool::new("ask").description("Asks a name").handler(
            |_: NoArguments, ctx: RequestContext| async move {
                let answer = ctx
                    .ask(
                        "name",
                        snodo::InputRequest::elicit("Name?", json!({"type": "object"})),
                    )
                    .await?;
                Ok::<_, snodo::HandlerError>(ToolResult::text(format!(
                    "Hello, {}!",
                    answer["content"]["name"].as_str().unwrap_or("?")
                )))
            },
        ))
        .build()
        .unwrap_or_else(|e| panic!("build: {e}"))
}

/// A modern runtime with listen streams (list changes and resource subscriptions).
fn listening(bus: Arc<dyn Bus>) -> Runtime {
    Runtime::builder("bus-test", "1.0.0")
        .list_changed(true)
        .resource_subscriptions(true)
        .bus(bus)
        .tool(Tool::new("t").handler(|_: NoArguments| async {
            Ok::<_, snodo::HandlerError>(ToolResult::text("t"))
        }))
        .build()
        .unwrap_or_else(|e| panic!("build: {e}"))
}

async fn start(runtime: Runtime) -> Instance {
    let config = HttpConfig::default().authenticator(
        BearerTokens::new("https://mcp.example.com/.well-known/oauth-protected-resource")
            .token("alpha", Principal::new("alice")),
    );
    let server = Server::bind(
        runtime.clone(),
        "127.0.0.1:0".parse().unwrap_or_else(|e| panic!("{e}")),
        config,
    )
    .await
    .unwrap_or_else(|e| panic!("bind: {e}"));
    let addr = server.local_addr().unwrap_or_else(|e| panic!("{e}"));
    let (tx, rx) = oneshot::channel::<()>();
    tokio::spawn(
        server
            .drain_timeout(Duration::from_millis(200))
            .run_until(async {
                let _ = rx.await;
            }),
    );
    Instance {
        runtime,
        addr,
        _stop: tx,
    }
}

fn modern_body(id: i64, method: &str, params: Value) -> String {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

async fn listen(at: SocketAddr, filter: Value) -> Stream {
    let body = modern_body(1, "subscriptions/listen", json!({"notifications": filter}));
    let headers = [
        ("MCP-Protocol-Version", MODERN),
        ("Mcp-Method", "subscriptions/listen"),
        ("Authorization", "Bearer alpha"),
    ];
    let mut s = Stream::open(at, &headers, &body).await;
    assert_eq!(s.status, 200, "{}", s.head);
    let ack = s
        .next(WAIT)
        .await
        .unwrap_or_else(|| panic!("no acknowledgement"));
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    s
}

async fn call_limited(at: SocketAddr, id: i64) -> bool {
    let body = modern_body(
        id,
        "tools/call",
        json!({"name": "limited", "arguments": {}}),
    );
    let headers = [
        ("MCP-Protocol-Version", MODERN),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "limited"),
        ("Authorization", "Bearer alpha"),
    ];
    let r = post(at, &headers, &body).await;
    let result = r.result();
    result["isError"] != json!(true)
}

fn legacy_headers() -> [(&'static str, &'static str); 2] {
    [
        ("MCP-Protocol-Version", LEGACY),
        ("Authorization", "Bearer alpha"),
    ]
}

fn legacy_call(id: i64, tool: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": {}}})
        .to_string()
}

/// Runs every scenario on two instances whose buses are `a` and `b`.
async fn scenarios(a: Arc<dyn Bus>, b: Arc<dyn Bus>) {
    // A change announced on A reaches the listen streams of A and B.
    let (la, lb) = (
        start(listening(Arc::clone(&a))).await,
        start(listening(Arc::clone(&b))).await,
    );
    let filter = json!({"toolsListChanged": true, "resourceSubscriptions": ["file:///x"]});
    let mut on_a = listen(la.addr, filter.clone()).await;
    let mut on_b = listen(lb.addr, filter).await;
    let started = Instant::now();
    la.runtime.notify_resource_updated("file:///x");
    for s in [&mut on_b, &mut on_a] {
        let n = s
            .next(WAIT)
            .await
            .unwrap_or_else(|| panic!("no change delivered"));
        assert_eq!(n["method"], "notifications/resources/updated", "{n}");
        assert_eq!(n["params"]["uri"], "file:///x");
    }
    println!("resource change A → B and A: {:?}", started.elapsed());
    la.runtime
        .update(|c| {
            c.add_tool(Tool::new("t2").handler(|_: NoArguments| async {
                Ok::<_, snodo::HandlerError>(ToolResult::text("2"))
            }))
        })
        .unwrap_or_else(|e| panic!("update: {e}"));
    let n = on_b
        .next(WAIT)
        .await
        .unwrap_or_else(|| panic!("no list change"));
    assert_eq!(n["method"], "notifications/tools/list_changed", "{n}");

    // A rate limit of 5 a minute holds at 5 across both instances.
    let cancelled = Arc::new(tokio::sync::Notify::new());
    let ia = start(runtime(Arc::clone(&a), Arc::clone(&cancelled))).await;
    let ib = start(runtime(Arc::clone(&b), Arc::clone(&cancelled))).await;
    let mut admitted = 0;
    for i in 0..12 {
        let at = if i % 2 == 0 { ia.addr } else { ib.addr };
        admitted += usize::from(call_limited(at, i).await);
    }
    assert_eq!(admitted, 5, "5 a minute across both instances");

    // An initialize-era cancellation sent to B cancels the request running on A.
    let addr = ia.addr;
    let call =
        tokio::spawn(async move { post(addr, &legacy_headers(), &legacy_call(77, "wait")).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let cancel =
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 77}});
    let r = post(ib.addr, &legacy_headers(), &cancel.to_string()).await;
    assert_eq!(r.status, 202, "{}", r.text());
    tokio::time::timeout(WAIT, cancelled.notified())
        .await
        .unwrap_or_else(|_| panic!("the cancellation did not reach instance A"));
    let _ = call.await;

    // An initialize-era answer to A's elicitation, sent to B, completes the call on A.
    let mut asked = Stream::open(ia.addr, &legacy_headers(), &legacy_call(8, "ask")).await;
    let question = asked
        .next(WAIT)
        .await
        .unwrap_or_else(|| panic!("no question"));
    assert_eq!(question["method"], "elicitation/create", "{question}");
    let answer = json!({"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept", "content": {"name": "Ada"}}});
    let r = post(ib.addr, &legacy_headers(), &answer.to_string()).await;
    assert_eq!(r.status, 202, "{}", r.text());
    let done = asked
        .next(WAIT)
        .await
        .unwrap_or_else(|| panic!("no result"));
    assert_eq!(
        done["result"]["content"][0]["text"], "Hello, Ada!",
        "{done}"
    );
}

/// What a listen stream is told until it is quiet for `quiet`: the methods, and the
/// URI of each resource update.
async fn told(s: &mut Stream, quiet: Duration) -> Vec<String> {
    let mut out = Vec::new();
    while let Some(n) = s.next(quiet).await {
        let method = n["method"].as_str().unwrap_or("?").to_owned();
        out.push(match n["params"]["uri"].as_str() {
            Some(uri) => format!("{method} {uri}"),
            None => method,
        });
    }
    out
}

const TOLD_ONCE: [&str; 2] = [
    "notifications/tools/list_changed",
    "notifications/resources/updated file:///x",
];

/// A burst of resyncs (a bus server restarted under several instances: each one's
/// handle publishes a resync when it is back) reaches a listen stream as one: each
/// watched list and resource is announced once, not once per resync.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_resyncs_is_told_once() {
    let bus: Arc<dyn Bus> = Arc::new(MemoryBus::new());
    let instance = start(listening(Arc::clone(&bus))).await;
    let filter = json!({"toolsListChanged": true, "resourceSubscriptions": ["file:///x"]});
    let mut s = listen(instance.addr, filter).await;
    for _ in 0..4 {
        bus.publish(Event::Resync)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    assert_eq!(told(&mut s, Duration::from_secs(1)).await, TOLD_ONCE);
    // A later one is told again.
    bus.publish(Event::Resync)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(told(&mut s, Duration::from_secs(1)).await, TOLD_ONCE);
}

/// A bus of another crate that hands `Event::Resync` over as an item (its `Fanout`'s
/// `send`, as for any event); the rest is a [`MemoryBus`].
#[derive(Debug)]
struct ItemResync {
    events: Fanout<Event>,
    rest: MemoryBus,
}

impl Bus for ItemResync {
    fn publish(&self, event: Event) -> BoxFuture<'_, Result<(), BusError>> {
        self.events.send(event);
        Box::pin(async { Ok(()) })
    }
    fn events(&self) -> Subscription<Event> {
        self.events.subscribe()
    }
    fn send(&self, to: Address, message: Message) -> BoxFuture<'_, Result<(), BusError>> {
        self.rest.send(to, message)
    }
    fn messages<'a>(
        &'a self,
        me: &'a InstanceId,
    ) -> BoxFuture<'a, Result<Subscription<Message>, BusError>> {
        self.rest.messages(me)
    }
    fn count<'a>(
        &'a self,
        key: &'a str,
        by: u64,
        window: Duration,
    ) -> BoxFuture<'a, Result<Count, BusError>> {
        self.rest.count(key, by, window)
    }
    fn state(&self) -> tokio::sync::watch::Receiver<BusState> {
        self.rest.state()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resync_delivered_as_an_item_is_told() {
    let bus: Arc<dyn Bus> = Arc::new(ItemResync {
        events: Fanout::new(16),
        rest: MemoryBus::new(),
    });
    let instance = start(listening(Arc::clone(&bus))).await;
    let filter = json!({"toolsListChanged": true, "resourceSubscriptions": ["file:///x"]});
    let mut s = listen(instance.addr, filter).await;
    bus.publish(Event::Resync)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(told(&mut s, Duration::from_secs(1)).await, TOLD_ONCE);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_on_one_memory_bus() {
    let bus: Arc<dyn Bus> = Arc::new(MemoryBus::new());
    scenarios(Arc::clone(&bus), bus).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_on_postgres() {
    let Some(url) = support::url("SNODO_TEST_PG_URL") else {
        return;
    };
    let options = PgBusOptions {
        namespace: support::namespace("rt"),
        ..PgBusOptions::default()
    };
    let (a, b) = support::pg_pair(&url, options).await;
    scenarios(a, b).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_on_redis() {
    let Some(url) = support::url("SNODO_TEST_REDIS_URL") else {
        return;
    };
    let options = RedisBusOptions {
        namespace: support::namespace("rt"),
        ..RedisBusOptions::default()
    };
    let (a, b) = support::redis_pair(&url, options).await;
    scenarios(a, b).await;
}

/// Waits until `bus` reports `want` (at most 10 s).
async fn until(bus: &Arc<dyn Bus>, want: snodo::bus::BusState) {
    let mut state = bus.state();
    let reached = tokio::time::timeout(Duration::from_secs(10), state.wait_for(|s| *s == want));
    assert!(reached.await.is_ok(), "the bus did not go {want:?}");
}

/// The bus cut under two instances (Redis through a proxy that cuts every connection):
/// a rate-limited call answers at once, refused (fail closed) on one instance and
/// admitted (fail open) on the other; when the bus is back, listeners are told every
/// list they watch changed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bus_cut_and_back() {
    let Some(url) = support::url("SNODO_TEST_REDIS_URL") else {
        return;
    };
    let proxy = support::Proxy::start(support::host_port(&url)).await;
    let through = support::via(&url, proxy.addr);
    let namespace = support::namespace("cut");
    let options = || RedisBusOptions {
        namespace: namespace.clone(),
        deadline: Duration::from_millis(500),
        heartbeat: Duration::from_millis(200),
        ..RedisBusOptions::default()
    };
    let a: Arc<dyn Bus> = support::redis_bus(&through, options()).await;
    let b: Arc<dyn Bus> = support::redis_bus(&through, options()).await;
    let cancelled = Arc::new(tokio::sync::Notify::new());
    let closed = Runtime::builder("bus-test", "1.0.0")
        .bus(Arc::clone(&a))
        .rate_limits_when_bus_down(snodo::bus::WhenDown::Closed)
        .list_changed(true)
        .resource_subscriptions(true)
        .tool(
            Tool::new("limited")
                .rate_limit(RateLimit::per_principal(5, Duration::from_secs(60)))
                .handler(|_: NoArguments| async {
                    Ok::<_, snodo::HandlerError>(ToolResult::text("ok"))
                }),
        )
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let (ia, ib) = (
        start(closed).await,
        start(runtime(Arc::clone(&b), cancelled)).await,
    );
    let mut on_a = listen(
        ia.addr,
        json!({"toolsListChanged": true, "resourceSubscriptions": ["test://watched"]}),
    )
    .await;
    assert!(
        call_limited(ia.addr, 1).await,
        "admitted while the bus is up"
    );

    proxy.cut();
    until(&a, snodo::bus::BusState::Down).await;
    until(&b, snodo::bus::BusState::Down).await;
    let started = Instant::now();
    assert!(
        !call_limited(ia.addr, 2).await,
        "fail closed: refused while the bus is down"
    );
    assert!(
        call_limited(ib.addr, 3).await,
        "fail open: admitted while the bus is down"
    );
    let took = started.elapsed();
    assert!(
        took < Duration::from_millis(500),
        "no call waits on a bus that is down: {took:?}"
    );

    proxy.restore();
    until(&a, snodo::bus::BusState::Up).await;
    let n = on_a
        .next(WAIT)
        .await
        .unwrap_or_else(|| panic!("the listener was not told"));
    assert_eq!(n["method"], "notifications/tools/list_changed", "{n}");
    // And every resource it watches was updated.
    let n = on_a
        .next(WAIT)
        .await
        .unwrap_or_else(|| panic!("the resource watcher was not told"));
    assert_eq!(n["method"], "notifications/resources/updated", "{n}");
    assert_eq!(n["params"]["uri"], "test://watched", "{n}");
    println!("refused and admitted while down in {took:?}; listener told on reconnect");
}

/// Only instance A's link to the bus cut (its bus handle reaches the server through a
/// proxy; B's does not): a change A makes meanwhile reaches A's own listeners only, so
/// when A's link is back, B's listener is told that every list it watches changed and
/// every resource it watches was updated (A publishes a resync on reconnecting).
async fn one_link_cut_and_back(
    name: &str,
    a: Arc<dyn Bus>,
    b: Arc<dyn Bus>,
    proxy: support::Proxy,
) {
    let (la, lb) = (
        start(listening(Arc::clone(&a))).await,
        start(listening(Arc::clone(&b))).await,
    );
    let filter = json!({"toolsListChanged": true, "resourceSubscriptions": ["file:///x"]});
    let mut on_b = listen(lb.addr, filter).await;

    proxy.cut();
    until(&a, snodo::bus::BusState::Down).await;
    assert_eq!(
        *b.state().borrow(),
        snodo::bus::BusState::Up,
        "{name}: B's link stayed up"
    );
    la.runtime.notify_resource_updated("file:///x");
    if let Some(n) = on_b.next(Duration::from_millis(300)).await {
        panic!("{name}: B heard {n} while A's link was down");
    }
    let started = Instant::now();
    proxy.restore();
    until(&a, snodo::bus::BusState::Up).await;
    let mut told = Vec::new();
    while told.len() < 2 {
        let n = on_b
            .next(WAIT)
            .await
            .unwrap_or_else(|| panic!("{name}: B's listener was not told (heard {told:?})"));
        told.push(n);
    }
    assert_eq!(
        told[0]["method"], "notifications/tools/list_changed",
        "{name}: {told:?}"
    );
    assert_eq!(
        told[1]["method"], "notifications/resources/updated",
        "{name}: {told:?}"
    );
    assert_eq!(told[1]["params"]["uri"], "file:///x", "{name}: {told:?}");
    println!(
        "{name}: B told {:?} after A's link was restored",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_instance_link_cut_and_back_on_postgres() {
    let Some(url) = support::url("SNODO_TEST_PG_URL") else {
        return;
    };
    let proxy = support::Proxy::start(support::host_port(&url)).await;
    let namespace = support::namespace("pgone");
    let options = || PgBusOptions {
        namespace: namespace.clone(),
        deadline: Duration::from_millis(500),
        heartbeat: Duration::from_millis(200),
        ..PgBusOptions::default()
    };
    let a = support::pg_bus(&support::via(&url, proxy.addr), options()).await;
    let b = support::pg_bus(&url, options()).await;
    one_link_cut_and_back("postgres", a, b, proxy).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_instance_link_cut_and_back_on_redis() {
    let Some(url) = support::url("SNODO_TEST_REDIS_URL") else {
        return;
    };
    let proxy = support::Proxy::start(support::host_port(&url)).await;
    let namespace = support::namespace("redisone");
    let options = || RedisBusOptions {
        namespace: namespace.clone(),
        deadline: Duration::from_millis(500),
        heartbeat: Duration::from_millis(200),
        ..RedisBusOptions::default()
    };
    let a = support::redis_bus(&support::via(&url, proxy.addr), options()).await;
    let b = support::redis_bus(&url, options()).await;
    one_link_cut_and_back("redis", a, b, proxy).await;
}
