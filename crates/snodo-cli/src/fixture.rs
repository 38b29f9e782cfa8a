//! The conformance fixture: the exact tools, resources and prompts the official MCP
//! conformance runner calls (names and outputs as its scenarios expect).

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use snodo::protocol::{Dialect, LogLevel};
use snodo::{
    BuildError, Content, NoArguments, Prompt, PromptMessage, PromptResult, Resource,
    ResourceContents, ResourceTemplate, RpcError, Runtime, Tool, ToolError, ToolResult,
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
        .handler(|a: EchoArgs, _ctx| async move { ToolResult::text(a.text) })
}

fn simple(name: &str, description: &str, result: fn() -> ToolResult) -> Tool {
    Tool::new(name)
        .description(description)
        .handler(move |_: NoArguments, _ctx| async move { result() })
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
            .handler(|_: NoArguments, ctx| async move {
                for (p, msg) in [(0.0, "Starting computation"), (50.0, "First half complete"), (100.0, "Computation complete")] {
                    ctx.progress(p, Some(100.0), Some(msg)).await;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                ToolResult::text("Progress computation completed: 5050")
            }),
        Tool::new("test_tool_with_logging")
            .description("Logs three messages while it runs")
            .handler(|_: NoArguments, ctx| async move {
                for msg in ["Tool execution started", "Tool processing data", "Tool execution completed"] {
                    ctx.log(LogLevel::Info, Some("fixture"), msg).await;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                ToolResult::text("Logging completed")
            }),
        Tool::new("test_logging_tool")
            .description("Logs a message (delivered only when the request asks for logs)")
            .handler(|_: NoArguments, ctx| async move {
                ctx.log(LogLevel::Info, Some("fixture"), "test_logging_tool ran").await;
                ToolResult::text("Logged a message")
            }),
        Tool::new("test_streaming_elicitation")
            .description("Answers on the request's own stream; never sends a server request")
            .handler(|_: NoArguments, ctx| async move {
                ctx.progress(1.0, Some(1.0), Some("working")).await;
                ToolResult::text("Streaming completed without server-initiated requests")
            }),
        Tool::new("test_missing_capability")
            .description("Needs the client's sampling capability")
            .handler(|_: NoArguments, ctx| async move {
                if ctx.client_has("sampling") {
                    Ok(ToolResult::text("The client declared sampling"))
                } else {
                    Err(ToolError::from(RpcError::missing_client_capability(json!({"sampling": {}}))))
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

/// Builds the fixture runtime for these dialects.
pub(crate) fn runtime(
    protocols: Vec<&'static Dialect>,
    profile: Profile,
) -> Result<Runtime, BuildError> {
    let builder = Runtime::builder("snodo-conformance-fixture", env!("CARGO_PKG_VERSION"))
        .title("snodo conformance fixture")
        .instructions("Fixture for the official MCP conformance runner.")
        .protocols(protocols);
    match profile {
        Profile::Echo => builder.tool(echo()).build(),
        Profile::Conformance => {
            let mut b = builder.logging();
            for t in tools() {
                b = b.tool(t);
            }
            for p in prompts() {
                b = b.prompt(p);
            }
            for r in resources() {
                b = b.resource(r);
            }
            b.resource_template(template()).build()
        }
    }
}
