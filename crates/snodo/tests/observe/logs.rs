//! One `snodo::request` event per request, on HTTP and stdio: what was called, by whom,
//! how it ended, how long it took and how many bytes moved; never argument values or
//! tokens.

use serde_json::{Value, json};
use snodo::Principal;
use snodo::http::{BearerTokens, HttpConfig};

use crate::capture::{Captured, Fields};
use crate::client::Client;
use crate::support::{MODERN, R2026_07_28, TestServer, builder};

const SECRET_ARGUMENT: &str = "s3cr3t-argument-value";
const TOKEN: &str = "tok-abcdef-123456";

fn modern_body(id: u64, method: &str, params: Value) -> String {
    R2026_07_28.request(method).id(id).params(params).body()
}

fn assert_nothing_secret(events: &[Fields]) {
    for e in events {
        for v in e.values() {
            assert!(!v.contains(SECRET_ARGUMENT), "argument value logged: {e:?}");
            assert!(!v.contains(TOKEN), "token logged: {e:?}");
        }
    }
}

fn field<'a>(e: &'a Fields, name: &str) -> &'a str {
    e.get(name)
        .map(String::as_str)
        .unwrap_or_else(|| panic!("no field {name} in {e:?}"))
}

#[tokio::test]
async fn http_requests_are_logged_once_each() {
    let (captured, _guard) = Captured::start();
    let auth = BearerTokens::new("https://example.com/.well-known/oauth-protected-resource")
        .token(TOKEN, Principal::new("alice"));
    let server = TestServer::start_with(
        builder(&MODERN).build().unwrap(),
        HttpConfig::default().authenticator(auth),
    )
    .await;
    let bearer = format!("Bearer {TOKEN}");
    let mcp = |method: &'static str, name: Option<&'static str>| {
        let mut h = vec![
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", method),
            ("Authorization", bearer.as_str()),
        ];
        if let Some(n) = name {
            h.push(("Mcp-Name", n));
        }
        h
    };

    let echo = modern_body(
        1,
        "tools/call",
        json!({"name":"echo","arguments":{"text":SECRET_ARGUMENT}}),
    );
    let ok = server.post(&mcp("tools/call", Some("echo")), &echo).await;
    assert_eq!(ok.status, 200);
    let body = modern_body(2, "tools/call", json!({"name":"nope","arguments":{}}));
    let unknown = server.post(&mcp("tools/call", Some("nope")), &body).await;
    assert_ne!(unknown.status, 200);
    // Refused before the body is read: wrong media type.
    let refused = server
        .raw("POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: text/plain\r\nAccept: application/json, text/event-stream\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")
        .await;
    assert_eq!(refused.status, 415);
    // No token: 401 from the authenticator.
    let body = modern_body(3, "tools/list", json!({}));
    let anonymous = server
        .post(
            &[
                ("MCP-Protocol-Version", "2026-07-28"),
                ("Mcp-Method", "tools/list"),
            ],
            &body,
        )
        .await;
    assert_eq!(anonymous.status, 401);

    let events = captured.wait_for(4).await;
    assert_eq!(events.len(), 4, "one event per request: {events:?}");
    let e = &events[0];
    assert_eq!(field(e, "transport"), "http");
    assert_eq!(field(e, "method"), "tools/call");
    assert_eq!(field(e, "name"), "echo");
    assert_eq!(field(e, "dialect"), "2026-07-28");
    assert_eq!(field(e, "principal"), "alice");
    assert_eq!(field(e, "id"), "1");
    assert_eq!(field(e, "outcome"), "ok");
    assert_eq!(field(e, "status"), "200");
    assert!(field(e, "duration_us").parse::<u64>().is_ok());
    assert_eq!(field(e, "bytes_in"), echo.len().to_string());
    assert_eq!(field(e, "bytes_out"), ok.body.len().to_string());
    assert!(!e.contains_key("code"));

    let e = &events[1];
    assert_eq!(field(e, "name"), "nope");
    assert_eq!(field(e, "outcome"), "error");
    assert_eq!(
        field(e, "code"),
        unknown.json()["error"]["code"].to_string()
    );
    assert_eq!(field(e, "status"), unknown.status.to_string());

    let e = &events[2];
    assert_eq!(field(e, "outcome"), "refused");
    assert_eq!(field(e, "status"), "415");
    assert_eq!(field(e, "method"), "-");

    let e = &events[3];
    assert_eq!(field(e, "outcome"), "refused");
    assert_eq!(field(e, "status"), "401");
    assert!(!e.contains_key("principal"));
    assert_nothing_secret(&events);
}

#[tokio::test]
async fn stdio_requests_are_logged_once_each() {
    let (captured, _guard) = Captured::start();
    let mut client = Client::start(builder(&MODERN).build().unwrap());
    client
        .modern(
            json!("a"),
            "tools/call",
            json!({"name":"echo","arguments":{"text":SECRET_ARGUMENT}}),
            json!({}),
        )
        .await;
    let answer = client.recv().await;
    assert_eq!(answer["id"], "a");
    client.line("{not json").await;
    let parse_error = client.recv().await;
    assert_eq!(parse_error["error"]["code"], -32700);
    client
        .modern(
            json!(7),
            "prompts/get",
            json!({"name":"missing"}),
            json!({}),
        )
        .await;
    let missing = client.recv().await;
    assert!(missing.get("error").is_some());
    let _ = client.finish().await;

    let events = captured.wait_for(3).await;
    assert_eq!(events.len(), 3, "one event per request: {events:?}");
    let e = &events[0];
    assert_eq!(field(e, "transport"), "stdio");
    assert_eq!(field(e, "method"), "tools/call");
    assert_eq!(field(e, "name"), "echo");
    assert_eq!(field(e, "dialect"), "2026-07-28");
    assert_eq!(field(e, "id"), "a");
    assert_eq!(field(e, "outcome"), "ok");
    assert!(!e.contains_key("status"), "no HTTP status on stdio");
    assert!(!e.contains_key("principal"));
    assert!(field(e, "bytes_out").parse::<usize>().unwrap() > 10);

    let e = &events[1];
    assert_eq!(field(e, "outcome"), "refused");
    assert_eq!(field(e, "code"), "-32700");

    let e = &events[2];
    assert_eq!(field(e, "method"), "prompts/get");
    assert_eq!(field(e, "outcome"), "error");
    assert_eq!(field(e, "code"), missing["error"]["code"].to_string());
    assert_nothing_secret(&events);
}
