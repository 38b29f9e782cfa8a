//! `snodo client … call TOOL k=v` types each value by the input schema of the tool it
//! fetched (issue 37): `query=5` stays the string the demo's `search` asks for, a count
//! becomes an integer, and a value that fits no type of the schema is refused before
//! anything is sent (exit 2, a clear message). Against the binary's demo over stdio
//! (each way of connecting) and HTTP.

#![cfg(feature = "client")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod demo_support;

use std::process::{Command, Output};

use demo_support::{BIN, Demo, folder, write};
use snodo_testkit::process::ok_json;

fn client(server: &[&str], args: &[&str]) -> Output {
    Command::new(BIN)
        .arg("client")
        .args(server)
        .args(args)
        .output()
        .unwrap()
}

fn calls_are_typed(server: &[&str]) {
    let r = ok_json(&client(server, &["call", "search", "query=5"]));
    assert_ne!(r["isError"], true, "query=5 is a string: {r}");
    assert_eq!(r["structuredContent"]["matches"][0]["path"], "a.txt", "{r}");
    assert_eq!(
        r["structuredContent"]["matches"][0]["text"], "line 5",
        "{r}"
    );

    let r = ok_json(&client(
        server,
        &["call", "search", "query=needle", "max_results=1"],
    ));
    assert_ne!(r["isError"], true, "{r}");
    assert_eq!(
        r["structuredContent"]["matches"].as_array().unwrap().len(),
        1
    );
    assert_eq!(r["structuredContent"]["truncated"], true, "{r}");

    let out = client(server, &["call", "search", "query=x", "max_results=lots"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    let last = stderr.lines().last().unwrap_or_default();
    assert!(
        last.contains("max_results=lots") && last.contains("expected an integer"),
        "{stderr}"
    );
}

fn root(name: &str) -> std::path::PathBuf {
    let dir = folder(name);
    write(&dir, "a.txt", "line 5\nneedle one\nneedle two\n");
    dir
}

#[test]
fn call_arguments_follow_the_schema_over_stdio() {
    let dir = root("client-call-args-stdio");
    let cmd = format!("{BIN} serve --stdio --root {}", dir.display());
    for protocol in ["auto", "2025-11-25", "2025-06-18"] {
        calls_are_typed(&["--stdio", &cmd, "--protocol", protocol]);
    }
}

#[test]
fn call_arguments_follow_the_schema_over_http() {
    let dir = root("client-call-args-http");
    let demo = Demo::http(&dir);
    let url = format!("http://{}/mcp", demo.addr());
    calls_are_typed(&["--url", &url]);
}
