//! The resource server mounted in an axum application, as docs/authorization.md shows:
//! `McpService` with the authenticator at `/mcp`, the metadata at both well-known paths
//! via `ResourceServer::metadata_response`.

mod support;

use axum::Router;
use axum::extract::Request;
use axum::routing::get;
use snodo::http::{HttpConfig, McpService};
use snodo::protocol::V2026_07_28;
use snodo::{NoArguments, Refusal, Runtime, Tool, ToolResult};
use snodo_oauth::{OAuthConfig, ResourceServer, ScopePolicy};
use support::mcp::{Mcp, bearer, claims, free_port, resource};
use support::{AuthServer, send, sign};

#[tokio::test]
async fn mounted_in_axum_beside_other_routes() {
    let key = support::rsa("k1");
    let auth = AuthServer::start(&[&key]).await;
    let addr = free_port();

    let rs = ResourceServer::discover(
        OAuthConfig::new(auth.issuer(), resource(addr)).required_scope("mcp"),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let runtime = Runtime::builder("axum-oauth", "0.1.0")
        .protocols([&V2026_07_28])
        .tool(Tool::new("whoami").handler(|_: NoArguments, _ctx| async { ToolResult::text("hi") }))
        .authorizer(ScopePolicy::new(&rs), Refusal::Conceal)
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let mcp = McpService::with_config(runtime, HttpConfig::default().authenticator(rs.clone()));
    let mut app = Router::new()
        .route("/", get(|| async { "an axum application" }))
        .route_service("/mcp", mcp);
    for path in rs.metadata_paths() {
        let rs = rs.clone();
        app = app.route(
            &path,
            get(move |req: Request| async move { rs.metadata_response(&req.into_parts().0) }),
        );
    }

    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = rx.await;
            })
            .await;
    });
    let m = Mcp {
        addr,
        stop: Some(tx),
    };

    let r = support::mcp::call(&m, None, "whoami").await;
    assert_eq!(r.status, 401, "{r:?}");
    assert!(
        r.challenge().contains(&format!(
            "resource_metadata=\"http://{addr}/.well-known/oauth-protected-resource/mcp\""
        )),
        "{}",
        r.challenge()
    );
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        let r = send(
            addr,
            &format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"),
        )
        .await;
        assert_eq!(r.status, 200, "{path}: {r:?}");
        assert_eq!(r.json()["resource"], resource(addr));
    }
    let token = sign(&key, &claims(&auth, addr, "mcp"));
    let r = bearer(&m, &token, "whoami").await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.json()["result"]["content"][0]["text"], "hi");
}
