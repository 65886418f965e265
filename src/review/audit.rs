//! What the review engine records in the advisor's audit transcript (G7).

use serde::Serialize;

use super::context::MaintenanceKind;
use crate::model::ChatMessage;

/// One thing that happened to the advisor's context; the actor stamps it with the epoch,
/// review and time and sends it to the audit log.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum AuditEvent {
    /// A message was appended to the advisor's context.
    Message {
        /// The message.
        message: ChatMessage,
    },
    /// Context maintenance ran (G5).
    #[serde(rename_all = "camelCase")]
    Maintenance {
        /// Which step.
        kind: MaintenanceKind,
        /// `threshold` (proactive) or `overflow` (reactive).
        trigger: String,
        /// The model in use afterwards.
        model: String,
        /// Messages in the context afterwards.
        messages: usize,
        /// The summary that opens the compacted context (compaction only).
        #[serde(skip_serializing_if = "Option::is_none")]
        summary: Option<String>,
    },
    /// Stale tool results were replaced by placeholders before a review (P4).
    #[serde(rename_all = "camelCase")]
    Eviction {
        /// Results replaced.
        evicted: u64,
        /// Tokens saved.
        tokens_saved: u64,
    },
    /// A review attempt was thrown away: the messages it appended since its update are no
    /// longer in the context (G5 overflow, F1 failure).
    #[serde(rename_all = "camelCase")]
    AttemptDiscarded {
        /// The attempt's number within the review.
        attempt: u32,
        /// Why.
        error: String,
    },
}
