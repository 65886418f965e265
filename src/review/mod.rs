//! The review engine (SPEC §4, §5): plain code the AdvisorAgent wraps.
//!
//! - [`cadence`]: which boundaries an advisor reviews and what it holds between them (CA1–CA4);
//! - [`check_in`]: the advisor scheduling its next review (SP7);
//! - [`queue`]: the deltas waiting for review and their coalescing into batches (G2);
//! - [`failure`]: the failure policy (F1–F3, P7) and its notices;
//! - [`fallback`]: the backup reviewer, its cooldowns and revert (P6);
//! - [`state`]: the queue, the failing and paused flags, backlog waiters and questions,
//!   with the policy deciding what a failure does to them (S1, S2, G8);
//! - [`context`]: the advisor's context, its estimate and the compaction cut (G5);
//! - [`reviewer`]: the [`Reviewer`] running one batch against a model: tool loop (G3),
//!   maintenance (G5), usage (G4), talking outward through [`ReviewPort`];
//! - [`quarantine`]: the output quarantine of an advisor turn (P5);
//! - [`repeat`]: the repeated-call guard of a review (P2);
//! - [`tool_spend`]: the tool budget of a review and the spend counters (SP1, SP2);
//! - [`rereads`]: the calls whose results the context holds, for re-reads not paid (SP2);
//! - [`ask`]: consulting the advisor (G8);
//! - [`spend`]: the tool calls of reviews (SP5) and the silent-advisor notice (SP4);
//! - [`judge_gate`]: the optional triage gate of work-in-progress updates (SP9);
//! - [`audit`]: what is recorded in the advisor's audit transcript (G7);
//! - [`transcript_file`]: the advisor's transcript file in oh-my-pi's session format (P9);
//! - [`texts`]: the model-facing texts, data files under `config/prompts/`.

pub mod ask;
pub mod audit;
pub mod cadence;
pub mod check_in;
pub mod context;
pub mod failure;
pub mod fallback;
pub mod judge_gate;
pub mod quarantine;
pub mod queue;
pub mod repeat;
pub mod rereads;
pub mod reviewer;
pub mod state;
pub mod status;
pub mod texts;
pub mod transcript_file;

pub use crate::spend::ToolSpendCounts;
pub use ask::{AskEnd, AskError};
pub use audit::AuditEvent;
pub use context::{AdvisorContext, MaintenanceCounts};
pub use failure::FailurePolicy;
pub use queue::{PendingReviews, ReviewPrompt};
pub use reviewer::{ReviewEngine, ReviewLimits, ReviewPort, ReviewRun, Reviewer, ToolReply};
pub use state::{BacklogWait, FailureStep, ReviewState, Work};
pub use status::AgentStatus;

use crate::model::Usage;

/// What the reviews of one advisor added up to (G4, C3); survives resets and re-primes.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ReviewTotals {
    /// Usage of every model call, reviews, summaries and asks (G4).
    pub lifetime: Usage,
    /// Model calls made.
    pub model_calls: u64,
    /// Reviews completed.
    pub reviews: u64,
    /// Maintenance events (G5).
    pub maintenance: MaintenanceCounts,
    /// Questions the model was asked (G8), answered or failed.
    pub consults: u64,
    /// Usage of the asks, answered or not (part of `lifetime`).
    pub consult_usage: Usage,
    /// Advisor turns withheld by the output quarantine (P5).
    pub quarantines: u64,
    /// What the tool budget refused and the re-reads not paid for (SP1, SP2).
    pub tool_spend: ToolSpendCounts,
    /// The tool calls of every run (SP5).
    pub tool_calls: crate::spend::ToolCallCounts,
}

impl ReviewTotals {
    /// Counts what a run spent; `ask` when it answered a question.
    pub fn add_run(&mut self, run: &ReviewRun, ask: bool) {
        self.lifetime.add(&run.usage);
        self.model_calls += run.calls;
        self.tool_calls.add(&run.tool_calls);
        self.maintenance.add(&run.maintenance);
        self.tool_spend.add(&run.tool_spend);
        if ask {
            self.consults += 1;
            self.consult_usage.add(&run.usage);
        }
    }
}
