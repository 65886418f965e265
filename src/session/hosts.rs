//! What the host transcript readers share (SPEC L6): telling a Claude Code transcript or a Codex
//! rollout from a pi session by its first lines, the line loop both host readers share (caps,
//! malformed lines, a file still being written), and the pieces both map alike (hook-injected
//! text, ISO timestamps).

use std::io::{self, BufRead, Seek};

use serde_json::Value;

use super::branch::SessionFormat;
use super::diagnostics::{describe_json_error, Diagnostics, ReadLimits};
use super::input::{Line, Lines};
use crate::domain::transcript::{Content, CustomMessage, RawJson, TranscriptMessage};

/// How many lines after a broken first line are looked at to tell a host transcript.
const DETECT_LINES: usize = 8;

/// The `customType` of text a hook put in front of the primary (SPEC L6).
pub(super) const HOOK_TYPE: &str = "hook";

/// The line types of a Claude Code transcript that tell one (2.1.x writes several of them
/// before the first message).
const CLAUDE_TYPES: [&str; 12] = [
    "user",
    "assistant",
    "system",
    "summary",
    "attachment",
    "queue-operation",
    "file-history-snapshot",
    "last-prompt",
    "custom-title",
    "atis-latch",
    "api-request",
    "cost-state",
];

/// The host format a parsed line belongs to, if any: a Codex rollout line is the envelope
/// `{timestamp, type, payload}`; a Claude Code line has one of Claude's line types or its
/// linking keys (`parentUuid`, `sessionId`, `isSidechain`).
pub(super) fn detect(value: &Value) -> Option<SessionFormat> {
    let object = value.as_object()?;
    let kind = object.get("type").and_then(Value::as_str);
    if kind.is_some()
        && object.get("payload").is_some_and(Value::is_object)
        && object.get("timestamp").is_some_and(Value::is_string)
    {
        return Some(SessionFormat::Codex);
    }
    let claude_type = kind.is_some_and(|k| CLAUDE_TYPES.contains(&k) || k.starts_with("api-"));
    let claude_keys = ["parentUuid", "sessionId", "isSidechain", "leafUuid"]
        .iter()
        .any(|k| object.contains_key(*k));
    (claude_type || claude_keys).then_some(SessionFormat::ClaudeCode)
}

/// After a first line that is not JSON: the host format the next lines tell, if any.
pub(super) fn detect_after<R: BufRead + Seek>(
    lines: &mut Lines<R>,
) -> io::Result<Option<SessionFormat>> {
    for _ in 0..DETECT_LINES {
        let Some((_, line)) = lines.next_line()? else {
            return Ok(None);
        };
        let Line::Text(bytes) = line else { continue };
        if let Ok(value) = serde_json::from_slice::<Value>(bytes) {
            return Ok(detect(&value));
        }
    }
    Ok(None)
}

/// Where a read of a file that may still grow stopped: what the next read goes on from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Resume {
    /// The offset after the last line taken, or the start of a last line left for later
    /// (not written whole yet).
    pub(super) offset: u64,
    /// The lines before `offset` (blank and broken ones included).
    pub(super) number: usize,
    /// The last line taken has no line break yet: it was taken because it parsed whole.
    pub(super) open: bool,
}

/// Calls `each` with every line of the file that parses as JSON, with its 1-based number.
/// A line that does not, or is longer than the cap, is recorded in `diagnostics` and
/// skipped — except the last line of a file that may still grow (`limits.growing`) when it
/// has no line break yet: it is not written whole, and reading stops there silently.
/// Returns where a later read of what is appended goes on from (SPEC H31): after the last
/// line, or at the start of a last line left for later (one that does not parse yet, or
/// one over the cap whose end is not written yet).
pub(super) fn each_line<R: BufRead + Seek>(
    lines: &mut Lines<R>,
    limits: &ReadLimits,
    diagnostics: &mut Diagnostics,
    mut each: impl FnMut(usize, Value, &mut Diagnostics),
) -> io::Result<Resume> {
    let mut left = None;
    let mut open = false;
    loop {
        let Some((number, line)) = lines.next_line()? else {
            return Ok(left.unwrap_or(Resume {
                offset: lines.position(),
                number: lines.number,
                open,
            }));
        };
        let parsed = match line {
            Line::TooLong => None,
            Line::Text(bytes) => Some(serde_json::from_slice::<Value>(bytes)),
        };
        let unterminated = lines.unterminated();
        let here = Resume {
            offset: lines.line_start(),
            number: number - 1,
            open: false,
        };
        open = false;
        match parsed {
            None => {
                diagnostics.malformed.push((number, lines.too_long()));
                if unterminated {
                    left = Some(here);
                }
            }
            Some(Ok(value)) => {
                open = unterminated;
                each(number, value, diagnostics);
            }
            Some(Err(_)) if limits.growing && unterminated => return Ok(here),
            Some(Err(e)) => diagnostics
                .malformed
                .push((number, describe_json_error(&e))),
        }
    }
}

/// The string at `key`, when it is one.
pub(super) fn str_at<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

/// The owned string at `key`, when it is one.
pub(super) fn string_at(value: &Value, key: &str) -> Option<String> {
    str_at(value, key).map(str::to_string)
}

/// A message a hook put in front of the primary (additional context, a Stop hook's
/// continuation reason), as a custom message: the advisor's own delivery (its text opens
/// with `<advisory`, as every delivery does) is typed `advisor`, so the feed never reviews
/// it as new work (X2); any other hook's text is typed [`HOOK_TYPE`] and shown. The test
/// is on the channel (only hook-injected text is looked at), never on the primary's own
/// output.
pub(super) fn hook_message(text: String, event: Option<&str>) -> TranscriptMessage {
    let custom_type = if text.trim_start().starts_with("<advisory") {
        "advisor"
    } else {
        HOOK_TYPE
    };
    let details = event.map(|e| RawJson::from(serde_json::json!({ "hookEvent": e })));
    TranscriptMessage::Custom(CustomMessage {
        custom_type: custom_type.to_string(),
        content: Content::Text(text),
        display: true,
        details,
        attribution: None,
    })
}

/// The openings both CLIs put before the model's compaction summary (one line each).
const SUMMARY_OPENINGS: [&str; 2] = [
    "This session is being continued from a previous conversation",
    "Another language model started to solve this problem",
];

/// Where Claude Code's closing instructions after the summary begin.
const SUMMARY_CLOSING: &str = "If you need specific details from before compaction";

/// The summary proper of a host compaction (L7, L8): the CLIs wrap the model's summary in
/// fixed text — Claude Code opens with "This session is being continued…", adds a
/// `<system-reminder>` and closes with how to read the full transcript; Codex opens with
/// "Another language model started…:" — which is dropped, so the summary's own words come
/// first in the one line a rendering keeps of it. A text that is nothing but framing is kept
/// as it is.
pub(super) fn compaction_summary(text: &str) -> String {
    let mut rest = text.trim();
    if SUMMARY_OPENINGS.iter().any(|o| rest.starts_with(o)) {
        rest = rest.split_once('\n').map_or("", |(_, after)| after);
    }
    if let Some(at) = rest.find(SUMMARY_CLOSING) {
        rest = &rest[..at];
    }
    let mut out = String::with_capacity(rest.len());
    let mut left = rest;
    while let Some(start) = left.find("<system-reminder>") {
        out.push_str(&left[..start]);
        left = left[start..]
            .find("</system-reminder>")
            .map_or("", |end| &left[start + end + "</system-reminder>".len()..]);
    }
    out.push_str(left);
    let proper = out.trim();
    if proper.is_empty() {
        text.trim().to_string()
    } else {
        proper.to_string()
    }
}

/// Milliseconds since the epoch of an ISO 8601 UTC timestamp as both hosts write them
/// (`2026-12-05T13:08:55.769Z`, fraction optional, `Z` or `+00:00`); `None` otherwise.
pub(super) fn iso_millis(stamp: &str) -> Option<u64> {
    let b = stamp.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[13] != b':' {
        return None;
    }
    let num = |from: usize, to: usize| -> Option<u64> {
        let digits = stamp.get(from..to)?;
        digits
            .bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| digits.parse().ok())?
    };
    let (year, month, day) = (num(0, 4)?, num(5, 7)?, num(8, 10)?);
    let (hour, minute, second) = (num(11, 13)?, num(14, 16)?, num(17, 19)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 {
        return None;
    }
    let rest = &stamp[19..];
    let (fraction, zone) = match rest.strip_prefix('.') {
        Some(r) => {
            let end = r.find(|c: char| !c.is_ascii_digit()).unwrap_or(r.len());
            let digits = &r[..end.min(3)];
            let scale = 10u64.pow(3 - u32::try_from(digits.len()).ok()?);
            (digits.parse::<u64>().unwrap_or(0) * scale, &r[end..])
        }
        None => (0, rest),
    };
    if !matches!(zone, "Z" | "+00:00") {
        return None;
    }
    // Days from the civil date (proleptic Gregorian), after Howard Hinnant's algorithm.
    let (y, m) = if month <= 2 {
        (year - 1, month + 9)
    } else {
        (year, month - 3)
    };
    let era = y / 400;
    let yoe = y - era * 400;
    let doy = (153 * m + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = (era * 146_097 + doe).checked_sub(719_468)?;
    Some(((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + fraction)
}

/// What the tests of both host readers share: reading crafted lines, naming the entries.
#[cfg(test)]
pub(super) mod testing {
    use std::io::Cursor;
    use std::path::Path;

    use serde_json::Value;

    use crate::session::{read_session_from_with, BranchEntry, ReadLimits, SessionBranch};

    /// Reads `lines` (one JSON value a line) followed by `tail` as written.
    pub(in crate::session) fn read_with(
        lines: &[Value],
        tail: &str,
        limits: &ReadLimits,
    ) -> SessionBranch {
        let mut text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        text.push_str(tail);
        read_session_from_with(Cursor::new(text.into_bytes()), Path::new("t.jsonl"), limits)
            .expect("a transcript")
    }

    /// [`read_with`] with nothing after the lines and the default limits.
    pub(in crate::session) fn read(lines: &[Value]) -> SessionBranch {
        read_with(lines, "", &ReadLimits::default())
    }

    /// Each entry as its role, or `compaction:SUMMARY`, or `reset`.
    pub(in crate::session) fn roles(branch: &SessionBranch) -> Vec<String> {
        branch
            .entries
            .iter()
            .map(|e| match e {
                BranchEntry::Message(m) => m.role().to_string(),
                BranchEntry::Compaction { summary, .. } => format!("compaction:{summary}"),
                BranchEntry::ResetBoundary => "reset".to_string(),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;
    use std::path::Path;

    use super::*;
    use crate::session::{read_session_from_with, SessionBranch, SessionError};
    use serde_json::json;

    #[test]
    fn l7_l8_a_compaction_summary_is_the_models_words_without_the_clis_framing() {
        let claude = "This session is being continued from a previous conversation that ran \
            out of context. The summary below covers the earlier portion of the conversation.\n\n\
            <system-reminder>\n<tools-used-before-summary>Bash</tools-used-before-summary>\n\
            </system-reminder>\nThe agent wrote notes.\n\nIf you need specific details from \
            before compaction (like exact code snippets), read the full transcript at: /x.jsonl";
        assert_eq!(compaction_summary(claude), "The agent wrote notes.");
        let codex = "Another language model started to solve this problem and produced a \
            summary of its thinking process. Here is the summary, use it:\nThe agent wrote notes.";
        assert_eq!(compaction_summary(codex), "The agent wrote notes.");
        assert_eq!(compaction_summary(" plain summary "), "plain summary");
        let only_framing = "Another language model started to solve this problem:\n";
        assert_eq!(compaction_summary(only_framing), only_framing.trim());
    }

    #[test]
    fn l6_detects_each_host_by_its_lines_never_a_pi_entry() {
        let codex = json!({"timestamp":"t","type":"session_meta","payload":{"id":"x"}});
        assert_eq!(detect(&codex), Some(SessionFormat::Codex));
        let claude = json!({"type":"queue-operation","operation":"enqueue"});
        assert_eq!(detect(&claude), Some(SessionFormat::ClaudeCode));
        let future = json!({"type":"brand-new","parentUuid":null,"uuid":"u"});
        assert_eq!(detect(&future), Some(SessionFormat::ClaudeCode));
        let pi = json!({"type":"message","id":"a","parentId":null,"message":{}});
        assert_eq!(detect(&pi), None);
        assert_eq!(detect(&json!([1, 2])), None);
        assert_eq!(detect(&json!({"type":"model_change"})), None);
    }

    fn read_text(text: &str, limits: &ReadLimits) -> Result<SessionBranch, SessionError> {
        read_session_from_with(
            Cursor::new(text.as_bytes().to_vec()),
            Path::new("t.jsonl"),
            limits,
        )
    }

    #[test]
    fn l6_a_broken_first_line_is_reported_and_the_lines_after_it_tell_the_format() {
        let text = "{\"type\":\"user\",\"uuid\n\
                    {\"type\":\"user\",\"uuid\":\"u1\",\"parentUuid\":null,\"message\":{\"content\":\"hi\"}}\n";
        let b = read_text(text, &ReadLimits::default()).expect("a transcript");
        assert_eq!(b.header.format, SessionFormat::ClaudeCode);
        assert_eq!(b.entries.len(), 1);
        assert_eq!(b.diagnostics.malformed.len(), 1);
        assert_eq!(b.diagnostics.malformed[0].0, 1);
        // Lines of neither host, nor a pi header: not a session, as before.
        let other = read_text(
            "{\"type\":\"model_change\"}\n{\"a\":1}\n",
            &ReadLimits::default(),
        );
        assert!(matches!(other, Err(SessionError::NotASession { .. })));
    }

    #[test]
    fn l6_a_host_line_over_the_cap_is_reported_never_buffered() {
        let meta = json!({"timestamp":"t","type":"session_meta","payload":{"id":"x"}});
        let big = json!({"timestamp":"t","type":"response_item","payload":{"type":"message",
            "role":"user","content":[{"type":"input_text","text":"y".repeat(4096)}]}});
        let small = json!({"timestamp":"t","type":"response_item","payload":{"type":"message",
            "role":"user","content":[{"type":"input_text","text":"ok"}]}});
        let limits = ReadLimits {
            max_line_bytes: 1024,
            ..ReadLimits::default()
        };
        let b = read_text(&format!("{meta}\n{big}\n{small}\n"), &limits).expect("a rollout");
        assert_eq!(b.entries.len(), 1);
        assert_eq!(b.diagnostics.malformed.len(), 1);
        assert_eq!(b.diagnostics.malformed[0].0, 2);
        assert!(b.diagnostics.malformed[0]
            .1
            .contains("longer than 1024 bytes"));
    }

    #[test]
    fn iso_timestamps_read_as_epoch_milliseconds() {
        assert_eq!(iso_millis("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            iso_millis("2026-12-05T13:08:55.769Z"),
            Some(1_796_476_135_769)
        );
        assert_eq!(
            iso_millis("2000-03-01T00:00:01.5+00:00"),
            Some(951_868_801_500)
        );
        assert_eq!(iso_millis("2026-12-05 13:08:55Z"), None);
        assert_eq!(iso_millis("2026-13-05T13:08:55Z"), None);
        assert_eq!(iso_millis("2026-12-05T13:08:55+02:00"), None);
        assert_eq!(iso_millis("é"), None);
    }

    #[test]
    fn x2_hook_text_is_the_advisors_own_only_when_it_is_an_advisory() {
        let own = hook_message("<advisory severity=\"nit\">x</advisory>".into(), None);
        assert!(own.is_advisor_message());
        let other = hook_message("lint: 3 warnings".into(), Some("PostToolUse"));
        assert!(!other.is_advisor_message());
        assert_eq!(
            serde_json::to_value(&other).unwrap()["customType"],
            json!(HOOK_TYPE)
        );
    }
}
