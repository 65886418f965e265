//! The Supervisor's part of the spend ceiling (SP6): it adds up what each member spends
//! (every model run its agent reports, and what its transcript file recorded before, P9)
//! and checks each member's ceiling at every turn end. What to do is decided by the
//! member's [`crate::status::SpendCeiling`]; here it is carried out.

use actix::{ActorFutureExt, Addr, AsyncContext, Context, Handler};

use super::Supervisor;
use crate::actors::audit_log::AuditLog;
use crate::domain::advice::AdvisorLabel;
use crate::messages::review::{GetRestoredUsage, SpendRecorded};
use crate::status::{AdvisorStatus, CeilingAction, CeilingStatus};
use crate::texts::notice;

impl Handler<SpendRecorded> for Supervisor {
    type Result = ();

    fn handle(&mut self, msg: SpendRecorded, _ctx: &mut Context<Self>) {
        // Whatever the epoch: the ratio is over the whole session.
        if let Some(member) = self.member_of(msg.advisor.as_ref()) {
            member.ceiling.spent(&msg.usage);
        }
    }
}

/// Asks the transcript file `audit` of the member `advisor` names for the totals it
/// recorded before (P9), for that member's ratio (SP6).
pub(super) fn restore_spend(
    ctx: &mut Context<Supervisor>,
    advisor: Option<AdvisorLabel>,
    audit: &Addr<AuditLog>,
) {
    let asked = actix::fut::wrap_future::<_, Supervisor>(audit.send(GetRestoredUsage));
    ctx.spawn(asked.map(move |restored, act, _| {
        if let (Ok(usage), Some(member)) = (restored, act.member_of(advisor.as_ref())) {
            member.ceiling.restored(&usage);
        }
    }));
}

impl Supervisor {
    /// Checks every member's spend ceiling against the primary's spend so far (SP6): a
    /// member past it reviews at `agent-end` from this boundary on, one past twice it is
    /// paused; each told once, naming the ratio.
    pub(super) fn check_spend_ceilings(&mut self) {
        let primary = self.primary_spend.spend();
        for index in 0..self.members.len() {
            let settings = &self.config.settings;
            let member = &mut self.members[index];
            let limit = member.spend_limit(settings);
            let held_off = member.held_off;
            let actions = member.ceiling.check(limit, primary.as_ref(), held_off);
            let label = member.plan.label.clone();
            for action in actions {
                tracing::info!(advisor = ?label.as_ref().map(|l| &l.slug), ?action, "spend ceiling");
                self.notice_about(label.as_ref(), action.notice());
                if matches!(action, CeilingAction::Pause { .. }) {
                    self.hold_off(index);
                }
            }
        }
    }

    /// The ceilings for status (SP6), taken now and filled in once the agents answered.
    pub(super) fn ceiling_part(&self) -> CeilingPart {
        let settings = &self.config.settings;
        let members = self
            .members
            .iter()
            .map(|m| {
                let paused = m.held_off && m.ceiling.paused();
                let slug = m.plan.slug().map(str::to_string);
                (slug, m.ceiling.status(m.spend_limit(settings)), paused)
            })
            .collect();
        CeilingPart { members }
    }
}

/// The members' ceilings as status shows them (SP6): by slug (`None`: the unnamed
/// advisor), with whether the ceiling paused it.
pub(super) struct CeilingPart {
    members: Vec<(Option<String>, Option<CeilingStatus>, bool)>,
}

impl CeilingPart {
    /// Fills in `status`, its spend already added (SP5): each named advisor's ceiling in its
    /// spend, the unnamed advisor's in the session's, and its pause as the status's.
    pub(super) fn fill(self, status: &mut AdvisorStatus) {
        for (slug, ceiling, paused) in self.members {
            match slug {
                Some(slug) => {
                    if let Some(line) = status.advisors.iter_mut().find(|a| a.slug == slug) {
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
}
