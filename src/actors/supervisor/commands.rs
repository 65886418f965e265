//! The Supervisor's `/advisor` commands (C1–C4, RO19): on, off, toggle, test, status, dump,
//! for the whole roster or one named advisor; and the replay's end-of-file queries (L2):
//! the awaited drain and what is still undelivered.

use std::future::Future;

use actix::{Addr, Context, Handler, ResponseActFuture, ResponseFuture, WrapFuture};
use futures_util::FutureExt;

use super::members::Member;
use super::Supervisor;
use crate::actors::advisor_agent::AdvisorAgent;
use crate::actors::audit_log::AuditLog;
use crate::actors::wiring::{await_all, test_advice};
use crate::command::{parse_command, AdvisorCommand};
use crate::domain::advice::Delivery;
use crate::messages::delivery::{GetDeliveryStatus, GetUndelivered, PauseAdvisor};
use crate::messages::host::{AwaitDrain, GetDump, GetStatus, RunCommand};
use crate::messages::review::{
    AgentStatus, AskEnd, BacklogWait, DumpContext, GetAgentStatus, GetRestoredUsage, QueueDelta,
    ResumeReviews,
};
use crate::status::{AdvisorStatus, NamedAdvisorStatus};
use crate::texts::notice;

/// What the status asks of one member, and its line without the agent's part.
struct MemberQuery {
    agent: Option<Addr<AdvisorAgent>>,
    audit: Option<Addr<AuditLog>>,
    line: Option<NamedAdvisorStatus>,
    enabled: bool,
    held_off: bool,
}

impl MemberQuery {
    fn of(
        member: &Member,
        session_enabled: bool,
        settings: &crate::settings::AdvisorSettings,
    ) -> Self {
        let policy = settings.policy;
        let line = member.plan.label.as_ref().map(|label| {
            let (state, reason) = member.state(session_enabled, None);
            NamedAdvisorStatus {
                name: label.name.to_string(),
                slug: label.slug.to_string(),
                state,
                reason,
                model: member.plan.model.as_ref().ok().map(|m| m.info().id),
                policy: member.plan.policy.unwrap_or(policy),
                skipped_updates: member.skipped_updates,
                cadence: member.cadence_status(settings),
                deliveries: Default::default(),
                agent: AgentStatus::default(),
                spend: Default::default(),
            }
        });
        Self {
            agent: member.agent(),
            audit: member.audit.clone(),
            line,
            enabled: session_enabled,
            held_off: member.held_off,
        }
    }

    /// The agent's part, with the lifetime its transcript file recorded before (P9).
    async fn agent_status(&self) -> Option<AgentStatus> {
        let mut status = self.agent.as_ref()?.send(GetAgentStatus).await.ok()?;
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
        let model = self.config.model.as_ref();
        let policy = self.config.settings.policy;
        let enabled = self.enabled;
        let queries: Vec<MemberQuery> = self
            .members
            .iter()
            .map(|m| MemberQuery::of(m, enabled, &self.config.settings))
            .collect();
        let cadence = self
            .members
            .iter()
            .find(|m| m.is(None))
            .map(|m| m.cadence_status(&self.config.settings))
            .unwrap_or_default();
        let mut status = AdvisorStatus {
            enabled,
            model: model.map(|m| m.info().id),
            thinking: model.map(|m| m.thinking().as_str().to_string()),
            policy,
            failures: self.members.iter().map(|m| m.failures).sum(),
            provider_calls: self.config.provider_calls(),
            cadence,
            ..AdvisorStatus::default()
        };
        let primary = self.primary_spend.spend();
        let ceilings = self.ceiling_part();
        // SP9: the gate's counters, while it is on.
        let gate = self.gate_on().then_some(self.gate);
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
            status.add_spend(primary);
            ceilings.fill(&mut status);
            status
        }
    }

    /// The advisors' transcripts (C4, RO19): the unnamed advisor's alone, or one section
    /// per named advisor, or the one `advisor` names.
    fn dump(&self, raw: bool, advisor: Option<&str>) -> impl Future<Output = String> + 'static {
        let chosen: Result<Vec<&Member>, String> = match advisor {
            Some(name) => self
                .find_member(name)
                .map(|i| vec![&self.members[i]])
                .ok_or_else(|| self.unknown_advisor(name)),
            None => Ok(self.members.iter().collect()),
        };
        let sections: Vec<(Option<String>, Option<Addr<AdvisorAgent>>)> = chosen
            .as_ref()
            .map(|members| {
                members
                    .iter()
                    .map(|m| (m.plan.name().map(str::to_string), m.agent()))
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

    /// The line answering a name no advisor has (RO19, RO20).
    fn unknown_advisor(&self, name: &str) -> String {
        match self.member_names() {
            Some(known) => notice("unknownAdvisor", &[("name", name), ("known", &known)]),
            None => notice("unknownAdvisorNoRoster", &[("name", name)]),
        }
    }

    /// `/advisor on NAME` (RO19): resumes one advisor; the others are untouched.
    fn member_on(&mut self, ctx: &mut Context<Self>, name: &str) -> String {
        let Some(index) = self.find_member(name) else {
            return self.unknown_advisor(name);
        };
        let member = &mut self.members[index];
        let label = member.plan.name().unwrap_or_default().to_string();
        if let Err(reason) = &member.plan.model {
            return notice("memberNoModel", &[("name", &label), ("reason", reason)]);
        }
        if !member.plan.enabled {
            return notice("memberNotEnabled", &[("name", &label)]);
        }
        member.held_off = false;
        if !self.enabled {
            return notice("memberOnWhileOff", &[("name", &label)]);
        }
        match member.agent() {
            Some(agent) => agent.do_send(ResumeReviews),
            None => {
                let seed = self.seed_at_end();
                self.start_member(ctx, index, seed);
            }
        }
        notice("memberOn", &[("name", &label)])
    }

    /// `/advisor off NAME` (RO19): pauses one advisor for this session, its running review
    /// cancelled; the others' reviews, in flight or queued, go on (the session's epoch stays).
    fn member_off(&mut self, name: &str) -> String {
        let Some(index) = self.find_member(name) else {
            return self.unknown_advisor(name);
        };
        self.hold_off(index);
        let label = self.members[index].plan.name().unwrap_or_default();
        notice("memberOff", &[("name", label)])
    }

    /// Pauses member `index` for this session (RO19; SP6's ceiling pause): its running
    /// review cancelled, its raises dropped, the others untouched.
    pub(super) fn hold_off(&mut self, index: usize) {
        let next = self.epoch + 1;
        self.members[index].held_off = true;
        // CA7 (our choice): a paused advisor drops its held updates and counts from 0.
        self.members[index].cadence.restart();
        if let Some(label) = &self.members[index].plan.label {
            // Before the reply: a raise already on its way is dropped; the review itself
            // is cancelled by the stop below (its agent's ResetAdvisor).
            let slug = label.slug.clone();
            self.router().do_send(PauseAdvisor { slug, paused: true });
        }
        self.stop_member(index, next, AskEnd::TurnedOff);
    }
}

impl Handler<RunCommand> for Supervisor {
    type Result = ResponseActFuture<Self, String>;

    fn handle(&mut self, msg: RunCommand, ctx: &mut Context<Self>) -> Self::Result {
        let reply = match parse_command(&msg.line) {
            Ok(AdvisorCommand::Toggle) => {
                if self.enabled {
                    self.disable(ctx, AskEnd::TurnedOff)
                } else {
                    self.enable(ctx)
                }
            }
            Ok(AdvisorCommand::On { advisor: None }) => self.enable(ctx),
            Ok(AdvisorCommand::Off { advisor: None }) => self.disable(ctx, AskEnd::TurnedOff),
            Ok(AdvisorCommand::On {
                advisor: Some(name),
            }) => self.member_on(ctx, &name),
            Ok(AdvisorCommand::Off {
                advisor: Some(name),
            }) => self.member_off(&name),
            Ok(AdvisorCommand::Test(advisory)) => {
                self.tests_injected += 1;
                let fut = test_advice(self.router(), self.epoch, self.tests_injected, advisory);
                return Box::pin(fut.into_actor(self));
            }
            Ok(AdvisorCommand::Status) => {
                let fut = self.status().map(|s| s.render());
                return Box::pin(fut.into_actor(self));
            }
            Ok(AdvisorCommand::Dump { raw, advisor }) => {
                return Box::pin(self.dump(raw, advisor.as_deref()).into_actor(self));
            }
            Err(usage) => usage,
        };
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

    fn handle(&mut self, _msg: AwaitDrain, _ctx: &mut Context<Self>) -> Self::Result {
        let agents = if self.enabled {
            self.send_held()
        } else {
            Vec::new()
        };
        Box::pin(async move { await_all(&agents, 1).await })
    }
}

impl Supervisor {
    /// The headless drain (CA21 (2)): every running advisor sends what it holds as one
    /// review, its counter unchanged, so an `agent-end` or interval reviewer still sees the
    /// final answer. Answers the running advisors' agents.
    fn send_held(&mut self) -> Vec<Addr<AdvisorAgent>> {
        let epoch = self.epoch;
        let mut agents = Vec::new();
        for member in &mut self.members {
            let Some(agent) = member.agent() else {
                continue;
            };
            if let Some((updates, wip)) = member.cadence.take_held() {
                agent.do_send(QueueDelta {
                    epoch,
                    updates,
                    wip,
                });
            }
            agents.push(agent);
        }
        agents
    }
}

impl Handler<GetUndelivered> for Supervisor {
    type Result = ResponseFuture<Vec<Delivery>>;

    fn handle(&mut self, msg: GetUndelivered, _ctx: &mut Context<Self>) -> Self::Result {
        let router = self.router();
        Box::pin(async move { router.send(msg).await.unwrap_or_default() })
    }
}
