//! The Skills extension's part of the description: [`RuntimeBuilder::skills`] and
//! [`RuntimeBuilder::skills_dir`], read at build into the runtime's slots.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::json;

use super::{EXTENSION_ID, Skills};
use crate::{BuildError, Runtime, RuntimeBuilder};

/// Where the skills come from (the last call wins).
#[derive(Clone)]
enum Source {
    Value(Arc<Skills>),
    Dir(PathBuf),
}

impl RuntimeBuilder {
    /// Serves `skills` (the Skills extension, feature `skills`): `skills/list`,
    /// `skills/get`, `resources/directory/read`, and every skill file as a `skill://`
    /// resource. Declared on the dialects that have `capabilities.extensions`
    /// (2026-07-28).
    pub fn skills(self, skills: Skills) -> Self {
        self.skills_from(Source::Value(Arc::new(skills)))
    }

    /// Serves every skill under `dir` (read at [`build`](Self::build); see
    /// [`Skills::from_dir`]).
    pub fn skills_dir(self, dir: impl Into<PathBuf>) -> Self {
        self.skills_from(Source::Dir(dir.into()))
    }

    fn skills_from(mut self, source: Source) -> Self {
        let first = self.slots_mut().take::<Source>().is_none();
        self = self.attach(source);
        if first { self.on_build(serve) } else { self }
    }
}

/// At build: reads the skills, registers their files as resources, declares the
/// extension.
fn serve(mut builder: RuntimeBuilder) -> Result<RuntimeBuilder, BuildError> {
    let Some(source) = builder.slots_mut().take::<Source>() else {
        return Ok(builder);
    };
    let skills = match source {
        Source::Value(s) => s,
        Source::Dir(d) => {
            Arc::new(Skills::from_dir(d).map_err(|e| BuildError::InvalidSkills(e.to_string()))?)
        }
    };
    for resource in skills.resources() {
        builder = builder.resource(resource);
    }
    Ok(builder
        .declare_extension(EXTENSION_ID, json!({"directoryRead": true}))
        .attach(skills))
}

impl Runtime {
    /// The skills served, if any.
    pub(crate) fn skills(&self) -> Option<&Arc<Skills>> {
        self.slots().get::<Arc<Skills>>()
    }
}
