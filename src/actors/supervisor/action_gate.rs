//! The Supervisor's part of the action gate (SPEC §20): a proposed call is read by the
//! classifier and the session's [`GateState`](crate::gate::GateState) at once; when the
//! model must be asked, the request is shaped ([`crate::gate::request`]) and its parts
//! gathered and sent off the mailbox ([`GateSources`]), bounded as a whole by
//! `advisor.gateTimeoutMs` (and a hook host's deadline). Not the triage gate of SP9
//! (`gate.rs`).

use actix::{ActorFutureExt, Context, Handler, ResponseActFuture, WrapFuture};

use super::Supervisor;
use crate::actors::gate_ask::GateSources;
use crate::gate::request::{action_prompt, gate_timeout};
use crate::gate::{classify, GatePolicy, GateStep, GateVerdict, Workspace};
use crate::messages::host::GateAction;

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
        let step = self.session.action_gate().begin(&reading, policy);
        tracing::debug!(tool = %msg.action.tool, risks = ?reading.risks, ?step, "action gate");
        let (GateStep::AskModel, Some(model)) = (step.clone(), model) else {
            let gate = self.session.action_gate();
            return Box::pin(actix::fut::ready(gate.without_model(
                step,
                reading.key,
                policy,
            )));
        };
        let prompt = action_prompt(&msg.action, &reading, &config.workspace_root);
        let (member, transcript) = self.members.gate_view();
        let sources = GateSources {
            watchdog: self.links.watchdog_started(),
            agent: member.and_then(|slug| self.links.agent_of(slug.as_deref())),
            recent: transcript.recent(),
            transcript,
            redactor: config.redactor(),
        };
        // GT12: a hook host's deadline cuts the call earlier than the timeout.
        let timeout = gate_timeout(settings.timeout, msg.options.model_deadline);
        let key = reading.key;
        Box::pin(
            (sources.ask(prompt, model, timeout).into_actor(self))
                .map(move |run, act, _ctx| act.session.action_gate().finish(key, &run, policy)),
        )
    }
}
