//! Stateless pagination cursors.
//!
//! A cursor is `c1.` + base64url of `version|method|offset|catalogue-hash`. It is bound
//! to the dialect, the list method and the exact catalogue it was minted for: replayed
//! on another dialect or after the catalogue changed, it is refused with `-32602`.
//! Nothing is stored, so any instance serving the same catalogue accepts it.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use crate::protocol::RpcError;

const PREFIX: &str = "c1.";
const MAX_CURSOR_LEN: usize = 512;

/// Mints the cursor for the page starting at `offset`.
pub(crate) fn encode(version: &str, method: &str, offset: usize, hash: u64) -> String {
    let raw = format!("{version}|{method}|{offset}|{hash:016x}");
    format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(raw))
}

/// Reads a cursor back, returning the offset it points at.
pub(crate) fn decode(
    cursor: &str,
    version: &str,
    method: &str,
    hash: u64,
    len: usize,
) -> Result<usize, RpcError> {
    if cursor.is_empty() {
        // The empty string is a valid cursor: the first page.
        return Ok(0);
    }
    let invalid = || RpcError::invalid_params("Invalid cursor");
    if cursor.len() > MAX_CURSOR_LEN {
        return Err(invalid());
    }
    let body = cursor.strip_prefix(PREFIX).ok_or_else(invalid)?;
    let raw = URL_SAFE_NO_PAD.decode(body).map_err(|_| invalid())?;
    let raw = String::from_utf8(raw).map_err(|_| invalid())?;
    let mut fields = raw.split('|');
    let (Some(v), Some(m), Some(off), Some(h), None) = (
        fields.next(),
        fields.next(),
        fields.next(),
        fields.next(),
        fields.next(),
    ) else {
        return Err(invalid());
    };
    if v != version || m != method {
        return Err(invalid());
    }
    if h != format!("{hash:016x}") {
        return Err(RpcError::invalid_params(
            "Invalid cursor: the list has changed; start again",
        ));
    }
    let offset: usize = off.parse().map_err(|_| invalid())?;
    if offset == 0 || offset >= len.max(1) {
        return Err(invalid());
    }
    Ok(offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_scoping() {
        let c = encode("2026-07-28", "tools/list", 2, 42);
        assert_eq!(decode(&c, "2026-07-28", "tools/list", 42, 4).ok(), Some(2));
        assert!(decode(&c, "2025-11-25", "tools/list", 42, 4).is_err());
        assert!(decode(&c, "2026-07-28", "prompts/list", 42, 4).is_err());
        assert!(decode(&c, "2026-07-28", "tools/list", 43, 4).is_err());
        assert!(decode(&c, "2026-07-28", "tools/list", 42, 2).is_err());
        assert!(decode("garbage", "2026-07-28", "tools/list", 42, 4).is_err());
        assert!(decode("c1.!!", "2026-07-28", "tools/list", 42, 4).is_err());
        assert_eq!(decode("", "2026-07-28", "tools/list", 42, 4).ok(), Some(0));
    }
}
