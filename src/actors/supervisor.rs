//! Supervisor: owns the other actors, routes the host protocol and resets on rewrites
//! (R1, R2). The agent decides what a failure means (F1–F3); the supervisor counts the
//! failures for status and tells the user about dropped backlogs and pauses
//! (`supervisor/reports.rs`); the `/advisor` commands are in `supervisor/commands.rs`.

use actix::{
    Actor, ActorContext, ActorFutureExt, Addr, AsyncContext, Context, Handler, Recipient,
    ResponseActFuture, ResponseFuture, WrapFuture,
};

use crate::actors::delivery_router::DeliveryRouter;
use crate::actors::transcript_feed::TranscriptFeed;
use crate::actors::watchdog_loader::WatchdogLoader;
use crate::actors::wiring::{wait_after_turn, CatchUp, SlowWaitNotice, TurnWaits};
use crate::delivery::turn_end::TurnEndPlan;
use crate::delivery::TurnEndPlanned;
use crate::domain::host::{HostEvent, RewriteKind, StepAdvice};
use crate::domain::transcript::{Transcript, TranscriptMark};
use crate::feed::Update;
use crate::messages::delivery::{
    CloseWindow, PlanTurnEnd, ResetDelivery, SeedGuard, SetDeliveryEnabled,
};
use crate::messages::feed::{ObserveTurn, RewindCursor, TurnObserved};
use crate::messages::host::{
    CloseSession, DisposeSession, PrimaryTurnEnded, RunInterrupted, RunStateChanged,
    TakeStepAdvice, TranscriptRewritten, UserPrompted,
};
use crate::messages::review::{
    AskEnd, EndHalt, FlushAudit, QueueDelta, ReleaseWaiters, ResetAdvisor, ResumeReviews,
};
use crate::review::cadence::{Boundary, Decision};
use crate::review::judge_gate::GateCounts;
use members::Member;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::config::RuntimeConfig;
use crate::settings::{DeliveryPolicy, ReviewMode, SyncBacklog};
use crate::status::PrimaryTally;
use crate::texts::notice;

/// The supervisor actor; the [`crate::AdvisorHandle`] talks to it.
pub struct Supervisor {
    config: RuntimeConfig,
    host: Recipient<HostEvent>,
    router: Option<Addr<DeliveryRouter>>,
    /// The session's one WATCHDOG.md loader, every member's (RO13), started with the first.
    watchdog: Option<Addr<WatchdogLoader>>,
    /// The advisors: one per roster entry, or the unnamed advisor alone (RO12, RO13).
    members: Vec<Member>,
    enabled: bool,
    /// The session's epoch (R1): a reset resets every member.
    epoch: u64,
    /// `/advisor test` injections so far (C2): each is its own update for the note budget.
    tests_injected: u64,
    last_transcript: Option<Transcript>,
    initial_len: Option<usize>,
    /// `PrimaryTurnEnded` calls still waiting (S1); a close lets them answer first (R2).
    turn_waits: usize,
    /// A close was asked for while turn ends were waiting: stop when the last one answers.
    closing: bool,
    /// A branch change happened: the next turn end seeds the emission guard from the
    /// branch's advisories (P3).
    seed_guard: bool,
    /// The transcript's length at the last turn end (0 after a reset, R1): where a member
    /// rebuilt or added before the next one starts reading (RO21).
    turn_end_len: Option<usize>,
    /// A check of the roster files is running (RO21).
    roster_checking: bool,
    /// A turn ended while it ran: check again when it ends.
    roster_recheck: bool,
    /// Whether a turn end may be held now (S1, D5, RO15), shared with the session's
    /// handles: kept current as roster entries come, go and change.
    turn_end_waits: Arc<AtomicBool>,
    /// A syncBacklog wait ran long and the user was told so (S1): said once per session.
    sync_wait_said: Arc<AtomicBool>,
    /// The primary's usage as its transcript's assistant messages record it (SP5).
    primary_spend: PrimaryTally,
    /// The triage gate's counters (SP9).
    gate: GateCounts,
    /// WIP reviews scheduled at this boundary and waiting for the judge (SP9).
    gated: Vec<gate::GatedReview>,
}

impl Supervisor {
    /// A supervisor that will start the runtime described by `config` and send host
    /// events to `host`.
    pub fn new(config: RuntimeConfig, host: Recipient<HostEvent>) -> Self {
        let enabled = config.settings.enabled;
        let last_transcript = config.initial_transcript.clone();
        let initial_len = last_transcript.as_ref().map(Transcript::len);
        let members = config.member_plans().into_iter().map(Member::new).collect();
        let supervisor = Self {
            config,
            host,
            router: None,
            watchdog: None,
            members,
            enabled,
            epoch: 0,
            tests_injected: 0,
            last_transcript,
            initial_len,
            turn_waits: 0,
            closing: false,
            seed_guard: false,
            turn_end_len: None,
            roster_checking: false,
            roster_recheck: false,
            turn_end_waits: Arc::default(),
            sync_wait_said: Arc::default(),
            primary_spend: PrimaryTally::default(),
            gate: GateCounts::default(),
            gated: Vec::new(),
        };
        supervisor.update_turn_end_waits();
        supervisor
    }

    /// Shares `flag` with the session's handles: from now on it says whether a turn end
    /// may be held, so a handle waits for the answer only then (S1, D5, RO15).
    pub(crate) fn with_turn_end_flag(mut self, flag: Arc<AtomicBool>) -> Self {
        self.turn_end_waits = flag;
        self.update_turn_end_waits();
        self
    }

    /// Recomputes whether a turn end may be held: a syncBacklog threshold (S1, CA9: the
    /// session's or an advisor's own), or a catch-up block (D5) because the session's
    /// policy or an advisor's is `reconfirm` (RO15). Called when the members change (RO21).
    pub(super) fn update_turn_end_waits(&self) {
        let settings = &self.config.settings;
        let reconfirm = |policy: Option<DeliveryPolicy>| {
            policy.unwrap_or(settings.policy) == DeliveryPolicy::Reconfirm
        };
        let syncs = |plan: &crate::config::MemberPlan| {
            plan.sync_backlog.unwrap_or(settings.sync_backlog) != SyncBacklog::Off
        };
        let waits = (self.members.is_empty() && settings.sync_backlog != SyncBacklog::Off)
            || self
                .members
                .iter()
                .any(|m| syncs(&m.plan) || m.rebuild.as_ref().is_some_and(syncs))
            || self.members.iter().any(|m| {
                reconfirm(m.plan.policy)
                    || m.rebuild
                        .as_ref()
                        .is_some_and(|plan| reconfirm(plan.policy))
            })
            || (self.members.is_empty() && settings.policy == DeliveryPolicy::Reconfirm);
        self.turn_end_waits.store(waits, Ordering::Release);
    }

    /// Seeds at `len` messages of the initial transcript (X4) instead of the length it has
    /// when the supervisor is built. A runtime builds it later, on its arbiter, and a host
    /// may already have appended its next turn to the shared transcript by then; that turn
    /// must still count as new.
    pub(crate) fn seeded_at(mut self, len: Option<usize>) -> Self {
        self.initial_len = len;
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
        let policy = self.config.settings.policy;
        // The unnamed advisor's budget (RO12: a roster's shared value applies to it); a
        // named advisor registers its own (RO10).
        let max_notes = self.config.unnamed_plan().max_notes;
        let immune_turns = self.config.settings.immune_turns;
        let max_chars = self.config.settings.max_note_chars;
        let host = self.host.clone();
        let tap = self.config.advice_tap.clone();
        let router = actix::Supervisor::start(move |_| {
            DeliveryRouter::new(policy, max_notes, immune_turns, host)
                .with_max_note_chars(max_chars)
                .with_tap(tap.clone())
        });
        self.router = Some(router.clone());
        router
    }

    /// Stops every member and starts a new epoch: what a member still runs is discarded.
    fn stop_children(&mut self, cause: AskEnd) {
        let next = self.epoch + 1;
        for index in 0..self.members.len() {
            self.stop_member(index, next, cause);
        }
        self.epoch = next;
    }

    /// The transcript at its current end, to seed members started now at (X4).
    fn seed_at_end(&self) -> Option<(Transcript, usize)> {
        self.last_transcript.clone().map(|t| {
            let len = t.len();
            (t, len)
        })
    }

    fn reset(&mut self, kind: RewriteKind) {
        self.epoch += 1;
        tracing::info!(?kind, epoch = self.epoch, "advisor reset");
        // SP5: what the primary spent stays; the rewritten transcript is not counted again.
        self.primary_spend.rewritten();
        let branch = changes_branch(kind);
        self.seed_guard |= branch;
        // CA8: every reset drops the held updates (the bounded replay covers them); the
        // counters restart only when another conversation begins.
        let new_conversation = begins_conversation(kind);
        for member in &mut self.members {
            if new_conversation {
                member.cadence.restart();
            } else {
                member.cadence.drop_held();
            }
        }
        // R1, RO21: the rewound members read the transcript from 0 at the next turn end; a
        // member rebuilt or added before it does the same.
        self.turn_end_len = Some(0);
        self.router().do_send(ResetDelivery {
            epoch: self.epoch,
            branch,
            conversation: new_conversation,
        });
        // R1: session-wide, every member alike.
        for children in self.members.iter().filter_map(|m| m.children.as_ref()) {
            children.agent.do_send(ResetAdvisor {
                epoch: self.epoch,
                cause: AskEnd::Rewritten(kind),
                stopping: false,
            });
            if matches!(kind, RewriteKind::NewSession | RewriteKind::SessionSwitch) {
                // P7: a halt lasts until /advisor on, new settings or a new session.
                children.agent.do_send(EndHalt);
            }
            children.feed.do_send(RewindCursor);
        }
    }

    /// `/advisor on` (C1, RO19): the whole roster, members paused by `/advisor off NAME`
    /// included.
    fn enable(&mut self, ctx: &mut Context<Self>) -> String {
        if self.members.iter().all(|m| m.plan.model.is_err()) {
            self.enabled = true;
            return notice("noModelAssigned", &[]);
        }
        if !self.enabled {
            self.enabled = true;
            self.stop_children(AskEnd::TurnedOff);
            self.router().do_send(SetDeliveryEnabled { enabled: true });
            self.router().do_send(ResetDelivery {
                epoch: self.epoch,
                branch: false,
                conversation: false,
            });
            for member in &mut self.members {
                member.held_off = false;
            }
            let seed = self.seed_at_end();
            self.start_members(ctx, seed);
        } else {
            // On already, even with every member paused by name: no reset, so the notes the
            // paused members left deferred or held stay (RO19).
            for agent in self.agents() {
                agent.do_send(ResumeReviews);
            }
            for member in &mut self.members {
                member.held_off = false;
            }
            let seed = self.seed_at_end();
            self.start_members(ctx, seed);
        }
        notice("on", &[])
    }

    fn disable(&mut self, _ctx: &mut Context<Self>, cause: AskEnd) -> String {
        self.enabled = false;
        self.stop_children(cause);
        for member in &mut self.members {
            // CA7 (our choice): turning the advisor off drops what it held and its count.
            member.cadence.restart();
        }
        self.router().do_send(SetDeliveryEnabled { enabled: false });
        notice("off", &[])
    }
}

/// Whether a rewrite moves the advisor to another branch (P3's seed), as
/// opposed to a rewrite within the branch (compaction, pruning, one the feed detected).
fn changes_branch(kind: RewriteKind) -> bool {
    begins_conversation(kind) || kind == RewriteKind::Rewind
}

/// Whether a rewrite begins another conversation (CA8): the counters restart. Compaction,
/// pruning, a rewrite the feed detected and a rewind keep them.
fn begins_conversation(kind: RewriteKind) -> bool {
    matches!(
        kind,
        RewriteKind::SessionSwitch
            | RewriteKind::NewSession
            | RewriteKind::Branch
            | RewriteKind::TreeNavigation
    )
}

impl Actor for Supervisor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        self.router();
        if self.enabled {
            let seed = self.config.initial_transcript.clone().zip(self.initial_len);
            self.start_members(ctx, seed);
        }
    }
}

impl Handler<PrimaryTurnEnded> for Supervisor {
    type Result = ResponseActFuture<Self, ()>;

    fn handle(&mut self, msg: PrimaryTurnEnded, ctx: &mut Context<Self>) -> Self::Result {
        self.last_transcript = Some(msg.transcript.transcript().clone());
        let tally = &mut self.primary_spend;
        msg.transcript.read(|messages| tally.observe(messages));
        // SP6: before this boundary is scheduled, so a switch applies to it.
        self.check_spend_ceilings();
        let previous_len = self.turn_end_len.replace(msg.transcript.len());
        // RO21: an entry that changed on disk is rebuilt before its next review, reading
        // from the previous turn end so this turn is its first.
        self.rebuild_changed(ctx, previous_len);
        self.check_roster(ctx);
        let running = self.enabled && self.any_running();
        let seed = std::mem::take(&mut self.seed_guard);
        let plan = TurnEndPlan::decide(&msg.transcript, msg.will_continue, seed, running);
        let router = self.router();
        if let Some(advisories) = plan.seed_guard.clone() {
            router.do_send(SeedGuard {
                epoch: self.epoch,
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
            .filter_map(|m| Some((m.plan.slug().map(str::to_string), m.feed()?)))
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
        let cap = self.config.settings.sync_wait_cap;
        let hold = self.config.hold_wait_through_retries;
        // A replay paces itself with this wait (L2): nothing to tell a user there.
        let slow = (!hold).then(|| SlowWaitNotice {
            host: self.host.clone(),
            said: Arc::clone(&self.sync_wait_said),
        });
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
        match self.members.iter().find(|m| m.is(None)) {
            // SP6: a spend ceiling may have switched it to agent-end.
            Some(member) => member.cadence_in_effect(&self.config.settings).mode,
            None => self.config.settings.review_mode,
        }
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
                    act.reset(RewriteKind::Detected);
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
                                }) => Some((slug, update, paths_match)),
                                _ => None,
                            });
                    let scheduled = act.schedule(captured.collect(), wip, plan.continuation);
                    // SP9: the WIP reviews the gate took go to the judge first.
                    judged = act.judge_gated(ctx);
                    scheduled
                };
                let _ = planned_tx.send((plan, scheduled, judged));
            }),
        );
        planned_rx
    }

    /// Runs each member's capture of a boundary through its cadence (CA1–CA4): a scheduled
    /// review goes to its agent as one review carrying what it held (CA3, CA12); answers
    /// the members whose review was scheduled, with their catch-up (CA9).
    fn schedule(
        &mut self,
        captured: Vec<(Option<String>, Option<Update>, bool)>,
        wip: bool,
        continuation: bool,
    ) -> Vec<CatchUp> {
        let epoch = self.epoch;
        let gate = self.gate_on();
        let settings = &self.config.settings;
        let mut scheduled = Vec::new();
        for (slug, update, paths_match) in captured {
            let Some(member) = self
                .members
                .iter_mut()
                .find(|m| m.plan.slug() == slug.as_deref())
            else {
                continue;
            };
            let Some(agent) = member.agent() else {
                continue;
            };
            if !paths_match && update.is_some() {
                member.skipped_updates += 1;
            }
            let cadence = member.cadence_in_effect(settings);
            let boundary = Boundary {
                final_boundary: !wip,
                // CA17: the router keeps the continuation mark and answered it with the
                // turn end's plan.
                continuation,
                paths_match,
            };
            let decision = member.cadence.on_boundary(cadence, boundary, update, wip);
            if let Decision::Scheduled { updates, wip } = decision {
                if gate && wip && !updates.is_empty() {
                    // SP9: a WIP review waits for the judge; final ones never do.
                    let slug = member.plan.slug().map(str::to_string);
                    self.gated.push(gate::GatedReview { slug, updates });
                } else if !updates.is_empty() {
                    agent.do_send(QueueDelta {
                        epoch,
                        updates,
                        wip,
                    });
                }
                scheduled.push(CatchUp {
                    agent,
                    sync: cadence.sync,
                });
            }
        }
        scheduled
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
        for agent in self.agents() {
            agent.do_send(ReleaseWaiters);
        }
    }
}

impl Handler<UserPrompted> for Supervisor {
    type Result = ();

    fn handle(&mut self, msg: UserPrompted, _ctx: &mut Context<Self>) {
        self.router().do_send(msg);
    }
}

impl Handler<TranscriptRewritten> for Supervisor {
    type Result = ();

    fn handle(&mut self, msg: TranscriptRewritten, _ctx: &mut Context<Self>) {
        self.reset(msg.kind);
    }
}

impl Handler<DisposeSession> for Supervisor {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, _msg: DisposeSession, ctx: &mut Context<Self>) -> Self::Result {
        self.disable(ctx, AskEnd::Disposed);
        // G7: every member's transcript file is complete when dispose returns.
        let audits: Vec<_> = self
            .members
            .iter()
            .filter_map(|m| m.audit.clone())
            .collect();
        Box::pin(async move {
            for audit in audits {
                let _ = audit.send(FlushAudit).await;
            }
        })
    }
}

mod ceiling;
mod commands;
mod gate;
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
