//! Transcript renderers (SPEC §3).
//!
//! A rendered delta is what the advisor reads about the primary's latest turn(s). Three
//! views exist: [`TranscriptView::Expanded`] (the default: oh-my-pi 18.3's view, one part
//! per message with intents, excerpted result bodies and diffs), [`TranscriptView::Compact`]
//! (one line per tool call, results summarised) and [`TranscriptView::Full`] (nothing
//! truncated: argument trees, result bodies, diffs). All are pure functions of the delta, so
//! they are tested without any actor.

mod compact;
pub(crate) mod dump;
pub mod excerpt;
pub mod expanded;
mod full;

pub use expanded::{render_batch, ExpandedMemory, UPDATE_HEADING};

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHashSet};
use serde::{Deserialize, Serialize};

use crate::domain::transcript::{
    AssistantBlock, Content, ContentBlock, ToolResultMessage, TranscriptMessage,
};

/// Which rendering the advisor is sent (`advisor.transcript`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TranscriptView {
    /// oh-my-pi 18.3's view (the default): each message of a review's batch is its own
    /// part, with intents, thinking, excerpted result bodies, diffs and the WIP footer.
    #[default]
    Expanded,
    /// One line per tool call with its status; result bodies are never shown.
    Compact,
    /// Every message in full: thinking, argument trees and result bodies, untruncated.
    Full,
}

impl TranscriptView {
    /// The name used in settings and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            TranscriptView::Expanded => "expanded",
            TranscriptView::Compact => "compact",
            TranscriptView::Full => "full",
        }
    }
}

impl fmt::Display for TranscriptView {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A transcript view name that is not `expanded`, `compact` or `full`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown transcript view `{given}`: allowed values are `expanded`, `compact` and `full`")]
pub struct ParseTranscriptViewError {
    /// The rejected input.
    pub given: String,
}

impl FromStr for TranscriptView {
    type Err = ParseTranscriptViewError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "expanded" => Ok(TranscriptView::Expanded),
            "compact" => Ok(TranscriptView::Compact),
            "full" => Ok(TranscriptView::Full),
            other => Err(ParseTranscriptViewError {
                given: other.to_string(),
            }),
        }
    }
}

/// Renders the messages after the feed's cursor (advisor messages already removed, X2).
///
/// Returns `""` when nothing is worth showing (X3: the caller then queues nothing). The
/// compact view ends with exactly one `\n`; the full view ends with its last section; the
/// expanded view is its parts joined by `\n`, as one batch with no heading, no footer and
/// no standing context remembered. Tool statuses and orphan results are resolved within
/// `delta` alone.
pub fn render_delta(view: TranscriptView, delta: &[Arc<TranscriptMessage>]) -> String {
    match view {
        TranscriptView::Expanded => {
            expanded::render_parts(delta, &mut ExpandedMemory::default()).join("\n")
        }
        TranscriptView::Compact => compact::render(delta),
        TranscriptView::Full => full::render(delta),
    }
}

/// Appends what [`render_delta`] returns for `delta` to `out`; the compact view writes
/// straight into it.
pub(crate) fn push_delta(view: TranscriptView, delta: &[Arc<TranscriptMessage>], out: &mut String) {
    match view {
        TranscriptView::Compact => compact::render_into(delta, out),
        TranscriptView::Expanded | TranscriptView::Full => out.push_str(&render_delta(view, delta)),
    }
}

/// `oneLine(s, max)`: whitespace runs collapsed to one space, trimmed, and cut to `max`
/// characters (`max - 1` characters plus `…`) when longer.
#[cfg(test)]
fn one_line(s: &str, max: usize) -> String {
    let mut out = String::new();
    push_one_line(&mut out, s, max);
    out
}

/// Appends `oneLine(s, max)` to `out` without an intermediate string. Work is bounded by
/// `max`, not by the length of `s` (beyond leading whitespace).
pub(crate) fn push_one_line(out: &mut String, s: &str, max: usize) {
    if max == 0 {
        return;
    }
    // Most arguments (a path, a short command) are already one line: copied as they are.
    if s.len() <= max && is_one_line(s.as_bytes()) {
        out.push_str(s);
        return;
    }
    push_words(out, s, max);
}

/// [`push_one_line`] word by word, for any `s` (`max` > 0).
fn push_words(out: &mut String, s: &str, max: usize) {
    let mut count = 0usize;
    // Byte length of `out` once `max - 1` characters are written: where a cut lands.
    let mut cut_at = out.len();
    for (i, word) in s.split_whitespace().enumerate() {
        let space = (i > 0).then_some(' ');
        for c in space.into_iter().chain(word.chars()) {
            if count == max {
                out.truncate(cut_at);
                out.push('…');
                return;
            }
            if count == max - 1 {
                cut_at = out.len();
            }
            out.push(c);
            count += 1;
        }
    }
}

/// True when `oneLine` leaves `s` as it is, `s` being at most `max` bytes long: ASCII only
/// (so no Unicode whitespace, and no more characters than bytes), words separated by single
/// spaces, no other whitespace and none at either end.
fn is_one_line(s: &[u8]) -> bool {
    if s.first() == Some(&b' ') || s.last() == Some(&b' ') {
        return false;
    }
    let mut space = false;
    for &b in s {
        match b {
            b' ' if space => return false,
            b' ' => space = true,
            // `char::is_whitespace` of ASCII: tab, line feed, vertical tab, form feed, return.
            b'\t' | b'\n' | 0x0b | 0x0c | b'\r' => return false,
            0x80.. => return false,
            _ => space = false,
        }
    }
    true
}

/// The decimal digits of `n`, as `{n}` formats it, written at the end of `digits`.
#[inline]
pub(crate) fn decimal(mut n: usize, digits: &mut [u8; 20]) -> &[u8] {
    let mut at = digits.len();
    loop {
        at -= 1;
        // A digit: `n % 10` is below 10.
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    &digits[at..]
}

/// The default `max` of `oneLine`.
pub(crate) const ONE_LINE_MAX: usize = 120;

/// Per-delta lookups, built once so that rendering stays linear in the delta. A delta of
/// a few messages (one turn: the usual case) is searched in place instead, which answers
/// the same without building the tables.
pub(crate) enum ToolIndex<'a> {
    /// At most [`SMALL_DELTA`] messages, searched on each lookup.
    Small(&'a [Arc<TranscriptMessage>]),
    /// A longer delta's tables.
    Tables {
        /// Call id → the first result answering it.
        results: FxHashMap<&'a str, &'a ToolResultMessage>,
        /// Ids of the tool calls made by assistant messages of the delta.
        calls: FxHashSet<&'a str>,
    },
}

/// The longest delta [`ToolIndex`] searches in place.
const SMALL_DELTA: usize = 8;

impl<'a> ToolIndex<'a> {
    /// Indexes the tool calls and results of `delta`.
    pub(crate) fn build(delta: &'a [Arc<TranscriptMessage>]) -> Self {
        if delta.len() <= SMALL_DELTA {
            return ToolIndex::Small(delta);
        }
        Self::tables(delta)
    }

    /// The tables of `delta`, whatever its length.
    fn tables(delta: &'a [Arc<TranscriptMessage>]) -> Self {
        let mut results = FxHashMap::default();
        let mut calls = FxHashSet::default();
        for message in delta {
            match message.as_ref() {
                TranscriptMessage::ToolResult(r) => {
                    results.entry(r.tool_call_id.as_str()).or_insert(r);
                }
                TranscriptMessage::Assistant(a) => {
                    for block in &a.content {
                        if let AssistantBlock::ToolCall { id, .. } = block {
                            calls.insert(id.as_str());
                        }
                    }
                }
                _ => {}
            }
        }
        ToolIndex::Tables { results, calls }
    }

    /// The result answering call `id`, if the delta holds one (the first, if several do).
    pub(crate) fn result_for(&self, id: &str) -> Option<&'a ToolResultMessage> {
        match self {
            ToolIndex::Small(delta) => delta.iter().find_map(|message| match message.as_ref() {
                TranscriptMessage::ToolResult(r) if r.tool_call_id == id => Some(r),
                _ => None,
            }),
            ToolIndex::Tables { results, .. } => results.get(id).copied(),
        }
    }

    /// True when the call answered by a result with this id is part of the delta.
    pub(crate) fn has_call(&self, id: &str) -> bool {
        match self {
            ToolIndex::Small(delta) => delta.iter().any(|message| {
                match message.as_ref() {
                TranscriptMessage::Assistant(a) => a.content.iter().any(|block| {
                    matches!(block, AssistantBlock::ToolCall { id: call, .. } if call == id)
                }),
                _ => false,
            }
            }),
            ToolIndex::Tables { calls, .. } => calls.contains(id),
        }
    }
}

/// `s.trim().is_empty()`, answered at once when `s` starts with a visible ASCII character.
pub(crate) fn is_blank(s: &str) -> bool {
    match s.as_bytes().first() {
        Some(&b) if b.is_ascii() && !matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r') => {
            false
        }
        _ => s.trim().is_empty(),
    }
}

/// True when the content's text (images counted as `[image]` when `images`) is blank.
pub(crate) fn content_is_blank(content: &Content, images: bool) -> bool {
    match content {
        Content::Text(s) => is_blank(s),
        Content::Blocks(blocks) => blocks.iter().all(|b| match b {
            ContentBlock::Text { text } => is_blank(text),
            ContentBlock::Image { .. } => !images,
            ContentBlock::Unknown(_) => true,
        }),
    }
}

/// Appends the content's text blocks joined by `sep` (images as `[image]`, or
/// `[image: PATH]` with a path, when `images`, CA24):
/// what [`Content::joined_text`] returns, without the intermediate allocation.
pub(crate) fn push_joined(out: &mut String, content: &Content, sep: &str, images: bool) {
    match content {
        Content::Text(s) => out.push_str(s),
        Content::Blocks(blocks) => {
            let mut first = true;
            for block in blocks {
                let image;
                let part = match block {
                    ContentBlock::Text { text } => text.as_str(),
                    ContentBlock::Image { .. } if images => {
                        image = block.image_label().unwrap_or_default();
                        &*image
                    }
                    _ => continue,
                };
                if !first {
                    out.push_str(sep);
                }
                first = false;
                out.push_str(part);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A user message with two images: one pasted from a file (its path recorded), one
    /// without a path, as a session line carries them.
    fn user_with_images() -> Vec<Arc<TranscriptMessage>> {
        let line = r#"{"role":"user","content":[{"type":"text","text":"see this"},{"type":"image","data":"aGk=","mimeType":"image/png","path":"/home/u/shot.png"},{"type":"image","data":"aGk=","mimeType":"image/png"}]}"#;
        vec![Arc::new(serde_json::from_str(line).unwrap())]
    }

    #[test]
    fn ca24_an_image_with_its_file_renders_its_path_in_every_view() {
        let delta = user_with_images();
        for view in [
            TranscriptView::Expanded,
            TranscriptView::Compact,
            TranscriptView::Full,
        ] {
            let text = render_delta(view, &delta);
            assert!(
                text.contains("see this\n[image: /home/u/shot.png]\n[image]"),
                "{view:?}: {text}"
            );
        }
    }

    #[test]
    fn view_parses_and_names_allowed_values() {
        assert_eq!("expanded".parse(), Ok(TranscriptView::Expanded));
        assert_eq!("compact".parse(), Ok(TranscriptView::Compact));
        assert_eq!("full".parse(), Ok(TranscriptView::Full));
        let err = "verbose".parse::<TranscriptView>().unwrap_err();
        let text = err.to_string();
        assert!(text.contains("verbose") && text.contains("compact") && text.contains("full"));
        assert!(text.contains("expanded"));
        assert_eq!(TranscriptView::default(), TranscriptView::Expanded);
    }

    #[test]
    fn view_serde_is_lowercase() {
        assert_eq!(
            serde_json::to_string(&TranscriptView::Full).unwrap(),
            "\"full\""
        );
        let v: TranscriptView = serde_json::from_str("\"compact\"").unwrap();
        assert_eq!(v, TranscriptView::Compact);
        assert!(serde_json::from_str::<TranscriptView>("\"Full\"").is_err());
    }

    #[test]
    fn one_line_collapses_and_trims() {
        assert_eq!(one_line("  a \n\t b  c ", 120), "a b c");
        assert_eq!(one_line("", 120), "");
        assert_eq!(one_line(" \n ", 120), "");
    }

    #[test]
    fn one_line_cuts_by_characters_not_bytes() {
        assert_eq!(one_line("abcdef", 6), "abcdef");
        assert_eq!(one_line("abcdefg", 6), "abcde…");
        assert_eq!(one_line("ééééééé", 6), "ééééé…");
        assert_eq!(one_line("ab  cd", 4), "ab …");
        assert_eq!(one_line("ab", 1), "…");
        assert_eq!(one_line("a", 1), "a");
        assert_eq!(one_line("abc", 0), "");
    }

    /// The general `oneLine`, as the fast path must answer.
    fn words(s: &str, max: usize) -> String {
        let mut out = String::new();
        push_words(&mut out, s, max);
        out
    }

    #[test]
    fn l1_one_line_fast_path_answers_as_the_word_walk() {
        let cases = [
            "",
            "a",
            "src/m0.rs",
            "a b",
            "a  b",
            " a",
            "a ",
            "a\tb",
            "a\nb",
            "a\u{b}b",
            "a\u{c}b",
            "a\rb",
            "a\u{a0}b",
            "a\u{2028}b",
            "é",
            "ab cd ef",
            "x\u{85}y",
        ];
        for s in cases {
            for max in [1, 2, 3, 5, 8, 9, 10, 120] {
                assert_eq!(one_line(s, max), words(s, max), "{s:?} {max}");
            }
        }
        let long = "word ".repeat(40);
        assert_eq!(one_line(long.trim(), 120), words(long.trim(), 120));
        assert_eq!(one_line(&"x".repeat(120), 120), "x".repeat(120));
        assert_eq!(
            one_line(&"x".repeat(121), 120),
            words(&"x".repeat(121), 120)
        );
    }

    #[test]
    fn is_blank_answers_as_trim() {
        for s in [
            "", " ", "a", " a", "\u{b}", "\u{b}x", "\u{a0}", "\u{a0}x", "é", "\n\t", "\u{3000}",
        ] {
            assert_eq!(is_blank(s), s.trim().is_empty(), "{s:?}");
        }
    }

    #[test]
    fn l1_tool_index_of_a_short_delta_answers_as_its_tables() {
        let line = |v: serde_json::Value| Arc::new(serde_json::from_value(v).unwrap());
        let call = |ids: &[&str]| {
            let blocks: Vec<_> = ids
                .iter()
                .map(|id| serde_json::json!({"type": "toolCall", "id": id, "name": "read", "arguments": {}}))
                .collect();
            line(serde_json::json!({"role": "assistant", "content": blocks}))
        };
        let result = |id: &str, text: &str| {
            line(
                serde_json::json!({"role": "toolResult", "toolCallId": id, "toolName": "read", "content": text}),
            )
        };
        let delta: Vec<Arc<TranscriptMessage>> = vec![
            line(serde_json::json!({"role": "user", "content": "go"})),
            call(&["a", "b"]),
            result("a", "first"),
            result("a", "second"),
            result("c", "orphan"),
            call(&["d"]),
        ];
        let small = ToolIndex::build(&delta);
        assert!(matches!(small, ToolIndex::Small(_)));
        let tables = ToolIndex::tables(&delta);
        for id in ["a", "b", "c", "d", "e", ""] {
            assert_eq!(small.has_call(id), tables.has_call(id), "{id}");
            let text = |index: &ToolIndex<'_>| {
                index
                    .result_for(id)
                    .map(|r| r.content.joined_text("\n", false))
            };
            assert_eq!(text(&small), text(&tables), "{id}");
        }
        assert_eq!(
            small
                .result_for("a")
                .map(|r| r.content.joined_text("\n", false)),
            Some("first".to_string())
        );
    }

    #[test]
    fn one_line_appends_after_existing_text() {
        let mut out = String::from("x: ");
        push_one_line(&mut out, "hello world", 5);
        assert_eq!(out, "x: hell…");
    }

    #[test]
    fn joined_matches_transcript_model() {
        let content = Content::Blocks(vec![
            ContentBlock::Text { text: "a".into() },
            ContentBlock::Image {
                data: None,
                mime_type: None,
                path: None,
            },
            ContentBlock::Text { text: "b".into() },
        ]);
        for images in [true, false] {
            let mut out = String::new();
            push_joined(&mut out, &content, "\n", images);
            assert_eq!(out, content.joined_text("\n", images));
        }
        assert!(!content_is_blank(&content, false));
        let only_image = Content::Blocks(vec![ContentBlock::Image {
            data: None,
            mime_type: None,
            path: None,
        }]);
        assert!(content_is_blank(&only_image, false));
        assert!(!content_is_blank(&only_image, true));
    }
}
