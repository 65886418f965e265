//! Drives a recorded session through the host protocol, as a live host would (SPEC L2, L3).
//!
//! [`SessionDriver`] walks the branch of a [`SessionBranch`] and yields the host events in
//! order, updating its [`Transcript`] before each one:
//!
//! - a user message ends the run in progress ([`HostStep::RunEnded`], transcript without the
//!   new message) and starts a new one ([`HostStep::RunStarted`], transcript with it);
//! - an assistant message whose stop reason is neither `aborted` nor `error` yields
//!   [`HostStep::TurnEnded`] once the tool results that directly follow it are in the
//!   transcript (anything else — another assistant message, a user message, an execution, a
//!   compaction, the end of the file — closes the turn); aborted or failed responses stay in
//!   the transcript but yield no turn end, as a live host skips them;
//! - an assistant message with no run in progress (a session that starts without a user
//!   prompt) starts one first;
//! - a compaction closes any pending turn, then replaces the transcript with the summary (as
//!   [`TranscriptMessage::CompactionSummary`]) plus the kept messages, and yields [`HostStep::Compacted`]
//!   (the host sends `Rewrite { kind: Compaction }`);
//! - an oh-my-pi reset boundary (`/clear`) closes any pending turn, then empties the
//!   transcript and yields [`HostStep::Compacted`] too: for the advisor it is the same
//!   rewrite (R1), a transcript replaced by a shorter one (here, by nothing);
//! - the end of the file closes the pending turn and yields [`HostStep::RunEnded`].

use std::sync::Arc;

use crate::domain::transcript::{CompactionSummaryMessage, Transcript, TranscriptMessage};

use super::branch::{BranchEntry, SessionBranch, SessionHeader};
use super::diagnostics::Diagnostics;

/// One host event of a replayed session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostStep {
    /// The primary started a run (`RunState { running: true }`).
    RunStarted,
    /// A primary turn finished (`TurnEnd`); the transcript holds the turn's assistant
    /// message and the tool results that directly follow it, and nothing later.
    TurnEnded {
        /// 1-based count of the turn ends so far.
        turn: usize,
        /// True when the assistant message had no tool calls (the run's last turn unless the
        /// user prompts again).
        terminal: bool,
    },
    /// The host replaced its transcript by a shorter one (`Rewrite`, R1): a compaction
    /// (summary plus kept messages), or an oh-my-pi reset boundary (empty).
    Compacted,
    /// The primary went idle (`RunState { running: false }`).
    RunEnded,
}

/// An entry of the branch as the driver keeps it: messages shared, so that re-emitting kept
/// messages after a compaction copies handles, not messages.
#[derive(Debug)]
enum Item {
    Message(Arc<TranscriptMessage>),
    Compaction {
        summary: Arc<TranscriptMessage>,
        first_kept: usize,
    },
    ResetBoundary,
}

/// Replays a [`SessionBranch`] as a sequence of [`HostStep`]s over a shared [`Transcript`].
#[derive(Debug)]
pub struct SessionDriver {
    header: SessionHeader,
    diagnostics: Diagnostics,
    items: Vec<Item>,
    position: usize,
    transcript: Transcript,
    run_active: bool,
    /// `Some(terminal)` while an assistant turn waits for its tool results.
    pending_turn: Option<bool>,
    turns: usize,
}

impl SessionDriver {
    /// A driver at the start of `branch`, with an empty transcript.
    pub fn new(branch: SessionBranch) -> Self {
        let items = branch
            .entries
            .into_iter()
            .map(|entry| match entry {
                BranchEntry::Message(m) => Item::Message(m),
                BranchEntry::Compaction {
                    summary,
                    first_kept,
                    ..
                } => Item::Compaction {
                    summary: Arc::new(TranscriptMessage::CompactionSummary(
                        CompactionSummaryMessage { summary },
                    )),
                    first_kept,
                },
                BranchEntry::ResetBoundary => Item::ResetBoundary,
            })
            .collect();
        Self {
            header: branch.header,
            diagnostics: branch.diagnostics,
            items,
            position: 0,
            transcript: Transcript::new(),
            run_active: false,
            pending_turn: None,
            turns: 0,
        }
    }

    /// A handle on the transcript the driver updates (a shared handle: hand it to the
    /// runtime in each `TurnEnd`).
    pub fn transcript(&self) -> Transcript {
        self.transcript.clone()
    }

    /// The session header.
    pub fn header(&self) -> &SessionHeader {
        &self.header
    }

    /// What the reader skipped.
    pub fn diagnostics(&self) -> &Diagnostics {
        &self.diagnostics
    }

    /// Number of [`HostStep::TurnEnded`] yielded so far.
    pub fn turns(&self) -> usize {
        self.turns
    }

    /// Number of branch entries (messages and compactions) to replay.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// True when the branch holds nothing to replay.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Number of branch entries consumed so far (for progress reporting).
    pub fn position(&self) -> usize {
        self.position
    }

    /// After a non-terminal [`HostStep::TurnEnded`]: true when no completed assistant reply
    /// follows before the next user message, compaction or reset boundary (or the end of
    /// the file): the run was cut by an abort while its tools ran, and a live host makes no
    /// review of that turn (SPEC §3 Expanded, "Turns cut by an abort").
    pub fn turn_was_cut(&self) -> bool {
        for item in self.items.iter().skip(self.position) {
            match item {
                Item::Message(m) => match m.as_ref() {
                    TranscriptMessage::Assistant(a) if !a.is_aborted_or_error() => return false,
                    TranscriptMessage::User(_) => return true,
                    _ => {}
                },
                Item::Compaction { .. } | Item::ResetBoundary => return true,
            }
        }
        true
    }

    fn end_turn(&mut self, terminal: bool) -> HostStep {
        self.turns += 1;
        HostStep::TurnEnded {
            turn: self.turns,
            terminal,
        }
    }

    /// Replaces the transcript with the compaction summary and the kept messages.
    fn compact(&mut self, summary: Arc<TranscriptMessage>, first_kept: usize) {
        let end = self.position;
        let kept = self.items.get(first_kept..end).unwrap_or_default();
        let mut messages = Vec::with_capacity(kept.len() + 1);
        messages.push(summary);
        messages.extend(kept.iter().filter_map(|item| match item {
            Item::Message(m) => Some(Arc::clone(m)),
            Item::Compaction { .. } | Item::ResetBoundary => None,
        }));
        // The host awaits each step before asking for the next one, so the runtime never
        // reads the transcript between these two calls.
        self.transcript.replace(std::iter::empty());
        for message in messages {
            self.transcript.push_shared(message);
        }
    }
}

impl Iterator for SessionDriver {
    type Item = HostStep;

    fn next(&mut self) -> Option<HostStep> {
        loop {
            let Some(item) = self.items.get(self.position) else {
                if let Some(terminal) = self.pending_turn.take() {
                    return Some(self.end_turn(terminal));
                }
                if self.run_active {
                    self.run_active = false;
                    return Some(HostStep::RunEnded);
                }
                return None;
            };
            let message = match item {
                Item::Message(m) => Arc::clone(m),
                Item::Compaction {
                    summary,
                    first_kept,
                } => {
                    let (summary, first_kept) = (Arc::clone(summary), *first_kept);
                    if let Some(terminal) = self.pending_turn.take() {
                        return Some(self.end_turn(terminal));
                    }
                    self.compact(summary, first_kept);
                    self.position += 1;
                    return Some(HostStep::Compacted);
                }
                Item::ResetBoundary => {
                    if let Some(terminal) = self.pending_turn.take() {
                        return Some(self.end_turn(terminal));
                    }
                    self.transcript.replace(std::iter::empty());
                    self.position += 1;
                    return Some(HostStep::Compacted);
                }
            };
            if matches!(*message, TranscriptMessage::ToolResult(_)) {
                self.transcript.push_shared(message);
                self.position += 1;
                continue;
            }
            if let Some(terminal) = self.pending_turn.take() {
                return Some(self.end_turn(terminal));
            }
            match &*message {
                TranscriptMessage::User(_) => {
                    if self.run_active {
                        self.run_active = false;
                        return Some(HostStep::RunEnded);
                    }
                    self.transcript.push_shared(message);
                    self.position += 1;
                    self.run_active = true;
                    return Some(HostStep::RunStarted);
                }
                TranscriptMessage::Assistant(assistant) => {
                    if !self.run_active {
                        self.run_active = true;
                        return Some(HostStep::RunStarted);
                    }
                    if !assistant.is_aborted_or_error() {
                        self.pending_turn = Some(!assistant.has_tool_calls());
                    }
                    self.transcript.push_shared(message);
                    self.position += 1;
                }
                _ => {
                    self.transcript.push_shared(message);
                    self.position += 1;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn m(value: serde_json::Value) -> BranchEntry {
        BranchEntry::Message(Arc::new(serde_json::from_value(value).expect("a message")))
    }

    fn user(text: &str) -> BranchEntry {
        m(json!({"role":"user","content":text}))
    }

    fn assistant(stop: &str, calls: &[&str]) -> BranchEntry {
        let content: Vec<_> = calls
            .iter()
            .map(|id| json!({"type":"toolCall","id":id,"name":"read","arguments":{"path":"a"}}))
            .chain(std::iter::once(json!({"type":"text","text":stop})))
            .collect();
        m(json!({"role":"assistant","content":content,"stopReason":stop}))
    }

    fn result(id: &str) -> BranchEntry {
        m(json!({"role":"toolResult","toolCallId":id,"toolName":"read","content":"x"}))
    }

    fn compaction(first_kept: usize) -> BranchEntry {
        BranchEntry::Compaction {
            summary: "earlier work".into(),
            first_kept,
            tokens_before: None,
        }
    }

    fn driver(entries: Vec<BranchEntry>) -> SessionDriver {
        SessionDriver::new(SessionBranch {
            entries,
            ..SessionBranch::default()
        })
    }

    /// Each step with the transcript's roles at that moment.
    fn trace(entries: Vec<BranchEntry>) -> Vec<(HostStep, Vec<String>)> {
        let d = driver(entries);
        let t = d.transcript();
        let mut out = Vec::new();
        for step in d {
            let roles = t.snapshot().iter().map(|m| m.role().to_string()).collect();
            out.push((step, roles));
        }
        out
    }

    /// Each step with the transcript's length at that moment.
    fn lengths(entries: Vec<BranchEntry>) -> Vec<(HostStep, usize)> {
        trace(entries).iter().map(|(s, r)| (*s, r.len())).collect()
    }

    fn turn(turn: usize, terminal: bool) -> HostStep {
        HostStep::TurnEnded { turn, terminal }
    }

    #[test]
    fn l2_turn_end_comes_after_the_directly_following_tool_results() {
        let steps = trace(vec![
            user("go"),
            assistant("toolUse", &["c1", "c2"]),
            result("c1"),
            result("c2"),
            assistant("stop", &[]),
        ]);
        let expected: Vec<(HostStep, Vec<&str>)> = vec![
            (HostStep::RunStarted, vec!["user"]),
            (
                turn(1, false),
                vec!["user", "assistant", "toolResult", "toolResult"],
            ),
            (
                turn(2, true),
                vec!["user", "assistant", "toolResult", "toolResult", "assistant"],
            ),
            (
                HostStep::RunEnded,
                vec!["user", "assistant", "toolResult", "toolResult", "assistant"],
            ),
        ];
        let got: Vec<(HostStep, Vec<&str>)> = steps
            .iter()
            .map(|(s, r)| (*s, r.iter().map(String::as_str).collect()))
            .collect();
        assert_eq!(got, expected);
    }

    #[test]
    fn l2_aborted_and_error_responses_yield_no_turn_end_but_stay_in_the_transcript() {
        let steps = trace(vec![
            user("go"),
            assistant("aborted", &["c1"]),
            result("c1"),
            assistant("error", &[]),
            assistant("stop", &[]),
        ]);
        let only: Vec<HostStep> = steps.iter().map(|(s, _)| *s).collect();
        assert_eq!(
            only,
            [HostStep::RunStarted, turn(1, true), HostStep::RunEnded]
        );
        assert_eq!(steps[1].1.len(), 5);
    }

    #[test]
    fn l2_each_user_message_ends_the_run_in_progress_and_starts_another() {
        let got = lengths(vec![
            user("one"),
            assistant("stop", &[]),
            user("two"),
            user("three"),
            assistant("stop", &[]),
        ]);
        assert_eq!(
            got,
            [
                (HostStep::RunStarted, 1),
                (turn(1, true), 2),
                (HostStep::RunEnded, 2),
                (HostStep::RunStarted, 3),
                (HostStep::RunEnded, 3),
                (HostStep::RunStarted, 4),
                (turn(2, true), 5),
                (HostStep::RunEnded, 5),
            ]
        );
    }

    #[test]
    fn l2_an_assistant_message_without_a_prompt_starts_a_run() {
        let got = lengths(vec![
            m(json!({"role":"custom","customType":"kickoff","content":"go","display":true})),
            assistant("stop", &[]),
        ]);
        assert_eq!(
            got,
            [
                (HostStep::RunStarted, 1),
                (turn(1, true), 2),
                (HostStep::RunEnded, 2)
            ]
        );
    }

    #[test]
    fn l3_compaction_replaces_the_transcript_with_summary_and_kept_messages() {
        let mut d = driver(vec![
            user("old"),                  // 0
            assistant("stop", &[]),       // 1
            user("recent"),               // 2
            assistant("toolUse", &["c"]), // 3
            result("c"),                  // 4
            compaction(2),                // 5
            assistant("stop", &[]),       // 6
        ]);
        let t = d.transcript();
        let steps: Vec<HostStep> = d
            .by_ref()
            .take_while(|s| *s != HostStep::Compacted)
            .collect();
        assert_eq!(
            steps,
            [
                HostStep::RunStarted,
                turn(1, true),
                HostStep::RunEnded,
                HostStep::RunStarted,
                turn(2, false)
            ]
        );
        let roles: Vec<String> = t.snapshot().iter().map(|m| m.role().to_string()).collect();
        assert_eq!(
            roles,
            ["compactionSummary", "user", "assistant", "toolResult"]
        );
        match &*t.get(0).expect("summary") {
            TranscriptMessage::CompactionSummary(s) => assert_eq!(s.summary, "earlier work"),
            other => panic!("not a summary: {other:?}"),
        }
        assert_eq!(d.collect::<Vec<_>>(), [turn(3, true), HostStep::RunEnded]);
        assert_eq!(t.len(), 5);
    }

    #[test]
    fn l3_compaction_keeping_nothing_leaves_only_the_summary() {
        let mut d = driver(vec![user("a"), compaction(1), user("b")]);
        let t = d.transcript();
        assert_eq!(d.next(), Some(HostStep::RunStarted));
        assert_eq!(d.next(), Some(HostStep::Compacted));
        assert_eq!(t.len(), 1);
        assert_eq!(d.turns(), 0);
        assert_eq!(d.position(), 2);
        assert_eq!(d.len(), 3);
    }

    #[test]
    fn l2_empty_branch_yields_nothing() {
        let mut d = driver(Vec::new());
        assert!(d.is_empty());
        assert_eq!(d.next(), None);
    }

    #[test]
    fn r1_reset_boundary_closes_the_turn_and_empties_the_transcript() {
        let got = lengths(vec![
            user("old"),                  // 0
            assistant("toolUse", &["c"]), // 1
            result("c"),                  // 2
            BranchEntry::ResetBoundary,   // 3
            user("new"),                  // 4
            assistant("stop", &[]),       // 5
        ]);
        assert_eq!(
            got,
            [
                (HostStep::RunStarted, 1),
                (turn(1, false), 3),
                (HostStep::Compacted, 0),
                (HostStep::RunEnded, 0),
                (HostStep::RunStarted, 1),
                (turn(2, true), 2),
                (HostStep::RunEnded, 2),
            ]
        );
    }

    #[test]
    fn r1_a_compaction_after_a_reset_keeps_no_reset_entry() {
        let mut d = driver(vec![
            user("a"),                  // 0
            BranchEntry::ResetBoundary, // 1
            user("b"),                  // 2
            compaction(0),              // 3
        ]);
        let t = d.transcript();
        let steps: Vec<HostStep> = d.by_ref().collect();
        assert_eq!(
            steps.iter().filter(|s| **s == HostStep::Compacted).count(),
            2
        );
        let roles: Vec<String> = t.snapshot().iter().map(|m| m.role().to_string()).collect();
        assert_eq!(roles, ["compactionSummary", "user", "user"]);
    }
}
