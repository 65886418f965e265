//! The final-boundary window and its merged delivery (CA13–CA17): the notes routed while a
//! final boundary is processed wait here, and go out when the window closes as one message —
//! newest covered turn first, then blocker → concern → nit, then routing order — with the
//! guidance text when it is due (CA15) and at most one continuation (CA16). Also the
//! continuation mark's identity of a user prompt (CA17). Pure data and decisions; the
//! router keeps the state and counts.

use std::sync::Arc;

use super::advisors::Origin;
use crate::domain::advice::{Advisory, Severity};
use crate::domain::transcript::TranscriptMessage;
use crate::settings::ReviewMode;

/// The guidance text that opens a merged delivery when it is due (CA15).
pub(crate) const GUIDANCE: &str =
    include_str!("../../config/prompts/delivery-boundary-guidance.txt").trim_ascii_end();

/// After the first merged delivery of a conversation, the guidance text comes again only
/// when this many turns have passed since it was last shown (CA15).
pub const GUIDANCE_EVERY: u64 = 50;

/// One note buffered in an open window.
#[derive(Debug, Clone)]
pub(super) struct WindowNote {
    /// The note as routed.
    pub(super) advisory: Advisory,
    /// The dedupe key (P3).
    pub(super) key: String,
    /// Its advisor and the update its review covered: the covered turn (CA14).
    pub(super) origin: Origin,
}

/// The window of one final boundary (CA13): open from the start of the boundary's
/// processing until its catch-up waits end.
#[derive(Debug, Clone, Default)]
pub(super) struct BoundaryWindow {
    /// Which window it is: a close names the window it means, so a late close of an
    /// earlier window never closes a newer one.
    pub(super) id: u64,
    /// The notes routed while it is open, in routing order.
    pub(super) notes: Vec<WindowNote>,
}

/// Orders the notes of a closing window as CA14 says and sets each note's `turns_ago`:
/// `turns` is the router's count of turn ends now, and a note's covered turn is the count
/// when its review started (its [`Origin::update`]). Newest covered turn first; within a
/// turn blocker → concern → nit; then routing order (the sort is stable).
pub(super) fn merge_order(notes: &mut [WindowNote], turns: u64) {
    for note in notes.iter_mut() {
        note.advisory.turns_ago = Some(turns.saturating_sub(note.origin.update.turns));
    }
    notes.sort_by_key(|n| {
        (
            n.advisory.turns_ago,
            std::cmp::Reverse(n.advisory.effective_severity()),
        )
    });
}

/// Whether the guidance text opens the merged delivery at turn `t` (CA15): on the first of
/// the conversation (`last_shown` `None`), then when `t` is at least [`GUIDANCE_EVERY`]
/// turns past the turn it was last shown at.
pub(super) fn guidance_due(last_shown: Option<u64>, t: u64) -> bool {
    last_shown.is_none_or(|at| t.saturating_sub(at) >= GUIDANCE_EVERY)
}

/// Whether a note asks for a continuation on its own (CA16, CA18): a blocker always; a
/// concern when its advisor reviews at `agent-end` and the immune window (CA19) is not
/// open; a turn-mode concern or a nit never. The session-wide gates (D6's latch, P3's
/// replay) are the caller's.
pub(super) fn qualifies(severity: Severity, mode: ReviewMode, immune: bool) -> bool {
    match severity {
        Severity::Blocker => true,
        Severity::Concern => mode == ReviewMode::AgentEnd && !immune,
        Severity::Nit => false,
    }
}

/// The transcript's last genuine user prompt (CA17): its last user message, or none. Two
/// marks are the same prompt when they hold the same message (the same allocation, or an
/// equal message — a host that rebuilt its transcript after a compaction hands over new
/// copies of the same prompt).
#[derive(Debug, Clone, Default)]
pub struct LastPrompt(Option<Arc<TranscriptMessage>>);

impl LastPrompt {
    /// The last user message of `messages`, scanned from the end.
    pub fn of(messages: &[Arc<TranscriptMessage>]) -> Self {
        Self(
            messages
                .iter()
                .rev()
                .find(|m| matches!(***m, TranscriptMessage::User(_)))
                .cloned(),
        )
    }
}

impl PartialEq for LastPrompt {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b) || a == b,
            (None, None) => true,
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(text: &str, sev: Severity, covered: u64) -> WindowNote {
        WindowNote {
            advisory: Advisory::new(text, Some(sev)),
            key: text.into(),
            origin: Origin {
                update: crate::delivery::advisors::UpdateId {
                    epoch: 0,
                    turns: covered,
                },
                ..Origin::default()
            },
        }
    }

    #[test]
    fn ca14_newest_covered_turn_first_then_severity_then_routing_order() {
        let mut notes = vec![
            note("old blocker", Severity::Blocker, 2),
            note("nit", Severity::Nit, 4),
            note("concern a", Severity::Concern, 4),
            note("blocker", Severity::Blocker, 4),
            note("concern b", Severity::Concern, 4),
        ];
        merge_order(&mut notes, 4);
        let order: Vec<_> = notes
            .iter()
            .map(|n| (n.advisory.note.as_str(), n.advisory.turns_ago))
            .collect();
        assert_eq!(
            order,
            [
                ("blocker", Some(0)),
                ("concern a", Some(0)),
                ("concern b", Some(0)),
                ("nit", Some(0)),
                ("old blocker", Some(2)),
            ]
        );
    }

    #[test]
    fn ca15_guidance_first_then_every_fifty_turns() {
        assert!(guidance_due(None, 6));
        assert!(!guidance_due(Some(6), 30));
        assert!(guidance_due(Some(6), 56));
        assert!(!guidance_due(Some(56), 57));
    }

    #[test]
    fn ca16_a_blocker_or_an_agent_end_concern_outside_immunity_qualifies() {
        use ReviewMode::{AgentEnd, Turn};
        assert!(qualifies(Severity::Blocker, Turn, true));
        assert!(qualifies(Severity::Concern, AgentEnd, false));
        assert!(!qualifies(Severity::Concern, AgentEnd, true));
        assert!(!qualifies(Severity::Concern, Turn, false));
        assert!(!qualifies(Severity::Nit, AgentEnd, false));
    }

    #[test]
    fn ca17_the_last_prompt_is_the_last_user_message_compared_by_content() {
        let prompt = |t: &str| Arc::new(TranscriptMessage::user(t));
        let reply = Arc::new(TranscriptMessage::test_assistant("ok", false, Some("stop")));
        let a = LastPrompt::of(&[prompt("fix it"), reply.clone()]);
        let same = LastPrompt::of(&[prompt("fix it"), reply.clone(), reply.clone()]);
        let other = LastPrompt::of(&[prompt("fix it"), reply.clone(), prompt("now tests")]);
        assert_eq!(a, same);
        assert_ne!(a, other);
        assert_eq!(LastPrompt::of(&[reply]), LastPrompt::default());
    }
}
