//! `GET /healthz` of the gateway: each backend's state, and a status an orchestrator
//! acts on — 200 while every required backend is up, 503 otherwise (a readiness
//! probe: the load balancer sends no clients to an instance that would answer them
//! without a backend's tools). Backends marked `required = false` are reported but do
//! not change the status.
//!
//! ```json
//! {"status":"unavailable","backends":[
//!   {"name":"fs","state":"up","required":true,"components":14,"outages":0},
//!   {"name":"py","state":"restarting","required":true,"outages":1,"for_secs":0.8,
//!    "error":"backend \"py\" is unavailable: …"}]}
//! ```
//!
//! A backend is `starting` until its first listing, `up` while mounted, `restarting`
//! when it went away less than [`RESTARTING`] ago (the gateway is starting it again),
//! and `down` after that (still retried, with backoff).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use snodo::http::{Body, Server};
use snodo_compose::{Mount, Status};

use super::observe::Series;

/// How long a backend that went away is `restarting` before it is `down`.
pub(crate) const RESTARTING: Duration = Duration::from_secs(30);

/// How often the backends' states are sampled (for `restarting` and the series).
const SAMPLE: Duration = Duration::from_millis(250);

/// A mounted backend.
pub(crate) struct Backend {
    pub(crate) name: Arc<str>,
    pub(crate) required: bool,
    pub(crate) mount: Mount,
}

/// What the sampler saw of a backend.
#[derive(Clone, Copy, Default)]
struct Seen {
    ever_up: bool,
    up: bool,
    /// When it was last seen going from up to not up.
    down_since: Option<Instant>,
    /// The mount's outages counted into the series so far.
    counted: u64,
}

struct Entry {
    backend: Backend,
    seen: Mutex<Seen>,
}

/// The backends, their states, and the `/healthz` answer.
#[derive(Clone)]
pub(crate) struct Health {
    entries: Arc<Vec<Entry>>,
}

impl Health {
    /// Watches `backends` (a task samples their states into `series` until the last
    /// handle is dropped, which unmounts them).
    pub(crate) fn new(backends: Vec<Backend>, series: Series) -> Self {
        let entries: Arc<Vec<Entry>> = Arc::new(
            backends
                .into_iter()
                .map(|backend| Entry {
                    backend,
                    seen: Mutex::new(Seen::default()),
                })
                .collect(),
        );
        let weak = Arc::downgrade(&entries);
        tokio::spawn(async move {
            loop {
                let Some(entries) = weak.upgrade() else {
                    return;
                };
                for e in entries.iter() {
                    e.sample(&series);
                }
                drop(entries);
                tokio::time::sleep(SAMPLE).await;
            }
        });
        Self { entries }
    }

    /// Serves the report at `/healthz`.
    pub(crate) fn serve(&self, server: Server) -> Server {
        let this = self.clone();
        server.health(move |_| {
            let (ok, body) = this.report();
            async move {
                let mut r = http::Response::new(Body::full(body.to_string().into()));
                if !ok {
                    *r.status_mut() = http::StatusCode::SERVICE_UNAVAILABLE;
                }
                r.headers_mut().insert(
                    http::header::CONTENT_TYPE,
                    http::HeaderValue::from_static("application/json"),
                );
                r.headers_mut().insert(
                    http::header::CACHE_CONTROL,
                    http::HeaderValue::from_static("no-store"),
                );
                r
            }
        })
    }

    /// Whether every required backend is up, and the JSON report.
    pub(crate) fn report(&self) -> (bool, Value) {
        let now = Instant::now();
        let mut required_up = true;
        let mut all_up = true;
        let backends: Vec<Value> = self
            .entries
            .iter()
            .map(|e| {
                let seen = e.sample_now();
                let b = &e.backend;
                let status = b.mount.status();
                let up = matches!(status, Status::Up { .. });
                all_up &= up;
                required_up &= up || !b.required;
                let mut v = json!({
                    "name": &*b.name,
                    "state": state(&status, seen, now),
                    "required": b.required,
                    "outages": b.mount.down_count(),
                });
                match status {
                    Status::Up { components, .. } => v["components"] = json!(components),
                    // /healthz has no authentication: a fixed reason only (why it
                    // failed, which may carry a backend's own words, is in the log).
                    Status::Down(_) | Status::Restarting(_) => {
                        v["error"] = json!(format!(
                            "backend \"{}\" is unavailable (the gateway's log says why)",
                            b.name
                        ));
                        if let Some(since) = seen.down_since {
                            v["for_secs"] = json!(now.duration_since(since).as_secs_f64());
                        }
                    }
                    Status::Connecting => {}
                }
                v
            })
            .collect();
        let status = match (required_up, all_up) {
            (true, true) => "ok",
            (true, false) => "degraded",
            (false, _) => "unavailable",
        };
        (required_up, json!({"status": status, "backends": backends}))
    }
}

/// The state word of a backend.
fn state(status: &Status, seen: Seen, now: Instant) -> &'static str {
    match status {
        Status::Up { .. } => "up",
        // The pool is starting a child again after it exited.
        Status::Restarting(_) => "restarting",
        Status::Connecting if !seen.ever_up => "starting",
        _ => match seen.down_since {
            Some(since) if seen.ever_up && now.duration_since(since) < RESTARTING => "restarting",
            _ => "down",
        },
    }
}

impl Entry {
    /// Updates what was seen from the mount's status now.
    fn sample_now(&self) -> Seen {
        let up = matches!(self.backend.mount.status(), Status::Up { .. });
        let Ok(mut seen) = self.seen.lock() else {
            return Seen::default();
        };
        if up {
            seen.ever_up = true;
            seen.down_since = None;
        } else if seen.up || (seen.down_since.is_none() && !seen.ever_up) {
            // Went down now (or never came up: counted from the first sample).
            seen.down_since = Some(Instant::now());
        }
        seen.up = up;
        *seen
    }

    fn sample(&self, series: &Series) {
        let now = self.sample_now();
        let downs = self.backend.mount.down_count();
        let new = match self.seen.lock() {
            Ok(mut seen) => downs.saturating_sub(std::mem::replace(&mut seen.counted, downs)),
            Err(_) => 0,
        };
        series.state(&self.backend.name, now.up, new);
    }
}
