//! `params` of a request, read in the same pass as the envelope: `_meta` parsed into its
//! typed form (no intermediate `Map`), every other member kept as JSON for the router.

use std::borrow::Cow;

use serde::Deserialize;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::Value;

use super::jsonrpc::Params;
use super::meta::{Key, MetaParse};

/// The visits of every JSON value that is not an object: the value is consumed and
/// `$make` says what it becomes (a validation error is reported later, with the id).
macro_rules! not_an_object {
    ($out:ty, $make:expr) => {
        fn visit_seq<A: ::serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<$out, A::Error> {
            while seq.next_element::<::serde::de::IgnoredAny>()?.is_some() {}
            Ok($make)
        }
        fn visit_bool<E: ::serde::de::Error>(self, _: bool) -> Result<$out, E> {
            Ok($make)
        }
        fn visit_i64<E: ::serde::de::Error>(self, _: i64) -> Result<$out, E> {
            Ok($make)
        }
        fn visit_u64<E: ::serde::de::Error>(self, _: u64) -> Result<$out, E> {
            Ok($make)
        }
        fn visit_f64<E: ::serde::de::Error>(self, _: f64) -> Result<$out, E> {
            Ok($make)
        }
        fn visit_str<E: ::serde::de::Error>(self, _: &str) -> Result<$out, E> {
            Ok($make)
        }
        fn visit_unit<E: ::serde::de::Error>(self) -> Result<$out, E> {
            Ok($make)
        }
    };
}
pub(crate) use not_an_object;

/// The members of `params` other than `_meta` and `arguments`, in arrival order, keys
/// borrowed from the request text when they have no escapes. A handful at most: a
/// vector searched from the end (a repeated key: the last one counts, as in a JSON map).
#[derive(Debug, Default)]
pub(crate) struct Members<'a>(Vec<(Cow<'a, str>, Value)>);

impl<'a> Members<'a> {
    /// Adds a member.
    pub(crate) fn push(&mut self, key: Cow<'a, str>, value: Value) {
        self.0.push((key, value));
    }

    /// Takes the value of `key` (its last occurrence), if present (`null` included).
    pub(crate) fn take(&mut self, key: &str) -> Option<Value> {
        self.0
            .iter_mut()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| std::mem::take(v))
    }

    /// Takes the value of `key` unless it is absent or `null`.
    pub(crate) fn take_non_null(&mut self, key: &str) -> Option<Value> {
        self.take(key).filter(|v| !v.is_null())
    }

    /// How many members there are.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }
}

impl From<serde_json::Map<String, Value>> for Members<'static> {
    fn from(map: serde_json::Map<String, Value>) -> Self {
        Self(map.into_iter().map(|(k, v)| (Cow::Owned(k), v)).collect())
    }
}

/// A request's `params`, split while parsing.
#[derive(Debug, Default)]
pub(crate) struct SplitParams<'a> {
    /// `params._meta`, when present.
    pub(crate) meta: Option<MetaParse>,
    /// `params.arguments` (tools/call, prompts/get), when present.
    pub(crate) arguments: Option<Value>,
    /// Every other member.
    pub(crate) rest: Members<'a>,
    /// `params` was not an object (refused with `-32602` once the id is known).
    pub(crate) not_object: bool,
}

impl<'a> Params<'a> for SplitParams<'a> {
    type Member = super::jsonrpc::Member<'a>;
    fn is_object(&self) -> bool {
        !self.not_object
    }
}

impl<'de> Deserialize<'de> for SplitParams<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(SplitVisitor)
    }
}

struct SplitVisitor;

impl<'de> Visitor<'de> for SplitVisitor {
    type Value = SplitParams<'de>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a params object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<SplitParams<'de>, A::Error> {
        let mut out = SplitParams::default();
        while let Some(Key(key)) = map.next_key()? {
            if key == "_meta" {
                out.meta = Some(map.next_value()?);
            } else if key == "arguments" {
                out.arguments = Some(map.next_value()?);
            } else {
                out.rest.push(key, map.next_value()?);
            }
        }
        Ok(out)
    }

    not_an_object!(
        SplitParams<'de>,
        SplitParams {
            not_object: true,
            ..SplitParams::default()
        }
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_meta_from_the_rest() {
        let p: SplitParams<'_> = serde_json::from_str(
            r#"{"name":"echo","_meta":{"progressToken":3,"x":1},"arguments":{"a":[1]}}"#,
        )
        .unwrap_or_default();
        assert!(p.is_object());
        assert_eq!(p.rest.len(), 1);
        assert_eq!(p.arguments, Some(serde_json::json!({"a": [1]})));
        let meta = p.meta.map(MetaParse::into_result);
        let meta = meta.and_then(Result::ok).unwrap_or_default();
        assert!(meta.present);
        assert_eq!(meta.other.get("x"), Some(&Value::from(1)));
        for not_object in ["[1,{}]", "null", "true", "1", "-1", "1.5", "\"s\""] {
            let p: SplitParams<'_> = serde_json::from_str(not_object).unwrap_or_default();
            assert!(!p.is_object(), "{not_object}");
        }
        // Keys with escapes are decoded.
        let p: SplitParams<'_> = serde_json::from_str(r#"{"\u006eame":1}"#).unwrap_or_default();
        let mut rest = p.rest;
        assert_eq!(rest.take("name"), Some(Value::from(1)));
    }
}
