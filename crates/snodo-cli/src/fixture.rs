//! The conformance fixture: the exact tools, resources and prompts the official MCP
//! conformance runner calls (names and outputs as its scenarios expect).

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use snodo::protocol::{Dialect, LogLevel};
use snodo::{
    BuildError, Content, HandlerError, InputRequest, InputRequired, NoArguments, Prompt,
    PromptMessage, PromptResult, Resource, ResourceContents, ResourceTemplate, RpcError, Runtime,
    Tool, ToolResult,
};

use crate::Profile;

/// A 1x1 transparent PNG.
pub(crate) const PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
    0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x00, 0x01, 0x00, 0x00,
    0x05, 0x00, 0x01, 0x0d, 0x0a, 0x2d, 0xb4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae,
    0x42, 0x60, 0x82,
];

/// A WAV header with no samples (valid RIFF/WAVE, 8 kHz mono 8-bit).
const WAV: &[u8] = &[
    b'R', b'I', b'F', b'F', 36, 0, 0, 0, b'W', b'A', b'V', b'E', b'f', b'm', b't', b' ', 16, 0, 0,
    0, 1, 0, 1, 0, 0x40, 0x1f, 0, 0, 0x40, 0x1f, 0, 0, 1, 0, 8, 0, b'd', b'a', b't', b'a', 0, 0, 0,
    0,
];

#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    /// The text to return.
    text: String,
}

fn echo() -> Tool {
    Tool::new("echo")
        .description("Returns its text argument unchanged")
        .read_only()
        .handler(|a: EchoArgs| async move { ToolResult::text(a.text) })
}

fn simple(name: &str, description: &str, result: fn() -> ToolResult) -> Tool {
    Tool::new(name)
        .description(description)
        .handler(move |_: NoArguments| async move { result() })
}

fn tools() -> Vec<Tool> {
    vec![
        simple("test_simple_text", "Returns a simple text response", || {
            ToolResult::text("This is a simple text response for testing.")
        }),
        simple("test_image_content", "Returns an image", || ToolResult::new(vec![Content::image(PNG, "image/png")])),
        simple("test_audio_content", "Returns audio", || ToolResult::new(vec![Content::audio(WAV, "audio/wav")])),
        simple("test_embedded_resource", "Returns an embedded resource", || {
            ToolResult::new(vec![Content::resource(
                ResourceContents::text("test://embedded-resource", "This is an embedded resource content.")
                    .mime_type("text/plain"),
            )])
        }),
        simple("test_multiple_content_types", "Returns text, an image and a resource", || {
            ToolResult::new(vec![
                Content::text("Multiple content types test:"),
                Content::image(PNG, "image/png"),
                Content::resource(
                    ResourceContents::text("test://mixed-content-resource", r#"{"test":"data","value":123}"#)
                        .mime_type("application/json"),
                ),
            ])
        }),
        simple("test_error_handling", "Always fails with a readable error", || {
            ToolResult::error("This tool intentionally returns an error for testing")
        }),
        Tool::new("test_tool_with_progress")
            .description("Reports progress 0, 50 and 100 before answering")
            .handler(|_: NoArguments, ctx: snodo::RequestContext| async move {
                for (p, msg) in [(0.0, "Starting computation"), (50.0, "First half complete"), (100.0, "Computation complete")] {
                    ctx.progress(p, Some(100.0), Some(msg)).await;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                ToolResult::text("Progress computation completed: 5050")
            }),
        Tool::new("test_tool_with_logging")
            .description("Logs three messages while it runs")
            .handler(|_: NoArguments, ctx: snodo::RequestContext| async move {
                for msg in ["Tool execution started", "Tool processing data", "Tool execution completed"] {
                    ctx.log(LogLevel::Info, Some("fixture"), msg).await;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                ToolResult::text("Logging completed")
            }),
        Tool::new("test_logging_tool")
            .description("Logs a message (delivered only when the request asks for logs)")
            .handler(|_: NoArguments, ctx: snodo::RequestContext| async move {
                ctx.log(LogLevel::Info, Some("fixture"), "test_logging_tool ran").await;
                ToolResult::text("Logged a message")
            }),
        Tool::new("test_streaming_elicitation")
            .description("Answers on the request's own stream; never sends a server request")
            .handler(|_: NoArguments, ctx: snodo::RequestContext| async move {
                ctx.progress(1.0, Some(1.0), Some("working")).await;
                ToolResult::text("Streaming completed without server-initiated requests")
            }),
        Tool::new("test_missing_capability")
            .description("Needs the client's sampling capability")
            .handler(|_: NoArguments, ctx: snodo::RequestContext| async move {
                if ctx.client_has("sampling") {
                    Ok(ToolResult::text("The client declared sampling"))
                } else {
                    Err(HandlerError::from(RpcError::missing_client_capability(json!({"sampling": {}}))))
                }
            }),
        Tool::new("json_schema_2020_12_tool")
            .description("Publishes a JSON Schema 2020-12 input schema verbatim")
            .input_schema(json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "$defs": {"address": {"$anchor": "addressDef", "type": "object",
                    "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
                "properties": {
                    "name": {"type": "string"},
                    "address": {"$ref": "#/$defs/address"},
                    "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                    "phone": {"type": "string"},
                    "email": {"type": "string"}
                },
                "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
                "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
                "then": {"required": ["phone"]},
                "else": {"required": ["email"]},
                "additionalProperties": false
            }))
            .raw_handler(|args, _ctx| async move { ToolResult::text(format!("Received: {args}")) }),
        Tool::new("test_custom_header")
            .description("Mirrors its value argument into the Mcp-Param-Value header")
            .input_schema(json!({
                "type": "object",
                "properties": {"value": {"type": "string", "x-mcp-header": "Value", "description": "Any text"}},
                "required": ["value"]
            }))
            .raw_handler(|args, _ctx| async move {
                ToolResult::text(format!("Value: {}", args["value"].as_str().unwrap_or_default()))
            }),
        echo(),
    ]
}

#[derive(Deserialize, JsonSchema)]
struct SamplingArgs {
    /// The prompt to send to the client's model.
    prompt: String,
}

#[derive(Deserialize, JsonSchema)]
struct ElicitationArgs {
    /// The message to show the user.
    message: String,
}

fn name_form() -> InputRequest {
    InputRequest::elicit(
        "Please provide your name",
        json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
    )
}

fn text_of(answer: &serde_json::Value) -> String {
    answer["content"]["text"]
        .as_str()
        .map_or_else(|| answer["content"].to_string(), str::to_owned)
}

/// Tools that ask the client for input: server requests on initialize-era dialects,
/// input_required results on 2026-07-28 (the same handler code).
fn interactive_tools() -> Vec<Tool> {
    vec![
        Tool::new("test_sampling")
            .description("Asks the client's model to answer a prompt")
            .handler(|a: SamplingArgs, ctx: snodo::RequestContext| async move {
                let answer = ctx.ask("sample", InputRequest::sample(a.prompt, 100)).await?;
                Ok::<_, HandlerError>(ToolResult::text(format!("LLM response: {}", text_of(&answer))))
            }),
        Tool::new("test_elicitation")
            .description("Asks the user for a username and email")
            .handler(|a: ElicitationArgs, ctx: snodo::RequestContext| async move {
                let schema = json!({"type": "object", "properties": {
                    "username": {"type": "string", "description": "Your username"},
                    "email": {"type": "string", "description": "Your email address"}
                }, "required": ["username", "email"]});
                let answer = ctx.ask("user", InputRequest::elicit(a.message, schema)).await?;
                Ok::<_, HandlerError>(ToolResult::text(format!(
                    "User response: action={}, content={}",
                    answer["action"].as_str().unwrap_or_default(),
                    answer["content"]
                )))
            }),
        Tool::new("test_elicitation_sep1034_defaults")
            .description("Elicitation whose fields carry defaults")
            .handler(|_: NoArguments, ctx: snodo::RequestContext| async move {
                let schema = json!({"type": "object", "properties": {
                    "name": {"type": "string", "default": "John Doe"},
                    "age": {"type": "integer", "default": 30},
                    "score": {"type": "number", "default": 95.5},
                    "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
                    "verified": {"type": "boolean", "default": true}
                }});
                let answer = ctx.ask("defaults", InputRequest::elicit("Please review your details", schema)).await?;
                Ok::<_, HandlerError>(elicitation_completed(&answer))
            }),
        Tool::new("test_elicitation_sep1330_enums")
            .description("Elicitation with every enum form")
            .handler(|_: NoArguments, ctx: snodo::RequestContext| async move {
                let schema = json!({"type": "object", "properties": {
                    "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
                    "titledSingle": {"type": "string", "oneOf": [
                        {"const": "value1", "title": "First Option"},
                        {"const": "value2", "title": "Second Option"},
                        {"const": "value3", "title": "Third Option"}]},
                    "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
                        "enumNames": ["Option One", "Option Two", "Option Three"]},
                    "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
                    "titledMulti": {"type": "array", "items": {"anyOf": [
                        {"const": "value1", "title": "First Choice"},
                        {"const": "value2", "title": "Second Choice"},
                        {"const": "value3", "title": "Third Choice"}]}}
                }});
                let answer = ctx.ask("enums", InputRequest::elicit("Please pick options", schema)).await?;
                Ok::<_, HandlerError>(elicitation_completed(&answer))
            }),
        Tool::new("test_input_required_result_elicitation")
            .description("Asks the user's name (multi round-trip)")
            .handler(|_: NoArguments, ctx: snodo::RequestContext| async move {
                let answer = ctx.ask("user_name", name_form()).await?;
                Ok::<_, HandlerError>(ToolResult::text(format!("Hello, {}!", answer["content"]["name"].as_str().unwrap_or("there"))))
            }),
        Tool::new("test_input_required_result_sampling")
            .description("Asks the client's model (multi round-trip)")
            .handler(|_: NoArguments, ctx: snodo::RequestContext| async move {
                let answer = ctx.ask("sample", InputRequest::sample("What is the capital of France?", 100)).await?;
                Ok::<_, HandlerError>(ToolResult::text(format!("Sampling result: {}", text_of(&answer))))
            }),
        Tool::new("test_input_required_result_list_roots")
            .description("Asks the client's roots (multi round-trip)")
            .handler(|_: NoArguments, ctx: snodo::RequestContext| async move {
                let answer = ctx.ask("roots", InputRequest::list_roots()).await?;
                let n = answer["roots"].as_array().map_or(0, Vec::len);
                Ok::<_, HandlerError>(ToolResult::text(format!("The client has {n} root(s)")))
            }),
        Tool::new("test_input_required_result_request_state")
            .description("Carries application state across rounds")
            .handler(|_: NoArguments, ctx: snodo::RequestContext| async move {
                let confirm = InputRequest::elicit("Please confirm", json!({"type": "object", "properties": {"ok": {"type": "boolean"}}}));
                if ctx.request_state() != Some(&json!({"step": "confirm"})) {
                    return Err(HandlerError::from(InputRequired::new().ask("confirm", confirm).with_state(json!({"step": "confirm"}))));
                }
                ctx.ask("confirm", confirm).await?;
                Ok(ToolResult::text("state-ok: the request state came back intact"))
            }),
        Tool::new("test_input_required_result_multiple_inputs")
            .description("Asks for elicitation, sampling and roots in one round")
            .handler(|_: NoArguments, ctx: snodo::RequestContext| async move {
                let answers = ctx
                    .ask_all([
                        ("user_name".to_owned(), name_form()),
                        ("sample".to_owned(), InputRequest::sample("Say hello", 50)),
                        ("roots".to_owned(), InputRequest::list_roots()),
                    ])
                    .await?;
                Ok::<_, HandlerError>(ToolResult::text(format!("Received {} answers", answers.len())))
            }),
        Tool::new("test_input_required_result_multi_round")
            .description("Needs three rounds")
            .handler(|_: NoArguments, ctx: snodo::RequestContext| async move {
                let first = ctx.ask("first", name_form()).await?;
                let second = ctx
                    .ask("second", InputRequest::elicit("And your city?", json!({"type": "object", "properties": {"city": {"type": "string"}}})))
                    .await?;
                Ok::<_, HandlerError>(ToolResult::text(format!("Completed after three rounds: {} / {}", first["content"], second["content"])))
            }),
        Tool::new("test_input_required_result_tampered_state")
            .description("Rejects a requestState that was altered")
            .handler(|_: NoArguments, ctx: snodo::RequestContext| async move {
                ctx.ask("confirm", name_form()).await?;
                Ok::<_, HandlerError>(ToolResult::text("State verified"))
            }),
        Tool::new("test_input_required_result_capabilities")
            .description("Asks only for what the client declared")
            .handler(|_: NoArguments, ctx: snodo::RequestContext| async move {
                let request = if ctx.client_has("elicitation") {
                    name_form()
                } else if ctx.client_has("sampling") {
                    InputRequest::sample("Say hello", 50)
                } else if ctx.client_has("roots") {
                    InputRequest::list_roots()
                } else {
                    return Ok(ToolResult::text("The client declared no input capability"));
                };
                ctx.ask("input", request).await?;
                Ok::<_, HandlerError>(ToolResult::text("Input received"))
            }),
    ]
}

/// Tools that change the catalogue or publish updates (2026-only fixture, where
/// `listChanged` and `subscribe` are advertised).
fn trigger_tools() -> Vec<Tool> {
    vec![
        Tool::new("test_trigger_tool_change")
            .description("Adds or removes a tool, so tools/list changes")
            .handler(|_: NoArguments, ctx: snodo::RequestContext| async move {
                ctx.runtime()
                    .update(|c| {
                        if !c.remove_tool("test_dynamic_tool") {
                            c.add_tool(simple(
                                "test_dynamic_tool",
                                "Appears and disappears",
                                || ToolResult::text("dynamic"),
                            ));
                        }
                    })
                    .map_err(HandlerError::new)?;
                Ok::<_, HandlerError>(ToolResult::text("The tool list changed"))
            }),
        Tool::new("test_trigger_prompt_change")
            .description("Adds or removes a prompt, so prompts/list changes")
            .handler(|_: NoArguments, ctx: snodo::RequestContext| async move {
                ctx.runtime()
                    .update(|c| {
                        if !c.remove_prompt("test_dynamic_prompt") {
                            c.add_prompt(
                                Prompt::new("test_dynamic_prompt")
                                    .description("Appears and disappears")
                                    .handler(|_, _| async {
                                        Ok(PromptResult::new(vec![PromptMessage::user(
                                            Content::text("dynamic"),
                                        )]))
                                    }),
                            );
                        }
                    })
                    .map_err(HandlerError::new)?;
                Ok::<_, HandlerError>(ToolResult::text("The prompt list changed"))
            }),
        Tool::new("test_trigger_resource_update")
            .description("Publishes an update of test://watched-resource")
            .handler(|_: NoArguments, ctx: snodo::RequestContext| async move {
                ctx.runtime()
                    .notify_resource_updated("test://watched-resource");
                ToolResult::text("Published an update of test://watched-resource")
            }),
    ]
}

fn elicitation_completed(answer: &serde_json::Value) -> ToolResult {
    ToolResult::text(format!(
        "Elicitation completed: action={}, content={}",
        answer["action"].as_str().unwrap_or_default(),
        answer["content"]
    ))
}

fn prompts() -> Vec<Prompt> {
    vec![
        Prompt::new("test_simple_prompt")
            .description("A prompt without arguments")
            .handler(|_, _| async {
                Ok(PromptResult::new(vec![PromptMessage::user(Content::text(
                    "This is a simple prompt for testing.",
                ))]))
            }),
        Prompt::new("test_prompt_with_arguments")
            .description("A prompt with two required arguments")
            .argument("arg1", "First argument", true)
            .argument("arg2", "Second argument", true)
            .handler(|args, _| async move {
                let get = |k: &str| args.get(k).cloned().unwrap_or_default();
                Ok(PromptResult::new(vec![PromptMessage::user(Content::text(
                    format!(
                        "Prompt with arguments: arg1='{}', arg2='{}'",
                        get("arg1"),
                        get("arg2")
                    ),
                ))]))
            })
            .completer(|req, _| async move {
                let candidates = ["test", "testing", "tested", "value1", "value2"];
                Ok(candidates
                    .iter()
                    .filter(|c| c.starts_with(&req.value))
                    .map(|c| (*c).to_owned())
                    .collect())
            }),
        Prompt::new("test_prompt_with_embedded_resource")
            .description("A prompt that embeds a resource")
            .argument("resourceUri", "URI of the resource to embed", true)
            .handler(|args, _| async move {
                let uri = args.get("resourceUri").cloned().unwrap_or_default();
                Ok(PromptResult::new(vec![
                    PromptMessage::user(Content::resource(
                        ResourceContents::text(uri, "Embedded resource content for testing.")
                            .mime_type("text/plain"),
                    )),
                    PromptMessage::user(Content::text(
                        "Please process the embedded resource above.",
                    )),
                ]))
            }),
        Prompt::new("test_input_required_result_prompt")
            .description("Asks for context before producing messages")
            .handler(|_, ctx| async move {
                let answer = ctx
                    .ask("user_context", InputRequest::elicit("What context should the prompt use?", json!({
                        "type": "object", "properties": {"context": {"type": "string"}}, "required": ["context"]})))
                    .await?;
                let context = answer["content"]["context"].as_str().unwrap_or_default().to_owned();
                Ok(PromptResult::new(vec![PromptMessage::user(Content::text(format!("Context: {context}")))]))
            }),
        Prompt::new("test_prompt_with_image")
            .description("A prompt with an image")
            .handler(|_, _| async {
                Ok(PromptResult::new(vec![
                    PromptMessage::user(Content::image(PNG, "image/png")),
                    PromptMessage::user(Content::text("Please analyze the image above.")),
                ]))
            }),
    ]
}

fn resources() -> Vec<Resource> {
    vec![
        Resource::new("test://static-text", "static-text")
            .description("A static text resource")
            .static_text(
                "text/plain",
                "This is the content of the static text resource.",
            ),
        Resource::new("test://static-binary", "static-binary")
            .description("A static binary resource (PNG)")
            .static_blob("image/png", PNG),
        Resource::new("test://watched-resource", "watched-resource")
            .description("A resource clients may watch")
            .static_text("text/plain", "Watched resource content."),
    ]
}

fn template() -> ResourceTemplate {
    ResourceTemplate::new("test://template/{id}/data", "template-data")
        .description("A templated JSON resource")
        .mime_type("application/json")
        .reader(|req, _ctx| async move {
            let id = req.variables.get("id").cloned().unwrap_or_default();
            let body =
                json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")})
                    .to_string();
            Ok(vec![
                ResourceContents::text(req.uri, body).mime_type("application/json"),
            ])
        })
}

/// A middleware layer that only passes the request on (`fixture --layers N`).
struct PassThrough;

impl snodo::middleware::Middleware for PassThrough {
    async fn call(
        &self,
        request: snodo::middleware::Request<'_>,
        next: snodo::middleware::Next<'_>,
    ) -> snodo::middleware::Outcome {
        next.run(request).await
    }
}

/// Installs `n` pass-through layers on the runtime: the cost of the middleware path
/// with nothing in it, measured by `SNODO_ARGS="--layers 1" bench/profile.sh server`.
pub(crate) fn pass_through_layers(
    mut builder: snodo::RuntimeBuilder,
    n: usize,
) -> snodo::RuntimeBuilder {
    for _ in 0..n {
        builder = builder.layer(PassThrough);
    }
    builder
}

/// Builds the fixture runtime for these dialects.
pub(crate) fn runtime(
    protocols: Vec<&'static Dialect>,
    profile: Profile,
    state_key: Option<Vec<u8>>,
    page_size: usize,
    metrics: Option<snodo::metrics::Metrics>,
    tasks: Option<snodo::tasks::TaskOptions>,
    extend: impl FnOnce(snodo::RuntimeBuilder) -> snodo::RuntimeBuilder,
) -> Result<Runtime, BuildError> {
    let offers_tasks = protocols.iter().any(|d| d.offers_tasks());
    let stateless_only = protocols
        .iter()
        .all(|d| d.serves(snodo::protocol::Method::SubscriptionsListen));
    let mut builder = Runtime::builder("snodo-conformance-fixture", env!("CARGO_PKG_VERSION"))
        .title("snodo conformance fixture")
        .instructions("Fixture for the official MCP conformance runner.")
        .page_size(page_size)
        .protocols(protocols);
    if let Some(key) = state_key {
        builder = builder.request_state_key(key);
    }
    if let Some(metrics) = metrics {
        builder = builder.metrics(metrics);
    }
    if let Some(tasks) = tasks {
        builder = builder.tasks(tasks);
    }
    builder = extend(builder);
    match profile {
        Profile::Echo => builder.tool(echo()).build(),
        Profile::Conformance => {
            let mut b = builder
                .logging()
                .legacy_server_requests(Duration::from_secs(30));
            if stateless_only {
                b = b.list_changed(true).resource_subscriptions(true);
                for t in trigger_tools() {
                    b = b.tool(t);
                }
            }
            for t in tools().into_iter().chain(interactive_tools()) {
                b = b.tool(t);
            }
            if offers_tasks {
                for t in crate::tasks::fixture_tools() {
                    b = b.tool(t);
                }
            }
            for p in prompts() {
                b = b.prompt(p);
            }
            for r in resources() {
                b = b.resource(r);
            }
            b.resource_template(template())
                .skills(super::fixture_skills::skills()?)
                .build()
        }
    }
}
