//! The buses over TLS: the contract suite against PostgreSQL and Redis servers that take
//! TLS connections only (`scale/postgres.sh start DIR tls`, `scale/redis.sh start DIR
//! tls`; `.ci/run` starts both and exports `SNODO_TEST_PG_TLS_URL` and
//! `SNODO_TEST_REDIS_TLS_URL`, URLs naming the throwaway CA as `sslrootcert`), the
//! URLs' own TLS parameters honoured, and a server whose certificate another CA signed
//! refused with an error that names the certificate and not the password.

mod support;

use std::sync::Arc;
use std::time::Duration;

use snodo::bus::{Bus, BusError, contract};
use snodo_bus::{PgBus, PgBusOptions, RedisBus, RedisBusOptions};

const BACKLOG: usize = 32;
const PG: &str = "SNODO_TEST_PG_TLS_URL";
const REDIS: &str = "SNODO_TEST_REDIS_TLS_URL";
const PASSWORD: &str = "s3cret-not-shown";

fn pg_options(namespace: &str) -> PgBusOptions {
    PgBusOptions {
        namespace: namespace.to_owned(),
        backlog: BACKLOG,
        ..PgBusOptions::default()
    }
}

fn redis_options(namespace: &str) -> RedisBusOptions {
    RedisBusOptions {
        namespace: namespace.to_owned(),
        backlog: BACKLOG,
        ..RedisBusOptions::default()
    }
}

/// `url` trusting the CA that signed nothing here instead of the server's.
fn wrong_ca(url: &str) -> String {
    assert!(url.contains("/ca.pem"), "{url} names no ca.pem");
    url.replace("/ca.pem", "/other-ca.pem")
}

/// `url` with `user:PASSWORD@` (or `:PASSWORD@`) before its host.
fn with_password(url: &str, user: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let rest = rest.split_once('@').map_or(rest, |(_, r)| r);
    format!("{scheme}://{user}:{PASSWORD}@{rest}")
}

/// The error of a connection that must fail: it names a certificate problem and does
/// not show the password.
fn refused<T>(what: &str, got: Result<T, BusError>) -> String {
    let e = match got {
        Err(e) => e.to_string(),
        Ok(_) => panic!("{what}: connected"),
    };
    println!("{what}: {e}");
    assert!(
        !e.contains(PASSWORD),
        "{what}: the error shows the password: {e}"
    );
    e
}

fn names_the_certificate(what: &str, e: &str) {
    let lower = e.to_lowercase();
    assert!(
        lower.contains("certificate") || lower.contains("unknownissuer"),
        "{what}: the error does not say the certificate was refused: {e}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_bus_over_tls_passes_the_contract() {
    let Some(url) = support::url(PG) else { return };
    assert!(url.contains("sslmode=verify-full"), "{url}");
    let ns = support::namespace("pgtls");
    let report = contract::run_all(
        || async { support::pg_bus(&url, pg_options(&ns)).await },
        BACKLOG,
    )
    .await;
    println!("postgres bus over TLS (sslmode=verify-full): {report:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_bus_over_tls_passes_the_contract() {
    let Some(url) = support::url(REDIS) else {
        return;
    };
    assert!(url.starts_with("rediss://"), "{url}");
    let ns = support::namespace("redistls");
    let report = contract::run_all(
        || async { support::redis_bus(&url, redis_options(&ns)).await },
        BACKLOG,
    )
    .await;
    println!("redis bus over TLS (rediss://, sslrootcert): {report:?}");
}

/// `url` without its `sslrootcert` parameter.
fn without_root_cert(url: &str) -> String {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let kept: Vec<&str> = query
        .split('&')
        .filter(|kv| !kv.is_empty() && !kv.starts_with("sslrootcert="))
        .collect();
    assert!(
        kept.len() < query.split('&').count(),
        "{url} names no sslrootcert"
    );
    if kept.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", kept.join("&"))
    }
}

/// The error of a URL refused before any connection, as [`BusError::Invalid`].
fn invalid<T>(what: &str, got: Result<T, BusError>) -> String {
    match got {
        Err(BusError::Invalid(e)) => {
            println!("{what}: {e}");
            assert!(
                !e.contains(PASSWORD),
                "{what}: the error shows the password"
            );
            e
        }
        Err(e) => panic!("{what}: not refused as invalid: {e}"),
        Ok(_) => panic!("{what}: connected"),
    }
}

/// `sslmode` is honoured: `disable` is refused by a server taking TLS only (so the
/// contract above ran over TLS), `require` without `sslrootcert` encrypts without
/// checking the certificate, `verify-full` with the wrong CA is refused and says why,
/// without the password. What sqlx would not check as asked is refused before any
/// connection: `verify-ca`, and `sslrootcert` with `require` or `prefer` (the default).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_sslmode_is_honoured_and_a_wrong_ca_refused() {
    let Some(url) = support::url(PG) else { return };
    let quick = |ns: &str| PgBusOptions {
        deadline: Duration::from_secs(2),
        ..pg_options(ns)
    };
    let ns = support::namespace("pgtlsmode");
    let plain = url.replace("sslmode=verify-full", "sslmode=disable");
    let e = refused("sslmode=disable", PgBus::connect(&plain, quick(&ns)).await);
    assert!(e.contains("pg_hba") || e.contains("encryption"), "{e}");

    let unchecked = without_root_cert(&url).replace("sslmode=verify-full", "sslmode=require");
    let bus: Arc<dyn Bus> = Arc::new(
        PgBus::connect(&unchecked, quick(&ns))
            .await
            .unwrap_or_else(|e| panic!("sslmode=require (nothing checked): {e}")),
    );
    contract::events_reach_every_handle(&|| async { Arc::clone(&bus) }).await;

    let wrong = with_password(&wrong_ca(&url), "snodo");
    let e = refused(
        "verify-full, wrong CA",
        PgBus::connect(&wrong, quick(&ns)).await,
    );
    names_the_certificate("verify-full, wrong CA", &e);
    for mode in ["sslmode=require", "sslmode=prefer", ""] {
        let asked = wrong
            .replace("sslmode=verify-full", mode)
            .replace("?&", "?");
        let e = invalid(
            &format!("sslrootcert with {mode:?}"),
            PgBus::connect(&asked, quick(&ns)).await,
        );
        assert!(e.contains("sslrootcert needs sslmode=verify-full"), "{e}");
    }
    for url in [wrong.clone(), without_root_cert(&wrong)] {
        let e = invalid(
            "verify-ca",
            PgBus::connect(&url.replace("verify-full", "verify-ca"), quick(&ns)).await,
        );
        assert!(e.contains("use sslmode=verify-full"), "{e}");
    }
    let missing = with_password(&url.replace("/ca.pem", "/missing.pem"), "snodo");
    let e = refused(
        "sslrootcert missing",
        PgBus::connect(&missing, quick(&ns)).await,
    );
    assert!(
        e.contains("missing.pem"),
        "the error does not name the file: {e}"
    );
}

/// `rediss://` is checked against `sslrootcert`: the wrong CA is refused and says why,
/// without the password; a `redis://` URL to a TLS port does not connect; `#insecure`
/// connects with nothing checked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_tls_parameters_are_honoured_and_a_wrong_ca_refused() {
    let Some(url) = support::url(REDIS) else {
        return;
    };
    let quick = |ns: &str| RedisBusOptions {
        deadline: Duration::from_secs(2),
        ..redis_options(ns)
    };
    let ns = support::namespace("redistlsmode");
    let wrong = with_password(&wrong_ca(&url), "");
    let e = refused(
        "rediss://, wrong CA",
        RedisBus::connect(&wrong, quick(&ns)).await,
    );
    names_the_certificate("rediss://, wrong CA", &e);
    // No sslrootcert: the system's trust anchors, which do not hold the test CA.
    let system = url.split_once('?').map_or(url.as_str(), |(u, _)| u);
    let e = refused(
        "rediss://, system roots",
        RedisBus::connect(system, quick(&ns)).await,
    );
    names_the_certificate("rediss://, system roots", &e);
    let plain = system.replacen("rediss://", "redis://", 1);
    refused(
        "redis:// to a TLS port",
        RedisBus::connect(&plain, quick(&ns)).await,
    );

    let insecure = format!("{system}#insecure");
    let bus: Arc<dyn Bus> = Arc::new(
        RedisBus::connect(&insecure, quick(&ns))
            .await
            .unwrap_or_else(|e| panic!("rediss://…#insecure: {e}")),
    );
    contract::events_reach_every_handle(&|| async { Arc::clone(&bus) }).await;
}

/// The outage scenario of `tests/faults.rs` over TLS: connections cut and refused by a
/// proxy on loopback (the certificate names 127.0.0.1, so it still verifies), then
/// passed again; every reconnection is a new TLS handshake with the same URL.
async fn cut_and_back(name: &str, url: &str, bus: impl AsyncFnOnce(String) -> Arc<dyn Bus>) {
    let proxy = support::Proxy::start(support::host_port(url)).await;
    let bus = bus(support::via(url, proxy.addr)).await;
    let o = support::outage(
        bus,
        FAULT_DEADLINE,
        || proxy.cut(),
        || async { proxy.restore() },
    )
    .await;
    println!(
        "{name} over TLS, connections cut: down {:?} after, slowest call {:?}, up {:?} after the restore",
        o.detected, o.slowest_call, o.recovered
    );
}

const FAULT_DEADLINE: Duration = Duration::from_millis(500);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_over_tls_cut_and_back() {
    let Some(url) = support::url(PG) else { return };
    cut_and_back("postgres", &url, async |u| {
        let options = PgBusOptions {
            deadline: FAULT_DEADLINE,
            heartbeat: Duration::from_millis(200),
            ..pg_options(&support::namespace("pgtlscut"))
        };
        support::pg_bus(&u, options).await
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_over_tls_cut_and_back() {
    let Some(url) = support::url(REDIS) else {
        return;
    };
    cut_and_back("redis", &url, async |u| {
        let options = RedisBusOptions {
            deadline: FAULT_DEADLINE,
            heartbeat: Duration::from_millis(200),
            ..redis_options(&support::namespace("redistlscut"))
        };
        support::redis_bus(&u, options).await
    })
    .await;
}
