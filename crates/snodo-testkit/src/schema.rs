//! Validation against the official MCP JSON Schemas.
//!
//! The schemas live once in the repository, in `crates/snodo/tests/schema/`
//! (`<revision>.json`, and `ext-tasks.json` of the tasks extension): found from this
//! crate's own manifest directory at compile time, so every crate's tests, on any
//! machine and in CI's fresh clone, read the same files. `SNODO_SCHEMA_DIR` points
//! elsewhere (another copy of the schemas) when set.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{Value, json};

use crate::Revision;
use crate::http::Reply;

/// The folder of the schemas.
pub fn schema_dir() -> PathBuf {
    match std::env::var_os("SNODO_SCHEMA_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../snodo/tests/schema"
        )),
    }
}

type Cache = Mutex<HashMap<(String, String), Arc<jsonschema::Validator>>>;

/// The validator of `definition` in schema `name` (a revision, or `ext-tasks`), built
/// once per test binary.
pub fn validator(name: &str, definition: &str) -> Arc<jsonschema::Validator> {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let key = (name.to_owned(), definition.to_owned());
    if let Some(v) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return Arc::clone(v);
    }
    let path = schema_dir().join(format!("{name}.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut doc: Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let defs = if doc.get("$defs").is_some() {
        "$defs"
    } else {
        "definitions"
    };
    assert!(
        doc[defs].get(definition).is_some(),
        "{name} schema has no {definition}"
    );
    doc["$ref"] = json!(format!("#/{defs}/{definition}"));
    let v = Arc::new(
        jsonschema::options()
            .should_validate_formats(true)
            .build(&doc)
            .unwrap_or_else(|e| panic!("{name} {definition}: {e}")),
    );
    cache
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key, Arc::clone(&v));
    v
}

/// The violations of `definition` of schema `name` by `instance` (empty when valid).
pub fn violations(name: &str, definition: &str, instance: &Value) -> Vec<String> {
    validator(name, definition)
        .iter_errors(instance)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

/// Asserts that `instance` validates against `definition` of schema `name`.
pub fn assert_schema(name: &str, definition: &str, instance: &Value) {
    let errors = violations(name, definition, instance);
    assert!(
        errors.is_empty(),
        "{name} {definition} violated: {errors:?}\n{instance}"
    );
}

/// The result definition of a method.
pub fn result_definition(method: &str) -> &'static str {
    match method {
        "initialize" => "InitializeResult",
        "server/discover" => "DiscoverResult",
        "tools/list" => "ListToolsResult",
        "tools/call" => "CallToolResult",
        "prompts/list" => "ListPromptsResult",
        "prompts/get" => "GetPromptResult",
        "resources/list" => "ListResourcesResult",
        "resources/templates/list" => "ListResourceTemplatesResult",
        "resources/read" => "ReadResourceResult",
        "completion/complete" => "CompleteResult",
        _ => "EmptyResult",
    }
}

/// The definition of a server notification, by its method.
pub fn notification_definition(method: &str) -> Option<&'static str> {
    Some(match method {
        "notifications/progress" => "ProgressNotification",
        "notifications/message" => "LoggingMessageNotification",
        "notifications/cancelled" => "CancelledNotification",
        "notifications/subscriptions/acknowledged" => "SubscriptionsAcknowledgedNotification",
        "notifications/tools/list_changed" => "ToolListChangedNotification",
        "notifications/resources/updated" => "ResourceUpdatedNotification",
        _ => return None,
    })
}

/// Validates a response `m` (result or error) of `method` in `revision`.
///
/// JSON-RPC 2.0 answers an unreadable message with a null id, which the MCP schemas do
/// not model (they make the id optional): such an error is checked without its id, on
/// the revisions whose schema allows an error without one.
pub fn assert_response(revision: &str, method: &str, m: &Value) {
    if m.get("error").is_some() {
        let def = Revision::named(revision).error_definition();
        if m["id"].is_null() {
            let mut rest = m.clone();
            if let Some(o) = rest.as_object_mut() {
                o.remove("id");
            }
            if def == "JSONRPCErrorResponse" {
                assert_schema(revision, def, &rest);
            }
            return;
        }
        assert_schema(revision, def, m);
    } else if m["result"]["resultType"] == "input_required" {
        assert_schema(revision, "InputRequiredResult", &m["result"]);
    } else {
        assert_schema(revision, result_definition(method), &m["result"]);
    }
}

/// Validates a server notification by its method; panics on one the tests do not know.
pub fn assert_notification(revision: &str, n: &Value) {
    let method = n["method"].as_str();
    let def = method
        .and_then(notification_definition)
        .unwrap_or_else(|| panic!("unexpected notification {method:?}"));
    assert_schema(revision, def, n);
}

/// Validates an HTTP answer to `method`: its final message (result or error) and every
/// message streamed before it, which must be progress or log notifications.
pub fn assert_valid(revision: &str, method: &str, reply: &Reply) {
    if reply.is_sse() {
        let events = reply.events();
        for n in &events[..events.len().saturating_sub(1)] {
            let streamed = n["method"].as_str();
            assert!(
                matches!(
                    streamed,
                    Some("notifications/progress" | "notifications/message")
                ),
                "unexpected streamed message {streamed:?}"
            );
            assert_notification(revision, n);
        }
    }
    assert_response(revision, method, &reply.message());
}
