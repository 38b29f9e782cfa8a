//! Newline-delimited framing, sans-IO: bytes are pushed in, whole lines come out.
//!
//! A line longer than the limit is reported once and skipped up to its newline, so
//! memory stays bounded by the limit plus one read. A UTF-8 byte-order mark at the very
//! start of the stream is dropped, as is a carriage return before a newline.

use bytes::{Buf as _, Bytes, BytesMut};

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// What the framer found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Frame {
    /// One line, without its terminator (it may be empty or whitespace).
    Line(Bytes),
    /// A line exceeded the limit; its bytes are dropped up to the next newline.
    TooLong,
}

/// Splits a byte stream into lines of at most `max` bytes.
#[derive(Debug)]
pub(crate) struct Lines {
    buf: BytesMut,
    max: usize,
    /// How far `buf` has been searched for a newline.
    scanned: usize,
    /// Inside an over-long line: drop bytes until the next newline.
    discarding: bool,
    /// Still at the start of the stream (a BOM may follow).
    at_start: bool,
}

impl Lines {
    pub(crate) fn new(max: usize) -> Self {
        Self {
            buf: BytesMut::with_capacity(8 * 1024),
            max: max.max(1),
            scanned: 0,
            discarding: false,
            at_start: true,
        }
    }

    /// The buffer to read more bytes into (then call [`next`](Self::next)).
    pub(crate) fn buffer(&mut self) -> &mut BytesMut {
        // Room for one more read; never more than the limit plus one read is kept.
        self.buf.reserve(8 * 1024);
        &mut self.buf
    }

    /// Pushes bytes (for callers that do not read into [`buffer`](Self::buffer)).
    #[cfg(test)]
    pub(crate) fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The next frame in what was pushed so far, if complete.
    pub(crate) fn next(&mut self) -> Option<Frame> {
        if self.at_start {
            if self.buf.len() < BOM.len() && BOM.starts_with(&self.buf) {
                // Could still become a BOM: wait for more (or the end).
                return None;
            }
            if self.buf.starts_with(BOM) {
                self.buf.advance(BOM.len());
            }
            self.at_start = false;
        }
        loop {
            let newline = self.buf[self.scanned..]
                .iter()
                .position(|&b| b == b'\n')
                .map(|p| p + self.scanned);
            match newline {
                Some(end) if self.discarding => {
                    self.buf.advance(end + 1);
                    self.scanned = 0;
                    self.discarding = false;
                }
                Some(end) => {
                    self.scanned = 0;
                    let mut line = self.buf.split_to(end + 1).freeze();
                    line.truncate(end);
                    if line.last() == Some(&b'\r') {
                        line.truncate(end - 1);
                    }
                    if line.len() > self.max {
                        return Some(Frame::TooLong);
                    }
                    return Some(Frame::Line(line));
                }
                None if self.discarding => {
                    self.buf.clear();
                    self.scanned = 0;
                    return None;
                }
                None if self.buf.len() > self.max + 1 => {
                    // No newline within the limit (a `\r` may still precede one).
                    self.buf.clear();
                    self.scanned = 0;
                    self.discarding = true;
                    return Some(Frame::TooLong);
                }
                None => {
                    self.scanned = self.buf.len();
                    return None;
                }
            }
        }
    }

    /// The end of the stream: the last line if it had no newline (it may be truncated).
    pub(crate) fn finish(&mut self) -> Option<Frame> {
        self.at_start = false;
        self.scanned = 0;
        if self.discarding || self.buf.is_empty() {
            self.buf.clear();
            return None;
        }
        let line = self.buf.split().freeze();
        if line.len() > self.max {
            return Some(Frame::TooLong);
        }
        Some(Frame::Line(line))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(max: usize, chunks: &[&[u8]]) -> Vec<Frame> {
        let mut lines = Lines::new(max);
        let mut out = Vec::new();
        for c in chunks {
            lines.push(c);
            while let Some(f) = lines.next() {
                out.push(f);
            }
        }
        out.extend(lines.finish());
        assert_eq!(lines.next(), None, "nothing after the end");
        assert_eq!(lines.finish(), None, "the end once");
        out
    }

    fn line(s: &str) -> Frame {
        Frame::Line(Bytes::copy_from_slice(s.as_bytes()))
    }

    #[test]
    fn splits_lines_across_chunks() {
        assert_eq!(
            frames(100, &[b"ab", b"c\nde\r\n", b"\nf"]),
            vec![line("abc"), line("de"), line(""), line("f")]
        );
    }

    #[test]
    fn drops_a_leading_bom_only() {
        assert_eq!(
            frames(100, &[b"\xEF", b"\xBB\xBF{}\n\xEF\xBB\xBF\n"]),
            vec![line("{}"), Frame::Line(Bytes::from_static(b"\xEF\xBB\xBF"))]
        );
        assert_eq!(
            frames(100, &[b"\xEF\xBB"]),
            vec![Frame::Line(Bytes::from_static(b"\xEF\xBB"))]
        );
    }

    #[test]
    fn skips_over_long_lines_and_goes_on() {
        assert_eq!(
            frames(4, &[b"12345", b"678\nok\n1234\n"]),
            vec![Frame::TooLong, line("ok"), line("1234")]
        );
        assert_eq!(frames(4, &[b"12345\n"]), vec![Frame::TooLong]);
        assert_eq!(frames(4, &[b"1234\r\n"]), vec![line("1234")]);
        assert_eq!(frames(4, &[b"123456"]), vec![Frame::TooLong]);
    }
}
