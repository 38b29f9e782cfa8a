//! [`McpService`]: the MCP endpoint as a tower `Service` over `http` requests.

use std::convert::Infallible;
use std::future::{Future, Ready};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures_util::future::Either;
use http::{Method as HttpMethod, Request, Response};
use http_body_util::{BodyExt as _, Limited};
use tokio::time::Instant;

use super::batch;
use super::body::Body;
use super::budget::AnswerBudget;
use super::config::HttpConfig;
use super::exec;
use super::guards;
use super::headers::{RequestHeaders, Seen};
use super::listen;
use super::negotiation::{self, Headers, Rejection};
use super::response;
use crate::engine::admission::{self, Admission};
use crate::engine::observe::{Record, Transport};
use crate::engine::{self, Engine, Limits};
use crate::protocol::trace::{TRACESTATE, TraceContext};
use serde_json::value::RawValue;

use crate::caller::Principal;
use crate::protocol::jsonrpc::Incoming;
use crate::protocol::params::SplitParams;
use crate::protocol::{Method, RequestId};
use crate::router::Call;
use crate::runtime::Runtime;

/// What every request of one endpoint shares: the transport-neutral engine and the
/// HTTP settings.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) engine: Arc<Engine>,
    pub(crate) config: HttpConfig,
    /// The answers' byte budgets.
    pub(crate) budget: AnswerBudget,
}

/// The Streamable HTTP MCP endpoint. Mount it at `/mcp` in any tower/hyper/axum stack;
/// it keeps no per-client state, so any number of instances can serve the same clients.
#[derive(Clone, Debug)]
pub struct McpService {
    shared: Arc<Shared>,
}

impl McpService {
    /// The endpoint for `runtime` with default (loopback) settings.
    #[must_use]
    pub fn new(runtime: Runtime) -> Self {
        Self::with_config(runtime, HttpConfig::default())
    }

    /// The endpoint with explicit settings.
    #[must_use]
    pub fn with_config(runtime: Runtime, config: HttpConfig) -> Self {
        let limits = Limits {
            max_concurrent: config.max_concurrent,
            max_queued: config.max_queued,
            request_timeout: config.request_timeout,
            max_listen_streams: config.max_listen_streams,
        };
        let budget = AnswerBudget::new(config.max_answer_bytes, config.max_buffered_answer_bytes);
        let shared = Shared {
            engine: Arc::new(Engine::new(runtime, limits)),
            config,
            budget,
        };
        Self {
            shared: Arc::new(shared),
        }
    }

    /// The settings.
    #[must_use]
    pub fn config(&self) -> &HttpConfig {
        &self.shared.config
    }

    /// Ends every `subscriptions/listen` stream with its final result (the server does
    /// this when shutdown begins).
    pub fn begin_shutdown(&self) {
        self.shared.engine.begin_shutdown();
    }

    /// Cancels every request still executing (the server does this after the shutdown
    /// drain period).
    pub fn cancel_all(&self) {
        self.shared.engine.cancel_all();
    }

    /// Ends every request still executing with a final JSON-RPC error (`-32603`, "Server
    /// shutting down", HTTP 503 when nothing was sent yet, else the last event of its
    /// SSE stream): what the server does when the shutdown drain period ends. Unlike
    /// [`cancel_all`](Self::cancel_all), no request is left without an answer.
    pub fn stop_all(&self) {
        self.shared.engine.stop_all();
    }

    /// Answers one HTTP request.
    //
    // The futures of this file are `async` blocks rather than `async fn`s: an `async fn`
    // moves its arguments into locals of its state, a second copy of the request (and
    // hyper copies the whole future when it starts it).
    #[allow(
        clippy::manual_async_fn,
        reason = "an async fn keeps a second copy of each argument in its future; the block does not"
    )]
    pub fn handle<B>(&self, req: Request<B>) -> impl Future<Output = Response<Body>> + Send + '_
    where
        B: http_body::Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        async move {
            // The head's arrival: the body's deadline and the record's start.
            let arrived = Instant::now();
            let mut record = self
                .shared
                .engine
                .observe
                .begin(Transport::Http, 0, arrived);
            let resp = match self.answer(req, arrived, &mut record).await {
                Ok(r) | Err(r) => r,
            };
            if let Some(mut r) = record {
                // Answered here (not by a stream that an execution still feeds).
                r.http_status(resp.status().as_u16());
                if let Some(n) = http_body::Body::size_hint(resp.body()).exact() {
                    r.add_bytes_out(usize::try_from(n).unwrap_or(usize::MAX));
                }
            }
            resp
        }
    }

    #[allow(
        clippy::manual_async_fn,
        reason = "an async fn keeps a second copy of each argument in its future; the block does not"
    )]
    fn answer<'a, B>(
        &'a self,
        req: Request<B>,
        arrived: Instant,
        record: &'a mut Option<Record>,
    ) -> impl Future<Output = Result<Response<Body>, Response<Body>>> + Send + 'a
    where
        B: RequestBody,
    {
        async move {
            // The head and the body are locals of this block only: what runs the request
            // below is all it keeps across its await (a local borrowed in an `async fn` keeps
            // its place in the future's state until its scope ends).
            let next = {
                if req.method() != HttpMethod::POST {
                    return Err(response::method_not_allowed());
                }
                let (parts, body) = req.into_parts();
                // One walk over the headers for every step below.
                let headers = RequestHeaders::scan(&parts.headers);
                let (bytes, principal) = self.read(&parts, &headers, body, arrived, record).await?;
                if batch::is_batch(&bytes) {
                    if let Some(r) = record.as_mut() {
                        r.method_name("(batch)");
                    }
                    return Ok(batch::answer(&self.shared, &headers, &bytes, principal).await);
                }
                self.admit(&headers, &bytes, principal, record)?
            };
            // (`next` moves whole into a plain fn: a value destructured here would keep its
            // place in this future's state.)
            Ok(self.run(next, record).await)
        }
    }

    /// The future that answers an admitted message.
    fn run<'a>(
        &'a self,
        next: Next,
        record: &'a mut Option<Record>,
    ) -> Either<Ready<Response<Body>>, impl Future<Output = Response<Body>> + Send + 'a> {
        match next {
            Next::Answered(response) => Either::Left(std::future::ready(response)),
            Next::Execute(id, call, principal, trace) => Either::Right(exec::execute(
                &self.shared,
                id,
                call,
                principal,
                record,
                trace,
            )),
        }
    }

    /// The checks of the HTTP request, the authentication, and the body.
    #[allow(
        clippy::manual_async_fn,
        reason = "an async fn keeps a second copy of each argument in its future; the block does not"
    )]
    fn read<'a, B>(
        &'a self,
        parts: &'a http::request::Parts,
        headers: &'a RequestHeaders<'a>,
        body: B,
        arrived: Instant,
        record: &'a mut Option<Record>,
    ) -> impl Future<Output = Result<(Bytes, Option<Principal>), Response<Body>>> + Send + 'a
    where
        B: RequestBody,
    {
        async move {
            let cfg = &self.shared.config;
            guards::check_origin(cfg, headers, &parts.uri)
                .and_then(|()| guards::check_content_type(headers))
                .and_then(|()| guards::check_accept(headers))
                .map_err(guards::Refused::response)?;
            let too_large = headers
                .content_length
                .first()
                .and_then(|v| v.to_str().ok())
                .and_then(|l| l.parse::<usize>().ok())
                .is_some_and(|l| l > cfg.max_body_bytes);
            let principal = match &cfg.authenticator {
                None => None,
                Some(auth) => auth
                    .authenticate(parts)
                    .await
                    .map_err(|r| response::auth_rejected(&r))?,
            };
            if too_large {
                return Err(response::payload_too_large());
            }
            // The whole body is due `body_read_timeout` after the head arrived. A body
            // that came with its head is read on the first poll, before the timer is
            // made (a tokio timer costs ~0.5 k instructions to make and drop).
            let mut collect = std::pin::pin!(Limited::new(body, cfg.max_body_bytes).collect());
            let collected = match futures_util::poll!(collect.as_mut()) {
                Poll::Ready(collected) => collected,
                Poll::Pending => {
                    let deadline = engine::deadline(arrived, cfg.body_read_timeout);
                    let Ok(collected) = tokio::time::timeout_at(deadline, collect).await else {
                        return Err(response::body_timeout());
                    };
                    collected
                }
            };
            let bytes: Bytes = match collected {
                Ok(c) => c.to_bytes(),
                Err(e) if e.is::<http_body_util::LengthLimitError>() => {
                    return Err(response::payload_too_large());
                }
                Err(_) => return Err(response::bad_body()),
            };
            if let Some(r) = record.as_mut() {
                r.set_bytes_in(bytes.len());
            }
            Ok((bytes, principal))
        }
    }

    /// Admits one message: what to execute, or the answer when there is nothing to run.
    #[allow(
        clippy::result_large_err,
        reason = "a refusal is the response itself, as in the rest of this file"
    )]
    fn admit(
        &self,
        headers: &RequestHeaders<'_>,
        bytes: &[u8],
        principal: Option<Principal>,
        record: &mut Option<Record>,
    ) -> Result<Next, Response<Body>> {
        let incoming = parse_body(bytes).map_err(reject)?;
        let runtime = &self.shared.engine.runtime;
        match incoming {
            Incoming::Request { id, method, params } => {
                let admitted = admission::admit(
                    runtime,
                    &mut Headers(headers),
                    &id,
                    (&method, params),
                    record.as_mut(),
                )
                .map_err(|refused| reject(refused.into()))?;
                match admitted {
                    Admission::Listen(call) => {
                        if let Some(r) = record.as_mut() {
                            r.admitted(&id, &call, principal.as_ref());
                        }
                        listen::serve(&self.shared, id.clone(), &call, principal.as_ref())
                            .map(Next::Answered)
                            .map_err(|f| {
                                if let Some(r) = record.as_mut() {
                                    r.failure(&f);
                                }
                                response::failure(&id, Some(call.dialect), f)
                            })
                    }
                    Admission::Execute(call) => {
                        let trace = trace_parent(headers);
                        Ok(Next::Execute(id, call, principal, trace))
                    }
                }
            }
            Incoming::Notification { method, params } => {
                if let Some(r) = record.as_mut() {
                    r.method_name(&method);
                }
                negotiation::admit_notification(runtime, headers).map_err(reject)?;
                if Method::parse(&method) == Method::Cancelled {
                    engine::cancel_by_notification(&self.shared.engine, principal.as_ref(), params);
                }
                Ok(Next::Answered(response::accepted()))
            }
            Incoming::Response { id, result, error } => {
                negotiation::admit_response(runtime, headers).map_err(reject)?;
                deliver(runtime, id, result, error);
                Ok(Next::Answered(response::accepted()))
            }
        }
    }
}

/// What an admitted message leads to.
#[allow(
    clippy::large_enum_variant,
    reason = "moved once, into the execution; boxing it costs an allocation per request"
)]
enum Next {
    /// Nothing to execute: the answer.
    Answered(Response<Body>),
    /// A request to execute, with its caller and the transport's trace parent.
    Execute(RequestId, Call, Option<Principal>, Option<TraceContext>),
}

/// The W3C `traceparent`/`tracestate` headers, if well-formed (one `traceparent`).
pub(super) fn trace_parent(headers: &RequestHeaders<'_>) -> Option<TraceContext> {
    let Seen::Once(parent) = headers.traceparent else {
        return None;
    };
    // Several `tracestate` headers are one list (W3C), joined with commas.
    let mut state = String::new();
    for v in headers.map.get_all(TRACESTATE) {
        if let Ok(v) = v.to_str() {
            if !state.is_empty() {
                state.push(',');
            }
            state.push_str(v);
        }
    }
    TraceContext::parse(
        parent.to_str().ok()?,
        (!state.is_empty()).then_some(state.as_str()),
    )
}

/// Routes a client's answer to a server-to-client request by its id. An id another
/// instance holds is forwarded to it over the bus (when the runtime has one); unknown
/// ids (answered late, or for another instance without a bus) are dropped.
pub(super) fn deliver(
    runtime: &Runtime,
    id: Option<RequestId>,
    result: Option<&RawValue>,
    error: Option<&RawValue>,
) {
    let Some(RequestId::String(id)) = id else {
        return;
    };
    let answer = engine::client_answer(result, error);
    if !runtime.deliver_answer(&id, answer) {
        tracing::warn!(
            id = %id,
            "dropped a client answer that no request of this instance waits for \
             (late, or routed to another instance)"
        );
    }
}

/// Reads the message and its `params` in one pass (the one reader of every transport);
/// a message that cannot be read is refused before a dialect is chosen.
pub(super) fn parse_body(bytes: &[u8]) -> Result<Incoming<'_, SplitParams<'_>>, Rejection> {
    admission::read_message(bytes).map_err(Rejection::from)
}

pub(super) fn reject(r: Rejection) -> Response<Body> {
    response::rpc_error(r.status, r.id.as_ref(), &r.error)
}

impl<B> tower_service::Service<Request<B>> for McpService
where
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let this = self.clone();
        Box::pin(async move { Ok(this.handle(req).await) })
    }
}

/// What the service reads a request body as (any `http_body::Body` whose chunks and
/// errors can cross threads): one name for the bounds the service's steps share.
trait RequestBody:
    http_body::Body<Data: Send, Error: Into<Box<dyn std::error::Error + Send + Sync>>> + Send + 'static
{
}

impl<B> RequestBody for B where
    B: http_body::Body<Data: Send, Error: Into<Box<dyn std::error::Error + Send + Sync>>>
        + Send
        + 'static
{
}
