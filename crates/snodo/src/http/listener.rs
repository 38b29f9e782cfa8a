//! What a server listens on: a TCP address or a Unix socket (HTTP over a local byte
//! stream), and the accepted streams the accept loop serves.
//!
//! A Unix socket's file is made with the mode asked for, removed when the listener is
//! dropped, and a file left behind by a server that died (no one listening) is
//! replaced; a socket someone still listens on is refused, and so is a path that is not
//! a socket.

use std::fmt;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
#[cfg(unix)]
use tokio::net::{UnixListener, UnixStream};

/// Where a server listens: `host:port`, or `unix:PATH` for a Unix socket.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ListenAddr {
    /// A TCP address (port 0 picks a free port).
    Tcp(SocketAddr),
    /// A Unix socket's path.
    Unix(PathBuf),
}

impl fmt::Display for ListenAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Tcp(a) => a.fmt(f),
            Self::Unix(p) => write!(f, "unix:{}", p.display()),
        }
    }
}

impl std::str::FromStr for ListenAddr {
    type Err = String;

    /// Parses `unix:PATH` or a socket address (`127.0.0.1:8080`, `[::1]:8080`).
    ///
    /// ```
    /// use snodo::http::ListenAddr;
    /// let a: ListenAddr = "unix:/run/snodo.sock".parse().unwrap();
    /// assert_eq!(a, ListenAddr::Unix("/run/snodo.sock".into()));
    /// assert!(matches!("127.0.0.1:0".parse::<ListenAddr>(), Ok(ListenAddr::Tcp(_))));
    /// assert!("unix:".parse::<ListenAddr>().is_err());
    /// ```
    fn from_str(s: &str) -> Result<Self, String> {
        match s.strip_prefix("unix:") {
            Some("") => Err("unix: needs a path (unix:/run/snodo.sock)".to_owned()),
            Some(path) => Ok(Self::Unix(PathBuf::from(path))),
            None => s
                .parse()
                .map(Self::Tcp)
                .map_err(|e| format!("{s:?} is neither HOST:PORT nor unix:PATH ({e})")),
        }
    }
}

impl From<SocketAddr> for ListenAddr {
    fn from(a: SocketAddr) -> Self {
        Self::Tcp(a)
    }
}

/// A listener the accept loop takes connections from.
pub(crate) trait Accept: Send + 'static {
    /// The accepted connection.
    type Io: Stream;
    /// The next connection.
    fn accept(&self) -> impl Future<Output = io::Result<Self::Io>> + Send;
}

/// An accepted connection.
pub(crate) trait Stream: AsyncRead + AsyncWrite + Unpin + Send + 'static {
    /// Completes once the client has sent something, with what its first bytes say it
    /// speaks (read without being consumed); `None` when it closed (or failed) first.
    fn first_bytes(&self) -> impl Future<Output = Option<Speaks>> + Send;
}

/// HTTP/2's connection preface (RFC 9113 §3.4), which a client speaking HTTP/2 by prior
/// knowledge sends first.
const H2_PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// The HTTP version a connection speaks, as far as its first bytes (or its TLS ALPN)
/// tell: chosen once per connection, so that hyper serves it with that version's own
/// connection, not one that sniffs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Speaks {
    /// HTTP/1.1.
    Http1,
    /// HTTP/2.
    Http2,
    /// Not told yet (a preface cut short, a Unix socket, TLS without ALPN): hyper reads
    /// the first bytes and chooses.
    Unknown,
}

impl Speaks {
    /// What the first bytes a client sent, `first`, say: HTTP/2 when they are the whole
    /// preface, HTTP/1.1 when they differ from it, unknown when they are a part of it.
    pub(crate) fn from_first(first: &[u8]) -> Self {
        let n = first.len().min(H2_PREFACE.len());
        if first.get(..n) != H2_PREFACE.get(..n) {
            Self::Http1
        } else if n == H2_PREFACE.len() {
            Self::Http2
        } else {
            Self::Unknown
        }
    }

    /// What a TLS connection's ALPN protocol says (`None`: none agreed).
    #[cfg(feature = "tls")]
    pub(crate) fn from_alpn(alpn: Option<&[u8]>) -> Self {
        match alpn {
            Some(b"h2") => Self::Http2,
            Some(_) => Self::Http1,
            None => Self::Unknown,
        }
    }

    /// The name logged for it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Http1 => "http/1.1",
            Self::Http2 => "h2",
            Self::Unknown => "auto",
        }
    }
}

impl Accept for TcpListener {
    type Io = TcpStream;

    async fn accept(&self) -> io::Result<TcpStream> {
        let (stream, _peer) = TcpListener::accept(self).await?;
        let _ = stream.set_nodelay(true);
        Ok(stream)
    }
}

impl Stream for TcpStream {
    async fn first_bytes(&self) -> Option<Speaks> {
        let mut first = [0u8; H2_PREFACE.len()];
        match self.peek(&mut first).await {
            Ok(n) if n > 0 => Some(Speaks::from_first(first.get(..n)?)),
            _ => None,
        }
    }
}

#[cfg(unix)]
impl Accept for UnixSocket {
    type Io = UnixStream;

    async fn accept(&self) -> io::Result<UnixStream> {
        let (stream, _peer) = self.listener.accept().await?;
        Ok(stream)
    }
}

#[cfg(unix)]
impl Stream for UnixStream {
    async fn first_bytes(&self) -> Option<Speaks> {
        // (No peek on a Unix stream: readable also when the client closed, which
        // hyper then sees at once; hyper reads the first bytes and chooses.)
        self.readable().await.ok().map(|()| Speaks::Unknown)
    }
}

/// A bound Unix socket; its file is removed when this is dropped.
#[cfg(unix)]
#[derive(Debug)]
pub(crate) struct UnixSocket {
    listener: UnixListener,
    path: PathBuf,
    /// The socket file's inode, so that a file someone put in its place is left alone.
    ino: u64,
}

#[cfg(unix)]
impl UnixSocket {
    /// Binds `path` with the file mode `mode` (e.g. `0o660`; `None` leaves the umask's).
    pub(crate) fn bind(path: &Path, mode: Option<u32>) -> io::Result<Self> {
        use std::os::unix::fs::{FileTypeExt, MetadataExt};
        match std::fs::symlink_metadata(path) {
            Ok(meta) if meta.file_type().is_socket() => {
                match std::os::unix::net::UnixStream::connect(path) {
                    Ok(_) => {
                        return Err(io::Error::new(
                            io::ErrorKind::AddrInUse,
                            format!(
                                "{}: another server is listening on this socket",
                                path.display()
                            ),
                        ));
                    }
                    // A socket file with no one listening: left by a server that died.
                    Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                        tracing::info!(path = %path.display(), "replacing a stale socket file");
                        std::fs::remove_file(path)?;
                    }
                    Err(e) => return Err(e),
                }
            }
            Ok(_) => {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!("{}: exists and is not a socket", path.display()),
                ));
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        let listener = match mode {
            None => UnixListener::bind(path)?,
            Some(mode) => bind_with_mode(path, mode)?,
        };
        let remove = |e: io::Error| {
            let _ = std::fs::remove_file(path);
            e
        };
        let ino = std::fs::symlink_metadata(path).map_err(remove)?.ino();
        Ok(Self {
            listener,
            path: path.to_owned(),
            ino,
        })
    }

    /// The socket's path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

/// Binds a socket that no one can connect to before it has `mode`: it is bound (and
/// listens) in a fresh `0700` folder beside `path`, given its mode there, then linked
/// into place (which fails if something appeared at `path` meanwhile); the folder is
/// removed. Binding at `path` and then changing the mode would leave a window in which
/// the umask's permissions let anyone connect.
#[cfg(unix)]
fn bind_with_mode(path: &Path, mode: u32) -> io::Result<UnixListener> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut nonce = [0u8; 8];
    let _ = getrandom::fill(&mut nonce);
    let staging = parent.join(format!(
        ".snodo-bind-{}-{:016x}",
        std::process::id(),
        u64::from_le_bytes(nonce)
    ));
    std::fs::DirBuilder::new().mode(0o700).create(&staging)?;
    let inner = staging.join("s");
    let bound = (|| {
        let listener = UnixListener::bind(&inner)?;
        std::fs::set_permissions(&inner, std::fs::Permissions::from_mode(mode))?;
        std::fs::hard_link(&inner, path)?;
        Ok(listener)
    })();
    let _ = std::fs::remove_file(&inner);
    let _ = std::fs::remove_dir(&staging);
    bound
}

#[cfg(unix)]
impl Drop for UnixSocket {
    fn drop(&mut self) {
        use std::os::unix::fs::MetadataExt;
        if std::fs::symlink_metadata(&self.path).is_ok_and(|m| m.ino() == self.ino) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{H2_PREFACE, Speaks};

    #[test]
    fn the_first_bytes_tell_the_version() {
        assert_eq!(Speaks::from_first(H2_PREFACE), Speaks::Http2);
        let mut more = H2_PREFACE.to_vec();
        more.extend(b"\0\0\0\x04");
        assert_eq!(Speaks::from_first(&more), Speaks::Http2);
        assert_eq!(Speaks::from_first(b"POST /mcp HTTP/1.1\r\n"), Speaks::Http1);
        assert_eq!(Speaks::from_first(b"GET"), Speaks::Http1);
        assert_eq!(Speaks::from_first(b"PRI * HTTP/1.1"), Speaks::Http1);
        assert_eq!(Speaks::from_first(b"P"), Speaks::Unknown);
        assert_eq!(Speaks::from_first(b"PRI * HTTP/2.0\r\n"), Speaks::Unknown);
    }

    #[cfg(feature = "tls")]
    #[test]
    fn alpn_tells_the_version() {
        assert_eq!(Speaks::from_alpn(Some(b"h2")), Speaks::Http2);
        assert_eq!(Speaks::from_alpn(Some(b"http/1.1")), Speaks::Http1);
        assert_eq!(Speaks::from_alpn(None), Speaks::Unknown);
    }
}
