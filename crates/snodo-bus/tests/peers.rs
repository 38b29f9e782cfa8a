//! Calls between instances ([`snodo::bus::Peers`]) over each bus: two runtimes, each
//! with its own bus handle and HTTP endpoint (which starts its mailbox); one serves a
//! topic that holds something in memory, the other calls it. On one `MemoryBus`
//! (always), on PostgreSQL (`SNODO_TEST_PG_URL`) and on Redis (`SNODO_TEST_REDIS_URL`).

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use snodo::bus::contract::{Faulty, Sends};
use snodo::bus::{
    ACCEPT_WITHIN, Address, Bus, BusError, InstanceId, MAX_MESSAGE, MAX_PEER_CALLS,
    MAX_PEER_CALLS_PER_PRINCIPAL, MemoryBus, Message, PeerError, PeerRequest, Peers,
};
use snodo::http::{HttpConfig, Server};
use snodo::{Principal, RpcError, Runtime};
use snodo_bus::{PgBusOptions, RedisBusOptions};
use tokio::sync::{Notify, oneshot};

const WITHIN: Duration = Duration::from_secs(10);

/// Counts a served call's end when dropped.
struct Ends(Arc<AtomicUsize>);

impl Drop for Ends {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A runtime on `bus` behind an HTTP server on loopback (stopped when the sender drops).
async fn instance(bus: Arc<dyn Bus>) -> (Peers, oneshot::Sender<()>) {
    let runtime = Runtime::builder("peers-test", "1.0.0")
        .bus(bus)
        .build()
        .unwrap_or_else(|e| panic!("build: {e}"));
    let peers = runtime.peers().unwrap_or_else(|| panic!("no peers"));
    let addr = "127.0.0.1:0".parse().unwrap_or_else(|e| panic!("{e}"));
    let server = Server::bind(runtime, addr, HttpConfig::default())
        .await
        .unwrap_or_else(|e| panic!("bind: {e}"));
    let (tx, rx) = oneshot::channel::<()>();
    tokio::spawn(server.run_until(async {
        let _ = rx.await;
    }));
    (peers, tx)
}

/// Runs every scenario with A on bus `a` and B on bus `b`.
async fn scenarios(a: Arc<dyn Bus>, b: Arc<dyn Bus>) {
    let ((pa, _sa), (pb, _sb)) = (instance(a).await, instance(b).await);
    // A holds a counter in memory; whoever calls it from B changes it there.
    let held = Arc::new(AtomicUsize::new(0));
    let h = Arc::clone(&held);
    pa.serve(
        "hold",
        Arc::new(move |r: PeerRequest| {
            let h = Arc::clone(&h);
            Box::pin(async move {
                let n = h.fetch_add(1, Ordering::SeqCst) + 1;
                let who = r
                    .principal
                    .as_ref()
                    .map(|p| (p.id().to_owned(), p.scope().map(str::to_owned)));
                Ok(json!({"n": n, "who": who, "from": r.from.as_str(), "body": r.body}))
            })
        }),
    );
    pa.serve(
        "refuse",
        Arc::new(|_: PeerRequest| {
            Box::pin(async {
                Err(RpcError::invalid_params("not yours").with_data(json!({"why": "test"})))
            })
        }),
    );
    let (release, ended) = (Arc::new(Notify::new()), Arc::new(AtomicUsize::new(0)));
    let (r, e) = (Arc::clone(&release), Arc::clone(&ended));
    pa.serve(
        "slow",
        Arc::new(move |_: PeerRequest| {
            let (r, e) = (Arc::clone(&r), Arc::clone(&e));
            Box::pin(async move {
                let _ends = Ends(e);
                r.notified().await;
                Ok(Value::Null)
            })
        }),
    );

    // The mailboxes open in the background once the servers are up: a call waits for
    // its caller's, but one to an instance whose mailbox is not open yet is lost (and
    // its caller told so, after the accept time, here 200 ms).
    opened(&pa, &pb).await;

    // The service's answer, the principal and the caller carried.
    let alice = Principal::new("alice").with_scope("c1");
    let started = Instant::now();
    let got = pb
        .call(pa.me(), "hold", Some(&alice), json!({"x": 1}), WITHIN)
        .await
        .unwrap_or_else(|e| panic!("call: {e}"));
    println!("a call from B to A and back: {:?}", started.elapsed());
    assert_eq!(
        got,
        json!({"n": 1, "who": ["alice", "c1"], "from": pb.me().as_str(), "body": {"x": 1}})
    );
    assert_eq!(held.load(Ordering::SeqCst), 1, "served once, on A");
    let got = pb.call(pa.me(), "hold", None, Value::Null, WITHIN).await;
    assert_eq!(got.map(|v| v["who"].clone()), Ok(Value::Null));

    // The service's error comes back with its code, message and data.
    let e = pb.call(pa.me(), "refuse", None, Value::Null, WITHIN).await;
    let Err(PeerError::Remote(e)) = e else {
        panic!("{e:?}")
    };
    assert_eq!(
        (e.code().0, e.message(), e.data()),
        (-32602, "not yours", Some(&json!({"why": "test"})))
    );
    // A topic nobody serves there: said so.
    let e = pb.call(pa.me(), "nothing", None, Value::Null, WITHIN).await;
    assert!(
        matches!(&e, Err(PeerError::Remote(e)) if e.message().contains("serves no")),
        "{e:?}"
    );
    // Too large to carry: refused before it is sent.
    let big = json!("x".repeat(MAX_MESSAGE));
    let e = pb.call(pa.me(), "hold", None, big, WITHIN).await;
    assert!(
        matches!(e, Err(PeerError::Bus(BusError::Invalid(_)))),
        "{e:?}"
    );
    // Late: the call's own time bounds it.
    let t = Instant::now();
    let e = pb
        .call(
            pa.me(),
            "slow",
            None,
            Value::Null,
            Duration::from_millis(700),
        )
        .await;
    assert!(matches!(e, Err(PeerError::TimedOut(..))), "{e:?}");
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    // And abandoned: the call is cancelled where it runs, before its own bound there.
    let t = Instant::now();
    while ended.load(Ordering::SeqCst) == 0 && t.elapsed() < Duration::from_millis(500) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        ended.load(Ordering::SeqCst),
        1,
        "the abandoned call still runs on A"
    );
    // An instance that does not listen: a clear error within the accept time.
    let t = Instant::now();
    let nobody = InstanceId::random();
    let e = pb.call(&nobody, "hold", None, Value::Null, WITHIN).await;
    assert!(
        matches!(e, Err(PeerError::NoAnswer(ref i, _)) if *i == nobody),
        "{e:?}"
    );
    let waited = t.elapsed();
    assert!(
        waited >= ACCEPT_WITHIN && waited < ACCEPT_WITHIN + Duration::from_secs(3),
        "{waited:?}"
    );

    // Bounded: MAX_PEER_CALLS wait at once; one more is refused at once.
    let waiting: Vec<_> = (0..MAX_PEER_CALLS)
        .map(|n| {
            let (pb, to) = (pb.clone(), pa.me().clone());
            let who = Principal::new(format!(
                "p{}",
                n % (MAX_PEER_CALLS / MAX_PEER_CALLS_PER_PRINCIPAL)
            ));
            tokio::spawn(async move { pb.call(&to, "slow", Some(&who), Value::Null, WITHIN).await })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let e = pb.call(pa.me(), "hold", None, Value::Null, WITHIN).await;
    assert_eq!(e, Err(PeerError::Busy));
    // Released, they all complete; and room is back.
    for _ in 0..50 {
        release.notify_waiters();
        if waiting.iter().all(tokio::task::JoinHandle::is_finished) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for w in waiting {
        let r = w.await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r, Ok(Value::Null));
    }
    let got = pb.call(pa.me(), "hold", None, Value::Null, WITHIN).await;
    assert!(got.is_ok(), "{got:?}");

    // One principal cannot take every slot: MAX_PEER_CALLS_PER_PRINCIPAL of its calls
    // wait, one more is refused, another principal's call goes through.
    let mallory = Principal::new("mallory");
    let waiting: Vec<_> = (0..MAX_PEER_CALLS_PER_PRINCIPAL)
        .map(|_| {
            let (pb, to, who) = (pb.clone(), pa.me().clone(), mallory.clone());
            tokio::spawn(async move { pb.call(&to, "slow", Some(&who), Value::Null, WITHIN).await })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let e = pb
        .call(pa.me(), "hold", Some(&mallory), Value::Null, WITHIN)
        .await;
    assert_eq!(e, Err(PeerError::Busy));
    let got = pb
        .call(pa.me(), "hold", Some(&alice), Value::Null, WITHIN)
        .await;
    assert!(got.is_ok(), "{got:?}");
    for _ in 0..50 {
        release.notify_waiters();
        if waiting.iter().all(tokio::task::JoinHandle::is_finished) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for w in waiting {
        assert_eq!(w.await.unwrap_or_else(|e| panic!("{e}")), Ok(Value::Null));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_between_instances_on_one_memory_bus() {
    let bus: Arc<dyn Bus> = Arc::new(MemoryBus::new());
    scenarios(Arc::clone(&bus), bus).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_between_instances_on_postgres() {
    let Some(url) = support::url("SNODO_TEST_PG_URL") else {
        return;
    };
    let options = PgBusOptions {
        namespace: support::namespace("peers"),
        ..PgBusOptions::default()
    };
    let (a, b) = support::pg_pair(&url, options).await;
    scenarios(a, b).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_between_instances_on_redis() {
    let Some(url) = support::url("SNODO_TEST_REDIS_URL") else {
        return;
    };
    let options = RedisBusOptions {
        namespace: support::namespace("peers"),
        ..RedisBusOptions::default()
    };
    let (a, b) = support::redis_pair(&url, options).await;
    scenarios(a, b).await;
}

/// Waits until B reaches A's "ping".
async fn opened(pa: &Peers, pb: &Peers) {
    pa.serve(
        "ping",
        Arc::new(|_: PeerRequest| Box::pin(async { Ok(Value::Null) })),
    );
    let mut tries = 0;
    while pb
        .call(
            pa.me(),
            "ping",
            None,
            Value::Null,
            Duration::from_millis(200),
        )
        .await
        .is_err()
    {
        tries += 1;
        assert!(tries < 50, "the mailboxes did not open");
    }
}

/// A call made before the caller's own mailbox is open (it opens in the background once
/// an endpoint runs; here the bus holds it) waits for it rather than sending a call whose
/// reply nobody would hear; one whose mailbox never opens fails with `NotListening`
/// within its own time, not after `ACCEPT_WITHIN` of silence.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_waits_for_its_callers_mailbox() {
    let bus: Arc<dyn Bus> = Arc::new(MemoryBus::new());
    let slow = Arc::new(Faulty::new(Arc::clone(&bus)));
    slow.hold_mailboxes(true);
    let ((pa, _sa), (pb, _sb)) = (instance(bus).await, instance(slow.clone()).await);
    pa.serve(
        "ping",
        Arc::new(|_: PeerRequest| Box::pin(async { Ok(json!("pong")) })),
    );
    // A's mailbox opens at once: its own call to itself, made right away, is answered.
    let me = pa.me().clone();
    assert_eq!(
        pa.call(&me, "ping", None, Value::Null, WITHIN).await,
        Ok(json!("pong"))
    );

    // B's is held: a short call fails with NotListening in its own time.
    let t = Instant::now();
    let short = pb
        .call(&me, "ping", None, Value::Null, Duration::from_millis(300))
        .await;
    assert_eq!(short, Err(PeerError::NotListening));
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());

    // A longer one waits; once the bus lets B listen, it is answered at once.
    let (pb2, to) = (pb.clone(), me.clone());
    let call = tokio::spawn(async move { pb2.call(&to, "ping", None, Value::Null, WITHIN).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!call.is_finished());
    let t = Instant::now();
    slow.hold_mailboxes(false);
    let got = call.await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(got, Ok(json!("pong")));
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
}

/// A holder that goes silent after it took a call (killed, cut off) fails the call
/// after `ACCEPT_WITHIN` of silence, not at the call's own time; one that keeps working
/// longer than that, alive, is waited for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_silent_after_accepting_fails_the_call_and_a_live_one_is_waited_for() {
    let bus: Arc<dyn Bus> = Arc::new(MemoryBus::new());
    // A's sends can be silenced (dropped, said to succeed): killed or cut off after
    // it took a call.
    let mute = Arc::new(Faulty::new(Arc::clone(&bus)));
    let ((pa, _sa), (pb, _sb)) = (instance(mute.clone()).await, instance(bus).await);
    let accepted = Arc::new(Notify::new());
    let a = Arc::clone(&accepted);
    pa.serve(
        "forever",
        Arc::new(move |_: PeerRequest| {
            let a = Arc::clone(&a);
            Box::pin(async move {
                a.notify_one();
                std::future::pending::<()>().await;
                Ok(Value::Null)
            })
        }),
    );
    pa.serve(
        "long",
        Arc::new(|_: PeerRequest| {
            Box::pin(async {
                tokio::time::sleep(ACCEPT_WITHIN + Duration::from_secs(2)).await;
                Ok(json!("done"))
            })
        }),
    );
    opened(&pa, &pb).await;

    // Alive past ACCEPT_WITHIN: its heartbeats keep the call open.
    let long = pb.call(pa.me(), "long", None, Value::Null, Duration::from_secs(30));
    assert_eq!(long.await, Ok(json!("done")));

    // Silent after accepting: NoAnswer after ACCEPT_WITHIN (not the 60 s of the call).
    let t = Instant::now();
    let (pb2, to) = (pb.clone(), pa.me().clone());
    let call = tokio::spawn(async move {
        pb2.call(&to, "forever", None, Value::Null, Duration::from_secs(60))
            .await
    });
    accepted.notified().await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    mute.sends(Sends::Dropped);
    let e = call.await.unwrap_or_else(|e| panic!("{e}"));
    assert!(
        matches!(e, Err(PeerError::NoAnswer(ref i, _)) if i == pa.me()),
        "{e:?}"
    );
    assert!(
        t.elapsed() < ACCEPT_WITHIN + Duration::from_secs(3),
        "{:?}",
        t.elapsed()
    );
}

/// This instance's mailbox losing messages while a call waits (a lagging subscriber):
/// the call fails at once, as its reply may be lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mailbox_that_lost_messages_fails_the_waiting_calls() {
    let bus: Arc<dyn Bus> = Arc::new(MemoryBus::with_backlog(8));
    let ((pa, _sa), (pb, _sb)) = (
        instance(Arc::clone(&bus)).await,
        instance(Arc::clone(&bus)).await,
    );
    pa.serve(
        "forever",
        Arc::new(|_: PeerRequest| Box::pin(std::future::pending())),
    );
    opened(&pa, &pb).await;
    let (pb2, to) = (pb.clone(), pa.me().clone());
    let call = tokio::spawn(async move {
        pb2.call(&to, "forever", None, Value::Null, Duration::from_secs(60))
            .await
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let t = Instant::now();
    // A flood B's mailbox cannot keep up with (cancellations of nothing).
    for n in 0..10_000 {
        let m = Message::Cancel {
            request: format!("flood-{n}"),
            reason: None,
        };
        let _ = bus.send(Address::Instance(pb.me().clone()), m).await;
    }
    let e = call.await.unwrap_or_else(|e| panic!("{e}"));
    assert!(
        matches!(e, Err(PeerError::Lost(ref i)) if i == pa.me()),
        "{e:?}"
    );
    assert!(t.elapsed() < ACCEPT_WITHIN, "{:?}", t.elapsed());
}

/// Calls are told apart by caller and key: the same call delivered twice runs once; a
/// cancellation that overtakes its call (PostgreSQL's notifications on pooled
/// connections) stops it from running at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_delivered_twice_runs_once_and_one_cancelled_first_never_runs() {
    let bus: Arc<dyn Bus> = Arc::new(MemoryBus::new());
    let ((pa, _sa), (pb, _sb)) = (
        instance(Arc::clone(&bus)).await,
        instance(Arc::clone(&bus)).await,
    );
    let (runs, gate) = (Arc::new(AtomicUsize::new(0)), Arc::new(Notify::new()));
    let (r, g) = (Arc::clone(&runs), Arc::clone(&gate));
    pa.serve(
        "gate",
        Arc::new(move |_: PeerRequest| {
            let (r, g) = (Arc::clone(&r), Arc::clone(&g));
            Box::pin(async move {
                let n = r.fetch_add(1, Ordering::SeqCst) + 1;
                g.notified().await;
                Ok(json!(n))
            })
        }),
    );
    opened(&pa, &pb).await;
    // A caller of our own, on the wire.
    let me = InstanceId::new("fake-caller").unwrap_or_else(|e| panic!("{e}"));
    let mut inbox = bus.messages(&me).await.unwrap_or_else(|e| panic!("{e}"));
    let to = Address::Instance(pa.me().clone());
    let call = |request: &str| Message::Call {
        request: request.to_owned(),
        from: me.as_str().to_owned(),
        topic: "gate".into(),
        principal: None,
        body: Value::Null,
        within_ms: 5_000,
    };
    let send = |m: Message| {
        let (bus, to) = (Arc::clone(&bus), to.clone());
        async move { bus.send(to, m).await.unwrap_or_else(|e| panic!("{e}")) }
    };
    send(Message::Cancel {
        request: "fake-caller:boot:1".into(),
        reason: None,
    })
    .await;
    send(call("fake-caller:boot:1")).await;
    send(call("fake-caller:boot:2")).await;
    send(call("fake-caller:boot:2")).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "run once, the cancelled one not at all"
    );
    gate.notify_waiters();
    let mut replies = Vec::new();
    while let Ok(Some(r)) = tokio::time::timeout(Duration::from_millis(500), inbox.recv()).await {
        if let snodo::bus::Received::Item(Message::Reply { request, body }) = r {
            replies.push((request, body));
        }
    }
    assert!(
        replies.iter().all(|(k, _)| k == "fake-caller:boot:2"),
        "{replies:?}"
    );
    let results: Vec<_> = replies
        .iter()
        .filter(|(_, b)| b.get("result").is_some())
        .collect();
    assert_eq!(results.len(), 1, "{replies:?}");
    assert_eq!(results[0].1, json!({"result": 1}));
}
