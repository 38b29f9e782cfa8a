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
//! - HTTP/1.1 and HTTP/2 on the same listener (HTTP/2 by prior knowledge in cleartext,
//!   by ALPN over TLS), the version chosen once per connection from its ALPN or its
//!   first bytes (hyper-util's auto builder only when they do not tell), at most
//!   `max_headers` headers on either, and HTTP/2's own limits ([`Http2Limits`]: concurrent streams, header list
//!   size, keep-alive PINGs; hyper's reset-flood protections on);
//! - over TLS, the handshake must end within the head timeout;
//! - at shutdown, connections between requests (nothing sent yet, half a head, idle
//!   keep-alive) are closed at once; the others finish their response (an HTTP/2
//!   connection is sent GOAWAY and finishes its open streams).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures_util::future::Either;
use futures_util::task::AtomicWaker;
use http::{Request, Response};
use hyper::body::Incoming;
use hyper::server::conn::{http1, http2};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulConnection;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::body::Body;
use super::config::Http2Limits;
use super::head_deadline::{Answering, Expired, HeadDeadline, Tracked, Watched};
use super::listener::{Accept, Speaks, Stream};
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

/// The HTTP/2 settings of `limits`, applied alike to hyper's HTTP/2 builder and to the
/// auto builder's.
macro_rules! http2_settings {
    ($builder:expr, $limits:expr) => {{
        let h2 = $limits.http2;
        $builder
            .timer(TokioTimer::new())
            .max_concurrent_streams(h2.max_concurrent_streams)
            .max_header_list_size(h2.max_header_list_bytes)
            .keep_alive_interval(h2.keep_alive_interval)
            .keep_alive_timeout(h2.keep_alive_timeout)
            // hyper's defaults, stated: streams reset by the client before they were
            // answered (CVE-2023-44487, "rapid reset") and streams reset by the server
            // for the client's errors, each bounded per connection (then GOAWAY).
            .max_pending_accept_reset_streams(Some(20))
            .max_local_error_reset_streams(Some(1024));
    }};
}

/// The connection builders of a listener, each bounded: HTTP/1.1's and HTTP/2's for a
/// connection whose version is known before hyper reads it (TLS ALPN, or the first
/// bytes peeked: [`Speaks`]), and hyper-util's auto builder, which reads the first bytes
/// and chooses, for the others.
struct Builders {
    http1: http1::Builder,
    http2: http2::Builder<TokioExecutor>,
    auto: auto::Builder<TokioExecutor>,
}

impl Builders {
    fn new(limits: &ConnLimits) -> Self {
        // The head read deadline is the connection's own (`head_deadline`), not hyper's
        // `header_read_timeout`, which arms a timer per request.
        let mut http1 = http1::Builder::new();
        http1.max_headers(limits.max_headers);
        let mut http2 = http2::Builder::new(TokioExecutor::new());
        http2_settings!(http2, limits);
        let mut auto = auto::Builder::new(TokioExecutor::new());
        auto.http1().max_headers(limits.max_headers);
        http2_settings!(auto.http2(), limits);
        Self { http1, http2, auto }
    }
}

/// How long a connection closed at its head deadline has to end gracefully (an HTTP/2
/// GOAWAY written) before it is cut off.
const CLOSE_GRACE: Duration = Duration::from_secs(1);

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

/// The open connections of a listener whose accept loop ended (each connection's task
/// is tracked; they were told to drain when the loop ended).
#[derive(Debug)]
pub(crate) struct Open {
    connections: TaskTracker,
    /// Cut off every connection still open (after the drain and its grace).
    abort: CancellationToken,
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
        self.connections.close();
        let done = self.connections.wait();
        tokio::pin!(done);
        if tokio::time::timeout(drain, &mut done).await.is_ok() {
            return true;
        }
        overdue();
        if tokio::time::timeout(grace, &mut done).await.is_err() {
            // What is left (a client that never lets an answer be written, e.g. an HTTP/2
            // stream whose window stays shut) is cut off, so nothing outlives the server.
            self.abort.cancel();
            let _ = tokio::time::timeout(grace, &mut done).await;
        }
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
    let tracker = TaskTracker::new();
    let closing = CancellationToken::new();
    let abort = CancellationToken::new();
    let connections = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let builders = Arc::new(Builders::new(&limits));
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
            builders: Arc::clone(&builders),
            closing: closing.clone(),
            abort: abort.clone(),
        };
        tracker.spawn(connection.serve(handler.clone()));
    }
    drop(listener);
    closing.cancel();
    Open {
        connections: tracker,
        abort,
    }
}

/// One accepted connection and what it needs to be served.
struct Connection<S> {
    stream: S,
    permit: OwnedSemaphorePermit,
    limits: ConnLimits,
    tls: Option<TlsAcceptor>,
    builders: Arc<Builders>,
    closing: CancellationToken,
    abort: CancellationToken,
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
            builders,
            closing,
            abort,
        } = self;
        // A client that sends nothing at all must not hold a connection slot, nor
        // delay shutdown.
        let speaks = tokio::select! {
            sent = tokio::time::timeout(limits.head_timeout, stream.first_bytes()) => {
                match sent {
                    Ok(Some(speaks)) => speaks,
                    _ => return,
                }
            }
            () = closing.cancelled() => return,
        };
        let deadline = HeadDeadline::new(limits.head_timeout, limits.write_timeout);
        let io = Watched::new(stream, Arc::clone(&deadline));
        let served = Served {
            deadline,
            limits,
            builders,
            closing,
            abort,
        };
        match tls {
            None => served.run(io, speaks, handler).await,
            // Boxed: the TLS handshake's and the TLS connection's states (about 3.8 KiB)
            // are not carried, for its whole life, by every plain connection's task.
            #[cfg(feature = "tls")]
            Some(acceptor) => Box::pin(served.run_tls(acceptor, io, handler)).await,
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
    builders: Arc<Builders>,
    closing: CancellationToken,
    /// Cancelled when the server gives up on its drain: the connection is cut off.
    abort: CancellationToken,
}

/// Tells a connection to drain: hyper's graceful shutdown (HTTP/1.1 ends after the
/// response in progress, HTTP/2 sends GOAWAY and finishes its open streams).
#[derive(Debug, Default)]
struct DrainSignal {
    set: AtomicBool,
    waker: AtomicWaker,
}

impl DrainSignal {
    fn drain(&self) {
        self.set.store(true, Ordering::Release);
        self.waker.wake();
    }
}

/// A hyper connection that starts its graceful shutdown when its [`DrainSignal`] is
/// set. (hyper-util's `GracefulShutdown` polls a watch channel's `changed()` on every
/// poll of the connection, a lock each time; this reads one atomic and keeps the task's
/// waker.)
struct Drainable<C> {
    conn: Pin<Box<C>>,
    signal: Arc<DrainSignal>,
    draining: bool,
    /// Each wake-up is first sent to the back of the run queue ([`Coalesce::Yes`]).
    coalesce: Coalesce,
}

/// Whether a connection's task lets the tasks woken with it run before it writes.
///
/// An HTTP/2 connection's streams run in tasks of their own, each handing its frames to
/// the connection's task and waking it; tokio runs a task woken that way next (its LIFO
/// slot), so a change delivered to 100 listen streams on one connection was 100 wake-ups
/// of the connection's task and 100 writes of one small DATA frame each. Yielding once per
/// wake-up (the task wakes itself and returns: tokio puts a task that woke itself at the
/// back of the queue) lets every stream woken by the same change hand its frame over
/// first, and the connection writes them together. An HTTP/1.1 connection has nothing to
/// gather (its one stream is polled by its own task): `No`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Coalesce {
    No,
    Yes { yielded: bool },
}

impl Coalesce {
    /// Whether this poll yields (the task woken again at once) instead of polling the
    /// connection: every other poll, when coalescing.
    fn yields(&mut self, cx: &Context<'_>) -> bool {
        let Self::Yes { yielded } = self else {
            return false;
        };
        *yielded = !*yielded;
        if *yielded {
            cx.waker().wake_by_ref();
        }
        *yielded
    }
}

impl<C: GracefulConnection> Future for Drainable<C> {
    type Output = C::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<C::Output> {
        let this = &mut *self;
        if this.coalesce.yields(cx) {
            return Poll::Pending;
        }
        if !this.draining {
            this.signal.waker.register(cx.waker());
            if this.signal.set.load(Ordering::Acquire) {
                this.draining = true;
                this.conn.as_mut().graceful_shutdown();
            }
        }
        this.conn.as_mut().poll(cx)
    }
}

/// Runs `conn` in a task of its own, drained when `signal` is set.
fn spawn_drainable<C>(
    conn: C,
    signal: &Arc<DrainSignal>,
    coalesce: Coalesce,
) -> tokio::task::JoinHandle<()>
where
    C: GracefulConnection + Send + 'static,
    C::Error: std::fmt::Display,
{
    let conn = Drainable {
        conn: Box::pin(conn),
        signal: Arc::clone(signal),
        draining: false,
        coalesce,
    };
    tokio::spawn(async move {
        if let Err(e) = conn.await {
            tracing::debug!(error = %e, "connection ended with an error");
        }
    })
}

impl Served {
    /// [`Served::run`] past a TLS handshake, which is part of the head: it must end
    /// within the head timeout (and shutdown does not wait for it).
    #[cfg(feature = "tls")]
    async fn run_tls<S: Stream, H, Fut>(self, acceptor: TlsAcceptor, io: Watched<S>, handler: H)
    where
        H: Fn(Request<Incoming>, Answering) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Answered> + Send + 'static,
    {
        let shaken = tokio::select! {
            s = tokio::time::timeout(self.limits.head_timeout, acceptor.accept(io)) => s,
            () = self.closing.cancelled() => return,
        };
        match shaken {
            Ok(Ok(tls)) => {
                let speaks = Speaks::from_alpn(tls.get_ref().1.alpn_protocol());
                self.run(tls, speaks, handler).await;
            }
            Ok(Err(e)) => tracing::debug!(error = %e, "TLS handshake failed"),
            Err(_) => {
                tracing::debug!("closing a connection whose TLS handshake did not end in time");
            }
        }
    }

    async fn run<I, H, Fut>(self, io: I, speaks: Speaks, handler: H)
    where
        I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
        H: Fn(Request<Incoming>, Answering) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Answered> + Send + 'static,
    {
        let Self {
            deadline,
            limits,
            builders,
            closing,
            abort,
        } = self;
        let answer = {
            let deadline = Arc::clone(&deadline);
            let max_headers = limits.max_headers;
            move |req: Request<Incoming>| {
                let answering = deadline.begin();
                // HTTP/1.1's count is hyper's (431 past it); HTTP/2 bounds the header
                // block's bytes, and the count is checked here, the same for both.
                if req.headers().len() > max_headers {
                    let refused = answered(response::header_fields_too_large(), answering);
                    Either::Left(std::future::ready(refused))
                } else {
                    Either::Right(handler(req, answering))
                }
            }
        };
        tracing::debug!(protocol = speaks.name(), "serving a connection");
        // The connection runs in a task of its own, so that its requests never poll
        // the deadline; this task wakes only at a deadline, at shutdown or at its end.
        let io = TokioIo::new(io);
        let drain = Arc::new(DrainSignal::default());
        let mut serving = match speaks {
            // HTTP/1.1's dispatcher keeps the request's future in place in the connection's
            // task for the connection's life, answered or not (an idle listen stream keeps
            // it for hours): boxed, the task holds a pointer instead of ~2.2 KiB, for one
            // allocation per request.
            Speaks::Http1 => {
                let svc = service_fn(move |req| Box::pin(answer(req)));
                spawn_drainable(
                    builders.http1.serve_connection(io, svc),
                    &drain,
                    Coalesce::No,
                )
            }
            // HTTP/2 runs each stream in a task of its own: the request's future, a few
            // KiB, would be copied into the stream's future and again into the task;
            // boxed where it is made, only a pointer moves (HTTP/1.1 polls it in place).
            Speaks::Http2 => {
                let svc = service_fn(move |req| Box::pin(answer(req)));
                spawn_drainable(
                    builders.http2.serve_connection(io, svc),
                    &drain,
                    Coalesce::Yes { yielded: false },
                )
            }
            Speaks::Unknown => {
                let svc = service_fn(answer);
                spawn_drainable(
                    builders.auto.serve_connection(io, svc).into_owned(),
                    &drain,
                    Coalesce::No,
                )
            }
        };
        let expired = deadline.expired();
        tokio::pin!(expired);
        let mut closing_seen = false;
        loop {
            tokio::select! {
                _ = &mut serving => break,
                why = &mut expired => {
                    match why {
                        Expired::Head => {
                            tracing::debug!("closing a connection that sent no request head in time");
                            // Closed gracefully (HTTP/2: GOAWAY, so the client knows
                            // not to send on it), then cut off after a short grace.
                            drain.drain();
                            if tokio::time::timeout(CLOSE_GRACE, &mut serving).await.is_err() {
                                serving.abort();
                                let _ = serving.await;
                            }
                        }
                        Expired::Write => {
                            // The client reads nothing: a GOAWAY would not reach it.
                            tracing::debug!("closing a connection whose client stopped reading its answer");
                            serving.abort();
                            let _ = serving.await;
                        }
                    }
                    break;
                }
                () = abort.cancelled() => {
                    serving.abort();
                    let _ = serving.await;
                    break;
                }
                () = closing.cancelled(), if !closing_seen => {
                    closing_seen = true;
                    // Shutdown: a connection between requests has nothing to finish;
                    // the others finish what they answer.
                    if deadline.is_idle() {
                        serving.abort();
                        let _ = serving.await;
                        break;
                    }
                    drain.drain();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A waker that counts its wake-ups.
    #[derive(Default)]
    struct Counted(std::sync::atomic::AtomicUsize);

    impl std::task::Wake for Counted {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// A coalescing connection's task yields once per wake-up (waking itself, so that
    /// it is polled again) before it polls the connection; one that does not coalesce
    /// polls it every time.
    #[test]
    fn a_coalescing_connection_yields_once_per_wake_up() {
        let woken = Arc::new(Counted::default());
        let waker = std::task::Waker::from(Arc::clone(&woken));
        let cx = Context::from_waker(&waker);
        for (mut coalesce, polls, wakes) in [
            (Coalesce::Yes { yielded: false }, 3, 3),
            (Coalesce::No, 6, 0),
        ] {
            woken.0.store(0, Ordering::SeqCst);
            let polled = (0..6).filter(|_| !coalesce.yields(&cx)).count();
            assert_eq!(polled, polls, "{coalesce:?}");
            assert_eq!(woken.0.load(Ordering::SeqCst), wakes, "{coalesce:?}");
        }
    }

    /// The task of a connection lives as long as the connection (an idle listen stream
    /// keeps it for hours): its future must not carry the TLS states on a plain
    /// connection. (With the `tls` feature it was 4,808 bytes, most of them the TLS
    /// handshake's and the TLS connection's states, on every connection; 1,032 since.)
    #[cfg(feature = "tls")]
    #[tokio::test]
    async fn a_connection_task_is_small() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
        let _client = tokio::net::TcpStream::connect(addr).await;
        let (stream, _) = listener.accept().await.unwrap_or_else(|e| panic!("{e}"));
        let limits = ConnLimits {
            max_connections: 1,
            head_timeout: Duration::from_secs(1),
            write_timeout: Duration::from_secs(1),
            max_headers: 100,
            http2: Http2Limits::default(),
        };
        let permit = Arc::new(Semaphore::new(1))
            .acquire_owned()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let connection = Connection {
            stream,
            permit,
            limits,
            tls: None,
            builders: Arc::new(Builders::new(&limits)),
            closing: CancellationToken::new(),
            abort: CancellationToken::new(),
        };
        let serve = connection.serve(|_req: Request<Incoming>, answering: Answering| async move {
            answered(Response::new(Body::empty()), answering)
        });
        let size = std::mem::size_of_val(&serve);
        eprintln!("connection future: {size} bytes");
        assert!(size <= 1536, "{size} bytes");
    }
}
