//! The demo (`snodo serve`) as a child process, over HTTP or stdio, one request at a
//! time: shared by the demo's wire tests.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;
use snodo_testkit::{Process, Request};

pub const BIN: &str = env!("CARGO_BIN_EXE_snodo");

/// A fresh folder under the target's temporary directory.
pub fn folder(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.canonicalize().unwrap()
}

/// Writes `text` at `rel` under `dir`, creating the folders.
pub fn write(dir: &Path, rel: &str, text: &str) {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// How the test talks to the demo.
pub enum Transport {
    Http(SocketAddr),
    Stdio {
        stdin: ChildStdin,
        lines: mpsc::Receiver<String>,
    },
}

/// A running demo; killed on drop.
pub struct Demo {
    child: Process,
    transport: Transport,
}

impl Demo {
    /// `snodo serve --root ROOT` over HTTP on a free loopback port.
    pub fn http(root: &Path) -> Self {
        let mut child = Process::spawn(
            Command::new(BIN)
                .args(["serve", "--addr", "127.0.0.1:0", "--root"])
                .arg(root)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::null()),
        );
        let url = child.announced_url();
        let addr = url
            .strip_prefix("http://")
            .and_then(|w| w.strip_suffix("/mcp"))
            .unwrap_or_else(|| panic!("no MCP URL: {url:?}"))
            .parse()
            .unwrap();
        Self {
            child,
            transport: Transport::Http(addr),
        }
    }

    /// `snodo serve --stdio --root ROOT`.
    pub fn stdio(root: &Path) -> Self {
        let mut child = Process::piped(
            Command::new(BIN)
                .args(["serve", "--stdio", "--root"])
                .arg(root),
        );
        let stdin = child.stdin.take().unwrap();
        let lines = child.stdout_lines();
        Self {
            child,
            transport: Transport::Stdio { stdin, lines },
        }
    }

    /// The HTTP address (panics on stdio).
    pub fn addr(&self) -> SocketAddr {
        match &self.transport {
            Transport::Http(addr) => *addr,
            Transport::Stdio { .. } => panic!("not an HTTP demo"),
        }
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends `request` and returns the final JSON-RPC message answering it.
    pub fn rpc(&mut self, request: &Request) -> Value {
        match &mut self.transport {
            Transport::Http(addr) => {
                let mut stream = TcpStream::connect(*addr).unwrap();
                stream
                    .set_read_timeout(Some(Duration::from_secs(20)))
                    .unwrap();
                stream
                    .write_all(request.http(&addr.to_string()).as_bytes())
                    .unwrap();
                let mut buf = Vec::new();
                stream.read_to_end(&mut buf).unwrap();
                snodo_testkit::http::parse(&buf).message()
            }
            Transport::Stdio { stdin, lines } => {
                writeln!(stdin, "{}", request.body()).unwrap();
                stdin.flush().unwrap();
                let line = lines
                    .recv_timeout(Duration::from_secs(20))
                    .expect("an answer within 20 s");
                serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {line}"))
            }
        }
    }
}
