//! D4, D5, D9: the notes `reconfirm` holds and the catch-up block a turn end may wait
//! through — which held notes a block's end releases, a reconfirmation that moves a note to
//! the update its reconfirming review covered (RO22), the logs of both. The router counts.

use crate::delivery::advisors::{Origin, Owner};
use crate::delivery::catch_up::{
    best_effort_notice, CatchUp, CatchUpEnd, CatchUpPlan, HeldRelease,
};
use crate::delivery::held::{HeldNote, HeldNotes, Reraised};
use crate::domain::advice::{Advisory, Severity};
use crate::domain::host::HostEvent;

/// The held notes and the catch-up streak.
#[derive(Debug, Clone)]
pub(super) struct Holds {
    notes: HeldNotes,
    catch_up: CatchUp,
}

impl Holds {
    /// Nothing held, no catch-up block yet.
    pub(super) fn new() -> Self {
        Self {
            notes: HeldNotes::default(),
            catch_up: CatchUp::new(),
        }
    }

    /// The held notes, oldest first.
    pub(super) fn notes(&self) -> &[HeldNote] {
        self.notes.as_slice()
    }

    /// Holds `advisory` raised by review `review` of the advisor of `origin` (D4).
    pub(super) fn hold(
        &mut self,
        advisory: Advisory,
        key: String,
        origin: Origin,
        review: u64,
        counted: bool,
    ) {
        self.notes.hold(advisory, key, origin, review, counted);
    }

    /// Takes the held notes that are `pick`.
    pub(super) fn take(&mut self, pick: impl Fn(&HeldNote) -> bool) -> Vec<HeldNote> {
        self.notes.take(pick)
    }

    /// The first held note that is `pick`.
    pub(super) fn find_mut(&mut self, pick: impl Fn(&HeldNote) -> bool) -> Option<&mut HeldNote> {
        self.notes.find_mut(pick)
    }

    /// A note matching one the advisor of `origin` holds (D9): reconfirmed by a later
    /// review — then about the update of the review that reconfirmed it (RO22) — or a
    /// duplicate within the review that held it. `None` when it holds no such note.
    pub(super) fn reraise(
        &mut self,
        origin: &Origin,
        key: &str,
        review: u64,
        severity: Severity,
    ) -> Option<Reraised> {
        let owner = &origin.owner;
        let reraised = self.notes.reraise(owner, key, review, severity)?;
        if reraised == Reraised::Reconfirmed {
            if let Some(held) = self
                .notes
                .find_mut(|h| h.origin.owner == *owner && h.key == key)
            {
                held.origin.update = origin.update;
            }
        }
        Some(reraised)
    }

    /// Whether a turn end (`terminal`: the final answer) waits for the advisors to catch up,
    /// and how long (D5).
    pub(super) fn plan(&self, terminal: bool) -> Option<CatchUpPlan> {
        let plan = self.catch_up.plan(terminal, self.notes.len())?;
        tracing::info!(
            timeout_s = plan.timeout.as_secs(),
            terminal,
            held = plan.held,
            "catch-up block"
        );
        Some(plan)
    }

    /// A catch-up block ended (D5): the held notes its end releases, and the notice that
    /// goes first when they go out on a best effort.
    pub(super) fn finish(
        &mut self,
        plan: &CatchUpPlan,
        end: CatchUpEnd,
    ) -> (Option<HostEvent>, Vec<HeldNote>) {
        let release = self.catch_up.finish(plan, end);
        let count = self.notes.len();
        tracing::info!(?end, ?release, held = count, "catch-up block ended");
        match release {
            HeldRelease::Keep => (None, Vec::new()),
            HeldRelease::Confirmed => (None, self.notes.take(|h| h.confirmed)),
            HeldRelease::All { best_effort } => {
                let notice = (best_effort && count > 0)
                    .then(|| HostEvent::notice(best_effort_notice(count)));
                (notice, self.notes.take(|_| true))
            }
        }
    }

    /// The held-notes preamble of review `review` of `owner` (D9, RO13).
    pub(super) fn preamble(&mut self, owner: &Owner, review: u64) -> String {
        self.notes.preamble(owner, review)
    }

    /// Review `review` of `owner` succeeded: the notes it was shown and did not raise again
    /// are recanted (D9); answers how many.
    pub(super) fn prune(&mut self, owner: &Owner, review: u64) -> u64 {
        let dropped = self.notes.prune(owner, review) as u64;
        if dropped > 0 {
            tracing::info!(dropped, "held advisories recanted");
        }
        dropped
    }

    /// An attempt of review `review` of `owner` was thrown away: the notes it held, taken
    /// (its reconfirmations are rolled back).
    pub(super) fn discard(&mut self, owner: &Owner, review: u64) -> Vec<HeldNote> {
        let discarded = self.notes.discard(owner, review);
        if !discarded.is_empty() {
            tracing::info!(
                dropped = discarded.len(),
                review,
                "holds of a discarded attempt rolled back"
            );
        }
        discarded
    }

    /// A reset (R1): the catch-up streak starts over.
    pub(super) fn reset_streak(&mut self) {
        self.catch_up.reset();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delivery::advisors::UpdateId;

    fn origin(turns: u64) -> Origin {
        Origin {
            update: UpdateId { epoch: 0, turns },
            ..Origin::default()
        }
    }

    #[test]
    fn d9_ro22_a_reconfirmed_note_moves_to_the_reconfirming_reviews_update() {
        let mut holds = Holds::new();
        let note = Advisory::new("check input", Some(Severity::Concern));
        holds.hold(note, "check input".into(), origin(1), 1, true);
        let again = holds.reraise(&origin(1), "check input", 1, Severity::Concern);
        assert_eq!(
            again,
            Some(Reraised::Duplicate),
            "within the review that held it"
        );
        let later = holds.reraise(&origin(4), "check input", 2, Severity::Concern);
        assert_eq!(later, Some(Reraised::Reconfirmed));
        assert_eq!(holds.notes()[0].origin.update.turns, 4);
        assert_eq!(holds.reraise(&origin(4), "other", 2, Severity::Nit), None);
    }

    #[test]
    fn d5_a_terminal_block_that_times_out_releases_everything_with_the_notice() {
        let mut holds = Holds::new();
        assert!(
            holds.plan(false).is_none(),
            "nothing held: a mid-run turn end waits for nothing"
        );
        holds.hold(
            Advisory::new("a", Some(Severity::Blocker)),
            "a".into(),
            origin(0),
            1,
            false,
        );
        let plan = holds.plan(true).expect("a terminal turn waits");
        let (notice, released) = holds.finish(&plan, CatchUpEnd::TimedOut);
        assert!(notice.is_some());
        assert_eq!(released.len(), 1);
        assert!(holds.notes().is_empty());
    }
}
