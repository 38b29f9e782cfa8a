//! The accept loop of every snodo listener (the MCP endpoint and the metrics endpoint),
//! with the limits each connection runs under:
//!
//! - at most `max_connections` open at once; further connections wait in the kernel's
//!   accept backlog;
//! - a failed `accept` (out of descriptors, `EMFILE`) is retried after a short pause
//!   and logged at most once per ten seconds: the listener never stops for it;
//! - a connection that sends nothing is dropped after the head timeout (it is peeked
//!   before hyper sees it), one that sends no head in time likewise, and one whose
//!   client stops reading its answer after the write timeout ([`HeadDeadline`]);
//! - HTTP/1.1 only, at most `max_headers` headers;
//! - at shutdown, connections between requests (nothing sent yet, half a head, idle
//!   keep-alive) are closed at once; the others finish their response.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use http::{Request, Response};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

use super::body::Body;
use super::head_deadline::{Answering, Expired, HeadDeadline, Tracked, Watched};

/// What a connection's handler answers: the response, its body carrying the request's
/// [`Answering`] guard (see [`answered`]).
pub(crate) type Answered = Result<Response<Tracked<Body>>, std::convert::Infallible>;

/// The answer `resp` of the request `answering` stands for.
pub(crate) fn answered(resp: Response<Body>, answering: Answering) -> Answered {
    Ok(resp.map(|body| Tracked::new(body, answering)))
}

/// The limits of one listener's connections.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ConnLimits {
    pub(crate) max_connections: usize,
    pub(crate) head_timeout: Duration,
    pub(crate) write_timeout: Duration,
    pub(crate) max_headers: usize,
}

/// How long the accept loop pauses after a failed `accept`.
const ACCEPT_RETRY: Duration = Duration::from_millis(100);

/// At most one log line per this long for failed accepts.
const ACCEPT_LOG_EVERY: Duration = Duration::from_secs(10);

/// The log of failed accepts: retried every [`ACCEPT_RETRY`] while out of descriptors,
/// they would write ten lines a second; the first is logged at once, then at most one
/// per [`ACCEPT_LOG_EVERY`], saying how many failed since the last line.
#[derive(Debug, Default)]
struct AcceptFailures {
    logged: Option<Instant>,
    since: u64,
}

impl AcceptFailures {
    fn failed(&mut self, error: &std::io::Error) {
        self.since += 1;
        let now = Instant::now();
        if self
            .logged
            .is_none_or(|at| now.duration_since(at) >= ACCEPT_LOG_EVERY)
        {
            tracing::warn!(%error, failures = self.since, "accept failed; retrying");
            self.logged = Some(now);
            self.since = 0;
        }
    }
}

/// The open connections of a listener whose accept loop ended.
#[derive(Debug)]
pub(crate) struct Open {
    graceful: GracefulShutdown,
}

impl Open {
    /// Lets the open connections finish their responses for up to `drain`; when some are
    /// still answering then, calls `overdue` (which makes them end) and waits up to
    /// `grace` more for their last bytes to be written. Returns whether the drain ended
    /// in time.
    pub(crate) async fn drain(
        self,
        drain: Duration,
        overdue: impl FnOnce(),
        grace: Duration,
    ) -> bool {
        let done = self.graceful.shutdown();
        tokio::pin!(done);
        if tokio::time::timeout(drain, &mut done).await.is_ok() {
            return true;
        }
        overdue();
        let _ = tokio::time::timeout(grace, &mut done).await;
        false
    }
}

/// Accepts connections on `listener` and serves each with `handler` until `shutdown`
/// completes; then closes the connections that are between requests and gives back
/// the others.
///
/// `handler` gets each request and the guard that says its response is in progress,
/// and returns the future hyper polls as it is (no wrapper: each would be one more copy
/// of the request's future).
pub(crate) async fn accept<H, Fut>(
    listener: TcpListener,
    limits: ConnLimits,
    handler: H,
    shutdown: impl Future<Output = ()>,
) -> Open
where
    H: Fn(Request<Incoming>, Answering) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Answered> + Send + 'static,
{
    let graceful = GracefulShutdown::new();
    let closing = CancellationToken::new();
    let connections = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let mut builder = http1::Builder::new();
    // The head read deadline is the connection's own (`head_deadline`), not hyper's
    // `header_read_timeout`, which arms a timer per request.
    builder.max_headers(limits.max_headers);
    tokio::pin!(shutdown);
    let mut accept_failures = AcceptFailures::default();
    loop {
        let permit = tokio::select! {
            p = Arc::clone(&connections).acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break,
            },
            () = &mut shutdown => break,
        };
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _peer)) => stream,
                Err(e) => {
                    // Out of descriptors (or a connection reset before it was
                    // accepted): the listener stays, and tries again shortly.
                    accept_failures.failed(&e);
                    tokio::time::sleep(ACCEPT_RETRY).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let connection = Connection {
            stream,
            permit,
            limits,
            builder: builder.clone(),
            watcher: graceful.watcher(),
            closing: closing.clone(),
        };
        tokio::spawn(connection.serve(handler.clone()));
    }
    drop(listener);
    closing.cancel();
    Open { graceful }
}

/// One accepted connection and what it needs to be served.
struct Connection {
    stream: TcpStream,
    permit: OwnedSemaphorePermit,
    limits: ConnLimits,
    builder: http1::Builder,
    watcher: hyper_util::server::graceful::Watcher,
    closing: CancellationToken,
}

impl Connection {
    async fn serve<H, Fut>(self, handler: H)
    where
        H: Fn(Request<Incoming>, Answering) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Answered> + Send + 'static,
    {
        let Self {
            stream,
            permit,
            limits,
            builder,
            watcher,
            closing,
        } = self;
        // A client that sends nothing at all must not hold a connection slot, nor
        // delay shutdown.
        let mut first = [0u8; 1];
        tokio::select! {
            peeked = tokio::time::timeout(limits.head_timeout, stream.peek(&mut first)) => {
                if !matches!(peeked, Ok(Ok(n)) if n > 0) {
                    return;
                }
            }
            () = closing.cancelled() => return,
        }
        let deadline = HeadDeadline::new(limits.head_timeout, limits.write_timeout);
        let svc = {
            let deadline = Arc::clone(&deadline);
            service_fn(move |req: Request<Incoming>| handler(req, deadline.begin()))
        };
        let io = TokioIo::new(Watched::new(stream, Arc::clone(&deadline)));
        let conn = watcher.watch(builder.serve_connection(io, svc));
        // The connection runs in a task of its own, so that its requests never poll
        // the deadline; this task wakes only at a deadline, at shutdown or at its end.
        let mut serving = tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "connection ended with an error");
            }
        });
        let expired = deadline.expired();
        tokio::pin!(expired);
        let mut closing_seen = false;
        loop {
            tokio::select! {
                _ = &mut serving => break,
                why = &mut expired => {
                    match why {
                        Expired::Head => tracing::debug!("closing a connection that sent no request head in time"),
                        Expired::Write => tracing::debug!("closing a connection whose client stopped reading its answer"),
                    }
                    serving.abort();
                    let _ = serving.await;
                    break;
                }
                () = closing.cancelled(), if !closing_seen => {
                    closing_seen = true;
                    // Shutdown: a connection between requests has nothing to finish.
                    if deadline.is_idle() {
                        serving.abort();
                        let _ = serving.await;
                        break;
                    }
                }
            }
        }
        drop(permit);
    }
}
