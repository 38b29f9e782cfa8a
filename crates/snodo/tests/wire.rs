//! Wire-level suites: literal HTTP requests against a real server, status + headers +
//! body checked, bodies validated against the official JSON Schemas. One test binary.

// Tests panic on purpose when an expectation fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "wire/support.rs"]
#[allow(dead_code, unused_imports)]
mod support;

#[path = "wire/modern.rs"]
mod modern;

#[path = "wire/legacy.rs"]
mod legacy;

#[path = "wire/streams.rs"]
mod streams;

#[path = "wire/rounds.rs"]
mod rounds;

#[path = "wire/march.rs"]
mod march;

#[path = "wire/tasks.rs"]
mod tasks;

#[path = "wire/annotations.rs"]
mod annotations;

#[cfg(feature = "skills")]
#[path = "wire/skills.rs"]
mod skills;

#[path = "wire/apps.rs"]
mod apps;

#[path = "wire/rules.rs"]
mod rules;
