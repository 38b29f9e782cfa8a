//! One raw HTTP/1.1 reader: literal requests out, status, headers, the de-chunked body
//! and its SSE events in; and an open SSE response read event by event.

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The media headers every POST of the tests sends unless it spells its own.
pub const MEDIA: [(&str, &str); 2] = [
    ("Content-Type", "application/json"),
    ("Accept", "application/json, text/event-stream"),
];

/// A literal HTTP/1.1 POST to `/mcp` on `host`: the media headers, then `headers`, the
/// `Content-Length` of `body` and (with `close`) `Connection: close`.
pub fn literal_post(host: &str, headers: &[(&str, &str)], body: &str, close: bool) -> String {
    let mut req = format!("POST /mcp HTTP/1.1\r\nHost: {host}\r\n");
    for (k, v) in MEDIA.iter().chain(headers) {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str(&format!("Content-Length: {}\r\n", body.len()));
    if close {
        req.push_str("Connection: close\r\n");
    }
    req.push_str("\r\n");
    req.push_str(body);
    req
}

/// A parsed HTTP response.
#[derive(Debug)]
pub struct Reply {
    /// The status code.
    pub status: u16,
    /// The headers, names in lower case, in order.
    pub headers: Vec<(String, String)>,
    /// The body, de-chunked.
    pub body: Vec<u8>,
}

impl Reply {
    /// The first value of header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The body as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("body is not JSON ({e}): {}", self.text()))
    }

    /// Whether the body is an SSE stream.
    pub fn is_sse(&self) -> bool {
        self.header("content-type") == Some("text/event-stream")
    }

    /// The `data:` payloads of an SSE body, parsed.
    pub fn events(&self) -> Vec<Value> {
        assert!(self.is_sse(), "not SSE: {}", self.text());
        self.text()
            .split("\n\n")
            .filter_map(|frame| frame.lines().find_map(|l| l.strip_prefix("data: ")))
            .map(|d| serde_json::from_str(d).unwrap())
            .collect()
    }

    /// The final JSON-RPC message: the JSON body, or the last SSE event.
    pub fn message(&self) -> Value {
        if self.is_sse() {
            self.events()
                .pop()
                .expect("an SSE response carries a final message")
        } else {
            self.json()
        }
    }

    /// The result of the final message; panics on an error.
    pub fn result(&self) -> Value {
        let m = self.message();
        assert!(m.get("error").is_none(), "expected a result, got {m}");
        m["result"].clone()
    }

    /// The error code of the final message; panics on a result.
    pub fn error_code(&self) -> i64 {
        self.message()["error"]["code"]
            .as_i64()
            .unwrap_or_else(|| panic!("expected an error: {}", self.text()))
    }

    /// The `WWW-Authenticate` challenge (empty when there is none).
    pub fn challenge(&self) -> &str {
        self.header("www-authenticate").unwrap_or_default()
    }
}

/// Sends `raw` (a literal request that asks to close) to `addr` and reads the whole
/// answer (within 20 s).
pub async fn send(addr: SocketAddr, raw: &str) -> Reply {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(raw.as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), stream.read_to_end(&mut buf))
        .await
        .expect("the server answers within 20 s")
        .unwrap();
    parse(&buf)
}

/// POSTs `body` to `/mcp` on `addr` with the media headers plus `headers`.
pub async fn post(addr: SocketAddr, headers: &[(&str, &str)], body: &str) -> Reply {
    send(addr, &literal_post(&addr.to_string(), headers, body, true)).await
}

/// Parses one complete response (head and body up to the end of `buf`).
pub fn parse(buf: &[u8]) -> Reply {
    let split = buf
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a complete response head");
    let head = String::from_utf8_lossy(&buf[..split]).into_owned();
    let mut lines = head.split("\r\n");
    let status = status_line(lines.next().unwrap());
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let rest = &buf[split + 4..];
    let chunked = headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked {
        dechunk(rest)
    } else {
        rest.to_vec()
    };
    Reply {
        status,
        headers,
        body,
    }
}

fn status_line(line: &str) -> u16 {
    line.split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not a status line: {line}"))
}

/// The body of a chunked transfer coding.
pub fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(eol) = data.windows(2).position(|w| w == b"\r\n") {
        let size =
            usize::from_str_radix(std::str::from_utf8(&data[..eol]).unwrap().trim(), 16).unwrap();
        data = &data[eol + 2..];
        if size == 0 {
            break;
        }
        out.extend_from_slice(&data[..size]);
        data = &data[size + 2..];
    }
    out
}

/// Drops chunked-encoding size lines (hex digits alone on a line) from a piece of an
/// SSE stream.
fn strip_chunk_sizes(piece: &str) -> String {
    piece
        .split("\r\n")
        .filter(|l| !(l.len() <= 6 && !l.is_empty() && l.bytes().all(|b| b.is_ascii_hexdigit())))
        .collect::<Vec<_>>()
        .join("")
}

/// An open SSE response read frame by frame.
#[derive(Debug)]
pub struct Stream {
    /// The status code.
    pub status: u16,
    /// The response head as text.
    pub head: String,
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Stream {
    /// POSTs `body` to `/mcp` on `addr` (media headers plus `headers`, connection kept
    /// open) and reads the response head.
    pub async fn open(addr: SocketAddr, headers: &[(&str, &str)], body: &str) -> Self {
        let req = literal_post(&addr.to_string(), headers, body, false);
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream.write_all(req.as_bytes()).await.unwrap();
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        let split = loop {
            let n = stream.read(&mut chunk).await.unwrap();
            assert!(n > 0, "connection closed before the head");
            buf.extend_from_slice(&chunk[..n]);
            if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break p;
            }
        };
        let head = String::from_utf8_lossy(&buf[..split]).into_owned();
        let status = status_line(head.split("\r\n").next().unwrap_or_default());
        let rest = String::from_utf8_lossy(&buf[split + 4..]).into_owned();
        Self {
            status,
            head,
            stream,
            buf: strip_chunk_sizes(&rest).into_bytes(),
        }
    }

    /// The next `data:` event (skipping comments), or `None` at the end or after `wait`.
    pub async fn next(&mut self, wait: Duration) -> Option<Value> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let text = String::from_utf8_lossy(&self.buf).into_owned();
            if let Some(end) = text.find("\n\n") {
                let frame = text[..end].to_owned();
                self.buf.drain(..frame.len() + 2);
                if let Some(data) = frame.lines().find_map(|l| l.strip_prefix("data: ")) {
                    return Some(serde_json::from_str(data).unwrap());
                }
                continue;
            }
            let mut chunk = [0u8; 4096];
            let n = tokio::time::timeout_at(deadline, self.stream.read(&mut chunk))
                .await
                .ok()?
                .ok()?;
            if n == 0 {
                return None;
            }
            let piece = String::from_utf8_lossy(&chunk[..n]).into_owned();
            self.buf
                .extend_from_slice(strip_chunk_sizes(&piece).as_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunked_sse_answer_is_read_whole() {
        let raw = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n5\r\ndata:\r\n9\r\n {\"a\":1}\n\r\n1\r\n\n\r\n0\r\n\r\n";
        let r = parse(raw);
        assert_eq!(r.status, 200);
        assert_eq!(r.header("Content-Type"), Some("text/event-stream"));
        assert_eq!(r.events(), vec![serde_json::json!({"a": 1})]);
    }

    #[test]
    fn a_post_spells_its_media_types_then_its_headers() {
        let p = literal_post("h", &[("X", "1")], "{}", true);
        assert_eq!(
            p,
            "POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nX: 1\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}"
        );
    }
}
