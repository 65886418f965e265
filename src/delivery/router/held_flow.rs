//! D4, D5, D9: the notes held for reconfirmation — raised again, listed in a review's preamble,
//! recanted, rolled back with a discarded attempt, released by a catch-up block — and the turn end
//! that may wait for them.

use super::RouterState;
use crate::delivery::advisors::Origin;
use crate::delivery::catch_up::{best_effort_notice, CatchUpEnd, CatchUpPlan, HeldRelease};
use crate::delivery::held::{HeldNote, Reraised};
use crate::delivery::outcome::{DropReason, RaiseOutcome};
use crate::delivery::review_ref::ReviewRef;
use crate::domain::advice::Severity;
use crate::domain::host::HostEvent;
use crate::settings::DeliveryPolicy;

impl RouterState {
    /// A note matching one the advisor of `origin` holds (D9): reconfirmed by a later
    /// review, a duplicate within the review that held it. A reconfirmed note is about the
    /// update of the review that reconfirmed it now (RO22).
    pub(super) fn reraise(
        &mut self,
        origin: &Origin,
        key: &str,
        review: u64,
        severity: Severity,
    ) -> Option<RaiseOutcome> {
        let owner = &origin.owner;
        match self.held.reraise(owner, key, review, severity)? {
            Reraised::Duplicate => Some(self.drop_note(owner, DropReason::Duplicate)),
            Reraised::Reconfirmed => {
                if let Some(held) = self
                    .held
                    .find_mut(|h| h.origin.owner == *owner && h.key == key)
                {
                    held.origin.update = origin.update;
                }
                self.tally(owner, |c| c.reconfirmed += 1);
                Some(RaiseOutcome::Reconfirmed)
            }
        }
    }

    /// A primary turn ended (`terminal` when it was the final answer): one immune turn is
    /// used up (D7), and when an advisor in use delivers under `reconfirm` the turn end may
    /// have to wait for the advisors to catch up (D5). `can_wait` is false when no advisor
    /// runs to wait for.
    pub fn turn_ended(&mut self, terminal: bool, can_wait: bool) -> Option<CatchUpPlan> {
        self.turns += 1;
        self.conversation_turns += 1;
        self.last_turn_terminal = terminal;
        self.immune_left = self.immune_left.saturating_sub(1);
        if !self.guards.uses(DeliveryPolicy::Reconfirm) || !self.enabled || !can_wait {
            return None;
        }
        let plan = self.catch_up.plan(terminal, self.held.len());
        if let Some(plan) = &plan {
            tracing::info!(
                timeout_s = plan.timeout.as_secs(),
                terminal,
                held = plan.held,
                "catch-up block"
            );
        }
        plan
    }

    /// A catch-up block ended (D5): delivers the held notes its end allows, one message per
    /// note, on the channel the run state calls for.
    pub fn catch_up_finished(&mut self, plan: &CatchUpPlan, end: CatchUpEnd) -> Vec<HostEvent> {
        let release = self.catch_up.finish(plan, end);
        tracing::info!(
            ?end,
            ?release,
            held = self.held.len(),
            "catch-up block ended"
        );
        match release {
            HeldRelease::Keep => Vec::new(),
            HeldRelease::Confirmed => self.release_held(|h| h.confirmed),
            HeldRelease::All { best_effort } => {
                let count = self.held.len();
                let mut events = Vec::new();
                if best_effort && count > 0 {
                    events.push(HostEvent::notice(best_effort_notice(count)));
                }
                events.extend(self.release_held(|_| true));
                events
            }
        }
    }

    pub(super) fn release_held(&mut self, pick: impl Fn(&HeldNote) -> bool) -> Vec<HostEvent> {
        let out = self.held.take(pick);
        let mut events = Vec::new();
        for note in out {
            let owner = note.origin.owner.clone();
            self.tally(&owner, |c| c.held -= 1);
            self.remember(&owner, &note.key, note.severity());
            for co_author in &note.origin.co_authors {
                self.remember(&Some(co_author.clone()), &note.key, note.severity());
            }
            events.extend(self.route(note.advisory, note.key, note.origin, None));
        }
        events
    }

    /// The held-notes preamble of `review` (D9, RO13), empty
    /// when it holds nothing. The notes listed are the ones this review must raise again to
    /// keep; another advisor's held notes are not its to keep or drop.
    pub fn held_preamble(&mut self, review: &ReviewRef) -> String {
        let (epoch, number) = (review.epoch(), review.number());
        if epoch != self.epoch {
            return String::new();
        }
        self.held.preamble(&review.owner(), number)
    }

    /// `review` succeeded (D9, RO13): the notes it
    /// holds that it was shown and did not raise again are dropped (`recanted`). A failed
    /// review prunes nothing.
    pub fn review_succeeded(&mut self, review: &ReviewRef) {
        let (epoch, number) = (review.epoch(), review.number());
        if epoch != self.epoch {
            return;
        }
        let owner = review.owner();
        let dropped = self.held.prune(&owner, number) as u64;
        if dropped > 0 {
            tracing::info!(dropped, "held advisories recanted");
            self.tally(&owner, |c| c.held -= dropped);
            self.count_drop(&owner, DropReason::Recanted, dropped);
        }
    }

    /// An attempt of `review` was thrown away
    /// before the review is tried again (G5: its context overflowed; F1: it failed). The
    /// attempts of one review run one after another and the agent reports a discarded one
    /// before the next starts, so everything the review changed so far is the discarded
    /// attempt's: the notes it held are dropped (`discarded`) and free their place in the
    /// review's note budget, and the held notes it raised again lose that reconfirmation
    /// (and any escalation). Advice it delivered cannot be recalled; its dedupe memory
    /// stays, so a replay does not repeat it. Returns how many holds were rolled back. A
    /// removed advisor's (RO21) has nothing left to roll back.
    pub fn discard_attempt(&mut self, review: &ReviewRef) -> usize {
        let label = review.advisor.as_ref();
        let (epoch, number) = (review.epoch(), review.number());
        let owner = review.owner();
        if epoch != self.epoch || self.guards.is_removed(&owner) {
            return 0;
        }
        let id = review.id;
        let deferred = self
            .deferred
            .take_where(|n| n.origin.owner == owner && n.review == id);
        if !deferred.is_empty() {
            let n = deferred.len() as u64;
            self.tally(&owner, |c| c.pending -= n);
            self.count_drop(&owner, DropReason::Discarded, n);
        }
        let discarded = self.held.discard(&owner, number);
        let dropped = discarded.len();
        if dropped > 0 {
            tracing::info!(
                dropped,
                review = number,
                "holds of a discarded attempt rolled back"
            );
            self.tally(&owner, |c| c.held -= dropped as u64);
            self.count_drop(&owner, DropReason::Discarded, dropped as u64);
        }
        // Its deferred notes will be raised again by the next attempt: not duplicates then,
        // nor for their co-authors (RO22).
        for note in &deferred {
            self.forget_note(&note.origin, &note.key, note.severity());
        }
        let counted = discarded.iter().filter(|h| h.counted()).count();
        // SP3: a held blocker that took no place gives its exemption back.
        let free_blockers = discarded
            .iter()
            .filter(|h| !h.counted() && h.severity() == Severity::Blocker)
            .count();
        let guard = self.guards.for_label(label);
        guard.budget.give_back(id, deferred.len() + counted);
        guard.budget.give_back_blockers(id, free_blockers);
        dropped
    }

    pub(super) fn drop_held(&mut self, reason: DropReason) {
        for note in self.held.take(|_| true) {
            self.tally(&note.origin.owner, |c| c.held -= 1);
            self.count_drop(&note.origin.owner, reason, 1);
        }
    }
}
