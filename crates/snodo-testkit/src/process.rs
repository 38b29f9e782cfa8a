//! Child processes as the binary's tests run them: spawned with piped stdin and stdout,
//! read line by line or for the URL they announce, and always killed and reaped (a
//! failing test leaves no process behind).

use std::io::{BufRead, BufReader};
use std::ops::{Deref, DerefMut};
use std::process::{Child, ChildStdout, Command, Output, Stdio};
use std::sync::mpsc;

use serde_json::Value;

/// A child process killed and reaped when dropped, even when the test panics.
#[derive(Debug)]
pub struct Process(Child);

impl Process {
    /// Spawns `command` with stdin and stdout piped and stderr discarded.
    pub fn piped(command: &mut Command) -> Self {
        Self::spawn(
            command
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::null()),
        )
    }

    /// Spawns `command` as it is configured.
    pub fn spawn(command: &mut Command) -> Self {
        Self(
            command
                .spawn()
                .unwrap_or_else(|e| panic!("cannot start {command:?}: {e}")),
        )
    }

    /// Reads the first line of stdout and returns its first word starting with
    /// `http://`: the URL a server announces when it listens.
    pub fn announced_url(&mut self) -> String {
        let stdout = self.0.stdout.take().expect("stdout is piped");
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).unwrap();
        line.split_whitespace()
            .find(|w| w.starts_with("http://"))
            .unwrap_or_else(|| panic!("no URL in {line:?}"))
            .to_owned()
    }

    /// Takes stdout and reads it line by line on a thread; the lines arrive on the
    /// returned channel, which closes at the end of stdout.
    pub fn stdout_lines(&mut self) -> mpsc::Receiver<String> {
        lines_of(self.0.stdout.take().expect("stdout is piped"))
    }
}

impl Deref for Process {
    type Target = Child;

    fn deref(&self) -> &Child {
        &self.0
    }
}

impl DerefMut for Process {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.0
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Reads `stdout` line by line on a thread; the lines arrive on the returned channel,
/// which closes at the end of the stream (or the first unreadable line).
pub fn lines_of(stdout: ChildStdout) -> mpsc::Receiver<String> {
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    lines
}

/// The first line `child` prints on its (piped) stdout: the banner naming the address.
pub fn banner(child: &mut Child) -> String {
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout is piped"))
        .read_line(&mut line)
        .unwrap();
    line
}

/// Asserts that a finished command succeeded and returns its stdout as JSON.
pub fn ok_json(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "exit {:?}, stderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}
