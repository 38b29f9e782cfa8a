//! Prompts: definition, arguments, handler, completer.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde::Serialize;

use super::completion::{Completer, CompletionRequest};
use super::context::RequestContext;
use super::error::HandlerError;
use crate::model::{Content, Icon, PromptMessage, PromptResult};

/// One declared prompt argument.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PromptArgument {
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    required: bool,
}

impl PromptArgument {
    /// The argument name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// The arguments a prompt was called with (a flat string map).
pub type PromptArguments = HashMap<String, String>;

pub(crate) type PromptHandler = Arc<
    dyn Fn(
            PromptArguments,
            RequestContext,
        ) -> BoxFuture<'static, Result<PromptResult, HandlerError>>
        + Send
        + Sync,
>;

/// A prompt template.
#[derive(Clone)]
pub struct Prompt {
    pub(crate) name: String,
    pub(crate) title: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) arguments: Vec<PromptArgument>,
    pub(crate) icons: Vec<Icon>,
    pub(crate) handler: Option<PromptHandler>,
    pub(crate) completer: Option<Completer>,
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
            handler: None,
            completer: None,
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

    /// Declares an argument.
    #[must_use]
    pub fn argument(
        mut self,
        name: impl Into<String>,
        description: impl Into<String>,
        required: bool,
    ) -> Self {
        self.arguments.push(PromptArgument {
            name: name.into(),
            description: Some(description.into()),
            required,
        });
        self
    }

    /// Sets the handler. Required arguments are checked before it runs.
    #[must_use]
    pub fn handler<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(PromptArguments, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<PromptResult, HandlerError>> + Send + 'static,
    {
        self.handler = Some(Arc::new(move |args, ctx| Box::pin(f(args, ctx))));
        self
    }

    /// Sets a completer for the prompt's arguments.
    #[must_use]
    pub fn completer<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(CompletionRequest, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<String>, HandlerError>> + Send + 'static,
    {
        self.completer = Some(super::completion::boxed(f));
        self
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
