//! Supervisor: owns the other actors and routes the host protocol. What it decides about
//! its members — who runs, pauses, resets (R1, R2), reloads (RO21), cadence (CA1–CA12) and
//! whether a turn end may wait — is [`Members`]'s (`members/`, plain code);
//! the actor carries out the changes it answers (`supervisor/members.rs`). The agent decides
//! what a failure means (F1–F3); the supervisor counts the failures for status and tells the
//! user about dropped backlogs and pauses (`supervisor/reports.rs`); the `/advisor` commands
//! are in `supervisor/commands.rs`.

use actix::{
    Actor, ActorContext, ActorFutureExt, Addr, AsyncContext, Context, Handler, Recipient,
    ResponseActFuture, ResponseFuture, WrapFuture,
};

use crate::actors::advisor_agent::AdvisorAgent;
use crate::actors::delivery_router::DeliveryRouter;
use crate::actors::transcript_feed::TranscriptFeed;
use crate::actors::wiring::{wait_after_turn, CatchUp, SlowWaitNotice, TurnWaits};
use crate::config::RuntimeConfig;
use crate::delivery::turn_end::TurnEndPlan;
use crate::delivery::TurnEndPlanned;
use crate::domain::host::{HostEvent, RewriteKind, StepAdvice};
use crate::domain::transcript::TranscriptMark;
use crate::members::{begins_conversation, Captured, Members};
use crate::messages::delivery::{CloseWindow, PlanTurnEnd, SeedGuard};
use crate::messages::feed::{ObserveTurn, TurnObserved};
use crate::messages::host::{
    CloseSession, DisposeSession, PrimaryTurnEnded, RunInterrupted, RunStateChanged,
    SessionTransitionChanged, TakeStepAdvice, TranscriptRewritten, UserPrompted,
};
use crate::messages::review::{AskEnd, FlushAudit, ReleaseWaiters};
use crate::settings::ReviewMode;
use crate::texts::notice;
use state::{SessionState, SupervisorLinks, TurnInFlight};
use std::sync::atomic::{AtomicBool, Ordering};
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
        self.session.turn_end_flag = flag;
        self.update_turn_end_flag();
        self
    }

    /// Stores [`Members::turn_end_may_wait`] in the flag the handles read.
    fn update_turn_end_flag(&self) {
        let waits = self.members.turn_end_may_wait();
        self.session.turn_end_flag.store(waits, Ordering::Release);
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
        if let Some(router) = &self.links.router {
            return router.clone();
        }
        let config = self.members.config();
        let policy = config.settings.policy;
        // The unnamed advisor's budget (RO12: a roster's shared value applies to it); a
        // named advisor registers its own (RO10).
        let max_notes = config.unnamed_plan().max_notes;
        let immune_turns = config.settings.immune_turns;
        let max_chars = config.settings.max_note_chars;
        let spend_controls = config.settings.spend_controls;
        let host = self.links.host.clone();
        let tap = config.advice_tap.clone();
        let router = actix::Supervisor::start(move |_| {
            DeliveryRouter::new(policy, max_notes, immune_turns, host)
                .with_max_note_chars(max_chars)
                .with_spend_controls(spend_controls)
                .with_tap(tap.clone())
        });
        self.links.router = Some(router.clone());
        router
    }

    /// A rewrite (R1): what the primary spent stays, the rewritten transcript is not counted
    /// again (SP5); [`Members::reset`] decides the rest.
    fn reset(&mut self, ctx: &mut Context<Self>, kind: RewriteKind) {
        self.session.primary_spend.rewritten();
        self.session.prompts.rewritten();
        if begins_conversation(kind) {
            // CA11: the other conversation began; the transition is over.
            self.session.set_transitioning(false);
        }
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

impl Handler<PrimaryTurnEnded> for Supervisor {
    type Result = ResponseActFuture<Self, ()>;

    fn handle(&mut self, msg: PrimaryTurnEnded, ctx: &mut Context<Self>) -> Self::Result {
        self.before_turn_end(ctx, &msg);
        let (turn_ended, feeds) = self.plan_turn_end(&msg);
        let router = self.router();
        if !turn_ended.can_wait || feeds.is_empty() {
            self.close_window_now(ctx, router, turn_ended);
            return Box::pin(actix::fut::ready(()));
        }
        let waits = self.turn_waits(router.clone());
        let planned_rx = self.observe_turn(ctx, &router, feeds, &msg.transcript, turn_ended);
        self.turns.begin();
        Box::pin(
            wait_turn_end(planned_rx, waits)
                .into_actor(self)
                .map(|(), act, ctx| {
                    if act.turns.end() {
                        ctx.stop();
                    }
                }),
        )
    }
}

/// The members' feeds by slug, each told of a turn end.
type Feeds = Vec<(Option<String>, Addr<TranscriptFeed>)>;

/// What the waits after a turn end need beside the router's plan: built before the turn is
/// observed, filled in with the plan and the scheduled reviews when it has been.
struct PendingWaits {
    agents: Vec<Addr<AdvisorAgent>>,
    router: Addr<DeliveryRouter>,
    cap: std::time::Duration,
    hold: bool,
    slow: Option<SlowWaitNotice>,
    released: Arc<AtomicBool>,
}

/// The wait of a turn end (S1, D5, CA9): once the turn is observed, the judge decides
/// (SP9), the catch-up waits run, and the window's notes go out (CA13).
async fn wait_turn_end(planned_rx: tokio::sync::oneshot::Receiver<Observed>, w: PendingWaits) {
    let (planned, scheduled, judged) = planned_rx.await.unwrap_or_default();
    if let Some(judged) = judged {
        // SP9: the judge decides (10 s at most) before the catch-up waits.
        let _ = judged.await;
    }
    let window = planned.window;
    let router = w.router.clone();
    wait_after_turn(TurnWaits {
        agents: w.agents,
        scheduled,
        router: w.router,
        plan: planned.catch_up,
        cap: w.cap,
        hold_through_retries: w.hold,
        slow: w.slow,
        released: w.released,
    })
    .await;
    // CA13: the waits are over; the window's notes go out as one message before the turn
    // end returns.
    if let Some(window) = window {
        let _ = router.send(CloseWindow { window }).await;
    }
}

/// What observing a turn answers: the router's plan, the members whose review was
/// scheduled (CA9) and the judge's decision to wait for (SP9).
type Observed = (TurnEndPlanned, Vec<CatchUp>, Option<gate::JudgeDone>);

impl Supervisor {
    /// What a turn end does before it is planned: the primary's spend counted (SP5), the
    /// spend ceilings checked (SP6: before this boundary is scheduled, so a switch applies
    /// to it) and changed roster entries rebuilt (RO21: reading from the previous turn end,
    /// so this turn is their first).
    fn before_turn_end(&mut self, ctx: &mut Context<Self>, msg: &PrimaryTurnEnded) {
        let tally = &mut self.session.primary_spend;
        msg.transcript.read(|messages| tally.observe(messages));
        if let Some(count) = tally.take_ignored() {
            tracing::warn!(count, "implausible primary usage values ignored (SP5)");
            let count = count.to_string();
            self.notice_about(None, notice("primaryUsageIgnored", &[("count", &count)]));
        }
        self.check_spend_ceilings(ctx);
        let changes = self.members.turn_ended(msg.transcript.transcript());
        self.carry_out(ctx, changes);
        self.check_roster(ctx);
    }

    /// The turn end's plan ([`TurnEndPlan::decide`]): the seed guard sent to the router
    /// (P3), the router's `PlanTurnEnd` and the feeds of the running members to tell.
    fn plan_turn_end(&mut self, msg: &PrimaryTurnEnded) -> (PlanTurnEnd, Feeds) {
        let running = self.members.reviewing();
        let seed = self.members.take_seed_guard();
        let plan = TurnEndPlan::decide(
            &msg.transcript,
            msg.will_continue,
            seed,
            running,
            &mut self.session.prompts,
        );
        if let Some(advisories) = plan.seed_guard.clone() {
            self.router().do_send(SeedGuard {
                epoch: self.members.epoch(),
                advisories,
            });
        }
        let turn_ended = PlanTurnEnd {
            terminal: plan.terminal,
            answered: plan.answered,
            wip: plan.wip,
            can_wait: plan.review,
            window: plan.window,
            last_prompt: plan.last_prompt,
            review_mode: self.unnamed_review_mode(),
        };
        let feeds = self
            .members
            .iter()
            .filter_map(|m| Some((m.slug().map(str::to_string), self.feed_of(m.slug())?)))
            .collect();
        (turn_ended, feeds)
    }

    /// Nothing to wait for: a final boundary's window (CA13) closes at once, before the
    /// supervisor takes its next message.
    fn close_window_now(
        &mut self,
        ctx: &mut Context<Self>,
        router: Addr<DeliveryRouter>,
        turn_ended: PlanTurnEnd,
    ) {
        let planned = router.send(turn_ended);
        ctx.wait(
            async move {
                if let Ok(TurnEndPlanned {
                    window: Some(window),
                    ..
                }) = planned.await
                {
                    let _ = router.send(CloseWindow { window }).await;
                }
            }
            .into_actor(self),
        );
    }

    /// The waits of a turn end that may wait, over the running members' agents.
    fn turn_waits(&self, router: Addr<DeliveryRouter>) -> PendingWaits {
        let hold = self.members.config().hold_wait_through_retries;
        PendingWaits {
            agents: self.agents(),
            router,
            cap: self.members.config().settings.sync_wait_cap,
            hold,
            // A replay paces itself with this wait (L2): nothing to tell a user there.
            slow: (!hold).then(|| SlowWaitNotice {
                host: self.links.host.clone(),
                said: Arc::clone(&self.session.sync_wait_said),
            }),
            released: Arc::clone(&self.session.transitioning),
        }
    }
}

impl Supervisor {
    /// The unnamed advisor's review mode (CA1, CA5), read from the live settings at every
    /// boundary.
    fn unnamed_review_mode(&self) -> ReviewMode {
        // SP6: a spend ceiling may have switched it to agent-end.
        self.members.unnamed_review_mode()
    }

    /// Tells the router and every member's feed (by slug) of the turn end `turn_ended` at
    /// `transcript`. The router is told first and answers before any feed is told, so its
    /// plan — the catch-up block (D5), whether the boundary is a continuation's (CA17), the
    /// window it opened (CA13) — is known when each member's capture goes through its
    /// cadence (CA1–CA4) and a scheduled review is queued at its agent. The receiver gets
    /// that plan and the members whose review was scheduled (CA9) once all have answered.
    /// A feed that saw a rewrite resets the session first.
    fn observe_turn(
        &mut self,
        ctx: &mut Context<Self>,
        router: &Addr<DeliveryRouter>,
        feeds: Feeds,
        transcript: &TranscriptMark,
        turn_ended: PlanTurnEnd,
    ) -> tokio::sync::oneshot::Receiver<Observed> {
        // The router first: it hears of the turn end before the review of its delta can
        // raise anything (D4's terminal flag, D7's count, CA13's window), and its answer
        // (CA17: a continuation boundary) is known before the feeds observe. Every
        // member's feed gets the same turn (RO13).
        let wip = turn_ended.wip;
        let plan = router.send(turn_ended);
        let (slugs, feeds): (Vec<_>, Vec<_>) = feeds.into_iter().unzip();
        let transcript = transcript.clone();
        // The turn is observed before the supervisor takes its next message: a host that
        // did not wait for this turn end (nothing to wait for, see `AdvisorHandle::turn_end`)
        // still has its next turn end checked against this one's cursor and epoch, and a
        // status query sees this turn's delta queued.
        let (planned_tx, planned_rx) = tokio::sync::oneshot::channel();
        ctx.wait(
            async move {
                let plan = plan.await.unwrap_or_default();
                let observed = feeds.iter().map(|feed| {
                    feed.send(ObserveTurn {
                        transcript: transcript.clone(),
                        wip,
                    })
                });
                let outcomes = futures_util::future::join_all(observed).await;
                (plan, outcomes)
            }
            .into_actor(self)
            .map(move |(plan, outcomes), act, ctx| {
                let (scheduled, judged) = act.observed(ctx, slugs, outcomes, wip, &plan);
                let _ = planned_tx.send((plan, scheduled, judged));
            }),
        );
        planned_rx
    }

    /// What the feeds answered for a turn end: a rewrite one saw resets the session (R1);
    /// otherwise each member's capture goes through its cadence (CA1–CA4, CA17: with the
    /// router's continuation mark), the WIP reviews the gate takes go to the judge first
    /// (SP9), and the members whose review was scheduled are answered with their agents.
    fn observed(
        &mut self,
        ctx: &mut Context<Self>,
        slugs: Vec<Option<String>>,
        outcomes: Vec<Result<TurnObserved, actix::MailboxError>>,
        wip: bool,
        plan: &TurnEndPlanned,
    ) -> (Vec<CatchUp>, Option<gate::JudgeDone>) {
        if outcomes
            .iter()
            .any(|o| matches!(o, Ok(TurnObserved::Rewrite)))
        {
            self.reset(ctx, RewriteKind::Detected);
            return (Vec::new(), None);
        }
        let captured = slugs
            .into_iter()
            .zip(outcomes)
            .filter_map(|(slug, o)| match o {
                Ok(TurnObserved::Captured {
                    update,
                    paths_match,
                }) => Some(Captured {
                    slug,
                    update,
                    paths_match,
                }),
                _ => None,
            });
        let (changes, scheduled) =
            self.members
                .on_boundary(captured.collect(), wip, plan.continuation);
        let changes = self.gate_reviews(changes);
        self.carry_out(ctx, changes);
        let judged = self.judge_gated(ctx);
        let scheduled = scheduled
            .into_iter()
            .filter_map(|s| {
                let agent = self.agent_of(s.slug.as_deref())?;
                Some(CatchUp {
                    agent,
                    sync: s.sync,
                })
            })
            .collect();
        (scheduled, judged)
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
            .filter_map(|m| self.actors_of(m.slug())?.audit.clone())
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
mod state;
#[cfg(test)]
mod tests;

impl Handler<CloseSession> for Supervisor {
    type Result = ();

    fn handle(&mut self, _msg: CloseSession, ctx: &mut Context<Self>) {
        self.close(ctx);
    }
}
