//! [`RedisBus`]: the bus on Redis. Events go to the channel `NS:events`, messages to
//! `NS:to:ID` (one channel per instance) or `NS:every`; one pub/sub connection per
//! handle subscribes to the events, to every instance's channel and to those of the
//! instances subscribed here. Counters are keys `NS:count:KEY`, incremented and given
//! their expiry by one Lua script (atomic on the server).
//!
//! The pub/sub connection is PINGed every [`heartbeat`](RedisBusOptions::heartbeat); a
//! PING unanswered within the deadline, or the connection closing, and it is dropped and
//! opened again. After each answered PING, the channels of mailboxes whose every
//! subscription was dropped are unsubscribed. Commands go through a reconnecting
//! connection manager.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::future::{BoxFuture, FutureExt};
use redis::aio::{ConnectionManager, ConnectionManagerConfig, PubSubSink, PubSubStream};
use redis::{Client, Script};
use snodo::bus::{
    Address, Bus, BusError, BusState, Count, DEFAULT_BACKLOG, Event, InstanceId, Message,
    Subscription, check_count,
};
use tokio::sync::watch;
use tokio::task::JoinHandle;

mod client;

use crate::hub::Hub;
use crate::{DEFAULT_DEADLINE, DEFAULT_HEARTBEAT, bounded, check_namespace, wire};

/// INCRBY, then the window's expiry if the key has none (it was just created).
const COUNT: &str = r"
local n = redis.call('INCRBY', KEYS[1], ARGV[1])
local t = redis.call('PTTL', KEYS[1])
if t < 0 then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    t = tonumber(ARGV[2])
end
return {n, t}";

/// How [`RedisBus::connect`] connects.
#[derive(Debug, Clone)]
pub struct RedisBusOptions {
    /// The channels' and keys' prefix: deployments (or tests) sharing a server keep
    /// apart by it. 1 to 32 of `a-z`, `0-9`, `_`. Default `snodo_bus`.
    pub namespace: String,
    /// The longest any operation waits (connection included). Default 2 s.
    pub deadline: Duration,
    /// The pub/sub connection's PING interval. Default 1 s.
    pub heartbeat: Duration,
    /// How many items a slow subscriber may fall behind. Default
    /// [`DEFAULT_BACKLOG`].
    pub backlog: usize,
}

impl Default for RedisBusOptions {
    fn default() -> Self {
        Self {
            namespace: "snodo_bus".to_owned(),
            deadline: DEFAULT_DEADLINE,
            heartbeat: DEFAULT_HEARTBEAT,
            backlog: DEFAULT_BACKLOG,
        }
    }
}

/// The bus on Redis (pub/sub and counters with expiry).
#[derive(Debug)]
pub struct RedisBus {
    commands: ConnectionManager,
    shared: Arc<Shared>,
    script: Script,
    task: JoinHandle<()>,
}

struct Shared {
    hub: Hub,
    namespace: String,
    deadline: Duration,
    /// The live pub/sub connection's sending half, to subscribe a new instance's channel.
    sink: Mutex<Option<PubSubSink>>,
    /// The instances whose channel the live connection is subscribed to; held while
    /// subscribing or unsubscribing, so that a mailbox opened meanwhile is not
    /// unsubscribed.
    listening: tokio::sync::Mutex<HashSet<InstanceId>>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("hub", &self.hub)
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}

impl Shared {
    fn events(&self) -> String {
        format!("{}:events", self.namespace)
    }

    fn to(&self, to: &Address) -> String {
        match to {
            Address::Every => format!("{}:every", self.namespace),
            Address::Instance(id) => format!("{}:to:{id}", self.namespace),
        }
    }

    fn sink(&self) -> Option<PubSubSink> {
        self.sink
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn set_sink(&self, sink: Option<PubSubSink>) {
        *self.sink.lock().unwrap_or_else(PoisonError::into_inner) = sink;
    }
}

impl RedisBus {
    /// Connects to `url`: one connection for commands, one for pub/sub.
    /// `redis://[:password@]host:port[/db]` in plaintext; `rediss://…` over TLS (rustls),
    /// the server's certificate checked against the system's trust anchors, or against
    /// the CA certificates of the PEM file `?sslrootcert=FILE` names; `rediss://…#insecure`
    /// checks nothing (tests only; logged as a warning at each connect).
    ///
    /// # Errors
    /// [`BusError::Invalid`] for a bad URL or option, [`BusError::Unavailable`] or
    /// [`BusError::Timeout`] when the server cannot be reached within the deadline.
    pub async fn connect(url: &str, options: RedisBusOptions) -> Result<Self, BusError> {
        check_namespace(&options.namespace)?;
        let deadline = options.deadline;
        let client = client::client(url)?;
        if client::unverified(&client) {
            // Nothing of the URL: it may hold a password.
            tracing::warn!(
                "redis bus: rediss://…#insecure: the server's certificate is NOT verified \
                 (anyone on the path can impersonate the server); for tests only"
            );
        }
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(deadline))
            .set_response_timeout(Some(deadline))
            .set_number_of_retries(2)
            .set_max_delay(deadline);
        let commands = bounded(
            deadline,
            "connect",
            ConnectionManager::new_with_config(client.clone(), config),
        )
        .await?;
        let shared = Arc::new(Shared {
            hub: Hub::new("redis", options.backlog),
            namespace: options.namespace,
            deadline,
            sink: Mutex::new(None),
            listening: tokio::sync::Mutex::new(HashSet::new()),
        });
        let first = subscribe(&client, &shared).await?;
        let task = tokio::spawn(receive(
            client,
            commands.clone(),
            Arc::clone(&shared),
            first,
            options.heartbeat,
        ));
        Ok(Self {
            commands,
            shared,
            script: Script::new(COUNT),
            task,
        })
    }

    async fn publish_to(&self, channel: String, payload: String) -> Result<(), BusError> {
        publish(
            self.commands.clone(),
            self.shared.deadline,
            channel,
            payload,
        )
        .await
    }

    async fn increment(&self, key: &str, by: u64, window: Duration) -> Result<Count, BusError> {
        check_count(key, window)?;
        let key = format!("{}:count:{key}", self.shared.namespace);
        let ms = u64::try_from(window.as_millis()).unwrap_or(u64::MAX);
        let by = i64::try_from(by).unwrap_or(i64::MAX);
        let mut conn = self.commands.clone();
        let (value, left): (i64, i64) = bounded(self.shared.deadline, "count", async {
            self.script
                .key(key)
                .arg(by)
                .arg(ms)
                .invoke_async(&mut conn)
                .await
        })
        .await?;
        Ok(Count {
            value: u64::try_from(value).unwrap_or(0),
            resets_in: Duration::from_millis(u64::try_from(left).unwrap_or(1).max(1)).min(window),
        })
    }
}

impl Drop for RedisBus {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Bus for RedisBus {
    fn publish(&self, event: Event) -> BoxFuture<'_, Result<(), BusError>> {
        self.publish_to(self.shared.events(), wire::event(&event))
            .boxed()
    }

    fn events(&self) -> Subscription<Event> {
        self.shared.hub.events.subscribe()
    }

    fn send(&self, to: Address, message: Message) -> BoxFuture<'_, Result<(), BusError>> {
        async move {
            let payload = wire::message(&to, &message)?;
            self.publish_to(self.shared.to(&to), payload).await
        }
        .boxed()
    }

    fn messages<'a>(
        &'a self,
        me: &'a InstanceId,
    ) -> BoxFuture<'a, Result<Subscription<Message>, BusError>> {
        async move {
            let shared = &self.shared;
            let Ok(mut listening) =
                tokio::time::timeout(shared.deadline, shared.listening.lock()).await
            else {
                // The receiver is stuck on a failing connection: it reconnects and
                // subscribes every mailbox.
                return Ok(shared.hub.mailboxes.subscribe(me));
            };
            // The mailbox first: a reconnection from now on subscribes its channel too.
            let sub = shared.hub.mailboxes.subscribe(me);
            if let Some(mut sink) = shared.sink().filter(|_| !listening.contains(me)) {
                let channel = shared.to(&Address::Instance(me.clone()));
                match bounded(shared.deadline, "SUBSCRIBE", sink.subscribe(channel)).await {
                    Ok(()) => {
                        listening.insert(me.clone());
                    }
                    // The connection is failing: the receiver reconnects and subscribes.
                    Err(e) => tracing::debug!("redis bus: SUBSCRIBE for {me}: {e}"),
                }
            }
            Ok(sub)
        }
        .boxed()
    }

    fn count<'a>(
        &'a self,
        key: &'a str,
        by: u64,
        window: Duration,
    ) -> BoxFuture<'a, Result<Count, BusError>> {
        self.increment(key, by, window).boxed()
    }

    fn state(&self) -> watch::Receiver<BusState> {
        self.shared.hub.state.subscribe()
    }
}

/// PUBLISHes `payload` on `channel` through `conn`, within `deadline`.
async fn publish(
    mut conn: ConnectionManager,
    deadline: Duration,
    channel: String,
    payload: String,
) -> Result<(), BusError> {
    bounded(deadline, "PUBLISH", async move {
        let mut publish = redis::cmd("PUBLISH");
        publish.arg(channel).arg(payload);
        match publish.query_async::<i64>(&mut conn).await {
            // The server went away and came back: the manager's connection is broken
            // until a command fails on it, and it reconnects then. Once more (a dropped
            // connection did not carry the first).
            Err(e) if e.is_connection_dropped() => publish.query_async::<i64>(&mut conn).await,
            other => other,
        }
    })
    .await
    .map(|_| ())
}

/// A pub/sub connection subscribed to the events, to every instance, and to each
/// instance with a mailbox here; its sink is published for [`RedisBus::messages`].
async fn subscribe(client: &Client, shared: &Shared) -> Result<PubSubStream, BusError> {
    let deadline = shared.deadline;
    let (mut sink, stream) = bounded(deadline, "pub/sub connect", client.get_async_pubsub())
        .await?
        .split();
    let mut listening = shared.listening.lock().await;
    listening.clear();
    shared.set_sink(Some(sink.clone()));
    let mailboxes = shared.hub.mailboxes.instances();
    let mut channels = vec![shared.events(), shared.to(&Address::Every)];
    channels.extend(
        mailboxes
            .iter()
            .map(|id| shared.to(&Address::Instance(id.clone()))),
    );
    bounded(deadline, "SUBSCRIBE", sink.subscribe(channels)).await?;
    listening.extend(mailboxes);
    Ok(stream)
}

/// Unsubscribes the channels of mailboxes nobody here holds any more, and subscribes
/// those of any mailbox a failed SUBSCRIBE missed.
async fn reconcile(shared: &Shared, sink: &mut PubSubSink) -> Result<(), BusError> {
    let mut listening = shared.listening.lock().await;
    let wanted: HashSet<InstanceId> = shared.hub.mailboxes.instances().into_iter().collect();
    let channels = |ids: &mut dyn Iterator<Item = &InstanceId>| -> Vec<String> {
        ids.map(|id| shared.to(&Address::Instance(id.clone())))
            .collect()
    };
    let missing = channels(&mut wanted.difference(&listening));
    if !missing.is_empty() {
        bounded(shared.deadline, "SUBSCRIBE", sink.subscribe(missing)).await?;
    }
    let vacated = channels(&mut listening.difference(&wanted));
    if !vacated.is_empty() {
        bounded(shared.deadline, "UNSUBSCRIBE", sink.unsubscribe(vacated)).await?;
    }
    *listening = wanted;
    Ok(())
}

/// Forwards messages to the hub and PINGs every `heartbeat`; on a closed or silent
/// connection, goes down, reconnects (every deadline), tells every handle to resync
/// ([`Event::Resync`] through `commands`: what this instance published meanwhile
/// reached its own subscribers only) and resyncs. Runs until the bus is dropped.
async fn receive(
    client: Client,
    commands: ConnectionManager,
    shared: Arc<Shared>,
    first: PubSubStream,
    heartbeat: Duration,
) {
    let mut current = Some(first);
    let mut outage = false;
    loop {
        let mut stream = match current.take() {
            Some(s) => s,
            None => {
                let back = match subscribe(&client, &shared).await {
                    Ok(s) => {
                        let resync = wire::event(&Event::Resync);
                        publish(commands.clone(), shared.deadline, shared.events(), resync)
                            .await
                            .map(|()| s)
                    }
                    Err(e) => Err(e),
                };
                match back {
                    Ok(s) => s,
                    Err(e) => {
                        shared.set_sink(None);
                        shared.hub.down(&e.to_string());
                        tokio::time::sleep(shared.deadline).await;
                        continue;
                    }
                }
            }
        };
        shared.hub.up(outage);
        let mut ticker = tokio::time::interval(heartbeat);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let why = loop {
            tokio::select! {
                msg = stream.next() => match msg {
                    Some(msg) => match std::str::from_utf8(msg.get_payload_bytes()) {
                        Ok(payload) => shared.hub.deliver(payload),
                        Err(_) => tracing::debug!("redis bus: a payload not in UTF-8"),
                    },
                    None => break "connection closed".to_owned(),
                },
                _ = ticker.tick() => {
                    let Some(mut sink) = shared.sink() else { break "no sink".to_owned() };
                    let ping = bounded(shared.deadline, "PING", sink.ping::<redis::Value>());
                    if let Err(e) = ping.await {
                        break e.to_string();
                    }
                    if let Err(e) = reconcile(&shared, &mut sink).await {
                        break e.to_string();
                    }
                }
            }
        };
        shared.set_sink(None);
        drop(stream);
        shared.hub.down(&why);
        outage = true;
    }
}
