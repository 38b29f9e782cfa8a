//! One stored task row as both databases return it, the values bound into queries, and
//! the conversions to and from [`TaskRecord`].

use std::time::{Duration, SystemTime};

use serde_json::{Map, Value};
use snodo::tasks::{Outcome, Owner, StoreError, TaskRecord, TaskStatus};
use sqlx::query::Query;
use sqlx::{ColumnIndex, Database, Decode, Encode, Row, Type};

/// The columns every read selects, in [`Raw`]'s order.
pub(crate) const COLUMNS: &str = "id, owner_subject, owner_scope, status, status_message, \
     created_at, updated_at, ttl_ms, poll_interval_ms, input_requests, outcome_kind, outcome, \
     cancel_requested, input_responses, version";

/// A value bound to a `$n` placeholder (the same spelling works on both databases).
#[derive(Debug, Clone)]
pub(crate) enum Arg {
    /// A text value or NULL.
    Text(Option<String>),
    /// An integer or NULL.
    Int(Option<i64>),
}

impl From<&str> for Arg {
    fn from(s: &str) -> Self {
        Self::Text(Some(s.to_owned()))
    }
}

impl From<String> for Arg {
    fn from(s: String) -> Self {
        Self::Text(Some(s))
    }
}

impl From<Option<String>> for Arg {
    fn from(s: Option<String>) -> Self {
        Self::Text(s)
    }
}

impl From<i64> for Arg {
    fn from(n: i64) -> Self {
        Self::Int(Some(n))
    }
}

impl From<Option<i64>> for Arg {
    fn from(n: Option<i64>) -> Self {
        Self::Int(n)
    }
}

/// Binds `args` in order.
pub(crate) fn bind<'q, DB>(
    mut query: Query<'q, DB, <DB as Database>::Arguments<'q>>,
    args: &'q [Arg],
) -> Query<'q, DB, <DB as Database>::Arguments<'q>>
where
    DB: Database,
    Option<&'q str>: Encode<'q, DB> + Type<DB>,
    Option<i64>: Encode<'q, DB> + Type<DB>,
{
    for arg in args {
        query = match arg {
            Arg::Text(s) => query.bind(s.as_deref()),
            Arg::Int(n) => query.bind(*n),
        };
    }
    query
}

/// A task row, undecoded JSON and integers as stored.
#[derive(Debug, Clone)]
pub(crate) struct Raw {
    pub(crate) id: String,
    pub(crate) owner_subject: String,
    pub(crate) owner_scope: String,
    pub(crate) status: String,
    pub(crate) status_message: Option<String>,
    pub(crate) created_at: i64,
    pub(crate) updated_at: i64,
    pub(crate) ttl_ms: Option<i64>,
    pub(crate) poll_interval_ms: Option<i64>,
    pub(crate) input_requests: Option<String>,
    pub(crate) outcome_kind: Option<String>,
    pub(crate) outcome: Option<String>,
    pub(crate) cancel_requested: bool,
    pub(crate) input_responses: String,
    pub(crate) version: i64,
}

/// Reads a row selected with [`COLUMNS`].
pub(crate) fn decode<R>(row: &R) -> Result<Raw, StoreError>
where
    R: Row,
    for<'r> String: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> Option<String>: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> i64: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> Option<i64>: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> bool: Decode<'r, R::Database> + Type<R::Database>,
    usize: ColumnIndex<R>,
{
    let bad = |e: sqlx::Error| StoreError::Corrupt(format!("task row: {e}"));
    Ok(Raw {
        id: row.try_get(0).map_err(bad)?,
        owner_subject: row.try_get(1).map_err(bad)?,
        owner_scope: row.try_get(2).map_err(bad)?,
        status: row.try_get(3).map_err(bad)?,
        status_message: row.try_get(4).map_err(bad)?,
        created_at: row.try_get(5).map_err(bad)?,
        updated_at: row.try_get(6).map_err(bad)?,
        ttl_ms: row.try_get(7).map_err(bad)?,
        poll_interval_ms: row.try_get(8).map_err(bad)?,
        input_requests: row.try_get(9).map_err(bad)?,
        outcome_kind: row.try_get(10).map_err(bad)?,
        outcome: row.try_get(11).map_err(bad)?,
        cancel_requested: row.try_get(12).map_err(bad)?,
        input_responses: row.try_get(13).map_err(bad)?,
        version: row.try_get(14).map_err(bad)?,
    })
}

impl Raw {
    /// The record the trait returns.
    pub(crate) fn record(&self) -> Result<TaskRecord, StoreError> {
        let status = TaskStatus::parse(&self.status)
            .ok_or_else(|| corrupt(&self.id, format!("unknown status {:?}", self.status)))?;
        let outcome = match (self.outcome_kind.as_deref(), &self.outcome) {
            (None, _) => None,
            (Some(kind), Some(json)) => {
                let value = parse_json(&self.id, json)?;
                Some(match kind {
                    "result" => Outcome::Result(value),
                    "error" => Outcome::Error(value),
                    other => return Err(corrupt(&self.id, format!("outcome kind {other:?}"))),
                })
            }
            (Some(_), None) => return Err(corrupt(&self.id, "outcome kind without value".into())),
        };
        let input_requests = match &self.input_requests {
            None => None,
            Some(json) => Some(parse_object(&self.id, json)?),
        };
        Ok(TaskRecord {
            id: self.id.clone(),
            owner: Owner::new(self.owner_subject.clone(), self.owner_scope.clone()),
            status,
            status_message: self.status_message.clone(),
            created_at: time(self.created_at),
            updated_at: time(self.updated_at),
            ttl_ms: self.ttl_ms.map(unsigned),
            poll_interval_ms: self.poll_interval_ms.map(unsigned),
            input_requests,
            outcome,
            cancel_requested: self.cancel_requested,
            version: unsigned(self.version),
        })
    }

    /// The answers received and not yet taken.
    pub(crate) fn responses(&self) -> Result<Map<String, Value>, StoreError> {
        parse_object(&self.id, &self.input_responses)
    }
}

/// The row form of an outcome: (kind, JSON text).
pub(crate) fn outcome_columns(outcome: &Outcome) -> (&'static str, String) {
    match outcome {
        Outcome::Result(v) => ("result", v.to_string()),
        Outcome::Error(v) => ("error", v.to_string()),
    }
}

/// Milliseconds as a bindable integer: durations past `i64::MAX` ms (292 million years)
/// are clamped, so `now + ms` in SQL cannot overflow either (bounded at ~100 years).
pub(crate) fn millis(ms: u64) -> i64 {
    const CAP: u64 = 100 * 365 * 24 * 3600 * 1000;
    i64::try_from(ms.min(CAP)).unwrap_or(i64::MAX)
}

/// A duration in (clamped) milliseconds.
pub(crate) fn duration_ms(d: Duration) -> i64 {
    millis(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn unsigned(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

fn time(ms: i64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_millis(unsigned(ms))
}

fn corrupt(id: &str, what: String) -> StoreError {
    StoreError::Corrupt(format!("task {id}: {what}"))
}

fn parse_json(id: &str, json: &str) -> Result<Value, StoreError> {
    serde_json::from_str(json).map_err(|e| corrupt(id, format!("bad JSON: {e}")))
}

fn parse_object(id: &str, json: &str) -> Result<Map<String, Value>, StoreError> {
    match parse_json(id, json)? {
        Value::Object(map) => Ok(map),
        _ => Err(corrupt(id, "expected a JSON object".into())),
    }
}
