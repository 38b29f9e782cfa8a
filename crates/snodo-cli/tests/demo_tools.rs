//! The demo's tools as a client sees them (issue 37): every behaviour hint declared, and
//! `index_folder` — which reads every file whole — held to a per-tool policy like
//! `search` (item 10: 200 concurrent calls took the demo to 346–791 MiB).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod demo_support;

use std::net::SocketAddr;

use demo_support::{Demo, folder, write};
use serde_json::{Value, json};
use snodo_testkit::R2026_07_28;

#[test]
fn both_tools_declare_every_hint() {
    let root = folder("demo-tools-hints");
    write(&root, "a.txt", "a\n");
    let mut demo = Demo::stdio(&root);
    let list = demo.rpc(&R2026_07_28.request("tools/list").id(1).params(json!({})));
    let tools = list["result"]["tools"].as_array().unwrap();
    for name in ["search", "index_folder"] {
        let tool = tools
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("no {name}: {list}"));
        assert_eq!(
            tool["annotations"],
            json!({"readOnlyHint": true, "destructiveHint": false,
                   "idempotentHint": true, "openWorldHint": false}),
            "{name}"
        );
    }
}

fn index_call(addr: SocketAddr) -> Value {
    let request = R2026_07_28
        .request("tools/call")
        .id(1)
        .params(json!({"name": "index_folder", "arguments": {}}));
    let raw = request.http(&addr.to_string());
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    std::io::Write::write_all(&mut stream, raw.as_bytes()).unwrap();
    let mut buf = Vec::new();
    std::io::Read::read_to_end(&mut stream, &mut buf).unwrap();
    snodo_testkit::http::parse(&buf).message()
}

#[test]
fn index_folder_is_held_to_its_own_limits() {
    let root = folder("demo-tools-index");
    let text = "some words on a line\n".repeat(50_000);
    for i in 0..16 {
        write(&root, &format!("f{i}.txt"), &text);
    }
    let demo = Demo::http(&root);
    let addr = demo.addr();
    let answers: Vec<Value> = std::thread::scope(|s| {
        let calls: Vec<_> = (0..20).map(|_| s.spawn(move || index_call(addr))).collect();
        calls.into_iter().map(|c| c.join().unwrap()).collect()
    });
    let mut done = 0;
    let mut reasons = Vec::new();
    for a in &answers {
        let result = &a["result"];
        if result["isError"] == true {
            reasons.push(result["_meta"]["io.snodo/limit"]["reason"].clone());
        } else {
            assert_eq!(result["structuredContent"]["files"], 16, "{a}");
            done += 1;
        }
    }
    assert!((1..=6).contains(&done), "{done} calls ran: {answers:?}");
    assert_eq!(done + reasons.len(), 20);
    for r in &reasons {
        assert!(r == "rate" || r == "concurrency", "refused by a limit: {r}");
    }
    // One after another, the anonymous caller spends its budget of 6 per minute (a
    // call refused as busy spent none): the next call says when to retry.
    for _ in done..6 {
        let a = index_call(addr);
        assert_eq!(a["result"]["structuredContent"]["files"], 16, "{a}");
    }
    let later = index_call(addr);
    assert_eq!(later["result"]["isError"], true, "{later}");
    let limit = &later["result"]["_meta"]["io.snodo/limit"];
    assert_eq!(limit["reason"], "rate", "{later}");
    assert!(limit["retryAfterMs"].as_u64().unwrap() > 0, "{later}");
}
