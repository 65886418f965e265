//! The Supervisor's part of the action gate (SPEC §20): a proposed call is read by the
//! classifier and the session's [`GateState`](crate::gate::GateState) at once; when the
//! model must be asked, the request (the project's rules from the WATCHDOG.md loader, the
//! newest part of the asked advisor's own context and the transcript's messages past what
//! it covers — or, while it has none, the last rendered turns of the transcript the host
//! last handed over — and the call) is built and sent off the mailbox, bounded as a whole by
//! `advisor.gateTimeoutMs` (and a hook host's deadline). Not the triage gate of SP9
//! (`gate.rs`).

use std::sync::Arc;
use std::time::Duration;

use actix::{ActorFutureExt, Addr, Context, Handler, ResponseActFuture, WrapFuture};

use super::Supervisor;
use crate::actors::advisor_agent::AdvisorAgent;
use crate::actors::watchdog_loader::WatchdogLoader;
use crate::domain::transcript::TranscriptMessage;
use crate::gate::verdict::{
    advisor_conversation, ask_gate, gate_request, GateError, GatePrompt, GateRun,
    GATE_RECENT_MESSAGES, MAX_CONVERSATION_CHARS,
};
use crate::gate::{classify, GatePolicy, GateStep, GateVerdict, Workspace};
use crate::messages::host::GateAction;
use crate::messages::review::{AdvisorContextTail, GetAdvisorContext};
use crate::messages::watchdog::GetWatchdogPrompt;
use crate::model::{ModelClient, Usage};
use crate::redact::Redactor;
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
        let step = self.session.action_gate.begin(&reading, policy);
        tracing::debug!(tool = %msg.action.tool, risks = ?reading.risks, ?step, "action gate");
        let (GateStep::AskModel, Some(model)) = (step.clone(), model) else {
            let verdict = match step {
                GateStep::Decided(verdict) => verdict,
                GateStep::AskModel => self.session.action_gate.finish(
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
        let prompt = GatePrompt {
            rules: String::new(),
            conversation: String::new(),
            tool: msg.action.tool.clone(),
            input: msg.action.input.to_string(),
            cwd: workspace_text(&msg.action, &config.workspace_root),
            risks: reading.risks.iter().copied().collect(),
        };
        let sources = self.gate_sources(config.redactor());
        // GT12: a hook host's deadline cuts the call earlier than the timeout.
        let timeout = msg.options.model_deadline.map_or(settings.timeout, |due| {
            settings
                .timeout
                .min(due.saturating_duration_since(tokio::time::Instant::now()))
        });
        let asked = async move {
            tokio::time::timeout(timeout, sources.ask(prompt, model, timeout))
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
                .map(move |run, act, _ctx| act.session.action_gate.finish(key, &run, policy)),
        )
    }
}

impl Supervisor {
    /// Where the gate's request takes its parts from (GT3): the asked advisor's agent, the
    /// recent transcript and what tells the turns that advisor has not been sent.
    fn gate_sources(&self, redactor: Option<Redactor>) -> GateSources {
        let recent = self
            .members
            .last_transcript()
            .map(|t| t.tail(t.len().saturating_sub(GATE_RECENT_MESSAGES)))
            .unwrap_or_default();
        let gate_member = self
            .members
            .gate_member()
            .map(|m| m.slug().map(str::to_string));
        let agent = gate_member
            .as_ref()
            .and_then(|slug| self.links.agent_of(slug.as_deref()));
        let unseen = Unseen {
            transcript: self.members.last_transcript().cloned(),
            turn_lens: gate_member
                .map(|slug| self.members.turn_lens(slug.as_deref()))
                .unwrap_or_default(),
        };
        GateSources {
            watchdog: self.links.watchdog_started(),
            agent,
            recent,
            unseen,
            redactor,
        }
    }
}

/// Where one gate request's parts come from, gathered off the mailbox (GT3).
struct GateSources {
    /// The WATCHDOG.md loader: the project's rules.
    watchdog: Option<Addr<WatchdogLoader>>,
    /// The agent of the advisor the gate asks (GT10): its own context is the conversation.
    agent: Option<Addr<AdvisorAgent>>,
    /// The newest messages of the transcript the host last handed over: the conversation
    /// when the advisor has no context yet.
    recent: Vec<Arc<TranscriptMessage>>,
    /// What tells the transcript's messages the advisor has not been sent yet.
    unseen: Unseen,
    /// The session's redaction (X5).
    redactor: Option<Redactor>,
}

impl GateSources {
    /// Gathers the rules and the conversation into `prompt` and asks `model`.
    async fn ask(
        self,
        mut prompt: GatePrompt,
        model: Arc<dyn ModelClient>,
        timeout: Duration,
    ) -> GateRun {
        if let Some(loader) = self.watchdog {
            if let Ok(rules) = loader.send(GetWatchdogPrompt).await {
                prompt.rules = rules.joined();
            }
        }
        let own = match self.agent {
            Some(agent) => agent
                .send(GetAdvisorContext {
                    max_chars: MAX_CONVERSATION_CHARS,
                })
                .await
                .unwrap_or_default(),
            None => AdvisorContextTail::default(),
        };
        prompt.conversation = if own.messages.is_empty() {
            render_delta(TranscriptView::Compact, &self.recent)
        } else {
            // The newest part wins the bound (`gate_request` keeps the newest characters).
            let mut text = advisor_conversation(&own.messages);
            let newer = self.unseen.past(own.turn);
            if !newer.is_empty() {
                text.push_str("\n\n");
                text.push_str(UNSEEN_HEADING);
                text.push_str(&render_delta(TranscriptView::Compact, &newer));
            }
            text
        };
        let request = gate_request(&prompt, self.redactor.as_ref());
        ask_gate(&*model, request, timeout).await
    }
}

/// The heading before the transcript's messages the advisor has not been sent yet (GT3).
const UNSEEN_HEADING: &str = "[newer in the session, not yet sent to the reviewer]\n";

/// At most this many of the transcript's newest messages are rendered as not yet seen (the
/// conversation's character bound cuts them further).
const MAX_UNSEEN_MESSAGES: usize = 256;

/// The transcript and the member's (turn end, length) pairs: together they tell which of
/// the transcript's messages lie past what the advisor's context covers (GT3).
struct Unseen {
    /// The transcript the host last handed over.
    transcript: Option<crate::domain::transcript::Transcript>,
    /// The transcript's length at the member's newest turn ends.
    turn_lens: Vec<(u64, usize)>,
}

impl Unseen {
    /// The messages past turn end `turn` (the one the context's last review covered up to),
    /// newest [`MAX_UNSEEN_MESSAGES`] at most; none when the length there is not known.
    fn past(&self, turn: Option<u64>) -> Vec<Arc<TranscriptMessage>> {
        let (Some(turn), Some(transcript)) = (turn, &self.transcript) else {
            return Vec::new();
        };
        let Some(&(_, seen)) = self.turn_lens.iter().find(|(t, _)| *t == turn) else {
            return Vec::new();
        };
        let from = seen.max(transcript.len().saturating_sub(MAX_UNSEEN_MESSAGES));
        transcript.tail(from)
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
