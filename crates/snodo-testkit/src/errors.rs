//! One set of error assertions: the JSON-RPC code, a fragment of the message, and the
//! HTTP status each revision gives the error.

use serde_json::Value;

use crate::Revision;
use crate::http::Reply;
use crate::schema::assert_valid;

/// Asserts that message `m` is an error with `code` answering `id`; returns the error
/// object.
pub fn assert_error(m: &Value, id: &Value, code: i64) -> Value {
    assert_eq!(&m["id"], id, "{m}");
    assert_eq!(m["error"]["code"], code, "{m}");
    assert!(m.get("result").is_none(), "an error and a result: {m}");
    m["error"].clone()
}

/// Asserts that `error` (an error object) has a message containing `fragment`.
pub fn assert_says(error: &Value, fragment: &str) {
    let message = error["message"]
        .as_str()
        .unwrap_or_else(|| panic!("an error without a message: {error}"));
    assert!(
        message.contains(fragment),
        "the message {message:?} does not say {fragment:?}: {error}"
    );
}

/// Asserts an HTTP answer that refuses with `status`: a JSON body, an error with `code`
/// answering `id`. Returns the error object.
pub fn assert_refused(r: &Reply, status: u16, code: i64, id: &Value) -> Value {
    assert_eq!(r.status, status, "{}", r.text());
    assert_eq!(
        r.header("content-type"),
        Some("application/json"),
        "{}",
        r.text()
    );
    assert_error(&r.json(), id, code)
}

/// Asserts the error answering a request of `method` in `revision`: the status the
/// revision gives `code` ([`Revision::status_of`]: 200 on the initialize-era revisions,
/// where errors travel in band), a JSON body, the request `id`, `code`, and a body valid
/// for the revision's schema. Returns the error object.
pub fn assert_http_error(
    r: &Reply,
    revision: Revision,
    method: &str,
    id: &Value,
    code: i64,
) -> Value {
    let what = format!("{revision} {method}");
    assert_eq!(r.status, revision.status_of(code), "{what}: {}", r.text());
    assert_eq!(r.header("content-type"), Some("application/json"), "{what}");
    let m = r.json();
    assert_eq!(m["id"], *id, "{what}: {m}");
    assert_eq!(m["error"]["code"], code, "{what}: {m}");
    assert!(m.get("result").is_none(), "{what}: {m}");
    assert_valid(revision.version(), method, r);
    m["error"].clone()
}
