//! One small server, written twice: [`builder`] with snodo's builder and closures,
//! [`macros`] with `#[snodo::tool]`. Both publish the same `tools/list` (the test in
//! `tests/same.rs` proves it) and answer the same calls. [`state`] shows tools that share
//! state. [`middleware`] has three layers: an audit log, a result cache and a deny-list.
//!
//! Run either: `cargo run -p snodo-examples --bin builder` or `--bin macros`, then
//! point a client at `http://127.0.0.1:8080/mcp`.

pub mod builder;
pub mod macros;
pub mod middleware;
pub mod state;
