//! HTTP admission rules applied before any JSON is read: Host and Origin
//! (DNS-rebinding protection), Content-Type and Accept.

use http::{Response, Uri, header};

use super::body::Body;
use super::config::HttpConfig;
use super::headers::{RequestHeaders, Seen};
use super::response;

/// Why a request was refused before its body was read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// `Host` names a host outside the allow-list (or is missing).
    Host,
    /// `Origin` names a host outside the allow-list, or is malformed.
    Origin,
    /// More than one `Origin` header.
    Origins,
    /// The body is not declared as `application/json`.
    ContentType,
    /// `Accept` does not cover both JSON and SSE.
    Accept,
}

impl Refused {
    /// The HTTP answer.
    pub(crate) fn response(self) -> Response<Body> {
        match self {
            Self::Host => response::forbidden("Forbidden: Host is not allowed"),
            Self::Origin => response::forbidden("Forbidden: Origin is not allowed"),
            Self::Origins => response::forbidden("Forbidden: more than one Origin header"),
            Self::ContentType => response::unsupported_media_type(),
            Self::Accept => response::not_acceptable(),
        }
    }
}

/// The host of an authority (`host`, `host:port`, `[v6]`, `[v6]:port`), without its
/// port and brackets; `None` when it is malformed: anything after a closing bracket but
/// a port (`[::1]evil.com`, `[::1].evil.com:80`, `[::1]@evil.com`), user info, a
/// bracket elsewhere, or an empty host.
fn host_of(authority: &str) -> Option<&str> {
    // (Byte scans: `rsplit_once` with a `char` pattern cost ~120 instructions a request.)
    let bytes = authority.as_bytes();
    let is_port = |rest: &[u8]| rest.iter().all(u8::is_ascii_digit);
    let host = if let Some(rest) = authority.strip_prefix('[') {
        let close = rest.bytes().position(|b| b == b']')?;
        let after = &rest.as_bytes()[close + 1..];
        match after.split_first() {
            None => {}
            Some((b':', port)) if is_port(port) => {}
            Some(_) => return None,
        }
        &rest[..close]
    } else {
        match bytes.iter().rposition(|&b| b == b':') {
            Some(colon) if is_port(&bytes[colon + 1..]) => &authority[..colon],
            _ => authority,
        }
    };
    let malformed = host.is_empty() || host.bytes().any(|b| matches!(b, b'@' | b'[' | b']' | b'/'));
    (!malformed).then_some(host)
}

fn listed(list: &[String], host: &str) -> bool {
    list.iter().any(|h| h.eq_ignore_ascii_case(host))
}

/// Checks Host and Origin against the allow-lists.
pub(crate) fn check_origin(
    cfg: &HttpConfig,
    headers: &RequestHeaders<'_>,
    uri: &Uri,
) -> Result<(), Refused> {
    if let Some(allowed) = &cfg.allowed_hosts {
        let host = match headers.host {
            Seen::Once(h) => h.to_str().ok().map(str::trim),
            Seen::Absent => uri.authority().map(http::uri::Authority::as_str),
            Seen::Repeated(_) => None,
        };
        if !host.and_then(host_of).is_some_and(|h| listed(allowed, h)) {
            return Err(Refused::Host);
        }
    }
    match headers.origin {
        Seen::Absent => Ok(()),
        Seen::Once(o) => {
            let ok = o
                .to_str()
                .ok()
                .and_then(|o| o.parse::<Uri>().ok())
                .is_some_and(|u| {
                    matches!(u.scheme_str(), Some("http" | "https"))
                        && u.authority().is_some_and(|a| {
                            host_of(a.as_str()).is_some_and(|h| listed(&cfg.allowed_origins, h))
                        })
                });
            if ok { Ok(()) } else { Err(Refused::Origin) }
        }
        Seen::Repeated(_) => Err(Refused::Origins),
    }
}

/// Checks that the body is declared as JSON.
pub(crate) fn check_content_type(headers: &RequestHeaders<'_>) -> Result<(), Refused> {
    let ok = match headers.content_type {
        Seen::Once(v) => v.to_str().ok().is_some_and(|v| {
            let essence = v.split(';').next().unwrap_or_default().trim();
            essence.eq_ignore_ascii_case("application/json")
        }),
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(Refused::ContentType)
    }
}

/// Checks that the client accepts both a JSON and an SSE answer (wildcards count).
pub(crate) fn check_accept(headers: &RequestHeaders<'_>) -> Result<(), Refused> {
    /// What MCP clients send: accepted without parsing the media ranges.
    const USUAL: [&[u8]; 2] = [
        b"application/json, text/event-stream",
        b"text/event-stream, application/json",
    ];
    if let Seen::Once(v) = headers.accept {
        if USUAL.contains(&v.as_bytes()) {
            return Ok(());
        }
    }
    let (mut json, mut sse) = (false, false);
    for value in headers
        .map
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
    {
        for item in value.split(',') {
            let mut parts = item.split(';');
            let range = parts.next().unwrap_or_default().trim();
            let refused = parts.any(|p| {
                let p = p.trim();
                p.strip_prefix("q=")
                    .is_some_and(|q| q.trim().parse::<f32>().is_ok_and(|q| q <= 0.0))
            });
            if refused {
                continue;
            }
            let is = |media: &str| range.eq_ignore_ascii_case(media);
            if is("*/*") {
                (json, sse) = (true, true);
            } else if is("application/json") || is("application/*") {
                json = true;
            } else if is("text/event-stream") || is("text/*") {
                sse = true;
            }
        }
    }
    if json && sse {
        Ok(())
    } else {
        Err(Refused::Accept)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::{HeaderMap, HeaderValue};

    /// The map, leaked for the test's duration (the scan borrows it).
    fn headers(pairs: &[(&'static str, &'static str)]) -> RequestHeaders<'static> {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_static(v));
        }
        RequestHeaders::scan(Box::leak(Box::new(h)))
    }

    #[test]
    fn host_and_origin() {
        let cfg = HttpConfig::default();
        let uri = Uri::from_static("/mcp");
        assert!(check_origin(&cfg, &headers(&[("host", "127.0.0.1:3000")]), &uri).is_ok());
        assert!(check_origin(&cfg, &headers(&[("host", "[::1]:3000")]), &uri).is_ok());
        assert!(check_origin(&cfg, &headers(&[("host", "LOCALHOST")]), &uri).is_ok());
        assert!(check_origin(&cfg, &headers(&[("host", "evil.example.com")]), &uri).is_err());
        assert!(
            check_origin(
                &cfg,
                &headers(&[("host", "localhost.evil.example.com:80")]),
                &uri
            )
            .is_err()
        );
        assert!(check_origin(&cfg, &headers(&[]), &uri).is_err());
        // Malformed hosts are refused, however close to a listed name (issue 37).
        for bad in [
            "[::1]evil.com",
            "[::1].evil.com:80",
            "[::1]@evil.com",
            "[::1]:80x",
            "[::1",
            "user@localhost",
            "localhost@evil.com:80",
            "[]",
            ":80",
        ] {
            assert!(
                check_origin(&cfg, &headers(&[("host", bad)]), &uri).is_err(),
                "{bad}"
            );
        }
        let ok = headers(&[("host", "localhost"), ("origin", "http://localhost:9999")]);
        assert!(check_origin(&cfg, &ok, &uri).is_ok());
        for bad in [
            "http://evil.example.com",
            "http://user@localhost:4000",
            "null",
            "file://localhost",
        ] {
            let h = headers(&[("host", "localhost"), ("origin", bad)]);
            assert!(check_origin(&cfg, &h, &uri).is_err(), "{bad}");
        }
        assert!(check_origin(&cfg.any_host(), &headers(&[("host", "x.example")]), &uri).is_ok());
    }

    #[test]
    fn media_types() {
        assert!(
            check_content_type(&headers(&[(
                "content-type",
                "application/json; charset=utf-8"
            )]))
            .is_ok()
        );
        assert!(check_content_type(&headers(&[("content-type", "text/plain")])).is_err());
        assert!(check_content_type(&headers(&[])).is_err());
        assert!(
            check_accept(&headers(&[(
                "accept",
                "application/json, text/event-stream"
            )]))
            .is_ok()
        );
        assert!(check_accept(&headers(&[("accept", "*/*")])).is_ok());
        assert!(check_accept(&headers(&[("accept", "application/json")])).is_err());
        assert!(
            check_accept(&headers(&[(
                "accept",
                "application/json, text/event-stream;q=0"
            )]))
            .is_err()
        );
        assert!(check_accept(&headers(&[])).is_err());
        // Two Accept headers are one list; two Content-Type headers are refused, and
        // so are two Hosts and two Origins.
        let split = [
            ("accept", "application/json"),
            ("accept", "text/event-stream"),
        ];
        assert!(check_accept(&headers(&split)).is_ok());
        let two = [
            ("content-type", "application/json"),
            ("content-type", "application/json"),
        ];
        assert!(check_content_type(&headers(&two)).is_err());
        let uri = Uri::from_static("/mcp");
        let cfg = HttpConfig::default();
        let hosts = [("host", "localhost"), ("host", "localhost")];
        assert_eq!(
            check_origin(&cfg, &headers(&hosts), &uri),
            Err(Refused::Host)
        );
        let origins = [
            ("host", "localhost"),
            ("origin", "http://localhost"),
            ("origin", "http://localhost"),
        ];
        assert_eq!(
            check_origin(&cfg, &headers(&origins), &uri),
            Err(Refused::Origins)
        );
    }
}
