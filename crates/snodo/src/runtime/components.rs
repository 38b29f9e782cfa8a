//! The editable set of components: what [`Runtime::update`](super::Runtime::update)
//! hands to the application to change the catalogue at run time.

use super::builder::BuildError;
use super::handler::States;
use super::prompt::Prompt;
use super::resource::{Resource, ResourceTemplate};
use super::tool::Tool;

/// Tools, prompts, resources and templates, in registration order.
#[derive(Clone, Debug, Default)]
pub struct Components {
    pub(crate) tools: Vec<Tool>,
    pub(crate) prompts: Vec<Prompt>,
    pub(crate) resources: Vec<Resource>,
    pub(crate) templates: Vec<ResourceTemplate>,
    /// The shared state handlers take ([`State`](crate::State)).
    pub(crate) states: States,
}

/// A resource at a fixed URI or a template of them: what
/// [`RuntimeBuilder::resource`](crate::RuntimeBuilder::resource) and
/// [`Components::add_resource`] take, so that `#[snodo::resource]`'s one entry point
/// (`NAME::resource()`) registers the same way whether or not its URI has variables.
///
/// ```
/// use snodo::{Resource, ResourceTemplate, Runtime};
/// let runtime = Runtime::builder("s", "1")
///     .resource(Resource::new("note://readme", "readme").static_text("text/plain", "hi"))
///     .resource(ResourceTemplate::new("note://{id}", "note").reader(|req, _ctx| async move {
///         Ok(vec![snodo::ResourceContents::text(req.uri, "a note")])
///     }))
///     .build();
/// assert!(runtime.is_ok());
/// ```
pub trait IntoResource: sealed::Sealed {}

impl IntoResource for Resource {}
impl IntoResource for ResourceTemplate {}

mod sealed {
    use super::{Resource, ResourceTemplate};

    /// One or the other.
    #[derive(Debug)]
    pub enum Either {
        Fixed(Resource),
        Template(ResourceTemplate),
    }

    /// Keeps [`IntoResource`](super::IntoResource) to the two kinds.
    pub trait Sealed {
        fn either(self) -> Either;
    }

    impl Sealed for Resource {
        fn either(self) -> Either {
            Either::Fixed(self)
        }
    }

    impl Sealed for ResourceTemplate {
        fn either(self) -> Either {
            Either::Template(self)
        }
    }
}

/// The build error of a `kind` component named `name` whose handler takes a state
/// nobody registered.
fn missing_state(kind: &'static str, name: &str) -> impl FnOnce(&'static str) -> BuildError {
    move |state| BuildError::MissingState {
        kind,
        name: name.to_owned(),
        state,
    }
}

impl Components {
    /// Binds every handler that takes state to the registered states.
    pub(crate) fn bind(&mut self) -> Result<(), BuildError> {
        let states = &self.states;
        for t in &mut self.tools {
            t.bind(states).map_err(missing_state("tool", &t.name))?;
        }
        for p in &mut self.prompts {
            p.bind(states).map_err(missing_state("prompt", &p.name))?;
        }
        for r in &mut self.resources {
            r.bind(states)
                .map_err(missing_state("resource", r.info.uri()))?;
        }
        for t in &mut self.templates {
            t.bind(states)
                .map_err(missing_state("resource template", &t.template))?;
        }
        Ok(())
    }

    /// Adds (or replaces, keeping its position) a tool. A handler that takes
    /// [`State`](crate::State) gets the runtime's.
    pub fn add_tool(&mut self, tool: Tool) {
        match self.tools.iter_mut().find(|t| t.name == tool.name) {
            Some(slot) => *slot = tool,
            None => self.tools.push(tool),
        }
    }

    /// Removes a tool; `false` if there was none of that name.
    pub fn remove_tool(&mut self, name: &str) -> bool {
        let before = self.tools.len();
        self.tools.retain(|t| t.name != name);
        before != self.tools.len()
    }

    /// Whether a tool of that name exists.
    #[must_use]
    pub fn has_tool(&self, name: &str) -> bool {
        self.tools.iter().any(|t| t.name == name)
    }

    /// Adds (or replaces) a prompt.
    pub fn add_prompt(&mut self, prompt: Prompt) {
        match self.prompts.iter_mut().find(|p| p.name == prompt.name) {
            Some(slot) => *slot = prompt,
            None => self.prompts.push(prompt),
        }
    }

    /// Removes a prompt; `false` if there was none of that name.
    pub fn remove_prompt(&mut self, name: &str) -> bool {
        let before = self.prompts.len();
        self.prompts.retain(|p| p.name != name);
        before != self.prompts.len()
    }

    /// Whether a prompt of that name exists.
    #[must_use]
    pub fn has_prompt(&self, name: &str) -> bool {
        self.prompts.iter().any(|p| p.name == name)
    }

    /// Registers a resource or a template, as the builder does
    /// ([`RuntimeBuilder::resource`](crate::RuntimeBuilder::resource)), duplicates
    /// included (the build refuses them).
    pub(crate) fn push_resource(&mut self, resource: impl IntoResource) {
        match resource.either() {
            sealed::Either::Fixed(r) => self.resources.push(r),
            sealed::Either::Template(t) => self.templates.push(t),
        }
    }

    /// Adds (or replaces, keeping its position) a resource; a template goes to
    /// [`add_template`](Self::add_template).
    pub fn add_resource(&mut self, resource: impl IntoResource) {
        let resource = match resource.either() {
            sealed::Either::Fixed(r) => r,
            sealed::Either::Template(t) => return self.add_template(t),
        };
        match self
            .resources
            .iter_mut()
            .find(|r| r.info.uri() == resource.info.uri())
        {
            Some(slot) => *slot = resource,
            None => self.resources.push(resource),
        }
    }

    /// Removes a resource; `false` if there was none at that URI.
    pub fn remove_resource(&mut self, uri: &str) -> bool {
        let before = self.resources.len();
        self.resources.retain(|r| r.info.uri() != uri);
        before != self.resources.len()
    }

    /// Whether a resource at that URI exists.
    #[must_use]
    pub fn has_resource(&self, uri: &str) -> bool {
        self.resources.iter().any(|r| r.info.uri() == uri)
    }

    /// Adds a resource template.
    pub fn add_template(&mut self, template: ResourceTemplate) {
        self.templates.retain(|t| t.template != template.template);
        self.templates.push(template);
    }

    /// Removes a resource template by its URI template; `false` if there was none.
    pub fn remove_template(&mut self, template: &str) -> bool {
        let before = self.templates.len();
        self.templates.retain(|t| t.template != template);
        before != self.templates.len()
    }

    /// Whether a resource template of that URI template exists.
    #[must_use]
    pub fn has_template(&self, template: &str) -> bool {
        self.templates.iter().any(|t| t.template == template)
    }

    /// Orders every list canonically: tools and prompts by name, resources by URI,
    /// templates by template. Lists are served in the order held here, and a list
    /// cursor is good on every instance that holds the same components in the same
    /// order; where components arrive in an order that differs between instances (a
    /// composition front whose backends finish mounting in any order), this makes
    /// that order the same everywhere.
    ///
    /// ```
    /// use snodo::{NoArguments, Runtime, Tool};
    /// let rt = Runtime::builder("s", "1").build().unwrap();
    /// rt.update(|c| {
    ///     c.add_tool(Tool::new("zeta").handler(|_: NoArguments| async { "z" }));
    ///     c.add_tool(Tool::new("alpha").handler(|_: NoArguments| async { "a" }));
    ///     c.sort();
    /// }).unwrap();
    /// ```
    pub fn sort(&mut self) {
        self.tools.sort_by(|a, b| a.name.cmp(&b.name));
        self.prompts.sort_by(|a, b| a.name.cmp(&b.name));
        self.resources
            .sort_by(|a, b| a.info.uri().cmp(b.info.uri()));
        self.templates.sort_by(|a, b| a.template.cmp(&b.template));
    }
}
