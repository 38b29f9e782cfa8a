//! The tasks extension in the router: `tools/call` as a task, `tasks/get`,
//! `tasks/update` and `tasks/cancel`, and the extension in the capabilities.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt as _;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::builder::TaskInputs;
use super::wire::{self, declared};
use super::{NewTask, Outcome, TaskLink, TaskSupport};
use crate::model::ToolResult;
use crate::protocol::{Dialect, Method, RpcError};
use crate::router::{Answer, Call, ResultObject, Router, Stop, shape};
use crate::runtime::catalogue::CompiledTool;
use crate::runtime::context::RequestContext;
use crate::runtime::envelopes::ResultType;
use crate::runtime::error::HandlerError;
use crate::runtime::policy::{Admitted, Limited};

impl Router<'_> {
    /// Whether this call of `tool` runs as a task: when the tool supports tasks and
    /// the request declares the extension; refused when the tool requires it and the
    /// request does not declare it.
    pub(crate) fn as_task(
        &self,
        call: &Call,
        tool: &CompiledTool,
        ctx: &RequestContext,
    ) -> Result<bool, RpcError> {
        let Some(support) = tool.slots.get::<TaskSupport>() else {
            return Ok(false);
        };
        let declared = call.dialect.offers_tasks() && declared(ctx.client_capabilities());
        if *support == TaskSupport::Required && !declared {
            return Err(wire::missing_extension());
        }
        Ok(declared)
    }

    /// Adds the tasks extension to `capabilities` when the dialect offers it and a
    /// tool runs as a task.
    pub(crate) fn declare_tasks(&self, call: &Call, capabilities: &mut Value) {
        if !(call.dialect.offers_tasks() && call.catalogue.has_task_tools()) {
            return;
        }
        if let Value::Object(caps) = capabilities {
            if let Value::Object(ext) = caps
                .entry("extensions")
                .or_insert_with(|| Value::Object(Map::new()))
            {
                ext.insert(super::TASKS_EXTENSION.into(), serde_json::json!({}));
            }
        }
    }

    /// Creates a task for a `tools/call` and starts its worker; answers the
    /// `CreateTaskResult` once the store holds the task. Questions the tool asks before
    /// its task ([`Tool::task_input`](crate::Tool::task_input)) are answered first, in
    /// ordinary rounds.
    pub(crate) async fn start_task(
        &self,
        call: &Call,
        tool: &CompiledTool,
        arguments: Value,
        ctx: RequestContext,
        admitted: Option<Admitted>,
    ) -> Result<ResultObject, Stop> {
        let inputs = tool.slots.get::<TaskInputs>().map_or(&[][..], |i| &i.0);
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
        let id = super::new_id()?;
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        let record = tasks
            .store()
            .create(NewTask {
                id: id.clone(),
                owner: super::owner(ctx.principal()),
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
        super::worker::spawn(link, cancel, work, (slot, admitted));
        Ok(ResultObject::from(wire::created(&record)))
    }

    /// `tasks/get`, `tasks/update`, `tasks/cancel`: owner-checked, only for a request
    /// that declares the extension.
    pub(crate) async fn task_op(&self, call: &Call, ctx: &RequestContext) -> Answer {
        if !declared(ctx.client_capabilities()) {
            return Err(wire::missing_extension().into());
        }
        let params = call.params.task()?;
        let id = params.task_id.as_str();
        let tasks = self.runtime.tasks();
        tasks.start().await;
        let store = tasks.store();
        let owner = super::owner(ctx.principal());
        let unavailable = |e: super::StoreError| RpcError::internal(e.to_string());
        let known = match call.method {
            Method::TasksGet => {
                let record = store.get(id, &owner).await.map_err(unavailable)?;
                return record
                    .map(|r| ResultObject::from(wire::detailed(&r)))
                    .ok_or_else(|| wire::not_found().into());
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
            Err(wire::not_found().into())
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
