//! Tasks on the wire: `Task`, `DetailedTask`, `CreateTaskResult`, the extension's
//! identifier and its `-32021`.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value, json};

use super::store::{Outcome, StoreError, TaskRecord, TaskStatus};
use crate::protocol::RpcError;

/// The extension identifier, in `capabilities.extensions` and per-request
/// `clientCapabilities.extensions`.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// Whether a request's client capabilities declare the tasks extension.
pub(crate) fn declared(caps: Option<&Map<String, Value>>) -> bool {
    caps.and_then(|c| c.get("extensions"))
        .and_then(Value::as_object)
        .is_some_and(|e| e.contains_key(TASKS_EXTENSION))
}

/// `-32021` naming the tasks extension.
pub(crate) fn missing_extension() -> RpcError {
    RpcError::missing_client_capability(json!({ "extensions": { TASKS_EXTENSION: {} } }))
}

/// `-32602` for an unknown, expired or foreign task id (indistinguishable on purpose).
pub(crate) fn not_found() -> RpcError {
    RpcError::invalid_params("Failed to retrieve task: Task not found")
}

/// The error of a `tools/call` whose task could not be created: `-32603` (the extension
/// names no code for a refusal; the code range of implementations is closed), saying
/// why. A refusal past the task limits says so and is retryable:
/// `data: {"reason": "tasks", "retryable": true}`.
pub(crate) fn create_failed(e: &StoreError) -> RpcError {
    let error = RpcError::internal(format!("The task could not be created: {e}"));
    match e {
        StoreError::LimitReached(_) => error.with_data(json!({"reason": "tasks"})).retry_later(),
        _ => error,
    }
}

/// The `Task` members of a record.
fn task(r: &TaskRecord) -> Map<String, Value> {
    let mut out = Map::new();
    out.insert("taskId".into(), Value::String(r.id.clone()));
    out.insert("status".into(), Value::String(r.status.as_str().into()));
    if let Some(m) = &r.status_message {
        out.insert("statusMessage".into(), Value::String(m.clone()));
    }
    out.insert("createdAt".into(), Value::String(timestamp(r.created_at)));
    out.insert(
        "lastUpdatedAt".into(),
        Value::String(timestamp(r.updated_at)),
    );
    out.insert("ttlMs".into(), r.ttl_ms.map_or(Value::Null, Value::from));
    if let Some(p) = r.poll_interval_ms {
        out.insert("pollIntervalMs".into(), Value::from(p));
    }
    out
}

/// `CreateTaskResult`: the flat `Task` with `resultType: "task"`.
pub(crate) fn created(r: &TaskRecord) -> Map<String, Value> {
    let mut out = task(r);
    crate::runtime::envelopes::ResultType::Task.write(&mut out);
    out
}

/// `DetailedTask` (what `tasks/get` answers and `notifications/tasks` carries): the
/// `Task` plus `inputRequests`, `result` or `error` by status.
pub(crate) fn detailed(r: &TaskRecord) -> Map<String, Value> {
    let mut out = task(r);
    match (r.status, &r.outcome) {
        (TaskStatus::InputRequired, _) => {
            let requests = r.input_requests.clone().unwrap_or_default();
            out.insert("inputRequests".into(), Value::Object(requests));
        }
        (TaskStatus::Completed, Some(Outcome::Result(v))) => {
            out.insert("result".into(), v.clone());
        }
        (TaskStatus::Completed, _) => {
            out.insert("result".into(), json!({"content": []}));
        }
        (TaskStatus::Failed, Some(Outcome::Error(e))) => {
            out.insert("error".into(), e.clone());
        }
        (TaskStatus::Failed, _) => {
            out.insert(
                "error".into(),
                json!({"code": -32603, "message": "The task failed"}),
            );
        }
        (TaskStatus::Working | TaskStatus::Cancelled, _) => {}
    }
    out
}

/// The JSON-RPC error object of `e`.
pub(crate) fn error_object(e: &RpcError) -> Value {
    serde_json::to_value(e.object())
        .unwrap_or_else(|_| json!({"code": e.code().0, "message": e.message()}))
}

/// RFC 3339 / ISO 8601 in UTC with milliseconds: `2026-12-03T08:12:29.123Z`.
pub(crate) fn timestamp(t: SystemTime) -> String {
    let ms = t
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or_default();
    let ms = i64::try_from(ms).unwrap_or(i64::MAX);
    let (days, rest) = (ms.div_euclid(86_400_000), ms.rem_euclid(86_400_000));
    let (y, m, d) = civil(days);
    let (h, rest) = (rest / 3_600_000, rest % 3_600_000);
    let (min, rest) = (rest / 60_000, rest % 60_000);
    let (s, milli) = (rest / 1000, rest % 1000);
    format!("{y:04}-{m:02}-{d:02}T{h:02}:{min:02}:{s:02}.{milli:03}Z")
}

/// Days since 1970-01-01 to (year, month, day) in the proleptic Gregorian calendar
/// (H. Hinnant's `civil_from_days`).
fn civil(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn timestamps() {
        assert_eq!(timestamp(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let t = UNIX_EPOCH + Duration::from_millis(1_796_285_549_123);
        assert_eq!(timestamp(t), "2026-12-03T08:12:29.123Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(timestamp(leap), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn declared_extension() {
        let caps: Map<String, Value> =
            serde_json::from_value(json!({"extensions": {TASKS_EXTENSION: {}}}))
                .unwrap_or_default();
        assert!(declared(Some(&caps)));
        assert!(!declared(None));
        assert!(!declared(Some(&Map::new())));
    }
}
