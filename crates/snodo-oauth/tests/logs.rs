//! Nothing about a token is logged in full: every log line at TRACE is captured while
//! tokens are refused and accepted. In a test binary of its own, so that no test on
//! another thread touches the log callsites while the capturing subscriber is set.

mod support;

use snodo_testkit::logs::Captured;
use support::mcp::{bearer, claims, setup};
use support::sign;

#[tokio::test]
async fn nothing_about_a_token_is_logged_in_full() {
    let captured = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer(captured.clone())
        .finish();
    // The test runs on one thread: every task of the servers logs to this subscriber.
    let _guard = tracing::subscriber::set_default(subscriber);
    let (auth, m, key) = setup().await;
    let refused = [
        sign(&support::rsa_impostor("k1"), &claims(&auth, m.addr, "mcp")),
        sign(&support::ec("k7"), &claims(&auth, m.addr, "mcp")),
    ];
    let good = sign(&key, &claims(&auth, m.addr, "mcp"));
    for token in &refused {
        assert_eq!(bearer(&m, token, "whoami").await.status, 401);
    }
    assert_eq!(bearer(&m, &good, "whoami").await.status, 200);
    assert_eq!(
        bearer(&m, "opaque-secret-value", "whoami").await.status,
        401
    );
    let logs = captured.text();
    assert!(logs.contains("bearer token refused"), "captured: {logs}");
    for token in refused.iter().chain([&good]) {
        for part in token.split('.') {
            assert!(!logs.contains(part), "a token part was logged: {logs}");
        }
    }
    assert!(!logs.contains("opaque-secret-value"), "{logs}");
}
