//! What [`PgBus`](super::PgBus) accepts of a URL's TLS parameters, checked before any
//! connection. sqlx (rustls) does not verify as libpq does: the CAs of `sslrootcert`
//! are added to the system's trust anchors (never used alone), and `verify-ca` checks
//! no host name; with `prefer` or `require` it checks nothing, `sslrootcert` or not
//! (libpq would treat `require` with a root certificate as `verify-ca`). So a URL that
//! asks for a check sqlx would not make is refused, never silently weakened:
//!
//! - `sslmode=verify-ca`: any publicly trusted certificate, for any host, would pass.
//! - `sslrootcert` (or `PGSSLROOTCERT`) with `prefer` or `require`: nothing checked,
//!   and `prefer` may even go on in plain text.
//!
//! Both errors name `sslmode=verify-full`, which checks the chain and the host name.

use snodo::bus::BusError;
use sqlx::postgres::PgSslMode;

/// The URL's query keys sqlx reads as the root certificate file.
const ROOT_CERT_KEYS: [&str; 3] = ["sslrootcert", "ssl-root-cert", "ssl-ca"];

/// Checks `url`'s TLS parameters, `mode` being the `sslmode` sqlx parsed from it (or
/// from `PGSSLMODE`): the combinations above are refused, and an unreadable
/// `sslrootcert` file is named (sqlx reads it at each connection and its error does
/// not say which file).
///
/// # Errors
/// [`BusError::Invalid`], saying what to write instead.
pub(super) fn check(url: &str, mode: PgSslMode) -> Result<(), BusError> {
    let root_cert = root_cert(url)?;
    let env = std::env::var_os("PGSSLROOTCERT").is_some_and(|v| !v.is_empty());
    policy(mode, root_cert || env)
}

/// Whether `mode` may be used, `root_cert` saying whether a CA file is named.
fn policy(mode: PgSslMode, root_cert: bool) -> Result<(), BusError> {
    match mode {
        PgSslMode::VerifyCa => Err(BusError::Invalid(
            "sslmode=verify-ca is not supported: this client would check the certificate \
             against the system's trust anchors too and not its host name, so any publicly \
             trusted certificate would pass; use sslmode=verify-full"
                .to_owned(),
        )),
        PgSslMode::Prefer | PgSslMode::Require if root_cert => Err(BusError::Invalid(format!(
            "sslrootcert needs sslmode=verify-full: with sslmode={} the certificate \
                 would not be checked at all",
            if matches!(mode, PgSslMode::Prefer) {
                "prefer (the default)"
            } else {
                "require"
            }
        ))),
        _ => Ok(()),
    }
}

/// Whether `url`'s query names a root certificate file; an unreadable one (a value
/// without percent-escapes, which are left to sqlx) is an error naming it.
fn root_cert(url: &str) -> Result<bool, BusError> {
    let query = url.split_once('?').map_or("", |(_, q)| q);
    let query = query.split_once('#').map_or(query, |(q, _)| q);
    let mut named = false;
    for (key, path) in query.split('&').filter_map(|kv| kv.split_once('=')) {
        if !ROOT_CERT_KEYS.contains(&key) {
            continue;
        }
        named = true;
        if path.contains('%') || path.contains('+') {
            continue;
        }
        let readable = std::fs::metadata(path).and_then(|m| {
            if m.is_file() {
                Ok(())
            } else {
                Err(std::io::Error::other("not a file"))
            }
        });
        if let Err(e) = readable {
            return Err(BusError::Invalid(format!("{key} {path:?}: {e}")));
        }
    }
    Ok(named)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(mode: PgSslMode, root_cert: bool) -> String {
        match policy(mode, root_cert) {
            Err(BusError::Invalid(e)) => e,
            other => panic!("{mode:?}, root cert {root_cert}: {other:?}"),
        }
    }

    #[test]
    fn verify_ca_is_refused_with_or_without_a_root_cert() {
        for root_cert in [true, false] {
            let e = refused(PgSslMode::VerifyCa, root_cert);
            assert!(e.contains("use sslmode=verify-full"), "{e}");
        }
    }

    #[test]
    fn a_root_cert_with_prefer_or_require_is_refused() {
        for mode in [PgSslMode::Prefer, PgSslMode::Require] {
            let e = refused(mode, true);
            assert!(
                e.starts_with("sslrootcert needs sslmode=verify-full"),
                "{e}"
            );
        }
    }

    #[test]
    fn what_checks_what_it_says_is_accepted() {
        for mode in [PgSslMode::Disable, PgSslMode::Prefer, PgSslMode::Require] {
            assert!(policy(mode, false).is_ok(), "{mode:?}");
        }
        for root_cert in [true, false] {
            assert!(policy(PgSslMode::VerifyFull, root_cert).is_ok());
        }
        // Plain text, as asked: libpq ignores the file too.
        assert!(policy(PgSslMode::Disable, true).is_ok());
    }

    #[test]
    fn the_root_cert_is_found_under_each_key_and_a_missing_file_named() {
        for key in ROOT_CERT_KEYS {
            let url = format!("postgres://h/db?sslmode=verify-full&{key}=/nonexistent/ca.pem");
            match root_cert(&url) {
                Err(BusError::Invalid(e)) => assert!(e.contains("/nonexistent/ca.pem"), "{e}"),
                other => panic!("{key}: {other:?}"),
            }
            let escaped = format!("postgres://h/db?{key}=%2Fca.pem");
            assert!(matches!(root_cert(&escaped), Ok(true)), "{key}");
        }
        assert!(matches!(
            root_cert("postgres://h/db?sslmode=require"),
            Ok(false)
        ));
        assert!(matches!(
            root_cert("postgres://h/db#sslrootcert=x"),
            Ok(false)
        ));
    }
}
