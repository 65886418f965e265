//! One session's gate as plain state: what a proposed call gets before any model call
//! (GT1, GT2, GT6), what a model's answer or failure becomes (GT4, GT5), the breaker that
//! turns a run of denials into asks or notes (GT7), and the counters status shows (GT8).
//! The supervisor asks the model in between, off its mailbox.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use crate::model::Usage;
use crate::settings::{GateFailMode, GateMode};

use super::classify::{ActionKey, ActionReading};
use super::verdict::{GateAnswer, GateError, GateRun};
use super::{GateDecision, GateRisk, GateVerdict, VerdictSource};

/// Consecutive denials the breaker lets stand (GT7); the next one is escalated.
pub const BREAKER_CONSECUTIVE: u32 = 3;

/// The breaker's window of recent verdicts (GT7).
pub const BREAKER_WINDOW: usize = 50;

/// Denials within [`BREAKER_WINDOW`] the breaker lets stand (GT7); the next one is
/// escalated.
pub const BREAKER_WINDOW_DENIALS: usize = 10;

/// Decisions the session's cache keeps (GT6); the oldest goes first.
pub const CACHE_ENTRIES: usize = 256;

/// The gate's counters and its model's spend, apart from the advisors' (GT8, SP5).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ActionGateCounts {
    /// Calls proposed to the gate.
    pub proposed: u64,
    /// Calls that passed because the gate is off.
    pub ungated: u64,
    /// Calls the classifier passed without a model call (`risky`).
    pub passed: u64,
    /// Calls of the gate's model.
    pub model_requests: u64,
    /// Calls that failed, timed out or answered nonsense (each went to the fail mode).
    pub model_failures: u64,
    /// Verdicts taken from the session's cache.
    pub cache_hits: u64,
    /// Verdicts `allow` (the classifier's passes excluded).
    pub allowed: u64,
    /// Verdicts `deny`.
    pub denied: u64,
    /// Verdicts `ask`.
    pub asked: u64,
    /// Verdicts the fail mode gave.
    pub fail_mode: u64,
    /// Denials the breaker escalated to an ask or a note.
    pub breaker: u64,
    /// The gate model's input tokens (cached or not).
    pub input_tokens: u64,
    /// The gate model's output tokens.
    pub output_tokens: u64,
    /// The gate model's cost in dollars; `None` when unpriced.
    pub cost: Option<f64>,
}

impl ActionGateCounts {
    /// Adds what one model call spent.
    pub fn spend(&mut self, usage: &Usage) {
        self.input_tokens += usage.prompt_tokens();
        self.output_tokens += usage.output;
        if usage.cost > 0.0 {
            self.cost = Some(self.cost.unwrap_or(0.0) + usage.cost);
        }
    }
}

/// What a host's call and the settings allow the gate to answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GatePolicy {
    /// `advisor.gate` in effect.
    pub mode: GateMode,
    /// `advisor.gateFailMode` in effect; `None`: the host's default.
    pub fail_mode: Option<GateFailMode>,
    /// Whether the host can ask a person (GT5, GT7).
    pub can_ask: bool,
    /// Whether there is a model to ask.
    pub has_model: bool,
}

impl GatePolicy {
    fn fail_mode(&self) -> GateFailMode {
        GateFailMode::effective(self.fail_mode, self.can_ask)
    }
}

/// What [`GateState::begin`] decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GateStep {
    /// The verdict, without a model call.
    Decided(GateVerdict),
    /// Ask the model, then hand its run to [`GateState::finish`].
    AskModel,
}

/// One session's gate: cache, breaker and counters.
#[derive(Debug, Clone, Default)]
pub struct GateState {
    cache: VecDeque<(ActionKey, GateAnswer)>,
    consecutive: u32,
    window: VecDeque<bool>,
    counts: ActionGateCounts,
}

impl GateState {
    /// The counters so far.
    pub fn counts(&self) -> ActionGateCounts {
        self.counts
    }

    /// The first step for a call read as `reading` (GT1, GT2, GT6): passed when the gate is
    /// off or (under `risky`) the classifier found nothing; the cached decision of the same
    /// normalised action; the fail mode without a model; else ask the model.
    pub fn begin(&mut self, reading: &ActionReading, policy: GatePolicy) -> GateStep {
        self.counts.proposed += 1;
        match policy.mode {
            GateMode::Off => {
                self.counts.ungated += 1;
                return GateStep::Decided(verdict(
                    GateDecision::Allow,
                    GateRisk::Low,
                    "The gate is off.",
                    VerdictSource::Classifier,
                ));
            }
            GateMode::Risky if reading.risks.is_empty() => {
                self.counts.passed += 1;
                return GateStep::Decided(verdict(
                    GateDecision::Allow,
                    GateRisk::Low,
                    "Nothing risky found by the local check.",
                    VerdictSource::Classifier,
                ));
            }
            _ => {}
        }
        if let Some(answer) = self.cached(&reading.key) {
            self.counts.cache_hits += 1;
            return GateStep::Decided(self.settle(answer, VerdictSource::Cache, policy));
        }
        if !policy.has_model {
            return GateStep::Decided(self.fail(&GateError::NoModel, policy));
        }
        GateStep::AskModel
    }

    /// The verdict of `step` when the model is not asked (GT5): the one decided, or, when
    /// the model was to be asked and there is none, the fail mode's.
    pub fn without_model(
        &mut self,
        step: GateStep,
        key: ActionKey,
        policy: GatePolicy,
    ) -> GateVerdict {
        match step {
            GateStep::Decided(verdict) => verdict,
            GateStep::AskModel => {
                let run = GateRun {
                    outcome: Err(GateError::NoModel),
                    usage: Usage::default(),
                };
                self.finish(key, &run, policy)
            }
        }
    }

    /// The verdict after the model's `run` for the action of `key` (GT4, GT5): its answer,
    /// cached for the session, through the breaker; a failure goes to the fail mode.
    pub fn finish(&mut self, key: ActionKey, run: &GateRun, policy: GatePolicy) -> GateVerdict {
        self.counts.model_requests += 1;
        self.counts.spend(&run.usage);
        match &run.outcome {
            Ok(answer) => {
                if self.cache.len() >= CACHE_ENTRIES {
                    self.cache.pop_front();
                }
                self.cache.push_back((key, answer.clone()));
                self.settle(answer.clone(), VerdictSource::Model, policy)
            }
            Err(error) => {
                self.counts.model_failures += 1;
                tracing::warn!(%error, "action gate failed");
                self.fail(error, policy)
            }
        }
    }

    fn cached(&self, key: &ActionKey) -> Option<GateAnswer> {
        self.cache
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, a)| a.clone())
    }

    /// What the fail mode gives after `error` (GT5); a `closed` denial still counts for
    /// the breaker but is never turned into an allow.
    fn fail(&mut self, error: &GateError, policy: GatePolicy) -> GateVerdict {
        self.counts.fail_mode += 1;
        let mode = policy.fail_mode();
        let reason = crate::texts::fill(
            GATE_TEXTS.get(match mode {
                GateFailMode::Open => "failOpen",
                GateFailMode::Closed => "failClosed",
                GateFailMode::Ask => "failAsk",
            }),
            &[("error", &error.to_string())],
        );
        match mode {
            GateFailMode::Open => {
                self.counts.allowed += 1;
                verdict(
                    GateDecision::Allow,
                    GateRisk::Medium,
                    &reason,
                    VerdictSource::FailMode,
                )
            }
            GateFailMode::Ask => {
                self.counts.asked += 1;
                verdict(
                    GateDecision::Ask,
                    GateRisk::Medium,
                    &reason,
                    VerdictSource::FailMode,
                )
            }
            GateFailMode::Closed => self.deny(
                GateRisk::Medium,
                reason,
                VerdictSource::FailMode,
                policy,
                false,
            ),
        }
    }

    /// `answer` as the verdict, a denial through the breaker (GT7).
    fn settle(
        &mut self,
        answer: GateAnswer,
        source: VerdictSource,
        policy: GatePolicy,
    ) -> GateVerdict {
        match answer.decision {
            GateDecision::Allow => {
                self.record(false);
                self.counts.allowed += 1;
            }
            GateDecision::Ask => self.counts.asked += 1,
            GateDecision::Deny => {
                let may_note = policy.fail_mode() != GateFailMode::Closed;
                return self.deny(answer.risk, answer.reason, source, policy, may_note);
            }
        }
        GateVerdict {
            decision: answer.decision,
            risk: answer.risk,
            reason: answer.reason,
            source,
        }
    }

    /// Records an allow (`false`) or a denial (`true`) in the breaker's memory.
    fn record(&mut self, denied: bool) {
        if denied {
            self.consecutive += 1;
        } else {
            self.consecutive = 0;
        }
        if self.window.len() >= BREAKER_WINDOW {
            self.window.pop_front();
        }
        self.window.push_back(denied);
    }

    /// A denial (GT7): it stands until the breaker trips — more than
    /// [`BREAKER_CONSECUTIVE`] in a row or more than [`BREAKER_WINDOW_DENIALS`] of the
    /// last [`BREAKER_WINDOW`] — and is then escalated: to an ask where the host can ask,
    /// else (when `may_note`) to an allow that says what the gate would have denied; never
    /// silently.
    fn deny(
        &mut self,
        risk: GateRisk,
        reason: String,
        source: VerdictSource,
        policy: GatePolicy,
        may_note: bool,
    ) -> GateVerdict {
        self.record(true);
        let in_window = self.window.iter().filter(|d| **d).count();
        let tripped = self.consecutive > BREAKER_CONSECUTIVE || in_window > BREAKER_WINDOW_DENIALS;
        if !tripped || !(policy.can_ask || may_note) {
            self.counts.denied += 1;
            return verdict(GateDecision::Deny, risk, &reason, source);
        }
        self.counts.breaker += 1;
        let vars = [
            ("consecutive", self.consecutive.to_string()),
            ("window", in_window.to_string()),
            ("of", self.window.len().to_string()),
            ("reason", reason),
        ];
        let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
        if policy.can_ask {
            self.counts.asked += 1;
            let text = crate::texts::fill(GATE_TEXTS.get("breakerAsk"), &vars);
            verdict(GateDecision::Ask, risk, &text, VerdictSource::Breaker)
        } else {
            self.counts.allowed += 1;
            let text = crate::texts::fill(GATE_TEXTS.get("breakerNote"), &vars);
            verdict(GateDecision::Allow, risk, &text, VerdictSource::Breaker)
        }
    }
}

/// The gate's sentences (`config/prompts/gate-notices.txt`).
pub(crate) const GATE_TEXTS: crate::texts::Table =
    crate::texts::Table(include_str!("../../config/prompts/gate-notices.txt"));

fn verdict(
    decision: GateDecision,
    risk: GateRisk,
    reason: &str,
    source: VerdictSource,
) -> GateVerdict {
    GateVerdict {
        decision,
        risk,
        reason: reason.to_string(),
        source,
    }
}

#[cfg(test)]
mod tests;
