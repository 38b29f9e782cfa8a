//! Wire tests of the stdio transport: literal lines in over an in-memory duplex, lines
//! out checked and validated against the official JSON Schemas. One test binary.

// Tests panic on purpose when an expectation fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "wire/support.rs"]
#[allow(dead_code, unused_imports)]
mod support;

#[path = "stdio/client.rs"]
#[allow(dead_code, unused_imports)]
mod client;

#[path = "stdio/modern.rs"]
mod modern;

#[path = "stdio/legacy.rs"]
mod legacy;

#[path = "stdio/bad_input.rs"]
mod bad_input;

#[path = "stdio/props.rs"]
mod props;

#[path = "stdio/tasks.rs"]
mod tasks;
