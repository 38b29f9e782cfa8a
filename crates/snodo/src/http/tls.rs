//! TLS in the server (feature `tls`): rustls with the ring provider, a PEM certificate
//! chain and private key read from files, HTTP/2 and HTTP/1.1 offered by ALPN, and the
//! pair reloaded without dropping connections: new handshakes get the new pair from a
//! resolver whose current pair is swapped atomically, open connections keep theirs.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock};

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

/// The server's TLS acceptor.
pub(crate) type Acceptor = tokio_rustls::TlsAcceptor;

/// Why a certificate and key could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    /// A file could not be read or holds no PEM block of the kind needed.
    #[error("{path}: {reason}")]
    File {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The private key does not belong to the certificate.
    #[error("{key} is not the private key of the certificate in {cert}")]
    Mismatch {
        /// The certificate file.
        cert: PathBuf,
        /// The key file.
        key: PathBuf,
    },
    /// rustls refused the configuration.
    #[error("TLS configuration: {0}")]
    Config(String),
    /// The reload signal could not be installed.
    #[error("cannot listen for SIGHUP: {0}")]
    Signal(#[from] io::Error),
}

/// A certificate chain and private key read from PEM files, reloadable.
///
/// ```no_run
/// # async fn run(runtime: snodo::Runtime) -> Result<(), Box<dyn std::error::Error>> {
/// use snodo::http::{HttpConfig, Server, TlsCertificates};
/// let certificates = TlsCertificates::load("cert.pem", "key.pem")?;
/// Server::bind(runtime, "127.0.0.1:8443".parse()?, HttpConfig::default())
///     .await?
///     .tls(certificates)
///     .run() // reloads the pair on SIGHUP
///     .await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct TlsCertificates {
    inner: Arc<Resolver>,
}

impl fmt::Debug for TlsCertificates {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsCertificates")
            .field("cert", &self.inner.cert)
            .field("key", &self.inner.key)
            .finish_non_exhaustive()
    }
}

struct Resolver {
    cert: PathBuf,
    key: PathBuf,
    provider: Arc<CryptoProvider>,
    current: RwLock<Arc<CertifiedKey>>,
}

impl fmt::Debug for Resolver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Resolver")
            .field("cert", &self.cert)
            .finish_non_exhaustive()
    }
}

impl ResolvesServerCert for Resolver {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let current = self.current.read().unwrap_or_else(PoisonError::into_inner);
        Some(Arc::clone(&current))
    }
}

impl TlsCertificates {
    /// Reads the certificate chain (PEM, leaf first) from `cert` and the private key
    /// (PEM: PKCS#8, PKCS#1 or SEC1) from `key`, and checks that they belong together.
    pub fn load(cert: impl Into<PathBuf>, key: impl Into<PathBuf>) -> Result<Self, TlsError> {
        let (cert, key) = (cert.into(), key.into());
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let pair = read_pair(&cert, &key, &provider)?;
        Ok(Self {
            inner: Arc::new(Resolver {
                cert,
                key,
                provider,
                current: RwLock::new(Arc::new(pair)),
            }),
        })
    }

    /// Reads the files again: new connections get the new pair, open ones keep theirs.
    /// On an error the pair in use stays.
    pub fn reload(&self) -> Result<(), TlsError> {
        let r = &self.inner;
        let pair = read_pair(&r.cert, &r.key, &r.provider)?;
        *r.current.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(pair);
        Ok(())
    }

    /// The acceptor of a listener using these certificates (ALPN `h2`, `http/1.1`).
    pub(crate) fn acceptor(&self) -> Acceptor {
        let resolver: Arc<dyn ResolvesServerCert> = Arc::clone(&self.inner) as _;
        // (The ring provider's safe defaults always build: TLS 1.2 and 1.3.)
        let mut config = match rustls::ServerConfig::builder_with_provider(Arc::clone(
            &self.inner.provider,
        ))
        .with_safe_default_protocol_versions()
        {
            Ok(b) => b.with_no_client_auth().with_cert_resolver(resolver),
            Err(e) => {
                tracing::error!(error = %e, "TLS protocol versions refused; using rustls defaults");
                rustls::ServerConfig::builder()
                    .with_no_client_auth()
                    .with_cert_resolver(resolver)
            }
        };
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Acceptor::from(Arc::new(config))
    }

    /// Reloads on every SIGHUP (`hup`, when it is already listened for) until the
    /// returned guard is dropped, logging the outcome.
    #[cfg(unix)]
    pub(crate) fn reload_on_sighup(
        &self,
        hup: Option<tokio::signal::unix::Signal>,
    ) -> Result<ReloadTask, TlsError> {
        let mut hup = match hup {
            Some(h) => h,
            None => tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())?,
        };
        let certificates = self.clone();
        let task = tokio::spawn(async move {
            while hup.recv().await.is_some() {
                match certificates.reload() {
                    Ok(()) => tracing::info!(
                        cert = %certificates.inner.cert.display(),
                        "SIGHUP: TLS certificate and key reloaded"
                    ),
                    Err(e) => tracing::error!(
                        error = %e,
                        "SIGHUP: TLS certificate and key not reloaded; the previous pair stays"
                    ),
                }
            }
        });
        Ok(ReloadTask::new(task))
    }
}

/// The SIGHUP reload task, stopped when dropped.
pub(crate) type ReloadTask = tokio_util::task::AbortOnDropHandle<()>;

fn file_error(path: &Path, reason: impl fmt::Display) -> TlsError {
    TlsError::File {
        path: path.to_owned(),
        reason: reason.to_string(),
    }
}

fn read_pair(cert: &Path, key: &Path, provider: &CryptoProvider) -> Result<CertifiedKey, TlsError> {
    let chain = CertificateDer::pem_file_iter(cert)
        .map_err(|e| file_error(cert, e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| file_error(cert, e))?;
    if chain.is_empty() {
        return Err(file_error(
            cert,
            "no PEM certificate (BEGIN CERTIFICATE) found",
        ));
    }
    let der = PrivateKeyDer::from_pem_file(key).map_err(|e| file_error(key, e))?;
    let signing = provider
        .key_provider
        .load_private_key(der)
        .map_err(|e| file_error(key, e))?;
    let pair = CertifiedKey::new(chain, signing);
    match pair.keys_match() {
        Ok(()) | Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::Unknown)) => {
            Ok(pair)
        }
        Err(rustls::Error::InconsistentKeys(_)) => Err(TlsError::Mismatch {
            cert: cert.to_owned(),
            key: key.to_owned(),
        }),
        Err(e) => Err(TlsError::Config(e.to_string())),
    }
}
