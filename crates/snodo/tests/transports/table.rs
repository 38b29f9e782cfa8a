//! The transports every wire test here runs on, one table: HTTP/1.1, HTTP/2 cleartext
//! (prior knowledge), HTTP/2 over TLS (ALPN) and HTTP/1.1 over a Unix socket; a server
//! started on each, and a client connection speaking it (hyper's client half over the
//! raw socket, so that the version on the wire is the one asked for).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo};
use snodo::Runtime;
use snodo::http::{HttpConfig, Server, TlsCertificates};
use snodo_testkit::Request;
use snodo_testkit::http::{MEDIA, Reply};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpStream, UnixStream};
use tokio::sync::oneshot;
use tokio_rustls::TlsConnector;
use tokio_rustls::rustls::{self, pki_types::ServerName};

/// One way of carrying HTTP to the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    Http1,
    H2c,
    H2Tls,
    Unix,
}

/// Every transport.
pub const ALL: [Transport; 4] = [
    Transport::Http1,
    Transport::H2c,
    Transport::H2Tls,
    Transport::Unix,
];

impl Transport {
    /// Whether requests go over HTTP/2.
    pub fn is_h2(self) -> bool {
        matches!(self, Self::H2c | Self::H2Tls)
    }
}

/// A server on one transport; stopped (and its files removed) on drop.
pub struct Served {
    pub transport: Transport,
    pub addr: Option<SocketAddr>,
    pub socket: Option<PathBuf>,
    pub certificates: Option<TlsCertificates>,
    tls: Option<TlsConnector>,
    pub dir: tempfile::TempDir,
    stop: Option<oneshot::Sender<()>>,
    pub done: Option<tokio::task::JoinHandle<()>>,
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
    }
}

/// A self-signed certificate for `localhost` and its key, as PEM files in `dir`.
pub fn certificate(dir: &std::path::Path, name: &str) -> (PathBuf, PathBuf, Vec<u8>) {
    let key = rcgen::KeyPair::generate().unwrap();
    let params = rcgen::CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
    let cert = params.self_signed(&key).unwrap();
    let (c, k) = (
        dir.join(format!("{name}.crt")),
        dir.join(format!("{name}.key")),
    );
    std::fs::write(&c, cert.pem()).unwrap();
    std::fs::write(&k, key.serialize_pem()).unwrap();
    (c, k, cert.der().to_vec())
}

/// A client trusting exactly `der`, offering `h2` by ALPN.
fn connector(der: Vec<u8>) -> TlsConnector {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(der.into()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec()];
    TlsConnector::from(Arc::new(config))
}

impl Served {
    /// Starts `runtime` under `config` on `transport`.
    pub async fn start(transport: Transport, runtime: Runtime, config: HttpConfig) -> Self {
        let dir = tempfile::Builder::new()
            .prefix("snodo-transports-")
            .tempdir()
            .unwrap();
        let (mut addr, mut socket, mut certificates, mut tls) = (None, None, None, None);
        let server = match transport {
            Transport::Unix => {
                let path = dir.path().join("mcp.sock");
                socket = Some(path.clone());
                Server::bind_unix(runtime, &path, Some(0o600), config).unwrap()
            }
            _ => {
                let s = Server::bind(runtime, "127.0.0.1:0".parse().unwrap(), config)
                    .await
                    .unwrap();
                addr = Some(s.local_addr().unwrap());
                if transport == Transport::H2Tls {
                    let (c, k, der) = certificate(dir.path(), "server");
                    let certs = TlsCertificates::load(c, k).unwrap();
                    certificates = Some(certs.clone());
                    tls = Some(connector(der));
                    s.tls(certs)
                } else {
                    s
                }
            }
        };
        let (tx, rx) = oneshot::channel::<()>();
        let done = tokio::spawn(async move {
            let _ = server
                .drain_timeout(Duration::from_secs(2))
                .run_until(async {
                    let _ = rx.await;
                })
                .await;
        });
        Self {
            transport,
            addr,
            socket,
            certificates,
            tls,
            dir,
            stop: Some(tx),
            done: Some(done),
        }
    }

    /// Asks the server to stop (drain, then end).
    pub fn shutdown(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
    }

    /// The `Host` clients send.
    pub fn host(&self) -> String {
        match self.addr {
            Some(a) if self.transport != Transport::H2Tls => a.to_string(),
            Some(a) => format!("localhost:{}", a.port()),
            None => "localhost".to_owned(),
        }
    }

    /// The raw byte stream to the server (TCP or the Unix socket; no TLS).
    pub async fn stream(&self) -> Box<dyn Io> {
        match (&self.socket, self.addr) {
            (Some(path), _) => Box::new(UnixStream::connect(path).await.unwrap()),
            (None, Some(addr)) => Box::new(TcpStream::connect(addr).await.unwrap()),
            (None, None) => unreachable!("a server listens somewhere"),
        }
    }

    /// A new connection speaking this transport's HTTP.
    pub async fn connect(&self) -> Conn {
        let io = self.stream().await;
        let io: Box<dyn Io> = match &self.tls {
            Some(tls) => {
                let name = ServerName::try_from("localhost").unwrap();
                let s = tls.connect(name, io).await.unwrap();
                assert_eq!(s.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
                Box::new(s)
            }
            None => io,
        };
        let io = TokioIo::new(io);
        let sender = if self.transport.is_h2() {
            let (send, conn) = http2::handshake(TokioExecutor::new(), io).await.unwrap();
            tokio::spawn(conn);
            Sender::H2(send)
        } else {
            let (send, conn) = http1::handshake(io).await.unwrap();
            tokio::spawn(conn);
            Sender::H1(send)
        };
        Conn {
            sender,
            host: self.host(),
            scheme: if self.tls.is_some() { "https" } else { "http" },
        }
    }
}

/// A byte stream of either kind.
pub trait Io: AsyncRead + AsyncWrite + Unpin + Send + 'static {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send + 'static> Io for T {}

enum Sender {
    H1(http1::SendRequest<Full<Bytes>>),
    H2(http2::SendRequest<Full<Bytes>>),
}

/// One client connection.
pub struct Conn {
    sender: Sender,
    host: String,
    scheme: &'static str,
}

impl Conn {
    /// A POST to `/mcp` with the media headers, `headers` and `body`.
    pub fn post(&self, headers: &[(String, String)], body: String) -> http::Request<Full<Bytes>> {
        let h2 = matches!(self.sender, Sender::H2(_));
        let uri = if h2 {
            format!("{}://{}/mcp", self.scheme, self.host)
        } else {
            "/mcp".to_owned()
        };
        let mut b = http::Request::post(uri);
        if !h2 {
            b = b.header("Host", &self.host);
        }
        for (k, v) in MEDIA {
            b = b.header(k, v);
        }
        for (k, v) in headers {
            b = b.header(k, v);
        }
        b.body(Full::new(Bytes::from(body))).unwrap()
    }

    /// Sends `req` and reads the whole answer (with the HTTP version it came in).
    pub async fn send(&mut self, req: http::Request<Full<Bytes>>) -> (http::Version, Reply) {
        let fut = match &mut self.sender {
            Sender::H1(s) => {
                s.ready().await.unwrap();
                futures_util::future::Either::Left(s.send_request(req))
            }
            Sender::H2(s) => {
                s.ready().await.unwrap();
                futures_util::future::Either::Right(s.send_request(req))
            }
        };
        let resp = fut.await.unwrap();
        let (parts, body) = resp.into_parts();
        let body = body.collect().await.unwrap().to_bytes().to_vec();
        let headers = parts
            .headers
            .iter()
            .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
            .collect();
        let reply = Reply {
            status: parts.status.as_u16(),
            headers,
            body,
        };
        (parts.version, reply)
    }

    /// Sends `req` and returns the answer's head and its body unread (an SSE stream).
    pub async fn open(
        &mut self,
        req: http::Request<Full<Bytes>>,
    ) -> http::Response<hyper::body::Incoming> {
        match &mut self.sender {
            Sender::H1(s) => {
                s.ready().await.unwrap();
                s.send_request(req).await.unwrap()
            }
            Sender::H2(s) => {
                s.ready().await.unwrap();
                s.send_request(req).await.unwrap()
            }
        }
    }

    /// Sends a testkit request.
    pub async fn request(&mut self, r: &Request) -> (http::Version, Reply) {
        let req = self.post(&r.headers(), r.body());
        self.send(req).await
    }

    /// Another handle on the same connection (HTTP/2 only).
    pub fn clone_h2(&self) -> Self {
        match &self.sender {
            Sender::H2(s) => Self {
                sender: Sender::H2(s.clone()),
                host: self.host.clone(),
                scheme: self.scheme,
            },
            Sender::H1(_) => panic!("HTTP/1.1 connections carry one request at a time"),
        }
    }
}
