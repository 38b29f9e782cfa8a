//! The macros expand to the builder: what they register is what the builder would.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use snodo::{Json, PromptResult, RequestContext, ToolResult};

/// Echoes its text.
#[snodo::tool(read_only, title = "Echo")]
async fn echo(
    /// The text to send back.
    text: String,
) -> String {
    text
}

#[derive(Serialize, JsonSchema)]
struct Sum {
    /// a + b.
    sum: i64,
}

#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
}

/// Adds two numbers.
#[snodo::tool(name = "add", idempotent, destructive = false)]
async fn add_numbers(#[args] AddArgs { a, b }: AddArgs, _ctx: RequestContext) -> Json<Sum> {
    Json(Sum { sum: a + b })
}

/// Greets someone, maybe loudly.
#[snodo::tool]
async fn greet(
    /// Who to greet.
    name: String,
    /// Shout it.
    loud: Option<bool>,
    ctx: &RequestContext,
) -> Result<ToolResult, snodo::HandlerError> {
    let _ = ctx.dialect();
    let text = format!("Hello, {name}");
    Ok(ToolResult::text(if loud.unwrap_or(false) {
        text.to_uppercase()
    } else {
        text
    }))
}

/// Reviews a piece of code.
#[snodo::prompt(title = "Code review")]
async fn review(
    /// The code to review.
    code: String,
    /// What to focus on.
    focus: Option<String>,
) -> PromptResult {
    let _ = focus;
    PromptResult::new(vec![snodo::PromptMessage::user(snodo::Content::text(code))])
}

/// A note by its id.
#[snodo::resource(uri = "note://{id}", mime_type = "text/plain")]
async fn note(id: String) -> String {
    format!("note {id}")
}

/// The readme.
#[snodo::resource(uri = "note://readme", name = "readme")]
async fn readme() -> String {
    "read me".into()
}

#[tokio::test]
async fn definitions_match_the_builder() {
    let t = echo::tool();
    assert_eq!(t.name(), "echo");
    assert_eq!(t.tool_annotations().read_only_hint, Some(true));
    let a = add_numbers::tool();
    assert_eq!(a.name(), "add");
    assert_eq!(a.tool_annotations().idempotent_hint, Some(true));
    assert_eq!(a.tool_annotations().destructive_hint, Some(false));
    let runtime = snodo::Runtime::builder("t", "1")
        .tool(echo::tool())
        .tool(add_numbers::tool())
        .tool(greet::tool())
        .prompt(review::prompt())
        .resource(note::resource())
        .resource(readme::resource())
        .build()
        .unwrap();
    assert_eq!(runtime.supported_versions(), ["2026-07-28"]);
    // The older entry point of a template still builds it.
    #[allow(deprecated)]
    let old = note::template();
    assert!(format!("{old:?}").contains("note://{id}"));
    // The function stays callable as written.
    assert_eq!(echo("hi".into()).await, "hi");
}
