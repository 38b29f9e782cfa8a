//! One test-support layer for the workspace's wire tests (issue 21, item 6).
//!
//! - [`Revision`]: the MCP revisions as a client sees them, with the facts the tests
//!   assert per revision (the status an error travels with, the error definition of its
//!   schema), so one rule is written once and run over a table of revisions;
//! - [`Request`]: a request as a client of a revision sends it: the headers
//!   (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`, media types) and, on 2026-07-28,
//!   the `params._meta` members;
//! - [`http`]: one raw HTTP/1.1 reader (status, headers, de-chunked body, SSE events) and
//!   an open SSE stream read event by event;
//! - [`Lines`]: one line driver for newline-delimited JSON-RPC over any byte stream;
//! - [`process`]: the binary under test as a child process, killed and reaped on drop,
//!   its stdout read line by line or for the URL it announces;
//! - [`errors`]: one set of error assertions (JSON-RPC code, message fragment, HTTP
//!   status per revision);
//! - [`schema`]: validation against the official JSON Schemas kept in
//!   `crates/snodo/tests/schema/`.
//!
//! Everything here panics with a readable message when an expectation fails: it is meant
//! for tests only (`publish = false`).

// Test support panics on purpose when an expectation fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

pub mod errors;
pub mod http;
mod lines;
pub mod logs;
pub mod process;
pub mod request;
mod revision;
pub mod schema;

pub use errors::{assert_error, assert_http_error, assert_refused};
pub use http::{Reply, Stream};
pub use lines::Lines;
pub use process::Process;
pub use request::Request;
pub use revision::{
    INITIALIZE_ERA, R2025_03_26, R2025_06_18, R2025_11_25, R2026_07_28, REVISIONS, Revision,
    status_of_code,
};
pub use schema::{assert_notification, assert_response, assert_schema, assert_valid};
