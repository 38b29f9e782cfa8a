//! The OAuth client at the wire: a hand-written authorization server and a snodo server
//! behind a bearer check, on one 127.0.0.1 listener. The authorization endpoint
//! approves at once (the client runs headless); the token endpoint checks PKCE and
//! rotates refresh tokens (an old one is refused); the resource server can revoke
//! access tokens to force a refresh.

mod support;

/// A poisoned lock in the mock is a test failure anyway.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use base64::Engine as _;
use serde_json::{Value, json};
use sha2::Digest as _;
use snodo_client::ClientError;
use snodo_client::auth::{FileStore, MemoryStore, OAuthConfig, TokenStore};

#[derive(Default)]
struct Log {
    authorize: Vec<Value>,
    token: Vec<Value>,
    register: Vec<Value>,
    bearer_seen: Vec<Option<String>>,
}

#[derive(Clone)]
struct Mock {
    base: String,
    /// What the resource metadata names as `resource` (default: base/mcp).
    resource: Option<String>,
    /// `iss` in the redirect: "correct", "wrong", "omit".
    iss: &'static str,
    /// Every token request fails with `invalid_grant`.
    refuse_tokens: bool,
    /// The resource server answers 401 to everything.
    always_401: bool,
    /// The tokens' `expires_in`.
    expires_in: u64,
    /// Where the authorization server lives when not at `base` (`{as_base}/as`).
    as_base: Option<String>,
    log: Arc<Mutex<Log>>,
    valid: Arc<Mutex<HashSet<String>>>,
    /// The refresh token the server will accept next.
    refresh: Arc<Mutex<Option<String>>>,
    challenge: Arc<Mutex<Option<String>>>,
    counter: Arc<Mutex<u32>>,
    svc: snodo::http::McpService,
}

impl Mock {
    fn issuer(&self) -> String {
        format!("{}/as", self.as_base.as_deref().unwrap_or(&self.base))
    }
    fn next(&self, prefix: &str) -> String {
        let mut n = lock(&self.counter);
        *n += 1;
        format!("{prefix}-{n}")
    }
    fn log(&self) -> std::sync::MutexGuard<'_, Log> {
        lock(&self.log)
    }
}

/// How many refresh-token grants the token endpoint has seen.
fn refreshes(log: &Log) -> usize {
    log.token
        .iter()
        .filter(|t| t["grant_type"] == "refresh_token")
        .count()
}

async fn prm(State(m): State<Mock>) -> Response {
    let resource = m.resource.clone().unwrap_or(format!("{}/mcp", m.base));
    j(
        StatusCode::OK,
        json!({"resource": resource, "authorization_servers": [m.issuer()]}),
    )
}

async fn as_meta(State(m): State<Mock>) -> Response {
    let i = m.issuer();
    j(
        StatusCode::OK,
        json!({
            "issuer": i,
            "authorization_endpoint": format!("{i}/authorize"),
            "token_endpoint": format!("{i}/token"),
            "registration_endpoint": format!("{i}/register"),
            "response_types_supported": ["code"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none"],
            "authorization_response_iss_parameter_supported": true,
        }),
    )
}

async fn authorize(State(m): State<Mock>, uri: axum::http::Uri) -> Response {
    let q: Vec<(String, String)> =
        form_urlencoded::parse(uri.query().unwrap_or_default().as_bytes())
            .into_owned()
            .collect();
    let get = |k: &str| q.iter().find(|(a, _)| a == k).map(|(_, v)| v.clone());
    let logged: serde_json::Map<String, Value> = q
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect();
    m.log().authorize.push(Value::Object(logged));
    *lock(&m.challenge) = get("code_challenge");
    let mut to = format!(
        "{}?code=the-code&state={}",
        get("redirect_uri").unwrap_or_default(),
        get("state").unwrap_or_default()
    );
    match m.iss {
        "correct" => to.push_str(&format!("&iss={}", m.issuer())),
        "wrong" => to.push_str("&iss=https://evil.example.com"),
        _ => {}
    }
    Redirect::to(&to).into_response()
}

fn j(status: StatusCode, v: Value) -> Response {
    (
        status,
        [("content-type", "application/json")],
        v.to_string(),
    )
        .into_response()
}

fn form_map(body: &[u8]) -> serde_json::Map<String, Value> {
    form_urlencoded::parse(body)
        .into_owned()
        .map(|(k, v)| (k, Value::String(v)))
        .collect()
}

async fn token(State(m): State<Mock>, body: axum::body::Bytes) -> Response {
    let f = form_map(&body);
    m.log().token.push(Value::Object(f.clone()));
    let bad = |d: &str| {
        j(
            StatusCode::BAD_REQUEST,
            json!({"error": "invalid_grant", "error_description": d}),
        )
    };
    if m.refuse_tokens {
        return bad("refused");
    }
    match f.get("grant_type").and_then(Value::as_str) {
        Some("authorization_code") => {
            let verifier = f
                .get("code_verifier")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let computed = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .encode(sha2::Sha256::digest(verifier.as_bytes()));
            if lock(&m.challenge).as_deref() != Some(computed.as_str()) {
                return bad("PKCE mismatch");
            }
        }
        Some("refresh_token") => {
            let rt = f
                .get("refresh_token")
                .and_then(Value::as_str)
                .map(str::to_owned);
            if *lock(&m.refresh) != rt {
                return bad("stale refresh token");
            }
        }
        _ => return bad("grant"),
    }
    let at = m.next("at");
    let rt = m.next("rt");
    lock(&m.valid).insert(at.clone());
    *lock(&m.refresh) = Some(rt.clone());
    j(
        StatusCode::OK,
        json!({"access_token": at, "token_type": "Bearer", "expires_in": m.expires_in, "refresh_token": rt}),
    )
}

async fn register(State(m): State<Mock>, body: axum::body::Bytes) -> Response {
    let v: Value = serde_json::from_slice(&body).unwrap_or_default();
    m.log().register.push(v);
    j(StatusCode::CREATED, json!({"client_id": "dyn-client"}))
}

async fn mcp(State(m): State<Mock>, headers: HeaderMap, req: Request) -> Response {
    let bearer = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_owned);
    m.log().bearer_seen.push(bearer.clone());
    let ok = !m.always_401 && bearer.as_ref().is_some_and(|b| lock(&m.valid).contains(b));
    if !ok {
        let h = format!(
            r#"Bearer error="invalid_token", resource_metadata="{}/.well-known/oauth-protected-resource/mcp""#,
            m.base
        );
        return (StatusCode::UNAUTHORIZED, [("www-authenticate", h)], "").into_response();
    }
    m.svc.handle(req).await.map(Body::new)
}

async fn start(f: impl FnOnce(&mut Mock)) -> Mock {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("bind: {e}"));
    let port = listener.local_addr().map(|a| a.port()).unwrap_or_default();
    let base = format!("http://127.0.0.1:{port}");
    let runtime = support::runtime_for(&["2026-07-28"], &support::Flags::default());
    let mut m = Mock {
        base,
        resource: None,
        iss: "correct",
        refuse_tokens: false,
        always_401: false,
        expires_in: 3600,
        as_base: None,
        log: Arc::default(),
        valid: Arc::default(),
        refresh: Arc::default(),
        challenge: Arc::default(),
        counter: Arc::default(),
        svc: snodo::http::McpService::new(runtime),
    };
    f(&mut m);
    let app = Router::new()
        .route("/.well-known/oauth-protected-resource/mcp", get(prm))
        .route("/.well-known/oauth-authorization-server/as", get(as_meta))
        .route("/as/authorize", get(authorize))
        .route("/as/token", post(token))
        .route("/as/register", post(register))
        .route("/mcp", post(mcp))
        .with_state(m.clone());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    m
}

fn config(store: Arc<dyn TokenStore>) -> OAuthConfig {
    OAuthConfig::new("oauth-test")
        .headless("http://127.0.0.1:9/callback")
        .store(store)
}

async fn connect(m: &Mock, cfg: OAuthConfig) -> Result<snodo_client::Client, ClientError> {
    support::builder()
        .oauth(cfg)
        .connect_http(&format!("{}/mcp", m.base))
        .await
}

#[tokio::test]
async fn code_flow_pkce_resource_and_registration() {
    let m = start(|_| {}).await;
    let client = connect(&m, config(Arc::new(MemoryStore::new())))
        .await
        .unwrap();
    assert!(!client.list_tools().await.unwrap().is_empty());
    let log = m.log();
    assert_eq!(log.authorize.len(), 1);
    let a = &log.authorize[0];
    assert_eq!(a["resource"], format!("{}/mcp", m.base));
    assert_eq!(a["code_challenge_method"], "S256");
    assert_eq!(a["client_id"], "dyn-client");
    assert_eq!(log.register.len(), 1);
    assert_eq!(log.register[0]["application_type"], "native");
    assert_eq!(log.token.len(), 1);
    assert_eq!(log.token[0]["resource"], format!("{}/mcp", m.base));
    // Every request after the first refusal carried the token.
    assert_eq!(log.bearer_seen[0], None);
    assert!(
        log.bearer_seen[1..]
            .iter()
            .all(|b| b.as_deref() == Some("at-1"))
    );
}

#[tokio::test]
async fn a_foreign_resource_is_refused_before_any_authorization() {
    let m = start(|m| m.resource = Some("https://evil.example.com/mcp".into())).await;
    let err = connect(&m, config(Arc::new(MemoryStore::new())))
        .await
        .unwrap_err();
    assert!(matches!(err, ClientError::Auth(_)), "{err}");
    assert!(err.to_string().contains("evil.example.com"), "{err}");
    let log = m.log();
    assert!(log.authorize.is_empty() && log.token.is_empty() && log.register.is_empty());
}

#[tokio::test]
async fn a_wrong_or_missing_iss_stops_before_the_token_request() {
    for iss in ["wrong", "omit"] {
        let m = start(|m| m.iss = iss).await;
        let err = connect(&m, config(Arc::new(MemoryStore::new())))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("iss"), "{iss}: {err}");
        let log = m.log();
        assert_eq!(log.authorize.len(), 1, "{iss}");
        assert!(log.token.is_empty(), "{iss}");
    }
}

#[tokio::test]
async fn refusals_end_in_an_error_without_tokens_in_it() {
    let m = start(|m| m.always_401 = true).await;
    let err = connect(&m, config(Arc::new(MemoryStore::new())))
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("after 3 authorizations"), "{text}");
    assert!(!text.contains("at-") && !text.contains("rt-"), "{text}");
    assert_eq!(m.log().authorize.len(), 3);

    let m = start(|m| m.refuse_tokens = true).await;
    let err = connect(&m, config(Arc::new(MemoryStore::new())))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("invalid_grant"), "{err}");
    assert!(!err.to_string().contains("the-code"), "{err}");
}

#[tokio::test]
async fn revoked_tokens_are_refreshed_once_for_concurrent_calls_and_rotated() {
    let m = start(|_| {}).await;
    let store = Arc::new(MemoryStore::new());
    let client = connect(&m, config(store.clone())).await.unwrap();
    client.list_tools().await.unwrap();
    // Revoke at-1: the next calls all get 401 and must share one refresh.
    lock(&m.valid).clear();
    let calls = (0..6).map(|_| {
        let c = client.clone();
        tokio::spawn(async move { c.list_tools().await.map(|t| t.len()) })
    });
    for c in calls {
        c.await.unwrap().unwrap();
    }
    assert_eq!(refreshes(&m.log()), 1);
    assert_eq!(m.log().authorize.len(), 1, "a refresh, not a new login");
    let server = format!("{}/mcp", m.base);
    let stored = store.load(&server).unwrap().unwrap();
    assert_eq!(stored.access_token, "at-3");
    assert_eq!(stored.refresh_token.as_deref(), Some("rt-4"));
    // Again: the rotated refresh token (rt-4) is the one presented; rt-2 would be refused.
    lock(&m.valid).clear();
    client.list_tools().await.unwrap();
    assert_eq!(refreshes(&m.log()), 2);
    assert_eq!(m.log().authorize.len(), 1);
}

#[tokio::test]
async fn a_token_file_carries_the_login_to_the_next_client() {
    let m = start(|_| {}).await;
    let dir = std::env::temp_dir().join(format!("snodo-oauth-test-{}", std::process::id()));
    let path = dir.join("tokens.json");
    let _ = std::fs::remove_file(&path);
    let first = connect(&m, config(Arc::new(FileStore::new(&path))))
        .await
        .unwrap();
    first.list_tools().await.unwrap();
    first.close().await;
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("at-1") && text.contains("dyn-client"));
    let second = connect(&m, config(Arc::new(FileStore::new(&path))))
        .await
        .unwrap();
    second.list_tools().await.unwrap();
    // A third client after the token was revoked: a 401 on a stored token refreshes it.
    lock(&m.valid).clear();
    let third = connect(&m, config(Arc::new(FileStore::new(&path))))
        .await
        .unwrap();
    third.list_tools().await.unwrap();
    let log = m.log();
    assert_eq!(log.authorize.len(), 1, "a later client logged in again");
    assert_eq!(log.register.len(), 1, "a later client registered again");
    assert_eq!(refreshes(&log), 1);
    assert!(std::fs::read_to_string(&path).unwrap().contains("rt-4"));
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn tokens_about_to_expire_are_refreshed_once_for_concurrent_calls() {
    // Two-second tokens: refreshed in the second half of their life.
    let m = start(|m| m.expires_in = 2).await;
    let client = connect(&m, config(Arc::new(MemoryStore::new())))
        .await
        .unwrap();
    client.list_tools().await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    let before = refreshes(&m.log());
    let calls: Vec<_> = (0..6)
        .map(|_| {
            let c = client.clone();
            tokio::spawn(async move { c.list_tools().await.map(|t| t.len()) })
        })
        .collect();
    for c in calls {
        c.await.unwrap().unwrap();
    }
    assert_eq!(before, 0, "a fresh token was refreshed");
    assert_eq!(refreshes(&m.log()), 1, "one refresh for the six calls");
    assert_eq!(m.log().authorize.len(), 1);
}

/// A client on a Unix socket sends only the MCP URL's origin to the socket: the
/// authorization server (another origin) is reached over TCP, as without a socket,
/// never through the socket in plaintext.
#[tokio::test]
async fn over_a_unix_socket_the_authorization_server_is_reached_over_tcp() {
    // The authorization server: the TCP mock (its `/as/...` routes).
    let tcp = start(|_| {}).await;
    // The resource server on the socket, naming the TCP authorization server.
    let mut on_socket = tcp.clone();
    on_socket.base = "http://localhost".into();
    on_socket.as_base = Some(tcp.base.clone());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mcp.sock");
    let listener = tokio::net::UnixListener::bind(&path).unwrap();
    let app = Router::new()
        .route("/.well-known/oauth-protected-resource/mcp", get(prm))
        .route("/mcp", post(mcp))
        .with_state(on_socket);
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let client = support::builder()
        .unix_socket(&path)
        .oauth(config(Arc::new(MemoryStore::new())))
        .connect_http("http://localhost/mcp")
        .await
        .unwrap();
    assert!(!client.list_tools().await.unwrap().is_empty());
    let log = tcp.log();
    assert_eq!(
        log.token.len(),
        1,
        "the token request reached the TCP server"
    );
    assert_eq!(log.token[0]["resource"], "http://localhost/mcp");
}
