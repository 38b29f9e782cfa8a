//! The catalogue: validated components, and their wire definitions computed once per
//! enabled dialect.

use std::sync::{Arc, OnceLock};

use serde::Serialize;
use serde_json::{Map, Value};

use super::builder::BuildError;
use super::components::Components;
use super::events::Change;
use super::param_headers::{self, ParamHeader};
use super::prompt::Prompt;
use super::resource::{CompiledTemplate, Resource};
use super::tool::{ToolHandler, is_object_schema, valid_tool_name};
use super::uri_template::UriTemplate;
pub(crate) use super::view::{DialectView, Listing};
use crate::model::ServerInfo;
use crate::protocol::Dialect;

/// A name index: component names are the server's own, and a lookup of a name a client
/// sent cannot lengthen a probe sequence the server's names did not already make, so the
/// hash need not resist flooding: foldhash rather than SipHash's rounds on every lookup.
type Index = foldhash::HashMap<String, usize>;

/// A registered tool with its compiled argument validator.
pub(crate) struct CompiledTool {
    pub(crate) name: String,
    pub(crate) handler: ToolHandler,
    pub(crate) validator: jsonschema::Validator,
    /// Both schemas have an object root (expressible in initialize-era dialects).
    pub(crate) object_schemas: bool,
    /// Arguments mirrored into `Mcp-Param-*` headers (2026-07-28).
    pub(crate) param_headers: Vec<ParamHeader>,
    /// The tool's own limits, if it has any.
    pub(crate) enforcer: Option<Arc<super::policy::Enforcer>>,
    /// What extensions attached to the tool.
    pub(crate) slots: super::slots::Slots,
    /// Middleware around calls of this tool.
    pub(crate) layers: crate::middleware::Layers,
}

pub(crate) struct Catalogue {
    pub(crate) tools: Vec<CompiledTool>,
    tool_index: Index,
    pub(crate) prompts: Vec<Prompt>,
    prompt_index: Index,
    pub(crate) resources: Vec<Resource>,
    resource_index: Index,
    pub(crate) templates: Vec<CompiledTemplate>,
    /// Tool definitions as the newest dialect publishes them, before shaping.
    tool_defs: Vec<Map<String, Value>>,
    /// The server's `Implementation` object, before shaping.
    info: Map<String, Value>,
    /// Per enabled dialect, what it publishes: built by the first request that needs it.
    views: Vec<(&'static Dialect, OnceLock<DialectView>)>,
    /// Whether some component has middleware of its own.
    layered: bool,
}

fn to_object(value: impl Serialize) -> Map<String, Value> {
    match serde_json::to_value(value) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    }
}

fn compile_schema(
    tool: &str,
    which: &'static str,
    schema: &Value,
) -> Result<jsonschema::Validator, BuildError> {
    let invalid = |reason: String| BuildError::InvalidSchema {
        tool: tool.to_owned(),
        which,
        reason,
    };
    if !schema.is_object() {
        return Err(invalid("a schema must be a JSON object".into()));
    }
    jsonschema::options()
        .should_validate_formats(false)
        .build(schema)
        .map_err(|e| invalid(e.to_string()))
}

/// A tool's wire definition as the newest dialect publishes it, before shaping (like
/// the prompt and template definitions, a serialisable struct).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ToolDefinition {
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    input_schema: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_schema: Option<Value>,
    #[serde(skip_serializing_if = "Map::is_empty")]
    annotations: Map<String, Value>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    icons: Vec<crate::model::Icon>,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    meta: Option<Map<String, Value>>,
}

fn duplicate(kind: &'static str, name: &str) -> BuildError {
    BuildError::Duplicate {
        kind,
        name: name.to_owned(),
    }
}

fn missing(kind: &'static str, name: &str) -> BuildError {
    BuildError::MissingHandler {
        kind,
        name: name.to_owned(),
    }
}

/// The compiled tools, their index by name and their definitions.
type CompiledTools = (Vec<CompiledTool>, Index, Vec<Map<String, Value>>);

/// Every tool: a valid, unique name, then [`compile_tool`].
fn compile_tools(tools: Vec<super::tool::Tool>) -> Result<CompiledTools, BuildError> {
    let mut compiled = Vec::with_capacity(tools.len());
    let mut index = Index::default();
    let mut defs = Vec::with_capacity(tools.len());
    for tool in tools {
        if !valid_tool_name(&tool.name) {
            return Err(BuildError::InvalidToolName(tool.name));
        }
        if index.insert(tool.name.clone(), compiled.len()).is_some() {
            return Err(duplicate("tool", &tool.name));
        }
        let (tool, def) = compile_tool(tool)?;
        compiled.push(tool);
        defs.push(def);
    }
    Ok((compiled, index, defs))
}

/// One tool: its handler and schemas; its compiled form and definition.
fn compile_tool(
    mut tool: super::tool::Tool,
) -> Result<(CompiledTool, Map<String, Value>), BuildError> {
    let handler = tool
        .handler
        .take()
        .ok_or_else(|| missing("tool", &tool.name))?;
    let input = tool
        .input_schema
        .take()
        .unwrap_or_else(|| serde_json::json!({"type": "object"}));
    let invalid_input = |reason: String| BuildError::InvalidSchema {
        tool: tool.name.clone(),
        which: "input",
        reason,
    };
    if !is_object_schema(&input) {
        return Err(invalid_input(
            "tool arguments are JSON objects: the root must have \"type\": \"object\"".into(),
        ));
    }
    let validator = compile_schema(&tool.name, "input", &input)?;
    let param_headers = param_headers::extract(&input).map_err(|e| invalid_input(e.to_string()))?;
    if let Some(output) = &tool.output_schema {
        compile_schema(&tool.name, "output", output)?;
    }
    let object_schemas = tool.output_schema.as_ref().is_none_or(is_object_schema);
    let mut annotations = to_object(&tool.annotations);
    if let Some(extra) = tool.extra_annotations.take() {
        annotations.extend(extra);
    }
    let def = to_object(ToolDefinition {
        name: tool.name.clone(),
        title: tool.title,
        description: tool.description,
        input_schema: input,
        output_schema: tool.output_schema,
        annotations,
        icons: tool.icons,
        meta: tool.meta,
    });
    let compiled = CompiledTool {
        name: tool.name,
        handler,
        validator,
        object_schemas,
        param_headers,
        enforcer: tool.enforcer,
        slots: tool.slots,
        layers: tool.layers,
    };
    Ok((compiled, def))
}

/// Prompts: unique names, each with a handler.
fn index_prompts(prompts: &[Prompt]) -> Result<Index, BuildError> {
    let mut index = Index::default();
    for (i, p) in prompts.iter().enumerate() {
        if index.insert(p.name.clone(), i).is_some() {
            return Err(duplicate("prompt", &p.name));
        }
        if p.handler.get().is_none() {
            return Err(missing("prompt", &p.name));
        }
    }
    Ok(index)
}

/// Resources: absolute, unique URIs, each with a reader.
fn index_resources(resources: &[Resource]) -> Result<Index, BuildError> {
    let mut index = Index::default();
    for (i, r) in resources.iter().enumerate() {
        let uri = r.info.uri();
        if !uri.contains(':') {
            return Err(BuildError::InvalidResource {
                uri: uri.to_owned(),
                reason: "a resource URI must be absolute".into(),
            });
        }
        if index.insert(uri.to_owned(), i).is_some() {
            return Err(duplicate("resource", uri));
        }
        if r.reader.get().is_none() {
            return Err(missing("resource", uri));
        }
    }
    Ok(index)
}

/// Resource templates: unique, parsed, each with a reader.
fn compile_templates(
    templates: Vec<super::resource::ResourceTemplate>,
) -> Result<Vec<CompiledTemplate>, BuildError> {
    let mut compiled = Vec::with_capacity(templates.len());
    for t in templates {
        if compiled
            .iter()
            .any(|c: &CompiledTemplate| c.template.template == t.template)
        {
            return Err(duplicate("resource template", &t.template));
        }
        let matcher =
            UriTemplate::parse(&t.template).map_err(|reason| BuildError::InvalidResource {
                uri: t.template.clone(),
                reason,
            })?;
        if t.reader.get().is_none() {
            return Err(missing("resource template", &t.template));
        }
        compiled.push(CompiledTemplate {
            template: t,
            matcher,
        });
    }
    Ok(compiled)
}

/// Warns about tools the initialize-era dialects cannot list.
fn warn_hidden(tools: &[CompiledTool], dialects: &[&'static Dialect]) {
    let hidden: Vec<&str> = tools
        .iter()
        .filter(|t| !t.object_schemas)
        .map(|t| t.name.as_str())
        .collect();
    let legacy: Vec<&str> = dialects
        .iter()
        .filter(|d| !d.offers_tool(false))
        .map(|d| d.version())
        .collect();
    if !hidden.is_empty() && !legacy.is_empty() {
        tracing::warn!(
            tools = %hidden.join(", "),
            dialects = %legacy.join(", "),
            "Tools without object input and output schemas are hidden from initialize-era clients ({}): {}",
            legacy.join(", "),
            hidden.join(", ")
        );
    }
}

impl Catalogue {
    pub(crate) fn build(
        components: Components,
        dialects: &[&'static Dialect],
        info: &ServerInfo,
    ) -> Result<Self, BuildError> {
        let Components {
            tools,
            prompts,
            resources,
            templates,
            ..
        } = components;
        let (tools, tool_index, tool_defs) = compile_tools(tools)?;
        let prompt_index = index_prompts(&prompts)?;
        let resource_index = index_resources(&resources)?;
        let templates = compile_templates(templates)?;
        warn_hidden(&tools, dialects);
        let layered = tools.iter().any(|t| !t.layers.is_empty())
            || prompts.iter().any(|p| !p.layers.is_empty())
            || resources.iter().any(|r| !r.layers.is_empty());
        Ok(Self {
            layered,
            tools,
            tool_index,
            prompts,
            prompt_index,
            resources,
            resource_index,
            templates,
            tool_defs,
            info: to_object(info),
            views: dialects.iter().map(|&d| (d, OnceLock::new())).collect(),
        })
    }

    /// Which lists differ from `next` (for `subscriptions/listen`).
    pub(crate) fn changes_to(&self, next: &Self) -> Vec<Change> {
        let differs = |pick: fn(&DialectView) -> u64| {
            self.views.iter().any(|(d, _)| {
                let (a, b) = (self.view(d), next.view(d));
                a.map(pick) != b.map(pick)
            })
        };
        let mut out = Vec::new();
        if differs(|v| v.tools.hash()) {
            out.push(Change::ToolsListChanged);
        }
        if differs(|v| v.prompts.hash()) {
            out.push(Change::PromptsListChanged);
        }
        if differs(|v| v.resources.hash()) || differs(|v| v.templates.hash()) {
            out.push(Change::ResourcesListChanged);
        }
        out
    }

    pub(crate) fn view(&self, dialect: &Dialect) -> Option<&DialectView> {
        let (d, view) = self.views.iter().find(|(d, _)| *d == dialect)?;
        Some(view.get_or_init(|| self.publish(d)))
    }

    /// Everything `dialect` publishes of this catalogue.
    fn publish(&self, dialect: &'static Dialect) -> DialectView {
        let tools = self
            .tool_defs
            .iter()
            .zip(&self.tools)
            .filter(|(_, c)| dialect.offers_tool(c.object_schemas))
            .map(|(def, _)| def.clone())
            .collect();
        let prompts = self.prompts.iter().map(|p| to_object(p.info())).collect();
        let resources = self.resources.iter().map(|r| to_object(&r.info)).collect();
        let templates = self
            .templates
            .iter()
            .map(|t| to_object(t.template.info()))
            .collect();
        DialectView::new(
            dialect,
            self.info.clone(),
            [tools, prompts, resources, templates],
        )
    }

    /// Whether a tool has a `T` attached (e.g. runs as a task).
    pub(crate) fn has_tools_with<T: std::any::Any + Send + Sync>(&self) -> bool {
        self.tools.iter().any(|t| t.slots.get::<T>().is_some())
    }

    pub(crate) fn tool(&self, name: &str) -> Option<&CompiledTool> {
        // A few names compare faster than hashing the key.
        if self.tools.len() <= 8 {
            return self.tools.iter().find(|t| t.name == name);
        }
        self.tool_index.get(name).map(|&i| &self.tools[i])
    }

    pub(crate) fn prompt(&self, name: &str) -> Option<&Prompt> {
        self.prompt_index.get(name).map(|&i| &self.prompts[i])
    }

    pub(crate) fn resource(&self, uri: &str) -> Option<&Resource> {
        self.resource_index.get(uri).map(|&i| &self.resources[i])
    }

    /// Whether some component has middleware of its own.
    pub(crate) fn layered(&self) -> bool {
        self.layered
    }

    pub(crate) fn has_tools(&self) -> bool {
        !self.tools.is_empty()
    }

    pub(crate) fn has_prompts(&self) -> bool {
        !self.prompts.is_empty()
    }

    pub(crate) fn has_resources(&self) -> bool {
        !self.resources.is_empty() || !self.templates.is_empty()
    }

    pub(crate) fn has_completions(&self) -> bool {
        self.prompts.iter().any(|p| p.completer.get().is_some())
            || self
                .templates
                .iter()
                .any(|t| t.template.completer.get().is_some())
    }
}
