//! The receiving side of a [`PgBus`](super::PgBus): the listening connection, the
//! receiving task (notifications in order, the heartbeat on that same connection, the
//! reconnection), the delivering task (spilled payloads read from the pool) and the
//! sweep of expired counters and old spill rows.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use snodo::bus::{BusError, Event, InstanceId};
use sqlx::PgPool;
use sqlx::postgres::{PgConnectOptions, PgListener, PgNotification, PgPoolOptions};
use tokio::sync::mpsc;
use tokio::time::{Instant, MissedTickBehavior};

use super::{Channels, Listen, SWEEP_EVERY};
use crate::hub::Hub;
use crate::{bounded, wire};

/// A listening connection on the common and heartbeat channels and on those of
/// `mailboxes`: a connection of its own, from a pool of one that only it uses (so the
/// `UNLISTEN *` sqlx sends a dropped listener, with no deadline, holds nothing anyone
/// else waits for).
pub(super) async fn listen(
    connect: &PgConnectOptions,
    channels: &Channels,
    mailboxes: &[InstanceId],
    deadline: Duration,
) -> Result<PgListener, BusError> {
    let mut names = vec![channels.common.clone(), channels.ping.clone()];
    names.extend(mailboxes.iter().map(|id| channels.mailbox(id)));
    bounded(deadline, "LISTEN", async {
        let own = PgPoolOptions::new()
            .max_connections(1)
            .min_connections(0)
            .acquire_timeout(deadline)
            .connect_lazy_with(connect.clone());
        let mut listener = PgListener::connect_with(&own).await?;
        // A lost connection is reported at once (Ok(None)); this task reconnects.
        listener.eager_reconnect(false);
        listener
            .listen_all(names.iter().map(String::as_str))
            .await?;
        Ok::<_, sqlx::Error>(listener)
    })
    .await
}

/// What the receiving task holds.
pub(super) struct Receiver {
    pub(super) connect: PgConnectOptions,
    pub(super) hub: Arc<Hub>,
    pub(super) channels: Channels,
    pub(super) received: Arc<AtomicU64>,
    pub(super) heartbeat: Duration,
    pub(super) liveness: Duration,
    pub(super) deadline: Duration,
    /// The notifications' payloads, in order, to the delivering task.
    pub(super) deliver: mpsc::Sender<String>,
    /// Set when a payload was dropped because the delivering task was `backlog` behind.
    pub(super) overflowed: Arc<AtomicBool>,
}

impl Receiver {
    /// Listens to `id`'s channel if this connection does not yet.
    async fn add(
        &self,
        listener: &mut PgListener,
        listening: &mut HashSet<String>,
        id: &InstanceId,
    ) -> Result<(), BusError> {
        let channel = self.channels.mailbox(id);
        if !listening.contains(&channel) {
            bounded(self.deadline, "LISTEN", listener.listen(&channel)).await?;
            listening.insert(channel);
        }
        Ok(())
    }

    /// Stops listening to the channels of mailboxes nobody here holds any more, and
    /// listens to those of any mailbox a failed `LISTEN` missed.
    async fn reconcile(
        &self,
        listener: &mut PgListener,
        listening: &mut HashSet<String>,
    ) -> Result<(), BusError> {
        let wanted = self.hub.mailboxes.instances();
        for id in &wanted {
            self.add(listener, listening, id).await?;
        }
        let wanted: HashSet<String> = wanted.iter().map(|id| self.channels.mailbox(id)).collect();
        let vacated: Vec<String> = listening.difference(&wanted).cloned().collect();
        for channel in vacated {
            bounded(self.deadline, "UNLISTEN", listener.unlisten(&channel)).await?;
            listening.remove(&channel);
        }
        Ok(())
    }

    /// Back after an outage: what this handle's instance published meanwhile reached its
    /// own subscribers only, so every handle is told to resync ([`Event::Resync`], on the
    /// listening connection itself: no pool to wait on, and it works or the connection
    /// is not back).
    async fn tell_resync(&self, listener: &mut PgListener) -> Result<(), BusError> {
        let payload = wire::event(&Event::Resync);
        let notify = sqlx::query("SELECT pg_notify($1, $2)")
            .bind(&self.channels.common)
            .bind(&payload)
            .execute(listener);
        bounded(self.deadline, "NOTIFY a resync", notify)
            .await
            .map(|_| ())
    }

    /// Hands a notification's payload to the delivering task without waiting: when it is
    /// `backlog` behind, the payload is dropped and the subscribers are told to resync.
    fn hand_over(&self, n: PgNotification) {
        match self.deliver.try_send(n.payload().to_owned()) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(_)) => {
                self.overflowed.store(true, Ordering::Relaxed);
            }
            // The delivering task ends only with the bus.
            Err(mpsc::error::TrySendError::Closed(_)) => {}
        }
    }
}

/// Forwards notifications to the hub and listens to new mailboxes' channels; on a lost
/// or silent connection, goes down, reconnects (every `deadline`) and resyncs. Runs until
/// the bus is dropped.
pub(super) async fn receive(r: Receiver, first: PgListener, mut requests: mpsc::Receiver<Listen>) {
    let mut current = Some(first);
    let mut outage = false;
    loop {
        let mut listening = HashSet::new();
        let mut listener = match current.take() {
            Some(l) => l,
            None => {
                let mailboxes = r.hub.mailboxes.instances();
                match listen(&r.connect, &r.channels, &mailboxes, r.deadline).await {
                    Ok(l) => {
                        listening.extend(mailboxes.iter().map(|id| r.channels.mailbox(id)));
                        l
                    }
                    Err(e) => {
                        r.hub.down(&e.to_string());
                        tokio::time::sleep(r.deadline).await;
                        continue;
                    }
                }
            }
        };
        // Before saying Up: the mailboxes opened meanwhile, and any the connection missed.
        let mut ready = Ok(());
        while let Ok(ask) = requests.try_recv() {
            ready = r.add(&mut listener, &mut listening, &ask.id).await;
            let _ = ask.done.send(());
            if ready.is_err() {
                break;
            }
        }
        if ready.is_ok() {
            ready = r.reconcile(&mut listener, &mut listening).await;
        }
        if ready.is_ok() && outage {
            ready = r.tell_resync(&mut listener).await;
        }
        if let Err(e) = ready {
            r.hub.down(&e.to_string());
            outage = true;
            tokio::time::sleep(r.deadline).await;
            continue;
        }
        r.hub.up(outage);
        let mut silent_at = Instant::now() + r.liveness;
        let mut beat = tokio::time::interval(r.heartbeat.max(Duration::from_millis(1)));
        beat.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let why = loop {
            tokio::select! {
                n = listener.try_recv() => match n {
                    Ok(Some(n)) => {
                        silent_at = Instant::now() + r.liveness;
                        if n.channel() == r.channels.ping {
                            if let Err(e) = r.reconcile(&mut listener, &mut listening).await {
                                break e.to_string();
                            }
                        } else {
                            r.received.fetch_add(1, Ordering::Relaxed);
                            r.hand_over(n);
                        }
                    }
                    Ok(None) => break "connection lost".to_owned(),
                    Err(e) => break e.to_string(),
                },
                Some(ask) = requests.recv() => {
                    let added = r.add(&mut listener, &mut listening, &ask.id).await;
                    let _ = ask.done.send(());
                    if let Err(e) = added {
                        break e.to_string();
                    }
                }
                _ = beat.tick() => {
                    // On the listening connection itself: what it proves is that this
                    // connection is alive, whatever the pool is busy with.
                    let ping = sqlx::query("SELECT pg_notify($1, '')")
                        .bind(&r.channels.ping)
                        .execute(&mut listener);
                    if let Err(e) = bounded(r.deadline, "heartbeat", ping).await {
                        break e.to_string();
                    }
                }
                () = tokio::time::sleep_until(silent_at) => {
                    break format!("no heartbeat for {:?}", r.liveness);
                }
            }
        };
        drop(listener);
        r.hub.down(&why);
        outage = true;
    }
}

/// Delivers the payloads the receiving task hands over, in order, reading the spilled
/// ones from the pool (each within `deadline`); after a payload was dropped for want of
/// room, tells every subscriber to resync. Ends when the receiving task does.
pub(super) async fn deliver(
    pool: PgPool,
    hub: Arc<Hub>,
    mut payloads: mpsc::Receiver<String>,
    overflowed: Arc<AtomicBool>,
    deadline: Duration,
) {
    while let Some(payload) = payloads.recv().await {
        on_notification(&pool, &hub, &payload, deadline).await;
        if overflowed.swap(false, Ordering::Relaxed) {
            tracing::warn!("postgres bus: delivery fell behind; every subscriber resyncs");
            hub.events.resync();
            hub.mailboxes.resync();
        }
    }
}

async fn on_notification(pool: &PgPool, hub: &Hub, payload: &str, deadline: Duration) {
    let Some(id) = payload.strip_prefix('s') else {
        hub.deliver(payload);
        return;
    };
    let Ok(id) = id.parse::<i64>() else { return };
    let body = bounded(
        deadline,
        "read a spilled message",
        sqlx::query_scalar::<_, String>("SELECT body FROM snodo_bus_spill WHERE id = $1")
            .bind(id)
            .fetch_optional(pool),
    )
    .await;
    match body {
        Ok(Some(body)) => hub.deliver(&body),
        Ok(None) => tracing::warn!("postgres bus: spilled message {id} is gone"),
        Err(e) => tracing::warn!("postgres bus: spilled message {id}: {e}"),
    }
}

/// Every [`SWEEP_EVERY`] heartbeats (a minute by default), deletes expired counters and
/// old spilled messages. Errors are left to the next sweep.
pub(super) async fn sweep(pool: PgPool, heartbeat: Duration, deadline: Duration) {
    let every = heartbeat
        .max(Duration::from_millis(1))
        .saturating_mul(SWEEP_EVERY);
    let mut ticker = tokio::time::interval_at(Instant::now() + every, every);
    ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        let sweep = sqlx::raw_sql(
            "DELETE FROM snodo_bus_counters WHERE expires_at < now() - interval '1 minute';
             DELETE FROM snodo_bus_spill WHERE created_at < now() - interval '5 minutes'",
        )
        .execute(&pool);
        if let Err(e) = bounded(deadline, "sweep", sweep).await {
            tracing::debug!("postgres bus: {e}");
        }
    }
}
