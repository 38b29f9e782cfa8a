//! The macros' compile errors point at the user's code: each `ui/*.rs` must fail to
//! compile with exactly the message in its `.stderr` (regenerate with
//! `TRYBUILD=overwrite cargo test -p snodo-macros --test ui -- --ignored`).

// trybuild compiles snodo and tokio again under its own `--cfg` (minutes on a fresh
// machine), so `cargo test --workspace` skips it; `.ci/run` runs it with `--ignored`.
#[test]
#[ignore = "slow on a fresh machine: run by .ci/run (cargo test -p snodo-macros --test ui -- --ignored)"]
fn compile_errors() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
