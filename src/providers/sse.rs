//! An incremental Server-Sent Events parser over a byte stream.
//!
//! Bytes arrive in arbitrary chunks; [`SseParser::feed`] returns every event completed by
//! them. Lines end with `\n`, `\r\n` or `\r` (a `\r` at the very end of a chunk is matched
//! with a `\n` that starts the next one). Lines starting with `:` are comments (OpenRouter's
//! `: OPENROUTER PROCESSING` keep-alives). Several `data:` lines of one event are joined
//! with `\n`. A blank line ends an event; an event with no data is skipped.

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// The `event:` field, when the server named the event (Anthropic does, OpenAI does not).
    pub event: Option<String>,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

/// The parser's state between chunks.
#[derive(Debug, Default)]
pub struct SseParser {
    /// Bytes of the current, unterminated line.
    line: Vec<u8>,
    /// The previous chunk ended with `\r`: a leading `\n` belongs to that line ending.
    skip_lf: bool,
    /// `event:` of the event being assembled.
    event: Option<String>,
    /// `data:` lines of the event being assembled.
    data: Vec<String>,
    /// Comment lines seen so far.
    comments: usize,
}

impl SseParser {
    /// A parser with no buffered input.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many comment lines were seen (keep-alives).
    pub fn comments(&self) -> usize {
        self.comments
    }

    /// Feeds a chunk of bytes and returns the events it completed, in order.
    pub fn feed(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        let mut out = Vec::new();
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
                _ => self.line.push(b),
            }
        }
        out
    }

    /// Ends the stream: an event whose lines were all terminated but which lacked the final
    /// blank line is still dispatched (some servers close right after `data: [DONE]\n`);
    /// an unterminated last line is dropped as truncated.
    pub fn finish(&mut self) -> Option<SseEvent> {
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
            self.comments += 1;
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
            "data" => self.data.push(value.to_string()),
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
    fn m2_comment_lines_are_skipped_and_counted() {
        let mut p = SseParser::new();
        let got = p.feed(b": OPENROUTER PROCESSING\n\n: again\ndata: x\n\n");
        assert_eq!(got, vec![ev(None, "x")]);
        assert_eq!(p.comments(), 2);
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
