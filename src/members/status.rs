//! The status the Supervisor answers (C3, RO19), in plain code: what it knows itself — the
//! settings, each member's line, the failures, the spend ceilings (SP6), the gates'
//! counters (SP9, GT8) and the primary's spend (SP5) — taken at once as [`StatusParts`],
//! then [`StatusParts::assemble`]d with what the router and each member's agent answered.

use crate::review::check_in::CheckInCounts;
use crate::review::judge_gate::GateCounts;
use crate::review::AgentStatus;
use crate::settings::GateMode;
use crate::status::{AdvisorState, AdvisorStatus, CeilingStatus, NamedAdvisorStatus};
use crate::status::{DeliveryStatus, PrimarySpend};
use crate::texts::notice;

use super::{Member, Members};

/// What the Supervisor keeps beside its members that the status shows: the triage gate's
/// counters (SP9), the action gate's (GT8) and the primary's spend (SP5).
#[derive(Debug, Clone, Default)]
pub struct SessionCounts {
    /// The triage gate's counters.
    pub gate: GateCounts,
    /// The action gate's counters.
    pub action_gate: crate::gate::ActionGateCounts,
    /// The primary's spend so far.
    pub primary: Option<PrimarySpend>,
}

/// One member's part of the status before its agent answered.
#[derive(Debug, Clone)]
struct MemberPart {
    /// A named advisor's line (RO19); `None`: the unnamed advisor, whose agent's part is
    /// the session's.
    line: Option<NamedAdvisorStatus>,
    /// The session is enabled.
    enabled: bool,
    /// The user paused it.
    held_off: bool,
    /// Its check-ins and the turn ends they held back (SP7), the supervisor's part.
    check_in: CheckInCounts,
    /// Its ceiling for status (SP6) and whether the ceiling paused it.
    ceiling: (Option<CeilingStatus>, bool),
}

/// The status as the Supervisor knows it, before the router and the agents answered.
#[derive(Debug, Clone)]
pub struct StatusParts {
    status: AdvisorStatus,
    members: Vec<MemberPart>,
    /// The triage gate's counters, while it is on (SP9).
    gate: Option<GateCounts>,
    /// The action gate's counters, while it is on or has seen a call (GT8).
    action_gate: Option<crate::gate::ActionGateCounts>,
    primary: Option<PrimarySpend>,
}

impl Members {
    /// The status's parts the Supervisor knows now (C3, RO19): one per member, in member
    /// order, and the session's `counts`; the action gate's counters only while that gate
    /// is on or has seen a call (GT8).
    pub fn status_parts(&self, counts: SessionCounts) -> StatusParts {
        let config = self.config();
        let settings = &config.settings;
        let model = config.model.as_ref();
        let members = self.iter().map(|m| self.member_part(m)).collect();
        let cadence = self.get(None).map(|m| m.cadence_status(settings));
        let status = AdvisorStatus {
            enabled: self.enabled(),
            model: model.map(|m| m.info().id),
            thinking: model.map(|m| m.thinking().as_str().to_string()),
            policy: settings.policy,
            failures: self.iter().map(Member::failures).sum(),
            provider_calls: config.provider_calls(),
            cadence: cadence.unwrap_or_default(),
            ..AdvisorStatus::default()
        };
        let action_gate = counts.action_gate;
        let gate_shown = self.gate_choice().0.mode != GateMode::Off || action_gate.proposed > 0;
        StatusParts {
            status,
            members,
            gate: self.judge_gate_on().then_some(counts.gate),
            action_gate: gate_shown.then_some(action_gate),
            primary: counts.primary,
        }
    }

    fn member_part(&self, member: &Member) -> MemberPart {
        let settings = &self.config().settings;
        let plan = member.plan();
        let line = plan.label.as_ref().map(|label| {
            let (state, reason) = member.state(self.enabled(), None);
            NamedAdvisorStatus {
                name: label.name.to_string(),
                slug: label.slug.to_string(),
                state,
                reason,
                model: plan.model.as_ref().ok().map(|m| m.info().id),
                policy: plan.policy.unwrap_or(settings.policy),
                skipped_updates: member.skipped_updates(),
                cadence: member.cadence_status(settings),
                deliveries: Default::default(),
                agent: AgentStatus::default(),
                spend: Default::default(),
            }
        });
        MemberPart {
            line,
            enabled: self.enabled(),
            held_off: member.held_off(),
            check_in: member.check_in_counts(),
            ceiling: member.ceiling_status(settings),
        }
    }

    /// Whether WIP reviews go through the judge now (SP9): `advisor.judgeGate`, read live,
    /// and a judge model the host built.
    pub fn judge_gate_on(&self) -> bool {
        let config = self.config();
        config.settings.judge_gate && config.judge_model.is_some()
    }
}

impl StatusParts {
    /// The status: these parts with the router's (`delivery`, `None` when it did not
    /// answer) and each member's agent's (`agents`, in member order, `None` for one not
    /// running). A named advisor whose agent is paused while it should run shows failing;
    /// with a roster, the session's totals are its advisors' (RO19); the spend (SP5), the
    /// gates' counters and the ceilings (SP6) go in last.
    pub fn assemble(
        self,
        delivery: Option<DeliveryStatus>,
        agents: Vec<Option<AgentStatus>>,
    ) -> AdvisorStatus {
        let mut status = self.status;
        let mut per_advisor = Default::default();
        if let Some(delivery) = delivery {
            per_advisor = delivery.per_advisor.clone();
            status.add_delivery(delivery);
        }
        let mut totals = Vec::new();
        for (part, agent) in self.members.iter().zip(agents) {
            let agent = agent.map(|mut a| {
                a.check_in = part.check_in;
                a
            });
            let Some(mut line) = part.line.clone() else {
                if let Some(agent) = agent {
                    status.add_agent(agent);
                }
                continue;
            };
            if let Some(counts) = per_advisor.get(&line.slug) {
                line.deliveries = counts.clone();
            }
            let paused = agent.as_ref().and_then(|a| a.paused.as_deref());
            if part.enabled && !part.held_off && paused.is_some() {
                line.state = AdvisorState::Failing;
                line.reason = paused.map(str::to_string);
            }
            if let Some(agent) = agent {
                line.model = agent.model.clone().or(line.model);
                line.agent = agent;
            }
            totals.push(line.agent.clone());
            status.advisors.push(line);
        }
        if !status.advisors.is_empty() {
            status.add_roster_totals(&totals);
        }
        status.spend.gate = self.gate;
        status.spend.action_gate = self.action_gate;
        status.add_spend(self.primary);
        fill_ceilings(&self.members, &mut status);
        status
    }
}

/// Fills in `status`, its spend already added (SP5): each named advisor's ceiling in its
/// spend (SP6), the unnamed advisor's in the session's, and its pause as the status's.
fn fill_ceilings(members: &[MemberPart], status: &mut AdvisorStatus) {
    for part in members {
        let (ceiling, paused) = part.ceiling;
        match &part.line {
            Some(line) => {
                if let Some(line) = status.advisors.iter_mut().find(|a| a.slug == line.slug) {
                    line.spend.ceiling = ceiling;
                }
            }
            None => {
                status.spend.advisors.ceiling = ceiling;
                if paused {
                    status.paused = Some(notice("reasonCeiling", &[]));
                }
            }
        }
    }
}
