//! The 2026-07-28 wire: admission, headers, `_meta`, versions, results, errors.

use serde_json::{Value, json};
use snodo::http::HttpConfig;

use super::support::*;

const V: &str = "2026-07-28";

/// A JSON-RPC body as given (no `_meta` added).
fn body(id: Value, method: &str, params: Value) -> String {
    json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}).to_string()
}

#[tokio::test]
async fn only_post_is_allowed() {
    let s = server(&MODERN).await;
    for method in ["GET", "DELETE", "PUT"] {
        let r = s.raw(&format!("{method} /mcp HTTP/1.1\r\nHost: {{host}}\r\nAccept: text/event-stream\r\nConnection: close\r\n\r\n")).await;
        assert_eq!(r.status, 405, "{method}");
        assert_eq!(r.header("allow"), Some("POST"));
        assert_eq!(r.json()["error"]["code"], -32600);
    }
}

#[tokio::test]
async fn media_types_are_checked() {
    let s = server(&MODERN).await;
    let b = R2026_07_28.request("tools/list").id(1).body();
    let r = s.raw(&format!("POST /mcp HTTP/1.1\r\nHost: {{host}}\r\nContent-Type: text/plain\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: {V}\r\nMcp-Method: tools/list\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{b}", b.len())).await;
    assert_eq!(r.status, 415);
    assert_eq!(r.header("content-type"), Some("application/json"));
    let r = s.raw(&format!("POST /mcp HTTP/1.1\r\nHost: {{host}}\r\nContent-Type: application/json\r\nAccept: application/json\r\nMCP-Protocol-Version: {V}\r\nMcp-Method: tools/list\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{b}", b.len())).await;
    assert_eq!(r.status, 406);
    assert_eq!(r.json()["id"], Value::Null);
}

#[tokio::test]
async fn origin_and_host_allow_list() {
    let s = server(&MODERN).await;
    let b = R2026_07_28.request("server/discover").id(1).body();
    let h = [
        ("MCP-Protocol-Version", V),
        ("Mcp-Method", "server/discover"),
    ];
    let r = s
        .post(&[h[0], h[1], ("Origin", "http://evil.example.com")], &b)
        .await;
    assert_eq!(r.status, 403);
    let r = s
        .post(&[h[0], h[1], ("Origin", "http://localhost:9999")], &b)
        .await;
    assert_eq!(r.status, 200);
    let r = s.raw(&format!("POST /mcp HTTP/1.1\r\nHost: evil.example.com\r\nOrigin: http://evil.example.com\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: {V}\r\nMcp-Method: server/discover\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{b}", b.len())).await;
    assert_eq!(r.status, 403);
    let r = s.raw(&format!("POST /mcp HTTP/1.1\r\nHost: localhost:1234\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: {V}\r\nMcp-Method: server/discover\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{b}", b.len())).await;
    assert_eq!(r.status, 200);
}

#[tokio::test]
async fn body_limit_is_413() {
    let rt = builder(&MODERN).build().unwrap();
    let s = TestServer::start_with(rt, HttpConfig::default().max_body_bytes(1024)).await;
    let big = R2026_07_28
        .request("tools/call")
        .id(1)
        .params(json!({"name":"echo","arguments":{"text":"x".repeat(4096)}}))
        .body();
    let r = s
        .post(
            &[
                ("MCP-Protocol-Version", V),
                ("Mcp-Method", "tools/call"),
                ("Mcp-Name", "echo"),
            ],
            &big,
        )
        .await;
    assert_eq!(r.status, 413);
}

#[tokio::test]
async fn parse_errors_and_batches_are_400() {
    let s = server(&MODERN).await;
    let h = [("MCP-Protocol-Version", V), ("Mcp-Method", "tools/list")];
    let r = s.post(&h, "{not-json").await;
    assert_eq!((r.status, r.error_code()), (400, -32700));
    assert_eq!(r.json()["id"], Value::Null);
    let r = s
        .post(
            &h,
            &format!("[{}]", R2026_07_28.request("tools/list").id(1).body()),
        )
        .await;
    assert_eq!((r.status, r.error_code()), (400, -32600));
    let r = s.post(&h, r#"{"jsonrpc":"2.0","id":3,"result":{}}"#).await;
    assert_eq!((r.status, r.error_code()), (400, -32600));
}

#[tokio::test]
async fn standard_headers_mirror_the_body() {
    let s = server(&MODERN).await;
    let call = R2026_07_28
        .request("tools/call")
        .id(41)
        .params(json!({"name":"echo","arguments":{"text":"hi"}}))
        .body();
    let cases: [&[(&str, &str)]; 5] = [
        &[("Mcp-Method", "tools/call"), ("Mcp-Name", "echo")],
        &[("MCP-Protocol-Version", V), ("Mcp-Name", "echo")],
        &[
            ("MCP-Protocol-Version", V),
            ("Mcp-Method", "tools/list"),
            ("Mcp-Name", "echo"),
        ],
        &[("MCP-Protocol-Version", V), ("Mcp-Method", "tools/call")],
        &[
            ("MCP-Protocol-Version", V),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "Echo"),
        ],
    ];
    for headers in cases {
        let r = s.post(headers, &call).await;
        assert_eq!(
            (r.status, r.error_code()),
            (400, -32020),
            "{headers:?}: {}",
            r.text()
        );
        assert_eq!(r.json()["id"], 41);
        assert_valid(V, "tools/call", &r);
    }
    // Optional whitespace is trimmed; base64 sentinel values are decoded.
    let r = s
        .post(
            &[
                ("MCP-Protocol-Version", V),
                ("Mcp-Method", " tools/call "),
                ("Mcp-Name", "  echo\t"),
            ],
            &call,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let r = s
        .post(
            &[
                ("MCP-Protocol-Version", V),
                ("Mcp-Method", "tools/call"),
                ("Mcp-Name", "=?base64?ZWNobw==?="),
            ],
            &call,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let r = s
        .post(
            &[
                ("MCP-Protocol-Version", V),
                ("Mcp-Method", "tools/call"),
                ("Mcp-Name", "=?base64?%%%?="),
            ],
            &call,
        )
        .await;
    assert_eq!((r.status, r.error_code()), (400, -32020));
}

#[tokio::test]
async fn request_meta_is_required() {
    let s = server(&MODERN).await;
    let h = [
        ("MCP-Protocol-Version", V),
        ("Mcp-Method", "server/discover"),
    ];
    for (id, params) in [
        (101, json!({})),
        (
            102,
            json!({"_meta": {"io.modelcontextprotocol/clientCapabilities": {}}}),
        ),
        (
            104,
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion": V}}),
        ),
    ] {
        let r = s
            .post(&h, &body(json!(id), "server/discover", params))
            .await;
        assert_eq!((r.status, r.error_code()), (400, -32602), "{}", r.text());
        assert_eq!(r.json()["id"], id);
        assert_valid(V, "server/discover", &r);
    }
    let r = s
        .post(
            &h,
            r#"{"jsonrpc":"2.0","id":103,"method":"server/discover"}"#,
        )
        .await;
    assert_eq!((r.status, r.error_code()), (400, -32602));
    // clientInfo is optional.
    let r = s
        .post(&h, &R2026_07_28.request("server/discover").id(105).body())
        .await;
    assert_eq!(r.status, 200);
}

#[tokio::test]
async fn request_meta_members_are_validated_and_reach_the_handler() {
    let rt = builder(&MODERN)
        .tool(
            snodo::Tool::new("whoami")
                .description("Reports the request metadata")
                .handler(
                    |_: snodo::NoArguments, ctx: snodo::RequestContext| async move {
                        let info = ctx
                            .client_info()
                            .map(|r| serde_json::from_str::<Value>(r.get()).unwrap());
                        snodo::Json(json!({
                            "clientInfo": info,
                            "clientCapabilities": ctx.client_capabilities().cloned(),
                            "other": ctx.meta().other().clone(),
                        }))
                    },
                ),
        )
        .build()
        .unwrap();
    let s = TestServer::start(rt).await;
    let h = [
        ("MCP-Protocol-Version", V),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "whoami"),
    ];
    let call = |id: i64, extra: Value| {
        R2026_07_28
            .request("tools/call")
            .id(id)
            .params(json!({"name": "whoami"}))
            .meta_members(&extra)
            .body()
    };
    // Escaped strings and extra members survive; unknown _meta keys are kept for the app.
    let info = json!({"name": "c\"li\u{e9}nt", "version": "1.0", "title": "T"});
    let r = s
        .post(
            &h,
            &call(
                1,
                json!({
                    "io.modelcontextprotocol/clientInfo": info,
                    "io.modelcontextprotocol/clientCapabilities": {"sampling": {}},
                    "com.example/trace": "t-1"
                }),
            ),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_valid(V, "tools/call", &r);
    assert_eq!(
        r.json()["result"]["structuredContent"],
        json!({"clientInfo": info, "clientCapabilities": {"sampling": {}}, "other": {"com.example/trace": "t-1"}})
    );
    // Each known member is checked; the refusal names it and echoes the id.
    for (id, bad, names) in [
        (
            2,
            json!({"io.modelcontextprotocol/clientInfo": {"name": "c", "version": 1}}),
            "clientInfo",
        ),
        (
            3,
            json!({"io.modelcontextprotocol/clientInfo": ["c", "1"]}),
            "clientInfo",
        ),
        (
            4,
            json!({"io.modelcontextprotocol/clientCapabilities": []}),
            "clientCapabilities",
        ),
        (
            5,
            json!({"io.modelcontextprotocol/protocolVersion": 2026}),
            "protocolVersion",
        ),
        (
            6,
            json!({"io.modelcontextprotocol/logLevel": "loud"}),
            "logLevel",
        ),
        (7, json!({"progressToken": 1.5}), "progressToken"),
    ] {
        let r = s.post(&h, &call(id, bad)).await;
        assert_eq!((r.status, r.error_code()), (400, -32602), "{}", r.text());
        assert_eq!(r.json()["id"], id);
        let message = r.json()["error"]["message"].as_str().unwrap().to_owned();
        assert!(message.contains(names), "{message}");
        assert_valid(V, "tools/call", &r);
    }
}

#[tokio::test]
async fn versions_are_negotiated_per_request() {
    let s = server(&ALL).await;
    let v999 = json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "v999.0.0", "io.modelcontextprotocol/clientCapabilities": {}}});
    let r = s
        .post(
            &[
                ("MCP-Protocol-Version", "v999.0.0"),
                ("Mcp-Method", "server/discover"),
            ],
            &body(json!(301), "server/discover", v999.clone()),
        )
        .await;
    assert_eq!((r.status, r.error_code()), (400, -32022));
    let e = r.json();
    assert_eq!(e["id"], 301);
    assert_eq!(e["error"]["data"]["requested"], "v999.0.0");
    assert_eq!(
        e["error"]["data"]["supported"],
        json!(["2026-07-28", "2025-11-25", "2025-06-18"])
    );
    assert_valid(V, "server/discover", &r);
    let r = s
        .post(
            &[
                ("MCP-Protocol-Version", V),
                ("Mcp-Method", "server/discover"),
            ],
            &body(json!(302), "server/discover", v999),
        )
        .await;
    assert_eq!((r.status, r.error_code()), (400, -32020));
    assert_eq!(r.json()["id"], 302);
}

#[tokio::test]
async fn removed_and_unknown_methods_are_404() {
    let s = server(&ALL).await;
    for m in [
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
        "unknown/method",
    ] {
        let r = s
            .post(
                &[("MCP-Protocol-Version", V), ("Mcp-Method", m)],
                &R2026_07_28.request(m).id(500).body(),
            )
            .await;
        assert_eq!(
            (r.status, r.error_code()),
            (404, -32601),
            "{m}: {}",
            r.text()
        );
        assert_eq!(r.json()["id"], 500);
        assert_valid(V, m, &r);
    }
}

#[tokio::test]
async fn discover_describes_the_server() {
    let s = server(&ALL).await;
    let r = s
        .modern(json!("d"), "server/discover", json!({}), json!({}))
        .await;
    assert_eq!(r.status, 200);
    assert_valid(V, "server/discover", &r);
    let res = r.result();
    assert_eq!(res["resultType"], "complete");
    assert_eq!(
        res["supportedVersions"],
        json!(["2026-07-28", "2025-11-25", "2025-06-18"])
    );
    assert_eq!(
        res["capabilities"],
        json!({"tools":{},"prompts":{},"resources":{},"completions":{},"logging":{}})
    );
    assert_eq!(res["instructions"], "Use the fixture.");
    assert_eq!(res["ttlMs"], 0);
    assert_eq!(res["cacheScope"], "private");
    let info = &res["_meta"]["io.modelcontextprotocol/serverInfo"];
    assert_eq!(info["name"], "wire-fixture");
    assert_eq!(info["websiteUrl"], "https://example.com/wire");
    assert_eq!(info["icons"][0]["sizes"], json!(["48x48"]));
}

#[tokio::test]
async fn every_result_has_result_type_and_cacheables_have_hints() {
    let s = server(&MODERN).await;
    let cases = [
        ("tools/list", json!({}), true),
        ("prompts/list", json!({}), true),
        ("resources/list", json!({}), true),
        ("resources/templates/list", json!({}), true),
        (
            "resources/read",
            json!({"uri":"test://static/readme"}),
            true,
        ),
        (
            "tools/call",
            json!({"name":"echo","arguments":{"text":"x"}}),
            false,
        ),
        (
            "prompts/get",
            json!({"name":"greet","arguments":{"name":"Ann"}}),
            false,
        ),
        (
            "completion/complete",
            json!({"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"name","value":"al"}}),
            false,
        ),
    ];
    for (method, params, cacheable) in cases {
        let r = s.modern(json!(1), method, params, json!({})).await;
        assert_eq!(r.status, 200, "{method}: {}", r.text());
        assert_valid(V, method, &r);
        let res = r.result();
        assert_eq!(res["resultType"], "complete", "{method}");
        assert_eq!(res.get("ttlMs").is_some(), cacheable, "{method}");
        assert_eq!(res.get("cacheScope").is_some(), cacheable, "{method}");
        assert_eq!(
            res["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "wire-fixture",
            "{method}"
        );
    }
}

#[tokio::test]
async fn tools_list_and_calls() {
    let s = server(&MODERN).await;
    let r = s.modern(json!(1), "tools/list", json!({}), json!({})).await;
    let names: Vec<String> = r.result()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(names, ALL_TOOLS);
    let again = s.modern(json!(2), "tools/list", json!({}), json!({})).await;
    assert_eq!(
        again.result()["tools"],
        r.result()["tools"],
        "deterministic order"
    );

    let r = s
        .modern(
            json!(3),
            "tools/call",
            json!({"name":"structured","arguments":{"value":[1,2]}}),
            json!({}),
        )
        .await;
    let res = r.result();
    assert_eq!(res["structuredContent"], json!([1, 2]));
    assert_eq!(res["content"][0]["text"], "[1,2]");
    assert_valid(V, "tools/call", &r);

    let r = s
        .modern(
            json!(4),
            "tools/call",
            json!({"name":"array_output"}),
            json!({}),
        )
        .await;
    assert_eq!(r.result()["structuredContent"], json!(["a", "b"]));

    let r = s
        .modern(json!(5), "tools/call", json!({"name":"failing"}), json!({}))
        .await;
    assert_eq!(r.result()["isError"], true);
    assert_eq!(
        r.result()["content"][0]["text"],
        "Actionable domain failure"
    );

    let r = s
        .modern(json!(6), "tools/call", json!({"name":"nope"}), json!({}))
        .await;
    assert_eq!(r.error_code(), -32602);
    assert_eq!(r.message()["error"]["message"], "Unknown tool: nope");
    assert_valid(V, "tools/call", &r);

    // Arguments that fail the input schema come back readable, as an execution error.
    let r = s
        .modern(
            json!(7),
            "tools/call",
            json!({"name":"echo","arguments":{}}),
            json!({}),
        )
        .await;
    assert_eq!(r.result()["isError"], true);
    assert!(
        r.result()["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("text")
    );

    let r = s
        .modern(
            json!(8),
            "tools/call",
            json!({"name":"echo","arguments":[]}),
            json!({}),
        )
        .await;
    assert_eq!(r.error_code(), -32602);
}

#[tokio::test]
async fn resources_read_and_not_found() {
    let s = server(&MODERN).await;
    let r = s
        .modern(
            json!(1),
            "resources/read",
            json!({"uri":"test://packages/ecto"}),
            json!({}),
        )
        .await;
    let res = r.result();
    assert_eq!(res["contents"][0]["uri"], "test://packages/ecto");
    assert_eq!(res["contents"][0]["text"], r#"{"name":"ecto"}"#);
    let r = s
        .modern(
            json!(2),
            "resources/read",
            json!({"uri":"test://static/blob"}),
            json!({}),
        )
        .await;
    assert_eq!(r.result()["contents"][0]["blob"], "AAEC");
    assert_valid(V, "resources/read", &r);
    for uri in ["test://nonexistent", "test://packages/missing"] {
        let r = s
            .modern(json!(3), "resources/read", json!({"uri": uri}), json!({}))
            .await;
        assert_eq!(r.error_code(), -32602);
        assert_eq!(r.message()["error"]["data"]["uri"], uri);
        assert_valid(V, "resources/read", &r);
    }
}

#[tokio::test]
async fn pagination_uses_stateless_scoped_cursors() {
    let s = TestServer::start(builder(&ALL).page_size(3).build().unwrap()).await;
    let p1 = s
        .modern(json!(1), "tools/list", json!({}), json!({}))
        .await
        .result();
    assert_eq!(p1["tools"].as_array().unwrap().len(), 3);
    let cursor = p1["nextCursor"].as_str().unwrap().to_owned();
    let p2 = s
        .modern(json!(2), "tools/list", json!({"cursor": cursor}), json!({}))
        .await
        .result();
    assert_eq!(p2["tools"][0]["name"], "array_output");
    assert_eq!(p2["resultType"], "complete");
    assert!(p2.get("ttlMs").is_some());
    let p3 = s
        .modern(
            json!(3),
            "tools/list",
            json!({"cursor": p2["nextCursor"]}),
            json!({}),
        )
        .await
        .result();
    assert_eq!(p3["tools"].as_array().unwrap().len(), 3);
    assert!(p3.get("nextCursor").is_some());
    for forged in [json!("c1.AAAA"), json!("garbage"), json!(7)] {
        let r = s
            .modern(json!(4), "tools/list", json!({"cursor": forged}), json!({}))
            .await;
        assert_eq!(r.error_code(), -32602, "{forged}");
    }
    // A cursor belongs to its method and dialect.
    let r = s
        .modern(
            json!(5),
            "prompts/list",
            json!({"cursor": cursor}),
            json!({}),
        )
        .await;
    assert_eq!(r.error_code(), -32602);
    let r = s
        .legacy(
            "2025-11-25",
            json!(6),
            "tools/list",
            Some(json!({"cursor": cursor})),
        )
        .await;
    assert_eq!((r.status, r.error_code()), (200, -32602));
}

#[tokio::test]
async fn prompts_and_completion() {
    let s = server(&MODERN).await;
    let r = s
        .modern(
            json!(1),
            "prompts/get",
            json!({"name":"greet","arguments":{"name":"Ann"}}),
            json!({}),
        )
        .await;
    assert_eq!(r.result()["messages"][0]["content"]["text"], "Hello, Ann!");
    let r = s
        .modern(json!(2), "prompts/get", json!({"name":"greet"}), json!({}))
        .await;
    assert_eq!(r.error_code(), -32602);
    assert_eq!(r.message()["error"]["data"]["missing"], json!(["name"]));
    let r = s.modern(json!(3), "completion/complete", json!({"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"name","value":"al"}}), json!({})).await;
    assert_eq!(
        r.result()["completion"],
        json!({"values":["alice","albert"],"total":2,"hasMore":false})
    );
}

#[tokio::test]
async fn health_endpoint_skips_mcp_admission() {
    let s = server(&MODERN).await;
    let r = s
        .raw("GET /healthz HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n")
        .await;
    assert_eq!(r.status, 200);
    let r = s
        .raw("GET /other HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n")
        .await;
    assert_eq!(r.status, 404);
}

#[tokio::test]
async fn param_headers_mirror_annotated_arguments() {
    let s = server(&MODERN).await;
    let call = |args: Value| {
        R2026_07_28
            .request("tools/call")
            .id(9)
            .params(json!({"name":"regional","arguments":args}))
            .body()
    };
    let base = [
        ("MCP-Protocol-Version", V),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "regional"),
    ];
    let with = |extra: &[(&'static str, &'static str)]| -> Vec<(&'static str, &'static str)> {
        base.iter().copied().chain(extra.iter().copied()).collect()
    };
    let ok = s
        .post(
            &with(&[("Mcp-Param-Region", "eu-west"), ("Mcp-Param-Count", "42.0")]),
            &call(json!({"region":"eu-west","count":42})),
        )
        .await;
    assert_eq!(ok.status, 200, "{}", ok.text());
    let ok = s
        .post(
            &with(&[("mcp-param-region", "=?base64?ZXUtd2VzdA==?=")]),
            &call(json!({"region":"eu-west"})),
        )
        .await;
    assert_eq!(ok.status, 200, "{}", ok.text());
    let ok = s.post(&with(&[]), &call(json!({"region": null}))).await;
    assert_eq!(ok.status, 200, "absent or null values need no header");
    for (headers, args) in [
        (with(&[]), json!({"region":"eu-west"})),
        (
            with(&[("Mcp-Param-Region", "us-east")]),
            json!({"region":"eu-west"}),
        ),
        (
            with(&[("Mcp-Param-Region", "=?base64?***?=")]),
            json!({"region":"eu-west"}),
        ),
        (with(&[("Mcp-Param-Count", "41")]), json!({"count":42})),
    ] {
        let r = s.post(&headers, &call(args)).await;
        assert_eq!((r.status, r.error_code()), (400, -32020), "{headers:?}");
        assert_eq!(r.json()["id"], 9);
    }
}
