//! Outcome accounting (D10): how each `advise` call ended, what the advisor model is told,
//! and the counters status shows (C3).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::texts::{fill, TOOL_RESULTS};
use crate::domain::advice::Channel;

/// Why an advisory was dropped (D10).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum DropReason {
    /// Same note already delivered at the same or a higher severity in this epoch (D8).
    Duplicate,
    /// "lgtm", "looks good", "all clear", "done" and the like (D8).
    ContentFree,
    /// More than `maxNotesPerUpdate` notes in one review (D8).
    OverBudget,
    /// Raised by a review of an epoch that a reset ended (R1).
    StaleEpoch,
    /// The advisor was disabled or disposed.
    Disabled,
    /// A held note the next successful review did not raise again (D9).
    Recanted,
    /// Held by a review attempt that was thrown away (its context overflowed, or the
    /// review failed); the attempt's conversation is gone, so its holds go too (G5).
    Discarded,
}

impl DropReason {
    /// The camelCase name used in status output.
    pub fn as_str(self) -> &'static str {
        match self {
            DropReason::Duplicate => "duplicate",
            DropReason::ContentFree => "contentFree",
            DropReason::OverBudget => "overBudget",
            DropReason::StaleEpoch => "staleEpoch",
            DropReason::Disabled => "disabled",
            DropReason::Recanted => "recanted",
            DropReason::Discarded => "discarded",
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
}

impl RaiseOutcome {
    /// The tool result text the advisor model reads (D8).
    pub fn tool_text(&self, max_notes: usize) -> String {
        let key = match self {
            RaiseOutcome::Recorded | RaiseOutcome::Reconfirmed => "recorded",
            RaiseOutcome::Held => "held",
            RaiseOutcome::Dropped(reason) => reason.as_str(),
        };
        fill(
            TOOL_RESULTS.get(key),
            &[("max_notes", &max_notes.to_string())],
        )
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
        let reasons = [
            DropReason::Duplicate,
            DropReason::ContentFree,
            DropReason::OverBudget,
            DropReason::StaleEpoch,
            DropReason::Disabled,
            DropReason::Recanted,
            DropReason::Discarded,
        ];
        for reason in reasons {
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
}
