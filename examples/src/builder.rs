//! The five tools with the builder and closures.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use snodo::{BuildError, Json, NoArguments, RequestContext, Runtime, Tool};

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

#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    /// The first addend.
    a: f64,
    /// The second addend.
    b: f64,
}

#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    /// The text to send back.
    text: String,
}

#[derive(Deserialize, JsonSchema)]
struct CountArgs {
    /// The text to count.
    text: String,
}

#[derive(Deserialize, JsonSchema)]
struct RepeatArgs {
    /// The text to repeat.
    text: String,
    /// How many times (default 2).
    times: Option<u8>,
}

/// The server.
pub fn runtime() -> Result<Runtime, BuildError> {
    Runtime::builder("five-tools", "1.0.0")
        .tool(
            Tool::new("add")
                .description("Adds two numbers.")
                .title("Add")
                .read_only()
                .idempotent(true)
                .open_world(false)
                .output::<Sum>()
                .handler(|a: AddArgs| async move { Json(Sum { sum: a.a + a.b }) }),
        )
        .tool(
            Tool::new("echo")
                .description("Returns its text.")
                .title("Echo")
                .read_only()
                .open_world(false)
                .handler(|a: EchoArgs| async move { a.text }),
        )
        .tool(
            Tool::new("word_count")
                .description("Counts the words and characters of a text.")
                .title("Word count")
                .read_only()
                .open_world(false)
                .output::<Counts>()
                .handler(|a: CountArgs| async move {
                    let (words, chars) =
                        (a.text.split_whitespace().count(), a.text.chars().count());
                    Json(Counts { words, chars })
                }),
        )
        .tool(
            Tool::new("repeat")
                .description("Repeats a text a number of times.")
                .title("Repeat")
                .read_only()
                .open_world(false)
                .handler(|a: RepeatArgs| async move {
                    a.text.repeat(usize::from(a.times.unwrap_or(2)))
                }),
        )
        .tool(
            Tool::new("whoami")
                .description("Says who is calling.")
                .title("Who am I")
                .read_only()
                .open_world(false)
                .handler(|_: NoArguments, ctx: RequestContext| async move {
                    ctx.principal()
                        .map_or_else(|| "anonymous".to_owned(), |p| p.id().to_owned())
                }),
        )
        .build()
}
