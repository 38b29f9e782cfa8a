//! The tasks extension in the router: `tools/call` as a task, `tasks/get`,
//! `tasks/update` and `tasks/cancel`.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt as _;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::call::shape;
use super::{Answer, Call, ResultObject, Router, Stop};
use crate::model::ToolResult;
use crate::protocol::{Dialect, Method, RpcError};
use crate::runtime::catalogue::CompiledTool;
use crate::runtime::context::RequestContext;
use crate::runtime::envelopes::ResultType;
use crate::runtime::error::HandlerError;
use crate::runtime::policy::{Admitted, Limited};
use crate::tasks::wire::{self, declared};
use crate::tasks::{NewTask, Outcome, TaskLink};

impl Router<'_> {
    /// Creates a task for a `tools/call` and starts its worker; answers the
    /// `CreateTaskResult` once the store holds the task. Questions the tool asks before
    /// its task ([`Tool::task_input`](crate::Tool::task_input)) are answered first, in
    /// ordinary rounds.
    pub(super) async fn start_task(
        &self,
        call: &Call,
        tool: &CompiledTool,
        arguments: Value,
        ctx: RequestContext,
        admitted: Option<Admitted>,
    ) -> Result<ResultObject, Stop> {
        let inputs = crate::tasks::builder::inputs(&tool.slots);
        if !inputs.is_empty() {
            ctx.ask_all(inputs.iter().cloned())
                .await
                .map_err(|e| Stop::from_handler(e, || RpcError::invalid_params("Not found")))?;
        }
        let tasks = self.runtime.tasks();
        tasks.start().await;
        let Some(slot) = tasks.try_run() else {
            let busy = ToolResult::error(format!(
                "Tool {} cannot start a task now: too many tasks are running; retry later",
                tool.name
            ));
            return Ok(shape(call.dialect, busy)?);
        };
        let options = &tasks.options;
        let id = crate::tasks::new_id()?;
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        let record = tasks
            .store()
            .create(NewTask {
                id: id.clone(),
                owner: crate::tasks::owner(ctx.principal()),
                ttl_ms: options.ttl.map(ms),
                poll_interval_ms: Some(ms(options.poll_interval)),
                status_message: None,
                instance: options.instance.clone(),
                lease: options.lease,
                limits: options.limits,
            })
            .await
            .map_err(|e| wire::create_failed(&e))?;
        let link = TaskLink {
            tasks: Arc::clone(&tasks),
            id: id.into(),
        };
        let cancel = CancellationToken::new();
        let worker = ctx.for_worker(Arc::new(link.clone()), cancel.clone());
        let work = run(
            Arc::clone(&tool.handler),
            tool.name.clone(),
            tool.enforcer.as_deref().and_then(|e| e.timeout()),
            call.dialect,
            arguments,
            (worker, link.clone()),
        );
        crate::tasks::worker::spawn(link, cancel, work, (slot, admitted));
        Ok(ResultObject::from(wire::created(&record)))
    }

    /// `tasks/get`, `tasks/update`, `tasks/cancel`: owner-checked, only for a request
    /// that declares the extension.
    pub(super) async fn task_op(&self, call: &Call, ctx: &RequestContext) -> Answer {
        if !declared(ctx.client_capabilities()) {
            return Err(wire::missing_extension());
        }
        let params = call.params.task()?;
        let id = params.task_id.as_str();
        let tasks = self.runtime.tasks();
        tasks.start().await;
        let store = tasks.store();
        let owner = crate::tasks::owner(ctx.principal());
        let unavailable = |e: crate::tasks::StoreError| RpcError::internal(e.to_string());
        let known = match call.method {
            Method::TasksGet => {
                let record = store.get(id, &owner).await.map_err(unavailable)?;
                return record
                    .map(|r| ResultObject::from(wire::detailed(&r)))
                    .ok_or_else(wire::not_found);
            }
            Method::TasksUpdate => {
                let responses = params.input_responses.clone();
                store
                    .add_input_responses(id, &owner, responses)
                    .await
                    .map_err(unavailable)?
            }
            _ => store
                .request_cancel(id, &owner)
                .await
                .map_err(unavailable)?,
        };
        if known {
            Ok(ResultObject::default())
        } else {
            Err(wire::not_found())
        }
    }
}

/// A task's work: the handler (under the tool's timeout, panics caught), re-run with
/// the answers when it asks by returning `InputRequired`, and its outcome as stored.
async fn run(
    handler: crate::runtime::tool::ToolHandler,
    name: String,
    timeout: Option<Duration>,
    dialect: &'static Dialect,
    arguments: Value,
    (ctx, link): (RequestContext, TaskLink),
) -> Outcome {
    loop {
        let attempt = AssertUnwindSafe(handler(arguments.clone(), ctx.clone())).catch_unwind();
        let ended = match timeout {
            None => attempt.await,
            Some(after) => match tokio::time::timeout(after, attempt).await {
                Ok(ended) => ended,
                Err(_) => Ok(Ok(Limited::Timeout { after }.tool_result(&name))),
            },
        };
        let result = match ended {
            Err(_) => {
                tracing::error!(tool = %name, "task handler panicked");
                return Outcome::Error(wire::error_object(&RpcError::internal(
                    "Internal error: the handler failed",
                )));
            }
            Ok(Ok(result)) => result,
            Ok(Err(HandlerError::Failed(message))) => ToolResult::error(message),
            Ok(Err(HandlerError::Protocol(e))) => return Outcome::Error(wire::error_object(&e)),
            Ok(Err(HandlerError::NotFound)) => {
                return Outcome::Error(wire::error_object(&RpcError::invalid_params("Not found")));
            }
            Ok(Err(HandlerError::InputRequired(input))) => {
                match link
                    .collect(input.requests, |_, _| true, ctx.cancellation())
                    .await
                {
                    Ok(answers) => {
                        ctx.add_answers(answers);
                        continue;
                    }
                    Err(e) => return failed(e),
                }
            }
        };
        return match shape(dialect, result).map(|r| r.to_json()) {
            Ok(text) => match serde_json::from_str::<Map<String, Value>>(&text) {
                Ok(mut object) => {
                    ResultType::Complete.write(&mut object);
                    Outcome::Result(Value::Object(object))
                }
                Err(e) => Outcome::Error(wire::error_object(&RpcError::internal(e.to_string()))),
            },
            Err(e) => Outcome::Error(wire::error_object(&e)),
        };
    }
}

fn failed(e: HandlerError) -> Outcome {
    let e = match e {
        HandlerError::Protocol(e) => e,
        HandlerError::Failed(m) => RpcError::internal(m),
        HandlerError::NotFound => RpcError::invalid_params("Not found"),
        HandlerError::InputRequired(_) => RpcError::internal("The task needed more input"),
    };
    Outcome::Error(wire::error_object(&e))
}
