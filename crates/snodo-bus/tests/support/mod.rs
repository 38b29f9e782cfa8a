//! What the bus tests share: the servers' URLs, a fault-injecting TCP proxy, and the
//! fault scenario every bus goes through.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use snodo::bus::{Address, Bus, BusState, Event, InstanceId, Message, Received, Subscription};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::AbortHandle;

/// The URL in `var`, or `None` (the test then prints that it skipped). CI starts both
/// servers (`.ci/run`), so under `CI` a missing URL fails the test instead of skipping it.
pub fn url(var: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var_os("CI").is_some() => {
            panic!("{var} is unset under CI: .ci/run starts the server and exports it")
        }
        _ => {
            println!("skipped: {var} unset");
            None
        }
    }
}

/// A namespace of the test's own, so tests sharing a server do not hear each other.
pub fn namespace(prefix: &str) -> String {
    format!("{prefix}_{}", &InstanceId::random().as_str()[..12])
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Pass,
    Refuse,
    Blackhole,
}

/// A TCP proxy on loopback in front of a server: it passes bytes, or cuts every
/// connection and refuses new ones (the server killed), or stops forwarding while
/// keeping connections open (a partition).
pub struct Proxy {
    pub addr: SocketAddr,
    mode: watch::Sender<Mode>,
    conns: Arc<Mutex<Vec<AbortHandle>>>,
    accept: AbortHandle,
}

impl Proxy {
    pub async fn start(upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap_or_else(|e| panic!("bind the proxy: {e}"));
        let addr = listener
            .local_addr()
            .unwrap_or_else(|e| panic!("proxy address: {e}"));
        let mode = watch::channel(Mode::Pass).0;
        let conns: Arc<Mutex<Vec<AbortHandle>>> = Arc::default();
        let (m, c) = (mode.clone(), Arc::clone(&conns));
        let accept = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let current = *m.borrow();
                if current == Mode::Refuse {
                    continue;
                }
                let rx = m.subscribe();
                let task = tokio::spawn(pipe(client, upstream, rx));
                c.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(task.abort_handle());
            }
        })
        .abort_handle();
        Self {
            addr,
            mode,
            conns,
            accept,
        }
    }

    fn drop_all(&self) {
        for conn in self
            .conns
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain(..)
        {
            conn.abort();
        }
    }

    /// Every connection closed, new ones refused: the server is gone.
    pub fn cut(&self) {
        self.mode.send_replace(Mode::Refuse);
        self.drop_all();
    }

    /// Connections stay open, nothing is forwarded: a partition.
    pub fn blackhole(&self) {
        self.mode.send_replace(Mode::Blackhole);
    }

    /// Back to passing bytes (connections held by a partition are closed).
    pub fn restore(&self) {
        self.drop_all();
        self.mode.send_replace(Mode::Pass);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.accept.abort();
        self.drop_all();
    }
}

async fn pipe(mut client: TcpStream, upstream: SocketAddr, mut mode: watch::Receiver<Mode>) {
    if *mode.borrow() == Mode::Blackhole {
        std::future::pending::<()>().await;
    }
    let Ok(mut server) = TcpStream::connect(upstream).await else {
        return;
    };
    let partitioned = tokio::select! {
        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => false,
        r = mode.wait_for(|m| *m != Mode::Pass) => r.is_ok(),
    };
    if partitioned {
        // Hold both sockets, forward nothing, until aborted.
        std::future::pending::<()>().await;
    }
}

/// The upstream address of a `scheme://user@host:port/...` URL.
pub fn host_port(url: &str) -> SocketAddr {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let rest = rest.rsplit_once('@').map_or(rest, |(_, r)| r);
    let hp = rest.split('/').next().unwrap_or(rest);
    hp.parse()
        .unwrap_or_else(|e| panic!("{hp} in {url} is not an address: {e}"))
}

/// `url` with its host and port replaced by `addr`.
pub fn via(url: &str, addr: SocketAddr) -> String {
    url.replacen(&host_port(url).to_string(), &addr.to_string(), 1)
}

async fn wait_state(
    state: &mut watch::Receiver<BusState>,
    want: BusState,
    within: Duration,
) -> Duration {
    let start = Instant::now();
    match tokio::time::timeout(within, state.wait_for(|s| *s == want)).await {
        Ok(Ok(_)) => start.elapsed(),
        Ok(Err(_)) => panic!("the bus was dropped while waiting for {want:?}"),
        Err(_) => panic!("the bus did not go {want:?} within {within:?}"),
    }
}

async fn next<T: Clone + std::fmt::Debug>(sub: &mut Subscription<T>, what: &str) -> Received<T> {
    match tokio::time::timeout(Duration::from_secs(10), sub.recv()).await {
        Ok(Some(r)) => r,
        Ok(None) => panic!("{what}: the subscription closed"),
        Err(_) => panic!("{what}: nothing within 10 s"),
    }
}

/// What [`outage`] measured.
#[derive(Debug)]
pub struct Outage {
    /// From the fault to the state going down.
    pub detected: Duration,
    /// The longest any bus call took while the server was away.
    pub slowest_call: Duration,
    /// From the server being back to the state going up.
    pub recovered: Duration,
}

/// The fault scenario: `faulty` is a bus whose server goes away (`fail`) and comes back
/// (`heal`), `other` one that stays connected (or `None` when the server itself went
/// away). While subscribed: the state goes down, no call takes longer than `deadline`
/// (and a margin), then the state goes up, every subscriber is told `Resync`, and what
/// is published afterwards arrives again.
pub async fn outage<Fail, Heal, HealFut>(
    faulty: Arc<dyn Bus>,
    deadline: Duration,
    fail: Fail,
    heal: Heal,
) -> Outage
where
    Fail: FnOnce(),
    Heal: FnOnce() -> HealFut,
    HealFut: std::future::Future<Output = ()>,
{
    let me = InstanceId::random();
    let mut events = faulty.events();
    let mut inbox = faulty
        .messages(&me)
        .await
        .unwrap_or_else(|e| panic!("messages: {e}"));
    let mut state = faulty.state();
    assert_eq!(*state.borrow(), BusState::Up);
    let before = Event::ResourceUpdated("test://before".into());
    faulty
        .publish(before.clone())
        .await
        .unwrap_or_else(|e| panic!("publish: {e}"));
    assert_eq!(next(&mut events, "before").await, Received::Item(before));

    let margin = Duration::from_millis(750);
    let mut watch_down = state.clone();
    let went_down = tokio::spawn(async move {
        wait_state(&mut watch_down, BusState::Down, Duration::from_secs(10)).await
    });
    fail();
    let mut slowest = Duration::ZERO;
    // Calls while the server is away: each fails or succeeds, none waits past the deadline.
    for round in 0..3 {
        let start = Instant::now();
        let published = faulty.publish(Event::ToolsListChanged).await;
        slowest = slowest.max(start.elapsed());
        let start = Instant::now();
        let counted = faulty.count("outage", 1, Duration::from_secs(60)).await;
        slowest = slowest.max(start.elapsed());
        let start = Instant::now();
        let sent = faulty
            .send(
                Address::Instance(me.clone()),
                Message::Cancel {
                    request: round.to_string(),
                    reason: None,
                },
            )
            .await;
        slowest = slowest.max(start.elapsed());
        println!(
            "  during the outage, round {round}: publish {published:?}, count {counted:?}, send {sent:?}"
        );
    }
    assert!(
        slowest <= deadline + margin,
        "a call took {slowest:?} with a deadline of {deadline:?}"
    );
    let detected = went_down
        .await
        .unwrap_or_else(|e| panic!("the state watcher: {e}"));
    let start = Instant::now();
    let late = InstanceId::random();
    let messages_during = faulty.messages(&late).await;
    assert!(
        messages_during.is_ok(),
        "subscribing while down: {messages_during:?}"
    );
    assert!(
        start.elapsed() <= deadline + margin,
        "messages() waited {:?}",
        start.elapsed()
    );

    heal().await;
    let recovered = wait_state(&mut state, BusState::Up, Duration::from_secs(20)).await;
    // Subscribers are told; anything that slipped through before the fault was detected
    // comes first.
    for (name, got) in [
        ("events", drain_to_resync(&mut events).await),
        ("messages", drain_to_resync(&mut inbox).await),
    ] {
        assert!(got, "the {name} subscriber was not told Resync");
    }
    let after = Event::ResourceUpdated("test://after".into());
    let message = Message::Cancel {
        request: "after".into(),
        reason: None,
    };
    // The first calls after a reconnection may still meet a stale pooled connection.
    let mut delivered = false;
    for _ in 0..10 {
        if faulty.publish(after.clone()).await.is_ok() {
            delivered = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(delivered, "publish does not work again after the outage");
    loop {
        match next(&mut events, "after").await {
            Received::Item(e) if e == after => break,
            Received::Item(_) | Received::Resync | Received::Lagged(_) => {}
        }
    }
    faulty
        .send(Address::Instance(me.clone()), message.clone())
        .await
        .unwrap_or_else(|e| panic!("send after the outage: {e}"));
    loop {
        match next(&mut inbox, "a message after").await {
            Received::Item(m) if m == message => break,
            _ => {}
        }
    }
    // The mailbox opened while the server was away is subscribed by the reconnection.
    let mut late_inbox = messages_during.unwrap_or_else(|e| panic!("messages while down: {e}"));
    faulty
        .send(Address::Instance(late), message.clone())
        .await
        .unwrap_or_else(|e| panic!("send to the late mailbox: {e}"));
    loop {
        match next(
            &mut late_inbox,
            "a message to the mailbox opened while down",
        )
        .await
        {
            Received::Item(m) if m == message => break,
            _ => {}
        }
    }
    let count = faulty
        .count("after-outage", 1, Duration::from_secs(60))
        .await
        .unwrap_or_else(|e| panic!("count after the outage: {e}"));
    assert!(count.value >= 1);
    Outage {
        detected,
        slowest_call: slowest,
        recovered,
    }
}

async fn drain_to_resync<T: Clone + std::fmt::Debug>(sub: &mut Subscription<T>) -> bool {
    loop {
        match tokio::time::timeout(Duration::from_secs(5), sub.recv()).await {
            Ok(Some(Received::Resync)) => return true,
            Ok(Some(_)) => {}
            Ok(None) | Err(_) => return false,
        }
    }
}

/// A PostgreSQL bus on `url` with `options`, or the test fails.
pub async fn pg_bus(url: &str, options: snodo_bus::PgBusOptions) -> Arc<dyn Bus> {
    match snodo_bus::PgBus::connect(url, options).await {
        Ok(bus) => Arc::new(bus),
        Err(e) => panic!("connect {url}: {e}"),
    }
}

/// Two PostgreSQL bus handles on `url` with `options` (two instances of one deployment
/// when they share its namespace), or the test fails.
pub async fn pg_pair(url: &str, options: snodo_bus::PgBusOptions) -> (Arc<dyn Bus>, Arc<dyn Bus>) {
    (
        pg_bus(url, options.clone()).await,
        pg_bus(url, options).await,
    )
}

/// Two Redis bus handles on `url` with `options`, or the test fails.
pub async fn redis_pair(
    url: &str,
    options: snodo_bus::RedisBusOptions,
) -> (Arc<dyn Bus>, Arc<dyn Bus>) {
    (
        redis_bus(url, options.clone()).await,
        redis_bus(url, options).await,
    )
}

/// A Redis bus on `url` with `options`, or the test fails.
pub async fn redis_bus(url: &str, options: snodo_bus::RedisBusOptions) -> Arc<dyn Bus> {
    match snodo_bus::RedisBus::connect(url, options).await {
        Ok(bus) => Arc::new(bus),
        Err(e) => panic!("connect {url}: {e}"),
    }
}
