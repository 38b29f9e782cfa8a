//! Programs nobody here wrote that some tests run (server-everything, the Python SDK):
//! found where `interop/compose` installs them, or at a path in an environment variable.

use std::path::PathBuf;

/// The path in `$var`, or `default` (relative to the repository root), if it exists;
/// otherwise `None` (the test then prints that it skipped). Under `CI` a missing program
/// fails the test instead: `.ci/run` installs it (`install` says how).
pub fn installed(var: &str, default: &str, install: &str) -> Option<PathBuf> {
    let path = std::env::var_os(var).map_or_else(
        || {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../..")
                .join(default)
        },
        PathBuf::from,
    );
    if path.exists() {
        return Some(path);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{} not found ({install}, or set {var})",
        path.display()
    );
    eprintln!(
        "skipped: {} not found ({install}, or set {var})",
        path.display()
    );
    None
}

/// server-everything's stdio entry point (`SERVER_EVERYTHING`, or interop/compose's
/// `node_modules`).
#[allow(dead_code)] // not every test binary that includes this module uses it
pub fn server_everything() -> Option<PathBuf> {
    installed(
        "SERVER_EVERYTHING",
        "interop/compose/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
        "cd interop/compose && npm ci",
    )
}
