//! Request `_meta`: the per-request version, client capabilities, progress token and
//! log level.

use std::sync::Arc;

use std::borrow::Cow;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::error::RpcError;
use super::jsonrpc::MAX_STRING_ID_LEN;

/// `_meta` key of the protocol version (2026-07-28).
pub const PROTOCOL_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key of the client capabilities (2026-07-28).
pub const CLIENT_CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key of the client implementation info (2026-07-28).
pub const CLIENT_INFO_KEY: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key of the per-request log level (2026-07-28).
pub const LOG_LEVEL_KEY: &str = "io.modelcontextprotocol/logLevel";
/// `_meta` key of the server info on results (2026-07-28).
pub const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";

/// A progress token: a string or an integer.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(untagged)]
pub enum ProgressToken {
    /// An integer token.
    Number(i64),
    /// A string token.
    String(Arc<str>),
}

/// Log severity, in RFC 5424 order (`Debug` lowest).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
#[allow(missing_docs)]
pub enum LogLevel {
    Debug,
    Info,
    Notice,
    Warning,
    Error,
    Critical,
    Alert,
    Emergency,
}

impl LogLevel {
    /// Parses a level name.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "debug" => Self::Debug,
            "info" => Self::Info,
            "notice" => Self::Notice,
            "warning" => Self::Warning,
            "error" => Self::Error,
            "critical" => Self::Critical,
            "alert" => Self::Alert,
            "emergency" => Self::Emergency,
            _ => return None,
        })
    }
}

/// The parsed `params._meta` of one request: read it through its accessors.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct RequestMeta {
    /// `io.modelcontextprotocol/protocolVersion`, when present: a revision snodo knows
    /// is borrowed from its dialect (nothing allocated per request), any other text owned.
    pub(crate) protocol_version: Option<Cow<'static, str>>,
    /// `io.modelcontextprotocol/clientCapabilities`, when present (always an object).
    pub(crate) client_capabilities: Option<Map<String, Value>>,
    /// `io.modelcontextprotocol/clientInfo`, when present: an object with string
    /// `name` and `version`, kept as JSON text (read it only if you need it).
    pub(crate) client_info: Option<Box<RawValue>>,
    /// `io.modelcontextprotocol/logLevel`, when present.
    pub(crate) log_level: Option<LogLevel>,
    /// `progressToken`, when present.
    pub(crate) progress_token: Option<ProgressToken>,
    /// Whether a `_meta` member was present at all.
    pub(crate) present: bool,
    /// Every other `_meta` entry (application keys, trace context, …).
    pub(crate) other: Map<String, Value>,
}

impl RequestMeta {
    /// `io.modelcontextprotocol/protocolVersion`, when present.
    ///
    /// ```
    /// let meta = snodo::protocol::RequestMeta::default();
    /// assert_eq!(meta.protocol_version(), None);
    /// assert!(!meta.is_present() && meta.other().is_empty());
    /// ```
    #[must_use]
    pub fn protocol_version(&self) -> Option<&str> {
        self.protocol_version.as_deref()
    }

    /// `io.modelcontextprotocol/clientCapabilities`, when present (always an object).
    #[must_use]
    pub fn client_capabilities(&self) -> Option<&Map<String, Value>> {
        self.client_capabilities.as_ref()
    }

    /// `io.modelcontextprotocol/clientInfo`, when present: an object with string
    /// `name` and `version`, as JSON text.
    #[must_use]
    pub fn client_info(&self) -> Option<&RawValue> {
        self.client_info.as_deref()
    }

    /// `io.modelcontextprotocol/logLevel`, when present.
    #[must_use]
    pub fn log_level(&self) -> Option<LogLevel> {
        self.log_level
    }

    /// `progressToken`, when present.
    #[must_use]
    pub fn progress_token(&self) -> Option<&ProgressToken> {
        self.progress_token.as_ref()
    }

    /// Whether a `_meta` member was present at all.
    #[must_use]
    pub fn is_present(&self) -> bool {
        self.present
    }

    /// Every other `_meta` entry (application keys, trace context, …).
    #[must_use]
    pub fn other(&self) -> &Map<String, Value> {
        &self.other
    }

    /// Parses a `_meta` value taken out of `params`, moving its members (the
    /// admission path reads `_meta` with [`MetaParse`] instead).
    #[cfg(test)]
    pub(crate) fn from_value(meta: Option<Value>) -> Result<Self, RpcError> {
        let Some(meta) = meta else {
            return Ok(Self::default());
        };
        let Value::Object(map) = meta else {
            return Err(RpcError::invalid_params("_meta must be an object"));
        };
        let mut out = Self {
            present: true,
            ..Self::default()
        };
        for (key, value) in map {
            out.accept(key, value)?;
        }
        Ok(out)
    }

    /// Takes one `_meta` member: a known key is validated into its field, any other
    /// key is kept in [`other`](Self::other).
    fn accept(
        &mut self,
        key: impl AsRef<str> + Into<String>,
        value: Value,
    ) -> Result<(), RpcError> {
        match key.as_ref() {
            PROTOCOL_VERSION_KEY => {
                let Value::String(s) = value else {
                    return Err(RpcError::invalid_params(format!(
                        "{PROTOCOL_VERSION_KEY} must be a string"
                    )));
                };
                self.protocol_version = Some(version_text(Cow::Owned(s)));
            }
            CLIENT_CAPABILITIES_KEY => {
                let Value::Object(caps) = value else {
                    return Err(RpcError::invalid_params(format!(
                        "{CLIENT_CAPABILITIES_KEY} must be an object"
                    )));
                };
                self.client_capabilities = Some(caps);
            }
            CLIENT_INFO_KEY => {
                let raw = serde_json::value::to_raw_value(&value).ok();
                self.set_client_info(raw)?;
            }
            LOG_LEVEL_KEY => {
                self.log_level =
                    Some(value.as_str().and_then(LogLevel::parse).ok_or_else(|| {
                        RpcError::invalid_params(format!(
                            "{LOG_LEVEL_KEY} must be a known log level"
                        ))
                    })?);
            }
            "progressToken" => {
                self.progress_token = Some(match value {
                    Value::String(s) if s.len() <= MAX_STRING_ID_LEN => {
                        ProgressToken::String(s.as_str().into())
                    }
                    Value::Number(n) if n.is_i64() => {
                        ProgressToken::Number(n.as_i64().unwrap_or_default())
                    }
                    _ => {
                        return Err(RpcError::invalid_params(
                            "progressToken must be a string of at most 256 bytes or an integer",
                        ));
                    }
                });
            }
            _ => {
                self.other.insert(key.into(), value);
            }
        }
        Ok(())
    }
}

impl RequestMeta {
    fn set_client_info(&mut self, raw: Option<Box<RawValue>>) -> Result<(), RpcError> {
        match raw {
            Some(raw)
                if super::object_scan::has_string_name_and_version(raw.get()).unwrap_or_else(
                    || serde_json::from_str::<ClientInfoCheck>(raw.get()).is_ok(),
                ) =>
            {
                self.client_info = Some(raw);
                Ok(())
            }
            _ => Err(RpcError::invalid_params(format!(
                "{CLIENT_INFO_KEY} must be an object with string name and version"
            ))),
        }
    }
}

/// The check of a client info: an object with string `name` and `version`, each once;
/// other members are allowed (and kept, in the raw text). No string is copied.
struct ClientInfoCheck;

impl<'de> Deserialize<'de> for ClientInfoCheck {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // A map only: the positional `["name", "version"]` form is refused.
        d.deserialize_map(ClientInfoCheck)
    }
}

impl<'de> Visitor<'de> for ClientInfoCheck {
    type Value = Self;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an object with string name and version")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self, A::Error> {
        let (mut name, mut version) = (false, false);
        while let Some(key) = map.next_key::<Key<'de>>()? {
            let seen = match &*key.0 {
                "name" => &mut name,
                "version" => &mut version,
                _ => {
                    map.next_value::<de::IgnoredAny>()?;
                    continue;
                }
            };
            if std::mem::replace(seen, true) {
                return Err(de::Error::duplicate_field("name or version"));
            }
            map.next_value::<AnyString>()?;
        }
        if name && version {
            Ok(self)
        } else {
            Err(de::Error::missing_field("name or version"))
        }
    }
}

/// Any JSON string, not kept.
struct AnyString;

impl<'de> Deserialize<'de> for AnyString {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(AnyString)
    }
}

impl<'de> Visitor<'de> for AnyString {
    type Value = Self;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a string")
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self, E> {
        Ok(self)
    }
}

/// `params._meta` read straight from the request text (no intermediate `Map`): the
/// parsed metadata, the first validation error (reported once the dialect is known),
/// and what the 2026-07-28 presence rules look at.
#[derive(Debug, Default)]
pub(crate) struct MetaParse {
    pub(crate) meta: RequestMeta,
    /// Boxed: it is rare, and this struct is moved several times on every request's way
    /// (an `RpcError` inline made it 232 bytes, each move a `memcpy` call).
    pub(crate) error: Option<Box<RpcError>>,
    pub(crate) is_object: bool,
    pub(crate) has_version: bool,
    pub(crate) has_capabilities: bool,
}

impl MetaParse {
    fn not_an_object() -> Self {
        Self {
            meta: RequestMeta {
                present: true,
                ..RequestMeta::default()
            },
            error: Some(Box::new(RpcError::invalid_params(
                "_meta must be an object",
            ))),
            ..Self::default()
        }
    }

    /// The metadata, or its first validation error.
    pub(crate) fn into_result(self) -> Result<RequestMeta, RpcError> {
        match self.error {
            Some(e) => Err(*e),
            None => Ok(self.meta),
        }
    }
}

impl<'de> Deserialize<'de> for MetaParse {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(MetaVisitor)
    }
}

struct MetaVisitor;

impl<'de> Visitor<'de> for MetaVisitor {
    type Value = MetaParse;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a _meta object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<MetaParse, A::Error> {
        // Every member spelled: `..MetaParse::default()` would build (and drop) a
        // second `RequestMeta`, about 80 instructions a request.
        let mut out = MetaParse {
            meta: RequestMeta {
                present: true,
                ..RequestMeta::default()
            },
            error: None,
            is_object: true,
            has_version: false,
            has_capabilities: false,
        };
        while let Some(key) = map.next_key::<Key<'de>>()? {
            let accepted = match &*key.0 {
                // Read from the text as it is (a known revision allocates nothing); any
                // other JSON type is refused as `accept` refuses it.
                PROTOCOL_VERSION_KEY => {
                    out.has_version = true;
                    match map.next_value::<StringOrOther<'de>>()?.0 {
                        Some(text) => {
                            out.meta.protocol_version = Some(version_text(text));
                            Ok(())
                        }
                        None => Err(RpcError::invalid_params(format!(
                            "{PROTOCOL_VERSION_KEY} must be a string"
                        ))),
                    }
                }
                // Kept as text: parsed into a tree only if the application reads it.
                CLIENT_INFO_KEY => {
                    let raw: Box<RawValue> = map.next_value()?;
                    out.meta.set_client_info(Some(raw))
                }
                k => {
                    out.has_version |= k == PROTOCOL_VERSION_KEY;
                    out.has_capabilities |= k == CLIENT_CAPABILITIES_KEY;
                    let value: Value = map.next_value()?;
                    out.meta.accept(key.0, value)
                }
            };
            if let (None, Err(e)) = (&out.error, accepted) {
                out.error = Some(Box::new(e));
            }
        }
        Ok(out)
    }

    super::params::not_an_object!(MetaParse, MetaParse::not_an_object());
}

/// A protocol version as kept: the known revision's own text, or the text sent.
fn version_text(sent: Cow<'_, str>) -> Cow<'static, str> {
    match super::ALL.iter().find(|d| d.version() == sent) {
        Some(d) => Cow::Borrowed(d.version()),
        None => Cow::Owned(sent.into_owned()),
    }
}

/// A JSON string (borrowed from the request text when it has no escapes), or `None`
/// for a value of any other type (read and dropped).
struct StringOrOther<'de>(Option<Cow<'de, str>>);

impl<'de> Deserialize<'de> for StringOrOther<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(Text).map(StringOrOther)
    }
}

/// An object key, borrowed from the request text when it has no escapes.
pub(crate) struct Key<'de>(pub(crate) Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // A deserializer asked for a string hands over a string or fails itself.
        d.deserialize_str(Text)?
            .map(Key)
            .ok_or_else(|| de::Error::custom("an object key must be a string"))
    }
}

/// The one visitor of both: a string as text (borrowed when the input allows), any
/// other value as `None`, consumed.
struct Text;

impl<'de> Visitor<'de> for Text {
    type Value = Option<Cow<'de, str>>;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Self::Value, E> {
        Ok(Some(Cow::Borrowed(s)))
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
        Ok(Some(Cow::Owned(s.to_owned())))
    }
    fn visit_string<E: de::Error>(self, s: String) -> Result<Self::Value, E> {
        Ok(Some(Cow::Owned(s)))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<de::IgnoredAny>()?.is_some() {}
        Ok(None)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map
            .next_entry::<de::IgnoredAny, de::IgnoredAny>()?
            .is_some()
        {}
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The version is read in place: a known revision borrows its dialect's text, an
    /// unknown one is kept as sent, and a value of another type is refused as before.
    #[test]
    fn the_protocol_version_is_read_without_a_copy() {
        let read = |meta: &str| {
            let p: MetaParse = serde_json::from_str(meta).unwrap_or_default();
            p
        };
        let known = read(r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}"#);
        assert!(matches!(
            known.meta.protocol_version,
            Some(Cow::Borrowed("2026-07-28"))
        ));
        assert!(known.has_version && known.error.is_none());
        let other = read(r#"{"io.modelcontextprotocol/protocolVersion":"2099-01-01"}"#);
        assert_eq!(other.meta.protocol_version.as_deref(), Some("2099-01-01"));
        for bad in ["1", "true", "null", "[1,[2]]", r#"{"a":{"b":1}}"#] {
            let p = read(&format!(
                r#"{{"io.modelcontextprotocol/protocolVersion":{bad},"x":1}}"#
            ));
            assert!(p.has_version, "{bad}");
            assert!(p.meta.protocol_version.is_none(), "{bad}");
            let e = p.error.map(|e| e.message().to_owned()).unwrap_or_default();
            assert!(e.contains("must be a string"), "{bad}: {e}");
            // The members after it are still read.
            assert!(p.meta.other.contains_key("x"), "{bad}");
        }
    }

    #[test]
    fn the_client_info_scan_agrees_with_the_serde_check() {
        for raw in [
            r#"{"name":"a","version":"1"}"#,
            r#"{"name":"a","version":"1","extra":{"name":[1,{"version":"x"}]}}"#,
            r#"{"name":"a"}"#,
            r#"{"name":"a","version":true}"#,
            r#"{"name":"a","name":"a","version":"1"}"#,
            r#"{"version":"1","name":"a\\","t":"}{]["}"#,
            "{}",
            "[\"a\",\"b\"]",
            "1",
        ] {
            let scan = super::super::object_scan::has_string_name_and_version(raw);
            let serde = serde_json::from_str::<ClientInfoCheck>(raw).is_ok();
            assert_eq!(scan, Some(serde), "{raw}");
        }
    }

    #[test]
    fn parses_and_validates() {
        let m = RequestMeta::from_value(Some(json!({
            PROTOCOL_VERSION_KEY: "2026-07-28",
            CLIENT_CAPABILITIES_KEY: {"sampling": {}},
            LOG_LEVEL_KEY: "warning",
            "progressToken": 5
        })))
        .unwrap_or_default();
        assert_eq!(m.protocol_version.as_deref(), Some("2026-07-28"));
        assert_eq!(m.log_level, Some(LogLevel::Warning));
        assert_eq!(m.progress_token, Some(ProgressToken::Number(5)));
        assert!(RequestMeta::from_value(Some(json!([]))).is_err());
        assert!(RequestMeta::from_value(Some(json!({"progressToken": []}))).is_err());
        assert!(RequestMeta::from_value(Some(json!({LOG_LEVEL_KEY: "loud"}))).is_err());
        assert!(RequestMeta::from_value(Some(json!({CLIENT_CAPABILITIES_KEY: []}))).is_err());
        assert!(LogLevel::Error > LogLevel::Info);
    }
}
