//! Held notes of the `reconfirm` policy (D9): concerns and blockers kept back on first
//! emission, listed in the preamble of each later review, reconfirmed by being raised again,
//! recanted by silence, and rolled back when the attempt that touched them is discarded
//! (G5). They live in the router, outside the advisor's context (G6). The counters are the
//! router's; these are the notes themselves.

use super::advisors::{Origin, Owner};
use super::note::display_note;
use super::texts::{fill, HELD_PREAMBLE};
use crate::domain::advice::{Advisory, Severity};

/// A concern or blocker held under `reconfirm` (D9), kept by the router, outside the
/// advisor's context (G6).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldNote {
    /// The note with its original text and its current (never lowered) severity.
    pub advisory: Advisory,
    /// Whether a later review raised it again.
    pub confirmed: bool,
    pub(super) key: String,
    /// The advisor that holds it and the update its review covered (RO13, RO22).
    pub(super) origin: Origin,
    held_in: u64,
    /// Whether it took a place in its review's note budget (D8; blockers do not).
    counted: bool,
    listed_in: Option<u64>,
    reraised_in: Option<u64>,
    /// How the note stood before review `.0` first raised it again, so a discarded
    /// attempt of that review can undo the reconfirmation (G5).
    before_reraise: Option<(u64, Reraise)>,
}

/// The part of a held note a reconfirmation changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Reraise {
    confirmed: bool,
    reraised_in: Option<u64>,
    severity: Option<Severity>,
}

impl HeldNote {
    /// The severity the note is routed with when it goes out.
    pub(super) fn severity(&self) -> Severity {
        self.advisory.effective_severity()
    }

    /// Whether it took a place in its review's note budget (D8).
    pub(super) fn counted(&self) -> bool {
        self.counted
    }
}

/// What raising a note that matches a held one amounts to (D9).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reraised {
    /// A later review raised it again: reconfirmed.
    Reconfirmed,
    /// The review that held it raised it again: a duplicate.
    Duplicate,
}

/// The held notes, oldest first.
#[derive(Debug, Clone, Default)]
pub(super) struct HeldNotes {
    notes: Vec<HeldNote>,
}

impl HeldNotes {
    /// The notes, oldest first.
    pub(super) fn as_slice(&self) -> &[HeldNote] {
        &self.notes
    }

    /// How many notes are held.
    pub(super) fn len(&self) -> usize {
        self.notes.len()
    }

    /// Holds `advisory` (dedupe key `key`), raised by review `review` of the advisor of
    /// `origin` (D4); `counted` when it took a place in the review's note budget.
    pub(super) fn hold(
        &mut self,
        advisory: Advisory,
        key: String,
        origin: Origin,
        review: u64,
        counted: bool,
    ) {
        self.notes.push(HeldNote {
            advisory,
            confirmed: false,
            key,
            origin,
            held_in: review,
            counted,
            listed_in: None,
            reraised_in: None,
            before_reraise: None,
        });
    }

    /// A note with key `key` raised at `severity` by review `review` of `owner`: `None`
    /// when nothing `owner` holds matches (another advisor's held notes are not its to
    /// reconfirm, RO13). A later review reconfirms the held note, escalating but never
    /// lowering its severity; a repeat within the review that held it is a duplicate.
    pub(super) fn reraise(
        &mut self,
        owner: &Owner,
        key: &str,
        review: u64,
        severity: Severity,
    ) -> Option<Reraised> {
        let held = self
            .notes
            .iter_mut()
            .find(|h| h.origin.owner == *owner && h.key == key)?;
        if held.held_in != review && held.before_reraise.map(|(r, _)| r) != Some(review) {
            held.before_reraise = Some((
                review,
                Reraise {
                    confirmed: held.confirmed,
                    reraised_in: held.reraised_in,
                    severity: held.advisory.severity,
                },
            ));
        }
        if severity > held.severity() {
            held.advisory.severity = Some(severity);
        }
        if held.held_in == review {
            return Some(Reraised::Duplicate);
        }
        held.confirmed = true;
        held.reraised_in = Some(review);
        tracing::info!(
            severity = held.severity().as_str(),
            "held advisory reconfirmed"
        );
        Some(Reraised::Reconfirmed)
    }

    /// The preamble of `owner`'s review `review` (D9), empty when it holds nothing; the
    /// notes listed are the ones this review must raise again to keep.
    pub(super) fn preamble(&mut self, owner: &Owner, review: u64) -> String {
        let mut items = String::new();
        for held in self.notes.iter_mut().filter(|h| h.origin.owner == *owner) {
            held.listed_in = Some(review);
            items.push_str(&format!(
                "- [{}] {}\n",
                held.severity().as_str().to_uppercase(),
                display_note(&held.advisory.note)
            ));
        }
        if items.is_empty() {
            return String::new();
        }
        fill(HELD_PREAMBLE, &[("notes", &items)])
    }

    /// `owner`'s review `review` succeeded: drops the notes it was shown and did not raise
    /// again. Returns how many were dropped (recanted).
    pub(super) fn prune(&mut self, owner: &Owner, review: u64) -> usize {
        let before = self.notes.len();
        self.notes.retain(|h| {
            h.origin.owner != *owner || h.listed_in != Some(review) || h.reraised_in == Some(review)
        });
        before - self.notes.len()
    }

    /// An attempt of `owner`'s review `review` was thrown away (G5): drops the notes it held and
    /// undoes the reconfirmations (and escalations) it made. Returns the notes dropped.
    pub(super) fn discard(&mut self, owner: &Owner, review: u64) -> Vec<HeldNote> {
        let dropped = self.take(|h| h.origin.owner == *owner && h.held_in == review);
        for held in self.notes.iter_mut().filter(|h| h.origin.owner == *owner) {
            if let Some((r, prior)) = held.before_reraise {
                if r == review {
                    held.confirmed = prior.confirmed;
                    held.reraised_in = prior.reraised_in;
                    held.advisory.severity = prior.severity;
                    held.before_reraise = None;
                }
            }
        }
        dropped
    }

    /// Takes the notes `pick` chooses, oldest first; the others stay held.
    pub(super) fn take(&mut self, pick: impl Fn(&HeldNote) -> bool) -> Vec<HeldNote> {
        let (out, keep): (Vec<HeldNote>, Vec<HeldNote>) =
            std::mem::take(&mut self.notes).into_iter().partition(pick);
        self.notes = keep;
        out
    }

    /// The first held note `pick` chooses, to change in place (RO22's merge).
    pub(super) fn find_mut(&mut self, pick: impl Fn(&HeldNote) -> bool) -> Option<&mut HeldNote> {
        self.notes.iter_mut().find(|h| pick(h))
    }
}

#[cfg(test)]
mod tests {
    use crate::delivery::testing::{adv, reconfirm, rv};
    use crate::delivery::{CatchUpEnd, DropReason, RaiseOutcome};
    use crate::domain::advice::Severity;
    use crate::domain::host::HostEvent;

    #[test]
    fn d9_preamble_lists_held_notes_with_the_instruction() {
        let mut r = reconfirm();
        assert_eq!(r.held_preamble(&rv(0, 1)), "");
        r.raise(
            &rv(0, 1),
            adv("the  migration\ndrops a column", Some(Severity::Concern)),
        );
        r.raise(&rv(0, 1), adv("tests never ran", Some(Severity::Blocker)));
        let text = r.held_preamble(&rv(0, 2));
        assert!(
            text.starts_with("### Held advisories — reconfirm\n"),
            "{text}"
        );
        assert!(
            text.contains("\n- [CONCERN] the migration drops a column\n"),
            "{text}"
        );
        assert!(text.contains("\n- [BLOCKER] tests never ran\n"), "{text}");
        assert!(text.contains("call `advise` again"), "{text}");
        assert!(text.contains("same or a higher severity"), "{text}");
        assert!(text.contains("Silence drops"), "{text}");
        assert!(
            text.contains("Do not announce that an item is resolved"),
            "{text}"
        );
        assert_eq!(r.held_preamble(&rv(1, 3)), "", "another epoch sees nothing");
    }

    #[test]
    fn d9_held_blocker_reraised_as_a_nit_stays_a_blocker() {
        let mut r = reconfirm();
        r.raise(&rv(0, 1), adv("Tests never ran", Some(Severity::Blocker)));
        r.held_preamble(&rv(0, 2));
        let (outcome, _) = r.raise(&rv(0, 2), adv("Tests  never\tran", Some(Severity::Nit)));
        assert_eq!(outcome, RaiseOutcome::Reconfirmed);
        assert_eq!(outcome.tool_text(2), "Recorded.");
        r.review_succeeded(&rv(0, 2));
        let held = &r.held()[0];
        assert!(held.confirmed);
        assert_eq!(held.advisory.severity, Some(Severity::Blocker));
        assert_eq!(held.advisory.note, "Tests never ran", "original text kept");
    }

    #[test]
    fn d9_held_concern_reraised_higher_escalates() {
        let mut r = reconfirm();
        r.raise(&rv(0, 1), adv("wrong file", Some(Severity::Concern)));
        r.held_preamble(&rv(0, 2));
        r.raise(&rv(0, 2), adv("wrong file", Some(Severity::Blocker)));
        assert_eq!(r.held()[0].advisory.severity, Some(Severity::Blocker));
    }

    #[test]
    fn d9_recanted_note_dropped_and_a_failed_review_prunes_nothing() {
        let mut r = reconfirm();
        r.raise(&rv(0, 1), adv("stale worry", Some(Severity::Blocker)));
        r.held_preamble(&rv(0, 2));
        // Review 2 failed: no report, nothing pruned; the retry lists it again.
        r.held_preamble(&rv(0, 3));
        r.raise(&rv(0, 3), adv("a fresh worry", Some(Severity::Concern)));
        r.review_succeeded(&rv(0, 3));
        let notes: Vec<&str> = r.held().iter().map(|h| h.advisory.note.as_str()).collect();
        assert_eq!(
            notes,
            vec!["a fresh worry"],
            "raised in review 3: not its to prune"
        );
        assert_eq!(r.counts().dropped.get(&DropReason::Recanted), Some(&1));
        assert_eq!(r.counts().held, 1);
        assert_eq!(r.counts().raised(), 2);
    }

    #[test]
    fn g5_d9_discarded_attempt_rolls_back_its_holds_and_keeps_earlier_ones() {
        let mut r = reconfirm();
        r.raise(&rv(0, 1), adv("held before", Some(Severity::Blocker)));
        r.held_preamble(&rv(0, 2));
        // Review 2's first attempt holds two phantoms; the concern takes a place in the
        // budget (2 notes), the blocker takes none.
        assert_eq!(
            r.raise(&rv(0, 2), adv("phantom one", Some(Severity::Concern)))
                .0,
            RaiseOutcome::Held
        );
        r.raise(&rv(0, 2), adv("phantom two", Some(Severity::Blocker)));
        assert_eq!(r.discard_attempt(&rv(0, 2)), 2);
        let notes: Vec<&str> = r.held().iter().map(|h| h.advisory.note.as_str()).collect();
        assert_eq!(notes, vec!["held before"]);
        assert_eq!(r.counts().held, 1);
        assert_eq!(r.counts().dropped.get(&DropReason::Discarded), Some(&2));
        assert_eq!(
            r.counts().raised(),
            3,
            "every advisory still ends somewhere (D10)"
        );
        // The replay has its whole budget again, and the phantom is not a duplicate.
        assert_eq!(
            r.raise(&rv(0, 2), adv("phantom one", Some(Severity::Concern)))
                .0,
            RaiseOutcome::Held
        );
        assert_eq!(
            r.raise(&rv(0, 2), adv("another", Some(Severity::Concern)))
                .0,
            RaiseOutcome::Held
        );
        // Stale epochs and other reviews are left alone.
        assert_eq!(r.discard_attempt(&rv(7, 2)), 0);
        assert_eq!(r.discard_attempt(&rv(0, 5)), 0);
        assert_eq!(r.held().len(), 3);
    }

    #[test]
    fn g5_d9_discarded_attempt_undoes_its_reconfirmation_and_escalation() {
        let mut r = reconfirm();
        r.raise(&rv(0, 1), adv("held before", Some(Severity::Concern)));
        r.held_preamble(&rv(0, 2));
        assert_eq!(
            r.raise(&rv(0, 2), adv("held before", Some(Severity::Blocker)))
                .0,
            RaiseOutcome::Reconfirmed
        );
        assert!(r.held()[0].confirmed);
        r.discard_attempt(&rv(0, 2));
        assert!(!r.held()[0].confirmed);
        assert_eq!(r.held()[0].advisory.severity, Some(Severity::Concern));
        assert_eq!(r.counts().held, 1, "the note itself stays held");
        // The replay stays silent about it: it is recanted, as if the attempt never ran.
        r.review_succeeded(&rv(0, 2));
        assert!(r.held().is_empty());
        assert_eq!(r.counts().dropped.get(&DropReason::Recanted), Some(&1));
    }

    #[test]
    fn g5_d9_reconfirmation_by_the_replay_survives() {
        let mut r = reconfirm();
        r.raise(&rv(0, 1), adv("held before", Some(Severity::Concern)));
        r.held_preamble(&rv(0, 2));
        r.raise(&rv(0, 2), adv("held before", Some(Severity::Concern)));
        r.discard_attempt(&rv(0, 2));
        assert_eq!(
            r.raise(&rv(0, 2), adv("held before", Some(Severity::Concern)))
                .0,
            RaiseOutcome::Reconfirmed
        );
        r.review_succeeded(&rv(0, 2));
        assert_eq!(r.held().len(), 1);
        assert!(r.held()[0].confirmed);
    }

    #[test]
    fn d8_a_held_note_is_not_recorded_as_delivered() {
        let mut r = reconfirm();
        r.run_state(true);
        r.raise(
            &rv(0, 1),
            adv("check the null case", Some(Severity::Concern)),
        );
        r.held_preamble(&rv(0, 2));
        r.review_succeeded(&rv(0, 2));
        assert!(r.held().is_empty());
        // Raised afresh after being recanted: not a duplicate, held again.
        assert_eq!(
            r.raise(
                &rv(0, 3),
                adv("check the null case", Some(Severity::Concern))
            )
            .0,
            RaiseOutcome::Held
        );
        // Once delivered, a repeat is a duplicate.
        r.held_preamble(&rv(0, 4));
        r.raise(
            &rv(0, 4),
            adv("check the null case", Some(Severity::Concern)),
        );
        let plan = r.turn_ended(false, true).unwrap();
        let events = r.catch_up_finished(&plan, CatchUpEnd::Settled);
        assert_eq!(events, vec![HostEvent::SteerReady]);
        assert_eq!(
            r.raise(
                &rv(0, 5),
                adv("check the null case", Some(Severity::Concern))
            )
            .0,
            RaiseOutcome::Dropped(DropReason::Duplicate)
        );
    }

    #[test]
    fn r1_reset_drops_held_notes() {
        let mut r = reconfirm();
        r.raise(&rv(0, 1), adv("old", Some(Severity::Blocker)));
        r.reset(1);
        assert!(r.held().is_empty());
        assert_eq!(r.counts().held, 0);
        assert_eq!(r.counts().dropped.get(&DropReason::StaleEpoch), Some(&1));
    }
}
