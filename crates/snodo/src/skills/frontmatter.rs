//! A `SKILL.md`'s YAML frontmatter, as the JSON object the Skills extension sends.

use serde_json::{Map, Value};

/// The frontmatter block of `text`: the lines between a leading `---` line and the next
/// `---` line (a byte-order mark and CRLF line ends are accepted).
fn block(text: &str) -> Option<&str> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))?;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return Some(&rest[..offset]);
        }
        offset += line.len();
    }
    None
}

/// Parses the frontmatter of a `SKILL.md` into a JSON object; `Err` says what is wrong.
/// `name` and `description` must be non-empty strings (the Agent Skills format).
pub(crate) fn parse(text: &str) -> Result<Map<String, Value>, String> {
    let yaml =
        block(text).ok_or("SKILL.md does not begin with a --- delimited frontmatter block")?;
    let value: Value = serde_norway::from_str(yaml)
        .map_err(|e| format!("the frontmatter is not valid YAML: {e}"))?;
    let Value::Object(map) = value else {
        return Err("the frontmatter is not a YAML mapping".into());
    };
    for key in ["name", "description"] {
        if map
            .get(key)
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            return Err(format!("the frontmatter has no non-empty `{key}`"));
        }
    }
    Ok(map)
}

/// The Agent Skills naming rules: 1–64 characters of lowercase letters, digits and
/// hyphens, no leading, trailing or doubled hyphen.
pub(crate) fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frontmatter() {
        let m = parse("---\nname: pdf\ndescription: Fill PDFs\nmetadata:\n  v: 1\n---\n# Body\n")
            .unwrap_or_default();
        assert_eq!(m["name"], "pdf");
        assert_eq!(m["metadata"]["v"], 1);
        assert!(parse("---\r\nname: a\r\ndescription: b\r\n---\r\n").is_ok());
        assert!(parse("# no frontmatter").is_err());
        assert!(parse("---\nname: a\n---\n").is_err());
        assert!(parse("---\n- a\n---\n").is_err());
        assert!(parse("---\nname: [unclosed\n---\n").is_err());
        assert!(valid_name("pdf-processing"));
        assert!(!valid_name("Pdf"));
        assert!(!valid_name("a--b"));
        assert!(!valid_name("-a"));
        assert!(!valid_name(""));
    }
}
