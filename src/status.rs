//! The advisor's status (C3).

use serde::{Deserialize, Serialize};

pub use crate::delivery::{DeliveryCounts, DeliveryStatus, DropReason};
use crate::domain::advice::Advisory;
pub use crate::review::check_in::CheckInCounts;
pub use crate::review::fallback::FallbackStatus;
pub use crate::review::{AgentStatus, ToolSpendCounts};
use crate::settings::{DeliveryPolicy, ReviewMode, SyncBacklog};
pub use crate::spend::ceiling::CeilingAction;
pub(crate) use crate::spend::ceiling::SpendCeiling;
pub(crate) use crate::spend::ratio::PrimaryTally;
pub use crate::spend::ratio::{AdvisorSpend, PrimarySpend, RatioBasis, SpendRatio};
pub use crate::spend::ratio::{CeilingState, CeilingStatus};
pub use crate::spend::ToolCallCounts;
use crate::texts::{fill, Table};

/// The spend part of the status (SP5): the advisors' total and the primary's.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionSpend {
    /// Every advisor of the session together, with the ratio to the primary.
    pub advisors: AdvisorSpend,
    /// The primary's spend; `None` when the session's messages carry no usage.
    pub primary: Option<PrimarySpend>,
    /// The triage gate's counters and the judge's spend (SP9); `None` while the gate is
    /// off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<crate::review::judge_gate::GateCounts>,
    /// The action gate's counters and its model's spend (GT8), apart from the advisors';
    /// `None` while the gate is off and has seen no call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action_gate: Option<crate::gate::ActionGateCounts>,
}

/// What `/advisor status` reports.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdvisorStatus {
    /// Whether the advisor is enabled.
    pub enabled: bool,
    /// The advisor model, when one is assigned.
    pub model: Option<String>,
    /// Its thinking level.
    pub thinking: Option<String>,
    /// The delivery policy.
    pub policy: DeliveryPolicy,
    /// Failed reviews so far.
    pub failures: u64,
    /// Consecutive failures now.
    pub consecutive_failures: u32,
    /// Why the advisor is paused, if it is (F3).
    pub paused: Option<String>,
    /// Whether the user-interrupt latch is set (D6).
    pub suppressed: bool,
    /// Delivery outcome counters (D10).
    pub deliveries: DeliveryCounts,
    /// The notes held for reconfirmation now, oldest first (D9).
    #[serde(default)]
    pub held_notes: Vec<Advisory>,
    /// The agent's backlog, context and lifetime usage.
    pub agent: AgentStatus,
    /// Whether some of the lifetime usage is estimated (characters / 4) because a provider
    /// reported none or a failed call's usage was guessed (G4).
    #[serde(default)]
    pub usage_estimated: bool,
    /// The provider's calls across every session of the process (A6), when the session
    /// runs on a shared runtime and has called the provider.
    #[serde(default)]
    pub provider_calls: Option<crate::model::limit::CallCounts>,
    /// The unnamed advisor's cadence (CA12); with a roster, each named advisor has its own
    /// in [`NamedAdvisorStatus::cadence`] and this one is the default.
    #[serde(default)]
    pub cadence: CadenceStatus,
    /// One entry per named advisor of the roster, in roster order (RO19); empty for a
    /// session without a roster (RO12). The fields above are then the session's totals.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub advisors: Vec<NamedAdvisorStatus>,
    /// What the advisors spent beside the primary (SP5).
    #[serde(default)]
    pub spend: SessionSpend,
}

/// One advisor's review cadence as status shows it (CA1, CA2, CA9, CA12).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CadenceStatus {
    /// Its review mode in effect (CA1).
    pub review_mode: ReviewMode,
    /// Its review interval in effect (CA2).
    pub review_interval: u64,
    /// Its catch-up in effect (CA9).
    pub sync_backlog: SyncBacklog,
    /// Updates captured and held for its next scheduled review (CA3); never backlog.
    pub held_updates: usize,
    /// Eligible updates counted since the conversation began (CA2, CA8).
    pub eligible_updates: u64,
    /// Held updates dropped, oldest first, past the cap of 512 updates or 8 MiB since the
    /// conversation began (CA3): never silent.
    #[serde(default)]
    pub dropped_updates: u64,
}

impl CadenceStatus {
    /// Whether it is the default cadence with nothing held (status then says nothing of it).
    pub fn is_plain(&self) -> bool {
        let plain = CadenceStatus {
            sync_backlog: self.sync_backlog,
            eligible_updates: self.eligible_updates,
            ..CadenceStatus::default()
        };
        *self == plain && self.sync_backlog != SyncBacklog::Strict
    }

    /// Its status line `form` (CA12).
    fn render(&self, form: &'static str, out: &mut String) {
        let cadence = crate::settings::describe_cadence(self.review_mode, self.review_interval);
        let vars = [
            ("cadence", cadence.as_str()),
            ("sync", &self.sync_backlog.to_string()),
            ("held", &self.held_updates.to_string()),
            ("eligible", &self.eligible_updates.to_string()),
        ];
        line(out, form, &vars);
        if self.dropped_updates > 0 {
            if form == "advisorCadence" {
                out.push_str("    ");
            }
            let dropped = self.dropped_updates.to_string();
            line(out, "cadenceDropped", &[("dropped", &dropped)]);
        }
    }
}

impl Default for CadenceStatus {
    fn default() -> Self {
        Self {
            review_mode: ReviewMode::Turn,
            review_interval: 1,
            sync_backlog: SyncBacklog::Off,
            held_updates: 0,
            eligible_updates: 0,
            dropped_updates: 0,
        }
    }
}

/// What one named advisor of the roster is doing (RO8, RO19).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum AdvisorState {
    /// Reviewing.
    Running,
    /// Paused by `enabled: false` or `/advisor off NAME`.
    Paused,
    /// The session's advisor is off (`/advisor off`).
    Off,
    /// Its model could not be resolved or built (RO8).
    NoModel,
    /// Its reviews failed and it stopped (F3, P7).
    Failing,
}

/// One named advisor's line of `/advisor status` (RO19).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NamedAdvisorStatus {
    /// The display name (RO7).
    pub name: String,
    /// The slug (RO7).
    pub slug: String,
    /// Its state.
    pub state: AdvisorState,
    /// Why it is paused, failing or has no model, when it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Its model, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Its delivery policy (RO15).
    pub policy: DeliveryPolicy,
    /// Updates its `when` did not match (RO17): held, never eligible (CA4).
    #[serde(default)]
    pub skipped_updates: u64,
    /// Its review cadence, held updates and counter (CA12).
    #[serde(default)]
    pub cadence: CadenceStatus,
    /// Its own delivery counters (D10).
    pub deliveries: DeliveryCounts,
    /// Its backlog, context and lifetime usage.
    pub agent: AgentStatus,
    /// What it spent, and its ratio to the primary (SP5).
    #[serde(default)]
    pub spend: AdvisorSpend,
}

impl AdvisorStatus {
    /// Fills in the spend (SP5) from the agents' parts already taken in and the primary's
    /// figures (`None`: the session's messages carry no usage, the ratios are unknown).
    pub fn add_spend(&mut self, primary: Option<PrimarySpend>) {
        for a in &mut self.advisors {
            a.spend = a.agent.spend().against(primary.as_ref());
        }
        self.spend = SessionSpend {
            advisors: self.agent.spend().against(primary.as_ref()),
            primary,
            gate: self.spend.gate.take(),
            action_gate: self.spend.action_gate.take(),
        };
    }

    /// Takes in the router's part: counters, latch, held notes.
    pub fn add_delivery(&mut self, delivery: DeliveryStatus) {
        self.deliveries = delivery.counts;
        self.suppressed = delivery.suppressed;
        self.held_notes = delivery.held;
    }

    /// Takes in the agent's part. The agent knows the model it calls now (G5 promotion),
    /// and holds the pause and the failure count its policy decides by (F1–F3).
    pub fn add_agent(&mut self, agent: AgentStatus) {
        if agent.model.is_some() {
            self.model = agent.model.clone();
            self.thinking = agent.thinking.clone();
        }
        self.paused = agent.paused.clone();
        self.consecutive_failures = agent.consecutive_failures;
        self.usage_estimated = agent.lifetime.estimated;
        self.agent = agent;
    }

    /// With a roster (RO19): the session's totals of its advisors' agents — usage, calls,
    /// reviews and counts added up, the backlog the largest (S1), context the sum.
    pub fn add_roster_totals(&mut self, agents: &[AgentStatus]) {
        let mut total = AgentStatus::default();
        for a in agents {
            total.backlog = total.backlog.max(a.backlog);
            total.context_tokens += a.context_tokens;
            total.context_window += a.context_window;
            total.lifetime.add(&a.lifetime);
            total.model_calls += a.model_calls;
            total.reviews += a.reviews;
            total.dropped_turns += a.dropped_turns;
            total.reprimes += a.reprimes;
            total.compactions += a.compactions;
            total.promotions += a.promotions;
            total.evictions += a.evictions;
            total.evicted_tokens += a.evicted_tokens;
            total.consults += a.consults;
            total.consult_usage.add(&a.consult_usage);
            total.quarantines += a.quarantines;
            total.fallbacks += a.fallbacks;
            total.tool_spend.add(&a.tool_spend);
            total.check_in.add(&a.check_in);
            total.tool_calls.add(&a.tool_calls);
            total.consecutive_failures = total.consecutive_failures.max(a.consecutive_failures);
            total.failing |= a.failing;
        }
        self.consecutive_failures = total.consecutive_failures;
        self.usage_estimated = total.lifetime.estimated;
        self.agent = total;
    }

    /// Human-readable multi-line rendering (C3); the lines are the data file
    /// `config/prompts/status.txt`. With a roster, one line per advisor and the session's
    /// total take the place of the single advisor's context and usage lines (RO19).
    pub fn render(&self) -> String {
        let mut out = String::new();
        self.render_model(&mut out);
        if self.advisors.is_empty() {
            self.render_agent(&mut out);
        } else {
            self.render_roster(&mut out);
        }
        self.render_tool_spend(&mut out);
        self.render_check_ins(&mut out);
        self.render_spend(&mut out);
        self.render_failures(&mut out);
        self.render_notes(&mut out);
        out
    }

    /// Spend (SP5): the advisors' (each named one's, then the total), the primary's and the
    /// ratio, unknown when the session's messages carry no usage.
    fn render_spend(&self, out: &mut String) {
        for a in &self.advisors {
            let s = &a.spend;
            out.push_str("  ");
            let vars = [
                ("name", a.name.as_str()),
                ("requests", &s.requests.to_string()),
                ("uncached", &s.input_uncached.to_string()),
                ("cached", &s.input_cached.to_string()),
                ("output", &s.output.to_string()),
                ("cost", &cost_text(s.cost)),
                ("perReview", &per_review_text(s.tool_calls_per_review)),
                ("ratio", &crate::spend::ratio::ratio_text(s.ratio.as_ref())),
            ];
            line(out, "spendNamed", &vars);
            ceiling_line(a.spend.ceiling.as_ref(), out);
        }
        let s = &self.spend.advisors;
        let vars = [
            ("requests", s.requests.to_string()),
            ("reviews", s.reviews.to_string()),
            ("uncached", s.input_uncached.to_string()),
            ("cached", s.input_cached.to_string()),
            ("output", s.output.to_string()),
            ("cost", cost_text(s.cost)),
            ("perReview", per_review_text(s.tool_calls_per_review)),
            ("tools", s.tool_calls.to_string()),
            ("advise", s.advise_calls.to_string()),
        ];
        owned_line(out, "spend", &vars);
        match &self.spend.primary {
            Some(p) => {
                let vars = [
                    ("uncached", p.input_uncached.to_string()),
                    ("cached", p.input_cached.to_string()),
                    ("output", p.output.to_string()),
                    ("cost", cost_text(p.cost)),
                    ("messages", p.messages.to_string()),
                ];
                owned_line(out, "primary", &vars);
            }
            None => line(out, "primaryUnknown", &[]),
        }
        line(
            out,
            "ratio",
            &[("ratio", &crate::spend::ratio::ratio_text(s.ratio.as_ref()))],
        );
        ceiling_line(s.ceiling.as_ref(), out);
        self.render_gates(out);
    }

    /// The judge gate's and the action gate's counts and spend, each when it ran.
    fn render_gates(&self, out: &mut String) {
        if let Some(g) = &self.spend.gate {
            let vars = [
                ("held", g.gate_held.to_string()),
                ("passed", g.gate_passed.to_string()),
                ("requests", g.judge_requests.to_string()),
                ("failures", g.judge_failures.to_string()),
                ("input", g.judge_input_tokens.to_string()),
                ("output", g.judge_output_tokens.to_string()),
                ("cost", cost_text(g.judge_cost)),
            ];
            owned_line(out, "gate", &vars);
        }
        if let Some(g) = &self.spend.action_gate {
            let vars = [
                ("proposed", g.proposed.to_string()),
                ("passed", g.passed.to_string()),
                ("allowed", g.allowed.to_string()),
                ("denied", g.denied.to_string()),
                ("asked", g.asked.to_string()),
                ("cached", g.cache_hits.to_string()),
                ("requests", g.model_requests.to_string()),
                ("failures", g.model_failures.to_string()),
                ("input", g.input_tokens.to_string()),
                ("output", g.output_tokens.to_string()),
                ("cost", cost_text(g.cost)),
            ];
            owned_line(out, "actionGate", &vars);
        }
    }

    /// State, model and policy.
    fn render_model(&self, out: &mut String) {
        let named = !self.advisors.is_empty();
        let state = match (self.enabled, &self.model) {
            (false, _) => LINES.get("stateDisabled"),
            (true, None) if !named => LINES.get("stateNoModel"),
            (true, None) => LINES.get("stateEnabled"),
            (true, Some(_)) => LINES.get("stateEnabled"),
        };
        line(out, "state", &[("state", state)]);
        if let Some(model) = &self.model {
            let thinking = self
                .thinking
                .as_deref()
                .unwrap_or(LINES.get("thinkingDefault"));
            line(out, "model", &[("model", model), ("thinking", thinking)]);
        }
        let policy = format!("{:?}", self.policy).to_lowercase();
        line(out, "policy", &[("policy", &policy)]);
        if !named && !self.cadence.is_plain() {
            self.cadence.render("cadence", out);
        }
    }

    /// One line per named advisor (name, model, state, context use, tokens, cost) and the
    /// session's total (RO19).
    fn render_roster(&self, out: &mut String) {
        line(out, "advisors", &[]);
        for a in &self.advisors {
            let state = LINES.get(match a.state {
                AdvisorState::Running => "stateRunning",
                AdvisorState::Paused => "statePaused",
                AdvisorState::Off => "stateOff",
                AdvisorState::NoModel => "stateNoModelNamed",
                AdvisorState::Failing => "stateFailing",
            });
            let state = match &a.reason {
                Some(reason) => fill(
                    LINES.get("stateReason"),
                    &[("state", state), ("reason", reason)],
                ),
                None => state.to_string(),
            };
            // RO23: an entry without a model says so in its state alone.
            let (form, model) = match a.model.as_deref() {
                Some(model) if a.state != AdvisorState::NoModel => ("advisorLine", model),
                _ => ("advisorLineNoModel", ""),
            };
            out.push_str("  ");
            let u = &a.agent.lifetime;
            let vars = [
                ("name", a.name.as_str()),
                ("model", model),
                ("state", state.as_str()),
                (
                    "percent",
                    &percent(a.agent.context_tokens, a.agent.context_window),
                ),
                ("input", &u.input.to_string()),
                ("output", &u.output.to_string()),
                ("cost", &format!("{:.4}", u.cost)),
            ];
            line(out, form, &vars);
            if !a.cadence.is_plain() {
                out.push_str("    ");
                a.cadence.render("advisorCadence", out);
            }
        }
        let u = &self.agent.lifetime;
        let estimated = if self.usage_estimated || u.estimated {
            format!(" {}", LINES.get("estimated"))
        } else {
            String::new()
        };
        let vars = [
            ("estimated", estimated.as_str()),
            ("input", &u.input.to_string()),
            ("output", &u.output.to_string()),
            ("cost", &format!("{:.4}", u.cost)),
        ];
        line(out, "total", &vars);
    }

    /// Backlog, context, maintenance and lifetime usage.
    fn render_agent(&self, out: &mut String) {
        let a = &self.agent;
        line(out, "backlog", &[("backlog", &a.backlog.to_string())]);
        line(
            out,
            "context",
            &[
                ("tokens", &a.context_tokens.to_string()),
                ("window", &a.context_window.to_string()),
                ("percent", &percent(a.context_tokens, a.context_window)),
            ],
        );
        line(
            out,
            "maintenance",
            &[
                ("compactions", &a.compactions.to_string()),
                ("reprimes", &a.reprimes.to_string()),
                ("promotions", &a.promotions.to_string()),
            ],
        );
        if a.evictions > 0 {
            line(
                out,
                "evictions",
                &[
                    ("evictions", &a.evictions.to_string()),
                    ("tokens", &a.evicted_tokens.to_string()),
                ],
            );
        }
        let u = &a.lifetime;
        let estimated = if self.usage_estimated || u.estimated {
            format!(" {}", LINES.get("estimated"))
        } else {
            String::new()
        };
        line(
            out,
            "tokens",
            &[
                ("estimated", &estimated),
                ("input", &u.input.to_string()),
                ("output", &u.output.to_string()),
                ("cacheRead", &u.cache_read.to_string()),
                ("cacheWrite", &u.cache_write.to_string()),
            ],
        );
        let cost = format!("{:.4}", u.cost);
        line(out, "cost", &[("estimated", &estimated), ("cost", &cost)]);
        if a.consults > 0 {
            let c = &a.consult_usage;
            line(
                out,
                "consults",
                &[
                    ("consults", &a.consults.to_string()),
                    ("input", &c.input.to_string()),
                    ("output", &c.output.to_string()),
                    ("cost", &format!("{:.4}", c.cost)),
                ],
            );
        }
    }

    /// What the tool budget refused and the re-reads not paid for (SP1, SP2), when either
    /// did something.
    fn render_tool_spend(&self, out: &mut String) {
        let a = &self.agent.tool_spend;
        if a.budget_refused == 0 && a.rereads_saved == 0 {
            return;
        }
        let vars = [
            ("refused", a.budget_refused.to_string()),
            ("rereads", a.rereads_saved.to_string()),
            ("bytes", a.reread_bytes_saved.to_string()),
        ];
        owned_line(out, "toolSpend", &vars);
    }

    /// The reviews that scheduled their next one and the turn ends that skipped (SP7), when
    /// there were any.
    fn render_check_ins(&self, out: &mut String) {
        let c = &self.agent.check_in;
        if c.check_ins == 0 && c.turns_skipped == 0 {
            return;
        }
        let vars = [
            ("checkIns", c.check_ins.to_string()),
            ("skipped", c.turns_skipped.to_string()),
        ];
        owned_line(out, "checkIns", &vars);
    }

    /// Failures, the backup model (P6), quarantines (P5), the pause and the provider's calls.
    fn render_failures(&self, out: &mut String) {
        let a = &self.agent;
        line(
            out,
            "failures",
            &[
                ("failures", &self.failures.to_string()),
                ("consecutive", &self.consecutive_failures.to_string()),
                ("skipped", &a.dropped_turns.to_string()),
            ],
        );
        if let Some(f) = &a.fallback {
            let vars = [
                ("model", f.model.as_str()),
                ("insteadOf", f.instead_of.as_str()),
                ("reason", f.reason.as_str()),
            ];
            line(out, "fallback", &vars);
        }
        if a.fallbacks > 0 {
            line(out, "fallbacks", &[("fallbacks", &a.fallbacks.to_string())]);
        }
        if a.quarantines > 0 {
            line(
                out,
                "quarantines",
                &[("quarantines", &a.quarantines.to_string())],
            );
        }
        if let Some(reason) = &self.paused {
            line(out, "paused", &[("reason", reason)]);
        }
        if let Some(c) = &self.provider_calls {
            line(
                out,
                "providerCalls",
                &[
                    ("provider", &c.provider),
                    ("inFlight", &c.in_flight.to_string()),
                    ("limit", &c.limit.to_string()),
                    ("waiting", &c.waiting.to_string()),
                ],
            );
        }
    }

    /// Delivery outcomes (D10) and the held notes (D9).
    fn render_notes(&self, out: &mut String) {
        let d = &self.deliveries;
        line(
            out,
            "notes",
            &[
                ("delivered", &d.delivered().to_string()),
                ("aside", &d.aside.to_string()),
                ("steer", &d.steer.to_string()),
                ("wake", &d.wake.to_string()),
                ("card", &d.card.to_string()),
                ("held", &d.held.to_string()),
                ("dropped", &d.dropped_total().to_string()),
                ("pending", &d.pending.to_string()),
            ],
        );
        let dropped = d.dropped_summary();
        if !dropped.is_empty() {
            // D10: why notes were dropped (tooLong, overBudget, duplicate…).
            line(out, "dropped", &[("dropped", &dropped)]);
        }
        if d.wakes_refused > 0 {
            // SP3: the blocker lane's wake limit turned wakes into cards.
            let refused = d.wakes_refused.to_string();
            line(out, "wakesRefused", &[("wakesRefused", &refused)]);
        }
        if !self.held_notes.is_empty() || self.policy == DeliveryPolicy::Reconfirm {
            let count = self.held_notes.len().to_string();
            line(out, "heldNotes", &[("count", &count)]);
            for note in &self.held_notes {
                let severity = note.effective_severity().as_str().to_uppercase();
                let text = crate::delivery::note::display_note(&note.note);
                out.push_str("  ");
                line(out, "heldNote", &[("severity", &severity), ("note", &text)]);
            }
        }
    }
}

/// A cost in dollars with four decimals, or `unknown` without prices (SP5).
fn cost_text(cost: Option<f64>) -> String {
    match cost {
        Some(cost) => format!("${cost:.4}"),
        None => LINES.get("costUnknown").to_string(),
    }
}

/// Tool calls per review with one decimal, or `none yet` before the first review.
fn per_review_text(per_review: Option<f64>) -> String {
    match per_review {
        Some(n) => format!("{n:.1}"),
        None => LINES.get("perReviewNone").to_string(),
    }
}

/// The spend ceiling's line (SP6), when there is a ceiling.
fn ceiling_line(ceiling: Option<&CeilingStatus>, out: &mut String) {
    let Some(c) = ceiling else {
        return;
    };
    let state = match c.state {
        CeilingState::Under => "ceilingUnder",
        CeilingState::AgentEnd => "ceilingAgentEnd",
        CeilingState::Paused => "ceilingPaused",
    };
    let vars = [
        ("limit", format!("{}", c.max_spend_ratio)),
        ("state", LINES.get(state).to_string()),
    ];
    owned_line(out, "ceiling", &vars);
}

/// The share of the window `tokens` take, in percent with one decimal.
fn percent(tokens: u64, window: u64) -> String {
    let share = if window > 0 {
        tokens as f64 * 100.0 / window as f64
    } else {
        0.0
    };
    format!("{share:.1}")
}

/// The lines of the status report (C3).
const LINES: Table = crate::texts::STATUS;

/// Appends the line `key` of the status report, filled, and its newline.
fn line(out: &mut String, key: &'static str, vars: &[(&str, &str)]) {
    out.push_str(&fill(LINES.get(key), vars));
    out.push('\n');
}

/// [`line`] with values the caller formatted.
fn owned_line(out: &mut String, key: &'static str, vars: &[(&str, String)]) {
    let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
    line(out, key, &vars);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ca12_status_shows_an_advisors_cadence_held_updates_and_counter() {
        let mut status = AdvisorStatus {
            enabled: true,
            ..AdvisorStatus::default()
        };
        assert!(
            !status.render().contains("cadence"),
            "the default says nothing"
        );
        status.cadence = CadenceStatus {
            review_mode: ReviewMode::AgentEnd,
            review_interval: 3,
            sync_backlog: SyncBacklog::Strict,
            held_updates: 2,
            eligible_updates: 5,
            dropped_updates: 0,
        };
        let text = status.render();
        assert!(
            text.contains(
                "cadence: agent-end · every 3 eligible updates, catch-up strict; 2 held update(s), \
                 5 eligible update(s) counted"
            ),
            "{text}"
        );
        let json = serde_json::to_value(&status).expect("serializable");
        assert_eq!(json["cadence"]["heldUpdates"], 2);
        assert_eq!(json["cadence"]["eligibleUpdates"], 5);
        assert_eq!(json["cadence"]["reviewMode"], "agent-end");
        assert_eq!(json["cadence"]["syncBacklog"], "strict");
        assert!(!text.contains("dropped past the cap"), "{text}");
    }

    #[test]
    fn ca3_status_tells_of_held_updates_dropped_past_the_cap() {
        let mut status = AdvisorStatus {
            enabled: true,
            ..AdvisorStatus::default()
        };
        status.cadence.dropped_updates = 7;
        let text = status.render();
        assert!(
            text.contains(
                "7 held update(s) dropped past the cap (512 updates or 8 MiB), oldest first"
            ),
            "{text}"
        );
        let json = serde_json::to_value(&status).expect("serializable");
        assert_eq!(json["cadence"]["droppedUpdates"], 7);
    }

    #[test]
    fn c3_every_status_line_is_in_its_file() {
        let keys = [
            "stateDisabled",
            "stateNoModel",
            "stateEnabled",
            "state",
            "model",
            "thinkingDefault",
            "policy",
            "backlog",
            "context",
            "maintenance",
            "evictions",
            "toolSpend",
            "checkIns",
            "estimated",
            "tokens",
            "cost",
            "consults",
            "failures",
            "fallback",
            "fallbacks",
            "quarantines",
            "paused",
            "providerCalls",
            "notes",
            "dropped",
            "wakesRefused",
            "heldNotes",
            "heldNote",
            "advisors",
            "advisorLine",
            "stateRunning",
            "statePaused",
            "stateOff",
            "stateNoModelNamed",
            "stateFailing",
            "stateReason",
            "advisorLineNoModel",
            "cadenceDropped",
            "total",
            "spend",
            "spendNamed",
            "primary",
            "primaryUnknown",
            "ratio",
            "costUnknown",
            "ratioUnknown",
            "ratioCost",
            "ratioTokens",
            "perReviewNone",
            "ceiling",
            "ceilingUnder",
            "ceilingAgentEnd",
            "ceilingPaused",
            "gate",
            "actionGate",
        ];
        for key in keys {
            assert!(
                LINES.lookup(key).is_some(),
                "{key} is missing from status.txt"
            );
        }
    }

    #[test]
    fn c3_a_fresh_status_renders_its_lines_from_the_data_file() {
        let status = AdvisorStatus {
            enabled: true,
            model: Some("openai/gpt-5".into()),
            ..AdvisorStatus::default()
        };
        let text = status.render();
        assert!(text.starts_with("advisor: enabled\nmodel: openai/gpt-5 (thinking medium)\n"));
        assert!(text.contains("lifetime cost: $0.0000\n"), "{text}");
    }

    #[test]
    fn sp1_sp2_the_tool_spend_shows_in_the_text_and_the_json_and_adds_up_over_a_roster() {
        let mut status = AdvisorStatus {
            enabled: true,
            ..AdvisorStatus::default()
        };
        assert!(
            !status.render().contains("tool spend"),
            "nothing to say yet"
        );
        let json = serde_json::to_value(&status).unwrap();
        assert_eq!(json["agent"]["budgetRefused"], 0);
        assert_eq!(json["agent"]["rereadsSaved"], 0);
        assert_eq!(json["agent"]["rereadBytesSaved"], 0);
        let one = AgentStatus {
            tool_spend: ToolSpendCounts {
                budget_refused: 2,
                rereads_saved: 1,
                reread_bytes_saved: 1200,
            },
            ..AgentStatus::default()
        };
        status.add_roster_totals(&[one.clone(), one]);
        assert!(
            status.render().contains(
                "tool spend: 4 call(s) past the tool budget not run, 2 re-read(s) answered from \
                 the context (2400 bytes not sent)\n"
            ),
            "{}",
            status.render()
        );
        let json = serde_json::to_value(&status).unwrap();
        assert_eq!(
            (
                &json["agent"]["budgetRefused"],
                &json["agent"]["rereadsSaved"],
                &json["agent"]["rereadBytesSaved"]
            ),
            (&4.into(), &2.into(), &2400.into())
        );
    }

    #[test]
    fn sp7_status_shows_the_check_ins_in_the_text_and_the_json_and_adds_them_up_over_a_roster() {
        let mut status = AdvisorStatus::default();
        assert!(!status.render().contains("check-ins"), "nothing to say yet");
        let json = serde_json::to_value(&status).unwrap();
        assert_eq!(json["agent"]["checkIns"], 0);
        assert_eq!(json["agent"]["turnsSkipped"], 0);
        let one = AgentStatus {
            check_in: crate::review::check_in::CheckInCounts {
                check_ins: 2,
                turns_skipped: 3,
            },
            ..AgentStatus::default()
        };
        status.add_roster_totals(&[one.clone(), one]);
        assert!(
            status.render().contains(
                "check-ins: 4 review(s) chose when to look again; 6 turn end(s) started no review\n"
            ),
            "{}",
            status.render()
        );
        let json = serde_json::to_value(&status).unwrap();
        assert_eq!(json["agent"]["checkIns"], 4);
        assert_eq!(json["agent"]["turnsSkipped"], 6);
        let back: AdvisorStatus = serde_json::from_value(json).unwrap();
        assert_eq!(back.agent.check_in.turns_skipped, 6, "read back by hosts");
    }

    #[test]
    fn sp3_status_shows_the_blocker_lane_s_drops_and_refused_wakes() {
        let mut status = AdvisorStatus::default();
        status.deliveries.drop(DropReason::NearDuplicate, 3);
        status.deliveries.drop(DropReason::TooShort, 1);
        status.deliveries.card = 2;
        status.deliveries.wakes_refused = 2;
        let text = status.render();
        assert!(
            text.contains("dropped: nearDuplicate 3, tooShort 1\n"),
            "{text}"
        );
        assert!(
            text.contains("wakes refused: 2 (past 2 per user prompt; sent as cards)\n"),
            "{text}"
        );
        let json = serde_json::to_value(&status).unwrap();
        assert_eq!(json["deliveries"]["wakesRefused"], 2);
        assert_eq!(json["deliveries"]["dropped"]["nearDuplicate"], 3);
        assert_eq!(json["deliveries"]["dropped"]["tooShort"], 1);
        assert!(!AdvisorStatus::default().render().contains("wakes refused"));
    }
}
