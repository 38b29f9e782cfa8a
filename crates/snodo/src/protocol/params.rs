//! `params` of a request, read in the same pass as the envelope: `_meta` parsed into its
//! typed form (no intermediate `Map`), every other member kept as JSON for the router.

use serde::Deserialize;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::{Map, Value};

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

/// A request's `params`, split while parsing.
#[derive(Debug, Default)]
pub(crate) struct SplitParams {
    /// `params._meta`, when present.
    pub(crate) meta: Option<MetaParse>,
    /// `params.arguments` (tools/call, prompts/get), when present.
    pub(crate) arguments: Option<Value>,
    /// Every other member.
    pub(crate) rest: Map<String, Value>,
    /// `params` was not an object (refused with `-32602` once the id is known).
    pub(crate) not_object: bool,
}

impl Params<'_> for SplitParams {
    fn is_object(&self) -> bool {
        !self.not_object
    }
}

impl<'de> Deserialize<'de> for SplitParams {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(SplitVisitor)
    }
}

struct SplitVisitor;

impl<'de> Visitor<'de> for SplitVisitor {
    type Value = SplitParams;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a params object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<SplitParams, A::Error> {
        let mut out = SplitParams::default();
        while let Some(Key(key)) = map.next_key()? {
            if key == "_meta" {
                out.meta = Some(map.next_value()?);
            } else if key == "arguments" {
                out.arguments = Some(map.next_value()?);
            } else {
                out.rest.insert(key.into_owned(), map.next_value()?);
            }
        }
        Ok(out)
    }

    not_an_object!(
        SplitParams,
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
        let p: SplitParams = serde_json::from_str(
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
            let p: SplitParams = serde_json::from_str(not_object).unwrap_or_default();
            assert!(!p.is_object(), "{not_object}");
        }
        // Keys with escapes are decoded.
        let p: SplitParams = serde_json::from_str(r#"{"\u006eame":1}"#).unwrap_or_default();
        assert!(p.rest.contains_key("name"));
    }
}
