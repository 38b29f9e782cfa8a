//! One new connection to the backend of an [`McpSource`](super::McpSource): the
//! client's builder (events, logs, questions, headers, timeouts), the connection
//! itself (a stdio child started and initialized, or HTTP, a stream, a runtime) and a
//! 2026-07-28 backend's listening task.

use std::time::Duration;

use futures_util::StreamExt as _;
use serde_json::json;
use snodo_client::{Client, ClientBuilder, ServerEvent, Subscriptions};

use super::{Config, Target};
use crate::child;
use crate::pool::Conn;
use crate::source::SourceError;
use tokio_util::task::AbortOnDropHandle;

impl Config {
    /// The client builder of connection `conn`.
    pub(super) fn builder(&self, conn: u64) -> ClientBuilder {
        let changes = self.changes.clone();
        let updates = self.updates.clone();
        let name = self.name.clone();
        let log_name = self.name.clone();
        let mut b = Client::builder("snodo-compose", env!("CARGO_PKG_VERSION"))
            .protocol(self.protocol.clone())
            .probe_timeout(Duration::from_secs(5))
            // Every level from the backend: the front request's own level filters them.
            .log_level("debug")
            .on_event(move |e| {
                if let ServerEvent::ResourceUpdated(uri) = &e {
                    let _ = updates.send(uri.clone());
                }
                if matches!(
                    e,
                    ServerEvent::ToolsChanged
                        | ServerEvent::PromptsChanged
                        | ServerEvent::ResourcesChanged
                ) {
                    tracing::debug!(source = %name, "backend lists changed");
                    changes.send_modify(|n| *n += 1);
                }
            })
            .on_log(move |m| {
                tracing::debug!(source = %log_name, level = %m.level, data = %m.data, "backend log");
            });
        b = self.asker.declare(b, conn);
        for (n, v) in &self.headers {
            b = b.header(n.clone(), v.clone());
        }
        if let Some(t) = self.timeout {
            b = b.timeout(t);
        }
        if let Some(t) = self.write_timeout {
            b = b.stdio_write_timeout(t);
        }
        b
    }

    /// `backend "NAME" is unavailable: WHY`.
    pub(super) fn down(&self, why: &str) -> SourceError {
        SourceError::Down(format!("backend \"{}\" is unavailable: {why}", self.name))
    }

    /// One new connection (a stdio child started and initialized).
    pub(super) async fn connect(&self) -> Result<Conn, String> {
        let id = self.asker.next_connection();
        let b = self.builder(id);
        let plain = |client| Conn {
            client,
            child: None,
            id,
            listener: None,
        };
        let mut conn = match &self.target {
            Target::Http(url) => b.connect_http(url).await.map(plain),
            Target::Runtime(rt) => b.connect_runtime(rt.clone()).await.map(plain),
            Target::Stream(f) => {
                let (r, w) = f().await.map_err(|e| format!("cannot connect: {e}"))?;
                b.connect_stream(r, w).await.map(plain)
            }
            Target::Stdio(cmd) => {
                let sp = child::spawn(&self.name, cmd, &self.reaped).map_err(|e| e.to_string())?;
                match b.connect_stream(sp.stdout, sp.stdin).await {
                    Ok(client) => Ok(Conn {
                        client,
                        child: Some(sp.guard),
                        id,
                        listener: None,
                    }),
                    // Died during initialize: say how.
                    Err(e) => {
                        let exit =
                            tokio::time::timeout(Duration::from_millis(200), sp.guard.exited())
                                .await;
                        return Err(match exit {
                            Ok(why) => format!("{e} ({why})"),
                            Err(_) => e.to_string(),
                        });
                    }
                }
            }
        }
        .map_err(|e| e.to_string())?;
        let c = &conn.client;
        tracing::info!(source = %self.name, protocol = %c.protocol_version(), "backend connected");
        if c.server().stateless {
            conn.listener = self.spawn_listener(c);
        }
        Ok(conn)
    }

    /// 2026-07-28 backends announce list changes on `subscriptions/listen`: the
    /// listening task, stopped with its connection.
    pub(super) fn spawn_listener(&self, c: &Client) -> Option<AbortOnDropHandle<()>> {
        let (c, changes, name) = (c.clone(), self.changes.clone(), self.name.clone());
        let caps = c.server().capabilities;
        let wants = |k: &str| caps.pointer(&format!("/{k}/listChanged")) == Some(&json!(true));
        let subs = Subscriptions {
            tools_list_changed: wants("tools"),
            prompts_list_changed: wants("prompts"),
            resources_list_changed: wants("resources"),
            ..Subscriptions::default()
        };
        if !(subs.tools_list_changed || subs.prompts_list_changed || subs.resources_list_changed) {
            return None;
        }
        let task = tokio::spawn(async move {
            let Ok(mut events) = c.listen(&subs).await else {
                return;
            };
            loop {
                let e = tokio::select! {
                    // Nobody mounts the source any more: the stream (and the connection
                    // this clone keeps open) goes now, not at the backend's next event.
                    () = changes.closed() => return,
                    e = events.next() => e,
                };
                let Some(Ok(e)) = e else { return };
                if !matches!(e, ServerEvent::Other(..) | ServerEvent::ResourceUpdated(_)) {
                    tracing::debug!(source = %name, "backend lists changed");
                    changes.send_modify(|n| *n += 1);
                }
            }
        });
        Some(AbortOnDropHandle::new(task))
    }
}
