//! Tools: definition, typed handlers, argument validation.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::context::RequestContext;
use super::error::HandlerError;
use super::handler::{Erased, Handler, Slot, States, bind_or_defer};
use super::policy::{Enforcer, Policy, RateLimit};
use super::slots::Slots;
use crate::model::{Icon, ToolAnnotations, ToolResult};
use crate::protocol::RpcError;

/// A structured tool output: serialised as `structuredContent` and mirrored as text.
#[derive(Clone, Debug)]
pub struct Json<T>(pub T);

/// Anything a tool handler may return.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tool result",
    label = "a tool returns ToolResult, String, &'static str, Json<T>, or a Result of one"
)]
pub trait IntoToolResult {
    /// Converts into a result or an error.
    fn into_tool_result(self) -> Result<ToolResult, HandlerError>;
}

impl IntoToolResult for ToolResult {
    fn into_tool_result(self) -> Result<ToolResult, HandlerError> {
        Ok(self)
    }
}

impl IntoToolResult for String {
    fn into_tool_result(self) -> Result<ToolResult, HandlerError> {
        Ok(ToolResult::text(self))
    }
}

impl IntoToolResult for &'static str {
    fn into_tool_result(self) -> Result<ToolResult, HandlerError> {
        Ok(ToolResult::text(self))
    }
}

impl<T: Serialize> IntoToolResult for Json<T> {
    fn into_tool_result(self) -> Result<ToolResult, HandlerError> {
        serde_json::to_value(self.0)
            .map(ToolResult::structured)
            .map_err(|e| {
                HandlerError::Protocol(RpcError::internal(format!("Tool output is not JSON: {e}")))
            })
    }
}

impl<T: IntoToolResult, E: Into<HandlerError>> IntoToolResult for Result<T, E> {
    fn into_tool_result(self) -> Result<ToolResult, HandlerError> {
        self.map_err(Into::into)
            .and_then(IntoToolResult::into_tool_result)
    }
}

/// The arguments type of a tool that takes none: accepts `{}` or a missing `arguments`.
#[derive(Clone, Copy, Debug, Default, serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArguments {}

/// A tool's handler, erased: the validated arguments as JSON, deserialised inside.
pub(crate) type ToolHandler = Erased<Value, Result<ToolResult, HandlerError>>;

/// A tool: its definition and its handler. Built by value, registered on a
/// [`RuntimeBuilder`](crate::RuntimeBuilder).
#[derive(Clone)]
pub struct Tool {
    pub(crate) name: String,
    pub(crate) title: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) input_schema: Option<Value>,
    pub(crate) output_schema: Option<Value>,
    pub(crate) annotations: ToolAnnotations,
    /// Annotation members outside the standard set ([`Tool::annotation`]).
    pub(crate) extra_annotations: Option<Map<String, Value>>,
    pub(crate) icons: Vec<Icon>,
    pub(crate) meta: Option<Map<String, Value>>,
    /// The handler (waiting for its state until the runtime is built).
    pub(crate) handler: Slot<ToolHandler>,
    /// Its limits and their state (shared by every catalogue that holds the tool).
    pub(crate) enforcer: Option<Arc<Enforcer>>,
    policy: Policy,
    /// What extensions attached to the tool (e.g. whether calls run as tasks).
    pub(crate) slots: Slots,
    /// Middleware around calls of this tool ([`Tool::layer`]).
    pub(crate) layers: crate::middleware::Layers,
}

impl fmt::Debug for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tool")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// Generates a self-contained JSON Schema (draft 2020-12) for `T`, in the plain form
/// clients expect: optional fields are simply not required (no `null` types), and
/// Rust-specific integer formats become ranges.
#[must_use]
pub fn schema_for<T: JsonSchema>() -> Value {
    let generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let schema = generator.into_root_schema_for::<T>();
    let mut value = schema.to_value();
    if let Value::Object(map) = &mut value {
        // The title is the Rust type name: noise for a model.
        map.remove("title");
    }
    plain(&mut value);
    value
}

/// Removes what clients and validators stumble on: `null` alternatives of optional
/// fields, `"default": null`, and the non-standard numeric formats (`uint32`, `int64`,
/// `double`, …), turning unsigned ones into `minimum: 0`.
fn plain(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if map.get("default").is_some_and(Value::is_null) {
                map.remove("default");
            }
            if let Some(Value::Array(types)) = map.get("type") {
                let non_null: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
                if non_null.len() == 1 && types.len() == 2 {
                    map.insert(
                        "type".into(),
                        non_null.into_iter().next().unwrap_or_default(),
                    );
                }
            }
            if let Some(Value::Array(alts)) = map.get("anyOf") {
                let is_null = |v: &Value| v.get("type").is_some_and(|t| t == "null");
                if alts.len() == 2 && alts.iter().any(is_null) {
                    if let Some(Value::Object(other)) = alts.iter().find(|v| !is_null(v)).cloned() {
                        map.remove("anyOf");
                        for (k, v) in other {
                            map.entry(k).or_insert(v);
                        }
                    }
                }
            }
            let numeric = map.get("format").and_then(Value::as_str).is_some_and(|f| {
                let f = f.trim_start_matches('u');
                f.starts_with("int") || f == "float" || f == "double"
            });
            if numeric {
                if map
                    .get("format")
                    .and_then(Value::as_str)
                    .is_some_and(|f| f.starts_with('u'))
                {
                    map.entry("minimum").or_insert(Value::from(0));
                }
                map.remove("format");
            }
            map.values_mut().for_each(plain);
        }
        Value::Array(items) => items.iter_mut().for_each(plain),
        _ => {}
    }
}

/// A tool's limits and their state ([`Tool::limits`], [`Tool::share_limits`]).
#[derive(Clone, Debug)]
pub struct ToolLimits(Arc<Enforcer>);

impl Tool {
    /// A tool named `name`. Give it a description and a handler.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            title: None,
            description: None,
            input_schema: None,
            output_schema: None,
            annotations: ToolAnnotations::default(),
            extra_annotations: None,
            icons: Vec::new(),
            meta: None,
            handler: Slot::Empty,
            enforcer: None,
            policy: Policy::default(),
            slots: Slots::default(),
            layers: crate::middleware::Layers::new(),
        }
    }

    fn with_policy(mut self, change: impl FnOnce(&mut Policy)) -> Self {
        change(&mut self.policy);
        self.enforcer = Some(Arc::new(Enforcer::new(self.policy)));
        self
    }

    /// Stops a call that runs longer than `timeout` (the handler is dropped) and
    /// answers it with a tool error (details in `_meta[`[`LIMIT_META_KEY`](crate::LIMIT_META_KEY)`]`).
    #[must_use]
    pub fn timeout(self, timeout: Duration) -> Self {
        self.with_policy(|p| p.timeout = Some(timeout))
    }

    /// Runs at most `n` calls at once; a call beyond that is answered at once with a
    /// tool error (details in `_meta[`[`LIMIT_META_KEY`](crate::LIMIT_META_KEY)`]`).
    #[must_use]
    pub fn max_concurrent(self, n: usize) -> Self {
        self.with_policy(|p| p.max_concurrent = Some(n.max(1)))
    }

    /// Limits each principal's calls; a call over budget is answered with a tool error
    /// that says when to retry (details in `_meta[`[`LIMIT_META_KEY`](crate::LIMIT_META_KEY)`]`).
    #[must_use]
    pub fn rate_limit(self, limit: RateLimit) -> Self {
        self.with_policy(|p| p.rate = Some(limit))
    }

    /// The state of this tool's limits (rate budgets, concurrency slots), to be
    /// shared with a later definition of the same tool: `None` without limits.
    #[must_use]
    pub fn limits(&self) -> Option<ToolLimits> {
        self.enforcer.clone().map(ToolLimits)
    }

    /// Takes the limits, and their state, of an earlier definition: calls admitted
    /// by either count against the same budgets and slots (a component defined again,
    /// e.g. a proxied tool at each listing of its backend, keeps its limits' state).
    ///
    /// ```
    /// use snodo::Tool;
    /// let first = Tool::new("t").max_concurrent(2);
    /// let again = Tool::new("t").share_limits(&first.limits().unwrap());
    /// assert!(again.limits().is_some());
    /// ```
    #[must_use]
    pub fn share_limits(mut self, limits: &ToolLimits) -> Self {
        self.policy = limits.0.policy();
        self.enforcer = Some(Arc::clone(&limits.0));
        self
    }

    /// Sets the description shown to the model.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Sets the human-readable title.
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Adds an icon.
    #[must_use]
    pub fn icon(mut self, icon: Icon) -> Self {
        self.icons.push(icon);
        self
    }

    /// Replaces the tool's behaviour hints.
    #[must_use]
    pub fn annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.annotations = annotations;
        self
    }

    /// Sets one annotation member by its wire name. The standard hints
    /// (`readOnlyHint`, `destructiveHint`, `idempotentHint`, `openWorldHint` with a
    /// boolean, `title` with a string) set the typed field; any other key is sent as
    /// given (a vendor hint). Prefer the typed setters.
    #[must_use]
    pub fn annotation(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        let (key, value) = (key.into(), value.into());
        let a = &mut self.annotations;
        match (key.as_str(), &value) {
            ("readOnlyHint", Value::Bool(b)) => a.read_only_hint = Some(*b),
            ("destructiveHint", Value::Bool(b)) => a.destructive_hint = Some(*b),
            ("idempotentHint", Value::Bool(b)) => a.idempotent_hint = Some(*b),
            ("openWorldHint", Value::Bool(b)) => a.open_world_hint = Some(*b),
            ("title", Value::String(t)) => a.title = Some(t.clone()),
            _ => {
                self.extra_annotations
                    .get_or_insert_with(Map::new)
                    .insert(key, value);
            }
        }
        self
    }

    /// Marks the tool read-only (`readOnlyHint: true`): it changes nothing.
    #[must_use]
    pub fn read_only(mut self) -> Self {
        self.annotations.read_only_hint = Some(true);
        self
    }

    /// Says whether the tool may destroy or overwrite (`destructiveHint`; clients
    /// assume `true` when it is absent and the tool is not read-only).
    #[must_use]
    pub fn destructive(mut self, on: bool) -> Self {
        self.annotations.destructive_hint = Some(on);
        self
    }

    /// Says whether repeating a call has no further effect (`idempotentHint`).
    #[must_use]
    pub fn idempotent(mut self, on: bool) -> Self {
        self.annotations.idempotent_hint = Some(on);
        self
    }

    /// Says whether the tool reaches outside entities (`openWorldHint`; clients
    /// assume `true` when it is absent).
    #[must_use]
    pub fn open_world(mut self, on: bool) -> Self {
        self.annotations.open_world_hint = Some(on);
        self
    }

    /// The tool's behaviour hints.
    #[must_use]
    pub fn tool_annotations(&self) -> &ToolAnnotations {
        &self.annotations
    }

    /// Adds a `_meta` entry to the definition.
    #[must_use]
    pub fn meta(mut self, key: impl Into<String>, value: Value) -> Self {
        self.meta
            .get_or_insert_with(Map::new)
            .insert(key.into(), value);
        self
    }

    /// Sets the input schema explicitly (raw JSON Schema). Overrides a derived one.
    #[must_use]
    pub fn input_schema(mut self, schema: Value) -> Self {
        self.input_schema = Some(schema);
        self
    }

    /// Sets the output schema explicitly (raw JSON Schema).
    #[must_use]
    pub fn output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(schema);
        self
    }

    /// Derives the output schema from `O`.
    #[must_use]
    pub fn output<O: JsonSchema>(self) -> Self {
        self.output_schema(schema_for::<O>())
    }

    /// Sets the handler: an async function (or closure) of the arguments, optionally
    /// with the [`RequestContext`] after them and a [`State`](crate::State) before them
    /// ([`Handler`] lists the forms). The arguments are validated against the input
    /// schema (derived from `A` unless set explicitly), then deserialised into `A`.
    ///
    /// ```
    /// # use snodo::{NoArguments, RequestContext, State, Tool};
    /// # #[derive(Clone)] struct Db;
    /// let plain = Tool::new("a").handler(|_: NoArguments| async { "hi" });
    /// let with_ctx = Tool::new("b")
    ///     .handler(|_: NoArguments, ctx: RequestContext| async move { ctx.progress(1.0, None, None).await; "hi" });
    /// let with_state = Tool::new("c").handler(|State(_db): State<Db>, _: NoArguments| async { "hi" });
    /// # let _ = (plain, with_ctx, with_state);
    /// ```
    #[must_use]
    pub fn handler<A, M, H>(mut self, handler: H) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        H: Handler<A, M>,
        H::Output: IntoToolResult,
    {
        if self.input_schema.is_none() {
            self.input_schema = Some(schema_for::<A>());
        }
        let handler = Arc::new(handler);
        self.handler = bind_or_defer(move |state: H::State| -> ToolHandler {
            let handler = Arc::clone(&handler);
            Arc::new(move |args: Value, ctx| {
                let (handler, state) = (Arc::clone(&handler), state.clone());
                Box::pin(async move {
                    let args: A = serde_json::from_value(args).map_err(|e| {
                        HandlerError::Protocol(RpcError::invalid_params(format!(
                            "Invalid arguments: {e}"
                        )))
                    })?;
                    handler.call(state, args, ctx).await.into_tool_result()
                })
            })
        });
        self
    }

    /// Sets a handler that receives the validated arguments as a JSON object and the
    /// context (the escape hatch for schemas no Rust type describes). Requires
    /// [`input_schema`](Self::input_schema) (or defaults to an object schema).
    #[must_use]
    pub fn raw_handler<F, Fut, R>(mut self, f: F) -> Self
    where
        F: Fn(Value, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = R> + Send + 'static,
        R: IntoToolResult,
    {
        let f = Arc::new(f);
        self.handler = Slot::Ready(Arc::new(move |args: Value, ctx| {
            let f = Arc::clone(&f);
            Box::pin(async move { f(args, ctx).await.into_tool_result() })
        }));
        self
    }

    /// Binds a handler that takes state; `Err(type name)` when that state is not
    /// registered.
    pub(crate) fn bind(&mut self, states: &States) -> Result<(), &'static str> {
        self.handler.bind(states)
    }

    /// The name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// Whether a schema's root is `type: "object"` (the only shape initialize-era dialects
/// can express).
pub(crate) fn is_object_schema(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("object")
}

/// Tool names: 1–128 characters of `[A-Za-z0-9_.-]` (and `/`, which some clients use).
pub(crate) fn valid_tool_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Args {
        text: String,
        count: Option<u32>,
    }

    #[test]
    fn derived_schema_is_self_contained_object() {
        let s = schema_for::<Args>();
        assert!(is_object_schema(&s));
        assert!(s.get("$ref").is_none());
        assert_eq!(s["required"], serde_json::json!(["text"]));
        assert_eq!(
            s["properties"]["count"],
            serde_json::json!({"type":"integer","minimum":0})
        );
        assert!(is_object_schema(&schema_for::<NoArguments>()));
    }

    #[test]
    fn names() {
        assert!(valid_tool_name("test_simple_text"));
        assert!(!valid_tool_name(""));
        assert!(!valid_tool_name("has space"));
        assert!(!valid_tool_name(&"x".repeat(129)));
    }
}
