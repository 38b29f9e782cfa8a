//! Nothing about a token is logged in full: every log line at TRACE is captured while
//! tokens are refused and accepted. In a test binary of its own, so that no test on
//! another thread touches the log callsites while the capturing subscriber is set.

mod support;

use std::io;
use std::sync::{Arc, Mutex};

use support::mcp::{bearer, claims, setup};
use support::sign;

/// Log lines, captured.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if let Ok(mut v) = self.0.lock() {
            v.extend_from_slice(buf);
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn nothing_about_a_token_is_logged_in_full() {
    let captured = Captured::default();
    let sink = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer(move || sink.clone())
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
    let logs = captured
        .0
        .lock()
        .map(|v| String::from_utf8_lossy(&v).into_owned())
        .unwrap_or_default();
    assert!(logs.contains("bearer token refused"), "captured: {logs}");
    for token in refused.iter().chain([&good]) {
        for part in token.split('.') {
            assert!(!logs.contains(part), "a token part was logged: {logs}");
        }
    }
    assert!(!logs.contains("opaque-secret-value"), "{logs}");
}
