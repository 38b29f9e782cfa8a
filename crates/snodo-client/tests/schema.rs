//! Every message the client sends, at the wire: a recording proxy in front of a snodo
//! server keeps each POST (headers and body) and the test validates the bodies against
//! the official JSON Schema of the negotiated revision (`JSONRPCMessage` and
//! `ClientRequest` / `ClientNotification` / `ClientResult`) and checks the headers.

mod support;

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, Request};
use axum::response::Response;
use serde_json::{Value, json};
use snodo::http::McpService;
use snodo_client::Protocol;
use snodo_testkit::R2026_07_28;
use snodo_testkit::schema::{assert_schema, violations};
use support::{Flags, all_versions, builder, exercise, runtime_for};

type Seen = Arc<Mutex<Vec<(HeaderMap, Value)>>>;

#[derive(Clone)]
struct Proxy {
    service: McpService,
    seen: Seen,
}

async fn forward(
    State(p): State<Proxy>,
    method: Method,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if method == Method::POST {
        if let (Ok(v), Ok(mut g)) = (serde_json::from_slice::<Value>(&body), p.seen.lock()) {
            g.push((headers.clone(), v));
        }
    }
    let mut req = Request::builder().method(method).uri("/mcp");
    for (k, v) in &headers {
        req = req.header(k, v);
    }
    let req = req
        .body(axum::body::Body::from(body))
        .unwrap_or_else(|e| panic!("{e}"));
    let resp = p.service.handle(req).await;
    resp.map(axum::body::Body::new)
}

#[tokio::test]
async fn every_message_validates_against_its_revision() {
    for v in all_versions() {
        let seen: Seen = Arc::default();
        let service = McpService::new(runtime_for(&all_versions(), &Flags::default()));
        let app = Router::new()
            .route("/mcp", axum::routing::any(forward))
            .with_state(Proxy {
                service,
                seen: seen.clone(),
            });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
        let server = tokio::spawn(async move { axum::serve(listener, app).await });
        let protocol = if v == "2026-07-28" {
            Protocol::Auto
        } else {
            Protocol::Pinned(v.into())
        };
        let c = builder()
            .protocol(protocol)
            .connect_http(&format!("http://{addr}/mcp"))
            .await
            .unwrap_or_else(|e| panic!("{v}: {e}"));
        assert_eq!(c.protocol_version(), v);
        exercise(&c).await;
        c.close().await;
        server.abort();

        let seen = seen.lock().map(|g| g.clone()).unwrap_or_default();
        assert!(seen.len() > 20, "{v}: {} messages", seen.len());
        let mut kinds = [0; 3];
        for (headers, m) in &seen {
            let h = |n: &str| {
                headers
                    .get(n)
                    .and_then(|x| x.to_str().ok())
                    .map(str::to_owned)
            };
            assert_schema(v, "JSONRPCMessage", m);
            let method = m["method"].as_str().unwrap_or_default();
            if m.get("result").is_some() || m.get("error").is_some() {
                kinds[2] += 1;
                if m.get("result").is_some() {
                    assert_schema(v, "ClientResult", &m["result"]);
                }
            } else if m.get("id").is_some() {
                kinds[0] += 1;
                assert_schema(v, "ClientRequest", m);
            } else {
                kinds[1] += 1;
                assert_schema(v, "ClientNotification", m);
            }
            let accept = h("accept").unwrap_or_default();
            assert!(
                accept.contains("application/json") && accept.contains("text/event-stream"),
                "{accept}"
            );
            let version = h("mcp-protocol-version");
            match (v, method) {
                (_, "initialize") | ("2025-03-26", _) => assert_eq!(version, None, "{v} {method}"),
                _ => assert_eq!(version.as_deref(), Some(v), "{v} {method}"),
            }
            if v == "2026-07-28" {
                // The shared test support's requests carry the headers this client sends.
                let model = R2026_07_28
                    .request(method)
                    .params(m["params"].clone())
                    .headers();
                for (name, value) in model {
                    assert_eq!(h(&name).as_deref(), Some(value.as_str()), "{name}: {m}");
                }
                assert_eq!(h("mcp-method").as_deref(), Some(method), "{m}");
                let meta = &m["params"]["_meta"];
                assert_eq!(
                    meta["io.modelcontextprotocol/protocolVersion"],
                    json!(v),
                    "{m}"
                );
                assert!(
                    meta["io.modelcontextprotocol/clientCapabilities"]["elicitation"].is_object(),
                    "{m}"
                );
                if let Some(name) = m["params"]["name"].as_str().or(m["params"]["uri"].as_str()) {
                    if matches!(method, "tools/call" | "prompts/get" | "resources/read") {
                        assert_eq!(h("mcp-name").as_deref(), Some(name), "{m}");
                    }
                }
                if m["params"]["name"] == json!("region") {
                    assert_eq!(h("mcp-param-region").as_deref(), Some("eu west"), "{m}");
                }
            }
        }
        if v == "2026-07-28" {
            assert_eq!(
                kinds[1] + kinds[2],
                0,
                "2026-07-28 sends requests only: {kinds:?}"
            );
        } else {
            assert!(kinds[1] >= 1, "{v}: notifications/initialized: {kinds:?}");
            assert!(
                kinds[2] >= 2,
                "{v}: answers to the server's questions: {kinds:?}"
            );
        }
    }
}

#[test]
fn the_validator_refuses_a_malformed_request() {
    let bad = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {}});
    for v in all_versions() {
        assert!(!violations(v, "ClientRequest", &bad).is_empty(), "{v}");
    }
}
