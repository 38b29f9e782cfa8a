//! How `serve`, `fixture` and `gateway` listen beyond the address: TLS in the binary,
//! the Unix socket's file mode (issue 36), the OAuth metadata.

use std::path::PathBuf;

use snodo::Runtime;
use snodo::http::{HttpConfig, ListenAddr, ServeError, Server, TlsCertificates};

/// The TLS and Unix-socket flags.
#[derive(clap::Args, Debug, Default)]
pub(crate) struct ListenArgs {
    /// Serve HTTPS (HTTP/2 and HTTP/1.1 by ALPN) with this PEM certificate chain (leaf
    /// first); needs --tls-key. Reloaded with the key on SIGHUP (open connections keep
    /// the old pair; a bad pair is logged and the old one kept).
    #[arg(long, requires = "tls_key", global = true)]
    tls_cert: Option<PathBuf>,
    /// The PEM private key (PKCS#8, PKCS#1 or SEC1) of --tls-cert.
    #[arg(long, requires = "tls_cert", global = true)]
    tls_key: Option<PathBuf>,
    /// File mode of the socket with --addr unix:PATH, in octal (e.g. 660; default:
    /// the umask's).
    #[arg(long, value_parser = parse_mode, global = true)]
    socket_mode: Option<u32>,
}

fn parse_mode(s: &str) -> Result<u32, String> {
    let digits = s.strip_prefix("0o").unwrap_or(s);
    u32::from_str_radix(digits, 8)
        .ok()
        .filter(|m| *m <= 0o7777)
        .ok_or_else(|| format!("{s:?} is not an octal file mode (e.g. 660)"))
}

impl ListenArgs {
    /// The certificates, read and checked now (a bad pair stops the start).
    pub(crate) fn certificates(&self) -> Result<Option<TlsCertificates>, String> {
        match (&self.tls_cert, &self.tls_key) {
            (Some(cert), Some(key)) => TlsCertificates::load(cert, key)
                .map(Some)
                .map_err(|e| format!("--tls-cert/--tls-key: {e}")),
            _ => Ok(None),
        }
    }

    /// The Unix socket's mode.
    pub(crate) fn socket_mode(&self) -> Option<u32> {
        self.socket_mode
    }
}

/// Where clients reach `server`: its URL, and the socket's path for a Unix socket.
pub(crate) fn endpoint(server: &Server, tls: bool) -> Result<String, String> {
    let scheme = if tls { "https" } else { "http" };
    match server.listen_addr().map_err(|e| e.to_string())? {
        ListenAddr::Unix(path) => Ok(format!(
            "{scheme}://localhost/mcp on unix:{}",
            path.display()
        )),
        addr => Ok(format!("{scheme}://{addr}/mcp")),
    }
}

/// Binds `addr` with the TLS and socket flags, and mounts the OAuth metadata when
/// `protection` is set; returns the server and where clients reach it.
pub(crate) async fn bind(
    runtime: Runtime,
    addr: &ListenAddr,
    args: &ListenArgs,
    config: HttpConfig,
    protection: Option<&crate::oauth::Protection>,
) -> Result<(Server, String), String> {
    let certificates = args.certificates()?;
    let server = Server::bind_to(runtime, addr, args.socket_mode(), config)
        .await
        .map_err(|e| match e {
            ServeError::NonLoopback { addr } => format!(
                "refusing to serve on non-loopback address {addr} with the loopback-only Host/Origin allow-list: \
                 pass --allow-host NAME (repeatable) with the names clients use, or --any-host behind a proxy that checks Host"
            ),
            ServeError::Io(e) => format!("cannot listen on {addr}: {e}"),
            e => e.to_string(),
        })?;
    let tls = certificates.is_some();
    let server = match certificates {
        Some(c) => server.tls(c),
        None => server,
    };
    let server = match protection {
        Some(p) => {
            println!(
                "snodo: OAuth resource server, metadata at {}",
                p.metadata_url()
            );
            p.mount(server)
        }
        None => server,
    };
    let endpoint = endpoint(&server, tls)?;
    Ok((server, endpoint))
}
