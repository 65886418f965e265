//! The advisor's status (C3).

use serde::{Deserialize, Serialize};

pub use crate::delivery::{DeliveryCounts, DeliveryStatus, DropReason};
use crate::domain::advice::Advisory;
pub use crate::review::AgentStatus;
use crate::settings::DeliveryPolicy;

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
}

impl AdvisorStatus {
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

    /// Human-readable multi-line rendering (C3).
    pub fn render(&self) -> String {
        let mut out = String::new();
        let state = match (self.enabled, &self.model) {
            (false, _) => "disabled".to_string(),
            (true, None) => "enabled, but no advisor model is assigned".to_string(),
            (true, Some(_)) => "enabled".to_string(),
        };
        out.push_str(&format!("advisor: {state}\n"));
        if let Some(model) = &self.model {
            out.push_str(&format!(
                "model: {model} (thinking {})\n",
                self.thinking.as_deref().unwrap_or("medium")
            ));
        }
        out.push_str(&format!("policy: {:?}\n", self.policy).to_lowercase());
        let a = &self.agent;
        let percent = if a.context_window > 0 {
            a.context_tokens as f64 * 100.0 / a.context_window as f64
        } else {
            0.0
        };
        out.push_str(&format!("backlog: {} turn(s)\n", a.backlog));
        out.push_str(&format!(
            "context: {} / {} tokens ({percent:.1}%)\n",
            a.context_tokens, a.context_window
        ));
        out.push_str(&format!(
            "context maintenance: {} compaction(s), {} re-prime(s), {} promotion(s)\n",
            a.compactions, a.reprimes, a.promotions
        ));
        let u = &a.lifetime;
        let estimated = if self.usage_estimated || u.estimated {
            " (estimated)"
        } else {
            ""
        };
        out.push_str(&format!(
            "lifetime tokens{estimated}: input {}, output {}, cache read {}, cache write {}\n",
            u.input, u.output, u.cache_read, u.cache_write
        ));
        out.push_str(&format!("lifetime cost{estimated}: ${:.4}\n", u.cost));
        if a.consults > 0 {
            let c = &a.consult_usage;
            out.push_str(&format!(
                "consults: {} (input {}, output {} tokens, ${:.4})\n",
                a.consults, c.input, c.output, c.cost
            ));
        }
        out.push_str(&format!(
            "failures: {} ({} consecutive), turns skipped: {}\n",
            self.failures, self.consecutive_failures, a.dropped_turns
        ));
        if let Some(reason) = &self.paused {
            out.push_str(&format!("paused: {reason}\n"));
        }
        if let Some(c) = &self.provider_calls {
            out.push_str(&format!(
                "provider {}: {} of {} calls in flight, {} waiting (all sessions)\n",
                c.provider, c.in_flight, c.limit, c.waiting
            ));
        }
        let d = &self.deliveries;
        out.push_str(&format!(
            "notes: delivered {} (aside {}, steer {}, wake {}, card {}), held {}, dropped {}, pending {}\n",
            d.delivered(),
            d.aside,
            d.steer,
            d.wake,
            d.card,
            d.held,
            d.dropped_total(),
            d.pending
        ));
        let dropped = d.dropped_summary();
        if !dropped.is_empty() {
            // D10: why notes were dropped (tooLong, overBudget, duplicate…).
            out.push_str(&format!("dropped: {dropped}\n"));
        }
        if !self.held_notes.is_empty() || self.policy == DeliveryPolicy::Reconfirm {
            out.push_str(&format!("held notes: {}\n", self.held_notes.len()));
            for note in &self.held_notes {
                out.push_str(&format!(
                    "  - [{}] {}\n",
                    note.effective_severity().as_str().to_uppercase(),
                    crate::delivery::note::display_note(&note.note)
                ));
            }
        }
        out
    }
}
