//! The review engine's part of the advisor's status (C3): its backlog, context, usage and
//! failure state, read off the engine's state.

use serde::{Deserialize, Serialize};

use crate::model::{ModelClient, Usage};
use crate::review::fallback::FallbackStatus;
use crate::review::{AdvisorContext, ReviewState, ReviewTotals, ToolSpendCounts};

/// The agent's part of the status (C3).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentStatus {
    /// Turns not yet reviewed or dropped.
    pub backlog: usize,
    /// How long the review (or ask) running now has run, in whole seconds; absent while
    /// none runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running_secs: Option<u64>,
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
    /// Stale tool results evicted (P4).
    #[serde(default)]
    pub evictions: u64,
    /// Tokens those evictions saved (P4).
    #[serde(default)]
    pub evicted_tokens: u64,
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
    /// Consecutive failures now (F2).
    #[serde(default)]
    pub consecutive_failures: u32,
    /// Questions the model was asked (G8).
    #[serde(default)]
    pub consults: u64,
    /// Their usage (part of `lifetime`).
    #[serde(default)]
    pub consult_usage: Usage,
    /// Advisor turns withheld by the output quarantine (P5).
    #[serde(default)]
    pub quarantines: u64,
    /// The backup model in use instead of the advisor's own, and why (P6).
    #[serde(default)]
    pub fallback: Option<FallbackStatus>,
    /// Switches to a backup model so far (P6).
    #[serde(default)]
    pub fallbacks: u64,
    /// What the tool budget refused and the re-reads not paid for (SP1, SP2): flattened,
    /// `budgetRefused`, `rereadsSaved` and `rereadBytesSaved` beside the fields above.
    #[serde(flatten)]
    pub tool_spend: ToolSpendCounts,
    /// What `check_in` did (SP7): flattened, `checkIns` and `turnsSkipped` beside the
    /// fields above. The supervisor fills it in; the agent only runs the reviews.
    #[serde(flatten)]
    pub check_in: crate::review::check_in::CheckInCounts,
    /// The tool calls of its reviews and asks (SP5).
    #[serde(default)]
    pub tool_calls: crate::spend::ToolCallCounts,
}

impl AgentStatus {
    /// What this agent spent (SP5): its lifetime usage, calls and reviews, with no ratio yet.
    pub fn spend(&self) -> crate::spend::ratio::AdvisorSpend {
        crate::spend::ratio::AdvisorSpend::from_parts(
            self.model_calls,
            self.reviews,
            &self.lifetime,
            &self.tool_calls,
        )
    }

    /// The status of an agent with this review `state`, `totals`, `context` and `model`.
    pub(crate) fn of(
        state: &ReviewState,
        totals: &ReviewTotals,
        context: &AdvisorContext,
        model: &dyn ModelClient,
    ) -> Self {
        let info = model.info();
        let m = &totals.maintenance;
        Self {
            backlog: state.backlog(),
            running_secs: state
                .running_for(tokio::time::Instant::now())
                .map(|d| d.as_secs()),
            context_tokens: context.estimate_with(""),
            context_window: info.context_window,
            lifetime: totals.lifetime,
            model_calls: totals.model_calls,
            reviews: totals.reviews,
            dropped_turns: state.dropped_turns(),
            reprimes: m.reprimes,
            compactions: m.compactions,
            promotions: m.promotions,
            evictions: m.evictions,
            evicted_tokens: m.evicted_tokens,
            model: Some(info.id),
            thinking: Some(model.thinking().as_str().to_string()),
            paused: state.paused().map(str::to_string),
            failing: state.failing(),
            consecutive_failures: state.consecutive_failures(),
            consults: totals.consults,
            consult_usage: totals.consult_usage,
            quarantines: totals.quarantines,
            fallback: None,
            fallbacks: 0,
            tool_spend: totals.tool_spend,
            tool_calls: totals.tool_calls,
            check_in: Default::default(),
        }
    }
}
