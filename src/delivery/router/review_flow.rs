//! RO22, P1, D8: a review starts (its budget, its update, a WIP review under `defer`) and ends (the
//! cards waiting for it), and the deferred notes waiting for a final boundary.

use super::{owner_of, RouterState};
use crate::delivery::advisors::Owner;
use crate::delivery::budget::ReviewId;
use crate::delivery::outbox::OutboxSteer;
use crate::delivery::outcome::{DropReason, RaiseOutcome};
use crate::delivery::review_ref::ReviewRef;
use crate::domain::advice::{AdvisorLabel, Advisory, Severity};
use crate::domain::host::HostEvent;
use crate::settings::DeliveryPolicy;

impl RouterState {
    pub(crate) fn review_started(&mut self, review: &ReviewRef, updates: usize) {
        let label = review.advisor.as_ref();
        let epoch = review.epoch();
        if epoch == self.epoch && !self.guards.is_removed(&review.owner()) {
            self.guards.reviewing(label);
            let now = self.update_now(epoch);
            let guard = self.guards.for_label(label);
            guard.budget.start(review.id, updates);
            guard.update = Some((review.id, now));
            guard.reviewing = true;
        }
    }

    /// `review` (`None`: the unnamed advisor)
    /// starts and covers `updates` session updates (its batch, G2): its note budget is
    /// `updates` × its `maxNotesPerUpdate` (D8, RO10, RO13). Under `defer` (its policy,
    /// RO15) a review of a `wip` batch has its nits and concerns deferred (P1), and a
    /// review of a final batch is a final boundary that releases what earlier reviews
    /// deferred. Returns the events of the release. A review of a removed advisor (RO21)
    /// changes nothing.
    pub fn review_batch(
        &mut self,
        review: &ReviewRef,
        updates: usize,
        wip: bool,
    ) -> Vec<HostEvent> {
        let label = review.advisor.as_ref();
        let epoch = review.epoch();
        let owner = review.owner();
        if self.guards.is_removed(&owner) {
            return Vec::new();
        }
        self.review_started(review, updates);
        if epoch != self.epoch || self.guards.policy(&owner) != DeliveryPolicy::Defer {
            return Vec::new();
        }
        if wip {
            self.guards.for_label(label).wip_review = Some(review.id);
            Vec::new()
        } else {
            self.release_deferred()
        }
    }

    /// The review in progress of `advisor` ended, whatever its end (RO22): the
    /// cards that waited for it go out unless another advisor's review of their update
    /// still runs.
    pub fn review_ended(&mut self, advisor: Option<&AdvisorLabel>) -> Vec<HostEvent> {
        if let Some(guard) = self.guards.get_mut(&owner_of(advisor)) {
            guard.reviewing = false;
        }
        self.release_cards(false)
    }

    /// Sends the waiting cards and wakes (RO22): all of them, or with `all` false those no
    /// other advisor's running review of their update waits for. Each takes the channel its
    /// note calls for now (a run may have started meanwhile: then it steers).
    pub(super) fn release_cards(&mut self, all: bool) -> Vec<HostEvent> {
        let (waiting, ready): (Vec<OutboxSteer>, Vec<OutboxSteer>) =
            std::mem::take(&mut self.outbox.cards)
                .into_iter()
                .partition(|c| !all && self.guards.another_reviewing(&c.origin));
        self.outbox.cards = waiting;
        let mut events = Vec::with_capacity(ready.len());
        for waited in ready {
            let owner = waited.origin.owner.clone();
            self.tally(&owner, |c| c.pending -= 1);
            let Some(note) = waited.card.notes.first().cloned() else {
                continue;
            };
            events.extend(self.route_now(note, waited.key, waited.origin, None));
        }
        events
    }

    /// Routes every deferred note now (a final boundary, P1); later notes of the reviews in
    /// progress are routed at once.
    pub(super) fn release_deferred(&mut self) -> Vec<HostEvent> {
        for guard in self.guards.all_mut() {
            guard.wip_review = None;
        }
        let notes = self.deferred.take_all();
        if !notes.is_empty() {
            tracing::info!(notes = notes.len(), "deferred advisories released");
        }
        let mut events = Vec::new();
        for note in notes {
            self.tally(&note.origin.owner, |c| c.pending -= 1);
            events.extend(self.route(note.advisory, note.key, note.origin, Some(note.review)));
        }
        events
    }

    /// P1 under `defer`: a nit or concern of a WIP review waits for the final boundary; a
    /// blocker supersedes a deferred note of the same key and goes at once. `None` when the
    /// note takes the usual way; otherwise the outcome.
    pub(super) fn defer(
        &mut self,
        owner: &Owner,
        key: &str,
        review: ReviewId,
        advisory: &Advisory,
    ) -> Option<RaiseOutcome> {
        let severity = advisory.effective_severity();
        if severity == Severity::Blocker {
            let superseded = self
                .deferred
                .remove(|n| n.origin.owner == *owner && n.key == key);
            if superseded.is_some() {
                // Superseded: it is the same note, raised again as a blocker.
                self.tally(owner, |c| c.pending -= 1);
                self.count_drop(owner, DropReason::Duplicate, 1);
            }
            return None;
        }
        let guard = self.guards.get_mut(owner)?;
        if guard.wip_review != Some(review) {
            return None;
        }
        let existing = self.deferred.get_mut(owner, key)?;
        // Raised again while deferred: one note, at the higher severity.
        if severity > existing.severity() {
            existing.advisory.severity = Some(severity);
            guard.remember(self.turns, key, severity.rank());
        }
        self.count_drop(owner, DropReason::Duplicate, 1);
        tracing::info!("deferred advisory raised again");
        Some(RaiseOutcome::Deferred)
    }

    pub(super) fn drop_deferred(&mut self, reason: DropReason) {
        for note in self.deferred.take_all() {
            self.tally(&note.origin.owner, |c| c.pending -= 1);
            self.count_drop(&note.origin.owner, reason, 1);
        }
    }
}
