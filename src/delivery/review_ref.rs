//! Which review, and whose (RO13, D8, D9, RO22): the one value a review is known by from
//! the agent to the router, and the two ids the router tells reviews and session updates
//! apart by.

use crate::domain::advice::AdvisorLabel;

/// A review as the router counts it: its epoch (R1) and its number within the advisor's
/// reviews. Notes are budgeted (D8) and deferred (P1) per review.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ReviewId {
    /// The epoch the review ran in.
    pub epoch: u64,
    /// The review's number.
    pub number: u64,
}

/// The session update a review covers, as the router tells updates apart (RO22): the epoch
/// and how many primary turn ends the router had heard of in the session when the review
/// started. Every advisor reviews the delta of a turn end after the router hears of it (the
/// supervisor tells the router first), so reviews started between the same two turn ends,
/// in the same epoch, cover the same update.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct UpdateId {
    /// The epoch.
    pub epoch: u64,
    /// The primary turn ends heard of in the session before it.
    pub turns: u64,
}

/// One review of one advisor: who raised what it raises (RO13) and which review it is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReviewRef {
    /// The named advisor whose review it is (RO13); `None`: the unnamed advisor (RO12).
    pub advisor: Option<AdvisorLabel>,
    /// The review.
    pub id: ReviewId,
}

impl ReviewRef {
    /// Review `number` of `epoch` of `advisor`.
    pub fn new(advisor: Option<AdvisorLabel>, epoch: u64, number: u64) -> Self {
        Self {
            advisor,
            id: ReviewId { epoch, number },
        }
    }

    /// The review's epoch.
    pub fn epoch(&self) -> u64 {
        self.id.epoch
    }

    /// The review's number.
    pub fn number(&self) -> u64 {
        self.id.number
    }

    /// The advisor's key in the router: its slug, `None` for the unnamed advisor.
    pub fn owner(&self) -> Option<std::sync::Arc<str>> {
        self.advisor.as_ref().map(|l| l.slug.clone())
    }
}
