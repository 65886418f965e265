//! What the advisor would be sent for each turn of a recorded session, without a model
//! (SPEC L3): the session is driven as a host would drive the runtime, through the same
//! [`FeedCursor`] the TranscriptFeed uses.

use crate::feed::{batch_parts, FeedCursor, FeedOutcome, Update};
use crate::render::{ExpandedMemory, TranscriptView};
use crate::session::{HostStep, SessionDriver};

/// One turn's prompt.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TurnPrompt {
    /// 1-based count of `TurnEnd`s.
    pub turn: usize,
    /// Exactly what the advisor would be sent: `### Session update\n\n` + the delta (the
    /// expanded view: its parts joined by `\n`).
    pub prompt: String,
    /// The expanded view: the user messages the advisor is sent, one per message shown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parts: Option<Vec<String>>,
    /// The expanded view: whether the turn will continue (the WIP footer is on).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wip: Option<bool>,
}

impl TurnPrompt {
    /// Appends the prompt's JSON object and a `\n` to `out`: the bytes `serde_json` writes
    /// for it (`serde_json::to_writer` then `\n`), without its serializer machinery.
    pub fn write_json_line(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"turn\":");
        out.extend_from_slice(crate::render::decimal(self.turn, &mut [0; 20]));
        out.extend_from_slice(b",\"prompt\":");
        push_json_str(out, &self.prompt);
        if let Some(parts) = &self.parts {
            out.extend_from_slice(b",\"parts\":[");
            for (i, part) in parts.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                push_json_str(out, part);
            }
            out.push(b']');
        }
        if let Some(wip) = self.wip {
            out.extend_from_slice(if wip {
                b",\"wip\":true"
            } else {
                b",\"wip\":false"
            });
        }
        out.extend_from_slice(b"}\n");
    }
}

/// Writes `s` as a JSON string the way `serde_json` does: `"` and `\` escaped with a
/// backslash, the control characters as `\b`, `\t`, `\n`, `\f`, `\r` or `\u00xx` (lower-case
/// hex), every other character (DEL and non-ASCII included) as it is.
fn push_json_str(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    // The bytes before `at` are looked at; those from `run` on are not written yet.
    let mut run = 0;
    let mut at = 0;
    while let Some(word) = bytes.get(at..).and_then(<[u8]>::first_chunk::<8>) {
        let mask = escape_mask(u64::from_le_bytes(*word));
        if mask == 0 {
            at += 8;
            continue;
        }
        // The lowest flagged byte is the first one to escape.
        at += (mask.trailing_zeros() / 8) as usize;
        out.extend_from_slice(&bytes[run..at]);
        push_json_byte(out, bytes[at]);
        at += 1;
        run = at;
    }
    out.extend_from_slice(&bytes[run..at]);
    bytes[at..]
        .iter()
        .for_each(|&byte| push_json_byte(out, byte));
    out.push(b'"');
}

/// The high bit of each byte of `word` (little-endian) that may need an escape: below
/// 0x20, a quote or a backslash. Bytes above the first flagged one may be flagged falsely,
/// never those below it, so the lowest flag is exact, and `0` means none needs one.
fn escape_mask(word: u64) -> u64 {
    const LOW: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // The classic "has a byte below n" test, for n = 1 on the xor-ed words (a zero byte).
    let below = |word: u64, n: u64| word.wrapping_sub(LOW * n) & !word & HIGH;
    below(word, 0x20)
        | below(word ^ (LOW * u64::from(b'"')), 1)
        | below(word ^ (LOW * u64::from(b'\\')), 1)
}

/// Writes one byte of a JSON string's contents, escaped as `serde_json` escapes it.
fn push_json_byte(out: &mut Vec<u8>, byte: u8) {
    let escape: &[u8] = match byte {
        b'"' => b"\\\"",
        b'\\' => b"\\\\",
        b'\n' => b"\\n",
        b'\r' => b"\\r",
        b'\t' => b"\\t",
        0x08 => b"\\b",
        0x0c => b"\\f",
        0x00..=0x1f => {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.extend_from_slice(b"\\u00");
            out.push(HEX[usize::from(byte >> 4)]);
            out.push(HEX[usize::from(byte & 0xf)]);
            return;
        }
        _ => {
            out.push(byte);
            return;
        }
    };
    out.extend_from_slice(escape);
}

/// Iterates over the non-blank prompts of a session. A compaction, or an oh-my-pi reset
/// boundary (`/clear`), resets the cursor, so the next turn sends the whole rewritten
/// transcript (R1); with no model there is no window, so that replay is not bounded.
///
/// In the expanded view each turn is its own review, and a tool-calling turn that no
/// completed assistant reply follows before the next user message (a run cut by an abort)
/// gives no prompt of its own: its messages go into the next one (SPEC §3 Expanded).
pub struct TurnPrompts {
    driver: SessionDriver,
    cursor: FeedCursor,
    merge_cut_turns: bool,
    memory: ExpandedMemory,
}

impl TurnPrompts {
    /// Prompts of `driver`'s session rendered with `view`.
    pub fn new(driver: SessionDriver, view: TranscriptView) -> Self {
        Self {
            driver,
            cursor: FeedCursor::new(view, None),
            merge_cut_turns: view == TranscriptView::Expanded,
            memory: ExpandedMemory::default(),
        }
    }

    /// Turns secret redaction (X5) on or off; it is on by default, as in the runtime.
    pub fn with_redaction(mut self, on: bool) -> Self {
        self.cursor = self.cursor.with_redaction(on);
        self
    }

    /// The driver (for diagnostics).
    pub fn driver(&self) -> &SessionDriver {
        &self.driver
    }
}

impl TurnPrompts {
    /// The next non-blank update of the session with its turn: what the runtime would queue
    /// for review at that turn end (several of them form a batch when the advisor is slow,
    /// see [`batch_parts`]).
    pub fn next_update(&mut self) -> Option<(usize, Update)> {
        while let Some(step) = self.driver.next() {
            match step {
                HostStep::TurnEnded { turn, terminal } => {
                    if self.merge_cut_turns && !terminal && self.driver.turn_was_cut() {
                        continue;
                    }
                    let transcript = self.driver.transcript();
                    match self.cursor.observe(&transcript) {
                        FeedOutcome::Delta(prompt) => return Some((turn, Update::Text(prompt))),
                        FeedOutcome::Turn(delta) => return Some((turn, Update::Turn(delta))),
                        // The mirror's cursor has no `when` filter (RO17): never skipped.
                        FeedOutcome::Blank => {}
                        // A rewrite the host did not announce: the cursor is back at 0 and
                        // the next turn sends everything, as in the runtime.
                        FeedOutcome::Rewrite => self.memory.clear(),
                        // The driver's transcript is read as it stands: never superseded.
                        FeedOutcome::Superseded => {}
                    }
                }
                HostStep::Compacted => {
                    self.cursor.reset();
                    self.memory.clear();
                }
                HostStep::RunStarted | HostStep::RunEnded => {}
            }
        }
        None
    }
}

impl Iterator for TurnPrompts {
    type Item = TurnPrompt;

    /// Each turn reviewed on its own.
    fn next(&mut self) -> Option<TurnPrompt> {
        let (turn, update) = self.next_update()?;
        Some(match update {
            Update::Text(prompt) => TurnPrompt {
                turn,
                prompt,
                parts: None,
                wip: None,
            },
            Update::Turn(delta) => {
                let wip = delta.wip;
                let parts = batch_parts(&[Update::Turn(delta)], &mut self.memory);
                TurnPrompt {
                    turn,
                    prompt: parts.join("\n"),
                    parts: Some(parts),
                    wip: Some(wip),
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// What the CLI wrote before: serde_json's serialisation and a line feed.
    fn by_serde(prompt: &TurnPrompt) -> Vec<u8> {
        let mut out = serde_json::to_vec(prompt).unwrap();
        out.push(b'\n');
        out
    }

    fn direct(prompt: &TurnPrompt) -> Vec<u8> {
        let mut out = b"earlier line\n".to_vec();
        prompt.write_json_line(&mut out);
        out.split_off(b"earlier line\n".len())
    }

    fn prompt(
        turn: usize,
        text: &str,
        parts: Option<Vec<String>>,
        wip: Option<bool>,
    ) -> TurnPrompt {
        TurnPrompt {
            turn,
            prompt: text.to_string(),
            parts,
            wip,
        }
    }

    #[test]
    fn l3_a_prompt_line_is_written_byte_for_byte_as_serde_json_writes_it() {
        let every_control: String = (0u8..0x20).map(char::from).collect();
        let texts = [
            String::new(),
            "### Session update\n\n**agent**:\n→ edit(src/m0.rs) ⇒ ok · 1 line\n".to_string(),
            every_control.clone(),
            format!("{every_control}{every_control}"),
            "quote \" and backslash \\ and slash / and DEL \u{7f}".to_string(),
            "ünïcode é 😀 \u{2028}\u{2029} \u{85} \u{ffff}".to_string(),
            "\"\"\"\"\"\"\"\"\\\\\\\\\\\\\\\\\n".to_string(),
            "12345678\"12345678\\1234567\u{1}".to_string(),
        ];
        for text in &texts {
            // Every alignment of the escapes against the eight-byte steps.
            for shift in 0..9 {
                let text = format!("{}{text}", "x".repeat(shift));
                for (parts, wip) in [
                    (None, None),
                    (
                        Some(vec![text.clone(), String::new(), "b\"".into()]),
                        Some(true),
                    ),
                    (Some(vec![]), Some(false)),
                ] {
                    let p = prompt(shift * 1_000_003, &text, parts, wip);
                    assert_eq!(direct(&p), by_serde(&p), "{text:?}");
                }
            }
        }
        let p = prompt(usize::MAX, "x", None, Some(true));
        assert_eq!(direct(&p), by_serde(&p));
        let p = prompt(0, "x", None, None);
        assert_eq!(direct(&p), b"{\"turn\":0,\"prompt\":\"x\"}\n");
    }

    #[test]
    fn escape_mask_flags_exactly_the_first_byte_to_escape() {
        for first in 0..8 {
            for byte in [0u8, 0x1f, b'"', b'\\', b'\n'] {
                let mut word = [b'a'; 8];
                word[first] = byte;
                // Bytes above may be anything, escapes included.
                let above = [0x20, 0x80, 0xff, b'"', 0x00, 0x21, 0x5b, 0x5d];
                word[first + 1..].copy_from_slice(&above[first + 1..]);
                let mask = escape_mask(u64::from_le_bytes(word));
                assert_eq!((mask.trailing_zeros() / 8) as usize, first, "{word:?}");
            }
        }
        for clean in [
            [b'a'; 8],
            [0x20; 8],
            [0xff; 8],
            [0x80; 8],
            *b"\xe2\x86\x92 ok \xc2",
        ] {
            assert_eq!(escape_mask(u64::from_le_bytes(clean)), 0, "{clean:?}");
        }
    }

    proptest! {
        #[test]
        fn l3_any_prompt_is_written_as_serde_json_writes_it(
            text in "[a\"\\\\\u{0}-\u{1f}\u{7f}é😀 ]{0,40}",
            parts in proptest::option::of(proptest::collection::vec("[a\"\\\\\u{0}-\u{1f}é]{0,12}", 0..3)),
            wip in proptest::option::of(any::<bool>()),
            turn in any::<usize>(),
        ) {
            let p = prompt(turn, &text, parts, wip);
            prop_assert_eq!(direct(&p), by_serde(&p));
        }
    }
}
