//! A stdio backend's child process: started in a process group of its own, its stderr
//! forwarded to the log under the backend's name (capped per line and in rate), its
//! exit noticed at once, and the whole group (the child's own children too) signalled
//! when it exits or is let go.

use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt as _, AsyncRead, BufReader};
use tokio::process::{ChildStdin, ChildStdout, Command};
use tokio::sync::{oneshot, watch};

/// The longest stderr line forwarded to the log, in bytes (the rest is cut).
const STDERR_LINE: usize = 4096;
/// Stderr lines forwarded per second, on average, and in a burst.
const STDERR_RATE: f64 = 50.0;
const STDERR_BURST: f64 = 200.0;
/// How long a child let go has between `SIGTERM` and `SIGKILL` of its group.
const GRACE: Duration = Duration::from_secs(1);

/// What to start: program, arguments, environment, working directory.
#[derive(Clone, Debug, Default)]
pub(crate) struct ChildCommand {
    pub(crate) program: String,
    pub(crate) args: Vec<String>,
    pub(crate) env: Vec<(String, String)>,
    pub(crate) cwd: Option<PathBuf>,
}

/// A source's child processes not reaped yet: each one counted from its start until
/// its exit has been waited for (after a `SIGTERM` and the grace period, the `SIGKILL`
/// of its whole group). See [`McpSource::reaped`](crate::McpSource::reaped).
#[derive(Clone, Debug, Default)]
pub struct Reaped(Arc<watch::Sender<usize>>);

impl Reaped {
    /// Waits (at most `limit`) until every child of the source started so far is
    /// reaped; whether they all are.
    pub async fn wait(&self, limit: Duration) -> bool {
        let mut rx = self.0.subscribe();
        matches!(
            tokio::time::timeout(limit, rx.wait_for(|n| *n == 0)).await,
            Ok(Ok(_))
        )
    }

    /// Counts one child until the guard drops.
    fn hold(&self) -> Live {
        self.0.send_modify(|n| *n += 1);
        Live(self.clone())
    }
}

/// One child counted in [`Reaped`].
struct Live(Reaped);

impl Drop for Live {
    fn drop(&mut self) {
        self.0.0.send_modify(|n| *n = n.saturating_sub(1));
    }
}

/// A started child: its pipes, its guard, and why it exited (once it has).
pub(crate) struct Spawned {
    pub(crate) stdin: ChildStdin,
    pub(crate) stdout: ChildStdout,
    pub(crate) guard: ChildGuard,
}

/// Owns a child's process group: dropping it sends `SIGTERM` to the group and, after a
/// grace period, `SIGKILL`. Reports the child's exit.
pub(crate) struct ChildGuard {
    pid: Option<u32>,
    stop: Option<oneshot::Sender<()>>,
    exited: watch::Receiver<Option<String>>,
}

impl ChildGuard {
    /// Why the child exited, once it has (`the child exited with status 1`).
    pub(crate) async fn exited(&self) -> String {
        let mut rx = self.exited.clone();
        match rx.wait_for(Option::is_some).await {
            Ok(v) => v.clone().unwrap_or_default(),
            // The watcher went: the child is gone all the same.
            Err(_) => "the child process is gone".to_owned(),
        }
    }

    /// A receiver of the exit reason (`None` while the child runs).
    pub(crate) fn exit_watch(&self) -> watch::Receiver<Option<String>> {
        self.exited.clone()
    }

    /// Why the child exited, if it has by now.
    pub(crate) fn exit_reason(&self) -> Option<String> {
        self.exited.borrow().clone()
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if self.exited.borrow().is_none() {
            if let Some(pid) = self.pid {
                signal_group(pid, rustix::process::Signal::TERM);
            }
        }
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// Signals the process group `pid` leads (the child and whatever it started).
fn signal_group(pid: u32, sig: rustix::process::Signal) {
    let pgid = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw);
    if let Some(pgid) = pgid {
        // ESRCH: the group is gone already.
        let _ = rustix::process::kill_process_group(pgid, sig);
    }
}

/// Why the child exited, for callers' errors and health reports: its status only (its
/// stderr, which may carry anything, goes to the log alone).
fn describe(status: std::io::Result<ExitStatus>) -> String {
    match status {
        Ok(s) => match (s.code(), std::os::unix::process::ExitStatusExt::signal(&s)) {
            (Some(c), _) => format!("the child exited with status {c}"),
            (None, Some(sig)) => format!("the child was killed by signal {sig}"),
            _ => format!("the child exited ({s})"),
        },
        Err(e) => format!("the child could not be waited for: {e}"),
    }
}

/// Starts `cmd` in a new process group with piped stdio; `backend` names it in the log.
pub(crate) fn spawn(
    backend: &str,
    cmd: &ChildCommand,
    reaped: &Reaped,
) -> std::io::Result<Spawned> {
    let mut c = Command::new(&cmd.program);
    c.args(&cmd.args)
        .envs(cmd.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // If this task's runtime goes before the watcher runs, tokio still kills it.
        .kill_on_drop(true)
        // Its own group: the group is signalled as one (its children too), and a
        // Ctrl-C at the gateway's terminal is the gateway's to handle.
        .process_group(0);
    if let Some(dir) = &cmd.cwd {
        c.current_dir(dir);
    }
    let mut child = c.spawn().map_err(|e| {
        std::io::Error::new(e.kind(), format!("cannot start {:?}: {e}", cmd.program))
    })?;
    let pid = child.id();
    // Counted until its exit is waited for (the watcher's end).
    let live = reaped.hold();
    let missing = |what| std::io::Error::other(format!("the child has no {what}"));
    let stdin = child.stdin.take().ok_or_else(|| missing("stdin"))?;
    let stdout = child.stdout.take().ok_or_else(|| missing("stdout"))?;
    let last = Arc::new(Mutex::new(String::new()));
    if let Some(err) = child.stderr.take() {
        tokio::spawn(forward_stderr(
            backend.to_owned(),
            pid,
            err,
            Arc::clone(&last),
        ));
    }
    let (exit_tx, exit_rx) = watch::channel(None);
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let name = backend.to_owned();
    tokio::spawn(async move {
        let _live = live;
        tokio::select! {
            status = child.wait() => {
                // The child's own children go with it (and its stdout closes).
                if let Some(pid) = pid {
                    signal_group(pid, rustix::process::Signal::KILL);
                }
                // The stderr forwarder may hold the last line a moment longer.
                tokio::time::sleep(Duration::from_millis(20)).await;
                let why = describe(status);
                let last = last.lock().map(|l| l.clone()).unwrap_or_default();
                tracing::warn!(backend = %name, pid, reason = %why, last_stderr = %last, "backend child exited");
                exit_tx.send_replace(Some(why));
            }
            _ = stop_rx => {
                // Let go (SIGTERM sent by the guard): a grace period, then SIGKILL.
                if tokio::time::timeout(GRACE, child.wait()).await.is_err() {
                    let _ = child.start_kill();
                }
                if let Some(pid) = pid {
                    signal_group(pid, rustix::process::Signal::KILL);
                }
                let _ = child.wait().await;
                tracing::debug!(backend = %name, pid, "backend child stopped");
                exit_tx.send_replace(Some("the child was stopped by the gateway".to_owned()));
            }
        }
    });
    Ok(Spawned {
        stdin,
        stdout,
        guard: ChildGuard {
            pid,
            stop: Some(stop_tx),
            exited: exit_rx,
        },
    })
}

/// A token bucket for log lines.
struct Budget {
    tokens: f64,
    at: Instant,
    dropped: u64,
}

impl Budget {
    fn take(&mut self) -> bool {
        let now = Instant::now();
        let refill = now.duration_since(self.at).as_secs_f64() * STDERR_RATE;
        self.tokens = (self.tokens + refill).min(STDERR_BURST);
        self.at = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            self.dropped += 1;
            false
        }
    }
}

/// Forwards a child's stderr to the log, line by line: each line cut at
/// [`STDERR_LINE`] bytes, lines beyond the rate dropped and counted.
async fn forward_stderr(
    backend: String,
    pid: Option<u32>,
    err: impl AsyncRead + Unpin,
    last: Arc<Mutex<String>>,
) {
    let mut r = BufReader::new(err);
    let mut line = Vec::with_capacity(256);
    let mut cut = false;
    let mut budget = Budget {
        tokens: STDERR_BURST,
        at: Instant::now(),
        dropped: 0,
    };
    let mut emit = |line: &[u8], cut: bool| {
        // Most lines are UTF-8: checked by the fast validation (a lossy read walks the
        // line in chunks, several times the cost), read lossily only when that fails.
        let text = match std::str::from_utf8(line) {
            Ok(t) => std::borrow::Cow::Borrowed(t),
            Err(_) => String::from_utf8_lossy(line),
        };
        let text = text.trim_end();
        if text.is_empty() {
            return;
        }
        if let Ok(mut l) = last.lock() {
            text.clone_into(&mut l);
        }
        if !budget.take() {
            return;
        }
        if budget.dropped > 0 {
            tracing::warn!(backend = %backend, pid, dropped = budget.dropped, "backend stderr: lines dropped (rate limit)");
            budget.dropped = 0;
        }
        if cut {
            tracing::info!(backend = %backend, pid, cut, "{text}");
        } else {
            tracing::info!(backend = %backend, pid, "{text}");
        }
    };
    loop {
        let avail = match r.fill_buf().await {
            Ok(a) if !a.is_empty() => a,
            _ => break,
        };
        let (chunk, consumed, end) = match avail.iter().position(|&b| b == b'\n') {
            Some(pos) => (&avail[..pos], pos + 1, true),
            None => (avail, avail.len(), false),
        };
        let room = STDERR_LINE.saturating_sub(line.len());
        line.extend_from_slice(&chunk[..chunk.len().min(room)]);
        cut |= chunk.len() > room;
        r.consume(consumed);
        if end {
            emit(&line, cut);
            line.clear();
            cut = false;
        }
    }
    emit(&line, cut);
}
