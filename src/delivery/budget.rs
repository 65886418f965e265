//! The note budget of the emission guard (D8): at most `maxNotesPerUpdate` non-blocker notes
//! per session update a review covered, so a review that coalesced k updates (G2) allows k ×
//! the budget. A review's first [`FREE_BLOCKERS`] blockers are exempt; each further one
//! takes a place like any other note (SP3). Which note gives way when a review is over budget
//! is the router's decision (the highest-ranked notes win); this is the count.

use super::lane::FREE_BLOCKERS;

pub(super) use super::review_ref::ReviewId;

/// The budget of the review in progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct NoteBudget {
    per_update: usize,
    review: Option<ReviewId>,
    allowed: usize,
    used: usize,
    /// The blockers the review delivered without taking a place (SP3).
    free_blockers: usize,
}

impl NoteBudget {
    /// A budget of `per_update` notes per session update.
    pub(super) fn new(per_update: usize) -> Self {
        Self {
            per_update,
            review: None,
            allowed: 0,
            used: 0,
            free_blockers: 0,
        }
    }

    /// The notes allowed per update.
    pub(super) fn per_update(&self) -> usize {
        self.per_update
    }

    /// Changes the bound per update (RO10: the advisor's entry changed); the review in
    /// progress keeps what it was allowed.
    pub(super) fn set_per_update(&mut self, per_update: usize) {
        self.per_update = per_update;
    }

    /// Review `review` starts and covers `updates` session updates (at least one).
    pub(super) fn start(&mut self, review: ReviewId, updates: usize) {
        self.review = Some(review);
        self.allowed = self.per_update.saturating_mul(updates.max(1));
        self.used = 0;
        self.free_blockers = 0;
    }

    /// Takes a place for a note of `review`: false when its budget is used up. A review the
    /// router was not told about covers one update.
    pub(super) fn take(&mut self, review: ReviewId) -> bool {
        if self.review != Some(review) {
            self.start(review, 1);
        }
        if self.used >= self.allowed {
            return false;
        }
        self.used += 1;
        true
    }

    /// Takes one of the review's [`FREE_BLOCKERS`] blockers exempt from the budget (SP3):
    /// false once the review delivered that many, and the blocker must then take a place
    /// ([`NoteBudget::take`]). A review the router was not told about covers one update.
    pub(super) fn take_free_blocker(&mut self, review: ReviewId) -> bool {
        if self.review != Some(review) {
            self.start(review, 1);
        }
        if self.free_blockers >= FREE_BLOCKERS {
            return false;
        }
        self.free_blockers += 1;
        true
    }

    /// Gives `n` exempt blockers back to `review` (its held blockers were rolled back, G5).
    pub(super) fn give_back_blockers(&mut self, review: ReviewId, n: usize) {
        if self.review == Some(review) {
            self.free_blockers = self.free_blockers.saturating_sub(n);
        }
    }

    /// Gives `n` places back to `review` (its notes were rolled back, G5).
    pub(super) fn give_back(&mut self, review: ReviewId, n: usize) {
        if self.review == Some(review) {
            self.used = self.used.saturating_sub(n);
        }
    }

    /// Forgets the review in progress (reset, R1).
    pub(super) fn reset(&mut self) {
        self.review = None;
        self.allowed = 0;
        self.used = 0;
        self.free_blockers = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn d8_a_review_of_k_updates_allows_k_times_the_budget() {
        let mut b = NoteBudget::new(2);
        b.start(
            ReviewId {
                epoch: 0,
                number: 1,
            },
            3,
        );
        assert_eq!(
            (0..7)
                .filter(|_| b.take(ReviewId {
                    epoch: 0,
                    number: 1
                }))
                .count(),
            6
        );
        // An unannounced review covers one update.
        assert_eq!(
            (0..7)
                .filter(|_| b.take(ReviewId {
                    epoch: 0,
                    number: 2
                }))
                .count(),
            2
        );
        // Zero updates still count as one.
        b.start(
            ReviewId {
                epoch: 0,
                number: 3,
            },
            0,
        );
        assert_eq!(
            (0..7)
                .filter(|_| b.take(ReviewId {
                    epoch: 0,
                    number: 3
                }))
                .count(),
            2
        );
    }

    #[test]
    fn sp3_a_review_delivers_two_blockers_free_then_blockers_take_places() {
        let mut b = NoteBudget::new(1);
        b.start(
            ReviewId {
                epoch: 0,
                number: 1,
            },
            1,
        );
        assert!(b.take_free_blocker(ReviewId {
            epoch: 0,
            number: 1
        }));
        assert!(b.take_free_blocker(ReviewId {
            epoch: 0,
            number: 1
        }));
        assert!(
            !b.take_free_blocker(ReviewId {
                epoch: 0,
                number: 1
            }),
            "the third is counted"
        );
        assert!(
            b.take(ReviewId {
                epoch: 0,
                number: 1
            }),
            "and takes the one place"
        );
        assert!(
            !b.take_free_blocker(ReviewId {
                epoch: 0,
                number: 1
            }) && !b.take(ReviewId {
                epoch: 0,
                number: 1
            })
        );
        b.give_back_blockers(
            ReviewId {
                epoch: 0,
                number: 1,
            },
            1,
        );
        assert!(
            b.take_free_blocker(ReviewId {
                epoch: 0,
                number: 1
            }),
            "a rolled-back blocker frees its exemption"
        );
        // The next review has its two again.
        assert!(
            b.take_free_blocker(ReviewId {
                epoch: 0,
                number: 2
            }) && b.take_free_blocker(ReviewId {
                epoch: 0,
                number: 2
            })
        );
        assert!(!b.take_free_blocker(ReviewId {
            epoch: 0,
            number: 2
        }));
    }

    #[test]
    fn d8_reviews_are_told_apart_by_epoch_and_places_given_back_are_reusable() {
        let mut b = NoteBudget::new(1);
        assert!(b.take(ReviewId {
            epoch: 0,
            number: 1
        }));
        assert!(!b.take(ReviewId {
            epoch: 0,
            number: 1
        }));
        assert!(
            b.take(ReviewId {
                epoch: 1,
                number: 1
            }),
            "the same number in a new epoch is another review"
        );
        b.give_back(
            ReviewId {
                epoch: 0,
                number: 1,
            },
            1,
        );
        assert!(
            !b.take(ReviewId {
                epoch: 1,
                number: 1
            }),
            "given back to another review: no effect"
        );
        b.give_back(
            ReviewId {
                epoch: 1,
                number: 1,
            },
            1,
        );
        assert!(b.take(ReviewId {
            epoch: 1,
            number: 1
        }));
    }
}
