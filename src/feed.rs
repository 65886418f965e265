//! The transcript cursor (SPEC X1–X4, R1): turns a turn end into the delta the advisor is
//! sent, and detects host-side rewrites. Pure logic; the TranscriptFeed actor wraps it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use crate::domain::transcript::{AssistantBlock, Transcript, TranscriptMark, TranscriptMessage};
use crate::redact::Redactor;
use crate::render::{
    is_blank, push_delta, render_batch, render_delta, ExpandedMemory, TranscriptView,
    UPDATE_HEADING,
};
use crate::roster::PathFilter;
use crate::tools::read::split_selector;
use crate::watchdog::normalize_lexically;

/// One turn's messages in the expanded view (SPEC §3 Expanded): they are rendered together
/// with the other turns of their batch when the review starts, so that a coalesced batch
/// gets one heading, one tool-result index and one run of role labels.
#[derive(Debug, Clone)]
pub struct TurnDelta {
    /// The messages after the cursor, the advisor's own removed (X2).
    pub messages: Vec<Arc<TranscriptMessage>>,
    /// The turn will continue: the model is called again after its tool calls (WIP).
    pub wip: bool,
    /// Earlier messages left out to fit a bounded replay after a reset (R1).
    pub omitted: usize,
    /// Secret redaction applied to each rendered part (X5); `None` = off.
    redactor: Option<Redactor>,
}

impl PartialEq for TurnDelta {
    fn eq(&self, other: &Self) -> bool {
        self.wip == other.wip
            && self.omitted == other.omitted
            && self.redactor.is_some() == other.redactor.is_some()
            && self.messages.len() == other.messages.len()
            && self
                .messages
                .iter()
                .zip(&other.messages)
                .all(|(a, b)| Arc::ptr_eq(a, b) || a == b)
    }
}

/// One turn's update as queued for review (G2).
#[derive(Debug, Clone, PartialEq)]
pub enum Update {
    /// The compact or full rendering, heading included.
    Text(String),
    /// The expanded view's messages, rendered per batch.
    Turn(TurnDelta),
}

impl From<String> for Update {
    fn from(text: String) -> Self {
        Update::Text(text)
    }
}

impl From<&str> for Update {
    fn from(text: &str) -> Self {
        Update::Text(text.to_string())
    }
}

/// The user messages a batch of updates is sent as (G2; SPEC §3 Expanded). Rendered texts
/// (compact, full) are joined by a blank line into one message, as before; the turns of the
/// expanded view are rendered as one list into one part per message, with one heading and,
/// when the last turn will continue, the WIP footer. `memory` holds the standing context
/// already sent and is updated; the caller keeps the update only if the review succeeds.
pub fn batch_parts(updates: &[Update], memory: &mut ExpandedMemory) -> Vec<String> {
    let texts: Vec<&str> = updates
        .iter()
        .filter_map(|u| match u {
            Update::Text(t) => Some(t.as_str()),
            Update::Turn(_) => None,
        })
        .collect();
    let mut parts = Vec::new();
    if !texts.is_empty() {
        parts.push(texts.join("\n\n"));
    }
    let turns: Vec<&TurnDelta> = updates
        .iter()
        .filter_map(|u| match u {
            Update::Turn(t) => Some(t),
            Update::Text(_) => None,
        })
        .collect();
    let Some(last) = turns.last() else {
        return parts;
    };
    let messages: Vec<Arc<TranscriptMessage>> = turns
        .iter()
        .flat_map(|t| t.messages.iter().cloned())
        .collect();
    let omitted: usize = turns.iter().map(|t| t.omitted).sum();
    let mut rendered = render_batch(&messages, last.wip, memory);
    if omitted > 0 {
        if let Some(first) = rendered.first_mut() {
            first.insert_str(UPDATE_HEADING.len(), &omission_notice(omitted));
        }
    }
    let redactor = turns.iter().find_map(|t| t.redactor.as_ref());
    parts.extend(rendered.into_iter().map(|part| match redactor {
        Some(r) => r.redact(&part).into_owned(),
        None => part,
    }));
    parts
}

/// What a bounded replay puts before the kept messages (R1).
fn omission_notice(omitted: usize) -> String {
    format!("[{omitted} earlier messages of the session omitted to fit the advisor's context]\n\n")
}

/// What one turn end produced.
#[derive(Debug, Clone, PartialEq)]
pub enum FeedOutcome {
    /// A non-blank delta, ready to queue: `### Session update\n\n` + the rendering.
    Delta(String),
    /// A non-blank delta of the expanded view: the turn's messages, rendered with the rest
    /// of their batch.
    Turn(TurnDelta),
    /// Nothing new worth reviewing; the cursor still moved to the end.
    Blank,
    /// The transcript is shorter than the cursor or its seen prefix changed (X1): the caller
    /// resets the advisor (R1). The cursor is left at 0.
    Rewrite,
    /// The host replaced the transcript after this turn ended, before the feed read it:
    /// the turn's messages are gone. The cursor did not move; the host's own rewrite, or
    /// the next turn end's prefix check, takes it from there.
    Superseded,
}

/// The feed's cursor over the primary transcript.
///
/// It remembers how many messages it has seen and the last of them; a turn end costs
/// O(delta): the seen prefix is checked through its last message only (pointer equality
/// first, then value equality), never walked.
///
/// Deltas are redacted (X5) unless [`FeedCursor::with_redaction`] turned that off; the
/// default cursor redacts too.
#[derive(Debug, Clone)]
pub struct FeedCursor {
    seen: usize,
    last: Option<Arc<TranscriptMessage>>,
    /// Character budget for the first delta after a reset (R1); `None` = unbounded.
    replay_budget: Option<usize>,
    view: TranscriptView,
    /// Secret redaction applied to every delta (X5); `None` = off.
    redactor: Option<Redactor>,
    /// A named advisor's `when: { paths }` (RO17): only updates touching a matching path
    /// are eligible for its cadence (CA4); `None` matches every update.
    when: Option<WhenPaths>,
    /// Whether the last update the cursor read touched a path `when` matches (always true
    /// without `when`).
    matched: bool,
    /// The buffer each delta is rendered into, kept from one turn end to the next (up to
    /// [`SCRATCH_KEPT`] bytes) so that a turn's rendering does not grow a new string.
    scratch: String,
    /// The list each compact or full delta's messages are gathered in, kept empty from one
    /// turn end to the next (up to [`DELTA_KEPT`] entries of room).
    delta: Vec<Arc<TranscriptMessage>>,
}

/// The most room for messages a cursor keeps in its delta list between turn ends.
const DELTA_KEPT: usize = 1024;

/// The largest rendering buffer a cursor keeps between turn ends; a larger one (a long
/// replay) is freed once used.
const SCRATCH_KEPT: usize = 64 * 1024;

impl Default for FeedCursor {
    fn default() -> Self {
        Self::new(TranscriptView::default(), None)
    }
}

impl FeedCursor {
    /// A cursor at the start of the transcript, redacting secrets (X5: on by default).
    pub fn new(view: TranscriptView, replay_budget: Option<usize>) -> Self {
        Self {
            seen: 0,
            last: None,
            view,
            replay_budget,
            redactor: build_redactor(),
            when: None,
            matched: true,
            scratch: String::new(),
            delta: Vec::new(),
        }
    }

    /// A cursor at the start of the transcript that redacts with `redactor` (X5), an
    /// already compiled one shared with other sessions (A6); `None` sends deltas
    /// unredacted. Nothing is compiled here.
    pub fn with_redactor(
        view: TranscriptView,
        replay_budget: Option<usize>,
        redactor: Option<Redactor>,
    ) -> Self {
        Self {
            seen: 0,
            last: None,
            view,
            replay_budget,
            redactor,
            when: None,
            matched: true,
            scratch: String::new(),
            delta: Vec::new(),
        }
    }

    /// The cursor of a named advisor with `when: { paths }` (RO17): every update is still
    /// captured (CA3), and [`FeedCursor::paths_matched`] says whether its read, edit or
    /// write calls touched a matching path (relative to `workspace_root`); one that did
    /// not is held, never eligible (CA4). `None` matches every update. A relative root is
    /// taken from the current directory, as the host's absolute paths are.
    pub fn with_when(mut self, when: Option<PathFilter>, workspace_root: &Path) -> Self {
        let root = std::path::absolute(workspace_root).unwrap_or_else(|_| workspace_root.into());
        self.when = when.map(|filter| WhenPaths {
            filter,
            root: normalize_lexically(&root),
        });
        self
    }

    /// Whether the last update read touched a path the cursor's `when: { paths }` matches
    /// (RO17, CA4); true without `when`.
    pub fn paths_matched(&self) -> bool {
        self.matched
    }

    /// Turns secret redaction (X5) on or off; the patterns are compiled once, when it is
    /// turned on.
    pub fn with_redaction(mut self, on: bool) -> Self {
        self.redactor = match (on, self.redactor.take()) {
            (false, _) => None,
            (true, Some(existing)) => Some(existing),
            (true, None) => build_redactor(),
        };
        self
    }

    /// Whether deltas are redacted.
    pub fn redacts(&self) -> bool {
        self.redactor.is_some()
    }

    /// How many messages have been seen.
    pub fn position(&self) -> usize {
        self.seen
    }

    /// Moves the cursor to the transcript's end without producing a delta (X4: enabling
    /// mid-session or resuming does not replay the old conversation).
    pub fn seed(&mut self, transcript: &Transcript) {
        self.seed_at(transcript, transcript.len());
    }

    /// Moves the cursor to `len` messages (the transcript's length when the advisor was
    /// enabled; the host may have appended more since).
    pub fn seed_at(&mut self, transcript: &Transcript, len: usize) {
        self.seen = len.min(transcript.len());
        self.last = self.seen.checked_sub(1).and_then(|i| transcript.get(i));
    }

    /// Rewinds to the start (R1): the next turn end sends the whole transcript.
    pub fn reset(&mut self) {
        self.seen = 0;
        self.last = None;
    }

    /// Takes a turn end: checks the seen prefix, renders the messages after the cursor
    /// (without the advisor's own messages, X2) and moves the cursor to the end (X1).
    pub fn observe(&mut self, transcript: &Transcript) -> FeedOutcome {
        self.observe_at(&transcript.mark())
    }

    /// [`FeedCursor::observe`] of the transcript as it stood when `at` was taken: messages
    /// the host appended since belong to the next turn end.
    pub fn observe_at(&mut self, at: &TranscriptMark) -> FeedOutcome {
        self.observe_turn(at, None)
    }

    /// [`FeedCursor::observe_at`] with the host's word on whether the turn will continue
    /// (`will_continue`); without it the expanded view derives it from the messages: the
    /// last assistant message made tool calls.
    pub fn observe_turn(
        &mut self,
        at: &TranscriptMark,
        will_continue: Option<bool>,
    ) -> FeedOutcome {
        // The compact and full views read into the cursor's kept list (emptied again
        // below); the expanded view's list goes out with its outcome.
        let kept = if self.view == TranscriptView::Expanded {
            Vec::new()
        } else {
            std::mem::take(&mut self.delta)
        };
        // No reading at all: the content was replaced since the mark was taken.
        let Some(read) = self.read_turn(at, kept) else {
            return FeedOutcome::Superseded;
        };
        // A reading, but the seen prefix is not there any more (X1).
        let Some(read) = read else {
            self.reset();
            return FeedOutcome::Rewrite;
        };
        let Reading {
            delta,
            last,
            matched,
        } = read;
        let from_start = self.seen == 0;
        self.seen = at.len();
        self.last = last;
        self.matched = matched;
        let budget = if from_start { self.replay_budget } else { None };
        if self.view == TranscriptView::Expanded {
            return self.turn_delta(delta, budget, will_continue);
        }
        if budget.is_some() {
            let rendered = render_bounded(self.view, &delta, budget);
            return self.delta_outcome(&rendered);
        }
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        push_delta(self.view, &delta, &mut scratch);
        let outcome = self.delta_outcome(&scratch);
        if scratch.capacity() <= SCRATCH_KEPT {
            self.scratch = scratch;
        }
        let mut delta = delta;
        delta.clear();
        if delta.capacity() <= DELTA_KEPT {
            self.delta = delta;
        }
        outcome
    }

    /// The outcome of a compact or full `rendered` delta: blank, or the heading and the
    /// redacted text (X3, X5).
    fn delta_outcome(&self, rendered: &str) -> FeedOutcome {
        if is_blank(rendered) {
            return FeedOutcome::Blank;
        }
        let text = match &self.redactor {
            Some(redactor) => redactor.redact(rendered),
            None => rendered.into(),
        };
        let mut prompt = String::with_capacity(UPDATE_HEADING.len() + text.len());
        prompt.push_str(UPDATE_HEADING);
        prompt.push_str(&text);
        FeedOutcome::Delta(prompt)
    }

    /// Reads the transcript at `at`: `None` when its content was replaced since the mark
    /// was taken, `Some(None)` when the seen prefix is gone (X1), else the messages after
    /// the cursor without the advisor's own (X2) and whether they touched a path `when`
    /// matches (RO17, CA4).
    /// The delta is collected into `delta` (an empty list, possibly with room).
    fn read_turn(
        &self,
        at: &TranscriptMark,
        mut delta: Vec<Arc<TranscriptMessage>>,
    ) -> Option<Option<Reading>> {
        at.read(|messages| {
            let len = messages.len();
            if len < self.seen || !self.prefix_unchanged(messages) {
                return None;
            }
            let new = &messages[self.seen..];
            let matched = self.when.as_ref().is_none_or(|when| when.touched(new));
            delta.extend(new.iter().filter(|m| !m.is_advisor_message()).cloned());
            Some(Reading {
                delta,
                last: messages.last().cloned(),
                matched,
            })
        })
    }

    /// The expanded view's outcome: the messages (bounded after a reset), or blank when
    /// none of them shows.
    fn turn_delta(
        &self,
        delta: Vec<Arc<TranscriptMessage>>,
        budget: Option<usize>,
        will_continue: Option<bool>,
    ) -> FeedOutcome {
        let wip = will_continue.unwrap_or_else(|| continues(&delta));
        let omitted = match budget {
            Some(budget) => bounded_start(self.view, &delta, budget).map_or(0, |(start, _)| start),
            None => 0,
        };
        let messages = if omitted > 0 {
            delta[omitted..].to_vec()
        } else {
            delta
        };
        if render_delta(self.view, &messages).trim().is_empty() {
            return FeedOutcome::Blank;
        }
        FeedOutcome::Turn(TurnDelta {
            messages,
            wip,
            omitted,
            redactor: self.redactor.clone(),
        })
    }

    fn prefix_unchanged(&self, messages: &[Arc<TranscriptMessage>]) -> bool {
        match (&self.last, self.seen.checked_sub(1)) {
            (Some(last), Some(i)) => match messages.get(i) {
                Some(now) => {
                    Arc::ptr_eq(last, now)
                        || **last == **now
                        || (self.view == TranscriptView::Expanded && is_pruned(last, now))
                }
                None => false,
            },
            _ => true,
        }
    }
}

/// What the cursor read at a turn end: the delta (the messages after the cursor, the
/// advisor's own left out), the last message, and whether the new messages touched a path
/// `when` matches (RO17, CA4).
struct Reading {
    delta: Vec<Arc<TranscriptMessage>>,
    last: Option<Arc<TranscriptMessage>>,
    matched: bool,
}

/// Tools whose path arguments `when: { paths }` looks at (RO17), any case.
const PATH_TOOLS: [&str; 3] = ["read", "edit", "write"];

/// Argument names carrying a path: the renderer's path keys, and `paths` (a list).
const PATH_ARGS: [&str; 4] = ["path", "file_path", "filePath", "paths"];

/// A named advisor's `when: { paths }` (RO17) and the root its globs are relative to.
#[derive(Debug, Clone)]
struct WhenPaths {
    filter: PathFilter,
    /// The workspace root, lexically normalised.
    root: PathBuf,
}

impl WhenPaths {
    /// Whether a read, edit or write call in `messages` names a path the globs match.
    fn touched(&self, messages: &[Arc<TranscriptMessage>]) -> bool {
        messages.iter().any(|message| match message.as_ref() {
            TranscriptMessage::Assistant(assistant) => {
                assistant.content.iter().any(|block| match block {
                    AssistantBlock::ToolCall {
                        name, arguments, ..
                    } if PATH_TOOLS.iter().any(|t| t.eq_ignore_ascii_case(name)) => {
                        let read = name.eq_ignore_ascii_case("read");
                        let arguments = arguments.to_value();
                        let touched = path_arguments(&arguments)
                            .map(|path| if read { without_selector(path) } else { path })
                            .any(|path| self.matches(path));
                        touched
                    }
                    _ => false,
                })
            }
            _ => false,
        })
    }

    /// Whether `path` lies under the root and matches the globs ([`PathFilter::matches_under`]).
    fn matches(&self, path: &str) -> bool {
        self.filter.matches_under(&self.root, path)
    }
}

/// A read call's path without the read tool's line selector (`src/a.ts:10-40`, T3); the
/// path as given when what follows its last `:` is no valid selector.
fn without_selector(path: &str) -> &str {
    split_selector(path).map_or(path, |(bare, _)| bare)
}

/// The non-empty strings of a call's path arguments (a string or a list of strings each).
fn path_arguments(arguments: &Value) -> impl Iterator<Item = &str> {
    let args = arguments.as_object();
    PATH_ARGS
        .iter()
        .filter_map(move |key| args?.get(*key))
        .flat_map(|value| match value {
            Value::Array(items) => items.as_slice(),
            single => std::slice::from_ref(single),
        })
        .filter_map(Value::as_str)
        .filter(|s| !s.is_empty())
}

/// True when `now` is `before`, a tool result already sent, whose content the host pruned
/// in place (oh-my-pi's `[Superseded by a newer read of this file]`): the same call and
/// tool. In the expanded view that is no rewrite: what was sent stays sent, and the cursor
/// rebases onto the pruned copy (SPEC §3 Expanded, R1 amended).
fn is_pruned(before: &TranscriptMessage, now: &TranscriptMessage) -> bool {
    match (before, now) {
        (TranscriptMessage::ToolResult(a), TranscriptMessage::ToolResult(b)) => {
            a.tool_call_id == b.tool_call_id && a.tool_name == b.tool_name
        }
        _ => false,
    }
}

/// The X5 redactor, or none (deltas then go out unredacted) when its patterns fail to
/// compile, which the built-in patterns never do; the failure is logged, not raised.
fn build_redactor() -> Option<Redactor> {
    match Redactor::new() {
        Ok(redactor) => Some(redactor),
        Err(err) => {
            tracing::error!(error = %err, "secret redaction is off: its patterns do not compile");
            None
        }
    }
}

/// Renders `delta`; when `budget` is set and the rendering is longer, keeps the most recent
/// messages that fit and marks the omission (R1's bounded replay).
pub fn render_bounded(
    view: TranscriptView,
    delta: &[Arc<TranscriptMessage>],
    budget: Option<usize>,
) -> String {
    let Some(budget) = budget else {
        return render_delta(view, delta);
    };
    match bounded_start(view, delta, budget) {
        Some((start, text)) => format!("{}{text}", omission_notice(start)),
        None => render_delta(view, delta),
    }
}

/// True when the delta's last assistant message made tool calls: the loop calls the model
/// again (WIP, SPEC §3 Expanded).
fn continues(delta: &[Arc<TranscriptMessage>]) -> bool {
    delta
        .iter()
        .rev()
        .find_map(|m| match m.as_ref() {
            TranscriptMessage::Assistant(a) => Some(a.has_tool_calls()),
            _ => None,
        })
        .unwrap_or(false)
}

/// Where a bounded rendering of `delta` starts and its text, or `None` when the whole
/// rendering fits `budget`: the most recent messages that fit (R1's bounded replay).
fn bounded_start(
    view: TranscriptView,
    delta: &[Arc<TranscriptMessage>],
    budget: usize,
) -> Option<(usize, String)> {
    if delta.len() <= 1 || render_delta(view, delta).len() <= budget {
        return None;
    }
    // Binary search for the earliest start whose rendering fits the budget.
    let (mut lo, mut hi) = (1usize, delta.len() - 1);
    let mut best: Option<(usize, String)> = None;
    while lo <= hi {
        let mid = lo + (hi - lo) / 2;
        let text = render_delta(view, &delta[mid..]);
        if text.len() + 80 <= budget {
            best = Some((mid, text));
            if mid == 0 {
                break;
            }
            hi = mid - 1;
        } else {
            lo = mid + 1;
        }
    }
    Some(match best {
        Some(found) => found,
        None => {
            let last = delta.len() - 1;
            (last, render_delta(view, &delta[last..]))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::advice::{Advisory, Channel, Delivery, Severity};

    fn cursor() -> FeedCursor {
        FeedCursor::new(TranscriptView::Compact, None)
    }

    #[test]
    fn x1_delta_holds_only_messages_after_the_cursor() {
        let t = Transcript::from_messages([TranscriptMessage::user("first question")]);
        let mut c = cursor();
        assert!(matches!(c.observe(&t), FeedOutcome::Delta(d) if d.contains("first question")));
        t.push(TranscriptMessage::user("second question"));
        match c.observe(&t) {
            FeedOutcome::Delta(d) => {
                assert!(d.starts_with("### Session update\n\n"));
                assert!(d.contains("second question"));
                assert!(!d.contains("first question"));
            }
            other => panic!("expected a delta, got {other:?}"),
        }
    }

    #[test]
    fn x3_blank_delta_queues_nothing_but_moves_the_cursor() {
        let t = Transcript::from_messages([TranscriptMessage::user("   ")]);
        let mut c = cursor();
        assert_eq!(c.observe(&t), FeedOutcome::Blank);
        assert_eq!(c.position(), 1);
    }

    #[test]
    fn x2_advisor_messages_are_filtered_by_type_not_text() {
        let t = Transcript::from_messages([TranscriptMessage::user("go")]);
        let mut c = cursor();
        c.observe(&t);
        let advice = Delivery::new(
            Channel::Aside,
            vec![Advisory::new("secret advice text", Some(Severity::Nit))],
            None,
        );
        t.push(advice.to_message());
        t.push(TranscriptMessage::user(
            "I wrote <advisory>literal</advisory> myself",
        ));
        match c.observe(&t) {
            FeedOutcome::Delta(d) => {
                assert!(!d.contains("secret advice text"));
                assert!(d.contains("<advisory>literal</advisory>"));
            }
            other => panic!("expected a delta, got {other:?}"),
        }
    }

    #[test]
    fn x2_ro13_named_advisors_messages_are_filtered_from_every_delta() {
        let t = Transcript::from_messages([TranscriptMessage::user("go")]);
        let mut c = cursor();
        c.observe(&t);
        let advice = Delivery::new(
            Channel::Steer,
            vec![
                Advisory::new("architecture advice", Some(Severity::Concern))
                    .with_advisor("Architecture"),
                Advisory::new("merged advice", None).with_advisor("Architecture, Security"),
            ],
            None,
        );
        t.push(advice.to_message());
        t.push(TranscriptMessage::user("next"));
        match c.observe(&t) {
            FeedOutcome::Delta(d) => {
                assert!(!d.contains("architecture advice"), "{d}");
                assert!(!d.contains("merged advice"), "{d}");
                assert!(!d.contains("advisor=\""), "{d}");
                assert!(d.contains("next"), "{d}");
            }
            other => panic!("expected a delta, got {other:?}"),
        }
    }

    #[test]
    fn x1_shrinking_transcript_is_a_rewrite() {
        let t =
            Transcript::from_messages([TranscriptMessage::user("a"), TranscriptMessage::user("b")]);
        let mut c = cursor();
        c.observe(&t);
        t.replace([TranscriptMessage::user("a")]);
        assert_eq!(c.observe(&t), FeedOutcome::Rewrite);
        assert_eq!(c.position(), 0);
    }

    #[test]
    fn expanded_r1_a_pruned_result_already_sent_is_no_rewrite() {
        let result = |text: &str| {
            serde_json::from_value::<TranscriptMessage>(serde_json::json!({
                "role": "toolResult", "toolCallId": "c1", "toolName": "read", "content": text
            }))
            .unwrap()
        };
        let t = Transcript::from_messages([TranscriptMessage::user("go"), result("old body")]);
        let mut expanded = FeedCursor::new(TranscriptView::Expanded, None);
        let mut compact = cursor();
        assert!(matches!(expanded.observe(&t), FeedOutcome::Turn(_)));
        assert!(matches!(compact.observe(&t), FeedOutcome::Delta(_)));
        t.replace([
            TranscriptMessage::user("go"),
            result("[Superseded by a newer read of this file]"),
            TranscriptMessage::user("next"),
        ]);
        match expanded.observe(&t) {
            FeedOutcome::Turn(turn) => assert_eq!(turn.messages.len(), 1),
            other => panic!("expected the new message only, got {other:?}"),
        }
        assert_eq!(expanded.position(), 3);
        // The compact view keeps its rule: a changed seen message is a rewrite.
        assert_eq!(compact.observe(&t), FeedOutcome::Rewrite);
    }

    #[test]
    fn x1_in_place_rewrite_of_the_seen_prefix_is_a_rewrite() {
        let t =
            Transcript::from_messages([TranscriptMessage::user("a"), TranscriptMessage::user("b")]);
        let mut c = cursor();
        c.observe(&t);
        t.replace([
            TranscriptMessage::user("a"),
            TranscriptMessage::user("changed"),
            TranscriptMessage::user("c"),
        ]);
        assert_eq!(c.observe(&t), FeedOutcome::Rewrite);
    }

    #[test]
    fn x1_equal_content_in_a_new_transcript_is_not_a_rewrite() {
        let t = Transcript::from_messages([TranscriptMessage::user("a")]);
        let mut c = cursor();
        c.observe(&t);
        let copy =
            Transcript::from_messages([TranscriptMessage::user("a"), TranscriptMessage::user("b")]);
        assert!(matches!(c.observe(&copy), FeedOutcome::Delta(d) if d.contains('b')));
    }

    #[test]
    fn x4_seed_skips_the_existing_conversation() {
        let t = Transcript::from_messages([TranscriptMessage::user("old stuff")]);
        let mut c = cursor();
        c.seed(&t);
        t.push(TranscriptMessage::user("new stuff"));
        match c.observe(&t) {
            FeedOutcome::Delta(d) => {
                assert!(d.contains("new stuff"));
                assert!(!d.contains("old stuff"));
            }
            other => panic!("expected a delta, got {other:?}"),
        }
    }

    #[test]
    fn r1_replay_after_reset_is_bounded_and_marked() {
        let t =
            Transcript::from_messages((0..200).map(|i| {
                TranscriptMessage::user(format!("message number {i} {}", "x".repeat(50)))
            }));
        let mut c = FeedCursor::new(TranscriptView::Compact, Some(2_000));
        match c.observe(&t) {
            FeedOutcome::Delta(d) => {
                assert!(d.len() <= 2_000 + UPDATE_HEADING.len(), "{}", d.len());
                assert!(d.contains("earlier messages of the session omitted"));
                assert!(d.contains("message number 199"));
                assert!(!d.contains("message number 0 "));
            }
            other => panic!("expected a delta, got {other:?}"),
        }
        // Later deltas are not bounded.
        t.push(TranscriptMessage::user("y".repeat(3_000)));
        assert!(matches!(c.observe(&t), FeedOutcome::Delta(d) if d.len() > 3_000));
    }

    #[test]
    fn x1_a_turn_is_read_as_it_stood_when_it_ended() {
        let mut c = cursor();
        let t = Transcript::from_messages([TranscriptMessage::user("first turn")]);
        let first = t.mark();
        t.push(TranscriptMessage::user("second turn"));
        let second = t.mark();
        assert!(matches!(c.observe_at(&first), FeedOutcome::Delta(d)
            if d.contains("first turn") && !d.contains("second turn")));
        assert_eq!(c.position(), 1);
        assert!(matches!(c.observe_at(&second), FeedOutcome::Delta(d)
            if d.contains("second turn") && !d.contains("first turn")));
        assert_eq!(c.position(), 2);
    }

    #[test]
    fn x1_r1_a_mark_replaced_before_it_was_read_is_superseded_and_moves_nothing() {
        let mut c = cursor();
        let t = Transcript::from_messages([TranscriptMessage::user("one")]);
        assert!(matches!(c.observe(&t), FeedOutcome::Delta(_)));
        t.push(TranscriptMessage::user("two"));
        let stale = t.mark();
        t.replace([TranscriptMessage::user("summary")]);
        assert_eq!(c.observe_at(&stale), FeedOutcome::Superseded);
        assert_eq!(c.position(), 1, "the cursor did not move");
        // Unannounced, the replacement is still caught by the next turn's prefix check.
        t.push(TranscriptMessage::user("three"));
        assert_eq!(c.observe(&t), FeedOutcome::Rewrite);
    }
}

#[cfg(test)]
mod ro17_tests {
    use super::*;

    use serde_json::json;

    const ROOT: &str = "/ws";

    /// An assistant message making one `tool` call with `arguments`.
    fn call(tool: &str, arguments: Value) -> TranscriptMessage {
        serde_json::from_value(json!({
            "role": "assistant",
            "content": [{"type": "toolCall", "id": "c1", "name": tool, "arguments": arguments}],
            "stopReason": "toolUse"
        }))
        .expect("an assistant message")
    }

    fn read(path: &str) -> TranscriptMessage {
        call("read", json!({ "path": path }))
    }

    fn cursor_for(globs: &[&str], view: TranscriptView, budget: Option<usize>) -> FeedCursor {
        let filter =
            PathFilter::new(globs.iter().map(|g| g.to_string()).collect()).expect("valid globs");
        FeedCursor::new(view, budget).with_when(Some(filter), Path::new(ROOT))
    }

    fn cursor(globs: &[&str]) -> FeedCursor {
        cursor_for(globs, TranscriptView::Compact, None)
    }

    /// Whether the update a cursor with `globs` gets for `message` alone matches its paths
    /// (RO17, CA4: eligible for its cadence).
    fn reviews(globs: &[&str], message: TranscriptMessage) -> bool {
        let t = Transcript::from_messages([message]);
        let mut c = cursor(globs);
        match c.observe(&t) {
            FeedOutcome::Delta(_) | FeedOutcome::Blank => c.paths_matched(),
            other => panic!("expected a delta, got {other:?}"),
        }
    }

    fn delta(outcome: FeedOutcome) -> String {
        match outcome {
            FeedOutcome::Delta(d) => d,
            other => panic!("expected a delta, got {other:?}"),
        }
    }

    #[test]
    fn ca4_ro17_an_update_touching_no_matching_path_is_captured_and_marked_unmatched() {
        let t = Transcript::from_messages([TranscriptMessage::user("fix it"), read("src/a.rs")]);
        let mut c = cursor(&["db/**"]);
        let first = delta(c.observe(&t));
        assert!(!c.paths_matched(), "src/a.rs matches no glob");
        assert!(
            first.contains("src/a.rs"),
            "captured at once (CA3): {first}"
        );
        assert_eq!(
            c.position(),
            2,
            "the cursor moves: the delta is held elsewhere"
        );
        t.push(call(
            "edit",
            json!({"path": "db/001_init.sql", "old": "a", "new": "b"}),
        ));
        let d = delta(c.observe(&t));
        assert!(c.paths_matched());
        assert!(
            d.contains("db/001_init.sql") && !d.contains("fix it"),
            "{d}"
        );
        assert_eq!(c.position(), 3);
    }

    #[test]
    fn ro17_star_stays_in_one_component_double_star_crosses_them() {
        assert!(reviews(&["db/*.sql"], read("db/a.sql")));
        assert!(!reviews(&["db/*.sql"], read("db/migrations/a.sql")));
        assert!(reviews(&["db/**/*.sql"], read("db/migrations/a.sql")));
        assert!(reviews(&["db/**/*.sql"], read("db/a.sql")));
        assert!(!reviews(&["db/?.sql"], read("db/ab.sql")));
        assert!(reviews(&["**/*.sql"], read("deep/er/x.sql")));
    }

    #[test]
    fn ro17_an_absolute_path_under_the_root_is_made_relative() {
        assert!(reviews(&["db/*.sql"], read("/ws/db/a.sql")));
        assert!(reviews(&["db/*.sql"], read("/ws/./src/../db/a.sql")));
        assert!(reviews(&["db/*.sql"], read("./db/a.sql")));
        assert!(!reviews(&["db/*.sql"], read("/elsewhere/db/a.sql")));
        assert!(!reviews(&["db/*.sql"], read("/wsx/db/a.sql")));
    }

    #[test]
    fn ro17_a_path_outside_the_workspace_never_matches() {
        for outside in [
            "/elsewhere/a.sql",
            "../other/a.sql",
            "/ws/../etc/a.sql",
            "../../a.sql",
            "db/../../a.sql",
        ] {
            assert!(!reviews(&["**/*.sql"], read(outside)), "{outside}");
            assert!(!reviews(&["**"], read(outside)), "{outside}");
        }
        assert!(!reviews(&["**"], read("/etc/passwd")));
        assert!(!reviews(&["**"], read("/")));
        assert!(!reviews(&["**"], read("/ws")));
    }

    #[test]
    fn ro17_a_relative_path_that_leaves_and_reenters_the_root_matches() {
        assert!(reviews(&["db/*.sql"], read("../ws/db/a.sql")));
        assert!(reviews(&["db/*.sql"], read("src/../db/a.sql")));
        assert!(!reviews(&["db/*.sql"], read("../wsx/db/a.sql")));
    }

    #[test]
    fn ro17_a_relative_root_is_taken_from_the_current_directory() {
        let filter = PathFilter::new(vec!["db/*.sql".into()]).expect("valid globs");
        let c = FeedCursor::new(TranscriptView::Compact, None)
            .with_when(Some(filter), Path::new("ws/./x/.."));
        let when = c.when.as_ref().expect("a filter");
        let cwd = std::env::current_dir().expect("a current directory");
        let inside = cwd.join("ws/db/a.sql");
        assert!(when.matches("db/a.sql"));
        assert!(when.matches(&inside.display().to_string()));
        assert!(!when.matches(&cwd.join("db/a.sql").display().to_string()));
        assert!(!when.matches("../db/a.sql"));
        assert!(!when.matches("/db/a.sql"));
    }

    #[test]
    fn ro17_a_read_with_a_line_selector_matches_its_path() {
        for selected in [
            "src/parser.ts:10-40",
            "src/parser.ts:10+5",
            "src/parser.ts:7",
        ] {
            assert!(reviews(&["src/**/*.ts"], read(selected)), "{selected}");
        }
        // Not a selector: the path as given.
        assert!(reviews(&["src/*.ts:x"], read("src/a.ts:x")));
        // A bad selector falls back to the raw string.
        assert!(reviews(&["src/*.ts:9-3"], read("src/a.ts:9-3")));
        // Only the read tool takes a selector.
        assert!(!reviews(
            &["src/*.ts"],
            call("edit", json!({"path": "src/a.ts:10-40"}))
        ));
    }

    #[test]
    fn ro17_read_edit_write_path_arguments_count_bash_and_others_do_not() {
        let globs = &["db/**"];
        assert!(reviews(
            globs,
            call("Edit", json!({"file_path": "db/a.sql"}))
        ));
        assert!(reviews(
            globs,
            call("write", json!({"filePath": "db/a.sql"}))
        ));
        assert!(reviews(
            globs,
            call("read", json!({"paths": ["src/x", "db/a.sql"]}))
        ));
        assert!(!reviews(
            globs,
            call("bash", json!({"command": "cat db/a.sql"}))
        ));
        assert!(!reviews(
            globs,
            call("search", json!({"pattern": "x", "path": "db"}))
        ));
        assert!(!reviews(globs, call("read", json!({"offset": "db/a.sql"}))));
        assert!(!reviews(
            globs,
            TranscriptMessage::user("please look at db/a.sql")
        ));
    }
}
