//! `snodo client` as a user runs it: against the `snodo` binary itself over stdio and
//! over HTTP; stdout, stderr and the exit status checked.

#![cfg(feature = "client")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};
use snodo_testkit::Process;
use snodo_testkit::process::ok_json;

const BIN: &str = env!("CARGO_BIN_EXE_snodo");

fn client(args: &[&str]) -> Output {
    Command::new(BIN).arg("client").args(args).output().unwrap()
}

fn fixture_stdio(extra: &str) -> String {
    format!("{BIN} fixture --stdio --page-size 2 {extra}")
}

/// The fixture over HTTP on a free port; killed on drop.
struct HttpFixture {
    _child: Process,
    url: String,
}

impl HttpFixture {
    fn start() -> Self {
        let mut child = Process::spawn(
            Command::new(BIN)
                .args(["fixture", "--addr", "127.0.0.1:0", "--page-size", "2"])
                .stdout(Stdio::piped())
                .stderr(Stdio::null()),
        );
        let url = child.announced_url();
        Self { _child: child, url }
    }
}

fn names(v: &Value, key: &str, field: &str) -> Vec<String> {
    v[key]
        .as_array()
        .unwrap_or_else(|| panic!("no {key} in {v}"))
        .iter()
        .map(|t| t[field].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn list_methods_follow_every_page_over_stdio() {
    let cmd = fixture_stdio("");
    let tools = ok_json(&client(&["--stdio", &cmd, "tools/list"]));
    let tools = names(&tools, "tools", "name");
    assert!(tools.len() > 20, "every page: {tools:?}");
    assert!(tools.contains(&"test_simple_text".to_owned()));
    let res = ok_json(&client(&["--stdio", &cmd, "resources/list"]));
    // Three fixture resources and the three files of the fixture's skills.
    assert_eq!(names(&res, "resources", "uri").len(), 6, "{res}");
    // An explicit cursor asks for that one page.
    let page = ok_json(&client(&["--stdio", &cmd, "tools/list", "{}"]));
    assert!(
        page["tools"].as_array().unwrap().len() > 2,
        "{{}} still follows pages"
    );
}

#[test]
fn calls_reads_and_prompts_over_every_version() {
    let cmd = fixture_stdio("");
    for protocol in ["auto", "2026-07-28", "2025-11-25", "2025-06-18"] {
        let r = ok_json(&client(&[
            "--stdio",
            &cmd,
            "--protocol",
            protocol,
            "tools/call",
            r#"{"name":"echo","arguments":{"text":"hi"}}"#,
        ]));
        assert_eq!(r["content"][0]["text"], json!("hi"), "{protocol}: {r}");
        let r = ok_json(&client(&[
            "--stdio",
            &cmd,
            "--protocol",
            protocol,
            "resources/read",
            r#"{"uri":"test://static-text"}"#,
        ]));
        assert_eq!(
            r["contents"][0]["text"],
            json!("This is the content of the static text resource."),
            "{protocol}"
        );
        let r = ok_json(&client(&[
            "--stdio",
            &cmd,
            "--protocol",
            protocol,
            "prompts/get",
            r#"{"name":"test_prompt_with_arguments","arguments":{"arg1":"a","arg2":"b"}}"#,
        ]));
        assert_eq!(
            r["messages"][0]["content"]["text"],
            json!("Prompt with arguments: arg1='a', arg2='b'"),
            "{protocol}"
        );
    }
}

#[test]
fn the_call_shortcut() {
    let cmd = fixture_stdio("");
    let r = ok_json(&client(&[
        "--stdio",
        &cmd,
        "call",
        "echo",
        "text=hello world",
    ]));
    assert_eq!(r["content"][0]["text"], json!("hello world"));
    let r = ok_json(&client(&["--stdio", &cmd, "call", "test_error_handling"]));
    assert_eq!(
        r["isError"],
        json!(true),
        "a failed tool is a result: exit 0"
    );
}

#[test]
fn a_json_rpc_error_goes_to_stderr_with_exit_1() {
    let cmd = fixture_stdio("");
    let out = client(&["--stdio", &cmd, "tools/call", r#"{"name":"no_such_tool"}"#]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    // The child's own stderr (its banner) comes first: the error is the last line.
    let stderr = String::from_utf8_lossy(&out.stderr);
    let last = stderr.lines().last().unwrap_or_default();
    let err: Value =
        serde_json::from_str(last).unwrap_or_else(|e| panic!("not JSON ({e}): {stderr}"));
    assert_eq!(err["code"], json!(-32602), "{err}");
    let out = client(&["--stdio", &cmd, "no/such_method"]);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn bad_arguments_and_dead_servers_exit_2() {
    for args in [
        &["tools/list"][..],
        &["--url", "http://127.0.0.1:1/mcp", "tools/list"],
        &["--stdio", "/nonexistent/server", "tools/list"],
        &["--stdio", &fixture_stdio(""), "tools/call", "[1]"],
        &["--stdio", &fixture_stdio(""), "tools/call", "{not json"],
        &["--stdio", "'unbalanced", "tools/list"],
        &[
            "--stdio",
            &fixture_stdio(""),
            "--header",
            "no colon",
            "tools/list",
        ],
        &[
            "--stdio",
            &fixture_stdio(""),
            "--header",
            "bad name: v",
            "tools/list",
        ],
        &[
            "--stdio",
            &fixture_stdio(""),
            "--protocol",
            "1999-01-01",
            "tools/list",
        ],
    ] {
        let out = client(args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn over_http() {
    let server = HttpFixture::start();
    let tools = ok_json(&client(&[
        "--url",
        &server.url,
        "--header",
        "X-Trace: test",
        "tools/list",
    ]));
    assert!(names(&tools, "tools", "name").len() > 20);
    for protocol in ["auto", "2025-11-25", "2025-06-18"] {
        let r = ok_json(&client(&[
            "--url",
            &server.url,
            "--protocol",
            protocol,
            "call",
            "test_tool_with_progress",
        ]));
        assert_eq!(
            r["content"][0]["text"],
            json!("Progress computation completed: 5050"),
            "{protocol}"
        );
    }
    let r = ok_json(&client(&["--url", &server.url, "server/discover"]));
    assert!(
        r["supportedVersions"]
            .as_array()
            .is_some_and(|v| !v.is_empty()),
        "{r}"
    );
    let out = client(&[
        "--url",
        &server.url,
        "--protocol",
        "2025-06-18",
        "resources/read",
        r#"{"uri":"test://nope"}"#,
    ]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
