//! What the review engine records in the advisor's audit transcript (G7).

use serde::Serialize;

use super::context::MaintenanceKind;
use crate::model::{ChatMessage, StopReason, Usage};

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
    /// The model answered and its turn was appended to the context, with what the call
    /// cost (G4, P9).
    Reply {
        /// The assistant message as the context keeps it.
        message: ChatMessage,
        /// The model that answered.
        model: String,
        /// The call's usage.
        usage: Usage,
        /// Why it stopped.
        stop: StopReason,
    },
    /// A model call that added nothing to the context but cost something (G4, P9): a
    /// compaction's summary call, or a failed call whose error carried usage.
    Spend {
        /// The model called.
        model: String,
        /// Its usage.
        usage: Usage,
        /// The answer's text (a summary), empty for a failed call.
        text: String,
        /// The failure, for a failed call.
        error: Option<String>,
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
