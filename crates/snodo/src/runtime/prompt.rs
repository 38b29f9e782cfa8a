//! Prompts: definition, arguments, handler, completer.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;

use serde::Serialize;

use super::completion::{Completer, CompletionRequest};
use super::context::RequestContext;
use super::error::HandlerError;
use super::handler::{Erased, Handler, Slot, States, erase};
use crate::model::{Content, Icon, PromptMessage, PromptResult};

/// One declared prompt argument: optional unless marked [`required`](Self::required).
///
/// ```
/// use snodo::{Prompt, PromptArgument};
/// let p = Prompt::new("review")
///     .arg(PromptArgument::new("code").description("The code to review").required())
///     .arg(PromptArgument::new("focus").description("What to look at first"));
/// # let _ = p;
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PromptArgument {
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    required: bool,
}

impl PromptArgument {
    /// An optional argument named `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            description: None,
            required: false,
        }
    }

    /// Sets the description.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Marks the argument required: a `prompts/get` without it is refused before the
    /// handler runs.
    #[must_use]
    pub fn required(mut self) -> Self {
        self.required = true;
        self
    }

    /// Whether the argument is required.
    #[must_use]
    pub fn is_required(&self) -> bool {
        self.required
    }

    /// The argument name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// The arguments a prompt was called with (a flat string map).
pub type PromptArguments = HashMap<String, String>;

pub(crate) type PromptHandler = Erased<PromptArguments, Result<PromptResult, HandlerError>>;

/// A prompt template.
#[derive(Clone)]
pub struct Prompt {
    pub(crate) name: String,
    pub(crate) title: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) arguments: Vec<PromptArgument>,
    pub(crate) icons: Vec<Icon>,
    pub(crate) handler: Slot<PromptHandler>,
    pub(crate) completer: Slot<Completer>,
    /// Middleware around gets of this prompt ([`Prompt::layer`]).
    pub(crate) layers: crate::middleware::Layers,
}

impl fmt::Debug for Prompt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Prompt")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// The wire shape of a prompt definition.
#[derive(Serialize)]
pub(crate) struct PromptInfo<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    title: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    #[serde(skip_serializing_if = "<[PromptArgument]>::is_empty")]
    arguments: &'a [PromptArgument],
    #[serde(skip_serializing_if = "<[Icon]>::is_empty")]
    icons: &'a [Icon],
}

impl Prompt {
    /// A prompt named `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            title: None,
            description: None,
            arguments: Vec::new(),
            icons: Vec::new(),
            handler: Slot::Empty,
            completer: Slot::Empty,
            layers: crate::middleware::Layers::new(),
        }
    }

    /// Sets the description.
    #[must_use]
    pub fn description(mut self, d: impl Into<String>) -> Self {
        self.description = Some(d.into());
        self
    }

    /// Sets the title.
    #[must_use]
    pub fn title(mut self, t: impl Into<String>) -> Self {
        self.title = Some(t.into());
        self
    }

    /// Adds an icon.
    #[must_use]
    pub fn icon(mut self, icon: Icon) -> Self {
        self.icons.push(icon);
        self
    }

    /// Declares an argument ([`PromptArgument`] says how).
    #[must_use]
    pub fn arg(mut self, argument: PromptArgument) -> Self {
        self.arguments.push(argument);
        self
    }

    /// Declares an argument with its description, `required` or not: the short form
    /// of [`arg`](Self::arg).
    #[must_use]
    pub fn argument(
        self,
        name: impl Into<String>,
        description: impl Into<String>,
        required: bool,
    ) -> Self {
        let argument = PromptArgument::new(name).description(description);
        self.arg(if required {
            argument.required()
        } else {
            argument
        })
    }

    /// Sets the handler of `prompts/get`: an async function (or closure) of the
    /// [`PromptArguments`], optionally with the [`RequestContext`] after them and a
    /// [`State`](crate::State) before them ([`Handler`] lists the forms). It returns
    /// anything [`IntoPromptResult`]. Required arguments are checked before it runs.
    ///
    /// ```
    /// # use snodo::{Prompt, PromptArguments, State};
    /// # #[derive(Clone)] struct Style(&'static str);
    /// let p = Prompt::new("greet").on_get(|State(style): State<Style>, args: PromptArguments| async move {
    ///     format!("{} {}", style.0, args.get("name").map_or("you", String::as_str))
    /// });
    /// # let _ = p;
    /// ```
    #[must_use]
    pub fn on_get<M, H>(mut self, handler: H) -> Self
    where
        H: Handler<PromptArguments, M>,
        H::Output: IntoPromptResult + 'static,
    {
        self.handler = erase(handler, IntoPromptResult::into_prompt_result);
        self
    }

    /// Sets the handler: [`on_get`](Self::on_get) for the `(arguments, context)`
    /// closure, whose parameter types need no annotation.
    #[must_use]
    pub fn handler<F, Fut>(self, f: F) -> Self
    where
        F: Fn(PromptArguments, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<PromptResult, HandlerError>> + Send + 'static,
    {
        self.on_get(f)
    }

    /// Sets the completer of the prompt's arguments: any [`Handler`] form of a
    /// [`CompletionRequest`] returning the candidate values.
    #[must_use]
    pub fn on_complete<M, H>(mut self, handler: H) -> Self
    where
        H: Handler<CompletionRequest, M, Output = Result<Vec<String>, HandlerError>>,
    {
        self.completer = super::completion::boxed(handler);
        self
    }

    /// Sets a completer: [`on_complete`](Self::on_complete) for the `(request,
    /// context)` closure, whose parameter types need no annotation.
    #[must_use]
    pub fn completer<F, Fut>(self, f: F) -> Self
    where
        F: Fn(CompletionRequest, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<String>, HandlerError>> + Send + 'static,
    {
        self.on_complete(f)
    }

    /// Binds the handlers that take state; `Err(type name)` when one is not registered.
    pub(crate) fn bind(&mut self, states: &States) -> Result<(), &'static str> {
        self.handler.bind(states)?;
        self.completer.bind(states)
    }

    pub(crate) fn info(&self) -> PromptInfo<'_> {
        PromptInfo {
            name: &self.name,
            title: self.title.as_deref(),
            description: self.description.as_deref(),
            arguments: &self.arguments,
            icons: &self.icons,
        }
    }

    /// Names of required arguments missing from `args`, in declaration order.
    pub(crate) fn missing_arguments(&self, args: &PromptArguments) -> Vec<&str> {
        self.arguments
            .iter()
            .filter(|a| a.required && !args.contains_key(&a.name))
            .map(|a| a.name.as_str())
            .collect()
    }
}

/// Anything a prompt handler written with `#[snodo::prompt]` may return.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a prompt result",
    label = "a prompt returns PromptResult, Vec<PromptMessage>, String, or a Result of one"
)]
pub trait IntoPromptResult {
    /// Converts into a result or an error.
    fn into_prompt_result(self) -> Result<PromptResult, HandlerError>;
}

impl IntoPromptResult for PromptResult {
    fn into_prompt_result(self) -> Result<PromptResult, HandlerError> {
        Ok(self)
    }
}

impl IntoPromptResult for Vec<PromptMessage> {
    fn into_prompt_result(self) -> Result<PromptResult, HandlerError> {
        Ok(PromptResult::new(self))
    }
}

/// One user message with this text.
impl IntoPromptResult for String {
    fn into_prompt_result(self) -> Result<PromptResult, HandlerError> {
        Ok(PromptResult::new(vec![PromptMessage::user(Content::text(
            self,
        ))]))
    }
}

impl<T: IntoPromptResult, E: Into<HandlerError>> IntoPromptResult for Result<T, E> {
    fn into_prompt_result(self) -> Result<PromptResult, HandlerError> {
        self.map_err(Into::into)
            .and_then(IntoPromptResult::into_prompt_result)
    }
}
