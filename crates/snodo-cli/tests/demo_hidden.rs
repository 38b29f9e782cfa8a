//! The demo hides dot files, `target/` and `node_modules/` (issue 37, item 9): left out
//! of listings, search and completion, and refused on read — by `resources/read` and by
//! the `review_file` prompt — exactly as a missing file, so that a guess learns nothing.
//! Over HTTP and stdio, against the binary.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod demo_support;

use std::path::Path;

use demo_support::{Demo, folder, write};
use serde_json::{Value, json};
use snodo_testkit::R2026_07_28;

const HIDDEN: [&str; 6] = [
    ".env",
    ".git/config",
    "target/debug/out.txt",
    "node_modules/pkg/index.js",
    "src/.secret",
    "env-link",
];

fn tree(name: &str) -> std::path::PathBuf {
    let dir = folder(name);
    write(&dir, "notes.md", "# notes\n");
    write(&dir, "src/main.rs", "fn main() {}\n");
    for rel in &HIDDEN[..5] {
        write(&dir, rel, "SECRET=hunter2\n");
    }
    // A visible name that links to a hidden file is the hidden file.
    std::os::unix::fs::symlink(dir.join(".env"), dir.join("env-link")).unwrap();
    dir
}

fn read(demo: &mut Demo, root: &Path, rel: &str) -> Value {
    let uri = format!("file://{}/{rel}", root.display());
    demo.rpc(
        &R2026_07_28
            .request("resources/read")
            .id(1)
            .params(json!({"uri": uri})),
    )
}

fn review(demo: &mut Demo, rel: &str) -> Value {
    demo.rpc(
        &R2026_07_28
            .request("prompts/get")
            .id(2)
            .params(json!({"name": "review_file", "arguments": {"path": rel}})),
    )
}

fn complete(demo: &mut Demo, reference: Value, name: &str, value: &str) -> Vec<String> {
    let r = demo.rpc(
        &R2026_07_28
            .request("completion/complete")
            .id(3)
            .params(json!({"ref": reference, "argument": {"name": name, "value": value}})),
    );
    r["result"]["completion"]["values"]
        .as_array()
        .unwrap_or_else(|| panic!("no completion values: {r}"))
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect()
}

/// The error with the path it names replaced, to compare a hidden file's refusal with
/// a missing file's.
fn error_without(message: &Value, path: &str) -> String {
    let error = &message["error"];
    assert!(error.is_object(), "expected an error: {message}");
    error.to_string().replace(path, "PATH")
}

fn hidden_is_missing(mut demo: Demo, root: &Path) {
    let ok = read(&mut demo, root, "notes.md");
    assert_eq!(ok["result"]["contents"][0]["text"], "# notes\n", "{ok}");

    let missing = read(&mut demo, root, "nope.txt");
    let missing_error = error_without(&missing, "nope.txt");
    let missing_review = error_without(&review(&mut demo, "nope.txt"), "nope.txt");
    for rel in HIDDEN {
        let r = read(&mut demo, root, rel);
        assert_eq!(error_without(&r, rel), missing_error, "read {rel}: {r}");
        let p = review(&mut demo, rel);
        assert_eq!(error_without(&p, rel), missing_review, "review {rel}: {p}");
    }

    let prompt = json!({"type": "ref/prompt", "name": "review_file"});
    let template =
        json!({"type": "ref/resource", "uri": format!("file://{}/{{+path}}", root.display())});
    for value in ["", ".", ".e", ".git/", "target", "node_modules/", "src/"] {
        for values in [
            complete(&mut demo, prompt.clone(), "path", value),
            complete(&mut demo, template.clone(), "path", value),
        ] {
            for v in &values {
                assert!(
                    v == "notes.md" || v == "src/main.rs",
                    "completion of {value:?} offers {v}"
                );
            }
        }
    }

    let list = demo.rpc(
        &R2026_07_28
            .request("resources/list")
            .id(4)
            .params(json!({})),
    );
    let listed = list["result"]["resources"].to_string();
    assert!(listed.contains("notes.md"), "{list}");
    for rel in HIDDEN {
        assert!(!listed.contains(rel), "{rel} listed: {list}");
    }
    let search = demo.rpc(
        &R2026_07_28
            .request("tools/call")
            .id(5)
            .params(json!({"name": "search", "arguments": {"query": "hunter2"}})),
    );
    assert_eq!(
        search["result"]["structuredContent"]["matches"],
        json!([]),
        "{search}"
    );
}

#[test]
fn hidden_files_are_refused_as_missing_over_http() {
    let root = tree("demo-hidden-http");
    hidden_is_missing(Demo::http(&root), &root);
}

#[test]
fn hidden_files_are_refused_as_missing_over_stdio() {
    let root = tree("demo-hidden-stdio");
    hidden_is_missing(Demo::stdio(&root), &root);
}
