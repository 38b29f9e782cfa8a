//! HTTP/2 frames written by hand, for the bad inputs no well-behaved client sends: a
//! rapid-reset flood, PING and SETTINGS floods, an oversized header block, a stream
//! whose flow-control window is never opened. Header blocks are HPACK literals without
//! indexing or Huffman coding (RFC 7541 §6.2.2), which every decoder must read.

use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

pub const DATA: u8 = 0;
pub const HEADERS: u8 = 1;
pub const RST_STREAM: u8 = 3;
pub const SETTINGS: u8 = 4;
pub const PING: u8 = 6;
pub const GOAWAY: u8 = 7;
pub const WINDOW_UPDATE: u8 = 8;
pub const CONTINUATION: u8 = 9;

pub const END_STREAM: u8 = 0x1;
pub const END_HEADERS: u8 = 0x4;

/// One frame.
pub fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = u32::try_from(payload.len()).unwrap();
    let mut f = len.to_be_bytes()[1..].to_vec();
    f.extend([kind, flags]);
    f.extend(stream.to_be_bytes());
    f.extend(payload);
    f
}

/// The client preface and an empty SETTINGS frame, or one with `settings`.
pub fn preface(settings: &[(u16, u32)]) -> Vec<u8> {
    let mut out = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    let mut payload = Vec::new();
    for (id, v) in settings {
        payload.extend(id.to_be_bytes());
        payload.extend(v.to_be_bytes());
    }
    out.extend(frame(SETTINGS, 0, 0, &payload));
    out
}

fn hpack_len(out: &mut Vec<u8>, n: usize) {
    // A 7-bit prefix integer (RFC 7541 §5.1), no Huffman bit.
    if n < 127 {
        out.push(u8::try_from(n).unwrap());
    } else {
        out.push(127);
        let mut rest = n - 127;
        while rest >= 128 {
            out.push(u8::try_from(rest % 128).unwrap() | 0x80);
            rest /= 128;
        }
        out.push(u8::try_from(rest).unwrap());
    }
}

/// A header block of literal fields.
pub fn block(fields: &[(&str, &str)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (k, v) in fields {
        // (HTTP/2 field names are lower case.)
        out.push(0x00);
        hpack_len(&mut out, k.len());
        out.extend(k.to_ascii_lowercase().as_bytes());
        hpack_len(&mut out, v.len());
        out.extend(v.as_bytes());
    }
    out
}

/// The request fields of a POST to `/mcp` with `headers`.
pub fn post_fields<'a>(host: &'a str, headers: &'a [(String, String)]) -> Vec<(&'a str, &'a str)> {
    let mut f = vec![
        (":method", "POST"),
        (":scheme", "http"),
        (":path", "/mcp"),
        (":authority", host),
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
    ];
    f.extend(headers.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    f
}

/// HEADERS (split into CONTINUATION frames past 16 KiB) and a DATA frame ending the
/// stream.
pub fn request(stream: u32, block: &[u8], body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let chunks: Vec<&[u8]> = block.chunks(16_384).collect();
    for (i, chunk) in chunks.iter().enumerate() {
        let last = i + 1 == chunks.len();
        let kind = if i == 0 { HEADERS } else { CONTINUATION };
        out.extend(frame(
            kind,
            if last { END_HEADERS } else { 0 },
            stream,
            chunk,
        ));
    }
    out.extend(frame(DATA, END_STREAM, stream, body));
    out
}

/// A frame read back.
#[derive(Debug)]
pub struct Frame {
    pub kind: u8,
    pub flags: u8,
    pub stream: u32,
    pub payload: Vec<u8>,
}

impl Frame {
    /// A response HEADERS frame whose first field is `:status: 200` (HPACK static
    /// index 8).
    pub fn is_ok_headers(&self) -> bool {
        self.kind == HEADERS && self.payload.first() == Some(&0x88)
    }

    /// The error code of a GOAWAY or RST_STREAM.
    pub fn error_code(&self) -> Option<u32> {
        let at = match self.kind {
            GOAWAY => 4,
            RST_STREAM => 0,
            _ => return None,
        };
        let b = self.payload.get(at..at + 4)?;
        Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
}

/// Reads the next frame, answering the server's SETTINGS as a client must; `None` at
/// the end of the connection or after `wait`.
pub async fn read_frame<S: AsyncRead + AsyncWrite + Unpin>(
    io: &mut S,
    wait: Duration,
) -> Option<Frame> {
    let f = next_frame(io, wait).await?;
    if f.kind == SETTINGS && f.flags & 1 == 0 {
        let _ = io.write_all(&frame(SETTINGS, 1, 0, &[])).await;
    }
    Some(f)
}

/// Reads the next frame (answering nothing).
pub async fn next_frame<S: AsyncRead + Unpin>(io: &mut S, wait: Duration) -> Option<Frame> {
    let mut head = [0u8; 9];
    tokio::time::timeout(wait, io.read_exact(&mut head))
        .await
        .ok()?
        .ok()?;
    let len = usize::from(head[0]) << 16 | usize::from(head[1]) << 8 | usize::from(head[2]);
    let mut payload = vec![0; len];
    tokio::time::timeout(wait, io.read_exact(&mut payload))
        .await
        .ok()?
        .ok()?;
    let f = Frame {
        kind: head[3],
        flags: head[4],
        stream: u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff,
        payload,
    };
    Some(f)
}

/// Reads frames until `stop` says so; returns what was read, or `None` when the
/// connection ended (or `wait` passed) first.
pub async fn read_until<S: AsyncRead + AsyncWrite + Unpin>(
    io: &mut S,
    wait: Duration,
    mut stop: impl FnMut(&Frame) -> bool,
) -> Option<Vec<Frame>> {
    let mut seen = Vec::new();
    loop {
        let f = read_frame(io, wait).await?;
        let done = stop(&f);
        seen.push(f);
        if done {
            return Some(seen);
        }
    }
}
