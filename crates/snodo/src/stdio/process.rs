//! The process's own stdin and stdout, read and written on the runtime's reactor.
//!
//! `tokio::io::stdin()`/`stdout()` hand every read and write to the blocking pool, so each
//! request crosses two threads on the way in and two on the way out. When the client
//! launched us the usual way — with pipes (Python, most native clients) or a Unix socket
//! pair (Node's `child_process`) — the descriptors can be made non-blocking and driven by
//! epoll instead, which removes those hops. Anything else (a terminal, a regular file,
//! another platform) keeps tokio's portable streams.
//!
//! Making a descriptor non-blocking changes its open file description, which the pipe or
//! socket end shares with nothing but this process in the setups above. Standard error is
//! never touched.

use tokio::io::{AsyncRead, AsyncWrite};
#[cfg(unix)]
use tokio_util::either::Either;

/// Standard input as an `AsyncRead`, on the reactor where possible.
#[cfg(unix)]
pub(super) fn input() -> impl AsyncRead + Unpin {
    match unix::input() {
        Some(fast) => Either::Left(fast),
        None => Either::Right(tokio::io::stdin()),
    }
}

/// Standard output as an `AsyncWrite`, on the reactor where possible.
#[cfg(unix)]
pub(super) fn output() -> impl AsyncWrite + Unpin + Send + 'static {
    match unix::output() {
        Some(fast) => Either::Left(fast),
        None => Either::Right(tokio::io::stdout()),
    }
}

/// Standard input (tokio's portable stream off Unix).
#[cfg(not(unix))]
pub(super) fn input() -> impl AsyncRead + Unpin {
    tokio::io::stdin()
}

/// Standard output (tokio's portable stream off Unix).
#[cfg(not(unix))]
pub(super) fn output() -> impl AsyncWrite + Unpin + Send + 'static {
    tokio::io::stdout()
}

#[cfg(unix)]
mod unix {
    use std::os::fd::{AsFd, OwnedFd};
    use std::os::unix::fs::FileTypeExt as _;

    use tokio::net::UnixStream;
    use tokio::net::unix::pipe;
    use tokio_util::either::Either;

    /// A pipe or a Unix socket; either is a full `AsyncRead + AsyncWrite` where it matters.
    pub(super) type Input = Either<pipe::Receiver, UnixStream>;
    pub(super) type Output = Either<pipe::Sender, UnixStream>;

    enum Kind {
        Pipe,
        Socket,
    }

    /// A duplicate of `fd` and what it is, when it is a pipe or a socket.
    fn classify(fd: std::os::fd::BorrowedFd<'_>) -> Option<(OwnedFd, Kind)> {
        let owned = fd.try_clone_to_owned().ok()?;
        let file = std::fs::File::from(owned);
        let kind = file.metadata().ok()?.file_type();
        let kind = if kind.is_fifo() {
            Kind::Pipe
        } else if kind.is_socket() {
            Kind::Socket
        } else {
            return None;
        };
        Some((OwnedFd::from(file), kind))
    }

    fn socket(fd: OwnedFd) -> Option<UnixStream> {
        let std = std::os::unix::net::UnixStream::from(fd);
        std.set_nonblocking(true).ok()?;
        UnixStream::from_std(std).ok()
    }

    pub(super) fn input() -> Option<Input> {
        match classify(std::io::stdin().as_fd())? {
            (fd, Kind::Pipe) => pipe::Receiver::from_owned_fd(fd).ok().map(Either::Left),
            (fd, Kind::Socket) => socket(fd).map(Either::Right),
        }
    }

    pub(super) fn output() -> Option<Output> {
        match classify(std::io::stdout().as_fd())? {
            (fd, Kind::Pipe) => pipe::Sender::from_owned_fd(fd).ok().map(Either::Left),
            (fd, Kind::Socket) => socket(fd).map(Either::Right),
        }
    }
}
