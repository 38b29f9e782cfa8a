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
//! - HTTP/1.1 and HTTP/2 on the same listener (hyper-util's auto builder: HTTP/2 by
//!   prior knowledge in cleartext, by ALPN over TLS), at most `max_headers` headers on
//!   either, and HTTP/2's own limits ([`Http2Limits`]: concurrent streams, header list
//!   size, keep-alive PINGs; hyper's reset-flood protections on);
//! - over TLS, the handshake must end within the head timeout;
//! - at shutdown, connections between requests (nothing sent yet, half a head, idle
//!   keep-alive) are closed at once; the others finish their response (an HTTP/2
//!   connection is sent GOAWAY and finishes its open streams).

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::future::Either;
use http::{Request, Response};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

use super::body::Body;
use super::config::Http2Limits;
use super::head_deadline::{Answering, Expired, HeadDeadline, Tracked, Watched};
use super::listener::{Accept, Stream};
use super::response;

/// A listener's TLS acceptor (none without the `tls` feature).
#[cfg(feature = "tls")]
pub(crate) type TlsAcceptor = super::tls::Acceptor;
/// A listener's TLS acceptor (none without the `tls` feature).
#[cfg(not(feature = "tls"))]
pub(crate) type TlsAcceptor = std::convert::Infallible;

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
    pub(crate) http2: Http2Limits,
}

/// The connection builder for `limits`: HTTP/1.1 and HTTP/2, each bounded.
fn builder(limits: &ConnLimits) -> auto::Builder<TokioExecutor> {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    // The head read deadline is the connection's own (`head_deadline`), not hyper's
    // `header_read_timeout`, which arms a timer per request.
    builder.http1().max_headers(limits.max_headers);
    let h2 = limits.http2;
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(h2.max_concurrent_streams)
        .max_header_list_size(h2.max_header_list_bytes)
        .keep_alive_interval(h2.keep_alive_interval)
        .keep_alive_timeout(h2.keep_alive_timeout)
        // hyper's defaults, stated: streams reset by the client before they were
        // answered (CVE-2023-44487, "rapid reset") and streams reset by the server for
        // the client's errors, each bounded per connection (then GOAWAY).
        .max_pending_accept_reset_streams(Some(20))
        .max_local_error_reset_streams(Some(1024));
    builder
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
pub(crate) async fn accept<L, H, Fut>(
    listener: L,
    limits: ConnLimits,
    tls: Option<TlsAcceptor>,
    handler: H,
    shutdown: impl Future<Output = ()>,
) -> Open
where
    L: Accept,
    H: Fn(Request<Incoming>, Answering) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Answered> + Send + 'static,
{
    let graceful = GracefulShutdown::new();
    let closing = CancellationToken::new();
    let connections = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let builder = Arc::new(builder(&limits));
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
                Ok(stream) => stream,
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
        // (Without the `tls` feature the acceptor is `Option<Infallible>`, which is Copy.)
        #[cfg_attr(not(feature = "tls"), allow(clippy::clone_on_copy))]
        let connection = Connection {
            stream,
            permit,
            limits,
            tls: tls.clone(),
            builder: Arc::clone(&builder),
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
struct Connection<S> {
    stream: S,
    permit: OwnedSemaphorePermit,
    limits: ConnLimits,
    tls: Option<TlsAcceptor>,
    builder: Arc<auto::Builder<TokioExecutor>>,
    watcher: hyper_util::server::graceful::Watcher,
    closing: CancellationToken,
}

impl<S: Stream> Connection<S> {
    async fn serve<H, Fut>(self, handler: H)
    where
        H: Fn(Request<Incoming>, Answering) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Answered> + Send + 'static,
    {
        let Self {
            stream,
            permit,
            limits,
            tls,
            builder,
            watcher,
            closing,
        } = self;
        // A client that sends nothing at all must not hold a connection slot, nor
        // delay shutdown.
        tokio::select! {
            sent = tokio::time::timeout(limits.head_timeout, stream.first_bytes()) => {
                if !matches!(sent, Ok(true)) {
                    return;
                }
            }
            () = closing.cancelled() => return,
        }
        let deadline = HeadDeadline::new(limits.head_timeout, limits.write_timeout);
        let io = Watched::new(stream, Arc::clone(&deadline));
        let served = Served {
            deadline,
            limits,
            builder,
            watcher,
            closing,
        };
        match tls {
            None => served.run(io, handler).await,
            #[cfg(feature = "tls")]
            Some(acceptor) => {
                // The handshake is part of the head: it must end within the head
                // timeout (and shutdown does not wait for it).
                let shaken = tokio::select! {
                    s = tokio::time::timeout(limits.head_timeout, acceptor.accept(io)) => s,
                    () = served.closing.cancelled() => return,
                };
                match shaken {
                    Ok(Ok(tls)) => served.run(tls, handler).await,
                    Ok(Err(e)) => tracing::debug!(error = %e, "TLS handshake failed"),
                    Err(_) => tracing::debug!(
                        "closing a connection whose TLS handshake did not end in time"
                    ),
                }
            }
            #[cfg(not(feature = "tls"))]
            Some(never) => match never {},
        }
        drop(permit);
    }
}

/// A connection past its first bytes (and its TLS handshake), served by hyper.
struct Served {
    deadline: Arc<HeadDeadline>,
    limits: ConnLimits,
    builder: Arc<auto::Builder<TokioExecutor>>,
    watcher: hyper_util::server::graceful::Watcher,
    closing: CancellationToken,
}

impl Served {
    async fn run<I, H, Fut>(self, io: I, handler: H)
    where
        I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
        H: Fn(Request<Incoming>, Answering) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Answered> + Send + 'static,
    {
        let Self {
            deadline,
            limits,
            builder,
            watcher,
            closing,
        } = self;
        let svc = {
            let deadline = Arc::clone(&deadline);
            let max_headers = limits.max_headers;
            service_fn(move |req: Request<Incoming>| {
                let answering = deadline.begin();
                // HTTP/1.1's count is hyper's (431 past it); HTTP/2 bounds the header
                // block's bytes, and the count is checked here, the same for both.
                if req.headers().len() > max_headers {
                    let refused = answered(response::header_fields_too_large(), answering);
                    Either::Left(std::future::ready(refused))
                } else {
                    Either::Right(handler(req, answering))
                }
            })
        };
        let conn = watcher.watch(builder.serve_connection(TokioIo::new(io), svc).into_owned());
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
    }
}
