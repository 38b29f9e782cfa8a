//! `--task-store sqlite:PATH` through the binary: a task survives the process, and a task
//! that was running when the process was killed reads `failed` after the restart (the
//! same instance id recovers it at once, long before its lease would run out).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Value, json};
use snodo_testkit::{Process, R2026_07_28};

struct Fixture {
    child: Process,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next: i64,
}

impl Fixture {
    fn start(db: &Path) -> Self {
        let store = format!("sqlite:{}", db.display());
        let mut child = Process::piped(
            Command::new(env!("CARGO_BIN_EXE_snodo"))
                .args(["fixture", "--stdio", "--protocols", "2026-07-28"])
                .args(["--task-store", &store, "--task-lease", "600"]),
        );
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Self {
            child,
            stdin,
            stdout,
            next: 0,
        }
    }

    /// One 2026-07-28 request declaring the tasks extension; the response's result.
    fn call(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let msg = R2026_07_28
            .request(method)
            .id(self.next)
            .params(params)
            .capabilities(json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}))
            .body();
        writeln!(self.stdin, "{msg}").unwrap();
        self.stdin.flush().unwrap();
        loop {
            let mut line = String::new();
            assert!(
                self.stdout.read_line(&mut line).unwrap() > 0,
                "stdout closed"
            );
            let reply: Value = serde_json::from_str(&line).unwrap();
            if reply["id"] == json!(self.next) {
                assert!(reply.get("error").is_none(), "{method}: {reply}");
                return reply["result"].clone();
            }
        }
    }
}

fn temp_db() -> PathBuf {
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    std::env::temp_dir().join(format!("snodo-cli-tasks-{}-{nanos}.db", std::process::id()))
}

#[test]
fn sqlite_tasks_survive_a_kill_and_the_running_one_fails() {
    let db = temp_db();
    let mut first = Fixture::start(&db);
    let done = first.call(
        "tools/call",
        json!({"name": "slow_compute", "arguments": {"seconds": 0}}),
    );
    assert_eq!(done["resultType"], "task", "{done}");
    let running = first.call(
        "tools/call",
        json!({"name": "slow_compute", "arguments": {"seconds": 300}}),
    );
    let (done_id, running_id) = (done["taskId"].clone(), running["taskId"].clone());
    let deadline = Instant::now() + Duration::from_secs(20);
    while first.call("tasks/get", json!({"taskId": done_id}))["status"] != "completed" {
        assert!(Instant::now() < deadline, "the short task did not complete");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        first.call("tasks/get", json!({"taskId": running_id}))["status"],
        "working"
    );
    first.child.kill().unwrap(); // SIGKILL: no shutdown code runs
    first.child.wait().unwrap();

    let mut second = Fixture::start(&db);
    let started = Instant::now();
    let r = second.call("tasks/get", json!({"taskId": running_id}));
    assert_eq!(r["status"], "failed", "{r}");
    assert_eq!(r["error"]["code"], -32603, "{r}");
    assert_eq!(
        r["error"]["message"], "the instance running this task stopped",
        "{r}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "recovered at once, not after the lease"
    );
    let r = second.call("tasks/get", json!({"taskId": done_id}));
    assert_eq!(r["status"], "completed", "the finished task survived: {r}");
    assert!(
        r["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("Computed"),
        "{r}"
    );
    drop(second.stdin);
    let _ = second.child.wait();
    remove_db(&db);
}

fn remove_db(db: &Path) {
    for suffix in ["", "-wal", "-shm", "-instance-0", "-instance-1"] {
        let mut p = db.as_os_str().to_owned();
        p.push(suffix);
        let _ = std::fs::remove_file(p);
    }
}

fn status_of(f: &mut Fixture, id: &Value) -> Value {
    f.call("tasks/get", json!({"taskId": id}))
}

/// Two live processes on one file: the second one's startup does not fail the first
/// one's running task, and that task's result, stored when it finishes, is read through
/// either (issue 37: the instance id came from the path, so the second process's
/// recovery failed the task and its result was lost).
#[test]
fn a_second_live_process_leaves_the_first_ones_tasks_alone() {
    let db = temp_db();
    let mut first = Fixture::start(&db);
    let running = first.call(
        "tools/call",
        json!({"name": "slow_compute", "arguments": {"seconds": 2}}),
    );
    let id = running["taskId"].clone();
    let mut second = Fixture::start(&db);
    let r = status_of(&mut second, &id);
    assert_eq!(r["status"], "working", "the second process failed it: {r}");
    let deadline = Instant::now() + Duration::from_secs(20);
    let done = loop {
        let r = status_of(&mut second, &id);
        if r["status"] != "working" {
            break r;
        }
        assert!(Instant::now() < deadline, "the task did not finish: {r}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(done["status"], "completed", "{done}");
    assert!(
        done["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("Computed"),
        "{done}"
    );
    assert_eq!(status_of(&mut first, &id)["status"], "completed");
    drop(first.stdin);
    drop(second.stdin);
    let _ = first.child.wait();
    let _ = second.child.wait();
    remove_db(&db);
}

/// Past `--task-max-per-principal`, a `tools/call` that would create a task is refused
/// with a JSON-RPC error saying why, and nothing is stored; the store (the memory store,
/// and SQLite through the same code as PostgreSQL) serves on (issue 37: no cap; 2,000
/// tasks in 0.3 s, kept for the hour of their TTL).
#[test]
fn stored_tasks_are_capped_per_principal() {
    let db = temp_db();
    for store in ["memory".to_owned(), format!("sqlite:{}", db.display())] {
        let mut child = Process::piped(
            Command::new(env!("CARGO_BIN_EXE_snodo"))
                .args(["fixture", "--stdio", "--protocols", "2026-07-28"])
                .args(["--task-store", &store, "--task-max-per-principal", "3"]),
        );
        let mut stdin = child.stdin.take().unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        for id in 1..=5 {
            let msg = R2026_07_28
                .request("tools/call")
                .id(id)
                .params(json!({"name": "slow_compute", "arguments": {"seconds": 0}}))
                .capabilities(json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}))
                .body();
            writeln!(stdin, "{msg}").unwrap();
        }
        stdin.flush().unwrap();
        let answers: Vec<Value> = (0..5)
            .map(|_| {
                let mut line = String::new();
                stdout.read_line(&mut line).unwrap();
                serde_json::from_str(&line).unwrap()
            })
            .collect();
        // The calls run concurrently: any three of them get the tasks.
        let (created, refused): (Vec<&Value>, Vec<&Value>) = answers
            .iter()
            .partition(|m| m["result"]["resultType"] == "task");
        assert_eq!(created.len(), 3, "{store}: {answers:?}");
        assert_eq!(refused.len(), 2, "{store}: {answers:?}");
        for m in refused {
            assert_eq!(m["error"]["code"], -32603, "{store}: {m}");
            assert_eq!(m["error"]["data"]["reason"], "tasks", "{store}: {m}");
            let message = m["error"]["message"].as_str().unwrap();
            assert!(message.contains("at most 3"), "{store}: {m}");
        }
        drop(stdin);
        assert!(child.wait().unwrap().success());
    }
    remove_db(&db);
}

/// `--task-store sqlite:` names no file: refused at startup, saying so.
#[test]
fn an_empty_sqlite_path_is_refused_at_startup() {
    let out = Command::new(env!("CARGO_BIN_EXE_snodo"))
        .args(["fixture", "--stdio", "--task-store", "sqlite:"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success(), "{:?}", out.status);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("needs a file path"), "{stderr}");
}
