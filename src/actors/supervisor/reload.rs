//! The Supervisor's hot reload of the roster files (RO21, as W8 for WATCHDOG.md): checked
//! off the actor's thread at each turn end, never holding the turn end. What the new roster
//! starts, stops, rebuilds or retunes is decided by [`crate::members::Members`].

use actix::{ActorFutureExt, AsyncContext, Context, WrapFuture};

use super::Supervisor;
use crate::roster::RosterRefresh;

impl Supervisor {
    /// Starts a check of the roster files when [`crate::members::Members`] says one is due;
    /// its result is carried out on the supervisor's context, and one more check follows
    /// when a turn ended while it ran.
    pub(super) fn check_roster(&mut self, ctx: &mut Context<Self>) {
        if !self.members.roster_check_due() {
            return;
        }
        let config = self.members.config();
        let Some(setup) = &config.roster else {
            return;
        };
        let Some(reload) = setup.reload.clone() else {
            return;
        };
        let previous = setup.roster.fingerprint.clone();
        let redactor = config.redactor();
        let blocking = config.blocking();
        let check = async move {
            let work = move || reload.refresh(redactor.as_ref(), &previous);
            blocking.run(work).await
        };
        let applied =
            async move { check.await.ok() }
                .into_actor(self)
                .map(move |outcome, act, ctx| {
                    let fresh = match outcome {
                        Some(RosterRefresh::Rebuilt(roster)) => Some(*roster),
                        _ => None,
                    };
                    let (changes, again) = act.members.roster_checked(fresh);
                    act.carry_out(ctx, changes);
                    if again {
                        act.check_roster(ctx);
                    }
                });
        ctx.spawn(applied);
    }
}
