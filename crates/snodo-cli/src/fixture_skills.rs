//! The fixture's skills: what the conformance runner's `sep-2640-skills-*` scenarios
//! read (a skill with a supporting file in a subfolder, for `resources/directory/read`).

use snodo::BuildError;
use snodo::skills::Skills;

const PDF_SKILL: &str = "---
name: pdf-processing
description: Extract, fill, and assemble PDF documents
metadata:
  version: \"1.0\"
---
# PDF processing

Skill body. Read [the forms guide](references/FORMS.md) before filling a form.
";

const FORMS: &str = "# Forms

Fill each field by its name; flatten the form when done.
";

const REVIEW_SKILL: &str = "---
name: code-review
description: Review a change for correctness, tests and clarity
---
# Code review

Read the diff, run the tests, then comment on what would break.
";

/// The fixture's skills.
pub(crate) fn skills() -> Result<Skills, BuildError> {
    let invalid = |e: snodo::skills::SkillsError| BuildError::InvalidSkills(e.to_string());
    Skills::new()
        .skill(
            "pdf-processing",
            [("SKILL.md", PDF_SKILL), ("references/FORMS.md", FORMS)],
        )
        .and_then(|s| s.skill("acme/code-review", [("SKILL.md", REVIEW_SKILL)]))
        .map_err(invalid)
}
