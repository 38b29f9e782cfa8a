//! One handler shape for every component: prompts, resource readers, template readers,
//! listers and completers take the same four [`snodo::Handler`] forms as tools (input;
//! input + context; `State<S>` + input; `State<S>` + input + context), through the
//! builder and through the macros, checked on the wire.

// The macros are half of what this file checks (feature `macros`, on by default).
#![cfg(feature = "macros")]
// Tests panic on purpose when an expectation fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "wire/support.rs"]
#[allow(dead_code, unused_imports)]
mod support;

use std::sync::Arc;

use serde_json::{Value, json};
use snodo::{
    BuildError, CompletionRequest, HandlerError, ListRequest, Prompt, PromptArgument,
    PromptArguments, ReadRequest, RequestContext, Resource, ResourceContents, ResourceInfo,
    ResourceTemplate, Runtime, RuntimeBuilder, State,
};
use support::{R2026_07_28, TestServer, assert_ok};

/// The state every handler here reads: notes by id.
#[derive(Clone)]
struct Notes(Arc<Vec<(&'static str, &'static str)>>);

impl Notes {
    fn new() -> Self {
        Self(Arc::new(vec![("alpha", "first"), ("beta", "second")]))
    }

    fn get(&self, id: &str) -> Option<&'static str> {
        self.0.iter().find(|(k, _)| *k == id).map(|(_, v)| *v)
    }

    fn ids(&self, prefix: &str) -> Vec<String> {
        self.0
            .iter()
            .filter(|(k, _)| k.starts_with(prefix))
            .map(|(k, _)| (*k).to_owned())
            .collect()
    }
}

fn who(args: &PromptArguments) -> String {
    args.get("who").cloned().unwrap_or_default()
}

fn text(uri: String, text: &str) -> Result<Vec<ResourceContents>, HandlerError> {
    Ok(vec![ResourceContents::text(uri, text)])
}

/// A prompt with one required argument, `who`.
fn prompt(name: &str) -> Prompt {
    Prompt::new(name).arg(PromptArgument::new("who").description("Who").required())
}

/// A note's text, read from the state by a `#[snodo::prompt]` handler.
#[snodo::prompt]
async fn note_prompt(
    State(notes): State<Notes>,
    /// The note's id.
    id: String,
    ctx: RequestContext,
) -> String {
    let _ = ctx.dialect();
    notes.get(&id).unwrap_or("none").to_owned()
}

/// A note, read from the state by a `#[snodo::resource]` template.
#[snodo::resource(uri = "macro://note/{id}", mime_type = "text/plain")]
async fn macro_note(State(notes): State<Notes>, id: String) -> String {
    notes.get(&id).unwrap_or("none").to_owned()
}

/// How many notes there are, from the state by a fixed `#[snodo::resource]`.
#[snodo::resource(uri = "macro://count")]
async fn macro_count(notes: State<Notes>) -> String {
    notes.0.0.len().to_string()
}

fn builder() -> RuntimeBuilder {
    let template = ResourceTemplate::new("forms://note/{id}", "note")
        .on_read(
            |State(notes): State<Notes>, req: ReadRequest, _ctx: RequestContext| async move {
                let id = req.variables.get("id").cloned().unwrap_or_default();
                match notes.get(&id) {
                    Some(t) => text(req.uri, t),
                    None => Err(HandlerError::NotFound),
                }
            },
        )
        .on_list(|State(notes): State<Notes>, _: ListRequest| async move {
            Ok(notes
                .ids("")
                .into_iter()
                .map(|id| ResourceInfo::new(format!("forms://note/{id}"), id))
                .collect())
        })
        .on_complete(
            |State(notes): State<Notes>, req: CompletionRequest| async move {
                Ok(notes.ids(&req.value))
            },
        );
    Runtime::builder("forms", "1")
        .with_state(Notes::new())
        .prompt(prompt("p_args").on_get(|args: PromptArguments| async move {
            format!("args {}", who(&args))
        }))
        .prompt(prompt("p_ctx").on_get(
            |args: PromptArguments, ctx: RequestContext| async move {
                let _ = ctx.dialect();
                format!("ctx {}", who(&args))
            },
        ))
        .prompt(
            prompt("p_state")
                .on_get(
                    |State(notes): State<Notes>, args: PromptArguments| async move {
                        format!("state {}", notes.get(&who(&args)).unwrap_or("none"))
                    },
                )
                .on_complete(
                    |State(notes): State<Notes>, req: CompletionRequest, _ctx: RequestContext| async move {
                        Ok(notes.ids(&req.value))
                    },
                ),
        )
        .prompt(prompt("p_state_ctx").on_get(
            |State(notes): State<Notes>, args: PromptArguments, ctx: RequestContext| async move {
                let _ = ctx.principal();
                format!("both {}", notes.get(&who(&args)).unwrap_or("none"))
            },
        ))
        .prompt(note_prompt::prompt())
        .resource(
            Resource::new("forms://fixed/args", "args")
                .on_read(|req: ReadRequest| async move { text(req.uri, "args") }),
        )
        .resource(Resource::new("forms://fixed/state", "state").on_read(
            |State(notes): State<Notes>, req: ReadRequest| async move {
                text(req.uri, notes.get("beta").unwrap_or("none"))
            },
        ))
        // A template registers like a resource.
        .resource(template)
        .resource(macro_note::resource())
        .resource(macro_count::resource())
}

async fn call(s: &TestServer, method: &str, params: Value) -> Value {
    let r = s.modern(json!(1), method, params, json!({})).await;
    assert_ok(&r, R2026_07_28, method)
}

async fn get_prompt(s: &TestServer, name: &str, who: &str) -> String {
    let params = json!({"name": name, "arguments": {"who": who, "id": who}});
    let res = call(s, "prompts/get", params).await;
    res["messages"][0]["content"]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

async fn read(s: &TestServer, uri: &str) -> String {
    let res = call(s, "resources/read", json!({ "uri": uri })).await;
    res["contents"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

async fn complete(s: &TestServer, reference: Value, argument: &str, value: &str) -> Value {
    let params = json!({"ref": reference, "argument": {"name": argument, "value": value}});
    call(s, "completion/complete", params).await["completion"]["values"].clone()
}

#[tokio::test]
async fn prompts_take_every_form() {
    let s = TestServer::start(builder().build().unwrap()).await;
    assert_eq!(get_prompt(&s, "p_args", "ann").await, "args ann");
    assert_eq!(get_prompt(&s, "p_ctx", "ann").await, "ctx ann");
    assert_eq!(get_prompt(&s, "p_state", "alpha").await, "state first");
    assert_eq!(get_prompt(&s, "p_state_ctx", "beta").await, "both second");
    assert_eq!(get_prompt(&s, "note_prompt", "beta").await, "second");
    let listed = call(&s, "prompts/list", json!({})).await;
    let who = &listed["prompts"][0]["arguments"][0];
    assert_eq!(
        *who,
        json!({"name": "who", "description": "Who", "required": true})
    );
}

#[tokio::test]
async fn readers_listers_and_completers_take_state() {
    let s = TestServer::start(builder().build().unwrap()).await;
    assert_eq!(read(&s, "forms://fixed/args").await, "args");
    assert_eq!(read(&s, "forms://fixed/state").await, "second");
    assert_eq!(read(&s, "forms://note/alpha").await, "first");
    assert_eq!(read(&s, "macro://note/beta").await, "second");
    assert_eq!(read(&s, "macro://count").await, "2");

    let listed = call(&s, "resources/list", json!({})).await;
    let uris: Vec<&str> = listed["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["uri"].as_str())
        .collect();
    assert!(uris.contains(&"forms://note/alpha"), "{uris:?}");
    assert!(uris.contains(&"forms://note/beta"), "{uris:?}");
    let templates = call(&s, "resources/templates/list", json!({})).await;
    assert_eq!(
        templates["resourceTemplates"].as_array().map(Vec::len),
        Some(2)
    );

    let prompt_ref = json!({"type": "ref/prompt", "name": "p_state"});
    assert_eq!(
        complete(&s, prompt_ref, "who", "al").await,
        json!(["alpha"])
    );
    let template_ref = json!({"type": "ref/resource", "uri": "forms://note/{id}"});
    assert_eq!(complete(&s, template_ref, "id", "b").await, json!(["beta"]));
}

#[test]
fn a_state_nobody_registered_is_refused_for_every_kind() {
    let missing = |b: RuntimeBuilder| match b.build() {
        Err(BuildError::MissingState { kind, name, .. }) => (kind, name),
        other => panic!("expected MissingState, got {other:?}"),
    };
    let bare = || Runtime::builder("forms", "1");
    assert_eq!(
        missing(bare().prompt(note_prompt::prompt())),
        ("prompt", "note_prompt".to_owned())
    );
    assert_eq!(
        missing(bare().resource(macro_count::resource())),
        ("resource", "macro://count".to_owned())
    );
    assert_eq!(
        missing(bare().resource(macro_note::resource())),
        ("resource template", "macro://note/{id}".to_owned())
    );
    let lister_only = ResourceTemplate::new("x://{id}", "x")
        .reader(|req, _ctx| async move { text(req.uri, "x") })
        .on_list(|State(_): State<Notes>, _: ListRequest| async { Ok(vec![]) });
    assert_eq!(
        missing(bare().resource(lister_only)),
        ("resource template", "x://{id}".to_owned())
    );
}

#[tokio::test]
async fn an_update_binds_the_state_of_what_it_adds() {
    let runtime = Runtime::builder("forms", "1")
        .with_state(Notes::new())
        .resource(Resource::new("x://a", "a").static_text("text/plain", "a"))
        .prompt(prompt("seed").on_get(|_: PromptArguments| async { String::new() }))
        .build()
        .unwrap();
    runtime
        .update(|c| {
            c.add_prompt(note_prompt::prompt());
            c.add_resource(macro_note::resource());
        })
        .unwrap();
    let s = TestServer::start(runtime).await;
    assert_eq!(get_prompt(&s, "note_prompt", "alpha").await, "first");
    assert_eq!(read(&s, "macro://note/alpha").await, "first");
}
