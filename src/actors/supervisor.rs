//! Supervisor: owns the other actors and routes the host protocol. What it decides about
//! its members — who runs, pauses, resets (R1, R2), reloads (RO21), cadence (CA1–CA12) and
//! whether a turn end may wait — is [`Members`]'s (`members/`, plain code);
//! the actor carries out the changes it answers (`supervisor/members.rs`). The agent decides
//! what a failure means (F1–F3); the supervisor counts the failures for status and tells the
//! user about dropped backlogs and pauses (`supervisor/reports.rs`); the `/advisor` commands
//! are in `supervisor/commands.rs`.

use actix::{Actor, ActorContext, Addr, Context, Handler, Recipient, ResponseFuture};

use crate::actors::delivery_router::DeliveryRouter;
use crate::actors::links::SupervisorLinks;
use crate::config::RuntimeConfig;
use crate::delivery::turn_end::TurnInFlight;
use crate::domain::host::{HostEvent, RewriteKind, StepAdvice};
use crate::members::{Members, SessionState};
use crate::messages::host::{
    CloseSession, DisposeSession, RunInterrupted, RunStateChanged, SessionTransitionChanged,
    TakeStepAdvice, TranscriptRewritten, UserPrompted,
};
use crate::messages::review::{AskEnd, FlushAudit, ReleaseWaiters};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// The supervisor actor; the [`crate::AdvisorHandle`] talks to it. A thin shell over
/// [`Members`], which decides who runs, and over the router: it carries out their decisions.
pub struct Supervisor {
    /// The session's configuration and its members, with every decision about them.
    members: Members,
    /// The actors it talks to, as long as it lives.
    links: SupervisorLinks,
    /// What it keeps over the session beside its members.
    session: SessionState,
    /// The turn ends still waiting and a close asked for meanwhile (S1, R2).
    turns: TurnInFlight,
}

impl Supervisor {
    /// A supervisor that will start the runtime described by `config` and send host
    /// events to `host`.
    pub fn new(config: RuntimeConfig, host: Recipient<HostEvent>) -> Self {
        let supervisor = Self {
            members: Members::new(config),
            links: SupervisorLinks::new(host),
            session: SessionState::default(),
            turns: TurnInFlight::default(),
        };
        supervisor.update_turn_end_flag();
        supervisor
    }

    /// Shares `flag` with the session's handles: from now on it says whether a turn end
    /// may be held, so a handle waits for the answer only then (S1, D5, RO15).
    pub(crate) fn with_turn_end_flag(mut self, flag: Arc<AtomicBool>) -> Self {
        self.session.share_turn_end_flag(flag);
        self.update_turn_end_flag();
        self
    }

    /// Stores [`Members::turn_end_may_wait`] in the flag the handles read.
    fn update_turn_end_flag(&self) {
        (self.session).set_turn_end_may_wait(self.members.turn_end_may_wait());
    }

    /// Seeds at `len` messages of the initial transcript (X4) instead of the length it has
    /// when the supervisor is built. A runtime builds it later, on its arbiter, and a host
    /// may already have appended its next turn to the shared transcript by then; that turn
    /// must still count as new.
    pub(crate) fn seeded_at(mut self, len: Option<usize>) -> Self {
        self.members.seed_initial_at(len);
        self
    }

    /// Stops the supervisor once no `PrimaryTurnEnded` is waiting any more, so a close right after
    /// `DisposeSession` (which released the waits) answers them instead of dropping their replies
    /// (R2: dispose wakes every waiter).
    pub(crate) fn close(&mut self, ctx: &mut Context<Self>) {
        if self.turns.close() {
            ctx.stop();
        }
    }

    fn router(&mut self) -> Addr<DeliveryRouter> {
        self.links.router(self.members.config())
    }

    /// A rewrite (R1): what the primary spent stays, the rewritten transcript is not counted
    /// again (SP5); [`Members::reset`] decides the rest.
    fn reset(&mut self, ctx: &mut Context<Self>, kind: RewriteKind) {
        // CA11: another conversation beginning ends a transition.
        self.session.rewritten(kind);
        let changes = self.members.reset(kind);
        self.carry_out(ctx, changes);
    }
}

impl Actor for Supervisor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        self.router();
        let changes = self.members.started();
        self.carry_out(ctx, changes);
    }
}

impl Handler<TakeStepAdvice> for Supervisor {
    type Result = ResponseFuture<StepAdvice>;

    fn handle(&mut self, msg: TakeStepAdvice, _ctx: &mut Context<Self>) -> Self::Result {
        let router = self.router();
        Box::pin(async move { router.send(msg).await.unwrap_or_default() })
    }
}

impl Handler<RunStateChanged> for Supervisor {
    type Result = ();

    fn handle(&mut self, msg: RunStateChanged, _ctx: &mut Context<Self>) {
        self.router().do_send(msg);
    }
}

impl Handler<RunInterrupted> for Supervisor {
    type Result = ();

    fn handle(&mut self, msg: RunInterrupted, _ctx: &mut Context<Self>) {
        self.router().do_send(msg);
        // SP7: an abort ends every check-in's wait.
        self.members.end_check_in_waits();
        for agent in self.agents() {
            agent.do_send(ReleaseWaiters);
        }
    }
}

impl Handler<SessionTransitionChanged> for Supervisor {
    type Result = ();

    /// CA11: a transition being prepared releases every catch-up wait, and new ones return
    /// at once until it ends.
    fn handle(&mut self, msg: SessionTransitionChanged, _ctx: &mut Context<Self>) {
        self.session.set_transitioning(msg.preparing);
        tracing::info!(preparing = msg.preparing, "session transition");
        if msg.preparing {
            for agent in self.agents() {
                agent.do_send(ReleaseWaiters);
            }
        }
    }
}

impl Handler<UserPrompted> for Supervisor {
    type Result = ();

    fn handle(&mut self, msg: UserPrompted, _ctx: &mut Context<Self>) {
        self.router().do_send(msg);
        // SP7: a user prompt ends every check-in's wait.
        self.members.end_check_in_waits();
    }
}

impl Handler<TranscriptRewritten> for Supervisor {
    type Result = ();

    fn handle(&mut self, msg: TranscriptRewritten, ctx: &mut Context<Self>) {
        self.reset(ctx, msg.kind);
    }
}

impl Handler<DisposeSession> for Supervisor {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, _msg: DisposeSession, ctx: &mut Context<Self>) -> Self::Result {
        let (_, changes) = self.members.disable(AskEnd::Disposed);
        self.carry_out(ctx, changes);
        // G7: every member's transcript file is complete when dispose returns.
        let audits: Vec<_> = self
            .members
            .iter()
            .filter_map(|m| self.links.actors_of(m.slug())?.audit.clone())
            .collect();
        Box::pin(async move {
            for audit in audits {
                let _ = audit.send(FlushAudit).await;
            }
        })
    }
}

mod action_gate;
mod ceiling;
mod commands;
mod gate;
mod late_models;
mod members;
mod reload;
mod reports;
#[cfg(test)]
mod tests;
mod turn_end;

impl Handler<CloseSession> for Supervisor {
    type Result = ();

    fn handle(&mut self, _msg: CloseSession, ctx: &mut Context<Self>) {
        self.close(ctx);
    }
}
