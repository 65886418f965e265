//! The Supervisor's `/advisor` commands (C1–C4, RO19): on, off, toggle, test, status, dump,
//! for the whole roster or one named advisor; and the replay's end-of-file queries (L2):
//! the awaited drain and what is still undelivered.

use std::future::Future;

use actix::{Addr, Context, Handler, ResponseActFuture, ResponseFuture, WrapFuture};
use futures_util::FutureExt;

use super::members::MemberActors;
use super::Supervisor;
use crate::actors::advisor_agent::AdvisorAgent;
use crate::actors::audit_log::AuditLog;
use crate::actors::wiring::{await_all, test_advice};
use crate::command::{parse_command, AdvisorCommand};
use crate::domain::advice::Delivery;
use crate::members::Member;
use crate::messages::delivery::{GetDeliveryStatus, GetUndelivered};
use crate::messages::host::{AwaitDrain, GetDump, GetStatus, RunCommand};
use crate::messages::review::{
    AgentStatus, BacklogWait, DumpContext, GetAgentStatus, GetRestoredUsage,
};
use crate::review::AskEnd;
use crate::status::{AdvisorStatus, NamedAdvisorStatus};
use crate::texts::notice;

/// What the status asks of one member, and its line without the agent's part.
struct MemberQuery {
    agent: Option<Addr<AdvisorAgent>>,
    audit: Option<Addr<AuditLog>>,
    line: Option<NamedAdvisorStatus>,
    enabled: bool,
    held_off: bool,
    /// Its check-ins and the turn ends they held back (SP7), the supervisor's part.
    check_in: crate::review::check_in::CheckInCounts,
}

impl MemberQuery {
    fn of(
        member: &Member,
        actors: Option<&MemberActors>,
        session_enabled: bool,
        settings: &crate::settings::AdvisorSettings,
    ) -> Self {
        let policy = settings.policy;
        let plan = member.plan();
        let line = plan.label.as_ref().map(|label| {
            let (state, reason) = member.state(session_enabled, None);
            NamedAdvisorStatus {
                name: label.name.to_string(),
                slug: label.slug.to_string(),
                state,
                reason,
                model: plan.model.as_ref().ok().map(|m| m.info().id),
                policy: plan.policy.unwrap_or(policy),
                skipped_updates: member.skipped_updates(),
                cadence: member.cadence_status(settings),
                deliveries: Default::default(),
                agent: AgentStatus::default(),
                spend: Default::default(),
            }
        });
        Self {
            agent: actors.and_then(|a| Some(a.children.as_ref()?.agent.clone())),
            audit: actors.and_then(|a| a.audit.clone()),
            line,
            enabled: session_enabled,
            held_off: member.held_off(),
            check_in: member.check_in_counts(),
        }
    }

    /// The agent's part, with the lifetime its transcript file recorded before (P9).
    async fn agent_status(&self) -> Option<AgentStatus> {
        let mut status = self.agent.as_ref()?.send(GetAgentStatus).await.ok()?;
        status.check_in = self.check_in;
        if let Some(audit) = &self.audit {
            if let Ok(restored) = audit.send(GetRestoredUsage).await {
                status.lifetime.add(&restored);
            }
        }
        Some(status)
    }
}

impl Supervisor {
    /// The status (C3, RO19): the supervisor's part now, the router's and every member's
    /// agent's asked for. With a roster, one entry per advisor and the session's totals.
    fn status(&mut self) -> impl Future<Output = AdvisorStatus> + 'static {
        let router = self.router();
        let config = self.members.config();
        let model = config.model.as_ref();
        let policy = config.settings.policy;
        let enabled = self.members.enabled();
        let queries: Vec<MemberQuery> = self
            .members
            .iter()
            .map(|m| MemberQuery::of(m, self.actors_of(m.slug()), enabled, &config.settings))
            .collect();
        let cadence = self
            .members
            .get(None)
            .map(|m| m.cadence_status(&config.settings))
            .unwrap_or_default();
        let mut status = AdvisorStatus {
            enabled,
            model: model.map(|m| m.info().id),
            thinking: model.map(|m| m.thinking().as_str().to_string()),
            policy,
            failures: self.members.iter().map(Member::failures).sum(),
            provider_calls: config.provider_calls(),
            cadence,
            ..AdvisorStatus::default()
        };
        let primary = self.session.primary_spend.spend();
        let ceilings = self.ceiling_part();
        // SP9: the gate's counters, while it is on.
        let gate = self.gate_on().then_some(self.session.gate);
        let action_gate = self.session.action_gate.counts();
        let action_gate = (self.members.gate_choice().0.mode != crate::settings::GateMode::Off
            || action_gate.proposed > 0)
            .then_some(action_gate);
        async move {
            let mut per_advisor = Default::default();
            if let Ok(delivery) = router.send(GetDeliveryStatus).await {
                per_advisor = delivery.per_advisor.clone();
                status.add_delivery(delivery);
            }
            let mut agents = Vec::new();
            for query in queries {
                let agent = query.agent_status().await;
                match query.line {
                    None => {
                        if let Some(agent) = agent {
                            status.add_agent(agent);
                        }
                    }
                    Some(mut line) => {
                        if let Some(counts) = per_advisor.get(&line.slug) {
                            line.deliveries = counts.clone();
                        }
                        let paused = agent.as_ref().and_then(|a| a.paused.as_deref());
                        if query.enabled && !query.held_off && paused.is_some() {
                            line.state = crate::status::AdvisorState::Failing;
                            line.reason = paused.map(str::to_string);
                        }
                        if let Some(agent) = agent {
                            line.model = agent.model.clone().or(line.model);
                            line.agent = agent;
                        }
                        agents.push(line.agent.clone());
                        status.advisors.push(line);
                    }
                }
            }
            if !status.advisors.is_empty() {
                status.add_roster_totals(&agents);
            }
            status.spend.gate = gate;
            status.spend.action_gate = action_gate;
            status.add_spend(primary);
            ceilings.fill(&mut status);
            status
        }
    }

    /// The advisors' transcripts (C4, RO19): the unnamed advisor's alone, or one section
    /// per named advisor, or the one `advisor` names.
    fn dump(&self, raw: bool, advisor: Option<&str>) -> impl Future<Output = String> + 'static {
        let chosen = self.members.chosen(advisor);
        let sections: Vec<(Option<String>, Option<Addr<AdvisorAgent>>)> = chosen
            .as_ref()
            .map(|members| {
                members
                    .iter()
                    .map(|m| (m.plan().name().map(str::to_string), self.agent_of(m.slug())))
                    .collect()
            })
            .unwrap_or_default();
        let unknown = chosen.err();
        async move {
            if let Some(line) = unknown {
                return line;
            }
            let mut out = String::new();
            for (name, agent) in sections {
                if let Some(name) = &name {
                    out.push_str(&notice("dumpSection", &[("name", name)]));
                    out.push('\n');
                }
                out.push_str(&match agent {
                    Some(agent) => agent
                        .send(DumpContext { raw })
                        .await
                        .unwrap_or_else(|_| notice("unavailable", &[])),
                    None => format!("{}\n", notice("notRunning", &[])),
                });
            }
            out
        }
    }
}

impl Handler<RunCommand> for Supervisor {
    type Result = ResponseActFuture<Self, String>;

    fn handle(&mut self, msg: RunCommand, ctx: &mut Context<Self>) -> Self::Result {
        let (reply, changes) = match parse_command(&msg.line) {
            Ok(AdvisorCommand::Toggle) => self.members.toggle(),
            Ok(AdvisorCommand::On { advisor: None }) => self.members.enable(),
            Ok(AdvisorCommand::Off { advisor: None }) => self.members.disable(AskEnd::TurnedOff),
            Ok(AdvisorCommand::On {
                advisor: Some(name),
            }) => self.members.member_on(&name),
            Ok(AdvisorCommand::Off {
                advisor: Some(name),
            }) => self.members.member_off(&name),
            Ok(AdvisorCommand::Test(advisory)) => {
                let (epoch, nth) = self.members.next_test();
                let fut = test_advice(self.router(), epoch, nth, advisory);
                return Box::pin(fut.into_actor(self));
            }
            Ok(AdvisorCommand::Status) => {
                let fut = self.status().map(|s| s.render());
                return Box::pin(fut.into_actor(self));
            }
            Ok(AdvisorCommand::Dump { raw, advisor }) => {
                return Box::pin(self.dump(raw, advisor.as_deref()).into_actor(self));
            }
            Err(usage) => (usage, Vec::new()),
        };
        self.carry_out(ctx, changes);
        Box::pin(actix::fut::ready(reply))
    }
}

impl Handler<GetStatus> for Supervisor {
    type Result = ResponseFuture<AdvisorStatus>;

    fn handle(&mut self, _msg: GetStatus, _ctx: &mut Context<Self>) -> Self::Result {
        Box::pin(self.status())
    }
}

impl Handler<GetDump> for Supervisor {
    type Result = ResponseFuture<String>;

    fn handle(&mut self, msg: GetDump, _ctx: &mut Context<Self>) -> Self::Result {
        Box::pin(self.dump(msg.raw, None))
    }
}

impl Handler<AwaitDrain> for Supervisor {
    type Result = ResponseFuture<BacklogWait>;

    fn handle(&mut self, _msg: AwaitDrain, ctx: &mut Context<Self>) -> Self::Result {
        // CA21 (2): every running advisor sends what it holds as one review, its counter
        // unchanged, so an `agent-end` or interval reviewer still sees the final answer.
        let agents = if self.members.enabled() {
            let changes = self.members.drain();
            self.carry_out(ctx, changes);
            self.agents()
        } else {
            Vec::new()
        };
        Box::pin(async move { await_all(&agents, 1).await })
    }
}

impl Handler<GetUndelivered> for Supervisor {
    type Result = ResponseFuture<Vec<Delivery>>;

    fn handle(&mut self, msg: GetUndelivered, _ctx: &mut Context<Self>) -> Self::Result {
        let router = self.router();
        Box::pin(async move { router.send(msg).await.unwrap_or_default() })
    }
}
