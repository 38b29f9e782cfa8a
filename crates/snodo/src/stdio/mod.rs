//! The stdio transport: newline-delimited JSON-RPC over a byte stream.
//!
//! [`serve`] speaks MCP on the process's stdin and stdout, the way clients that launch
//! their servers as child processes expect; [`serve_stream`] does the same over any
//! reader and writer (a Unix socket, a TCP stream, an in-memory duplex). The same
//! [`Runtime`] serves HTTP and stdio alike: execution, cancellation and subscriptions
//! are the transport-neutral engine's, this module adds only the line framing and the
//! connection's state.
//!
//! - One message per line, written whole; requests run concurrently.
//! - A line longer than [`StdioConfig::max_line_bytes`] is answered with `-32600` and
//!   skipped; malformed JSON is answered with `-32700` (null id); the stream goes on.
//!   A leading UTF-8 byte-order mark is tolerated.
//! - 2026-07-28: per-request `_meta`, no header layer; `notifications/cancelled` by id
//!   (ids are scoped to the connection); `subscriptions/listen` notifications tagged
//!   with their subscription id. The server never writes a request.
//! - Initialize era (when the runtime enables it): `initialize` switches the connection
//!   to the negotiated version; `logging/setLevel` sets the connection's level; the
//!   server asks the client (sampling, elicitation, roots) only for capabilities the
//!   client declared at `initialize`.
//! - Nothing but MCP messages is written to the writer: logs go through `tracing`, which
//!   the application must send to stderr.
//! - End of input stops reading; in-flight requests get a drain period, then are
//!   cancelled. A client that stops reading makes the server stop reading.

mod config;
mod connection;
mod drive;
mod framing;
mod outbox;
mod process;

use std::future::Future;

use tokio::io::{AsyncRead, AsyncWrite};

pub use config::StdioConfig;

use crate::runtime::Runtime;

/// Why a stdio connection ended with an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StdioError {
    /// Reading the input failed.
    #[error("stdio input error: {0}")]
    Io(#[from] std::io::Error),
}

/// Serves `runtime` on stdin and stdout with default settings until stdin ends, or
/// Ctrl-C or SIGTERM.
pub async fn serve(runtime: Runtime) -> Result<(), StdioError> {
    serve_stream_until(
        runtime,
        process::input(),
        process::output(),
        StdioConfig::default(),
        crate::http::shutdown_signal(),
    )
    .await
}

/// Serves `runtime` on one byte stream until its input ends.
pub async fn serve_stream<R, W>(
    runtime: Runtime,
    reader: R,
    writer: W,
    config: StdioConfig,
) -> Result<(), StdioError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    serve_stream_until(runtime, reader, writer, config, std::future::pending()).await
}

/// Serves `runtime` on one byte stream until its input ends or `shutdown` completes.
pub async fn serve_stream_until<R, W, F>(
    runtime: Runtime,
    reader: R,
    writer: W,
    config: StdioConfig,
    shutdown: F,
) -> Result<(), StdioError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
    F: Future<Output = ()>,
{
    connection::run(runtime, reader, writer, config, shutdown)
        .await
        .map_err(StdioError::from)
}
