//! An incremental `text/event-stream` reader (the subset MCP uses: `data`, `id`,
//! `retry`, `event`, comments).

use std::time::Duration;

/// The longest event accepted, in bytes.
pub(crate) const MAX_EVENT: usize = 16 * 1024 * 1024;

/// Feeds bytes in, takes complete events out.
#[derive(Debug, Default)]
pub(crate) struct SseReader {
    buf: Vec<u8>,
    data: String,
    has_data: bool,
    /// The last `id:` seen (for `Last-Event-ID`).
    pub(crate) last_id: Option<String>,
    /// The last `retry:` seen.
    pub(crate) retry: Option<Duration>,
}

impl SseReader {
    /// Adds bytes; returns the `data` of every event they complete. `Err` when one
    /// event grows past [`MAX_EVENT`].
    pub(crate) fn feed(&mut self, chunk: &[u8]) -> Result<Vec<String>, String> {
        self.buf.extend_from_slice(chunk);
        let mut out = Vec::new();
        while let Some(pos) = self.buf.iter().position(|&b| b == b'\n') {
            let mut line: Vec<u8> = self.buf.drain(..=pos).collect();
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            let line = String::from_utf8_lossy(&line);
            if line.is_empty() {
                if self.has_data {
                    out.push(std::mem::take(&mut self.data));
                    self.has_data = false;
                }
                continue;
            }
            if line.starts_with(':') {
                continue;
            }
            let (field, value) = match line.split_once(':') {
                Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
                None => (line.as_ref(), ""),
            };
            match field {
                "data" => {
                    if self.has_data {
                        self.data.push('\n');
                    }
                    self.data.push_str(value);
                    self.has_data = true;
                }
                "id" => self.last_id = Some(value.to_owned()),
                "retry" => {
                    if let Ok(ms) = value.parse::<u64>() {
                        self.retry = Some(Duration::from_millis(ms));
                    }
                }
                _ => {}
            }
            if self.data.len() > MAX_EVENT {
                return Err("an SSE event exceeds the size limit".into());
            }
        }
        if self.buf.len() > MAX_EVENT {
            return Err("an SSE line exceeds the size limit".into());
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_across_chunks() {
        let mut r = SseReader::default();
        assert!(
            r.feed(b"id: e1\nretry: 500\ndata: \n\n")
                .unwrap_or_default()
                .iter()
                .all(String::is_empty)
        );
        assert_eq!(r.last_id.as_deref(), Some("e1"));
        assert_eq!(r.retry, Some(Duration::from_millis(500)));
        assert!(
            r.feed(b"event: message\r\ndata: {\"a\"")
                .unwrap_or_default()
                .is_empty()
        );
        let ev = r
            .feed(b":1}\r\n\r\n: keep-alive\n\ndata: x\ndata: y\n\n")
            .unwrap_or_default();
        assert_eq!(ev, vec!["{\"a\":1}".to_owned(), "x\ny".to_owned()]);
    }
}
