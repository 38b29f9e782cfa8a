//! The [`Client`] of a Redis bus URL: `redis://` in plaintext, `rediss://` over TLS
//! (rustls, the system's trust anchors), `?sslrootcert=FILE` to trust the CA in that PEM
//! file instead (the parameter PostgreSQL URLs use, read here and removed before
//! redis-rs sees the URL), and redis-rs's own `#insecure` (no verification at all).

use redis::{Client, TlsCertificates};
use snodo::bus::BusError;

/// The query parameter naming a PEM file of CA certificates to trust.
const ROOT_CERT: &str = "sslrootcert";

/// A client for `url`. Nothing of the URL is echoed in an error (it may hold a password).
///
/// # Errors
/// [`BusError::Invalid`] for a URL redis-rs does not read, an `sslrootcert` on a
/// `redis://` URL, or an `sslrootcert` file that cannot be read or holds no certificate.
pub(super) fn client(url: &str) -> Result<Client, BusError> {
    let mut parsed = redis::parse_redis_url(url)
        .ok_or_else(|| BusError::Invalid("bad URL: not a redis:// or rediss:// URL".into()))?;
    let tls = matches!(parsed.scheme(), "rediss" | "valkeys");
    let (root, rest): (Vec<_>, Vec<_>) = parsed
        .query_pairs()
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .partition(|(k, _)| k == ROOT_CERT);
    if tls {
        install_provider();
    }
    let Some((_, path)) = root.into_iter().next_back() else {
        return Client::open(parsed).map_err(bad_url);
    };
    if !tls {
        return Err(BusError::Invalid(format!(
            "{ROOT_CERT} is for rediss:// URLs (TLS), not {}://",
            parsed.scheme()
        )));
    }
    if rest.is_empty() {
        parsed.set_query(None);
    } else {
        parsed.query_pairs_mut().clear().extend_pairs(rest);
    }
    let pem = std::fs::read(&path)
        .map_err(|e| BusError::Invalid(format!("{ROOT_CERT} {path:?}: {e}")))?;
    if !pem
        .windows(b"-----BEGIN CERTIFICATE-----".len())
        .any(|w| w == b"-----BEGIN CERTIFICATE-----")
    {
        return Err(BusError::Invalid(format!(
            "{ROOT_CERT} {path:?}: no PEM certificate in it"
        )));
    }
    let certificates = TlsCertificates {
        client_tls: None,
        root_cert: Some(pem),
    };
    Client::build_with_tls(parsed, certificates).map_err(bad_url)
}

/// Whether `client` connects without checking the server's certificate (`#insecure`).
pub(super) fn unverified(client: &Client) -> bool {
    matches!(
        client.get_connection_info().addr(),
        redis::ConnectionAddr::TcpTls { insecure: true, .. }
    )
}

fn bad_url(e: redis::RedisError) -> BusError {
    // redis-rs's messages about a URL name the problem, not the URL.
    BusError::Invalid(format!("bad URL: {e}"))
}

/// redis-rs builds its TLS configuration with the process's default rustls provider:
/// ring (the workspace's), unless the application installed one first.
fn install_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn invalid(url: &str) -> String {
        match client(url) {
            Err(BusError::Invalid(m)) => m,
            other => panic!("{url}: expected Invalid, got {:?}", other.map(|_| ())),
        }
    }

    /// A file that exists and holds no certificate.
    const NOT_PEM: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");

    #[test]
    fn urls_are_read_and_errors_do_not_echo_them() {
        assert!(client("redis://127.0.0.1:6379/0").is_ok());
        assert!(client("rediss://:pw@127.0.0.1:6379/0").is_ok());
        assert!(client("rediss://127.0.0.1:6379/#insecure").is_ok_and(|c| unverified(&c)));
        assert!(client("rediss://127.0.0.1:6379/").is_ok_and(|c| !unverified(&c)));
        assert!(client("redis://127.0.0.1:6379/#insecure").is_ok_and(|c| !unverified(&c)));
        let m = invalid(&format!(
            "redis://:s3cret@127.0.0.1:1/?sslrootcert={NOT_PEM}"
        ));
        assert!(m.contains("rediss://") && !m.contains("s3cret"), "{m}");
        let m = invalid("rediss://:s3cret@127.0.0.1:1/?sslrootcert=/nonexistent/ca.pem");
        assert!(
            m.contains("/nonexistent/ca.pem") && !m.contains("s3cret"),
            "{m}"
        );
        let m = invalid(&format!(
            "rediss://:s3cret@127.0.0.1:1/?sslrootcert={NOT_PEM}"
        ));
        assert!(
            m.contains("no PEM certificate") && !m.contains("s3cret"),
            "{m}"
        );
        let m = invalid("rediss://:s3cret@127.0.0.1:1/#other");
        assert!(!m.contains("s3cret"), "{m}");
        assert!(invalid("not a url").contains("bad URL"));
    }
}
