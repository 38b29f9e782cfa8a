//! The `snodo` binary's transports (issue 36) against peers nobody here wrote: curl over
//! HTTP/1.1, `--http2-prior-knowledge`, `--http2` over TLS and `--unix-socket`; Python's
//! httpx with HTTP/2; and `snodo client` over each. One table of transports; the binary
//! is started on 127.0.0.1 or a socket in a temporary folder and stopped by PID. Then
//! the binary's edges: SIGHUP reloads (a bad pair kept out), a live socket refused, the
//! socket file removed at SIGTERM.
//!
//! Needs curl with HTTP/2 (Debian `curl`) and `/usr/bin/python3` with httpx and h2
//! (Debian `python3-httpx python3-h2`); under CI a missing peer fails the test.

#![cfg(feature = "client")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use snodo_testkit::process::ok_json;

const BIN: &str = env!("CARGO_BIN_EXE_snodo");

/// How a peer reaches the fixture.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Transport {
    Http1,
    H2c,
    H2Tls,
    Unix,
}

const ALL: [Transport; 4] = [
    Transport::Http1,
    Transport::H2c,
    Transport::H2Tls,
    Transport::Unix,
];

/// The fixture (echo profile) on one transport; killed on drop, its folder removed.
struct Fixture {
    child: Child,
    transport: Transport,
    port: u16,
    dir: tempfile::TempDir,
    stderr: PathBuf,
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A certificate for `localhost` (not a CA: webpki refuses a CA as an end entity).
fn certificate(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["localhost".to_owned()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    let (c, k) = (
        dir.join(format!("{name}.crt")),
        dir.join(format!("{name}.key")),
    );
    std::fs::write(&c, cert.pem()).unwrap();
    std::fs::write(&k, key.serialize_pem()).unwrap();
    (c, k)
}

impl Fixture {
    fn start(transport: Transport) -> Self {
        let dir = tempfile::Builder::new()
            .prefix("snodo-transports-")
            .tempdir()
            .unwrap();
        let stderr = dir.path().join("stderr");
        let mut cmd = Command::new(BIN);
        cmd.args(["fixture", "--profile", "echo"]);
        match transport {
            Transport::Unix => {
                let sock = dir.path().join("mcp.sock");
                cmd.arg("--addr")
                    .arg(format!("unix:{}", sock.display()))
                    .args(["--socket-mode", "600"]);
            }
            Transport::H2Tls => {
                let (c, k) = certificate(dir.path(), "server");
                cmd.args(["--addr", "127.0.0.1:0", "--tls-cert"])
                    .arg(c)
                    .arg("--tls-key")
                    .arg(k);
            }
            _ => {
                cmd.args(["--addr", "127.0.0.1:0"]);
            }
        }
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .unwrap();
        let line = snodo_testkit::process::banner(&mut child);
        let port = line
            .split_whitespace()
            .find_map(|w| {
                w.strip_prefix("http://127.0.0.1:")
                    .or(w.strip_prefix("https://127.0.0.1:"))
            })
            .and_then(|rest| rest.split('/').next())
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        assert!(
            transport == Transport::Unix || port != 0,
            "no address in {line:?}"
        );
        Self {
            child,
            transport,
            port,
            dir,
            stderr,
        }
    }

    fn socket(&self) -> PathBuf {
        self.dir.path().join("mcp.sock")
    }

    fn url(&self) -> String {
        match self.transport {
            Transport::Unix => "http://localhost/mcp".to_owned(),
            Transport::H2Tls => format!("https://localhost:{}/mcp", self.port),
            _ => format!("http://127.0.0.1:{}/mcp", self.port),
        }
    }

    /// The curl flags of this transport.
    fn curl_flags(&self) -> Vec<String> {
        let mut f: Vec<String> = match self.transport {
            Transport::Http1 => vec!["--http1.1".into()],
            Transport::H2c => vec!["--http2-prior-knowledge".into()],
            Transport::H2Tls => vec![
                "--http2".into(),
                "--cacert".into(),
                self.dir.path().join("server.crt").display().to_string(),
            ],
            Transport::Unix => vec!["--unix-socket".into(), self.socket().display().to_string()],
        };
        f.push(self.url());
        f
    }

    /// The `snodo client` flags of this transport.
    fn client_flags(&self) -> Vec<String> {
        let mut f = vec!["--url".to_owned(), self.url()];
        match self.transport {
            Transport::Http1 => {}
            Transport::H2c => f.push("--http2-prior-knowledge".into()),
            Transport::H2Tls => {
                f.push("--cacert".into());
                f.push(self.dir.path().join("server.crt").display().to_string());
            }
            Transport::Unix => {
                f.push("--unix-socket".into());
                f.push(self.socket().display().to_string());
            }
        }
        f
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }
}

const LIST: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"curl","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}"#;

/// `curl` POSTing tools/list: (HTTP version, status, body).
fn curl(flags: &[String]) -> (String, u16, String) {
    let out = Command::new("curl")
        .args([
            "-sS",
            "--max-time",
            "10",
            "-w",
            "\n%{http_version} %{http_code}",
        ])
        .args(["-H", "Content-Type: application/json"])
        .args(["-H", "Accept: application/json, text/event-stream"])
        .args(["-H", "MCP-Protocol-Version: 2026-07-28"])
        .args(["-H", "Mcp-Method: tools/list"])
        .args(["-d", LIST])
        .args(flags)
        .output()
        .expect("curl runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, tail) = text.rsplit_once('\n').unwrap_or_default();
    let (version, code) = tail.split_once(' ').unwrap_or_default();
    (
        version.to_owned(),
        code.parse().unwrap_or(0),
        body.to_owned(),
    )
}

#[test]
fn curl_on_each_transport() {
    for t in ALL {
        let f = Fixture::start(t);
        let (version, code, body) = curl(&f.curl_flags());
        assert_eq!(code, 200, "{t:?}: {body} / {}", f.stderr());
        let want = if matches!(t, Transport::H2c | Transport::H2Tls) {
            "2"
        } else {
            "1.1"
        };
        assert_eq!(version, want, "{t:?}");
        let v: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["result"]["tools"][0]["name"], "echo", "{t:?}");
    }
}

#[test]
fn snodo_client_on_each_transport() {
    for t in ALL {
        let f = Fixture::start(t);
        let out = Command::new(BIN)
            .arg("client")
            .args(f.client_flags())
            .args(["call", "echo", "text=hi"])
            .output()
            .unwrap();
        let v = ok_json(&out);
        assert_eq!(v["content"][0]["text"], "hi", "{t:?}");
    }
}

/// Python's httpx with HTTP/2 (h2 by ALPN over TLS, prior knowledge in cleartext).
#[test]
fn python_httpx_over_http2() {
    let python = Path::new("/usr/bin/python3");
    let has = python.exists()
        && Command::new(python)
            .args(["-c", "import httpx, h2"])
            .status()
            .is_ok_and(|s| s.success());
    if !has {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI needs python3-httpx and python3-h2"
        );
        eprintln!("skipped: /usr/bin/python3 with httpx and h2 not found");
        return;
    }
    for t in [Transport::H2c, Transport::H2Tls] {
        let f = Fixture::start(t);
        let verify = if t == Transport::H2Tls {
            format!(
                "{:?}",
                f.dir.path().join("server.crt").display().to_string()
            )
        } else {
            "True".to_owned()
        };
        let script = format!(
            r#"
import httpx, json, sys
with httpx.Client(http1=False, http2=True, verify={verify}) as c:
    r = c.post({url:?}, content={LIST:?}, headers={{
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/list"}})
    print(r.http_version, r.status_code, r.json()["result"]["tools"][0]["name"])
"#,
            url = f.url()
        );
        let out = Command::new(python).args(["-c", &script]).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            text.trim(),
            "HTTP/2 200 echo",
            "{t:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

fn signal(child: &Child, sig: &str) {
    let ok = Command::new("kill")
        .args([sig, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
}

#[test]
fn sighup_reloads_and_a_bad_pair_is_kept_out() {
    let f = Fixture::start(Transport::H2Tls);
    let (_, other_key) = certificate(f.dir.path(), "other");
    let key = f.dir.path().join("server.key");
    let good = std::fs::read(&key).unwrap();
    std::fs::copy(&other_key, &key).unwrap();
    signal(&f.child, "-HUP");
    let mut waited = Duration::ZERO;
    while !f.stderr().contains("not reloaded") && waited < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(50));
        waited += Duration::from_millis(50);
    }
    assert!(
        f.stderr().contains("is not the private key"),
        "{}",
        f.stderr()
    );
    // Still served with the old pair.
    assert_eq!(curl(&f.curl_flags()).1, 200);
    std::fs::write(&key, good).unwrap();
    signal(&f.child, "-HUP");
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        f.stderr().contains("TLS certificate and key reloaded"),
        "{}",
        f.stderr()
    );
    assert_eq!(curl(&f.curl_flags()).1, 200);
    // A bad pair at start: a clear error, exit 1.
    std::fs::copy(&other_key, &key).unwrap();
    let out = Command::new(BIN)
        .args(["fixture", "--addr", "127.0.0.1:0", "--tls-cert"])
        .arg(f.dir.path().join("server.crt"))
        .arg("--tls-key")
        .arg(&key)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("is not the private key of the certificate"),
        "{err}"
    );
}

#[test]
fn a_unix_socket_is_exclusive_and_removed_at_exit() {
    let mut f = Fixture::start(Transport::Unix);
    let sock = f.socket();
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&sock).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let out = Command::new(BIN)
        .args(["fixture", "--addr"])
        .arg(format!("unix:{}", sock.display()))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("another server is listening"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    signal(&f.child, "-TERM");
    let status = f.child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    assert!(!sock.exists(), "removed at exit");
}
