//! Messages of the AdvisorAgent (G2–G5) and its reports to the Supervisor (F1–F3).

use std::time::Duration;

use actix::Message as ActixMessage;
use serde::{Deserialize, Serialize};

use crate::model::{ChatMessage, ModelError, Usage};
use crate::review::MaintenanceKind;

/// Queues one rendered delta (one turn) for review.
#[derive(Debug, Clone, ActixMessage)]
#[rtype(result = "()")]
pub struct QueueDelta {
    /// The epoch the delta was rendered in; stale ones are ignored.
    pub epoch: u64,
    /// `### Session update\n\n` + the rendered delta.
    pub prompt: String,
}

/// Resolves once the backlog is below `threshold`, or at once while the advisor is failing
/// or paused (S1, S2), or when waiters are released; says which. The time bound (30 s for
/// S1, the catch-up block's for D5) is the caller's.
#[derive(Debug, Clone, Copy, ActixMessage)]
#[rtype(result = "BacklogWait")]
pub struct AwaitBacklog {
    /// Wait until the backlog is below this.
    pub threshold: usize,
}

/// How a backlog wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BacklogWait {
    /// The backlog fell below the threshold.
    Drained,
    /// The advisor is failing (a retry pending, or the backlog dropped after repeated
    /// failures) or paused (S2).
    Failing,
    /// Waiters were released: abort, reset, dispose or a restart.
    Released,
}

/// Wakes every backlog waiter (abort, reset, dispose).
#[derive(Debug, Clone, Copy, ActixMessage)]
#[rtype(result = "()")]
pub struct ReleaseWaiters;

/// Starts a new epoch: drops the context, the backlog and the in-flight review's effects
/// (R1). Usage already spent stays counted.
#[derive(Debug, Clone, Copy, ActixMessage)]
#[rtype(result = "()")]
pub struct ResetAdvisor {
    /// The new epoch.
    pub epoch: u64,
}

/// A review ended (agent → supervisor).
#[derive(Debug, Clone, ActixMessage)]
#[rtype(result = "()")]
pub struct ReviewFinished {
    /// The epoch it ran in.
    pub epoch: u64,
    /// Success, or the classified failure.
    pub result: Result<(), ModelError>,
}

/// Retry the failed batch after this delay (F1).
#[derive(Debug, Clone, Copy, ActixMessage)]
#[rtype(result = "()")]
pub struct RetryReview {
    /// How long to wait first.
    pub after: Duration,
}

/// Drops the backlog after three strikes (F2); answers how many turns were dropped.
#[derive(Debug, Clone, Copy, ActixMessage)]
#[rtype(result = "usize")]
pub struct DropBacklog;

/// Pauses (F3) or resumes reviews.
#[derive(Debug, Clone, ActixMessage)]
#[rtype(result = "()")]
pub struct SetPaused {
    /// `Some(reason)` pauses, `None` resumes.
    pub reason: Option<String>,
}

/// A line for the user from the agent, which has no host recipient of its own (agent →
/// supervisor → host `Notice`); e.g. a WATCHDOG.md warning (W3).
#[derive(Debug, Clone, ActixMessage)]
#[rtype(result = "()")]
pub struct NoticeRaised {
    /// The text.
    pub text: String,
}

/// Asks the agent for its part of the status.
#[derive(Debug, Clone, Copy, ActixMessage)]
#[rtype(result = "AgentStatus")]
pub struct GetAgentStatus;

/// Asks the agent for its transcript (C4).
#[derive(Debug, Clone, Copy, ActixMessage)]
#[rtype(result = "String")]
pub struct DumpContext {
    /// Full dump with system prompt, tools, thinking and tool results.
    pub raw: bool,
}

/// The agent's part of the status (C3).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentStatus {
    /// Turns not yet reviewed or dropped.
    pub backlog: usize,
    /// Estimated context tokens.
    pub context_tokens: u64,
    /// The model's window.
    pub context_window: u64,
    /// Lifetime usage (survives resets and re-primes, G4).
    pub lifetime: Usage,
    /// Model calls made.
    pub model_calls: u64,
    /// Reviews completed.
    pub reviews: u64,
    /// Turns dropped after repeated failures (F2).
    pub dropped_turns: u64,
    /// Context re-primes (G5).
    pub reprimes: u64,
    /// Context compactions: a model-written summary replaced the older history (G5).
    #[serde(default)]
    pub compactions: u64,
    /// Promotions to the larger-window model (G5).
    #[serde(default)]
    pub promotions: u64,
    /// The model the agent calls now (the promoted one after a promotion).
    #[serde(default)]
    pub model: Option<String>,
    /// Its thinking level.
    #[serde(default)]
    pub thinking: Option<String>,
    /// Why reviews are paused, if they are.
    pub paused: Option<String>,
    /// Whether a retry is pending after a failure.
    pub failing: bool,
}

/// One line of the advisor's audit transcript (G7): something that happened to its context,
/// with the epoch and review it happened in (agent → AuditLog).
#[derive(Debug, Clone, PartialEq, Serialize, ActixMessage)]
#[rtype(result = "()")]
#[serde(rename_all = "camelCase")]
pub struct AppendAudit {
    /// The epoch (R1); a reset starts a new one.
    pub epoch: u64,
    /// The review it belongs to.
    pub review: u64,
    /// Milliseconds since the Unix epoch when it happened.
    pub at_ms: u64,
    /// What happened.
    #[serde(flatten)]
    pub event: AuditEvent,
}

/// What an [`AppendAudit`] records.
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

/// Resolves once every audit entry received so far is written (or failed); used before
/// dispose returns (R2, G7).
#[derive(Debug, Clone, Copy, ActixMessage)]
#[rtype(result = "()")]
pub struct FlushAudit;
