//! Messages of the DeliveryRouter (D-rules).

use actix::Message as ActixMessage;

use crate::delivery::{DeliveryCounts, RaiseOutcome};
use crate::messages::advice::Advisory;

/// The advisor called `advise` (mid-review, G3).
#[derive(Debug, Clone, ActixMessage)]
#[rtype(result = "RaiseOutcome")]
pub struct RaiseAdvice {
    /// The epoch of the review.
    pub epoch: u64,
    /// The review's number.
    pub review: u64,
    /// The advice.
    pub advisory: Advisory,
}

/// Starts a new delivery epoch (R1).
#[derive(Debug, Clone, Copy, ActixMessage)]
#[rtype(result = "()")]
pub struct ResetDelivery {
    /// The new epoch.
    pub epoch: u64,
}

/// Enables or disables delivery (C1, R2).
#[derive(Debug, Clone, Copy, ActixMessage)]
#[rtype(result = "()")]
pub struct SetDeliveryEnabled {
    /// Whether delivery is on.
    pub enabled: bool,
}

/// Asks for the router's counters and latch.
#[derive(Debug, Clone, Copy, ActixMessage)]
#[rtype(result = "DeliveryStatus")]
pub struct GetDeliveryStatus;

/// The router's part of the status.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeliveryStatus {
    /// Outcome counters (D10).
    pub counts: DeliveryCounts,
    /// Whether the user-interrupt latch is set (D6).
    pub suppressed: bool,
}
