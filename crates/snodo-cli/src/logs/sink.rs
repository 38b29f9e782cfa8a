//! The log writer: lines are appended to one shared buffer and a thread of its own
//! writes them to stderr in batches.
//!
//! A request's line costs the request one uncontended lock and one copy into the
//! buffer; no allocation, no channel message and, under load, no system call: the
//! writer wakes at most once per [`BATCH_INTERVAL`] while lines keep coming and is only
//! woken by a request when it has gone idle. When stderr stops draining (a client that
//! pipes it and never reads) the buffer stops at [`MAX_PENDING`] bytes and further lines
//! are dropped (and counted in a line of their own once writing resumes): logs never
//! stall the protocol.

use std::io::Write;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

/// Bytes of lines waiting to be written before new lines are dropped.
const MAX_PENDING: usize = 1024 * 1024;

/// After writing a batch the writer waits this long for more before it goes idle.
const BATCH_INTERVAL: Duration = Duration::from_millis(10);

/// A buffer that grew past this in a burst is not kept once written.
const KEEP_CAPACITY: usize = 64 * 1024;

/// The pipe buffer asked for when stderr is a pipe: a whole batch under load (~250 KiB
/// at 10 ms) fits, so the writer does not block and wake several times per batch while
/// the reader drains a 64 KiB pipe (that doubled the writer's CPU). 1 MiB is Linux's
/// default `pipe-max-size` for unprivileged processes.
const PIPE_SIZE: usize = 1024 * 1024;

/// Grows the pipe behind `fd`, if it is one and the system allows; anything else is left
/// as it is (a file, a terminal, a socket, or a pipe at the user's limit: the kernel
/// refuses `F_SETPIPE_SZ` then).
pub(crate) fn grow_pipe(fd: impl std::os::fd::AsFd) {
    let _ = rustix::pipe::fcntl_setpipe_size(fd, PIPE_SIZE);
}

/// Where the lines go, and the writer thread that drains them.
pub(crate) struct Sink {
    shared: Arc<Shared>,
}

/// Stops the writer thread when dropped, after it wrote what was queued.
pub(crate) struct SinkGuard {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

struct Shared {
    state: Mutex<State>,
    wake: Condvar,
}

#[derive(Default)]
struct State {
    /// Whole lines, each with its newline.
    pending: String,
    dropped: u64,
    /// The writer is waiting to be woken (no deadline).
    idle: bool,
    closed: bool,
}

impl Sink {
    /// A sink writing to `out` from a new thread.
    pub(crate) fn spawn<W: Write + Send + 'static>(out: W) -> std::io::Result<(Sink, SinkGuard)> {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            wake: Condvar::new(),
        });
        let thread = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("snodo-logs".into())
                .spawn(move || shared.drain(out))?
        };
        let guard = SinkGuard {
            shared: Arc::clone(&shared),
            thread: Some(thread),
        };
        Ok((Sink { shared }, guard))
    }

    /// Queues one line (with its newline), or drops it when the queue is full.
    pub(crate) fn push(&self, line: &str) {
        self.append(self.shared.lock(), |queue| queue.push_str(line));
    }

    /// Lets `write` append one line (with its newline) to the queue itself, saving the
    /// copy from a buffer of its own, when the queue is free now; `false` (and `write`
    /// not called) when another thread holds it. `write` must not log: the queue is
    /// locked while it runs.
    pub(crate) fn write_in_place(&self, write: impl FnOnce(&mut String)) -> bool {
        let state = match self.shared.state.try_lock() {
            Ok(state) => state,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return false,
        };
        self.append(state, write);
        true
    }

    /// Appends what `write` writes, or drops it (and counts it) when it would take the
    /// queue past [`MAX_PENDING`]; wakes an idle writer.
    fn append(&self, mut state: std::sync::MutexGuard<'_, State>, write: impl FnOnce(&mut String)) {
        let start = state.pending.len();
        if start < MAX_PENDING {
            write(&mut state.pending);
        }
        if start >= MAX_PENDING || state.pending.len() > MAX_PENDING {
            state.pending.truncate(start);
            state.dropped += 1;
            return;
        }
        if state.idle {
            state.idle = false;
            drop(state);
            self.shared.wake.notify_one();
        }
    }
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding the lock leaves a buffer of whole lines: keep using it.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The writer thread: takes what is pending, writes it, waits for more.
    fn drain<W: Write>(&self, mut out: W) {
        let mut batch = String::new();
        loop {
            let mut state = self.lock();
            if state.pending.is_empty() && !state.closed {
                // Nothing came during the last interval: sleep until a line does.
                state.idle = true;
                while state.idle && !state.closed {
                    state = self
                        .wake
                        .wait(state)
                        .unwrap_or_else(PoisonError::into_inner);
                }
            }
            let closed = state.closed;
            std::mem::swap(&mut state.pending, &mut batch);
            let dropped = std::mem::take(&mut state.dropped);
            drop(state);
            // stderr may be closed or full: nothing to do about it but keep going.
            let _ = out.write_all(batch.as_bytes());
            if dropped > 0 {
                let _ = writeln!(
                    out,
                    "snodo: {dropped} log line(s) dropped (stderr was not drained)"
                );
            }
            let _ = out.flush();
            batch.clear();
            if batch.capacity() > KEEP_CAPACITY {
                batch = String::new();
            }
            if closed {
                return;
            }
            std::thread::sleep(BATCH_INTERVAL);
        }
    }
}

impl Drop for SinkGuard {
    fn drop(&mut self) {
        self.shared.lock().closed = true;
        self.shared.wake.notify_one();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Collects what the writer writes; `block` holds it inside `write` (a stderr that
    /// nobody reads).
    #[derive(Clone, Default)]
    struct Out {
        bytes: Arc<Mutex<Vec<u8>>>,
        block: Arc<Mutex<()>>,
    }

    impl Write for Out {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let _held = self.block.lock().unwrap_or_else(PoisonError::into_inner);
            self.bytes
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn text(out: &Out) -> String {
        String::from_utf8_lossy(&out.bytes.lock().unwrap_or_else(PoisonError::into_inner)).into()
    }

    /// A pipe on stderr is grown to hold a whole batch; anything else is left alone.
    #[test]
    fn a_pipe_is_grown_and_a_file_left_alone() {
        let (read, write) = rustix::pipe::pipe().unwrap_or_else(|e| panic!("{e}"));
        let before = rustix::pipe::fcntl_getpipe_size(&write).unwrap_or_else(|e| panic!("{e}"));
        grow_pipe(&write);
        let after = rustix::pipe::fcntl_getpipe_size(&write).unwrap_or_else(|e| panic!("{e}"));
        let limit = std::fs::read_to_string("/proc/sys/fs/pipe-max-size")
            .ok()
            .and_then(|s| s.trim().parse::<usize>().ok())
            .unwrap_or(0);
        if limit >= PIPE_SIZE {
            assert!(after >= PIPE_SIZE, "{before} -> {after}");
        } else {
            assert_eq!(after, before);
        }
        drop(read);
        let file = temp_file();
        grow_pipe(&file); // refused by the kernel, ignored
    }

    fn temp_file() -> std::fs::File {
        let path = std::env::temp_dir().join(format!("snodo-sink-{}", std::process::id()));
        let file = std::fs::File::create(&path).unwrap_or_else(|e| panic!("{e}"));
        let _ = std::fs::remove_file(&path);
        file
    }

    #[test]
    fn lines_are_written_in_order_and_flushed_at_drop() {
        let out = Out::default();
        let (sink, guard) = Sink::spawn(out.clone()).unwrap_or_else(|e| panic!("{e}"));
        for i in 0..1000 {
            if i % 2 == 0 {
                sink.push(&format!("line {i}\n"));
            } else if !sink.write_in_place(|q| q.push_str(&format!("line {i}\n"))) {
                // The writer held the queue (a busy machine can preempt it there): the
                // caller's way, as `Lines::on_event` does, is the copy through `push`.
                sink.push(&format!("line {i}\n"));
            }
            if i % 100 == 0 {
                std::thread::sleep(Duration::from_millis(15)); // let the writer go idle
            }
        }
        drop(guard);
        let want: String = (0..1000).map(|i| format!("line {i}\n")).collect();
        assert_eq!(text(&out), want);
    }

    #[test]
    fn an_idle_writer_is_woken_by_a_line() {
        let out = Out::default();
        let (sink, _guard) = Sink::spawn(out.clone()).unwrap_or_else(|e| panic!("{e}"));
        std::thread::sleep(Duration::from_millis(50));
        assert!(sink.write_in_place(|q| q.push_str("late\n")));
        for _ in 0..200 {
            if text(&out) == "late\n" {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        panic!("the line was not written within 1 s: {:?}", text(&out));
    }

    #[test]
    fn a_stalled_stderr_drops_lines_beyond_the_bound_and_says_so() {
        let out = Out::default();
        let held = out.block.lock().unwrap_or_else(PoisonError::into_inner);
        let (sink, guard) = Sink::spawn(out.clone()).unwrap_or_else(|e| panic!("{e}"));
        sink.push("first\n");
        std::thread::sleep(Duration::from_millis(30)); // the writer is now stuck in write
        let line = "x".repeat(1023) + "\n";
        for i in 0..2000 {
            // 2000 KiB offered, 1 MiB kept, by either way in.
            if i % 2 == 0 {
                sink.push(&line);
            } else {
                assert!(sink.write_in_place(|q| q.push_str(&line)));
            }
        }
        drop(held);
        drop(guard);
        let text = text(&out);
        let kept = text.lines().filter(|l| l.starts_with('x')).count();
        assert_eq!(kept, MAX_PENDING / 1024, "{}", text.len());
        assert!(
            text.contains(&format!("snodo: {} log line(s) dropped", 2000 - kept)),
            "{}",
            &text[text.len().saturating_sub(200)..]
        );
    }
}
