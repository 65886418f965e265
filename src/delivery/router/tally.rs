//! D10: the router's counters — the session's, every advisor's together, and each named
//! advisor's by slug (RO13), which outlive its removal.

use std::collections::BTreeMap;

use crate::delivery::advisors::Owner;
use crate::delivery::outcome::{DeliveryCounts, DropReason};

/// The session's counters and each named advisor's.
#[derive(Debug, Clone, Default)]
pub(super) struct Tally {
    /// Every advisor's together.
    counts: DeliveryCounts,
    /// Each named advisor's, by slug.
    per_advisor: BTreeMap<String, DeliveryCounts>,
}

impl Tally {
    /// The session's counters, every advisor's together.
    pub(super) fn counts(&self) -> &DeliveryCounts {
        &self.counts
    }

    /// Each named advisor's counters, by slug.
    pub(super) fn per_advisor(&self) -> &BTreeMap<String, DeliveryCounts> {
        &self.per_advisor
    }

    /// The named advisor `slug` is known: its counters show, zero until it raises.
    pub(super) fn known(&mut self, slug: &str) {
        self.per_advisor.entry(slug.to_string()).or_default();
    }

    /// Applies `f` to the session's counters and to `owner`'s.
    pub(super) fn add(&mut self, owner: &Owner, f: impl Fn(&mut DeliveryCounts)) {
        f(&mut self.counts);
        if let Some(slug) = owner {
            f(self.per_advisor.entry(slug.to_string()).or_default());
        }
    }

    /// Counts `n` notes of `owner` dropped for `reason`.
    pub(super) fn dropped(&mut self, owner: &Owner, reason: DropReason, n: u64) {
        self.add(owner, |c| c.drop(reason, n));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn d10_a_named_advisors_count_adds_to_the_sessions_and_the_unnamed_only_there() {
        let mut tally = Tally::default();
        let arch: Owner = Some("architecture".into());
        tally.known("security");
        tally.add(&arch, |c| c.pending += 2);
        tally.add(&None, |c| c.pending += 1);
        tally.dropped(&arch, DropReason::Duplicate, 1);
        assert_eq!(tally.counts().pending, 3);
        assert_eq!(tally.counts().dropped[&DropReason::Duplicate], 1);
        assert_eq!(tally.per_advisor()["architecture"].pending, 2);
        assert_eq!(tally.per_advisor()["security"], DeliveryCounts::default());
        assert_eq!(
            tally.per_advisor().len(),
            2,
            "the unnamed advisor has no entry"
        );
    }
}
