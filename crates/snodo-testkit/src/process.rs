//! The `snodo` binary as the CLI tests run it: its first stdout line (the banner with
//! the address) and its JSON output.

use std::io::{BufRead, BufReader};
use std::process::{Child, Output};

use serde_json::Value;

/// The first line `child` prints on its (piped) stdout: the banner naming the address.
pub fn banner(child: &mut Child) -> String {
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout is piped"))
        .read_line(&mut line)
        .unwrap();
    line
}

/// The JSON on stdout of a successful run; panics with stderr otherwise.
pub fn ok_json(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "exit {:?}, stderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}
