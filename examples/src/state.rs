//! Handlers that share state: a notebook two tools and a resource read and write,
//! registered once with
//! [`RuntimeBuilder::with_state`](snodo::RuntimeBuilder::with_state) and taken as
//! [`State`] by each handler (no clone per closure). Written with the builder
//! ([`runtime`]) and with `#[snodo::tool]` and `#[snodo::resource]`
//! ([`runtime_with_macros`]).

use std::sync::{Arc, Mutex};

use schemars::JsonSchema;
use serde::Deserialize;
use snodo::{
    BuildError, NoArguments, ReadRequest, Resource, ResourceContents, Runtime, State, Tool,
};

/// The shared notebook (cheap to clone: one `Arc`).
#[derive(Clone, Debug, Default)]
pub struct Notes(Arc<Mutex<Vec<String>>>);

impl Notes {
    fn add(&self, text: String) -> String {
        let Ok(mut notes) = self.0.lock() else {
            return "the notebook is unavailable".into();
        };
        notes.push(text);
        format!("{} notes", notes.len())
    }

    fn list(&self) -> String {
        self.0.lock().map(|n| n.join("\n")).unwrap_or_default()
    }
}

#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    /// The note.
    text: String,
}

/// The server, with the builder.
pub fn runtime() -> Result<Runtime, BuildError> {
    Runtime::builder("notes", "1.0.0")
        .with_state(Notes::default())
        .tool(
            Tool::new("note_add")
                .description("Adds a note.")
                .handler(|State(notes): State<Notes>, a: AddArgs| async move { notes.add(a.text) }),
        )
        .tool(
            Tool::new("note_list")
                .description("Lists the notes.")
                .read_only()
                .handler(|State(notes): State<Notes>, _: NoArguments| async move { notes.list() }),
        )
        .resource(Resource::new("notes://all", "notes").on_read(
            |State(notes): State<Notes>, req: ReadRequest| async move {
                Ok(vec![
                    ResourceContents::text(req.uri, notes.list()).mime_type("text/plain"),
                ])
            },
        ))
        .build()
}

/// Adds a note.
#[snodo::tool(name = "note_add")]
async fn add(
    State(notes): State<Notes>,
    /// The note.
    text: String,
) -> String {
    notes.add(text)
}

/// Lists the notes.
#[snodo::tool(name = "note_list", read_only)]
async fn list(State(notes): State<Notes>) -> String {
    notes.list()
}

/// Every note, one per line.
#[snodo::resource(uri = "notes://all", name = "notes", mime_type = "text/plain")]
async fn all(State(notes): State<Notes>) -> String {
    notes.list()
}

/// The same server, with the macros.
pub fn runtime_with_macros() -> Result<Runtime, BuildError> {
    Runtime::builder("notes", "1.0.0")
        .with_state(Notes::default())
        .tool(add::tool())
        .tool(list::tool())
        .resource(all::resource())
        .build()
}
