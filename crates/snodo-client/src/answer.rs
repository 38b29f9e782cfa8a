//! [`Answer`]: a request's result as it arrived, JSON text or a tree.

use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::error::ClientError;

/// A request's result as it arrived: the JSON text of the answer's `result` member
/// (stdio reads an answer line without building a tree of its result) or a parsed
/// tree (HTTP, a cached result, a result the client had to read itself). A proxy that
/// passes a result on reads it straight into the type it needs ([`read`](Self::read));
/// [`into_value`](Self::into_value) gives the tree.
#[derive(Debug, Clone)]
pub struct Answer(Repr);

#[derive(Debug, Clone)]
enum Repr {
    Text(Box<RawValue>),
    Tree(Value),
}

impl Answer {
    /// An answer whose result is still JSON text.
    #[must_use]
    pub fn from_text(raw: Box<RawValue>) -> Self {
        Self(Repr::Text(raw))
    }

    /// The result as a JSON tree.
    ///
    /// # Errors
    /// [`ClientError::Unexpected`] when the text cannot be read as a tree (nested
    /// deeper than `serde_json` reads).
    pub fn into_value(self) -> Result<Value, ClientError> {
        match self.0 {
            Repr::Tree(v) => Ok(v),
            Repr::Text(raw) => serde_json::from_str(raw.get())
                .map_err(|e| ClientError::Unexpected(format!("the result cannot be read: {e}"))),
        }
    }

    /// The result read as `T`, from its text or its tree (the same `T` either way).
    ///
    /// # Errors
    /// When the result is not a `T`.
    pub fn read<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        match &self.0 {
            Repr::Tree(v) => T::deserialize(v),
            Repr::Text(raw) => serde_json::from_str(raw.get()),
        }
    }

    /// Whether the result may hold `literal` (the content of a string, a number,
    /// `true`, `false` or `null`): `false` only when it is JSON text that has neither
    /// `literal` nor any escape (`\`), so a caller looking for such a value need not
    /// read the result for it. Always `true` for a tree.
    ///
    /// ```
    /// use snodo_client::Answer;
    /// use serde_json::value::RawValue;
    ///
    /// let text = |s: &str| Answer::from_text(RawValue::from_string(s.into()).unwrap());
    /// assert!(!text(r#"{"isError":false}"#).may_hold("true"));
    /// assert!(text(r#"{"isError":true}"#).may_hold("true"));
    /// // An escape may spell it: read it to know.
    /// assert!(text(r#"{"resultType":"input\u005frequired"}"#).may_hold("input_required"));
    /// ```
    #[must_use]
    pub fn may_hold(&self, literal: &str) -> bool {
        match &self.0 {
            Repr::Tree(_) => true,
            Repr::Text(raw) => {
                let t = raw.get();
                t.as_bytes().contains(&b'\\') || t.contains(literal)
            }
        }
    }

    /// The result's JSON text, when it is still text.
    #[must_use]
    pub fn as_text(&self) -> Option<&RawValue> {
        match &self.0 {
            Repr::Text(raw) => Some(raw),
            Repr::Tree(_) => None,
        }
    }

    /// The result's tree, when it was read as one.
    #[must_use]
    pub fn as_value(&self) -> Option<&Value> {
        match &self.0 {
            Repr::Tree(v) => Some(v),
            Repr::Text(_) => None,
        }
    }
}

impl From<Value> for Answer {
    fn from(v: Value) -> Self {
        Self(Repr::Tree(v))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn text_and_tree_read_alike() {
        let v = json!({"content": [{"type": "text", "text": "a\u{e9}\"b"}], "n": 1.5});
        let raw = RawValue::from_string(v.to_string()).unwrap_or_else(|e| panic!("{e}"));
        let text = Answer::from_text(raw);
        let tree = Answer::from(v.clone());
        assert!(text.as_text().is_some() && tree.as_value().is_some());
        assert_eq!(text.read::<Value>().ok(), Some(v.clone()));
        assert_eq!(tree.read::<Value>().ok(), Some(v.clone()));
        assert_eq!(text.into_value().ok(), Some(v.clone()));
        assert_eq!(tree.into_value().ok(), Some(v));
    }
}
