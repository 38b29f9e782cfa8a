//! The JSON-RPC 2.0 envelope: request ids, the borrowed incoming message, and the
//! serialisation of outgoing responses and notifications.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use bytes::Bytes;
use serde::de::{Deserialize, Deserializer};
use serde::ser::{Serialize, Serializer};
use serde_json::value::RawValue;

use super::error::{ErrorCode, RpcError};

/// Longest string request id accepted, in bytes.
pub const MAX_STRING_ID_LEN: usize = 256;

/// A JSON-RPC request id: a string or an integer, never `null`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RequestId {
    /// An integer id.
    Number(i64),
    /// A string id.
    String(Arc<str>),
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Number(n) => write!(f, "{n}"),
            Self::String(s) => f.write_str(s),
        }
    }
}

impl Serialize for RequestId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Number(n) => s.serialize_i64(*n),
            Self::String(v) => s.serialize_str(v),
        }
    }
}

impl<'de> Deserialize<'de> for RequestId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(serde::Deserialize)]
        #[serde(untagged)]
        enum Repr<'a> {
            Number(i64),
            #[serde(borrow)]
            String(Cow<'a, str>),
        }
        Ok(match Repr::deserialize(d)? {
            Repr::Number(n) => Self::Number(n),
            Repr::String(s) => Self::String(Arc::from(s.as_ref())),
        })
    }
}

/// The envelope fields of one incoming JSON-RPC message, borrowed from the body.
///
/// Present-but-`null` members are kept (`Some("null")`) so that `"id": null` is not
/// mistaken for a notification.
#[derive(serde::Deserialize)]
#[serde(bound(deserialize = "P: Deserialize<'de>, M: Deserialize<'de>"))]
struct RawEnvelope<'a, P, M> {
    #[serde(default, deserialize_with = "present_as")]
    jsonrpc: Option<M>,
    #[serde(default, deserialize_with = "present_as")]
    id: Option<M>,
    #[serde(default, deserialize_with = "present_as")]
    method: Option<M>,
    #[serde(default, deserialize_with = "present_as")]
    params: Option<P>,
    #[serde(default, borrow, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    error: Option<&'a RawValue>,
}

fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

/// How `jsonrpc`, `id` and `method` are read: kept raw and read again (the reference
/// reading, whose refusals are the wire's), or read in the scan itself.
pub trait EnvelopeMember<'a>: Deserialize<'a> + Sized {
    /// Whether this is the `jsonrpc` tag `"2.0"`, spelled exactly so.
    fn is_version_2(&self) -> bool;
    /// The method name, if this is a string.
    fn into_method(self) -> Option<Cow<'a, str>>;
    /// The request id.
    fn into_id(self) -> Result<RequestId, RpcError>;
}

impl<'a> EnvelopeMember<'a> for &'a RawValue {
    fn is_version_2(&self) -> bool {
        self.get() == "\"2.0\""
    }
    fn into_method(self) -> Option<Cow<'a, str>> {
        serde_json::from_str(self.get()).ok()
    }
    fn into_id(self) -> Result<RequestId, RpcError> {
        parse_id(self)
    }
}

impl<'a> EnvelopeMember<'a> for Member<'a> {
    fn is_version_2(&self) -> bool {
        // An escaped spelling is decoded into an owned string: only the literal text counts.
        matches!(self, Member::Str(Cow::Borrowed("2.0")))
    }
    fn into_method(self) -> Option<Cow<'a, str>> {
        match self {
            Member::Str(s) => Some(s),
            _ => None,
        }
    }
    fn into_id(self) -> Result<RequestId, RpcError> {
        member_id(self)
    }
}

/// An envelope member read in the scan itself (no raw capture read again): a string
/// (borrowed when it has no escapes), an integer, or what else it was. Strings are
/// checked more strictly than the raw reading checks them (a lone surrogate escape fails
/// the scan): a message this reading refuses is read again raw.
#[doc(hidden)]
pub enum Member<'a> {
    Str(Cow<'a, str>),
    Int(i64),
    /// A number that is not a 64-bit integer.
    OtherNumber,
    /// `null`, a boolean, an array or an object.
    Other,
}

impl<'de> Deserialize<'de> for Member<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(MemberVisitor)
    }
}

struct MemberVisitor;

impl<'de> serde::de::Visitor<'de> for MemberVisitor {
    type Value = Member<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_borrowed_str<E: serde::de::Error>(self, v: &'de str) -> Result<Member<'de>, E> {
        Ok(Member::Str(Cow::Borrowed(v)))
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Member<'de>, E> {
        Ok(Member::Str(Cow::Owned(v.to_owned())))
    }
    fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Member<'de>, E> {
        Ok(Member::Str(Cow::Owned(v)))
    }
    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Member<'de>, E> {
        Ok(Member::Int(v))
    }
    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Member<'de>, E> {
        Ok(i64::try_from(v).map_or(Member::OtherNumber, Member::Int))
    }
    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<Member<'de>, E> {
        Ok(Member::OtherNumber)
    }
    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<Member<'de>, E> {
        Ok(Member::Other)
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<Member<'de>, E> {
        Ok(Member::Other)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Member<'de>, A::Error> {
        while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
        Ok(Member::Other)
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Member<'de>, A::Error> {
        while map
            .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
            .is_some()
        {}
        Ok(Member::Other)
    }
}

fn present_as<'de, D: Deserializer<'de>, P: Deserialize<'de>>(d: D) -> Result<Option<P>, D::Error> {
    P::deserialize(d).map(Some)
}

/// How the `params` member of a message is read: kept raw, or parsed during the
/// envelope scan (one pass over the body instead of two).
pub trait Params<'a>: Deserialize<'a> {
    /// How the other envelope members are read alongside.
    type Member: EnvelopeMember<'a>;
    /// Whether `params` is a JSON object (anything else is `-32602`).
    fn is_object(&self) -> bool;
}

impl<'a> Params<'a> for &'a RawValue {
    type Member = &'a RawValue;
    fn is_object(&self) -> bool {
        self.get().starts_with('{')
    }
}

/// What kind of message arrived.
#[derive(Debug)]
pub enum Incoming<'a, P = &'a RawValue> {
    /// A request: it has an id and expects exactly one response.
    Request {
        /// The request id.
        id: RequestId,
        /// The method name.
        method: Cow<'a, str>,
        /// The `params` member, if any (raw by default).
        params: Option<P>,
    },
    /// A notification: no id, no response.
    Notification {
        /// The method name.
        method: Cow<'a, str>,
        /// The `params` member, if any (raw by default).
        params: Option<P>,
    },
    /// A response from the client to a request the server sent (initialize era only).
    Response {
        /// The id of the server's request being answered.
        id: Option<RequestId>,
        /// The raw `result` member, when the client succeeded.
        result: Option<&'a RawValue>,
        /// The raw `error` member, when the client failed.
        error: Option<&'a RawValue>,
    },
}

/// A message that could not be read: the error, and the id of the request when it
/// could be read (the answer echoes it).
#[derive(Debug)]
pub struct ReadError {
    /// The request's id, when it could be read.
    pub id: Option<RequestId>,
    /// Why the message is refused.
    pub error: RpcError,
}

/// An error found before the id was read.
impl From<RpcError> for ReadError {
    fn from(error: RpcError) -> Self {
        Self { id: None, error }
    }
}

impl<'a> Incoming<'a> {
    /// Parses one JSON-RPC message. Syntax errors are `-32700`; a well-formed JSON value
    /// that is not a single JSON-RPC message (a batch array, a wrong `jsonrpc` tag, a
    /// bad id) is `-32600`, with the id echoed when it could be read.
    pub fn parse(body: &'a [u8]) -> Result<Self, ReadError> {
        Self::parse_as(body)
    }
}

impl<'a, P: Params<'a>> Incoming<'a, P> {
    /// [`parse`](Incoming::parse), reading `params` as `P` in the same pass.
    pub fn parse_as(body: &'a [u8]) -> Result<Self, ReadError> {
        // Only a JSON object is a message: serde would also accept the positional
        // (array) form of the envelope, which JSON-RPC does not have.
        match body.iter().find(|b| !b.is_ascii_whitespace()) {
            Some(b'{') => {}
            Some(b'[') if serde_json::from_slice::<serde::de::IgnoredAny>(body).is_ok() => {
                return Err(RpcError::new(
                    ErrorCode::INVALID_REQUEST,
                    "Invalid Request: the body must be a single JSON-RPC 2.0 object (batches are not supported)",
                )
                .into());
            }
            Some(_) if serde_json::from_slice::<serde::de::IgnoredAny>(body).is_ok() => {
                return Err(RpcError::new(
                    ErrorCode::INVALID_REQUEST,
                    "Invalid Request: the body must be a JSON object",
                )
                .into());
            }
            _ => return Err(RpcError::new(ErrorCode::PARSE_ERROR, "Parse error").into()),
        }
        // One UTF-8 check of the whole body, instead of one per string while parsing.
        let text = std::str::from_utf8(body)
            .map_err(|_| RpcError::new(ErrorCode::PARSE_ERROR, "Parse error"))?;
        let env: RawEnvelope<'a, P, P::Member> = serde_json::from_str(text).map_err(|e| match e.classify() {
            serde_json::error::Category::Data => RpcError::new(
                ErrorCode::INVALID_REQUEST,
                "Invalid Request: the body must be a single JSON-RPC 2.0 object (batches are not supported)",
            ),
            _ => RpcError::new(ErrorCode::PARSE_ERROR, "Parse error"),
        })?;
        // Read the id first so that later envelope errors can echo it.
        let id = match env.id {
            None => None,
            Some(raw) => Some(raw.into_id()?),
        };
        let with_id = |error: RpcError| ReadError {
            id: id.clone(),
            error,
        };
        if !env
            .jsonrpc
            .as_ref()
            .is_some_and(EnvelopeMember::is_version_2)
        {
            return Err(with_id(RpcError::new(
                ErrorCode::INVALID_REQUEST,
                "Invalid Request: jsonrpc must be \"2.0\"",
            )));
        }
        let Some(method) = env.method else {
            if env.result.is_some() || env.error.is_some() {
                return Ok(Self::Response {
                    id,
                    result: env.result,
                    error: env.error,
                });
            }
            return Err(with_id(RpcError::new(
                ErrorCode::INVALID_REQUEST,
                "Invalid Request: missing method",
            )));
        };
        let Some(method) = method.into_method() else {
            return Err(with_id(RpcError::new(
                ErrorCode::INVALID_REQUEST,
                "Invalid Request: method must be a string",
            )));
        };
        if let Some(p) = &env.params {
            if !p.is_object() {
                return Err(with_id(RpcError::new(
                    ErrorCode::INVALID_PARAMS,
                    "Invalid params: params must be an object",
                )));
            }
        }
        Ok(match id {
            Some(id) => Self::Request {
                id,
                method,
                params: env.params,
            },
            None => Self::Notification {
                method,
                params: env.params,
            },
        })
    }
}

fn parse_id(raw: &RawValue) -> Result<RequestId, RpcError> {
    let invalid = |msg: &'static str| RpcError::new(ErrorCode::INVALID_REQUEST, msg);
    let text = raw.get();
    match text.as_bytes().first() {
        Some(b'"') => {
            let s: Cow<'_, str> =
                serde_json::from_str(text).map_err(|_| invalid("Invalid Request: bad id"))?;
            if s.len() > MAX_STRING_ID_LEN {
                return Err(invalid("Invalid Request: string id longer than 256 bytes"));
            }
            Ok(RequestId::String(Arc::from(s.as_ref())))
        }
        Some(b'-' | b'0'..=b'9') => text
            .parse::<i64>()
            .map(RequestId::Number)
            .map_err(|_| invalid("Invalid Request: id must be a string or a 64-bit integer")),
        _ => Err(invalid(
            "Invalid Request: id must be a string or an integer",
        )),
    }
}

/// [`parse_id`] of a member read in the scan: the same ids, the same refusals.
fn member_id(raw: Member<'_>) -> Result<RequestId, RpcError> {
    let invalid = |msg: &'static str| RpcError::new(ErrorCode::INVALID_REQUEST, msg);
    match raw {
        Member::Str(s) => {
            if s.len() > MAX_STRING_ID_LEN {
                return Err(invalid("Invalid Request: string id longer than 256 bytes"));
            }
            Ok(RequestId::String(Arc::from(s.as_ref())))
        }
        Member::Int(n) => Ok(RequestId::Number(n)),
        Member::OtherNumber => Err(invalid(
            "Invalid Request: id must be a string or a 64-bit integer",
        )),
        Member::Other => Err(invalid(
            "Invalid Request: id must be a string or an integer",
        )),
    }
}

/// Serialises `{"jsonrpc":"2.0","id":…,"result":…}` around an already-serialised result.
#[must_use]
pub fn result_message(id: &RequestId, result_json: &str) -> Bytes {
    let mut out = Vec::with_capacity(result_json.len() + 48);
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    write_id(&mut out, id);
    out.extend_from_slice(b",\"result\":");
    out.extend_from_slice(result_json.as_bytes());
    out.push(b'}');
    Bytes::from(out)
}

/// Serialises an error response. `id` is `null` when the request's id could not be read.
#[must_use]
pub fn error_message(id: Option<&RequestId>, error: &RpcError) -> Bytes {
    let mut out = Vec::with_capacity(96);
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    match id {
        Some(id) => write_id(&mut out, id),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b",\"error\":");
    // An ErrorObject always serialises: it holds only strings, integers and JSON values.
    let _ = serde_json::to_writer(&mut out, &error.object());
    out.push(b'}');
    Bytes::from(out)
}

/// Serialises a notification `{"jsonrpc":"2.0","method":…,"params":…}`.
#[must_use]
pub fn notification_message(method: &str, params: &impl Serialize) -> Bytes {
    #[derive(serde::Serialize)]
    struct Note<'a, P> {
        jsonrpc: &'static str,
        method: &'a str,
        params: &'a P,
    }
    Bytes::from(
        serde_json::to_vec(&Note {
            jsonrpc: "2.0",
            method,
            params,
        })
        .unwrap_or_default(),
    )
}

/// Serialises a server-to-client request (initialize-era dialects only).
#[must_use]
pub fn request_message(id: &RequestId, method: &str, params: &impl Serialize) -> Bytes {
    #[derive(serde::Serialize)]
    struct Req<'a, P> {
        jsonrpc: &'static str,
        id: &'a RequestId,
        method: &'a str,
        params: &'a P,
    }
    Bytes::from(
        serde_json::to_vec(&Req {
            jsonrpc: "2.0",
            id,
            method,
            params,
        })
        .unwrap_or_default(),
    )
}

pub(crate) fn write_id(out: &mut Vec<u8>, id: &RequestId) {
    match id {
        // serde_json writes integers with `itoa`: ~200 instructions fewer than `write!`,
        // which goes through `core::fmt`.
        RequestId::Number(n) => {
            let _ = serde_json::to_writer(&mut *out, n);
        }
        RequestId::String(s) => {
            let _ = serde_json::to_writer(&mut *out, s.as_ref());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(r: Result<Incoming<'_>, ReadError>) -> i64 {
        match r {
            Err(e) => e.error.code().0,
            Ok(_) => 0,
        }
    }

    #[test]
    fn parses_requests_notifications_and_responses() {
        let r = Incoming::parse(br#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#);
        assert!(matches!(
            r,
            Ok(Incoming::Request {
                id: RequestId::Number(7),
                ..
            })
        ));
        let r = Incoming::parse(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        assert!(matches!(r, Ok(Incoming::Notification { .. })));
        let r = Incoming::parse(br#"{"jsonrpc":"2.0","id":"a","result":{}}"#);
        assert!(matches!(r, Ok(Incoming::Response { .. })));
    }

    #[test]
    fn rejects_malformed_envelopes() {
        assert_eq!(code(Incoming::parse(b"{not-json")), -32700);
        assert_eq!(code(Incoming::parse(b"")), -32700);
        assert_eq!(
            code(Incoming::parse(
                br#"[{"jsonrpc":"2.0","id":1,"method":"x"}]"#
            )),
            -32600
        );
        assert_eq!(
            code(Incoming::parse(br#"{"jsonrpc":"1.0","id":1,"method":"x"}"#)),
            -32600
        );
        assert_eq!(
            code(Incoming::parse(
                br#"{"jsonrpc":"2.0","id":null,"method":"x"}"#
            )),
            -32600
        );
        assert_eq!(
            code(Incoming::parse(
                br#"{"jsonrpc":"2.0","id":1.5,"method":"x"}"#
            )),
            -32600
        );
        assert_eq!(
            code(Incoming::parse(br#"{"jsonrpc":"2.0","id":1,"method":3}"#)),
            -32600
        );
        assert_eq!(
            code(Incoming::parse(
                br#"{"jsonrpc":"2.0","id":1,"method":"x","params":[]}"#
            )),
            -32602
        );
        let long = format!(
            r#"{{"jsonrpc":"2.0","id":"{}","method":"x"}}"#,
            "a".repeat(300)
        );
        assert_eq!(code(Incoming::parse(long.as_bytes())), -32600);
    }

    #[test]
    fn envelope_errors_echo_a_readable_id() {
        let Err(e) = Incoming::parse(br#"{"jsonrpc":"1.0","id":"x","method":"m"}"#) else {
            panic!("expected an error");
        };
        assert_eq!(e.id, Some(RequestId::String("x".into())));
    }

    #[test]
    fn serialises_messages() {
        let id = RequestId::String("a\"b".into());
        assert_eq!(
            &result_message(&id, "{}")[..],
            br#"{"jsonrpc":"2.0","id":"a\"b","result":{}}"#
        );
        let e = RpcError::new(ErrorCode::METHOD_NOT_FOUND, "Method not found");
        assert_eq!(
            &error_message(None, &e)[..],
            br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32601,"message":"Method not found"}}"#
        );
    }
}
