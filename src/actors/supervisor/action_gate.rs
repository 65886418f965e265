//! The Supervisor's part of the action gate (SPEC §20): a proposed call is read by the
//! classifier and the session's [`GateState`](crate::gate::GateState) at once; when the
//! model must be asked, the request (the project's rules from the WATCHDOG.md loader, the
//! last rendered turns of the transcript the host last handed over, the call) is built and
//! sent off the mailbox, bounded as a whole by `advisor.gateTimeoutMs`. Not the triage gate
//! of SP9 (`gate.rs`).

use actix::{ActorFutureExt, Context, Handler, ResponseActFuture, WrapFuture};

use super::Supervisor;
use crate::gate::verdict::{
    ask_gate, gate_request, GateError, GatePrompt, GateRun, GATE_RECENT_MESSAGES,
};
use crate::gate::{classify, GatePolicy, GateStep, GateVerdict, Workspace};
use crate::messages::host::GateAction;
use crate::messages::watchdog::GetWatchdogPrompt;
use crate::model::Usage;
use crate::render::{render_delta, TranscriptView};

impl Handler<GateAction> for Supervisor {
    type Result = ResponseActFuture<Self, GateVerdict>;

    fn handle(&mut self, msg: GateAction, _ctx: &mut Context<Self>) -> Self::Result {
        let (settings, model) = self.members.gate_choice();
        let config = self.members.config();
        let workspace = Workspace::new(&config.workspace_root, msg.action.cwd.as_deref());
        let reading = classify(&msg.action, &workspace);
        let policy = GatePolicy {
            mode: settings.mode,
            fail_mode: settings.fail_mode,
            can_ask: msg.options.can_ask,
            has_model: model.is_some() && !config.settings.no_review,
        };
        let step = self.action_gate.begin(&reading, policy);
        tracing::debug!(tool = %msg.action.tool, risks = ?reading.risks, ?step, "action gate");
        let (GateStep::AskModel, Some(model)) = (step.clone(), model) else {
            let verdict = match step {
                GateStep::Decided(verdict) => verdict,
                GateStep::AskModel => self.action_gate.finish(
                    reading.key,
                    &GateRun {
                        outcome: Err(GateError::NoModel),
                        usage: Usage::default(),
                    },
                    policy,
                ),
            };
            return Box::pin(actix::fut::ready(verdict));
        };
        let conversation = self
            .members
            .last_transcript()
            .map(|t| {
                let start = t.len().saturating_sub(GATE_RECENT_MESSAGES);
                render_delta(TranscriptView::Compact, &t.tail(start))
            })
            .unwrap_or_default();
        let mut prompt = GatePrompt {
            rules: String::new(),
            conversation,
            tool: msg.action.tool.clone(),
            input: msg.action.input.to_string(),
            cwd: workspace_text(&msg.action, &config.workspace_root),
            risks: reading.risks.iter().copied().collect(),
        };
        let redactor = config.redactor();
        let watchdog = self.watchdog.clone();
        let timeout = settings.timeout;
        let asked = async move {
            let whole = async move {
                if let Some(loader) = watchdog {
                    if let Ok(rules) = loader.send(GetWatchdogPrompt).await {
                        prompt.rules = rules.joined();
                    }
                }
                let request = gate_request(&prompt, redactor.as_ref());
                ask_gate(&*model, request, timeout).await
            };
            tokio::time::timeout(timeout, whole)
                .await
                .unwrap_or_else(|_| GateRun {
                    outcome: Err(GateError::TimedOut(timeout.as_millis())),
                    usage: Usage::default(),
                })
        };
        let key = reading.key;
        Box::pin(
            asked
                .into_actor(self)
                .map(move |run, act, _ctx| act.action_gate.finish(key, &run, policy)),
        )
    }
}

/// The call's working directory as the gate is shown it.
fn workspace_text(action: &crate::gate::ProposedAction, root: &std::path::Path) -> String {
    match &action.cwd {
        Some(cwd) if cwd.is_absolute() => cwd.display().to_string(),
        Some(cwd) => root.join(cwd).display().to_string(),
        None => root.display().to_string(),
    }
}
