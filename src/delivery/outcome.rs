//! Outcome accounting (D10): how each `advise` call ended, what the advisor model is told,
//! and the counters status shows (C3).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::texts::fill;
use crate::domain::advice::Channel;
use crate::tools::advise::TOOL_RESULTS;

/// Why an advisory was dropped (D10).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum DropReason {
    /// Same note already delivered at the same or a higher severity in this epoch (D8).
    Duplicate,
    /// "lgtm", "looks good", "done" and the other content-free keys (P3).
    ContentFree,
    /// Nothing left once normalised: only punctuation or symbols (P3).
    Empty,
    /// Over the review's note budget (`maxNotesPerUpdate` per update it covered) and ranked
    /// no higher than the notes kept, or displaced by a higher-ranked one (D8).
    OverBudget,
    /// Longer than `maxNoteChars`; refused with a tool error asking for a shorter note.
    TooLong,
    /// Raised by a review of an epoch that a reset ended (R1).
    StaleEpoch,
    /// The advisor was disabled or disposed.
    Disabled,
    /// A held note the next successful review did not raise again (D9).
    Recanted,
    /// Deferred by the `defer` policy and discarded by a reset before its final boundary
    /// (P1, R1).
    Reset,
    /// Held by a review attempt that was thrown away (its context overflowed, or the
    /// review failed); the attempt's conversation is gone, so its holds go too (G5).
    Discarded,
    /// Another advisor raised the same note about the same update while its note was still
    /// undelivered: the note is delivered once, naming both advisors (RO22).
    DuplicateOf,
    /// Its advisor left the roster before the note was delivered (RO21).
    Removed,
    /// Its words overlap those of a note its advisor delivered in the last 20 primary turns
    /// by 90% or more, at the same or a higher severity (SP3: a reworded repeat).
    NearDuplicate,
    /// Fewer than 8 characters once trimmed (SP3).
    TooShort,
}

impl DropReason {
    /// Every reason, in the order status lists them.
    pub const ALL: [DropReason; 14] = [
        DropReason::Duplicate,
        DropReason::ContentFree,
        DropReason::Empty,
        DropReason::OverBudget,
        DropReason::TooLong,
        DropReason::StaleEpoch,
        DropReason::Disabled,
        DropReason::Recanted,
        DropReason::Discarded,
        DropReason::Reset,
        DropReason::DuplicateOf,
        DropReason::Removed,
        DropReason::NearDuplicate,
        DropReason::TooShort,
    ];

    /// The camelCase name used in status output.
    pub fn as_str(self) -> &'static str {
        match self {
            DropReason::Duplicate => "duplicate",
            DropReason::ContentFree => "contentFree",
            DropReason::Empty => "empty",
            DropReason::OverBudget => "overBudget",
            DropReason::TooLong => "tooLong",
            DropReason::StaleEpoch => "staleEpoch",
            DropReason::Disabled => "disabled",
            DropReason::Recanted => "recanted",
            DropReason::Discarded => "discarded",
            DropReason::Reset => "reset",
            DropReason::DuplicateOf => "duplicateOf",
            DropReason::Removed => "removed",
            DropReason::NearDuplicate => "nearDuplicate",
            DropReason::TooShort => "tooShort",
        }
    }
}

/// How the `advise` tool call was answered, and what the advisor model is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RaiseOutcome {
    /// Accepted for delivery.
    Recorded,
    /// Held until a later review raises it again (`reconfirm`, D4).
    Held,
    /// Raised again while held: the held note is reconfirmed (D9).
    Reconfirmed,
    /// Dropped, with the reason.
    Dropped(DropReason),
    /// Routed at once under `defer` (P1): the advisor is told it was delivered.
    Delivered,
    /// Kept back under `defer` until the end of the primary's turn (P1): the advisor is
    /// told not to raise it again.
    Deferred,
    /// Dropped under `defer`, with the reason; the advisor is told in P1's words.
    Declined(DropReason),
    /// Refused for its length: longer than `max_chars` characters; counted as dropped
    /// `tooLong`, and answered with a tool error asking for a shorter note.
    TooLong {
        /// The cap (`advisor.maxNoteChars`).
        max_chars: usize,
    },
}

impl RaiseOutcome {
    /// The tool result text the advisor model reads (D8).
    pub fn tool_text(&self, max_notes: usize) -> String {
        let (key, max_chars) = match self {
            RaiseOutcome::Recorded | RaiseOutcome::Reconfirmed => ("recorded", 0),
            RaiseOutcome::Held => ("held", 0),
            RaiseOutcome::Dropped(reason) => (reason.as_str(), 0),
            RaiseOutcome::Delivered => ("delivered", 0),
            RaiseOutcome::Deferred => ("deferred", 0),
            RaiseOutcome::Declined(reason) => (declined_key(*reason), 0),
            RaiseOutcome::TooLong { max_chars } => (DropReason::TooLong.as_str(), *max_chars),
        };
        fill(
            TOOL_RESULTS.get(key),
            &[
                ("max_notes", &max_notes.to_string()),
                ("max_chars", &max_chars.to_string()),
            ],
        )
    }

    /// Whether the model should see the answer as a tool error: a refused note it is asked
    /// to shorten (D10 `tooLong`). Every other outcome is an ordinary result.
    pub fn is_error(&self) -> bool {
        matches!(self, RaiseOutcome::TooLong { .. })
    }
}

/// The tool answer of a note dropped under `defer` (P1): its own words for an empty note,
/// nothing actionable, already raised and a spent budget; the usual answer otherwise.
fn declined_key(reason: DropReason) -> &'static str {
    match reason {
        DropReason::Empty => "declinedEmpty",
        DropReason::ContentFree => "declinedContentFree",
        DropReason::Duplicate => "declinedDuplicate",
        DropReason::OverBudget => "declinedOverBudget",
        other => other.as_str(),
    }
}

/// Outcome counters (D10), shown in status (C3). `held` and `pending` count notes now
/// waiting; the others only grow.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryCounts {
    /// Notes delivered as asides (batched nits).
    pub aside: u64,
    /// Notes delivered as steering cards.
    pub steer: u64,
    /// Notes delivered as wakes.
    pub wake: u64,
    /// Notes delivered as visible cards.
    pub card: u64,
    /// Notes held now, waiting for reconfirmation (reconfirm policy, D9).
    pub held: u64,
    /// `advise` calls that raised a held note again and were merged into it (D9).
    #[serde(default)]
    pub reconfirmed: u64,
    /// Notes dropped, by reason.
    pub dropped: HashMap<DropReason, u64>,
    /// Notes accepted but not yet taken by the host (queued nits, outbox steers).
    pub pending: u64,
    /// Notes whose severity was lowered to their advisor's `maxSeverity` (RO16); each is
    /// also counted where it ended, so this is not part of [`DeliveryCounts::raised`].
    #[serde(default)]
    pub capped: u64,
    /// Notes that would have woken an idle primary past the two advisor-started wakes
    /// allowed per user prompt, delivered as cards instead (SP3); each is also counted as a
    /// card, so this is not part of [`DeliveryCounts::raised`].
    #[serde(default)]
    pub wakes_refused: u64,
}

impl DeliveryCounts {
    /// Notes delivered on any channel.
    pub fn delivered(&self) -> u64 {
        self.aside + self.steer + self.wake + self.card
    }

    /// Notes dropped for any reason.
    pub fn dropped_total(&self) -> u64 {
        self.dropped.values().sum()
    }

    /// The drops by reason, e.g. `duplicate 2, tooLong 1`, in [`DropReason::ALL`] order;
    /// empty when nothing was dropped.
    pub fn dropped_summary(&self) -> String {
        DropReason::ALL
            .iter()
            .filter_map(|r| {
                let n = self.dropped.get(r).copied().unwrap_or(0);
                (n > 0).then(|| format!("{} {n}", r.as_str()))
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Every advisory raised so far: delivered + held + reconfirmed + dropped + pending.
    pub fn raised(&self) -> u64 {
        self.delivered() + self.held + self.reconfirmed + self.dropped_total() + self.pending
    }

    /// Counts `n` notes delivered on `channel`.
    pub(crate) fn deliver(&mut self, channel: Channel, n: u64) {
        match channel {
            Channel::Aside => self.aside += n,
            Channel::Steer => self.steer += n,
            Channel::Wake => self.wake += n,
            Channel::Card => self.card += n,
        }
    }

    /// Counts `n` notes dropped for `reason`.
    pub(crate) fn drop(&mut self, reason: DropReason, n: u64) {
        if n > 0 {
            *self.dropped.entry(reason).or_default() += n;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn d8_every_outcome_has_its_tool_text() {
        for reason in DropReason::ALL {
            let text = RaiseOutcome::Dropped(reason).tool_text(3);
            assert_ne!(text, reason.as_str(), "{reason:?} has no line in its file");
            assert!(!text.contains('{'), "{text}");
        }
        assert_eq!(RaiseOutcome::Recorded.tool_text(2), "Recorded.");
        assert_eq!(RaiseOutcome::Reconfirmed.tool_text(2), "Recorded.");
        assert_eq!(
            RaiseOutcome::Held.tool_text(2),
            "Held pending reconfirmation."
        );
        assert_eq!(
            RaiseOutcome::Dropped(DropReason::OverBudget).tool_text(3),
            "Advice ignored: at most 3 notes per update. Finish the review."
        );
    }

    #[test]
    fn p1_defer_answers_say_what_became_of_the_note() {
        assert_eq!(RaiseOutcome::Delivered.tool_text(4), "Delivered.");
        let deferred = RaiseOutcome::Deferred.tool_text(4);
        assert!(deferred.contains("end of the turn"), "{deferred}");
        assert!(deferred.contains("Do not raise it again"), "{deferred}");
        for (reason, words) in [
            (DropReason::Empty, "empty"),
            (DropReason::ContentFree, "nothing the agent can act on"),
            (DropReason::Duplicate, "already raised"),
            (DropReason::OverBudget, "budget"),
            (DropReason::StaleEpoch, "reset"),
        ] {
            let text = RaiseOutcome::Declined(reason).tool_text(4);
            assert!(text.contains(words), "{reason:?}: {text}");
            assert!(!text.contains('{'), "{text}");
        }
    }

    #[test]
    fn d10_too_long_is_a_tool_error_naming_the_cap_and_asking_for_a_shorter_note() {
        let outcome = RaiseOutcome::TooLong { max_chars: 2000 };
        assert!(outcome.is_error());
        let text = outcome.tool_text(4);
        assert!(text.contains("2000 characters"), "{text}");
        assert!(text.contains("shorter note"), "{text}");
        assert!(!RaiseOutcome::Dropped(DropReason::OverBudget).is_error());
        assert!(!RaiseOutcome::Recorded.is_error());
    }

    #[test]
    fn c3_dropped_summary_lists_the_reasons_in_a_fixed_order() {
        let mut c = DeliveryCounts::default();
        assert_eq!(c.dropped_summary(), "");
        c.drop(DropReason::TooLong, 1);
        c.drop(DropReason::Duplicate, 2);
        c.drop(DropReason::Recanted, 0);
        assert_eq!(c.dropped_summary(), "duplicate 2, tooLong 1");
    }
}
