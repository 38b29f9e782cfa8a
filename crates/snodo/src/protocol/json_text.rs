//! Writing JSON strings fast: the bytes that need no escape are found eight at a time
//! and copied as runs. serde_json checks every byte against a table (about ten
//! instructions a byte), which dominates answers that carry large texts (a 1 MiB tool
//! output). The output is byte for byte what serde_json writes.

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// Whether any of the eight bytes of `chunk` is a control character, `"` or `\`.
/// Exact (no false positives): each test is the classic "has a zero/less-than byte".
const fn needs_escape(chunk: u64) -> bool {
    let below_space = chunk.wrapping_sub(ONES * 0x20) & !chunk;
    let quote = zero_in(chunk ^ (ONES * b'"' as u64));
    let backslash = zero_in(chunk ^ (ONES * b'\\' as u64));
    (below_space | quote | backslash) & HIGHS != 0
}

/// High bit set in (at least) the first zero byte of `v`.
const fn zero_in(v: u64) -> u64 {
    v.wrapping_sub(ONES) & !v
}

/// The index of the first whole 8-byte word from `i` on that has something to escape
/// (or of the tail shorter than a word).
fn skip_plain_words(bytes: &[u8], mut i: usize) -> usize {
    for word in bytes[i..].chunks_exact(8) {
        let word: [u8; 8] = [
            word[0], word[1], word[2], word[3], word[4], word[5], word[6], word[7],
        ];
        if needs_escape(u64::from_le_bytes(word)) {
            break;
        }
        i += 8;
    }
    i
}

/// Appends `s` as a JSON string literal (quotes included), escaped like serde_json.
pub(crate) fn write_str(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut run = 0; // start of the bytes not yet copied
    let mut i = 0;
    while i < bytes.len() {
        i = skip_plain_words(bytes, i);
        // Byte by byte through the word that has something to escape (or the tail).
        let end = (i + 8).min(bytes.len());
        for (at, &b) in bytes.iter().enumerate().take(end).skip(i) {
            if let Some(escape) = escape_of(b) {
                out.extend_from_slice(&bytes[run..at]);
                write_escape(out, b, escape);
                run = at + 1;
            }
        }
        i = end;
    }
    out.extend_from_slice(&bytes[run..]);
    out.push(b'"');
}

/// How many bytes [`write_str`] appends for `s`: its escaped length, quotes included,
/// found with the same word-at-a-time skip (to size a buffer once instead of growing it).
pub(crate) fn str_len(s: &str) -> usize {
    let bytes = s.as_bytes();
    let mut len = bytes.len() + 2;
    let mut i = 0;
    while i < bytes.len() {
        i = skip_plain_words(bytes, i);
        let end = (i + 8).min(bytes.len());
        for &b in &bytes[i..end] {
            len += match escape_of(b) {
                None => 0,
                Some(b'u') => 5,
                Some(_) => 1,
            };
        }
        i = end;
    }
    len
}

/// serde_json's escape for a byte: the short form, `u` for `\u00XX`, or none.
const fn escape_of(b: u8) -> Option<u8> {
    Some(match b {
        b'"' => b'"',
        b'\\' => b'\\',
        0x08 => b'b',
        0x0c => b'f',
        b'\n' => b'n',
        b'\r' => b'r',
        b'\t' => b't',
        0x00..=0x1f => b'u',
        _ => return None,
    })
}

fn write_escape(out: &mut Vec<u8>, byte: u8, escape: u8) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    if escape == b'u' {
        out.extend_from_slice(&[
            b'\\',
            b'u',
            b'0',
            b'0',
            HEX[usize::from(byte >> 4)],
            HEX[usize::from(byte & 0xf)],
        ]);
    } else {
        out.extend_from_slice(&[b'\\', escape]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ours(s: &str) -> Vec<u8> {
        let mut out = Vec::new();
        write_str(&mut out, s);
        out
    }

    #[test]
    fn escapes_like_serde_json() {
        let mut every_ascii = String::new();
        for b in 0u8..0x80 {
            every_ascii.push(char::from(b));
        }
        for s in [
            "",
            "plain",
            "exactly8",
            "a\"b\\c\nd\re\tf\u{8}g\u{c}h\u{0}\u{1f}\u{7f}",
            "héllo wörld, 日本語, 🎉 and \" at the end\"",
            &every_ascii,
            &"x".repeat(1000),
            &format!("{}\n{}", "y".repeat(15), "z".repeat(9)),
        ] {
            assert_eq!(ours(s), serde_json::to_vec(s).unwrap_or_default(), "{s:?}");
            assert_eq!(str_len(s), ours(s).len(), "{s:?}");
        }
    }

    #[test]
    fn chunk_test_is_exact() {
        for b in 0u8..=255 {
            let word = u64::from_le_bytes([b'a', b'a', b'a', b, b'a', b'a', b'a', b'a']);
            assert_eq!(needs_escape(word), escape_of(b).is_some(), "{b:#x}");
        }
    }

    proptest! {
        #[test]
        fn any_string_is_written_as_serde_json_writes_it(s in any::<String>()) {
            prop_assert_eq!(ours(&s), serde_json::to_vec(&s).unwrap_or_default());
            prop_assert_eq!(str_len(&s), ours(&s).len());
        }

        #[test]
        fn mostly_plain_text_with_escapes(parts in proptest::collection::vec(
            prop_oneof!["[a-z ]{0,20}", "[\"\\\\\n\t\u{0}-\u{1f}]{1,3}", "[é日🎉]{1,4}"], 0..20)) {
            let s: String = parts.concat();
            prop_assert_eq!(ours(&s), serde_json::to_vec(&s).unwrap_or_default());
        }
    }
}
