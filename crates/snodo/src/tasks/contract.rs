//! The [`TaskStore`] contract suite (feature `task-store-contract`): the properties every
//! store must have, each an `async fn` taking a store factory. The memory store runs it in
//! snodo's tests; the SQLite and PostgreSQL stores in crate `snodo-tasks-sql`'s.
//!
//! The factory returns a NEW handle on the SAME backend at every call (the memory store:
//! clones of one `Arc`; SQLite: another open of the same file; PostgreSQL: another pool on
//! the same database), so "a second instance sees it" is what the suite checks. Every
//! property uses fresh ids and its own instance ids, so properties may share a backend
//! (and run one after another on it). A failed property panics with what broke.
//!
//! ```ignore
//! let report = snodo::tasks::contract::run_all(|| async { store.clone() as Arc<dyn TaskStore> }).await;
//! ```

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Map, Value, json};

use super::store::{
    LEASE_LOST_MESSAGE, NewTask, Outcome, Owner, StoreError, TaskLimits, TaskRecord, TaskStatus,
    TaskStore, lease_lost_error,
};

/// A long lease: the task's worker is alive for the whole property.
const LIVE: Duration = Duration::from_secs(600);
/// How long a property waits for a change that must come.
const PATIENCE: Duration = Duration::from_secs(10);

/// What [`run_all`] measured.
#[derive(Debug, Clone, Copy)]
pub struct Report {
    /// From `request_cancel` on one handle to `wait_change` returning on another.
    pub cancel_latency: Duration,
    /// From `add_input_responses` on one handle to `wait_change` returning on another.
    pub answer_latency: Duration,
}

/// Runs every property, one after another, on handles from `make`.
pub async fn run_all<F, Fut>(make: F) -> Report
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn TaskStore>>,
{
    create_is_durable(&make).await;
    owner_is_checked(&make).await;
    transitions_only_forward(&make).await;
    outcome_stored_once(&make).await;
    let cancel_latency = cancel_reaches_worker(&make).await;
    let answer_latency = answers_reach_worker(&make).await;
    wait_change_times_out(&make).await;
    ttl_expires(&make).await;
    lease_expiry_fails_task(&make).await;
    recover_fails_previous_run(&make).await;
    limits_refuse_past_the_caps(&make).await;
    Report {
        cancel_latency,
        answer_latency,
    }
}

/// A created task is visible through a second handle as soon as `create` returns, with
/// what was stored; a duplicate id is a conflict.
pub async fn create_is_durable<F, Fut>(make: &F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn TaskStore>>,
{
    let (a, b) = (make().await, make().await);
    let owner = owner("alice");
    let mut task = new_task(&owner, &instance("create"));
    task.ttl_ms = Some(3_600_000);
    task.poll_interval_ms = Some(750);
    task.status_message = Some("starting".into());
    let before = SystemTime::now() - Duration::from_secs(5);
    let created = ok(a.create(task.clone()).await, "create");
    assert_eq!(created.id, task.id);
    assert_eq!(created.status, TaskStatus::Working);
    assert_eq!(created.version, 1, "a new task has version 1");
    let seen = found(b.get(&task.id, &owner).await, "get through a second handle");
    assert_eq!(seen.id, task.id);
    assert_eq!(seen.owner, owner);
    assert_eq!(seen.status, TaskStatus::Working);
    assert_eq!(seen.status_message.as_deref(), Some("starting"));
    assert_eq!(seen.ttl_ms, Some(3_600_000));
    assert_eq!(seen.poll_interval_ms, Some(750));
    assert_eq!(seen.input_requests, None);
    assert_eq!(seen.outcome, None);
    assert!(!seen.cancel_requested);
    assert_eq!(seen.version, 1);
    assert!(seen.created_at > before, "created_at is the creation time");
    match b.create(task).await {
        Err(StoreError::Conflict(_)) => {}
        other => panic!("a duplicate id must be a Conflict, got {other:?}"),
    }
}

/// Another owner (subject or scope) sees an unknown id and changes nothing.
pub async fn owner_is_checked<F, Fut>(make: &F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn TaskStore>>,
{
    let (a, b) = (make().await, make().await);
    let alice = owner("alice");
    let task = created(&a, &alice, &instance("owner")).await;
    ask(&a, &task.id, &["q"]).await;
    let version = found(a.get(&task.id, &alice).await, "get").version;
    for other in [
        Owner::new("mallory", "contract"),
        Owner::new(alice.subject.clone(), "other-scope"),
        Owner::default(),
    ] {
        let id = task.id.as_str();
        assert_eq!(ok(b.get(id, &other).await, "get"), None, "{other:?} reads");
        assert!(
            !ok(b.request_cancel(id, &other).await, "cancel"),
            "{other:?} cancels"
        );
        let answers = object(json!({"q": "forged"}));
        assert!(
            !ok(b.add_input_responses(id, &other, answers).await, "answer"),
            "{other:?} answers"
        );
    }
    let after = found(b.get(&task.id, &alice).await, "get");
    assert_eq!(after.version, version, "another owner changed the task");
    assert!(!after.cancel_requested);
    assert!(ok(a.take_input_responses(&task.id).await, "take").is_empty());
    assert_eq!(
        ok(b.get("no-such-task", &alice).await, "get unknown"),
        None,
        "an unknown id"
    );
}

/// `Working <-> InputRequired`, each change bumps the version by one; nothing leaves a
/// terminal status; `set_status` cannot store `Completed`/`Failed`.
pub async fn transitions_only_forward<F, Fut>(make: &F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn TaskStore>>,
{
    let (a, b) = (make().await, make().await);
    let alice = owner("alice");
    let task = created(&a, &alice, &instance("forward")).await;
    let id = task.id.as_str();
    let requests = object(json!({"q": {"method": "elicitation/create"}}));
    assert!(ok(
        a.set_status(
            id,
            TaskStatus::InputRequired,
            Some("asking".into()),
            Some(requests.clone())
        )
        .await,
        "set input_required"
    ));
    let r = found(b.get(id, &alice).await, "get");
    assert_eq!(r.status, TaskStatus::InputRequired);
    assert_eq!(r.input_requests.as_ref(), Some(&requests));
    assert_eq!(r.status_message.as_deref(), Some("asking"));
    assert_eq!(r.version, 2);
    assert!(ok(
        a.set_status(id, TaskStatus::Working, None, None).await,
        "back to working"
    ));
    let r = found(b.get(id, &alice).await, "get");
    assert_eq!(r.status, TaskStatus::Working);
    assert_eq!(
        r.input_requests, None,
        "leaving input_required clears the requests"
    );
    assert_eq!(r.version, 3);
    for status in [TaskStatus::Completed, TaskStatus::Failed] {
        assert!(
            !ok(a.set_status(id, status, None, None).await, "set terminal"),
            "set_status({status:?}) must be refused: outcomes go through finish"
        );
    }
    assert!(ok(
        a.set_status(id, TaskStatus::Cancelled, Some("stopped".into()), None)
            .await,
        "cancelled"
    ));
    let r = found(b.get(id, &alice).await, "get");
    assert_eq!(r.status, TaskStatus::Cancelled);
    assert_eq!(r.version, 4);
    for status in [
        TaskStatus::Working,
        TaskStatus::InputRequired,
        TaskStatus::Cancelled,
    ] {
        assert!(
            !ok(a.set_status(id, status, None, None).await, "leave terminal"),
            "cancelled -> {status:?} must be refused"
        );
    }
    assert!(
        !ok(
            a.finish(id, Outcome::Result(json!({})), None).await,
            "finish"
        ),
        "finish after cancelled must be refused"
    );
    assert!(
        ok(b.request_cancel(id, &alice).await, "cancel terminal"),
        "cancel of a terminal task is acknowledged"
    );
    let r = found(b.get(id, &alice).await, "get");
    assert_eq!(
        (r.status, r.version, r.outcome),
        (TaskStatus::Cancelled, 4, None)
    );
    assert!(
        !ok(
            a.set_status("no-such-task", TaskStatus::Working, None, None)
                .await,
            "unknown"
        ),
        "set_status on an unknown id"
    );
}

/// The outcome is stored once with `Completed` (result) or `Failed` (error); a second
/// `finish` changes nothing.
pub async fn outcome_stored_once<F, Fut>(make: &F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn TaskStore>>,
{
    let (a, b) = (make().await, make().await);
    let alice = owner("alice");
    let done = created(&a, &alice, &instance("once")).await;
    let result = json!({"content": [{"type": "text", "text": "42"}], "isError": false});
    ask(&a, &done.id, &["q"]).await;
    assert!(ok(
        a.finish(
            &done.id,
            Outcome::Result(result.clone()),
            Some("done".into())
        )
        .await,
        "finish"
    ));
    let second = json!({"code": -32603, "message": "late"});
    assert!(
        !ok(
            b.finish(&done.id, Outcome::Error(second.clone()), None)
                .await,
            "finish again"
        ),
        "a second finish must be refused"
    );
    let r = found(b.get(&done.id, &alice).await, "get");
    assert_eq!(r.status, TaskStatus::Completed);
    assert_eq!(r.outcome, Some(Outcome::Result(result)));
    assert_eq!(r.status_message.as_deref(), Some("done"));
    assert_eq!(r.input_requests, None, "finish clears the input requests");
    assert_eq!(r.version, 3);

    let failed = created(&a, &alice, &instance("once")).await;
    assert!(ok(
        a.finish(&failed.id, Outcome::Error(second.clone()), None)
            .await,
        "finish error"
    ));
    let r = found(b.get(&failed.id, &alice).await, "get");
    assert_eq!(r.status, TaskStatus::Failed);
    assert_eq!(r.outcome, Some(Outcome::Error(second)));
    assert!(!ok(
        a.finish(&failed.id, Outcome::Result(json!({})), None).await,
        "finish after failed"
    ));
}

/// A cancel through handle B reaches a worker waiting on handle A; the task stays
/// running (its worker decides) while its lease is live. Returns the latency.
pub async fn cancel_reaches_worker<F, Fut>(make: &F) -> Duration
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn TaskStore>>,
{
    let (a, b) = (make().await, make().await);
    let alice = owner("alice");
    let task = created(&a, &alice, &instance("cancel")).await;
    let waiter = watch(&a, &task.id, task.version);
    tokio::time::sleep(Duration::from_millis(50)).await; // the worker is waiting
    let sent = Instant::now();
    assert!(ok(b.request_cancel(&task.id, &alice).await, "cancel"));
    let (record, seen) = arrival(waiter).await;
    let latency = seen.saturating_duration_since(sent);
    assert!(
        record.cancel_requested,
        "the worker sees the cancel request"
    );
    assert_eq!(record.status, TaskStatus::Working, "a live worker decides");
    assert_eq!(record.version, task.version + 1);
    assert!(
        ok(b.request_cancel(&task.id, &alice).await, "cancel again"),
        "a repeated cancel is acknowledged"
    );
    assert_eq!(
        found(a.get(&task.id, &alice).await, "get").version,
        task.version + 1
    );
    latency
}

/// Answers through handle B reach a worker waiting on handle A; only outstanding keys are
/// kept, partial and repeated answers are accepted, `take` removes them. Returns the
/// latency of the first answer.
pub async fn answers_reach_worker<F, Fut>(make: &F) -> Duration
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn TaskStore>>,
{
    let (a, b) = (make().await, make().await);
    let alice = owner("alice");
    let task = created(&a, &alice, &instance("answers")).await;
    let id = task.id.as_str();
    let version = ask(&a, id, &["name", "confirm"]).await;
    let waiter = watch(&a, id, version);
    tokio::time::sleep(Duration::from_millis(50)).await;
    let sent = Instant::now();
    let partial = object(json!({"name": {"action": "accept"}, "unasked": 1}));
    assert!(ok(
        b.add_input_responses(id, &alice, partial).await,
        "answer"
    ));
    let (record, seen) = arrival(waiter).await;
    let latency = seen.saturating_duration_since(sent);
    assert_eq!(record.version, version + 1, "an answer is a change");
    let taken = ok(a.take_input_responses(id).await, "take");
    assert_eq!(
        taken,
        object(json!({"name": {"action": "accept"}})),
        "only asked keys"
    );
    assert!(ok(a.take_input_responses(id).await, "take again").is_empty());
    let again = object(json!({"confirm": false}));
    assert!(ok(b.add_input_responses(id, &alice, again).await, "answer"));
    let again = object(json!({"confirm": true}));
    assert!(ok(b.add_input_responses(id, &alice, again).await, "repeat"));
    let taken = ok(a.take_input_responses(id).await, "take");
    assert_eq!(
        taken,
        object(json!({"confirm": true})),
        "a repeated key overwrites"
    );
    assert!(ok(
        a.set_status(id, TaskStatus::Working, None, None).await,
        "working"
    ));
    let before = found(a.get(id, &alice).await, "get").version;
    let late = object(json!({"name": "late"}));
    assert!(
        ok(b.add_input_responses(id, &alice, late).await, "late answer"),
        "an answer to a task that no longer asks is acknowledged"
    );
    assert!(
        ok(a.take_input_responses(id).await, "take").is_empty(),
        "and dropped"
    );
    assert_eq!(found(a.get(id, &alice).await, "get").version, before);
    latency
}

/// `wait_change` returns the unchanged record after its timeout, at once when the
/// version is already newer, and `None` for an unknown id.
pub async fn wait_change_times_out<F, Fut>(make: &F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn TaskStore>>,
{
    let a = make().await;
    let task = created(&a, &owner("alice"), &instance("wait")).await;
    let start = Instant::now();
    let r = found(
        a.wait_change(&task.id, task.version, Duration::from_millis(300))
            .await,
        "wait",
    );
    let waited = start.elapsed();
    assert_eq!(r.version, task.version);
    assert!(
        waited >= Duration::from_millis(250),
        "returned early: {waited:?}"
    );
    assert!(waited < PATIENCE, "overslept: {waited:?}");
    let start = Instant::now();
    let r = found(a.wait_change(&task.id, 0, PATIENCE).await, "wait");
    assert_eq!(r.version, task.version);
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "an older version returns at once"
    );
    let gone = ok(
        a.wait_change("no-such-task", 0, Duration::from_millis(50))
            .await,
        "wait unknown",
    );
    assert_eq!(gone, None);
}

/// A task past `created_at + ttl` is unknown to its owner and deleted by `sweep`.
pub async fn ttl_expires<F, Fut>(make: &F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn TaskStore>>,
{
    let (a, b) = (make().await, make().await);
    let alice = owner("alice");
    let mut task = new_task(&alice, &instance("ttl"));
    // Long enough that a loaded CI machine reads it before it expires.
    task.ttl_ms = Some(1_000);
    let short = ok(a.create(task).await, "create");
    let mut task = new_task(&alice, &instance("ttl"));
    task.ttl_ms = Some(3_600_000);
    let long = ok(a.create(task).await, "create");
    assert!(
        ok(b.get(&short.id, &alice).await, "get").is_some(),
        "not yet expired"
    );
    tokio::time::sleep(Duration::from_millis(1_300)).await;
    assert_eq!(ok(b.get(&short.id, &alice).await, "get"), None, "expired");
    assert!(
        !ok(b.request_cancel(&short.id, &alice).await, "cancel"),
        "an expired task is unknown"
    );
    assert!(
        ok(b.sweep().await, "sweep") >= 1,
        "sweep deletes the expired task"
    );
    assert_eq!(
        ok(
            a.wait_change(&short.id, 0, Duration::from_millis(50)).await,
            "wait"
        ),
        None,
        "deleted"
    );
    assert!(
        ok(b.get(&long.id, &alice).await, "get").is_some(),
        "the other is kept"
    );
}

/// A running task whose lease ran out becomes `Failed` with [`lease_lost_error`] on
/// `sweep`; a renewed lease keeps it; only the lease holder renews; a cancel of a task
/// without a live lease cancels it at once.
pub async fn lease_expiry_fails_task<F, Fut>(make: &F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn TaskStore>>,
{
    let (a, b) = (make().await, make().await);
    let alice = owner("alice");
    let worker = instance("lease");
    let short = |_: ()| {
        let mut t = new_task(&alice, &worker);
        t.lease = Duration::from_millis(100);
        t
    };
    let dying = ok(a.create(short(())).await, "create");
    let renewed = ok(a.create(short(())).await, "create");
    let orphan = ok(a.create(short(())).await, "create");
    let done = ok(a.create(short(())).await, "create");
    ask(&a, &dying.id, &["q"]).await;
    assert!(ok(
        a.finish(&done.id, Outcome::Result(json!({})), None).await,
        "finish"
    ));
    assert!(ok(a.renew_lease(&renewed.id, &worker, LIVE).await, "renew"));
    assert!(
        !ok(
            b.renew_lease(&renewed.id, "someone-else", LIVE).await,
            "renew other"
        ),
        "only the lease holder renews"
    );
    assert!(
        !ok(a.renew_lease(&done.id, &worker, LIVE).await, "renew done"),
        "terminal"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    let waiter = watch(
        &a,
        &dying.id,
        found(a.get(&dying.id, &alice).await, "get").version,
    );
    assert!(ok(
        b.request_cancel(&orphan.id, &alice).await,
        "cancel orphan"
    ));
    let r = found(b.get(&orphan.id, &alice).await, "get");
    assert_eq!(
        r.status,
        TaskStatus::Cancelled,
        "no live worker: cancelled at once"
    );
    assert!(ok(b.sweep().await, "sweep") >= 1);
    let r = found(b.get(&dying.id, &alice).await, "get");
    assert_eq!(r.status, TaskStatus::Failed);
    assert_eq!(r.status_message.as_deref(), Some(LEASE_LOST_MESSAGE));
    assert_eq!(r.outcome, Some(Outcome::Error(lease_lost_error())));
    assert_eq!(r.input_requests, None);
    let (seen, _) = arrival(waiter).await;
    assert_eq!(seen.status, TaskStatus::Failed, "watchers see the failure");
    let r = found(b.get(&renewed.id, &alice).await, "get");
    assert_eq!(
        r.status,
        TaskStatus::Working,
        "a renewed lease keeps the task"
    );
    let r = found(b.get(&done.id, &alice).await, "get");
    assert_eq!(
        r.status,
        TaskStatus::Completed,
        "a finished task is left alone"
    );
}

/// `recover(instance)` on a new handle fails the running tasks of a previous run of the
/// same instance id, and nothing else.
pub async fn recover_fails_previous_run<F, Fut>(make: &F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn TaskStore>>,
{
    let a = make().await;
    let alice = owner("alice");
    let me = instance("recover");
    let other = instance("recover-other");
    let working = created(&a, &alice, &me).await;
    let asking = created(&a, &alice, &me).await;
    ask(&a, &asking.id, &["q"]).await;
    let done = created(&a, &alice, &me).await;
    assert!(ok(
        a.finish(&done.id, Outcome::Result(json!({})), None).await,
        "finish"
    ));
    let elsewhere = created(&a, &alice, &other).await;
    drop(a);
    let restarted = make().await;
    assert_eq!(
        ok(restarted.recover(&me).await, "recover"),
        2,
        "the two running tasks"
    );
    for id in [&working.id, &asking.id] {
        let r = found(restarted.get(id, &alice).await, "get");
        assert_eq!(r.status, TaskStatus::Failed);
        assert_eq!(r.status_message.as_deref(), Some(LEASE_LOST_MESSAGE));
        assert_eq!(r.outcome, Some(Outcome::Error(lease_lost_error())));
    }
    let r = found(restarted.get(&done.id, &alice).await, "get");
    assert_eq!(r.status, TaskStatus::Completed);
    let r = found(restarted.get(&elsewhere.id, &alice).await, "get");
    assert_eq!(
        r.status,
        TaskStatus::Working,
        "another instance's task is left alone"
    );
    assert_eq!(ok(restarted.recover(&me).await, "recover again"), 0);
}

// --- helpers --------------------------------------------------------------------------

fn ok<T>(r: Result<T, StoreError>, what: &str) -> T {
    r.unwrap_or_else(|e| panic!("{what}: {e}"))
}

fn found(r: Result<Option<TaskRecord>, StoreError>, what: &str) -> TaskRecord {
    ok(r, what).unwrap_or_else(|| panic!("{what}: the task is missing"))
}

fn object(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        other => panic!("not an object: {other}"),
    }
}

/// `create` refuses a task past its owner's limit of live tasks (other owners are not
/// held to it; expired tasks do not count) and past the store's total, with
/// `LimitReached` and nothing stored.
pub async fn limits_refuse_past_the_caps<F, Fut>(make: &F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn TaskStore>>,
{
    let store = make().await;
    let (carol, dave) = (
        Owner::new(unique("carol"), "contract"),
        Owner::new(unique("dave"), "contract"),
    );
    let worker = instance("limits");
    let limited = |owner: &Owner, per_owner: Option<u64>, total: Option<u64>| {
        let mut task = new_task(owner, &worker);
        task.limits = TaskLimits { per_owner, total };
        task
    };
    // Two that expire at once, then three live ones: the expired ones do not count.
    for _ in 0..2 {
        let mut task = limited(&carol, Some(3), None);
        task.ttl_ms = Some(1);
        ok(store.create(task).await, "create (expiring)");
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    for _ in 0..3 {
        ok(store.create(limited(&carol, Some(3), None)).await, "create");
    }
    let refused = limited(&carol, Some(3), None);
    let id = refused.id.clone();
    match store.create(refused).await {
        Err(StoreError::LimitReached(why)) => assert!(why.contains('3'), "{why}"),
        other => panic!("a fourth live task of one owner: {other:?}"),
    }
    assert!(
        ok(store.get(&id, &carol).await, "get").is_none(),
        "a refused task is not stored"
    );
    ok(
        store.create(limited(&dave, Some(3), None)).await,
        "another owner's task",
    );
    match store.create(limited(&dave, None, Some(0))).await {
        Err(StoreError::LimitReached(_)) => {}
        other => panic!("past the total: {other:?}"),
    }
}

fn owner(subject: &str) -> Owner {
    Owner::new(subject, "contract")
}

/// A unique suffix: the clock, this process and a counter (ids must not repeat across
/// runs on a persistent database).
fn unique(prefix: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("{prefix}-{nanos:x}-{:x}-{n}", std::process::id())
}

fn instance(name: &str) -> String {
    unique(&format!("contract-{name}"))
}

fn new_task(owner: &Owner, instance: &str) -> NewTask {
    NewTask {
        id: unique("task"),
        owner: owner.clone(),
        ttl_ms: None,
        poll_interval_ms: None,
        status_message: None,
        instance: instance.to_owned(),
        lease: LIVE,
        limits: TaskLimits::default(),
    }
}

async fn created(store: &Arc<dyn TaskStore>, owner: &Owner, instance: &str) -> TaskRecord {
    ok(store.create(new_task(owner, instance)).await, "create")
}

/// Puts the task in `InputRequired` asking `keys`; its new version.
async fn ask(store: &Arc<dyn TaskStore>, id: &str, keys: &[&str]) -> u64 {
    let requests: Map<String, Value> = keys
        .iter()
        .map(|k| ((*k).to_owned(), json!({"method": "elicitation/create"})))
        .collect();
    assert!(ok(
        store
            .set_status(id, TaskStatus::InputRequired, None, Some(requests))
            .await,
        "set input_required"
    ));
    found(store.wait_change(id, 0, Duration::ZERO).await, "read").version
}

type Arrival = tokio::task::JoinHandle<(Result<Option<TaskRecord>, StoreError>, Instant)>;

/// A worker waiting for a change newer than `after` (on its own task).
fn watch(store: &Arc<dyn TaskStore>, id: &str, after: u64) -> Arrival {
    let (store, id) = (Arc::clone(store), id.to_owned());
    tokio::spawn(async move {
        let r = store.wait_change(&id, after, PATIENCE).await;
        (r, Instant::now())
    })
}

/// The change the waiter saw, and when; panics if none came within [`PATIENCE`].
async fn arrival(waiter: Arrival) -> (TaskRecord, Instant) {
    let (r, at) = waiter
        .await
        .unwrap_or_else(|e| panic!("the waiting worker panicked: {e}"));
    let record = found(r, "wait_change");
    (record, at)
}
