//! The notes the `defer` policy keeps back (P1): a `nit` or `concern` raised by a review of a
//! WIP batch waits here for the next final boundary, where it is routed as the run state then
//! calls for. Pure data; the router decides when to defer and release.

use super::advisors::{Origin, Owner};
use super::budget::ReviewId;
use crate::domain::advice::{Advisory, Severity};

/// One deferred note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeferredNote {
    /// The note as raised (its severity may have been raised since).
    pub advisory: Advisory,
    /// The dedupe key (P3).
    pub key: String,
    /// The review that raised it.
    pub review: ReviewId,
    /// The advisor that raised it and the update its review covered (RO13, RO22).
    pub origin: Origin,
}

impl DeferredNote {
    /// Its severity for routing and ranking.
    pub fn severity(&self) -> Severity {
        self.advisory.effective_severity()
    }
}

/// The deferred notes, oldest first.
#[derive(Debug, Clone, Default)]
pub struct DeferredNotes {
    notes: Vec<DeferredNote>,
}

impl DeferredNotes {
    /// How many notes wait.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.notes.len()
    }

    /// The notes, oldest first.
    pub fn as_slice(&self) -> &[DeferredNote] {
        &self.notes
    }

    /// Defers a note.
    pub fn push(&mut self, note: DeferredNote) {
        self.notes.push(note);
    }

    /// `owner`'s deferred note under `key`, if any.
    pub fn get_mut(&mut self, owner: &Owner, key: &str) -> Option<&mut DeferredNote> {
        self.notes
            .iter_mut()
            .find(|n| n.origin.owner == *owner && n.key == key)
    }

    /// Takes the first deferred note `pick` chooses out (a blocker of the same note
    /// supersedes it; RO22 merges into it).
    pub fn remove(&mut self, pick: impl Fn(&DeferredNote) -> bool) -> Option<DeferredNote> {
        let i = self.notes.iter().position(pick)?;
        Some(self.notes.remove(i))
    }

    /// D8 over budget: takes out the lowest-ranked note of `owner`'s review `review` that
    /// ranks below `severity` (the newest of them), so the higher-ranked note takes its
    /// place; never a note of another review or another advisor (RO13).
    pub fn displace_lower(
        &mut self,
        owner: &Owner,
        review: ReviewId,
        severity: Severity,
    ) -> Option<DeferredNote> {
        let of_review = |n: &DeferredNote| n.origin.owner == *owner && n.review == review;
        let lowest = self
            .notes
            .iter()
            .filter(|n| of_review(n) && n.severity() < severity)
            .map(DeferredNote::severity)
            .min()?;
        let i = self
            .notes
            .iter()
            .rposition(|n| of_review(n) && n.severity() == lowest)?;
        Some(self.notes.remove(i))
    }

    /// Takes every note `pick` chooses out, oldest first (a review's attempt was thrown
    /// away, G5; its advisor was removed, RO21).
    pub fn take_where(&mut self, pick: impl Fn(&DeferredNote) -> bool) -> Vec<DeferredNote> {
        let (taken, kept) = std::mem::take(&mut self.notes).into_iter().partition(pick);
        self.notes = kept;
        taken
    }

    /// The first deferred note `pick` chooses, to change in place (RO22's merge).
    pub fn find_mut(&mut self, pick: impl Fn(&DeferredNote) -> bool) -> Option<&mut DeferredNote> {
        self.notes.iter_mut().find(|n| pick(n))
    }

    /// Takes every note out, oldest first (release, reset).
    pub fn take_all(&mut self) -> Vec<DeferredNote> {
        std::mem::take(&mut self.notes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Review `number` of epoch 0.
    fn id(number: u64) -> ReviewId {
        ReviewId { epoch: 0, number }
    }

    fn note(text: &str, sev: Option<Severity>, review: u64) -> DeferredNote {
        DeferredNote {
            advisory: Advisory::new(text, sev),
            key: text.to_string(),
            review: id(review),
            origin: Origin::default(),
        }
    }

    #[test]
    fn p1_displacement_takes_the_lowest_ranked_note_of_the_same_review_only() {
        let mut d = DeferredNotes::default();
        d.push(note("old nit", None, 1));
        d.push(note("c", Some(Severity::Concern), 2));
        d.push(note("n1", Some(Severity::Nit), 2));
        d.push(note("n2", None, 2));
        let out = d.displace_lower(&None, id(2), Severity::Concern).unwrap();
        assert!(
            d.displace_lower(&Some("other".into()), id(2), Severity::Concern)
                .is_none(),
            "never another advisor's note"
        );
        assert_eq!(out.key, "n2", "the newest of the lowest");
        assert_eq!(
            d.displace_lower(&None, id(2), Severity::Concern)
                .unwrap()
                .key,
            "n1"
        );
        assert!(
            d.displace_lower(&None, id(2), Severity::Concern).is_none(),
            "a concern does not displace a concern, nor another review's nit"
        );
        assert_eq!(d.len(), 2);
        assert_eq!(d.take_where(|n| n.review == id(1)).len(), 1);
        assert_eq!(d.take_all().len(), 1);
    }
}
