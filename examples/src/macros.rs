//! The five tools with `#[snodo::tool]`.

use schemars::JsonSchema;
use serde::Serialize;
use snodo::{BuildError, Json, RequestContext, Runtime};

/// A sum.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Sum {
    /// a + b.
    pub sum: f64,
}

/// Counts of a text.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Counts {
    /// Words, split on whitespace.
    pub words: usize,
    /// Characters (Unicode scalar values).
    pub chars: usize,
}

/// Adds two numbers.
#[snodo::tool(title = "Add", read_only, idempotent, open_world = false)]
async fn add(
    /// The first addend.
    a: f64,
    /// The second addend.
    b: f64,
) -> Json<Sum> {
    Json(Sum { sum: a + b })
}

/// Returns its text.
#[snodo::tool(title = "Echo", read_only, open_world = false)]
async fn echo(
    /// The text to send back.
    text: String,
) -> String {
    text
}

/// Counts the words and characters of a text.
#[snodo::tool(title = "Word count", read_only, open_world = false)]
async fn word_count(
    /// The text to count.
    text: String,
) -> Json<Counts> {
    Json(Counts {
        words: text.split_whitespace().count(),
        chars: text.chars().count(),
    })
}

/// Repeats a text a number of times.
#[snodo::tool(title = "Repeat", read_only, open_world = false)]
async fn repeat(
    /// The text to repeat.
    text: String,
    /// How many times (default 2).
    times: Option<u8>,
) -> String {
    text.repeat(usize::from(times.unwrap_or(2)))
}

/// Says who is calling.
#[snodo::tool(title = "Who am I", read_only, open_world = false)]
async fn whoami(ctx: RequestContext) -> String {
    ctx.principal()
        .map_or_else(|| "anonymous".to_owned(), |p| p.id().to_owned())
}

/// The server.
pub fn runtime() -> Result<Runtime, BuildError> {
    Runtime::builder("five-tools", "1.0.0")
        .tool(add::tool())
        .tool(echo::tool())
        .tool(word_count::tool())
        .tool(repeat::tool())
        .tool(whoami::tool())
        .build()
}
