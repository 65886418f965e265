//! Supervisor: owns the other actors and routes the host protocol. What it decides about
//! its members — who runs, pauses, resets (R1, R2), reloads (RO21), cadence (CA1–CA12) and
//! whether a turn end may wait — is [`Members`]'s (`config/members/state.rs`, plain code);
//! the actor carries out the changes it answers (`supervisor/members.rs`). The agent decides
//! what a failure means (F1–F3); the supervisor counts the failures for status and tells the
//! user about dropped backlogs and pauses (`supervisor/reports.rs`); the `/advisor` commands
//! are in `supervisor/commands.rs`.

use actix::{
    Actor, ActorContext, ActorFutureExt, Addr, AsyncContext, Context, Handler, Recipient,
    ResponseActFuture, ResponseFuture, WrapFuture,
};

use crate::actors::delivery_router::DeliveryRouter;
use crate::actors::transcript_feed::TranscriptFeed;
use crate::actors::watchdog_loader::WatchdogLoader;
use crate::actors::wiring::{wait_after_turn, CatchUp, SlowWaitNotice, TurnWaits};
use crate::config::{begins_conversation, Captured, Members, RuntimeConfig};
use crate::delivery::turn_end::TurnEndPlan;
use crate::delivery::{PromptCursor, TurnEndPlanned};
use crate::domain::host::{HostEvent, RewriteKind, StepAdvice};
use crate::domain::transcript::TranscriptMark;
use crate::messages::delivery::{CloseWindow, PlanTurnEnd, SeedGuard};
use crate::messages::feed::{ObserveTurn, TurnObserved};
use crate::messages::host::{
    CloseSession, DisposeSession, PrimaryTurnEnded, RunInterrupted, RunStateChanged,
    SessionTransitionChanged, TakeStepAdvice, TranscriptRewritten, UserPrompted,
};
use crate::messages::review::{AskEnd, FlushAudit, ReleaseWaiters};
use crate::review::judge_gate::GateCounts;
use crate::settings::ReviewMode;
use crate::status::PrimaryTally;
use crate::texts::notice;
use members::ActorsBySlug;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The supervisor actor; the [`crate::AdvisorHandle`] talks to it. A thin shell over
/// [`Members`], which decides who runs, and over the router: it carries out their decisions.
pub struct Supervisor {
    /// The session's configuration and its members, with every decision about them.
    members: Members,
    /// The actors of the members that have any, by slug.
    actors: ActorsBySlug,
    host: Recipient<HostEvent>,
    router: Option<Addr<DeliveryRouter>>,
    /// The session's one WATCHDOG.md loader, every member's (RO13), started with the first.
    watchdog: Option<Addr<WatchdogLoader>>,
    /// `PrimaryTurnEnded` calls still waiting (S1); a close lets them answer first (R2).
    turn_waits: usize,
    /// A close was asked for while turn ends were waiting: stop when the last one answers.
    closing: bool,
    /// Whether a turn end may be held now (S1, D5, RO15), shared with the session's
    /// handles: kept current as roster entries come, go and change.
    turn_end_flag: Arc<AtomicBool>,
    /// A syncBacklog wait ran long and the user was told so (S1): said once per session.
    sync_wait_said: Arc<AtomicBool>,
    /// The primary's usage as its transcript's assistant messages record it (SP5).
    primary_spend: PrimaryTally,
    /// The last genuine user prompt, kept as the transcript grows (CA17, O(delta)).
    prompts: PromptCursor,
    /// Set while a session transition is being prepared (CA11): catch-up waits return at
    /// once.
    transitioning: Arc<AtomicBool>,
    /// The triage gate's counters (SP9).
    gate: GateCounts,
    /// WIP reviews scheduled at this boundary and waiting for the judge (SP9).
    gated: Vec<gate::GatedReview>,
    /// The action gate's cache, breaker and counters (GT6–GT8).
    action_gate: crate::gate::GateState,
}

impl Supervisor {
    /// A supervisor that will start the runtime described by `config` and send host
    /// events to `host`.
    pub fn new(config: RuntimeConfig, host: Recipient<HostEvent>) -> Self {
        let supervisor = Self {
            members: Members::new(config),
            actors: ActorsBySlug::default(),
            host,
            router: None,
            watchdog: None,
            turn_waits: 0,
            closing: false,
            turn_end_flag: Arc::default(),
            sync_wait_said: Arc::default(),
            primary_spend: PrimaryTally::default(),
            prompts: PromptCursor::default(),
            transitioning: Arc::default(),
            gate: GateCounts::default(),
            gated: Vec::new(),
            action_gate: crate::gate::GateState::default(),
        };
        supervisor.update_turn_end_flag();
        supervisor
    }

    /// Shares `flag` with the session's handles: from now on it says whether a turn end
    /// may be held, so a handle waits for the answer only then (S1, D5, RO15).
    pub(crate) fn with_turn_end_flag(mut self, flag: Arc<AtomicBool>) -> Self {
        self.turn_end_flag = flag;
        self.update_turn_end_flag();
        self
    }

    /// Stores [`Members::turn_end_may_wait`] in the flag the handles read.
    fn update_turn_end_flag(&self) {
        let waits = self.members.turn_end_may_wait();
        self.turn_end_flag.store(waits, Ordering::Release);
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
        self.closing = true;
        if self.turn_waits == 0 {
            ctx.stop();
        }
    }

    fn router(&mut self) -> Addr<DeliveryRouter> {
        if let Some(router) = &self.router {
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
        let host = self.host.clone();
        let tap = config.advice_tap.clone();
        let router = actix::Supervisor::start(move |_| {
            DeliveryRouter::new(policy, max_notes, immune_turns, host)
                .with_max_note_chars(max_chars)
                .with_spend_controls(spend_controls)
                .with_tap(tap.clone())
        });
        self.router = Some(router.clone());
        router
    }

    /// A rewrite (R1): what the primary spent stays, the rewritten transcript is not counted
    /// again (SP5); [`Members::reset`] decides the rest.
    fn reset(&mut self, ctx: &mut Context<Self>, kind: RewriteKind) {
        self.primary_spend.rewritten();
        self.prompts.rewritten();
        if begins_conversation(kind) {
            // CA11: the other conversation began; the transition is over.
            self.transitioning.store(false, Ordering::Relaxed);
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
        let tally = &mut self.primary_spend;
        msg.transcript.read(|messages| tally.observe(messages));
        if let Some(count) = tally.take_ignored() {
            tracing::warn!(count, "implausible primary usage values ignored (SP5)");
            let count = count.to_string();
            self.notice_about(None, notice("primaryUsageIgnored", &[("count", &count)]));
        }
        // SP6: before this boundary is scheduled, so a switch applies to it.
        self.check_spend_ceilings(ctx);
        // RO21: an entry that changed on disk is rebuilt before its next review, reading
        // from the previous turn end so this turn is its first.
        let changes = self.members.turn_ended(msg.transcript.transcript());
        self.carry_out(ctx, changes);
        self.check_roster(ctx);
        let running = self.members.reviewing();
        let seed = self.members.take_seed_guard();
        let plan = TurnEndPlan::decide(
            &msg.transcript,
            msg.will_continue,
            seed,
            running,
            &mut self.prompts,
        );
        let router = self.router();
        if let Some(advisories) = plan.seed_guard.clone() {
            router.do_send(SeedGuard {
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
        let feeds: Vec<_> = self
            .members
            .iter()
            .filter_map(|m| Some((m.slug().map(str::to_string), self.feed_of(m.slug())?)))
            .collect();
        if !plan.review || feeds.is_empty() {
            // Nothing to wait for: a final boundary's window (CA13) closes at once, before
            // the supervisor takes its next message.
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
            return Box::pin(actix::fut::ready(()));
        }
        let agents = self.agents();
        let cap = self.members.config().settings.sync_wait_cap;
        let hold = self.members.config().hold_wait_through_retries;
        // A replay paces itself with this wait (L2): nothing to tell a user there.
        let slow = (!hold).then(|| SlowWaitNotice {
            host: self.host.clone(),
            said: Arc::clone(&self.sync_wait_said),
        });
        let released = Arc::clone(&self.transitioning);
        let planned_rx = self.observe_turn(ctx, &router, feeds, &msg.transcript, turn_ended);
        self.turn_waits += 1;
        Box::pin(
            async move {
                let (planned, scheduled, judged) = planned_rx.await.unwrap_or_default();
                if let Some(judged) = judged {
                    // SP9: the judge decides (10 s at most) before the catch-up waits.
                    let _ = judged.await;
                }
                let window = planned.window;
                let waits = TurnWaits {
                    agents,
                    scheduled,
                    router: router.clone(),
                    plan: planned.catch_up,
                    cap,
                    hold_through_retries: hold,
                    slow,
                    released,
                };
                wait_after_turn(waits).await;
                // CA13: the waits are over; the window's notes go out as one message
                // before the turn end returns.
                if let Some(window) = window {
                    let _ = router.send(CloseWindow { window }).await;
                }
            }
            .into_actor(self)
            .map(|(), act, ctx| {
                act.turn_waits -= 1;
                if act.closing && act.turn_waits == 0 {
                    ctx.stop();
                }
            }),
        )
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
        feeds: Vec<(Option<String>, Addr<TranscriptFeed>)>,
        transcript: &TranscriptMark,
        turn_ended: PlanTurnEnd,
    ) -> tokio::sync::oneshot::Receiver<(TurnEndPlanned, Vec<CatchUp>, Option<gate::JudgeDone>)>
    {
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
                let mut judged = None;
                let scheduled = if outcomes
                    .iter()
                    .any(|o| matches!(o, Ok(TurnObserved::Rewrite)))
                {
                    act.reset(ctx, RewriteKind::Detected);
                    Vec::new()
                } else {
                    let captured =
                        slugs
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
                    // CA17: the router keeps the continuation mark and answered it with
                    // the turn end's plan.
                    let (changes, scheduled) =
                        act.members
                            .on_boundary(captured.collect(), wip, plan.continuation);
                    // SP9: the WIP reviews the gate takes go to the judge first.
                    let changes = act.gate_reviews(changes);
                    act.carry_out(ctx, changes);
                    judged = act.judge_gated(ctx);
                    scheduled
                        .into_iter()
                        .filter_map(|s| {
                            let agent = act.agent_of(s.slug.as_deref())?;
                            Some(CatchUp {
                                agent,
                                sync: s.sync,
                            })
                        })
                        .collect()
                };
                let _ = planned_tx.send((plan, scheduled, judged));
            }),
        );
        planned_rx
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
        self.transitioning.store(msg.preparing, Ordering::Relaxed);
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
#[cfg(test)]
mod tests;

impl Handler<CloseSession> for Supervisor {
    type Result = ();

    fn handle(&mut self, _msg: CloseSession, ctx: &mut Context<Self>) {
        self.close(ctx);
    }
}
