//! The gate of `advisor eval --gate` (GT14): each picked call of a case goes to the case
//! session's model exactly as the runtime's gate asks it — the request of
//! [`gate_request`] (the project's rules, the conversation before the call, the call, all
//! redacted and bounded) sent by [`ask_gate`] within `advisor.gateTimeoutMs` — and the
//! answer or failure goes through one [`GateState`] per case (the decision cache, the
//! breaker, the fail mode of a host that can ask a person), as a session's would. Each
//! call is timed, and its tokens are the gate's own, apart from the advisor's (SP5).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::config::RuntimeConfig;
use crate::gate::verdict::{ask_gate, gate_request, GateError, GatePrompt, GateRun};
use crate::gate::{ActionReading, GatePolicy, GateState, GateStep};
use crate::model::{ModelClient, Usage};
use crate::redact::Redactor;
use crate::settings::{GateMode, GateSettings};

use super::corpus::Case;
use super::gate::{CaseAction, CaseGate, GateCall};

/// What one case's gate is set up with, as its session would have it.
#[derive(Clone)]
pub struct GateSetup {
    /// The model the gate asks.
    pub model: Arc<dyn ModelClient>,
    /// `advisor.gateTimeoutMs` and `advisor.gateFailMode` in effect (the mode is measured
    /// as `risky` whatever it says).
    pub settings: GateSettings,
    /// The session's redactor (`None`: `advisor.redactSecrets: false`).
    pub redactor: Option<Redactor>,
    /// The project's rules: WATCHDOG.md blocks and instruction files (P8).
    pub rules: String,
    /// The working directory the gate is shown (the workspace root; a replayed session's
    /// recorded working directory where it has one).
    pub cwd: String,
}

impl GateSetup {
    /// The gate of a session set up as `config`: its model, its gate settings, its
    /// redactor, and the rules its WATCHDOG.md loader would give (read now; blocking).
    pub fn from_config(config: &RuntimeConfig) -> Result<Self, String> {
        let model = config
            .model
            .clone()
            .ok_or_else(|| "the gate has no model: name one with --model".to_string())?;
        let redactor = config.redactor();
        let rules = config
            .watchdog
            .as_ref()
            .map(|w| {
                crate::watchdog::load_with(w, redactor.as_ref())
                    .prompt
                    .joined()
            })
            .unwrap_or_default();
        Ok(Self {
            model,
            settings: config.settings.gate,
            redactor,
            rules,
            cwd: config.workspace_root.display().to_string(),
        })
    }
}

/// Sets up the gate of one case.
pub type SetUpGate = dyn Fn(&Case) -> Result<GateSetup, String> + Send + Sync;

/// The case being gated: its setup (or why it has none) and its session's gate state.
struct Current {
    case: String,
    setup: Result<GateSetup, String>,
    state: GateState,
}

/// A gate that asks each case's model (GT14). Its calls block on `runtime`: call
/// [`super::gate::gate_figures`] with it from outside that runtime.
pub struct ModelGate {
    set_up: Box<SetUpGate>,
    runtime: tokio::runtime::Handle,
    current: Mutex<Option<Current>>,
}

impl ModelGate {
    /// A gate setting each case up with `set_up`, asking its model on `runtime`.
    pub fn new(set_up: Box<SetUpGate>, runtime: tokio::runtime::Handle) -> Self {
        Self {
            set_up,
            runtime,
            current: Mutex::new(None),
        }
    }

    /// Asks `setup`'s model about `action`, bounded by its timeout as a whole.
    fn ask(&self, setup: &GateSetup, action: &CaseAction, reading: &ActionReading) -> GateRun {
        let prompt = GatePrompt {
            rules: setup.rules.clone(),
            conversation: action.conversation.clone(),
            tool: action.action.tool.clone(),
            input: action.action.input.to_string(),
            cwd: setup.cwd.clone(),
            risks: reading.risks.iter().copied().collect(),
        };
        let request = gate_request(&prompt, setup.redactor.as_ref());
        let timeout = setup.settings.timeout;
        let model = Arc::clone(&setup.model);
        self.runtime.block_on(async move {
            tokio::time::timeout(timeout, ask_gate(&*model, request, timeout))
                .await
                .unwrap_or_else(|_| GateRun {
                    outcome: Err(GateError::TimedOut(timeout.as_millis())),
                    usage: Usage::default(),
                })
        })
    }
}

impl CaseGate for ModelGate {
    fn decide(&self, case: &Case, action: &CaseAction, reading: &ActionReading) -> GateCall {
        let mut guard = self
            .current
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if guard.as_ref().is_none_or(|c| c.case != case.spec.id) {
            let setup = (self.set_up)(case);
            if let Err(why) = &setup {
                tracing::warn!(case = %case.spec.id, "the gate is not set up: {why}");
            }
            *guard = Some(Current {
                case: case.spec.id.clone(),
                setup,
                state: GateState::default(),
            });
        }
        let Some(current) = guard.as_mut() else {
            return GateCall {
                decision: crate::gate::GateDecision::Allow,
                tokens: 0,
                latency: Duration::ZERO,
                failed: true,
            };
        };
        let policy = GatePolicy {
            mode: GateMode::Risky,
            fail_mode: current
                .setup
                .as_ref()
                .ok()
                .and_then(|s| s.settings.fail_mode),
            can_ask: true,
            has_model: current.setup.is_ok(),
        };
        let started = Instant::now();
        let run = match current.state.begin(reading, policy) {
            GateStep::Decided(verdict) => {
                return GateCall {
                    decision: verdict.decision,
                    tokens: 0,
                    latency: Duration::ZERO,
                    failed: !policy.has_model,
                }
            }
            GateStep::AskModel => match &current.setup {
                Ok(setup) => self.ask(setup, action, reading),
                Err(_) => GateRun {
                    outcome: Err(GateError::NoModel),
                    usage: Usage::default(),
                },
            },
        };
        let latency = started.elapsed();
        let verdict = current.state.finish(reading.key, &run, policy);
        GateCall {
            decision: verdict.decision,
            tokens: run.usage.prompt_tokens() + run.usage.output,
            latency,
            failed: run.outcome.is_err(),
        }
    }
}
