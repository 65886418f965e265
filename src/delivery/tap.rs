//! The advice tap: a copy of every `advise` call and how the router answered it, for a host
//! that measures the advisor (`advisor eval`, EV3) rather than only taking its deliveries.
//! Nothing is sent when no tap is set; the router never waits on it.

use std::time::Instant;

use tokio::sync::mpsc::UnboundedSender;

use super::RaiseOutcome;
use crate::domain::advice::Advisory;

/// One `advise` call as the router saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct RaisedAdvice {
    /// The note as raised (before any severity cap), with the advisor that raised it.
    pub advisory: Advisory,
    /// The number of the review that raised it.
    pub review: u64,
    /// How the router answered: recorded, held, delivered, deferred or dropped with a reason.
    pub outcome: RaiseOutcome,
    /// When the router took it.
    pub at: Instant,
}

/// Where the router sends its copies: a host's channel, never awaited.
pub type AdviceTap = UnboundedSender<RaisedAdvice>;
