//! A backend's tool result of plain text blocks read straight from its JSON text into
//! a [`ToolResult`], without a tree: what the mirror's tree path makes of it.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use snodo::{Content, ToolResult};
use snodo_client::Answer;

/// `answer` as a [`ToolResult`] when it is still JSON text and a plain result: an
/// object whose `content` (if any) is an array of objects with `"type": "text"`, a
/// string `text` and no `annotations`; whose `isError` (if any) is `false`; whose
/// `_meta` (if any) is a non-empty object; without `structuredContent`. Other members
/// are skipped. `None` for anything else (a tree, another result, a duplicate member,
/// anything unreadable): the caller reads it as a tree, as before. Such a result has
/// nothing a mount rewrites (no resource URIs).
pub(crate) fn from_text(answer: &Answer) -> Option<ToolResult> {
    // A struct also reads from an array: only an object is a result.
    if !answer.as_text()?.get().trim_start().starts_with('{') {
        return None;
    }
    let p = answer.read::<Plain>().ok()?;
    if p.structured || p.is_error == Some(true) || p.meta.as_ref().is_some_and(Map::is_empty) {
        return None;
    }
    let mut result = ToolResult::new(p.content.unwrap_or_default());
    for (k, v) in p.meta.unwrap_or_default() {
        result = result.with_meta(k, v);
    }
    Some(result)
}

/// The members of a plain result (an explicit `null` is not read as absent: such a
/// result goes through the tree, as before).
#[derive(Deserialize)]
struct Plain {
    #[serde(default, deserialize_with = "text_blocks")]
    content: Option<Vec<Content>>,
    #[serde(rename = "isError", default, deserialize_with = "some")]
    is_error: Option<bool>,
    #[serde(rename = "_meta", default, deserialize_with = "some")]
    meta: Option<Map<String, Value>>,
    #[serde(rename = "structuredContent", default, deserialize_with = "present")]
    structured: bool,
}

/// A member that must be a `T` (`null` is not `None`).
fn some<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// An array of plain text blocks, read straight into text content (`null` is not
/// `None`).
fn text_blocks<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<Content>>, D::Error> {
    struct Blocks;

    impl<'de> Visitor<'de> for Blocks {
        type Value = Vec<Content>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an array of text blocks")
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Vec<Content>, A::Error> {
            let mut blocks = Vec::with_capacity(s.size_hint().unwrap_or(1).min(64));
            while let Some(TextBlock(text)) = s.next_element()? {
                blocks.push(Content::text(text));
            }
            Ok(blocks)
        }
    }

    d.deserialize_seq(Blocks).map(Some)
}

/// A member that is there, whatever its value.
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    IgnoredAny::deserialize(d).map(|_| true)
}

/// The text of a `{"type": "text", "text": …}` block without annotations (read as an
/// object only: a derived struct would also read an array).
struct TextBlock(String);

#[derive(Deserialize)]
#[serde(field_identifier)]
enum Field {
    #[serde(rename = "type")]
    Type,
    #[serde(rename = "text")]
    Text,
    #[serde(rename = "annotations")]
    Annotations,
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
enum TextKind {
    #[serde(rename = "text")]
    Text,
}

impl<'de> Deserialize<'de> for TextBlock {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(TextBlockVisitor)
    }
}

struct TextBlockVisitor;

impl<'de> Visitor<'de> for TextBlockVisitor {
    type Value = TextBlock;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a text block without annotations")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<TextBlock, A::Error> {
        let (mut kind, mut text) = (false, None);
        while let Some(field) = m.next_key::<Field>()? {
            match field {
                Field::Type if !kind => {
                    let TextKind::Text = m.next_value()?;
                    kind = true;
                }
                Field::Text if text.is_none() => text = Some(m.next_value::<String>()?),
                Field::Other => {
                    m.next_value::<IgnoredAny>()?;
                }
                // Annotations, or a member given twice: not read here.
                _ => return Err(de::Error::custom("not a plain text block")),
            }
        }
        match (kind, text) {
            (true, Some(t)) => Ok(TextBlock(t)),
            _ => Err(de::Error::custom("not a plain text block")),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use serde_json::value::RawValue;

    use super::*;

    /// An answer of JSON text, as stdio gives it.
    fn text(s: &str) -> Answer {
        Answer::from_text(
            RawValue::from_string(s.to_owned()).unwrap_or_else(|e| panic!("{s}: {e}")),
        )
    }

    #[test]
    fn plain_results_read_from_text_as_the_tree_path_reads_them() {
        let taken = [
            r#"{}"#,
            r#"{"content":[]}"#,
            r#"{"content":[{"type":"text","text":"hi"}],"isError":false}"#,
            r#"{"content":[{"type":"text","text":"a\"\u00e9\n"},{"text":"b","x":{"y":[1]},"type":"text"}],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s"},"k":[1]}}"#,
            r#" {"content":[{"type":"text","text":"m","_meta":{"a":1}}],"other":null} "#,
        ];
        for s in taken {
            let tree = crate::mirror::tool_result(serde_json::from_str(s).unwrap_or_default());
            let got = from_text(&text(s));
            assert!(got.is_some(), "{s}");
            assert_eq!(got, tree.ok(), "{s}");
        }
        let left = [
            r#"{"content":[{"type":"text","text":"a","annotations":{"priority":0.5}}]}"#,
            r#"{"content":[{"type":"image","data":"AA==","mimeType":"image/png"}]}"#,
            r#"{"content":[{"type":"resource_link","uri":"file:///a","name":"a"}]}"#,
            r#"{"content":[{"type":"text","text":"e"}],"isError":true}"#,
            r#"{"content":[{"type":"text","text":"s"}],"structuredContent":{"a":1}}"#,
            r#"{"content":[{"type":"text","text":"s"}],"structuredContent":null}"#,
            r#"{"content":[{"type":"text","text":"m"}],"_meta":{}}"#,
            r#"{"content":[{"type":"text","text":"m"}],"_meta":null}"#,
            r#"{"content":[{"type":"text","text":3}]}"#,
            r#"{"content":[{"type":"text"}]}"#,
            r#"{"content":[["text","x"]]}"#,
            r#"{"content":[{"type":"text","text":"a","text":"b"}]}"#,
            r#"{"content":[],"content":[]}"#,
            r#"{"content":{"type":"text","text":"x"}}"#,
            r#"{"content":null}"#,
            r#"{"content":[],"isError":null}"#,
            r#"{"content":[],"isError":"no"}"#,
            r#"[[{"type":"text","text":"x"}]]"#,
            r#""text""#,
        ];
        for s in left {
            assert!(from_text(&text(s)).is_none(), "{s}");
        }
        // A tree is never read here.
        assert!(from_text(&Answer::from(json!({"content": []}))).is_none());
    }
}
