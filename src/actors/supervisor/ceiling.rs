//! The Supervisor's part of the spend ceiling (SP6): it passes on what each member spends
//! (every model run its agent reports, and what its transcript file recorded before, P9)
//! and has [`crate::members::Members`] check the ceilings at every turn end; the notices and
//! changes it answers are carried out here.

use actix::{ActorFutureExt, Addr, AsyncContext, Context, Handler};

use super::Supervisor;
use crate::actors::audit_log::AuditLog;
use crate::messages::review::{GetRestoredUsage, SpendRecorded};

impl Handler<SpendRecorded> for Supervisor {
    type Result = ();

    fn handle(&mut self, msg: SpendRecorded, _ctx: &mut Context<Self>) {
        // Whatever the epoch: the ratio is over the whole session.
        self.members.spent(msg.advisor.as_ref(), &msg.usage);
    }
}

/// Asks the transcript file `audit` of the member `slug` for the totals it recorded before
/// (P9), for that member's ratio (SP6).
pub(super) fn restore_spend(
    ctx: &mut Context<Supervisor>,
    slug: Option<String>,
    audit: &Addr<AuditLog>,
) {
    let asked = actix::fut::wrap_future::<_, Supervisor>(audit.send(GetRestoredUsage));
    ctx.spawn(asked.map(move |restored, act, _| {
        if let Ok(usage) = restored {
            act.members.restored(slug.as_deref(), &usage);
        }
    }));
}

impl Supervisor {
    /// Checks every member's spend ceiling against the primary's spend so far (SP6) and
    /// carries out what [`crate::members::Members::check_spend_ceilings`] decided.
    pub(super) fn check_spend_ceilings(&mut self, ctx: &mut Context<Self>) {
        let primary = self.session.primary_spend();
        let (lines, changes) = self.members.check_spend_ceilings(primary.as_ref());
        for (advisor, text) in lines {
            self.links.notice_about(advisor.as_ref(), text);
        }
        self.carry_out(ctx, changes);
    }
}
