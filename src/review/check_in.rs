//! The advisor schedules its next review (SP7): plain code, one [`CheckInWait`] per advisor,
//! kept by the supervisor beside the advisor's cadence ([`super::cadence`]).
//!
//! A review that called `check_in {afterTurns: n}` and whose batch ended at turn end `t`
//! makes the advisor's next review start at turn end `t + n`: the turn ends before it start
//! none, their deltas held as the interval rule holds them (CA3) and sent with that review.
//! Reviews already queued behind the calling one are postponed to that review too
//! ([`CheckInWait::postpone`]). A final boundary, a user prompt, an abort or a reset ends
//! the wait early; a user prompt or an abort that came while the calling review ran (after
//! its batch's turn end) ends it before it starts. Turn ends are
//! counted per advisor, the same count the supervisor stamps on the reviews it queues, so a
//! review slower than the turns still schedules from the turn its batch ended at.
//!
//! The wait only holds reviews back, it never adds one: the turn end it ends at goes
//! through the cadence as usual (with an interval above 1 the interval still decides), and
//! the turn ends it held count for the interval as usual (our choice).

use serde::{Deserialize, Serialize};

use super::cadence::{AdvisorCadence, Boundary, Cadence, Decision};
use crate::feed::Update;

/// What `check_in` did, for status and the eval report (SP7).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct CheckInCounts {
    /// Reviews that scheduled the next one with `check_in` (the first call of each).
    pub check_ins: u64,
    /// Turn ends at which a review would have started but a check-in held it back.
    pub turns_skipped: u64,
}

impl CheckInCounts {
    /// Adds another set of counts.
    pub fn add(&mut self, other: &CheckInCounts) {
        self.check_ins += other.check_ins;
        self.turns_skipped += other.turns_skipped;
    }
}

/// One advisor's check-in state: the turn ends it has seen, the turn end its next review
/// waits for, and its counts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckInWait {
    /// Turn ends this advisor has seen, the current one included.
    turn: u64,
    /// The turn end the next review starts at, while a check-in holds reviews back.
    until: Option<u64>,
    /// The turn count when the latest user prompt or abort came: a check-in whose batch
    /// ended at or before it was already ended by it (SP7).
    prompted_at: Option<u64>,
    /// Its counts (lifetime: a reset ends the wait, never the counts).
    counts: CheckInCounts,
}

impl CheckInWait {
    /// A fresh advisor's state: no turn end seen, no wait.
    pub fn new() -> Self {
        Self::default()
    }

    /// The number of the current turn end (0 before the first): what a review queued now
    /// covers up to.
    pub fn turn(&self) -> u64 {
        self.turn
    }

    /// The turn end the next review waits for, while a check-in holds reviews back.
    #[cfg(test)]
    pub fn waiting_until(&self) -> Option<u64> {
        self.until
    }

    /// Its counts.
    pub fn counts(&self) -> CheckInCounts {
        self.counts
    }

    /// A review whose batch ended at turn end `batch_end` called `check_in {afterTurns:
    /// after_turns}`: the next review starts at turn end `batch_end + after_turns`. When
    /// that turn end has already passed (the review ended late), nothing waits.
    /// A user prompt or an abort that came after that turn end (while the review ran)
    /// already ended the wait, so nothing waits then either. Answers whether a wait is set.
    pub fn checked_in(&mut self, batch_end: u64, after_turns: u8) -> bool {
        self.counts.check_ins += 1;
        if self.prompted_at.is_some_and(|at| at >= batch_end) {
            self.until = None;
            return false;
        }
        let at = batch_end.saturating_add(u64::from(after_turns));
        // At `turn + 1` the next turn end is the appointment and holds nothing, but the
        // reviews queued behind this one wait for it ([`Self::postpone`]).
        self.until = (at > self.turn).then_some(at);
        self.until.is_some()
    }

    /// Ends the wait early: a reset, a pause, the advisor turned off (SP7). The next turn
    /// end goes through the cadence as usual.
    pub fn end_wait(&mut self) {
        self.until = None;
    }

    /// A user prompt or an abort (SP7): ends the wait, and a check-in of a review running
    /// now (its batch ended before this) sets none when it reports.
    pub fn prompted(&mut self) {
        self.prompted_at = Some(self.turn);
        self.until = None;
    }

    /// The updates of reviews queued behind the review that called `check_in` (SP7): while
    /// the wait it set holds, they are held back in `cadence` and go with the review at the
    /// appointed turn end (counted as one review skipped); `Some` (to queue them again)
    /// when nothing waits.
    pub fn postpone(
        &mut self,
        cadence: &mut AdvisorCadence,
        updates: Vec<Update>,
        wip: bool,
    ) -> Option<Vec<Update>> {
        if updates.is_empty() {
            return None;
        }
        if self.until.is_none() {
            return Some(updates);
        }
        self.counts.turns_skipped += 1;
        cadence.hold_back(updates, wip);
        None
    }

    /// Takes one turn end: counts it and answers whether the wait holds its review back. A
    /// final boundary, or the turn end the wait was for, ends the wait and is not held.
    fn hold_turn_end(&mut self, final_boundary: bool) -> bool {
        self.turn += 1;
        let Some(until) = self.until else {
            return false;
        };
        if final_boundary || self.turn >= until {
            self.until = None;
            return false;
        }
        true
    }

    /// Runs one boundary through the wait and then `cadence` (CA1–CA4): while the wait
    /// holds, the delta is held and counted as the cadence counts it, but no review is
    /// scheduled (nor waited on, CA9); a review that would have started here is counted in
    /// `turnsSkipped` and everything it would have sent stays held for the next one.
    pub fn on_boundary(
        &mut self,
        cadence: &mut AdvisorCadence,
        settings: Cadence,
        boundary: Boundary,
        delta: Option<Update>,
        wip: bool,
    ) -> Decision {
        if !self.hold_turn_end(boundary.final_boundary) {
            return cadence.on_boundary(settings, boundary, delta, wip);
        }
        if let Decision::Scheduled { updates, wip } =
            cadence.on_boundary(settings, boundary, delta, wip)
        {
            if !updates.is_empty() {
                self.counts.turns_skipped += 1;
            }
            cadence.hold_back(updates, wip);
        }
        Decision::Held
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::review::cadence::tests::{texts, FINAL, WIP};
    use crate::settings::{ReviewMode, SyncBacklog};

    fn every(interval: u64) -> Cadence {
        Cadence {
            mode: ReviewMode::Turn,
            interval,
            sync: SyncBacklog::Off,
        }
    }

    /// One advisor: its wait and cadence.
    #[derive(Default)]
    struct Advisor {
        wait: CheckInWait,
        cadence: AdvisorCadence,
    }

    impl Advisor {
        /// The next turn end with the delta `text`: the texts of the review it starts,
        /// `None` when it starts none.
        fn turn_end(&mut self, settings: Cadence, b: Boundary, text: &str) -> Option<Vec<String>> {
            let wip = !b.final_boundary;
            let decision =
                self.wait
                    .on_boundary(&mut self.cadence, settings, b, Some(text.into()), wip);
            decision.scheduled().then(|| texts(&decision))
        }
    }

    #[test]
    fn sp7_after_turns_2_at_turn_1_turn_end_2_starts_nothing_turn_end_3_reviews_2_and_3() {
        let mut a = Advisor::default();
        assert_eq!(a.turn_end(every(1), WIP, "1"), Some(vec!["1".into()]));
        a.wait.checked_in(1, 2);
        assert_eq!(a.wait.waiting_until(), Some(3));
        assert_eq!(a.turn_end(every(1), WIP, "2"), None);
        assert_eq!(a.cadence.held_updates(), 1);
        assert_eq!(
            a.turn_end(every(1), WIP, "3"),
            Some(vec!["2".into(), "3".into()])
        );
        assert_eq!(a.wait.waiting_until(), None);
        assert_eq!(a.turn_end(every(1), WIP, "4"), Some(vec!["4".into()]));
        assert_eq!(
            a.wait.counts(),
            CheckInCounts {
                check_ins: 1,
                turns_skipped: 1
            }
        );
    }

    #[test]
    fn sp7_after_turns_5_holds_four_turn_ends_and_the_fifth_reviews_them_all() {
        let mut a = Advisor::default();
        a.turn_end(every(1), WIP, "1");
        a.wait.checked_in(1, 5);
        for t in 2..=5 {
            assert_eq!(a.turn_end(every(1), WIP, &t.to_string()), None, "{t}");
        }
        assert_eq!(
            a.turn_end(every(1), WIP, "6"),
            Some(["2", "3", "4", "5", "6"].map(String::from).to_vec())
        );
        assert_eq!(a.wait.counts().turns_skipped, 4);
    }

    #[test]
    fn sp7_after_turns_1_changes_nothing() {
        let mut a = Advisor::default();
        a.turn_end(every(1), WIP, "1");
        a.wait.checked_in(1, 1);
        assert_eq!(a.turn_end(every(1), WIP, "2"), Some(vec!["2".into()]));
        assert_eq!(a.wait.waiting_until(), None);
        assert_eq!(a.wait.counts().turns_skipped, 0);
    }

    #[test]
    fn sp7_the_wait_counts_from_the_turn_the_batch_ended_at_not_from_when_the_review_ended() {
        let mut a = Advisor::default();
        a.turn_end(every(1), WIP, "1");
        a.turn_end(every(1), WIP, "2");
        // The review of turn 1 ends after turn end 2: afterTurns 3 means turn end 4.
        a.wait.checked_in(1, 3);
        assert_eq!(a.wait.waiting_until(), Some(4));
        assert_eq!(a.turn_end(every(1), WIP, "3"), None);
        assert_eq!(
            a.turn_end(every(1), WIP, "4"),
            Some(vec!["3".into(), "4".into()])
        );
        // A review ending after its appointment passed holds nothing.
        a.turn_end(every(1), WIP, "5");
        a.turn_end(every(1), WIP, "6");
        a.wait.checked_in(4, 2);
        assert_eq!(a.wait.waiting_until(), None);
        assert_eq!(a.turn_end(every(1), WIP, "7"), Some(vec!["7".into()]));
    }

    #[test]
    fn sp7_a_final_boundary_ends_the_wait_and_is_reviewed_with_what_was_held() {
        let mut a = Advisor::default();
        a.turn_end(every(1), WIP, "1");
        a.wait.checked_in(1, 5);
        assert_eq!(a.turn_end(every(1), WIP, "2"), None);
        assert_eq!(
            a.turn_end(every(1), FINAL, "3"),
            Some(vec!["2".into(), "3".into()])
        );
        assert_eq!(a.wait.waiting_until(), None);
        assert_eq!(a.turn_end(every(1), WIP, "4"), Some(vec!["4".into()]));
    }

    #[test]
    fn sp7_a_user_prompt_an_abort_or_a_reset_ends_the_wait() {
        let mut a = Advisor::default();
        a.turn_end(every(1), WIP, "1");
        a.wait.checked_in(1, 4);
        assert_eq!(a.turn_end(every(1), WIP, "2"), None);
        a.wait.end_wait();
        assert_eq!(
            a.turn_end(every(1), WIP, "3"),
            Some(vec!["2".into(), "3".into()])
        );
        assert_eq!(a.wait.counts().check_ins, 1, "the counts stay");
    }

    #[test]
    fn sp7_a_user_prompt_while_the_calling_review_runs_ends_the_wait_it_sets() {
        let mut a = Advisor::default();
        a.turn_end(every(1), WIP, "1");
        // The prompt comes after turn end 1, before the review of turn 1 reports.
        a.wait.prompted();
        assert!(!a.wait.checked_in(1, 3));
        assert_eq!(a.wait.waiting_until(), None);
        assert_eq!(a.turn_end(every(1), WIP, "2"), Some(vec!["2".into()]));
        // A prompt before the batch's turn end does not end a later check-in's wait.
        assert!(a.wait.checked_in(2, 3));
        assert_eq!(a.turn_end(every(1), WIP, "3"), None);
    }

    #[test]
    fn sp7_updates_queued_behind_the_calling_review_are_postponed_to_the_appointment() {
        let mut a = Advisor::default();
        a.turn_end(every(1), WIP, "1");
        a.turn_end(every(1), WIP, "2");
        assert!(a.wait.checked_in(1, 3));
        let back = a.wait.postpone(&mut a.cadence, vec!["2".into()], true);
        assert_eq!(back, None);
        assert_eq!(a.turn_end(every(1), WIP, "3"), None);
        assert_eq!(
            a.turn_end(every(1), WIP, "4"),
            Some(["2", "3", "4"].map(String::from).to_vec())
        );
        assert_eq!(a.wait.counts().turns_skipped, 2);
        // Nothing waits: the updates go back to be queued.
        let back = a.wait.postpone(&mut a.cadence, vec!["5".into()], true);
        assert_eq!(back, Some(vec![Update::from("5")]));
    }

    #[test]
    fn sp7_the_wait_never_adds_a_review_the_interval_still_decides() {
        let mut a = Advisor::default();
        let every2 = every(2);
        assert_eq!(a.turn_end(every2, WIP, "1"), None);
        assert_eq!(
            a.turn_end(every2, WIP, "2"),
            Some(vec!["1".into(), "2".into()])
        );
        a.wait.checked_in(2, 3);
        assert_eq!(a.turn_end(every2, WIP, "3"), None, "not scheduled anyway");
        assert_eq!(a.turn_end(every2, WIP, "4"), None, "held by the wait");
        assert_eq!(a.wait.counts().turns_skipped, 1);
        assert_eq!(
            a.turn_end(every2, WIP, "5"),
            None,
            "the wait is over; count 5 is no multiple of 2"
        );
        assert_eq!(
            a.turn_end(every2, WIP, "6"),
            Some(["3", "4", "5", "6"].map(String::from).to_vec())
        );
        assert_eq!(a.cadence.eligible_updates(), 6);
    }

    #[test]
    fn sp7_a_blank_turn_end_in_the_wait_skips_no_review() {
        let mut a = Advisor::default();
        a.turn_end(every(1), WIP, "1");
        a.wait.checked_in(1, 2);
        let blank = a
            .wait
            .on_boundary(&mut a.cadence, every(1), WIP, None, true);
        assert_eq!(blank, Decision::Held);
        assert_eq!(
            a.wait.counts().turns_skipped,
            0,
            "nothing would have started"
        );
        assert_eq!(
            a.turn_end(every(1), WIP, "3"),
            Some(vec!["3".into()]),
            "turn end 3 is the appointment"
        );
    }
}
