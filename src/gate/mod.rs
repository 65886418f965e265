//! The action gate (SPEC §20, GT1–GT12): an opt-in review of a risky tool call *before* it
//! runs, beside the advisor and sharing its runtime, models, settings, WATCHDOG guidance and
//! redaction. (Not the triage gate of SP9, `advisor.judgeGate`, which decides whether a
//! review runs.)
//!
//! A host proposes a call ([`ProposedAction`]) and gets a [`GateVerdict`]: `allow`, `deny`
//! (the call does not run; the reason goes to the agent) or `ask` (a person decides).
//! Plain code, no actix:
//!
//! - [`classify`](mod@classify): the local classifier of `advisor.gate: risky` (GT2), built
//!   on the output quarantine's reading of a shell command (P5);
//! - [`verdict`]: the gate model's request (the recent transcript, the proposed call, the
//!   project's rules) and the strict reading of its JSON answer (GT3, GT4);
//! - [`request`]: the prompt of a proposed call, its model's time and the conversation it
//!   is shown (GT3, GT12);
//! - [`state`]: one session's gate: the decision cache (GT6), the breaker (GT7), the fail
//!   mode (GT5) and the counters (GT8).
//!
//! The supervisor runs it off its mailbox (`actors/supervisor/action_gate.rs`, gathering the
//! request's parts in `actors/gate_ask.rs`); a host
//! reaches it through `AdvisorHandle::gate`, `advisor serve`'s `session/gate`, the pi
//! extension's `tool_call` handler, and `advisor eval --gate` measures it.

pub mod classify;
pub mod request;
pub mod state;
pub mod verdict;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use classify::{classify, ActionKey, ActionReading, RiskKind, Workspace};
pub use state::{ActionGateCounts, GatePolicy, GateState, GateStep};
pub use verdict::{
    ask_gate, gate_request, parse_verdict, GateAnswer, GateError, GatePrompt, GateRun,
};

/// A tool call the primary proposes, before it runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProposedAction {
    /// The tool's name as the host calls it (`bash`, `Bash`, `write`, `apply_patch`…).
    pub tool: String,
    /// The tool's input as the model wrote it.
    pub input: serde_json::Value,
    /// The working directory of the call, when the host knows it (else the workspace root).
    pub cwd: Option<PathBuf>,
}

/// What the gate says about a proposed call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GateDecision {
    /// Run it.
    Allow,
    /// Do not run it; the reason goes back to the agent.
    Deny,
    /// A person decides.
    Ask,
}

impl GateDecision {
    /// The word of the wire formats.
    pub fn as_str(self) -> &'static str {
        match self {
            GateDecision::Allow => "allow",
            GateDecision::Deny => "deny",
            GateDecision::Ask => "ask",
        }
    }
}

/// How risky the gate judged the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GateRisk {
    /// Routine.
    Low,
    /// Worth a look.
    Medium,
    /// Could lose work, data or secrets.
    High,
}

impl GateRisk {
    /// The word of the wire formats.
    pub fn as_str(self) -> &'static str {
        match self {
            GateRisk::Low => "low",
            GateRisk::Medium => "medium",
            GateRisk::High => "high",
        }
    }
}

/// Who decided a verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum VerdictSource {
    /// The local classifier found nothing risky (or the gate is off): no model call.
    Classifier,
    /// The gate's model.
    Model,
    /// The session's decision for the same normalised action (GT6).
    Cache,
    /// The fail mode: the model failed, timed out or answered nonsense (GT5).
    FailMode,
    /// The breaker turned a denial into an ask or a note (GT7).
    Breaker,
}

impl VerdictSource {
    /// The word of the wire formats.
    pub fn as_str(self) -> &'static str {
        match self {
            VerdictSource::Classifier => "classifier",
            VerdictSource::Model => "model",
            VerdictSource::Cache => "cache",
            VerdictSource::FailMode => "failMode",
            VerdictSource::Breaker => "breaker",
        }
    }
}

/// The gate's answer about one proposed call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GateVerdict {
    /// Allow, deny or ask.
    pub decision: GateDecision,
    /// How risky.
    pub risk: GateRisk,
    /// Why, in a sentence the agent (on a denial) or the person (on an ask) reads.
    pub reason: String,
    /// Who decided.
    pub source: VerdictSource,
}

/// What a host says about one gate call beside the action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GateOptions {
    /// Whether the host can ask a person now (pi with a UI, Claude Code, Codex): decides the
    /// default fail mode and whether the breaker escalates to an ask or to a note (GT5,
    /// GT7).
    pub can_ask: bool,
    /// When the host stops waiting for the verdict (a hook host's answer bound less a
    /// margin, GT12): the model call ends by then, before `advisor.gateTimeoutMs` if that is
    /// later, so the fail mode decides and its answer still reaches the host. `None`: only
    /// the timeout bounds it.
    pub model_deadline: Option<tokio::time::Instant>,
}

impl Default for GateOptions {
    fn default() -> Self {
        Self {
            can_ask: true,
            model_deadline: None,
        }
    }
}
