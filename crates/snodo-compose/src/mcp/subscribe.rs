//! Resource subscriptions at an MCP backend, for the front's listen streams: an
//! initialize-era backend that advertises `resources.subscribe` gets
//! `resources/subscribe` (and `resources/unsubscribe`) on one connection of the pool,
//! and reports `notifications/resources/updated` on it; a 2026-07-28 backend gets a
//! `subscriptions/listen` stream of its own per URI. Either way the updates go to the
//! source's `updates` channel ([`Source::resource_updates`](crate::Source::resource_updates)).

use std::collections::HashMap;
use std::sync::Mutex;

use futures_util::StreamExt as _;
use serde_json::{Value, json};
use snodo_client::{ServerEvent, Subscriptions};
use tokio::task::AbortHandle;

use super::McpSource;
use crate::source::SourceError;

/// Updates kept for a mount that lags behind (older ones are dropped).
pub(super) const BACKLOG: usize = 256;

/// A 2026-07-28 backend's listen stream per subscribed URI (ended when dropped).
#[derive(Debug, Default)]
pub(super) struct Listens(Mutex<HashMap<String, AbortHandle>>);

impl Listens {
    /// Whether `uri` has a listen stream still running (a new listing asks again for
    /// every URI: a live stream is kept rather than opened anew).
    fn live(&self, uri: &str) -> bool {
        self.0
            .lock()
            .is_ok_and(|m| m.get(uri).is_some_and(|t| !t.is_finished()))
    }

    fn put(&self, uri: &str, task: Option<AbortHandle>) {
        if let Ok(mut m) = self.0.lock() {
            let old = match task {
                Some(t) => m.insert(uri.to_owned(), t),
                None => m.remove(uri),
            };
            if let Some(old) = old {
                old.abort();
            }
        }
    }
}

impl Drop for Listens {
    fn drop(&mut self) {
        if let Ok(m) = self.0.get_mut() {
            for t in m.values() {
                t.abort();
            }
        }
    }
}

impl McpSource {
    pub(super) async fn subscribe_to(&self, uri: &str) -> Result<(), SourceError> {
        let lease = self.lease().await?;
        let c = &lease.client;
        let server = c.server();
        if server.capabilities.pointer("/resources/subscribe") != Some(&Value::Bool(true)) {
            return Ok(());
        }
        if !server.stateless {
            return match c.request("resources/subscribe", json!({"uri": uri})).await {
                Ok(_) => Ok(()),
                Err(e) => Err(self.fail(&lease, e).await),
            };
        }
        if self.listens.live(uri) {
            return Ok(());
        }
        let subs = Subscriptions {
            resource_subscriptions: vec![uri.to_owned()],
            ..Subscriptions::default()
        };
        let mut events = match c.listen(&subs).await {
            Ok(s) => s,
            Err(e) => return Err(self.fail(&lease, e).await),
        };
        let (updates, name) = (self.cfg.updates.clone(), self.cfg.name.clone());
        let task = tokio::spawn(async move {
            while let Some(e) = events.next().await {
                match e {
                    Ok(ServerEvent::ResourceUpdated(u)) => {
                        let _ = updates.send(u);
                    }
                    Ok(_) => {}
                    Err(e) => {
                        tracing::debug!(source = %name, error = %e, "backend resource listen ended");
                        return;
                    }
                }
            }
        });
        self.listens.put(uri, Some(task.abort_handle()));
        Ok(())
    }

    pub(super) async fn unsubscribe_from(&self, uri: &str) -> Result<(), SourceError> {
        self.listens.put(uri, None);
        let lease = self.lease().await?;
        let c = &lease.client;
        let server = c.server();
        if server.stateless
            || server.capabilities.pointer("/resources/subscribe") != Some(&Value::Bool(true))
        {
            return Ok(());
        }
        match c
            .request("resources/unsubscribe", json!({"uri": uri}))
            .await
        {
            Ok(_) => Ok(()),
            Err(e) => Err(self.fail(&lease, e).await),
        }
    }
}
