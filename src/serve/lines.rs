//! The bounded line splitter of `advisor serve` (V1, V4): input is cut on LF only (U+2028
//! and CR inside a line are data), and a line longer than the cap is refused without being
//! buffered whole — the bytes past the cap are dropped as they arrive, up to the next LF.

use tokio::io::{AsyncRead, AsyncReadExt};

/// The longest request line accepted (V4: 64 MiB).
pub const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// How much is read from the input at a time.
const READ_CHUNK: usize = 64 * 1024;

/// One item of input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputLine {
    /// A complete line, without its LF.
    Line(Vec<u8>),
    /// A line over the cap; its bytes were dropped. `bytes` counts them all.
    TooLong {
        /// The line's length as far as it was read.
        bytes: usize,
    },
}

/// Splits a byte stream into lines as chunks arrive. Plain logic: feed it chunks with
/// [`LineSplitter::push`], take lines with [`LineSplitter::next_line`], and call
/// [`LineSplitter::finish`] at end of input for a last line without LF.
#[derive(Debug)]
pub struct LineSplitter {
    cap: usize,
    buf: Vec<u8>,
    /// `Some(n)`: the current line passed the cap; `n` bytes of it were seen and dropped.
    discarding: Option<usize>,
    ready: std::collections::VecDeque<InputLine>,
}

impl LineSplitter {
    /// A splitter refusing lines longer than `cap` bytes.
    pub fn new(cap: usize) -> Self {
        Self {
            cap,
            buf: Vec::new(),
            discarding: None,
            ready: std::collections::VecDeque::new(),
        }
    }

    /// Takes in a chunk of input.
    pub fn push(&mut self, mut chunk: &[u8]) {
        while !chunk.is_empty() {
            let newline = chunk.iter().position(|b| *b == b'\n');
            match (self.discarding, newline) {
                (Some(seen), Some(i)) => {
                    self.ready.push_back(InputLine::TooLong { bytes: seen + i });
                    self.discarding = None;
                    chunk = &chunk[i + 1..];
                }
                (Some(seen), None) => {
                    self.discarding = Some(seen + chunk.len());
                    return;
                }
                (None, Some(i)) => {
                    if self.buf.len() + i > self.cap {
                        let bytes = self.buf.len() + i;
                        self.clear_buf();
                        self.ready.push_back(InputLine::TooLong { bytes });
                    } else {
                        self.buf.extend_from_slice(&chunk[..i]);
                        let line = std::mem::take(&mut self.buf);
                        self.ready.push_back(InputLine::Line(line));
                    }
                    chunk = &chunk[i + 1..];
                }
                (None, None) => {
                    if self.buf.len() + chunk.len() > self.cap {
                        self.discarding = Some(self.buf.len() + chunk.len());
                        self.clear_buf();
                    } else {
                        self.buf.extend_from_slice(chunk);
                    }
                    return;
                }
            }
        }
    }

    /// The next complete line, if one is ready.
    pub fn next_line(&mut self) -> Option<InputLine> {
        self.ready.pop_front()
    }

    /// End of input: the unterminated rest, if any, as a last line.
    pub fn finish(&mut self) -> Option<InputLine> {
        if let Some(bytes) = self.discarding.take() {
            return Some(InputLine::TooLong { bytes });
        }
        if self.buf.is_empty() {
            return None;
        }
        Some(InputLine::Line(std::mem::take(&mut self.buf)))
    }

    fn clear_buf(&mut self) {
        self.buf = Vec::new();
    }
}

/// Reads lines from an async input through a line splitter that never buffers more than the cap.
pub struct LineReader<R> {
    input: R,
    splitter: LineSplitter,
    chunk: Vec<u8>,
    done: bool,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    /// A reader over `input` with the line cap `cap`.
    pub fn new(input: R, cap: usize) -> Self {
        Self {
            input,
            splitter: LineSplitter::new(cap),
            chunk: vec![0; READ_CHUNK],
            done: false,
        }
    }

    /// The next line; `None` at end of input (a read error counts as the end).
    pub async fn next(&mut self) -> Option<InputLine> {
        loop {
            if let Some(line) = self.splitter.next_line() {
                return Some(line);
            }
            if self.done {
                return None;
            }
            match self.input.read(&mut self.chunk).await {
                Ok(0) => {
                    self.done = true;
                    return self.splitter.finish();
                }
                Ok(n) => self.splitter.push(&self.chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    tracing::warn!("serve: reading the input failed: {e}");
                    self.done = true;
                    return self.splitter.finish();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(cap: usize, chunks: &[&[u8]]) -> Vec<InputLine> {
        let mut s = LineSplitter::new(cap);
        let mut out = Vec::new();
        for c in chunks {
            s.push(c);
            while let Some(l) = s.next_line() {
                out.push(l);
            }
        }
        out.extend(s.finish());
        out
    }

    fn line(s: &str) -> InputLine {
        InputLine::Line(s.as_bytes().to_vec())
    }

    #[test]
    fn v1_splits_on_lf_only_across_chunks() {
        let sep = "a\u{2028}b\r";
        let text = format!("{sep}\nsecond\n\nlast");
        for size in 1..text.len() {
            let chunks: Vec<&[u8]> = text.as_bytes().chunks(size).collect();
            assert_eq!(
                all(100, &chunks),
                vec![line(sep), line("second"), line(""), line("last")],
                "chunk size {size}"
            );
        }
    }

    #[test]
    fn v4_a_line_over_the_cap_is_refused_and_the_next_one_is_read() {
        let long = "x".repeat(25);
        let text = format!("ok\n{long}\nafter\n");
        for size in [1, 3, 7, 100] {
            let chunks: Vec<&[u8]> = text.as_bytes().chunks(size).collect();
            assert_eq!(
                all(10, &chunks),
                vec![line("ok"), InputLine::TooLong { bytes: 25 }, line("after")],
                "chunk size {size}"
            );
        }
        // Exactly at the cap is fine; one more byte is not.
        assert_eq!(
            all(3, &[b"abc\nabcd\n"]),
            vec![line("abc"), InputLine::TooLong { bytes: 4 }]
        );
        assert_eq!(all(3, &[b"abcdef"]), vec![InputLine::TooLong { bytes: 6 }]);
    }

    #[test]
    fn v4_the_splitter_never_holds_more_than_the_cap() {
        let mut s = LineSplitter::new(1000);
        for _ in 0..100 {
            s.push(&[b'y'; 600]);
            assert!(s.buf.len() <= 1000);
        }
        s.push(b"\nz\n");
        assert_eq!(s.next_line(), Some(InputLine::TooLong { bytes: 60_000 }));
        assert_eq!(s.next_line(), Some(line("z")));
    }

    #[tokio::test]
    async fn reader_yields_lines_then_none_at_eof() {
        let input: &[u8] = b"one\ntwo";
        let mut r = LineReader::new(input, 100);
        assert_eq!(r.next().await, Some(line("one")));
        assert_eq!(r.next().await, Some(line("two")));
        assert_eq!(r.next().await, None);
        assert_eq!(r.next().await, None);
    }
}
