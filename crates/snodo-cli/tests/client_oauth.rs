//! `snodo client --oauth` refusing a server whose protected-resource metadata names
//! another resource: a clear error, exit 2, and nothing sent to the authorization server
//! (a hand-written server on 127.0.0.1 plays both). The whole login flow is run by the
//! OAuth lane (interop/oauth/code.mjs) and snodo-client's tests/oauth.rs.

#![cfg(feature = "client")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::Command;
use std::sync::{Arc, Mutex};

const BIN: &str = env!("CARGO_BIN_EXE_snodo");

/// Answers every request on `listener`; records the request lines.
fn serve(listener: TcpListener, log: Arc<Mutex<Vec<String>>>) {
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            if reader.read_line(&mut line).is_err() {
                continue;
            }
            let mut length = 0usize;
            loop {
                let mut h = String::new();
                if reader.read_line(&mut h).is_err() || h.trim().is_empty() {
                    break;
                }
                if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0u8; length];
            let _ = reader.read_exact(&mut body);
            log.lock().unwrap().push(line.trim().to_owned());
            let (status, extra, body) = if line.starts_with("POST /mcp") {
                (
                    "401 Unauthorized",
                    format!(
                        "www-authenticate: Bearer resource_metadata=\"http://127.0.0.1:{port}/prm\"\r\n"
                    ),
                    String::new(),
                )
            } else if line.starts_with("GET /prm") {
                (
                    "200 OK",
                    "content-type: application/json\r\n".to_owned(),
                    format!(
                        r#"{{"resource":"https://evil.example.com/mcp","authorization_servers":["http://127.0.0.1:{port}"]}}"#
                    ),
                )
            } else {
                ("404 Not Found", String::new(), String::new())
            };
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\n{extra}content-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
}

#[test]
fn a_foreign_resource_is_refused_before_any_authorization() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let log = Arc::new(Mutex::new(Vec::new()));
    serve(listener, log.clone());
    let dir = std::env::temp_dir().join(format!("snodo-client-oauth-{}", std::process::id()));
    let out = Command::new(BIN)
        .args(["client", "--url", &format!("http://127.0.0.1:{port}/mcp")])
        .args(["--oauth", "--headless", "--token-file"])
        .arg(dir.join("tokens.json"))
        .args(["--protocol", "2026-07-28", "tools/list"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("authorization:") && stderr.contains("evil.example.com"),
        "{stderr}"
    );
    let log = log.lock().unwrap();
    assert!(log.iter().any(|l| l.starts_with("GET /prm")), "{log:?}");
    assert!(
        log.iter()
            .all(|l| l.starts_with("POST /mcp") || l.starts_with("GET /prm")),
        "{log:?}"
    );
    assert!(!dir.join("tokens.json").exists());
    let _ = std::fs::remove_dir_all(dir);
}
