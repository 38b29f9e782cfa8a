//! [`PgBus`]: the bus on PostgreSQL. Events and messages to every instance are `NOTIFY`s
//! on one channel (the namespace), which every handle `LISTEN`s to on one connection; a
//! message to one instance goes to that instance's channel (`NS_to_HASH`), which only the
//! handles holding its mailbox listen to. A payload larger than a NOTIFY can carry (8000
//! bytes) is stored in `snodo_bus_spill` and its row id sent instead. Counters are rows
//! of `snodo_bus_counters`, one atomic upsert each.
//!
//! The listening connection is a connection of its own (its own one-connection pool, a
//! new one at each reconnection), not one of the pool the other operations share: a busy
//! pool cannot delay what keeps it alive, and a listener dropped on a dead peer (sqlx
//! sends it an `UNLISTEN *` with no deadline) pins no pooled connection. The receiving
//! task `NOTIFY`s a heartbeat channel of this handle's own on that same connection every
//! [`heartbeat`](PgBusOptions::heartbeat); a heartbeat that fails or takes longer than the
//! deadline, or three intervals without any notification, and the listening connection is
//! declared dead, dropped and opened again. Each heartbeat heard also `UNLISTEN`s the
//! channels of mailboxes whose every subscription was dropped. The receiving task never
//! waits on the pool: notifications go, in order, to a delivering task, which reads the
//! spilled ones from the pool.

use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use futures_util::future::{BoxFuture, FutureExt};
use snodo::bus::{
    Address, Bus, BusError, BusState, Count, DEFAULT_BACKLOG, Event, InstanceId, Message,
    Subscription, check_count,
};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions, PgRow};
use sqlx::{PgPool, Row};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;

mod receive;
mod tls;
use receive::{Receiver, deliver, listen, receive, sweep};

use crate::hub::Hub;
use crate::{DEFAULT_DEADLINE, DEFAULT_HEARTBEAT, bounded, check_namespace, wire};

/// Payloads above this many bytes go through the spill table (NOTIFY's limit is 8000).
const SPILL_ABOVE: usize = 7000;
/// How often expired counters and old spilled messages are deleted.
const SWEEP_EVERY: u32 = 60;

/// One simple query, so one implicit transaction: the advisory lock lets one instance at
/// a time in (concurrent `CREATE TABLE IF NOT EXISTS` can collide) until it commits.
const SCHEMA: &str = "
SELECT pg_advisory_xact_lock(7305061985);
CREATE TABLE IF NOT EXISTS snodo_bus_counters (
    key TEXT PRIMARY KEY,
    value BIGINT NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL
);
CREATE TABLE IF NOT EXISTS snodo_bus_spill (
    id BIGSERIAL PRIMARY KEY,
    body TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now()
)";

const COUNT: &str = "
INSERT INTO snodo_bus_counters AS c (key, value, expires_at)
VALUES ($1, $2, clock_timestamp() + make_interval(secs => $3::float8 / 1000.0))
ON CONFLICT (key) DO UPDATE SET
    value = CASE WHEN c.expires_at <= clock_timestamp() THEN EXCLUDED.value
                 ELSE c.value + EXCLUDED.value END,
    expires_at = CASE WHEN c.expires_at <= clock_timestamp() THEN EXCLUDED.expires_at
                      ELSE c.expires_at END
RETURNING value,
    GREATEST(1, CEIL(EXTRACT(EPOCH FROM (expires_at - clock_timestamp())) * 1000))::BIGINT";

const SPILL: &str = "
WITH s AS (INSERT INTO snodo_bus_spill (body) VALUES ($2) RETURNING id)
SELECT pg_notify($1, 's' || s.id::text) FROM s";

/// How [`PgBus::connect`] connects.
#[derive(Debug, Clone)]
pub struct PgBusOptions {
    /// The NOTIFY channel and the counters' key prefix: deployments (or tests) sharing a
    /// database keep apart by it. 1 to 32 of `a-z`, `0-9`, `_`. Default `snodo_bus`.
    pub namespace: String,
    /// The longest any operation waits (connection included). Default 2 s.
    pub deadline: Duration,
    /// The heartbeat interval; a listening connection silent for three is dropped and
    /// opened again. Default 1 s.
    pub heartbeat: Duration,
    /// How many items a slow subscriber may fall behind. Default
    /// [`DEFAULT_BACKLOG`].
    pub backlog: usize,
    /// Pool size for publishing, counting and reading spilled messages (the listener has
    /// a connection of its own besides). Default 4.
    pub max_connections: u32,
    /// The connections' `application_name`. Default `snodo-bus`.
    pub application_name: String,
}

impl Default for PgBusOptions {
    fn default() -> Self {
        Self {
            namespace: "snodo_bus".to_owned(),
            deadline: DEFAULT_DEADLINE,
            heartbeat: DEFAULT_HEARTBEAT,
            backlog: DEFAULT_BACKLOG,
            max_connections: 4,
            application_name: "snodo-bus".to_owned(),
        }
    }
}

/// The bus on PostgreSQL (LISTEN/NOTIFY and a counters table).
#[derive(Debug)]
pub struct PgBus {
    pool: PgPool,
    hub: Arc<Hub>,
    channel: String,
    ping: String,
    deadline: Duration,
    /// Asks the listening connection to `LISTEN` to a new mailbox's channel.
    control: mpsc::Sender<Listen>,
    /// Event and message notifications this handle's connection received.
    received: Arc<AtomicU64>,
    tasks: Vec<JoinHandle<()>>,
}

/// A mailbox's channel to listen to; `done` once the `LISTEN` is through.
#[derive(Debug)]
struct Listen {
    id: InstanceId,
    done: oneshot::Sender<()>,
}

/// The channels of one handle: the namespace's, its heartbeat's, and the prefix of its
/// mailboxes'.
#[derive(Debug, Clone)]
struct Channels {
    common: String,
    ping: String,
}

impl Channels {
    fn mailbox(&self, id: &InstanceId) -> String {
        mailbox_channel(&self.common, id)
    }
}

/// The channel of the messages addressed to `id`: the namespace (at most 32 bytes),
/// `_to_` and a 64-bit hash of the id (an id may be 48 bytes; a channel name at most 63).
/// Two ids sharing a hash share a channel: each handle still delivers only what its own
/// mailboxes are addressed.
fn mailbox_channel(common: &str, id: &InstanceId) -> String {
    format!("{common}_to_{:016x}", fnv1a(id.as_str()))
}

/// FNV-1a, 64 bits: a stable spread of instance ids over channel names.
fn fnv1a(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

impl PgBus {
    /// Connects to `url` (`postgres://user[:password]@host:port/db`), creates the bus's
    /// two tables if missing, and starts listening. The URL's `sslmode` is honoured,
    /// over rustls: `disable`; `prefer`, the default, TLS when the server offers it;
    /// `require`, TLS without checking the certificate; `verify-full`, the certificate
    /// checked, host name included, against the system's trust anchors plus the CAs
    /// of the PEM file `sslrootcert` names (sqlx adds them, it cannot use them alone).
    /// `verify-ca` is refused (no host name checked against anchors that include every
    /// publicly trusted CA), and so is `sslrootcert` (or `PGSSLROOTCERT`) with
    /// `prefer` or `require`, which would check nothing.
    ///
    /// # Errors
    /// [`BusError::Invalid`] for a bad URL or option, [`BusError::Unavailable`] or
    /// [`BusError::Timeout`] when the server cannot be reached within the deadline.
    pub async fn connect(url: &str, options: PgBusOptions) -> Result<Self, BusError> {
        check_namespace(&options.namespace)?;
        let deadline = options.deadline;
        let connect = PgConnectOptions::from_str(url)
            .map_err(|e| BusError::Invalid(format!("bad URL: {e}")))?
            .application_name(&options.application_name);
        tls::check(url, connect.get_ssl_mode())?;
        let pool = bounded(
            deadline,
            "connect",
            PgPoolOptions::new()
                .max_connections(options.max_connections.max(1))
                .acquire_timeout(deadline)
                .connect_with(connect.clone()),
        )
        .await?;
        bounded(deadline * 5, "create the bus tables", create_tables(&pool)).await?;
        let hub = Arc::new(Hub::new("postgres", options.backlog));
        let channel = options.namespace.clone();
        let ping = format!(
            "{}_ping_{}",
            options.namespace,
            &InstanceId::random().as_str()[..16]
        );
        let channels = Channels {
            common: channel.clone(),
            ping: ping.clone(),
        };
        let first = listen(&connect, &channels, &[], deadline).await?;
        let (control, requests) = mpsc::channel(64);
        let (to_deliver, deliveries) = mpsc::channel(options.backlog.max(1));
        let received = Arc::new(AtomicU64::new(0));
        let overflowed = Arc::new(AtomicBool::new(false));
        let receive = tokio::spawn(receive(
            Receiver {
                connect,
                hub: Arc::clone(&hub),
                channels,
                received: Arc::clone(&received),
                heartbeat: options.heartbeat,
                liveness: options.heartbeat * 3,
                deadline,
                deliver: to_deliver,
                overflowed: Arc::clone(&overflowed),
            },
            first,
            requests,
        ));
        let deliver = tokio::spawn(deliver(
            pool.clone(),
            Arc::clone(&hub),
            deliveries,
            overflowed,
            deadline,
        ));
        let sweep = tokio::spawn(sweep(pool.clone(), options.heartbeat, deadline));
        Ok(Self {
            pool,
            hub,
            channel,
            ping,
            deadline,
            control,
            received,
            tasks: vec![receive, deliver, sweep],
        })
    }

    async fn notify(&self, to: Option<&InstanceId>, payload: String) -> Result<(), BusError> {
        let query = if payload.len() > SPILL_ABOVE {
            SPILL
        } else {
            "SELECT pg_notify($1, $2)"
        };
        let channel = match to {
            Some(id) => mailbox_channel(&self.channel, id),
            None => self.channel.clone(),
        };
        let run = async {
            let (pool, channel) = (&self.pool, channel.as_str());
            match notify(pool, query, channel, &payload).await {
                Err(e) if missing_table(&e) => {
                    tracing::warn!("postgres bus: {e}; creating the bus tables again");
                    create_tables(&self.pool).await?;
                    notify(pool, query, channel, &payload).await
                }
                other => other,
            }
        };
        bounded(self.deadline, "NOTIFY", run).await.map(|_| ())
    }

    async fn increment(&self, key: &str, by: u64, window: Duration) -> Result<Count, BusError> {
        check_count(key, window)?;
        let key = format!("{}:{key}", self.channel);
        let by = i64::try_from(by).unwrap_or(i64::MAX);
        let ms = window.as_secs_f64() * 1000.0;
        let run = async {
            match count(&self.pool, &key, by, ms).await {
                Err(e) if missing_table(&e) => {
                    tracing::warn!("postgres bus: {e}; creating the bus tables again");
                    create_tables(&self.pool).await?;
                    count(&self.pool, &key, by, ms).await
                }
                other => other,
            }
        };
        let row = bounded(self.deadline, "count", run).await?;
        let value: i64 = row
            .try_get(0)
            .map_err(|e| BusError::Unavailable(e.to_string()))?;
        let left: i64 = row
            .try_get(1)
            .map_err(|e| BusError::Unavailable(e.to_string()))?;
        Ok(Count {
            value: u64::try_from(value).unwrap_or(0),
            resets_in: Duration::from_millis(u64::try_from(left).unwrap_or(1)).min(window),
        })
    }

    /// This handle's heartbeat channel (for tests and `pg_stat_activity` readers).
    #[must_use]
    pub fn heartbeat_channel(&self) -> &str {
        &self.ping
    }

    /// How many event and message notifications this handle's listening connection has
    /// received (heartbeats aside): a message to an instance whose mailbox is elsewhere
    /// does not reach it.
    #[must_use]
    pub fn notifications_received(&self) -> u64 {
        self.received.load(Ordering::Relaxed)
    }
}

impl Drop for PgBus {
    fn drop(&mut self) {
        self.tasks.iter().for_each(JoinHandle::abort);
    }
}

impl Bus for PgBus {
    fn publish(&self, event: Event) -> BoxFuture<'_, Result<(), BusError>> {
        self.notify(None, wire::event(&event)).boxed()
    }

    fn events(&self) -> Subscription<Event> {
        self.hub.events.subscribe()
    }

    fn send(&self, to: Address, message: Message) -> BoxFuture<'_, Result<(), BusError>> {
        async move {
            let payload = wire::message(&to, &message)?;
            match &to {
                Address::Instance(id) => self.notify(Some(id), payload).await,
                Address::Every => self.notify(None, payload).await,
            }
        }
        .boxed()
    }

    fn messages<'a>(
        &'a self,
        me: &'a InstanceId,
    ) -> BoxFuture<'a, Result<Subscription<Message>, BusError>> {
        async move {
            // The mailbox first: a reconnection from now on listens to its channel too.
            let sub = self.hub.mailboxes.subscribe(me);
            let (done, listened) = oneshot::channel();
            let ask = Listen {
                id: me.clone(),
                done,
            };
            if *self.hub.state.borrow() == BusState::Down {
                // Queued for the reconnection, which listens to it before it says Up (a
                // full queue: the reconnection listens to every held mailbox anyway).
                let _ = self.control.try_send(ask);
            } else {
                let through = async {
                    self.control.send(ask).await.ok()?;
                    listened.await.ok()
                };
                if tokio::time::timeout(self.deadline, through).await.is_err() {
                    // The connection is failing: the receiver reconnects and listens.
                    tracing::debug!("postgres bus: LISTEN for {me} timed out");
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
        self.hub.state.subscribe()
    }
}

/// Creates the bus's tables if missing.
async fn create_tables(pool: &PgPool) -> Result<(), sqlx::Error> {
    sqlx::raw_sql(SCHEMA).execute(pool).await.map(|_| ())
}

async fn notify(
    pool: &PgPool,
    query: &'static str,
    channel: &str,
    payload: &str,
) -> Result<(), sqlx::Error> {
    let q = sqlx::query(query).bind(channel).bind(payload);
    q.execute(pool).await.map(|_| ())
}

async fn count(pool: &PgPool, key: &str, by: i64, ms: f64) -> Result<PgRow, sqlx::Error> {
    let q = sqlx::query(COUNT).bind(key).bind(by).bind(ms);
    q.fetch_one(pool).await
}

/// Whether `e` says a table is missing (`42P01`: dropped, or the database restored
/// without it); the caller creates the tables and runs its statement once more.
fn missing_table(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(d) if d.code().as_deref() == Some("42P01"))
}
