//! The initialize-era wire (2025-11-25, 2025-06-18): opt-in dialects served statelessly
//! beside 2026-07-28. Literal requests; status, headers and body asserted; every body
//! validated against the official schema of the revision it was sent in.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use snodo::protocol::{Dialect, V2025_06_18, V2025_11_25, V2026_07_28};
use snodo::{
    BuildError, Icon, Json, NoArguments, Resource, Runtime, RuntimeBuilder, Tool, ToolResult,
};

use snodo_testkit::logs::Captured;

use super::support::*;

// ---- helpers ---------------------------------------------------------------------

const V25: &str = "2025-11-25";
const V06: &str = "2025-06-18";
const V26: &str = "2026-07-28";
const LEGACY: [&str; 2] = [V25, V06];
/// The 2026 dialect first, then the initialize-era ones in the opposite order.
const REVERSED: [&Dialect; 3] = [&V2026_07_28, &V2025_06_18, &V2025_11_25];

/// What an initialize-era client may see: everything but the array-output tool.
const LEGACY_TOOLS: [&str; 9] = [
    "echo",
    "structured",
    "failing",
    "panics",
    "progress",
    "regional",
    "wait",
    "caller",
    "logs",
];

const CAPABILITIES: &str =
    r#"{"tools":{},"prompts":{},"resources":{},"completions":{},"logging":{}}"#;
const TASKS_REFUSED: &str = "Tasks and multi-round-trip inputs are not supported";
const HIDDEN_WARNING: &str =
    "Tools without object input and output schemas are hidden from initialize-era clients";

fn capabilities() -> Value {
    serde_json::from_str(CAPABILITIES).unwrap()
}

/// A literal `initialize` body proposing `proposed`.
fn initialize_body(id: Value, proposed: &str, client: &str) -> String {
    json!({"jsonrpc":"2.0","id":id,"method":"initialize","params":{
        "protocolVersion": proposed,
        "capabilities": {},
        "clientInfo": {"name": client, "version": "1.0.0"}
    }})
    .to_string()
}

/// `initialize` as a client of these revisions sends it: no version header.
async fn initialize(s: &TestServer, id: Value, proposed: &str) -> Reply {
    s.post(&[], &initialize_body(id, proposed, "wire-client"))
        .await
}

/// A request body with optional params.
fn request_body(id: Value, method: &str, params: Option<Value>) -> String {
    let mut body = json!({"jsonrpc":"2.0","id":id,"method":method});
    if let Some(p) = params {
        body["params"] = p;
    }
    body.to_string()
}

/// Asserts a legacy success in a plain JSON response and returns its result.
fn legacy_ok(r: &Reply, revision: &str, method: &str) -> Value {
    assert_ok(r, Revision::named(revision), method)
}

/// Asserts a JSON-RPC error sent in band: HTTP 200, JSON, the request id, `code`, and
/// a body valid for `revision` (the shared error assertion of an initialize-era
/// revision). Returns the error object.
fn assert_in_band(r: &Reply, revision: &str, method: &str, id: &Value, code: i64) -> Value {
    let revision = Revision::named(revision);
    assert!(
        revision.errors_in_band(),
        "{revision} answers errors in band"
    );
    assert_http_error(r, revision, method, id, code)
}

/// The `name` of every entry of `result[key]`.
fn names(result: &Value, key: &str) -> Vec<String> {
    result[key]
        .as_array()
        .unwrap_or_else(|| panic!("{key} is not an array: {result}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

/// A literal request with every header spelled out (`{host}` is the server address).
fn raw_post(host: &str, content_type: &str, accept: &str, extra: &str, body: &str) -> String {
    format!(
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: {content_type}\r\nAccept: {accept}\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// A tool that reports what its request context knows about the client.
fn whoami() -> Tool {
    Tool::new("whoami")
        .description("Reports what the request context knows")
        .handler(|_: NoArguments, ctx: snodo::RequestContext| async move {
            Json(json!({
                "protocolVersion": ctx.protocol_version(),
                "clientCapabilities": ctx.client_capabilities().cloned(),
                "clientInfo": ctx.client_info().map(|r| serde_json::from_str::<serde_json::Value>(r.get()).unwrap()),
                "principal": ctx.principal().map(|p| p.id().to_owned()),
            }))
        })
}

/// A tool that waits 600 ms unless its execution is cancelled first.
fn slow() -> Tool {
    Tool::new("slow")
        .description("Waits unless cancelled")
        .handler(|_: NoArguments, ctx: snodo::RequestContext| async move {
            tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(600)) => ToolResult::text("finished"),
                () = ctx.cancellation().cancelled() => ToolResult::text("cancelled"),
            }
        })
}

/// Builds `b` under a subscriber that records every event; returns the build outcome and
/// the log text.
fn build_logged(b: RuntimeBuilder) -> (Result<Runtime, BuildError>, String) {
    let buf = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(buf.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::TRACE)
        .finish();
    let built = tracing::subscriber::with_default(subscriber, || b.build());
    let log = buf.text();
    (built, log)
}

// ---- opt-in and preference order ---------------------------------------------------

#[tokio::test]
async fn legacy_dialects_are_off_unless_enabled() {
    // Linking the initialize-era dialects enables nothing.
    assert_eq!(Dialect::by_version(V25), Some(&V2025_11_25));
    assert_eq!(Dialect::by_version(V06), Some(&V2025_06_18));
    let default = Runtime::builder("plain", "1.0.0")
        .tool(
            Tool::new("echo")
                .description("Echoes text")
                .handler(|a: EchoArgs, _ctx| async move { ToolResult::text(a.text) }),
        )
        .build()
        .unwrap();
    assert_eq!(default.supported_versions(), [V26]);
    let explicit = builder(&MODERN).build().unwrap();
    assert_eq!(explicit.supported_versions(), [V26]);

    for rt in [default, explicit] {
        let s = TestServer::start(rt).await;
        // initialize from a 2025 client: `-32022` naming what this server speaks
        // (2026-07-28 basic/versioning), with a message an operator can act on.
        let r = initialize(&s, json!(1), V25).await;
        let e = assert_refused(&r, 400, -32022, &json!(1));
        assert_eq!(e["data"], json!({"supported": [V26], "requested": V25}));
        let message = e["message"].as_str().unwrap();
        assert!(
            message.contains("speaks only 2026-07-28") && message.contains("proposed 2025-11-25"),
            "{e}"
        );
        assert!(
            !message.contains("header"),
            "not a message about a header: {e}"
        );
        assert_valid(V26, "initialize", &r);
        // A later request naming a 2025 version: not a version this server speaks.
        for v in LEGACY {
            let r = s.legacy(v, json!(2), "tools/list", None).await;
            let e = assert_refused(&r, 400, -32022, &json!(2));
            assert_eq!(e["data"], json!({"supported": [V26], "requested": v}));
            assert_valid(V26, "tools/list", &r);
            let r = s
                .post(
                    &[("MCP-Protocol-Version", v)],
                    r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
                )
                .await;
            assert_eq!(r.status, 400, "{}", r.text());
        }
        let r = s
            .modern(json!(3), "server/discover", json!({}), json!({}))
            .await;
        assert_eq!(r.result()["supportedVersions"], json!([V26]));
    }
}

#[tokio::test]
async fn enabled_dialects_keep_the_configured_preference_order() {
    let s = server(&ALL).await;
    let r = s
        .modern(json!(1), "server/discover", json!({}), json!({}))
        .await;
    assert_eq!(r.result()["supportedVersions"], json!([V26, V25, V06]));
    let r = s.legacy("1900-01-01", json!(2), "tools/list", None).await;
    let e = assert_refused(&r, 400, -32022, &json!(2));
    assert_eq!(e["data"]["supported"], json!([V26, V25, V06]));
    let r = initialize(&s, json!(3), "2024-11-05").await;
    assert_eq!(legacy_ok(&r, V25, "initialize")["protocolVersion"], V25);

    let s = server(&REVERSED).await;
    let r = s
        .modern(json!(4), "server/discover", json!({}), json!({}))
        .await;
    assert_eq!(r.result()["supportedVersions"], json!([V26, V06, V25]));
    let r = initialize(&s, json!(5), "2024-11-05").await;
    assert_eq!(legacy_ok(&r, V06, "initialize")["protocolVersion"], V06);
}

// ---- initialize --------------------------------------------------------------------

#[tokio::test]
async fn initialize_negotiates_the_exact_enabled_version() {
    let s = server(&ALL).await;
    let r = initialize(&s, json!(1), V25).await;
    let res = legacy_ok(&r, V25, "initialize");
    assert_eq!(
        res,
        json!({
            "protocolVersion": V25,
            "capabilities": capabilities(),
            "serverInfo": {
                "name": "wire-fixture",
                "version": "1.0.0",
                "title": "Wire fixture",
                "description": "Runtime used by the wire tests",
                "websiteUrl": "https://example.com/wire",
                "icons": [{"src": "https://example.com/icon.png", "mimeType": "image/png", "sizes": ["48x48"]}]
            },
            "instructions": "Use the fixture."
        })
    );
    assert_eq!(r.json()["id"], 1);

    let r = initialize(&s, json!("init-06"), V06).await;
    let res = legacy_ok(&r, V06, "initialize");
    assert_eq!(
        res,
        json!({
            "protocolVersion": V06,
            "capabilities": capabilities(),
            "serverInfo": {"name": "wire-fixture", "version": "1.0.0", "title": "Wire fixture"},
            "instructions": "Use the fixture."
        })
    );
    assert_eq!(r.json()["id"], "init-06");
}

#[tokio::test]
async fn initialize_falls_back_to_the_first_enabled_initialize_era_dialect() {
    let s = server(&ALL).await;
    for (id, proposed) in [(1, "2024-11-05"), (2, V26), (3, "1900-01-01"), (4, "v999")] {
        let r = initialize(&s, json!(id), proposed).await;
        let res = legacy_ok(&r, V25, "initialize");
        assert_eq!(res["protocolVersion"], V25, "{proposed}");
        assert!(res["serverInfo"].get("icons").is_some(), "{proposed}");
    }
    // Order matters: 2025-06-18 configured before 2025-11-25.
    let s = server(&REVERSED).await;
    for (id, proposed) in [(5, "2024-11-05"), (6, V26)] {
        let r = initialize(&s, json!(id), proposed).await;
        let res = legacy_ok(&r, V06, "initialize");
        assert_eq!(res["protocolVersion"], V06, "{proposed}");
        assert!(res["serverInfo"].get("icons").is_none(), "{proposed}");
        assert!(res["serverInfo"].get("websiteUrl").is_none(), "{proposed}");
    }
    let r = initialize(&s, json!(7), V25).await;
    assert_eq!(legacy_ok(&r, V25, "initialize")["protocolVersion"], V25);
}

#[tokio::test]
async fn initialize_needs_no_version_header_but_accepts_a_matching_one() {
    let s = server(&ALL).await;
    for v in LEGACY {
        let r = s
            .post(
                &[("MCP-Protocol-Version", v)],
                &initialize_body(json!(1), v, "c"),
            )
            .await;
        assert_eq!(legacy_ok(&r, v, "initialize")["protocolVersion"], v);
    }
}

#[tokio::test]
async fn malformed_initialize_fails_in_band() {
    let s = server(&ALL).await;
    let cases = [
        Some(json!({})),
        Some(json!({"protocolVersion": V25})),
        Some(json!({"protocolVersion": V25, "capabilities": {}})),
        Some(json!({"protocolVersion": V25, "clientInfo": {"name": "c", "version": "1"}})),
        Some(
            json!({"protocolVersion": 1, "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}),
        ),
        Some(
            json!({"protocolVersion": "", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}),
        ),
        Some(json!({"protocolVersion": V25, "capabilities": {}, "clientInfo": {"name": "c"}})),
        Some(
            json!({"protocolVersion": V25, "capabilities": [], "clientInfo": {"name": "c", "version": "1"}}),
        ),
        None,
    ];
    for (i, params) in cases.into_iter().enumerate() {
        let id = json!(100 + i);
        let r = s
            .post(&[], &request_body(id.clone(), "initialize", params.clone()))
            .await;
        let e = assert_in_band(&r, V25, "initialize", &id, -32602);
        assert!(!e["message"].as_str().unwrap().is_empty(), "{params:?}");
        assert!(r.header("mcp-session-id").is_none());
    }
}

#[tokio::test]
async fn initialize_with_a_conflicting_version_header_fails_in_band() {
    let s = server(&ALL).await;
    for (proposed, header) in [(V25, V06), (V06, V25)] {
        let r = s
            .post(
                &[("MCP-Protocol-Version", header)],
                &initialize_body(json!(11), proposed, "c"),
            )
            .await;
        assert_in_band(&r, proposed, "initialize", &json!(11), -32602);
    }
}

#[tokio::test]
async fn initialize_with_2026_metadata_takes_the_2026_path() {
    for protocols in [&ALL[..], &MODERN[..]] {
        let s = server(protocols).await;
        let r = s
            .modern(
                json!(12),
                "initialize",
                json!({"protocolVersion": V26, "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}),
                json!({}),
            )
            .await;
        let e = assert_refused(&r, 404, -32601, &json!(12));
        assert_eq!(e["message"], "Method not found: initialize");
        assert_valid(V26, "initialize", &r);
    }
}

// ---- the version header on later requests ------------------------------------------

#[tokio::test]
async fn later_requests_without_the_version_header_are_400() {
    let s = server(&ALL).await;
    for (id, method) in [(1, "tools/list"), (2, "ping"), (3, "tools/call")] {
        let params =
            (method == "tools/call").then(|| json!({"name":"echo","arguments":{"text":"x"}}));
        let r = s.post(&[], &request_body(json!(id), method, params)).await;
        let e = assert_refused(&r, 400, -32020, &json!(id));
        assert!(
            e["message"]
                .as_str()
                .unwrap()
                .contains("MCP-Protocol-Version"),
            "{e}"
        );
        assert_valid(V26, method, &r);
    }
}

#[tokio::test]
async fn an_unknown_version_header_is_400_unsupported() {
    let s = server(&ALL).await;
    let r = s.legacy("1900-01-01", json!(21), "tools/list", None).await;
    let e = assert_refused(&r, 400, -32022, &json!(21));
    assert_eq!(
        e["data"],
        json!({"supported": [V26, V25, V06], "requested": "1900-01-01"})
    );
    assert_valid(V26, "tools/list", &r);
}

#[tokio::test]
async fn a_legacy_header_with_2026_meta_is_a_header_mismatch() {
    let s = server(&ALL).await;
    for v in LEGACY {
        let r = s
            .legacy(
                v,
                json!(22),
                "tools/list",
                Some(json!({"_meta": {"io.modelcontextprotocol/protocolVersion": V26}})),
            )
            .await;
        assert_refused(&r, 400, -32020, &json!(22));
        assert_valid(V26, "tools/list", &r);
    }
}

#[tokio::test]
async fn a_repeated_version_header_is_400() {
    let s = server(&ALL).await;
    let r = s
        .post(
            &[("MCP-Protocol-Version", V25), ("MCP-Protocol-Version", V25)],
            &request_body(json!(23), "tools/list", None),
        )
        .await;
    let e = assert_refused(&r, 400, -32020, &json!(23));
    assert!(e["message"].as_str().unwrap().contains("repeated"), "{e}");
}

// ---- lifecycle -----------------------------------------------------------------------

#[tokio::test]
async fn initialized_notification_is_an_empty_202() {
    let s = server(&ALL).await;
    for v in LEGACY {
        let r = s
            .post(
                &[("MCP-Protocol-Version", v)],
                r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            )
            .await;
        assert_eq!(r.status, 202, "{v}: {}", r.text());
        assert!(r.body.is_empty(), "{v}: {}", r.text());
        assert!(r.header("mcp-session-id").is_none());
    }
}

#[tokio::test]
async fn ping_answers_an_empty_result() {
    let s = server(&ALL).await;
    for (v, id) in [(V25, json!(3)), (V06, json!("ping-06"))] {
        let r = s.legacy(v, id.clone(), "ping", None).await;
        legacy_ok(&r, v, "ping");
        assert_eq!(r.json(), json!({"jsonrpc":"2.0","id":id,"result":{}}));
        let r = s.legacy(v, json!(4), "ping", Some(json!({}))).await;
        assert_eq!(r.json(), json!({"jsonrpc":"2.0","id":4,"result":{}}));
    }
}

#[tokio::test]
async fn logging_set_level_is_acknowledged_and_validated() {
    let s = server(&ALL).await;
    for v in LEGACY {
        let r = s
            .legacy(
                v,
                json!(5),
                "logging/setLevel",
                Some(json!({"level":"info"})),
            )
            .await;
        legacy_ok(&r, v, "logging/setLevel");
        assert_eq!(r.json(), json!({"jsonrpc":"2.0","id":5,"result":{}}));
        for params in [json!({"level":"loud"}), json!({}), json!({"level": 3})] {
            let r = s
                .legacy(v, json!(6), "logging/setLevel", Some(params))
                .await;
            assert_in_band(&r, v, "logging/setLevel", &json!(6), -32602);
        }
    }
}

#[tokio::test]
async fn get_and_delete_are_405() {
    let s = server(&ALL).await;
    for v in LEGACY {
        for method in ["GET", "DELETE"] {
            let r = s
                .raw(&format!(
                    "{method} /mcp HTTP/1.1\r\nHost: {{host}}\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: {v}\r\nMcp-Session-Id: legacy\r\nConnection: close\r\n\r\n"
                ))
                .await;
            assert_eq!(r.status, 405, "{method} {v}");
            assert_eq!(r.header("allow"), Some("POST"), "{method} {v}");
            assert!(r.json().get("error").is_some(), "{method} {v}");
        }
    }
}

#[tokio::test]
async fn requests_before_initialize_are_served() {
    for v in LEGACY {
        let s = server(&ALL).await;
        let r = s
            .legacy(
                v,
                json!(1),
                "tools/call",
                Some(json!({"name":"echo","arguments":{"text":"first"}})),
            )
            .await;
        assert_eq!(
            legacy_ok(&r, v, "tools/call"),
            json!({"content":[{"type":"text","text":"first"}],"isError":false})
        );
        let r = s.legacy(v, json!(2), "tools/list", None).await;
        assert_eq!(
            names(&legacy_ok(&r, v, "tools/list"), "tools"),
            LEGACY_TOOLS
        );
    }
}

// ---- execution errors travel in band -------------------------------------------------

#[tokio::test]
async fn execution_errors_travel_with_http_200() {
    let s = server(&ALL).await;
    for v in LEGACY {
        let r = s
            .legacy(
                v,
                json!(4),
                "tools/call",
                Some(json!({"name":"x","arguments":{}})),
            )
            .await;
        let e = assert_in_band(&r, v, "tools/call", &json!(4), -32602);
        assert_eq!(e["message"], "Unknown tool: x");

        for method in [
            "unknown/method",
            "server/discover",
            "subscriptions/listen",
            "resources/subscribe",
            "resources/unsubscribe",
            "tasks/get",
        ] {
            let params = (method == "resources/subscribe" || method == "resources/unsubscribe")
                .then(|| json!({"uri":"test://static/readme"}))
                .or_else(|| Some(json!({})));
            let r = s.legacy(v, json!(5), method, params).await;
            let e = assert_in_band(&r, v, method, &json!(5), -32601);
            assert_eq!(e["message"], format!("Method not found: {method}"));
        }

        for (method, params) in [
            ("tools/call", json!({"name":"echo","arguments":[]})),
            ("tools/call", json!({"arguments":{}})),
            ("prompts/get", json!({"name":"nope"})),
            ("resources/read", json!({"uri":"relative/x"})),
            (
                "completion/complete",
                json!({"ref":{"type":"ref/prompt","name":"nope"},"argument":{"name":"n","value":""}}),
            ),
        ] {
            let r = s.legacy(v, json!(6), method, Some(params.clone())).await;
            assert_in_band(&r, v, method, &json!(6), -32602);
        }
    }
}

#[tokio::test]
async fn bad_and_foreign_cursors_fail_in_band() {
    let s = TestServer::start(builder(&ALL).page_size(2).build().unwrap()).await;
    let mut cursors = Vec::new();
    for v in LEGACY {
        for forged in [json!("garbage"), json!("c1.AAAA"), json!(7), json!({})] {
            let r = s
                .legacy(v, json!(9), "tools/list", Some(json!({"cursor": forged})))
                .await;
            assert_in_band(&r, v, "tools/list", &json!(9), -32602);
        }
        let r = s.legacy(v, json!(10), "tools/list", None).await;
        let c = legacy_ok(&r, v, "tools/list")["nextCursor"]
            .as_str()
            .unwrap()
            .to_owned();
        // The cursor works where it was minted ...
        let r = s
            .legacy(v, json!(11), "tools/list", Some(json!({"cursor": c})))
            .await;
        assert_eq!(names(&legacy_ok(&r, v, "tools/list"), "tools").len(), 2);
        // ... but not on another list.
        let r = s
            .legacy(v, json!(12), "prompts/list", Some(json!({"cursor": c})))
            .await;
        assert_in_band(&r, v, "prompts/list", &json!(12), -32602);
        cursors.push((v, c));
    }
    // A cursor minted for one legacy version is refused by the other, and by 2026.
    for (minted, c) in &cursors {
        let other = if *minted == V25 { V06 } else { V25 };
        let r = s
            .legacy(other, json!(13), "tools/list", Some(json!({"cursor": c})))
            .await;
        let e = assert_in_band(&r, other, "tools/list", &json!(13), -32602);
        assert!(e["message"].as_str().unwrap().contains("cursor"), "{e}");
        let r = s
            .modern(json!(14), "tools/list", json!({"cursor": c}), json!({}))
            .await;
        assert_refused(&r, 400, -32602, &json!(14));
    }
}

#[tokio::test]
async fn missing_resources_are_32002_with_the_uri() {
    let s = server(&ALL).await;
    for v in LEGACY {
        for uri in ["test://nonexistent", "test://packages/missing"] {
            let r = s
                .legacy(v, json!(15), "resources/read", Some(json!({"uri": uri})))
                .await;
            let e = assert_in_band(&r, v, "resources/read", &json!(15), -32002);
            assert_eq!(e["message"], "Resource not found");
            assert_eq!(e["data"]["uri"], uri);
        }
    }
    // 2026 reports the same miss as -32602 with its own status.
    let r = s
        .modern(
            json!(16),
            "resources/read",
            json!({"uri":"test://nonexistent"}),
            json!({}),
        )
        .await;
    assert_refused(&r, 400, -32602, &json!(16));
}

// ---- admission keeps its statuses ----------------------------------------------------

#[tokio::test]
async fn admission_failures_keep_their_4xx_on_legacy() {
    let s = server(&ALL).await;
    let host = s.addr.to_string();
    let json_sse = "application/json, text/event-stream";
    for v in LEGACY {
        let header = format!("MCP-Protocol-Version: {v}\r\n");
        for (body, extra) in [
            (request_body(json!(1), "tools/list", None), header.as_str()),
            (initialize_body(json!(1), v, "c"), ""),
        ] {
            let cases = [
                (raw_post(&host, "text/plain", json_sse, extra, &body), 415),
                (
                    raw_post(&host, "application/json", "application/json", extra, &body),
                    406,
                ),
                (
                    raw_post(
                        &host,
                        "application/json",
                        json_sse,
                        &format!("{extra}Origin: http://evil.example.com\r\n"),
                        &body,
                    ),
                    403,
                ),
                (
                    raw_post(
                        "evil.example.com",
                        "application/json",
                        json_sse,
                        extra,
                        &body,
                    ),
                    403,
                ),
                (
                    raw_post(&host, "application/json", json_sse, extra, "{not-json"),
                    400,
                ),
                (
                    raw_post(
                        &host,
                        "application/json",
                        json_sse,
                        extra,
                        &format!("[{body}]"),
                    ),
                    400,
                ),
            ];
            for (request, status) in cases {
                let r = s.raw(&request).await;
                assert_eq!(r.status, status, "{v}: {request}\n{}", r.text());
                assert!(r.json().get("error").is_some(), "{v}: {}", r.text());
                assert!(r.header("mcp-session-id").is_none());
            }
            // A loopback Origin is fine.
            let r = s
                .raw(&raw_post(
                    &host,
                    "application/json",
                    json_sse,
                    &format!("{extra}Origin: http://localhost:9999\r\n"),
                    &body,
                ))
                .await;
            assert_eq!(r.status, 200, "{v}: {}", r.text());
        }
    }
}

// ---- shaping -------------------------------------------------------------------------

#[tokio::test]
async fn legacy_results_omit_result_type_cache_hints_and_server_meta() {
    let s = server(&ALL).await;
    let cases = [
        ("tools/list", json!({})),
        ("prompts/list", json!({})),
        ("resources/list", json!({})),
        ("resources/templates/list", json!({})),
        ("resources/read", json!({"uri":"test://static/readme"})),
        (
            "tools/call",
            json!({"name":"echo","arguments":{"text":"x"}}),
        ),
        (
            "prompts/get",
            json!({"name":"greet","arguments":{"name":"Ann"}}),
        ),
        (
            "completion/complete",
            json!({"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"name","value":"al"}}),
        ),
    ];
    for (method, params) in &cases {
        for v in LEGACY {
            let r = s.legacy(v, json!(1), method, Some(params.clone())).await;
            legacy_ok(&r, v, method);
        }
        // The same request in 2026 has the envelope.
        let r = s.modern(json!(1), method, params.clone(), json!({})).await;
        assert_eq!(r.result()["resultType"], "complete", "{method}");
    }
    for v in LEGACY {
        for (method, params) in [
            (
                "initialize",
                Some(
                    json!({"protocolVersion": v, "capabilities": {}, "clientInfo": {"name":"c","version":"1"}}),
                ),
            ),
            ("ping", None),
            ("logging/setLevel", Some(json!({"level":"error"}))),
        ] {
            let r = s.legacy(v, json!(2), method, params).await;
            legacy_ok(&r, v, method);
        }
    }
}

#[tokio::test]
async fn icons_are_omitted_on_2025_06_18_only() {
    let rt = builder(&ALL)
        .resource(
            Resource::new("test://static/iconic", "iconic")
                .icon(Icon::new("https://example.com/r.png"))
                .static_text("text/plain", "iconic"),
        )
        .build()
        .unwrap();
    let s = &TestServer::start(rt).await;
    let list = move |v: &'static str, method: &'static str| async move {
        legacy_ok(&s.legacy(v, json!(1), method, None).await, v, method)
    };

    let tools = list(V25, "tools/list").await;
    assert_eq!(
        tools["tools"][0]["icons"],
        json!([{"src":"https://example.com/echo.png"}])
    );
    let prompts = list(V25, "prompts/list").await;
    assert_eq!(
        prompts["prompts"][0]["icons"],
        json!([{"src":"https://example.com/p.png"}])
    );
    let resources = list(V25, "resources/list").await;
    let iconic = resources["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["uri"] == "test://static/iconic")
        .unwrap();
    assert_eq!(
        iconic["icons"],
        json!([{"src":"https://example.com/r.png"}])
    );

    for (method, key) in [
        ("tools/list", "tools"),
        ("prompts/list", "prompts"),
        ("resources/list", "resources"),
        ("resources/templates/list", "resourceTemplates"),
    ] {
        let res = list(V06, method).await;
        let items = res[key].as_array().unwrap();
        assert!(!items.is_empty(), "{method}");
        for item in items {
            assert!(item.get("icons").is_none(), "{method}: {item}");
        }
    }
    // The same items on 2026 keep them.
    let r = s.modern(json!(2), "tools/list", json!({}), json!({})).await;
    assert!(r.result()["tools"][0].get("icons").is_some());
}

#[tokio::test]
async fn unsupported_features_are_not_advertised() {
    let s = server(&ALL).await;
    for v in LEGACY {
        let res = legacy_ok(&initialize(&s, json!(1), v).await, v, "initialize");
        assert_eq!(res["capabilities"], capabilities(), "{v}");
        let tools = legacy_ok(
            &s.legacy(v, json!(2), "tools/list", None).await,
            v,
            "tools/list",
        );
        for t in tools["tools"].as_array().unwrap() {
            assert!(t.get("execution").is_none(), "{v}: {t}");
        }
    }
}

#[tokio::test]
async fn tasks_and_multi_round_trip_inputs_are_refused() {
    let s = server(&ALL).await;
    for v in LEGACY {
        for key in ["task", "inputResponses", "requestState"] {
            let mut params = json!({"name":"echo","arguments":{"text":"x"}});
            params[key] = json!({});
            let r = s.legacy(v, json!(3), "tools/call", Some(params)).await;
            let e = assert_in_band(&r, v, "tools/call", &json!(3), -32602);
            assert_eq!(e["message"], TASKS_REFUSED, "{v} {key}");
        }
    }
}

#[tokio::test]
async fn structured_output_must_be_an_object_on_legacy() {
    let s = server(&ALL).await;
    for v in LEGACY {
        let r = s
            .legacy(
                v,
                json!(4),
                "tools/call",
                Some(json!({"name":"structured","arguments":{"value":{"ok":true}}})),
            )
            .await;
        let res = legacy_ok(&r, v, "tools/call");
        assert_eq!(
            res,
            json!({"content":[{"type":"text","text":"{\"ok\":true}"}],"structuredContent":{"ok":true},"isError":false})
        );
        for value in [json!([1]), json!("text"), json!(3)] {
            let r = s
                .legacy(
                    v,
                    json!(5),
                    "tools/call",
                    Some(json!({"name":"structured","arguments":{"value":value}})),
                )
                .await;
            assert_in_band(&r, v, "tools/call", &json!(5), -32603);
        }
    }
    let r = s
        .modern(
            json!(6),
            "tools/call",
            json!({"name":"structured","arguments":{"value":[1]}}),
            json!({}),
        )
        .await;
    assert_eq!(r.result()["structuredContent"], json!([1]));
}

#[tokio::test]
async fn tools_with_non_object_schemas_are_hidden_and_refused_before_running() {
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&runs);
    let rt = builder(&ALL)
        .tool(
            Tool::new("counted_array")
                .description("Counts its runs; array output")
                .output_schema(json!({"type":"array","items":{"type":"integer"}}))
                .handler(move |_: NoArguments, _ctx| {
                    let counter = Arc::clone(&counter);
                    async move {
                        counter.fetch_add(1, Ordering::SeqCst);
                        Json(json!([1]))
                    }
                }),
        )
        .tool(
            Tool::new("object_output")
                .description("Object output schema")
                .output_schema(json!({"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}))
                .handler(|_: NoArguments, _ctx| async { Json(json!({"ok": true})) }),
        )
        .build()
        .unwrap();
    let s = TestServer::start(rt).await;

    let r = s.modern(json!(1), "tools/list", json!({}), json!({})).await;
    let modern = names(&r.result(), "tools");
    assert!(modern.contains(&"array_output".to_owned()));
    assert!(modern.contains(&"counted_array".to_owned()));

    for v in LEGACY {
        let res = legacy_ok(
            &s.legacy(v, json!(2), "tools/list", None).await,
            v,
            "tools/list",
        );
        let listed = names(&res, "tools");
        assert!(!listed.contains(&"array_output".to_owned()), "{v}");
        assert!(!listed.contains(&"counted_array".to_owned()), "{v}");
        let object = res["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "object_output")
            .unwrap_or_else(|| panic!("{v}: object_output is listed"));
        assert_eq!(object["outputSchema"]["type"], "object");
        for t in res["tools"].as_array().unwrap() {
            assert_eq!(t["inputSchema"]["type"], "object", "{v}: {t}");
            if let Some(o) = t.get("outputSchema") {
                assert_eq!(o["type"], "object", "{v}: {t}");
            }
        }

        for name in ["array_output", "counted_array"] {
            let r = s
                .legacy(v, json!(3), "tools/call", Some(json!({"name": name})))
                .await;
            let e = assert_in_band(&r, v, "tools/call", &json!(3), -32602);
            let msg = e["message"].as_str().unwrap();
            assert!(
                msg.contains(name) && msg.contains(&format!("not available on {v}")),
                "{msg}"
            );
        }
        let r = s
            .legacy(
                v,
                json!(4),
                "tools/call",
                Some(json!({"name":"object_output"})),
            )
            .await;
        assert_eq!(
            legacy_ok(&r, v, "tools/call")["structuredContent"],
            json!({"ok": true})
        );
    }
    assert_eq!(runs.load(Ordering::SeqCst), 0, "refused before it runs");
    // 2026 still calls it.
    let r = s
        .modern(
            json!(5),
            "tools/call",
            json!({"name":"counted_array"}),
            json!({}),
        )
        .await;
    assert_eq!(r.result()["structuredContent"], json!([1]));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn legacy_pagination_walks_the_visible_tools_without_short_pages() {
    let s = TestServer::start(builder(&ALL).page_size(2).build().unwrap()).await;
    for v in LEGACY {
        let mut pages: Vec<Vec<String>> = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let params = cursor.as_ref().map(|c| json!({"cursor": c}));
            let r = s.legacy(v, json!(pages.len()), "tools/list", params).await;
            let res = legacy_ok(&r, v, "tools/list");
            pages.push(names(&res, "tools"));
            match res.get("nextCursor") {
                Some(c) => cursor = Some(c.as_str().unwrap().to_owned()),
                None => break,
            }
            assert!(pages.len() <= ALL_TOOLS.len(), "{v}: pagination terminates");
        }
        for (i, page) in pages.iter().enumerate() {
            assert!(!page.is_empty(), "{v}: page {i} is empty: {pages:?}");
            if i + 1 < pages.len() {
                assert_eq!(page.len(), 2, "{v}: page {i}: {pages:?}");
            }
        }
        let all = pages.concat();
        let unique: HashSet<&str> = all.iter().map(String::as_str).collect();
        assert_eq!(unique.len(), all.len(), "{v}: duplicates in {pages:?}");
        let expected: HashSet<&str> = ALL_TOOLS
            .into_iter()
            .filter(|t| *t != "array_output")
            .collect();
        assert_eq!(unique, expected, "{v}: {pages:?}");
    }
}

// ---- readable execution errors --------------------------------------------------------

#[tokio::test]
async fn tool_failures_stay_readable_results() {
    let s = server(&ALL).await;
    for v in LEGACY {
        let r = s
            .legacy(v, json!(1), "tools/call", Some(json!({"name":"failing"})))
            .await;
        assert_eq!(
            legacy_ok(&r, v, "tools/call"),
            json!({"content":[{"type":"text","text":"Actionable domain failure"}],"isError":true})
        );
        for params in [
            json!({"name":"echo"}),
            json!({"name":"echo","arguments":{}}),
            json!({"name":"echo","arguments":{"text":5}}),
        ] {
            let r = s
                .legacy(v, json!(2), "tools/call", Some(params.clone()))
                .await;
            let res = legacy_ok(&r, v, "tools/call");
            assert_eq!(res["isError"], true, "{v} {params}");
            let text = res["content"][0]["text"].as_str().unwrap();
            assert!(text.contains("text"), "{v} {params}: {text}");
        }
    }
}

// ---- progress and logs over SSE --------------------------------------------------------

#[tokio::test]
async fn handler_logs_stream_at_the_runtime_level_on_legacy() {
    let s = server(&ALL).await;
    for v in LEGACY {
        let r = s
            .legacy(v, json!(1), "tools/call", Some(json!({"name":"logs"})))
            .await;
        assert_eq!(r.status, 200, "{v}: {}", r.text());
        assert_eq!(r.header("content-type"), Some("text/event-stream"));
        assert_valid(v, "tools/call", &r);
        let events = r.events();
        let logged: Vec<(&str, &str)> = events[..events.len() - 1]
            .iter()
            .map(|n| {
                assert_eq!(n["method"], "notifications/message", "{n}");
                assert_eq!(n["params"]["logger"], "wire", "{n}");
                (
                    n["params"]["level"].as_str().unwrap(),
                    n["params"]["data"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            logged,
            [("info", "Info"), ("warning", "Warning"), ("error", "Error")]
        );
        let last = events.last().unwrap();
        assert_eq!(last["id"], 1);
        assert_eq!(last["result"]["content"][0]["text"], "logged");
        assert_no_envelope(&last["result"], v);
    }
}

// ---- no retained identity or state ------------------------------------------------------

#[tokio::test]
async fn nothing_from_initialize_is_retained() {
    let s = &TestServer::start(builder(&ALL).tool(whoami()).build().unwrap()).await;
    let first = s
        .post(
            &[],
            &json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
                "protocolVersion": V25,
                "capabilities": {"sampling": {}, "roots": {"listChanged": true}},
                "clientInfo": {"name": "alpha", "version": "1.0.0"}}})
            .to_string(),
        )
        .await;
    legacy_ok(&first, V25, "initialize");
    let call = move |v: &'static str, extra: Option<(&'static str, &'static str)>| async move {
        let mut headers = vec![("MCP-Protocol-Version", v)];
        headers.extend(extra);
        let r = s
            .post(
                &headers,
                &request_body(json!(2), "tools/call", Some(json!({"name":"whoami"}))),
            )
            .await;
        legacy_ok(&r, v, "tools/call")
    };
    let echo = move |v: &'static str| async move {
        let r = s
            .legacy(
                v,
                json!(3),
                "tools/call",
                Some(json!({"name":"echo","arguments":{"text":"same"}})),
            )
            .await;
        legacy_ok(&r, v, "tools/call")
    };
    let after_alpha = call(V25, None).await;
    assert_eq!(
        after_alpha["structuredContent"],
        json!({"protocolVersion": V25, "clientCapabilities": null, "clientInfo": null, "principal": null})
    );
    let echo_alpha = echo(V25).await;

    let second = s.post(&[], &initialize_body(json!(4), V06, "beta")).await;
    legacy_ok(&second, V06, "initialize");
    assert_eq!(
        call(V25, None).await,
        after_alpha,
        "a second initialize changes nothing"
    );
    assert_eq!(echo(V25).await, echo_alpha);
    assert_eq!(
        call(V25, Some(("Mcp-Session-Id", "alpha-session"))).await,
        after_alpha,
        "a session id is not an identity"
    );
    // The header of each request decides its version, not the last handshake.
    let on_06 = call(V06, None).await;
    assert_eq!(on_06["structuredContent"]["protocolVersion"], V06);
    assert_eq!(
        on_06["structuredContent"]["clientCapabilities"],
        Value::Null
    );
}

#[tokio::test]
async fn a_cancellation_from_another_connection_does_not_reach_the_request() {
    let s = TestServer::start(builder(&ALL).tool(slow()).build().unwrap()).await;
    for v in LEGACY {
        let call = s.legacy(v, json!(77), "tools/call", Some(json!({"name":"slow"})));
        let cancel = async {
            tokio::time::sleep(Duration::from_millis(150)).await;
            s.post(
                &[("MCP-Protocol-Version", v)],
                r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":77}}"#,
            )
            .await
        };
        let (r, c) = tokio::join!(call, cancel);
        assert_eq!(c.status, 202, "{v}: {}", c.text());
        assert!(c.body.is_empty());
        assert_eq!(
            legacy_ok(&r, v, "tools/call")["content"][0]["text"],
            "finished",
            "{v}"
        );
    }
}

#[tokio::test]
async fn legacy_requests_need_no_2026_mirror_headers() {
    let s = server(&ALL).await;
    for v in LEGACY {
        let r = s
            .legacy(
                v,
                json!(1),
                "tools/call",
                Some(json!({"name":"regional","arguments":{"region":"eu-west","count":2}})),
            )
            .await;
        let res = legacy_ok(&r, v, "tools/call");
        let echoed: Value =
            serde_json::from_str(res["content"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(echoed, json!({"region":"eu-west","count":2}));
    }
}

// ---- the shared router -------------------------------------------------------------------

#[tokio::test]
async fn the_shared_router_serves_prompts_resources_and_completion() {
    let s = &server(&ALL).await;
    for v in LEGACY {
        let ask = move |method: &'static str, params: Value| async move {
            let r = s.legacy(v, json!(1), method, Some(params)).await;
            legacy_ok(&r, v, method)
        };
        let res = ask("prompts/list", json!({})).await;
        assert_eq!(names(&res, "prompts"), ["greet"]);
        assert_eq!(
            res["prompts"][0]["arguments"],
            json!([{"name":"name","description":"Who","required":true}])
        );
        let res = ask(
            "prompts/get",
            json!({"name":"greet","arguments":{"name":"Ann"}}),
        )
        .await;
        assert_eq!(res["messages"][0]["role"], "user");
        assert_eq!(res["messages"][0]["content"]["text"], "Hello, Ann!");
        let r = s
            .legacy(v, json!(2), "prompts/get", Some(json!({"name":"greet"})))
            .await;
        let e = assert_in_band(&r, v, "prompts/get", &json!(2), -32602);
        assert_eq!(e["data"]["missing"], json!(["name"]));

        let res = ask("resources/list", json!({})).await;
        let uris: Vec<&str> = res["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["uri"].as_str().unwrap())
            .collect();
        assert_eq!(uris, ["test://static/readme", "test://static/blob"]);
        let res = ask("resources/templates/list", json!({})).await;
        assert_eq!(
            res["resourceTemplates"][0]["uriTemplate"],
            "test://packages/{name}"
        );
        let res = ask("resources/read", json!({"uri":"test://static/readme"})).await;
        assert_eq!(res["contents"][0]["text"], "# Static resource\n");
        assert_eq!(res["contents"][0]["mimeType"], "text/plain");
        let res = ask("resources/read", json!({"uri":"test://static/blob"})).await;
        assert_eq!(res["contents"][0]["blob"], "AAEC");
        let res = ask("resources/read", json!({"uri":"test://packages/ecto"})).await;
        assert_eq!(res["contents"][0]["uri"], "test://packages/ecto");
        assert_eq!(res["contents"][0]["text"], r#"{"name":"ecto"}"#);
        let res = ask(
            "completion/complete",
            json!({"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"name","value":"al"}}),
        )
        .await;
        assert_eq!(
            res["completion"],
            json!({"values":["alice","albert"],"total":2,"hasMore":false})
        );
    }
}

// ---- mixed-version routing -----------------------------------------------------------------

#[tokio::test]
async fn one_runtime_routes_each_request_by_its_own_version() {
    let s = server(&ALL).await;
    let modern = || s.modern(json!("m"), "tools/list", json!({}), json!({}));
    let v25 = || s.legacy(V25, json!("a"), "tools/list", None);
    let v06 = || s.legacy(V06, json!("b"), "tools/list", None);
    let check = |m: Reply, a: Reply, b: Reply| {
        assert_eq!(m.status, 200, "{}", m.text());
        assert_valid(V26, "tools/list", &m);
        let mr = m.result();
        assert_eq!(mr["resultType"], "complete");
        assert_eq!(names(&mr, "tools"), ALL_TOOLS);
        assert!(mr["tools"][0].get("icons").is_some());

        let ar = legacy_ok(&a, V25, "tools/list");
        assert_eq!(a.json()["id"], "a");
        assert_eq!(names(&ar, "tools"), LEGACY_TOOLS);
        assert!(ar["tools"][0].get("icons").is_some());

        let br = legacy_ok(&b, V06, "tools/list");
        assert_eq!(b.json()["id"], "b");
        assert_eq!(names(&br, "tools"), LEGACY_TOOLS);
        assert!(
            br["tools"]
                .as_array()
                .unwrap()
                .iter()
                .all(|t| t.get("icons").is_none())
        );
    };
    // Interleaved one after another ...
    for _ in 0..2 {
        let a = v25().await;
        let m = modern().await;
        let b = v06().await;
        check(m, a, b);
    }
    // ... and at the same time.
    let (m, a, b) = tokio::join!(modern(), v25(), v06());
    check(m, a, b);

    let r = s
        .modern(json!(1), "server/discover", json!({}), json!({}))
        .await;
    assert_eq!(r.result()["supportedVersions"], json!([V26, V25, V06]));
}

// ---- construction --------------------------------------------------------------------------

#[test]
fn construction_warns_about_tools_hidden_from_legacy_clients() {
    let (built, log) = build_logged(builder(&ALL));
    assert!(built.is_ok());
    assert!(log.contains("WARN"), "{log}");
    assert!(
        log.contains(&format!(
            "{HIDDEN_WARNING} (2025-11-25, 2025-06-18): array_output"
        )),
        "{log}"
    );

    let (_, log) = build_logged(builder(&[&V2026_07_28, &V2025_06_18]));
    assert!(
        log.contains(&format!("{HIDDEN_WARNING} (2025-06-18): array_output")),
        "{log}"
    );

    let second = Tool::new("array_two")
        .description("Another array")
        .output_schema(json!({"type":"array"}))
        .handler(|_: NoArguments, _ctx| async { Json(json!([])) });
    let (_, log) = build_logged(builder(&ALL).tool(second));
    assert!(
        log.contains(&format!(
            "{HIDDEN_WARNING} (2025-11-25, 2025-06-18): array_output, array_two"
        )),
        "{log}"
    );

    // Only 2026 enabled: nothing is hidden, nothing is said.
    let (built, log) = build_logged(builder(&MODERN));
    assert!(built.is_ok());
    assert!(!log.contains(HIDDEN_WARNING), "{log}");
    // Legacy enabled but every tool expressible: nothing is said either.
    let (built, log) = build_logged(
        Runtime::builder("plain", "1.0.0").protocols(ALL).tool(
            Tool::new("echo")
                .description("Echoes text")
                .handler(|a: EchoArgs, _ctx| async move { ToolResult::text(a.text) }),
        ),
    );
    assert!(built.is_ok());
    assert!(!log.contains(HIDDEN_WARNING), "{log}");
}

#[test]
fn list_changed_is_refused_with_legacy_dialects() {
    let e = builder(&ALL).list_changed(true).build().err();
    let Some(BuildError::UnsupportedCapability { capability, reason }) = e else {
        panic!("expected UnsupportedCapability, got {e:?}");
    };
    assert_eq!(capability, "listChanged");
    assert!(reason.contains("2025-11-25"), "{reason}");
    assert!(reason.contains("2025-06-18"), "{reason}");

    let e = builder(&[&V2026_07_28, &V2025_06_18])
        .list_changed(true)
        .build()
        .err();
    let Some(BuildError::UnsupportedCapability { capability, reason }) = e else {
        panic!("expected UnsupportedCapability, got {e:?}");
    };
    assert_eq!(capability, "listChanged");
    assert!(reason.contains("2025-06-18"), "{reason}");
    assert!(!reason.contains("2025-11-25"), "{reason}");

    // Without it, a mixed runtime builds and advertises the base capabilities.
    assert!(builder(&ALL).list_changed(false).build().is_ok());
}
