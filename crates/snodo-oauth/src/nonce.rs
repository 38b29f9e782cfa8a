//! DPoP server nonces (RFC 9449 §9) that every instance accepts without sharing state:
//! a nonce is the second it was issued and an HMAC-SHA256 tag of it under a key the
//! instances share (the deployment's state key), base64url. It is good for its
//! lifetime from that second; an instance checks the tag and the age, nothing else.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use hmac::{Hmac, Mac as _};
use sha2::Sha256;

/// The bytes of the tag kept (128 bits).
const TAG: usize = 16;
/// How far in the future an issue time may lie (another instance's clock).
const SKEW: u64 = 5;

/// Issues and checks nonces.
pub(crate) struct Nonces {
    key: Vec<u8>,
    lifetime: u64,
}

impl std::fmt::Debug for Nonces {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Nonces")
            .field("lifetime", &self.lifetime)
            .finish_non_exhaustive()
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl Nonces {
    /// Nonces tagged with `key`, good for `lifetime` (at least a second).
    pub(crate) fn new(key: Vec<u8>, lifetime: Duration) -> Self {
        Self {
            key,
            lifetime: lifetime.as_secs().max(1),
        }
    }

    fn mac(&self, issued: u64) -> Hmac<Sha256> {
        // HMAC takes a key of any length: this cannot fail.
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.key)
            .unwrap_or_else(|_| unreachable!("HMAC accepts any key length"));
        mac.update(b"snodo dpop-nonce\0");
        mac.update(&issued.to_be_bytes());
        mac
    }

    /// A nonce issued now.
    pub(crate) fn issue(&self) -> String {
        self.issue_at(now())
    }

    fn issue_at(&self, issued: u64) -> String {
        let mut raw = issued.to_be_bytes().to_vec();
        raw.extend_from_slice(&self.mac(issued).finalize().into_bytes()[..TAG]);
        B64.encode(raw)
    }

    /// Whether `nonce` was issued with this key and is still good.
    pub(crate) fn check(&self, nonce: &str) -> bool {
        self.check_at(nonce, now())
    }

    fn check_at(&self, nonce: &str, at: u64) -> bool {
        if nonce.len() > 64 {
            return false;
        }
        let Ok(raw) = B64.decode(nonce) else {
            return false;
        };
        let Some((issued, tag)) = raw.split_first_chunk::<8>() else {
            return false;
        };
        if tag.len() != TAG {
            return false;
        }
        let issued = u64::from_be_bytes(*issued);
        issued <= at.saturating_add(SKEW)
            && at <= issued.saturating_add(self.lifetime)
            && self.mac(issued).verify_truncated_left(tag).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nonce_is_good_for_its_lifetime_on_every_instance_with_the_key() {
        let a = Nonces::new(b"shared".to_vec(), Duration::from_secs(300));
        let b = Nonces::new(b"shared".to_vec(), Duration::from_secs(300));
        let n = a.issue_at(1_000);
        assert!(b.check_at(&n, 1_000));
        assert!(b.check_at(&n, 1_300));
        assert!(!b.check_at(&n, 1_301), "expired");
        assert!(b.check_at(&n, 996), "a little clock skew");
        assert!(!b.check_at(&n, 990), "issued in the future");
        let other = Nonces::new(b"other".to_vec(), Duration::from_secs(300));
        assert!(!other.check_at(&n, 1_000), "another key");
    }

    #[test]
    fn forged_and_malformed_nonces_are_refused() {
        let a = Nonces::new(b"k".to_vec(), Duration::from_secs(300));
        let n = a.issue_at(1_000);
        let mut raw = B64.decode(&n).unwrap();
        raw[7] ^= 1; // another second, same tag
        assert!(!a.check_at(&B64.encode(&raw), 1_000));
        for bad in ["", "x", "!!!!", &"A".repeat(80), &n[..n.len() - 2]] {
            assert!(!a.check_at(bad, 1_000), "{bad}");
        }
    }
}
