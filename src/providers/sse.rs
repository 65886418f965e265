//! An incremental Server-Sent Events parser over a byte stream.
//!
//! Bytes arrive in arbitrary chunks; [`SseParser::feed`] returns every event completed by
//! them. Lines end with `\n`, `\r\n` or `\r` (a `\r` at the very end of a chunk is matched
//! with a `\n` that starts the next one). Lines starting with `:` are comments (OpenRouter's
//! `: OPENROUTER PROCESSING` keep-alives). Several `data:` lines of one event are joined
//! with `\n`. A blank line ends an event; an event with no data is skipped.
//!
//! The bytes of the event being assembled (its unterminated line plus its `data:` lines)
//! are capped: past [`SseParser::limit`] the parser stops, drops what it buffered and
//! reports [`SseParser::overflowed`], so a line that never ends is never buffered whole.

/// The default cap on the bytes of one event being assembled (1 MiB).
pub const DEFAULT_EVENT_LIMIT: usize = 1 << 20;

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// The `event:` field, when the server named the event (Anthropic does, OpenAI does not).
    pub event: Option<String>,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

/// The parser's state between chunks.
#[derive(Debug)]
pub struct SseParser {
    /// Bytes of the current, unterminated line.
    line: Vec<u8>,
    /// The previous chunk ended with `\r`: a leading `\n` belongs to that line ending.
    skip_lf: bool,
    /// `event:` of the event being assembled.
    event: Option<String>,
    /// `data:` lines of the event being assembled.
    data: Vec<String>,
    /// Bytes held in `data`.
    data_bytes: usize,
    /// Most bytes the event being assembled may hold.
    limit: usize,
    /// The limit was passed: everything after it is ignored.
    overflowed: bool,
}

impl Default for SseParser {
    fn default() -> Self {
        Self::with_limit(DEFAULT_EVENT_LIMIT)
    }
}

impl SseParser {
    /// A parser with no buffered input and the default event cap.
    #[cfg(test)]
    pub fn new() -> Self {
        Self::default()
    }

    /// A parser whose event being assembled may hold at most `limit` bytes.
    pub fn with_limit(limit: usize) -> Self {
        Self {
            line: Vec::new(),
            skip_lf: false,
            event: None,
            data: Vec::new(),
            data_bytes: 0,
            limit: limit.max(1),
            overflowed: false,
        }
    }

    /// The cap on the bytes of one event being assembled.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Whether an event passed the cap; the parser then dispatches nothing more.
    pub fn overflowed(&self) -> bool {
        self.overflowed
    }

    /// Feeds a chunk of bytes and returns the events it completed, in order. Once an event
    /// passes the cap, the events completed before it are returned and the rest of the
    /// input (this chunk and every later one) is ignored.
    pub fn feed(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        let mut out = Vec::new();
        if self.overflowed {
            return out;
        }
        for &b in chunk {
            if self.skip_lf {
                self.skip_lf = false;
                if b == b'\n' {
                    continue;
                }
            }
            match b {
                b'\n' => self.end_line(&mut out),
                b'\r' => {
                    self.end_line(&mut out);
                    self.skip_lf = true;
                }
                _ => {
                    if self.line.len() + self.data_bytes >= self.limit {
                        self.overflow();
                        return out;
                    }
                    self.line.push(b);
                }
            }
        }
        out
    }

    fn overflow(&mut self) {
        self.overflowed = true;
        self.line = Vec::new();
        self.data = Vec::new();
        self.data_bytes = 0;
        self.event = None;
    }

    /// Ends the stream: an event whose lines were all terminated but which lacked the final
    /// blank line is still dispatched (some servers close right after `data: [DONE]\n`);
    /// an unterminated last line is dropped as truncated.
    pub fn finish(&mut self) -> Option<SseEvent> {
        if self.overflowed {
            return None;
        }
        self.line.clear();
        self.take_event()
    }

    fn end_line(&mut self, out: &mut Vec<SseEvent>) {
        let line = std::mem::take(&mut self.line);
        if line.is_empty() {
            if let Some(ev) = self.take_event() {
                out.push(ev);
            }
            return;
        }
        let text = String::from_utf8_lossy(&line);
        if text.starts_with(':') {
            return;
        }
        let (field, value) = match text.find(':') {
            Some(i) => {
                let v = &text[i + 1..];
                (&text[..i], v.strip_prefix(' ').unwrap_or(v))
            }
            None => (&text[..], ""),
        };
        match field {
            "data" => {
                self.data_bytes += value.len() + 1;
                self.data.push(value.to_string());
            }
            "event" => self.event = Some(value.to_string()),
            // `id` and `retry` do not matter for one-shot model streams.
            _ => {}
        }
    }

    fn take_event(&mut self) -> Option<SseEvent> {
        let event = self.event.take();
        if self.data.is_empty() {
            return None;
        }
        self.data_bytes = 0;
        let data = std::mem::take(&mut self.data).join("\n");
        Some(SseEvent { event, data })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        for c in chunks {
            out.extend(p.feed(c));
        }
        out.extend(p.finish());
        out
    }

    fn ev(event: Option<&str>, data: &str) -> SseEvent {
        SseEvent {
            event: event.map(str::to_string),
            data: data.to_string(),
        }
    }

    #[test]
    fn m2_parses_named_and_unnamed_events() {
        let got = parse_all(&[b"event: ping\ndata: {}\n\ndata: {\"a\":1}\n\n"]);
        assert_eq!(got, vec![ev(Some("ping"), "{}"), ev(None, "{\"a\":1}")]);
    }

    #[test]
    fn m2_comment_lines_are_skipped() {
        let mut p = SseParser::new();
        let got = p.feed(b": OPENROUTER PROCESSING\n\n: again\ndata: x\n\n");
        assert_eq!(got, vec![ev(None, "x")]);
    }

    #[test]
    fn m2_a_line_without_newline_is_capped_not_buffered_whole() {
        let mut p = SseParser::with_limit(1024);
        let mut got = p.feed(b"data: first\n\ndata: ");
        for _ in 0..1000 {
            got.extend(p.feed(&[b'x'; 4096]));
        }
        assert_eq!(got, vec![ev(None, "first")]);
        assert!(p.overflowed());
        assert!(p.feed(b"\n\ndata: later\n\n").is_empty());
        assert_eq!(p.finish(), None);
    }

    #[test]
    fn m2_many_data_lines_of_one_event_count_towards_the_cap() {
        let mut p = SseParser::with_limit(100);
        let mut got = Vec::new();
        for _ in 0..50 {
            got.extend(p.feed(b"data: 0123456789\n"));
        }
        assert!(got.is_empty());
        assert!(p.overflowed());
        let mut p = SseParser::with_limit(100);
        for _ in 0..50 {
            got.extend(p.feed(b"data: 0123456789\n\n"));
        }
        assert_eq!(got.len(), 50, "events under the cap pass");
        assert!(!p.overflowed());
    }

    #[test]
    fn m2_crlf_and_cr_line_endings() {
        let got = parse_all(&[b"event: a\r\ndata: 1\r\n\r\ndata: 2\r\rdata: 3\n\n"]);
        assert_eq!(got, vec![ev(Some("a"), "1"), ev(None, "2"), ev(None, "3")]);
    }

    #[test]
    fn m2_crlf_split_between_chunks_is_one_line_ending() {
        let got = parse_all(&[b"data: 1\r", b"\n\r", b"\ndata: 2\r\n\r\n"]);
        assert_eq!(got, vec![ev(None, "1"), ev(None, "2")]);
    }

    #[test]
    fn m2_multi_line_data_is_joined_with_newline() {
        let got = parse_all(&[b"data: first\ndata:second\ndata\n\n"]);
        assert_eq!(got, vec![ev(None, "first\nsecond\n")]);
    }

    #[test]
    fn m2_event_split_at_every_byte() {
        let text = "event: content_block_delta\ndata: {\"t\":\"h\u{e9}llo\"}\n\n";
        let chunks: Vec<&[u8]> = text.as_bytes().chunks(1).collect();
        let got = parse_all(&chunks);
        assert_eq!(
            got,
            vec![ev(Some("content_block_delta"), "{\"t\":\"h\u{e9}llo\"}")]
        );
    }

    #[test]
    fn m2_terminated_event_without_blank_line_is_kept_at_eof() {
        assert_eq!(parse_all(&[b"data: [DONE]\n"]), vec![ev(None, "[DONE]")]);
    }

    #[test]
    fn m4_unterminated_last_line_is_dropped_at_eof() {
        assert_eq!(parse_all(&[b"data: {\"partial"]), vec![]);
    }

    #[test]
    fn m2_event_name_without_data_dispatches_nothing() {
        assert_eq!(
            parse_all(&[b"event: x\n\ndata: y\n\n"]),
            vec![ev(None, "y")]
        );
    }
}
