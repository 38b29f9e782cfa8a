//! The fixture's task tools (the ones the conformance runner's tasks scenarios call).

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use snodo::tasks::TaskSupport;
use snodo::{HandlerError, InputRequest, NoArguments, RpcError, Tool, ToolResult};

#[derive(Deserialize, JsonSchema)]
struct GreetArgs {
    /// Who to greet.
    name: String,
}

#[derive(Deserialize, JsonSchema)]
struct SlowArgs {
    /// How long to work, in seconds (0 to 600).
    #[schemars(range(min = 0, max = 600))]
    seconds: f64,
    /// A label echoed in the result.
    label: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
struct DeleteArgs {
    /// The file to delete (nothing is deleted: the fixture only asks).
    filename: String,
}

fn confirm_form(message: String) -> InputRequest {
    InputRequest::elicit(
        message,
        json!({"type": "object", "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]}),
    )
}

fn name_form() -> InputRequest {
    InputRequest::elicit(
        "Please provide your name",
        json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
    )
}

fn accepted(answer: &serde_json::Value) -> bool {
    answer["action"] == "accept"
}

/// The tools of the tasks scenarios (2026-07-28 only).
pub(crate) fn fixture_tools() -> Vec<Tool> {
    vec![
        Tool::new("greet")
            .description("Greets someone (synchronous)")
            .handler(|a: GreetArgs| async move { ToolResult::text(format!("Hello, {}!", a.name)) }),
        Tool::new("slow_compute")
            .description(
                "Works for `seconds` seconds, then answers (a task when the client supports tasks)",
            )
            .task(TaskSupport::Optional)
            .handler(|a: SlowArgs, ctx: snodo::RequestContext| async move {
                let label = a.label.unwrap_or_else(|| "job".to_owned());
                let total = Duration::from_secs_f64(a.seconds.clamp(0.0, 600.0));
                let step = Duration::from_millis(250);
                let mut done = Duration::ZERO;
                while done < total {
                    let wait = step.min(total - done);
                    tokio::select! {
                        () = tokio::time::sleep(wait) => done += wait,
                        () = ctx.cancellation().cancelled() => {
                            return Err(HandlerError::Protocol(RpcError::internal("cancelled")));
                        }
                    }
                    let message =
                        format!("{label}: {:.1}s of {:.1}s", done.as_secs_f64(), a.seconds);
                    ctx.progress(done.as_secs_f64(), Some(a.seconds), Some(&message))
                        .await;
                }
                Ok(ToolResult::text(format!(
                    "Computed {label} in {}s",
                    a.seconds
                )))
            }),
        Tool::new("failing_job")
            .description("Fails with a tool error after about a second (always a task)")
            .task(TaskSupport::Required)
            .handler(|_: NoArguments| async move {
                tokio::time::sleep(Duration::from_secs(1)).await;
                ToolResult::error("failing_job failed on purpose")
            }),
        Tool::new("protocol_error_job")
            .description("Ends with a JSON-RPC error (a task when the client supports tasks)")
            .task(TaskSupport::Optional)
            .handler(|_: NoArguments| async move {
                tokio::time::sleep(Duration::from_millis(200)).await;
                Err::<ToolResult, _>(HandlerError::Protocol(RpcError::internal(
                    "protocol_error_job failed on purpose",
                )))
            }),
        Tool::new("confirm_delete")
            .description("Asks for confirmation, then pretends to delete the file")
            .task(TaskSupport::Optional)
            .handler(|a: DeleteArgs, ctx: snodo::RequestContext| async move {
                let answer = ctx
                    .ask(
                        "confirm_delete",
                        confirm_form(format!("Delete {}?", a.filename)),
                    )
                    .await?;
                let yes = accepted(&answer) && answer["content"]["confirm"] == true;
                Ok::<_, HandlerError>(ToolResult::text(if yes {
                    format!("Deleted {}", a.filename)
                } else {
                    format!("Kept {}", a.filename)
                }))
            }),
        Tool::new("multi_input")
            .description("Asks two questions at once")
            .task(TaskSupport::Optional)
            .handler(|_: NoArguments, ctx: snodo::RequestContext| async move {
                let answers = ctx
                    .ask_all([
                        ("name".to_owned(), name_form()),
                        ("confirm".to_owned(), confirm_form("Proceed?".to_owned())),
                    ])
                    .await?;
                Ok::<_, HandlerError>(ToolResult::text(format!(
                    "Received {} answers",
                    answers.len()
                )))
            }),
        Tool::new("test_tool_with_task")
            .description("Asks the user's name, then greets them from a task")
            .task(TaskSupport::Required)
            .task_input("user_name", name_form())
            .handler(|_: NoArguments, ctx: snodo::RequestContext| async move {
                let answer = ctx.ask("user_name", name_form()).await?;
                let name = answer["content"]["name"]
                    .as_str()
                    .unwrap_or("there")
                    .to_owned();
                Ok::<_, HandlerError>(ToolResult::text(format!("Hello, {name}!")))
            }),
    ]
}
