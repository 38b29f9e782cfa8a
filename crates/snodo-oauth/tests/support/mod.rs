//! Test kit: signing keys generated in-process, a stand-in authorization server on
//! 127.0.0.1 (metadata, JWKS, introspection) and raw HTTP/1.1 requests.

#![allow(dead_code)]

pub mod mcp;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, EncodingKey, Header, encode};
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;

/// A signing key and its public JWK.
pub struct SigningKey {
    pub kid: String,
    pub alg: Algorithm,
    pub encoding: EncodingKey,
    pub jwk: Value,
    /// The public key bytes (what an HMAC confusion attack signs with).
    pub public: Vec<u8>,
}

fn rsa_private() -> &'static rsa::RsaPrivateKey {
    static KEY: OnceLock<rsa::RsaPrivateKey> = OnceLock::new();
    KEY.get_or_init(|| {
        rsa::RsaPrivateKey::new(&mut rand::thread_rng(), 2048).unwrap_or_else(|e| panic!("{e}"))
    })
}

fn rsa_other() -> &'static rsa::RsaPrivateKey {
    static KEY: OnceLock<rsa::RsaPrivateKey> = OnceLock::new();
    KEY.get_or_init(|| {
        rsa::RsaPrivateKey::new(&mut rand::thread_rng(), 2048).unwrap_or_else(|e| panic!("{e}"))
    })
}

fn rsa_key(private: &rsa::RsaPrivateKey, kid: &str) -> SigningKey {
    use rsa::pkcs1::{EncodeRsaPrivateKey as _, EncodeRsaPublicKey as _};
    use rsa::traits::PublicKeyParts as _;
    let der = private.to_pkcs1_der().unwrap_or_else(|e| panic!("{e}"));
    let public = private
        .to_public_key()
        .to_pkcs1_der()
        .unwrap_or_else(|e| panic!("{e}"))
        .as_bytes()
        .to_vec();
    SigningKey {
        kid: kid.into(),
        alg: Algorithm::RS256,
        encoding: EncodingKey::from_rsa_der(der.as_bytes()),
        jwk: json!({
            "kty": "RSA", "use": "sig", "alg": "RS256", "kid": kid,
            "n": URL_SAFE_NO_PAD.encode(private.n().to_bytes_be()),
            "e": URL_SAFE_NO_PAD.encode(private.e().to_bytes_be()),
        }),
        public,
    }
}

/// The issuer's RSA key under `kid`.
pub fn rsa(kid: &str) -> SigningKey {
    rsa_key(rsa_private(), kid)
}

/// Another RSA key (not the issuer's) under `kid`.
pub fn rsa_impostor(kid: &str) -> SigningKey {
    rsa_key(rsa_other(), kid)
}

/// A fresh P-256 key under `kid`.
pub fn ec(kid: &str) -> SigningKey {
    use p256::elliptic_curve::sec1::ToEncodedPoint as _;
    use p256::pkcs8::EncodePrivateKey as _;
    let secret = p256::SecretKey::random(&mut rand::thread_rng());
    let der = secret.to_pkcs8_der().unwrap_or_else(|e| panic!("{e}"));
    let point = secret.public_key().to_encoded_point(false);
    let (x, y) = (point.x().map(|x| x.to_vec()), point.y().map(|y| y.to_vec()));
    SigningKey {
        kid: kid.into(),
        alg: Algorithm::ES256,
        encoding: EncodingKey::from_ec_der(der.as_bytes()),
        jwk: json!({
            "kty": "EC", "crv": "P-256", "use": "sig", "alg": "ES256", "kid": kid,
            "x": URL_SAFE_NO_PAD.encode(x.unwrap_or_default()),
            "y": URL_SAFE_NO_PAD.encode(y.unwrap_or_default()),
        }),
        public: point.as_bytes().to_vec(),
    }
}

pub fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Signs `claims` with `key`.
pub fn sign(key: &SigningKey, claims: &Value) -> String {
    let mut header = Header::new(key.alg);
    header.kid = Some(key.kid.clone());
    encode(&header, claims, &key.encoding).unwrap_or_else(|e| panic!("{e}"))
}

/// A JWT from parts written by hand (e.g. `alg: none`).
pub fn unsigned(header: &Value, claims: &Value, signature: &str) -> String {
    format!(
        "{}.{}.{signature}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    )
}

/// What the stand-in authorization server serves.
pub struct AsState {
    pub issuer: String,
    pub jwks: Vec<Value>,
    pub up: bool,
    pub jwks_hits: usize,
    /// Opaque token → introspection answer.
    pub opaque: HashMap<String, Value>,
    pub introspections: usize,
}

/// A stand-in authorization server on 127.0.0.1.
pub struct AuthServer {
    pub addr: SocketAddr,
    pub state: Arc<Mutex<AsState>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for AuthServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl AuthServer {
    /// Over plain http://.
    pub async fn start(keys: &[&SigningKey]) -> Self {
        Self::serve(keys, None).await
    }

    /// Over https:// with a fresh self-signed certificate for 127.0.0.1, and that
    /// certificate as PEM (what a client must trust).
    pub async fn start_tls(keys: &[&SigningKey]) -> (Self, String) {
        let cert = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned()])
            .unwrap_or_else(|e| panic!("{e}"));
        let pem = cert.cert.pem();
        let key = rustls_pki_types::PrivateKeyDer::Pkcs8(cert.signing_key.serialize_der().into());
        let config = tokio_rustls::rustls::ServerConfig::builder_with_provider(Arc::new(
            tokio_rustls::rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap_or_else(|e| panic!("{e}"))
        .with_no_client_auth()
        .with_single_cert(vec![cert.cert.der().clone()], key)
        .unwrap_or_else(|e| panic!("{e}"));
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        (Self::serve(keys, Some(acceptor)).await, pem)
    }

    async fn serve(keys: &[&SigningKey], tls: Option<tokio_rustls::TlsAcceptor>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
        let scheme = if tls.is_some() { "https" } else { "http" };
        let state = Arc::new(Mutex::new(AsState {
            issuer: format!("{scheme}://{addr}"),
            jwks: keys.iter().map(|k| k.jwk.clone()).collect(),
            up: true,
            jwks_hits: 0,
            opaque: HashMap::new(),
            introspections: 0,
        }));
        let shared = Arc::clone(&state);
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let state = Arc::clone(&shared);
                match &tls {
                    None => {
                        tokio::spawn(answer(stream, state));
                    }
                    Some(acceptor) => {
                        let accept = acceptor.accept(stream);
                        tokio::spawn(async move {
                            if let Ok(stream) = accept.await {
                                answer(stream, state).await;
                            }
                        });
                    }
                }
            }
        });
        Self { addr, state, task }
    }

    pub fn issuer(&self) -> String {
        self.with(|s| s.issuer.clone())
    }

    pub fn with<R>(&self, f: impl FnOnce(&mut AsState) -> R) -> R {
        f(&mut self.state.lock().unwrap_or_else(|e| panic!("{e}")))
    }
}

async fn answer<S: AsyncRead + AsyncWrite + Unpin>(mut stream: S, state: Arc<Mutex<AsState>>) {
    let Some((head, body)) = read_request(&mut stream).await else {
        return;
    };
    let path = head.split(' ').nth(1).unwrap_or_default().to_owned();
    let (status, doc) = {
        let mut s = state.lock().unwrap_or_else(|e| panic!("{e}"));
        if !s.up {
            (503, json!({"error": "down"}))
        } else {
            match path.as_str() {
                "/.well-known/oauth-authorization-server" => (
                    200,
                    json!({
                        "issuer": s.issuer,
                        "jwks_uri": format!("{}/jwks", s.issuer),
                        "introspection_endpoint": format!("{}/introspect", s.issuer),
                    }),
                ),
                "/jwks" => {
                    s.jwks_hits += 1;
                    (200, json!({ "keys": s.jwks }))
                }
                "/introspect" => {
                    s.introspections += 1;
                    let token = body
                        .split('&')
                        .find_map(|p| p.strip_prefix("token="))
                        .unwrap_or_default()
                        .to_owned();
                    (
                        200,
                        s.opaque
                            .get(&token)
                            .cloned()
                            .unwrap_or_else(|| json!({"active": false})),
                    )
                }
                _ => (404, json!({})),
            }
        }
    };
    let body = doc.to_string();
    let reply = format!(
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(reply.as_bytes()).await;
}

async fn read_request<S: AsyncRead + Unpin>(stream: &mut S) -> Option<(String, String)> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&buf).into_owned();
        if let Some(end) = text.find("\r\n\r\n") {
            let head = text[..end].to_owned();
            let len = head
                .lines()
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.eq_ignore_ascii_case("content-length")
                        .then(|| v.trim().parse::<usize>().ok())?
                })
                .unwrap_or(0);
            if buf.len() >= end + 4 + len {
                let body = String::from_utf8_lossy(&buf[end + 4..end + 4 + len]).into_owned();
                return Some((head, body));
            }
        }
    }
}

/// A raw HTTP answer and the client that reads it: the shared test support's.
pub use snodo_testkit::http::{Reply, send};
