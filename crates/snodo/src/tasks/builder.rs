//! The tasks extension's part of the description: [`RuntimeBuilder::tasks`],
//! [`Tool::task`], [`Tool::task_input`], and the runtime's task state, made at its
//! first use.

use std::sync::Arc;

use super::{TaskOptions, TaskSupport, Tasks};
use crate::observation::{TaskObserver, TaskSink};
use crate::runtime::input::InputRequest;
use crate::{Runtime, RuntimeBuilder, Tool};

/// Questions a tool asks before its task is created ([`Tool::task_input`]).
#[derive(Clone, Default)]
pub(crate) struct TaskInputs(pub(crate) Vec<(String, InputRequest)>);

impl RuntimeBuilder {
    /// Configures the tasks extension (2026-07-28): where tasks live and for how long.
    /// Without this call, tools marked [`Tool::task`] run as tasks in an in-memory
    /// store ([`TaskOptions::default`](crate::tasks::TaskOptions)).
    pub fn tasks(self, options: TaskOptions) -> Self {
        self.attach(options)
    }
}

impl Tool {
    /// Runs calls as tasks (the tasks extension, 2026-07-28): a request that declares
    /// the extension gets a `CreateTaskResult` at once, and the handler runs as the
    /// task's worker. [`TaskSupport::Optional`] calls from other clients run as usual;
    /// [`TaskSupport::Required`] ones are refused with `-32021`.
    ///
    /// In the worker, [`RequestContext::ask`](crate::RequestContext::ask) parks the
    /// task in `input_required` until `tasks/update` answers, progress becomes the
    /// task's status message, and the context's cancellation fires on `tasks/cancel`.
    #[must_use]
    pub fn task(mut self, support: TaskSupport) -> Self {
        self.slots.insert(support);
        self
    }

    /// A question asked before the task is created, with ordinary multi round-trip
    /// rounds (`input_required` results), so that the client answers it synchronously;
    /// the worker reads the answer with [`RequestContext::ask`](crate::RequestContext::ask)
    /// under the same `key`.
    #[must_use]
    pub fn task_input(mut self, key: impl Into<String>, request: InputRequest) -> Self {
        self.slots
            .update(|inputs: &mut TaskInputs| inputs.0.push((key.into(), request)));
        self
    }
}

impl Runtime {
    /// The runtime's task state: made at the first task operation, from the
    /// [`TaskOptions`] given (else the default in-memory store), counting into the
    /// metrics when the runtime has them.
    pub(crate) fn tasks(&self) -> Arc<Tasks> {
        let slots = self.slots();
        let state = slots.get_or_init(|| {
            let options = slots.get::<TaskOptions>().cloned().unwrap_or_default();
            let sink = slots.get::<Arc<dyn TaskSink>>().cloned();
            Tasks::new(options, TaskObserver::new(sink))
        });
        Arc::clone(&*state)
    }
}

impl crate::runtime::Catalogue {
    /// Whether a tool runs as a task (the tasks extension is advertised).
    pub(crate) fn has_task_tools(&self) -> bool {
        self.has_tools_with::<TaskSupport>()
    }
}
