//! A scan of the top level of a JSON object whose text is already known to be valid JSON
//! (a captured `RawValue`): which members are strings, without building anything.
//!
//! The request's client info is kept as text; checking its shape with a second serde
//! pass cost about as much as the rest of `_meta`.

/// Whether the valid JSON text `raw` is an object with string members `name` and
/// `version`, each exactly once. `None` when the scan cannot tell (a top-level key with
/// an escape): the serde check decides.
pub(crate) fn has_string_name_and_version(raw: &str) -> Option<bool> {
    let b = raw.as_bytes();
    let mut i = skip_ws(b, 0);
    if b.get(i) != Some(&b'{') {
        return Some(false);
    }
    i += 1;
    let (mut name, mut version) = (false, false);
    loop {
        i = skip_ws(b, i);
        match b.get(i) {
            Some(b'}') => break,
            Some(b'"') => {}
            _ => return None,
        }
        let start = i + 1;
        let end = start
            + b.get(start..)?
                .iter()
                .position(|&c| c == b'"' || c == b'\\')?;
        if b[end] == b'\\' {
            return None;
        }
        let key = &b[start..end];
        i = skip_ws(b, end + 1);
        if b.get(i) != Some(&b':') {
            return None;
        }
        i = skip_ws(b, i + 1);
        let seen = match key {
            b"name" => Some(&mut name),
            b"version" => Some(&mut version),
            _ => None,
        };
        if let Some(seen) = seen {
            if *seen || b.get(i) != Some(&b'"') {
                return Some(false);
            }
            *seen = true;
        }
        i = skip_ws(b, skip_value(b, i)?);
        match b.get(i) {
            Some(b',') => i += 1,
            Some(b'}') => break,
            _ => return None,
        }
    }
    Some(name && version)
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while matches!(b.get(i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        i += 1;
    }
    i
}

/// The index after the string that opens at `i`.
fn skip_string(b: &[u8], mut i: usize) -> Option<usize> {
    i += 1;
    loop {
        match b.get(i)? {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
}

/// The index after the value that starts at `i`.
fn skip_value(b: &[u8], i: usize) -> Option<usize> {
    match b.get(i)? {
        b'"' => skip_string(b, i),
        b'{' | b'[' => {
            let (mut depth, mut j) = (0usize, i);
            loop {
                match b.get(j)? {
                    b'"' => {
                        j = skip_string(b, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
        }
        _ => {
            let mut j = i;
            while !matches!(
                b.get(j),
                None | Some(b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
            ) {
                j += 1;
            }
            Some(j)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tells_the_shape_of_a_client_info() {
        let cases = [
            (r#"{"name":"a","version":"1"}"#, Some(true)),
            (r#" { "version" : "1" , "name" : "a\"}" } "#, Some(true)),
            (
                r#"{"x":{"name":1,"y":["}",{"version":2}]},"name":"n","v":-1.5e3,"version":"","z":null}"#,
                Some(true),
            ),
            (r#"{"name":"a"}"#, Some(false)),
            (r#"{"name":"a","version":1}"#, Some(false)),
            (r#"{"name":"a","version":"1","name":"b"}"#, Some(false)),
            (r#"{"name":null,"version":"1"}"#, Some(false)),
            (r#"{}"#, Some(false)),
            (r#"["name","version"]"#, Some(false)),
            (r#""name""#, Some(false)),
            (r#"{"n\u0061me":"a","version":"1"}"#, None),
        ];
        for (raw, want) in cases {
            assert_eq!(has_string_name_and_version(raw), want, "{raw}");
        }
    }
}
