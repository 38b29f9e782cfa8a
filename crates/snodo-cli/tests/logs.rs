//! The binary's request logs: on stderr (stdout carries only MCP messages), one JSON
//! object per request with `--log-format json`, no argument values.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use snodo_testkit::R2026_07_28;

#[test]
fn stdio_logs_go_to_stderr_as_json() {
    let root = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("logs-root");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("a.txt"), "a needle here\n").unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_snodo"))
        .args(["serve", "--stdio", "--log-format", "json", "--root"])
        .arg(&root)
        .env("RUST_LOG", "snodo=info")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let call = |id: serde_json::Value| {
        R2026_07_28
            .request("tools/call")
            .id(id)
            .params(json!({"name":"search","arguments":{"query":"needle"}}))
            .body()
    };
    let (request, by_name) = (call(json!(1)), call(json!("x y")));
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{request}").unwrap();
    writeln!(stdin, "{by_name}").unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());

    let stdout = String::from_utf8(out.stdout).unwrap();
    let answers: Vec<Value> = stdout
        .lines()
        .map(|l| {
            serde_json::from_str(l).unwrap_or_else(|e| panic!("stdout not JSON-RPC ({e}): {l}"))
        })
        .collect();
    assert_eq!(answers.len(), 2, "{stdout}");
    assert!(answers.iter().any(|a| a["id"] == 1), "{stdout}");

    let stderr = String::from_utf8(out.stderr).unwrap();
    let events: Vec<Value> = stderr
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["target"] == "snodo::request")
        .collect();
    assert_eq!(events.len(), 2, "{stderr}");
    // The id keeps the type the client sent (the two calls may end in either order).
    let mut ids: Vec<String> = events.iter().map(|e| e["id"].to_string()).collect();
    ids.sort();
    assert_eq!(ids, [r#""x y""#, "1"], "{stderr}");
    let e = events.iter().find(|e| e["id"] == 1).unwrap();
    assert_eq!(e["message"], "request");
    assert_eq!(e["level"], "INFO");
    assert_eq!(e["transport"], "stdio");
    assert_eq!(e["method"], "tools/call");
    assert_eq!(e["name"], "search");
    assert_eq!(e["dialect"], "2026-07-28");
    assert_eq!(e["outcome"], "ok");
    assert!(e["duration_us"].is_u64(), "{e}");
    assert!(
        !stderr.contains("needle"),
        "argument values stay out of the logs: {stderr}"
    );
}
