//! A turn end (S1, D5, CA9, CA13, CA17, SP5, SP6, SP9, RO21): what comes before it, its plan
//! ([`TurnEndPlan::decide`], plain, as the messages [`turn_end_messages`] makes of it), what
//! is sent to the router and each member's feed, and the wait until the reviews it scheduled
//! have caught up ([`wait_turn_end`]).

use actix::{ActorContext, ActorFutureExt, Addr, AsyncContext, Context, Handler};
use actix::{ResponseActFuture, WrapFuture};
use tokio::sync::oneshot;

use super::Supervisor;
use crate::actors::delivery_router::DeliveryRouter;
use crate::actors::transcript_feed::TranscriptFeed;
use crate::actors::wiring::{wait_turn_end, CatchUp, JudgeDone, Observed};
use crate::actors::wiring::{SlowWaitNotice, TurnWaits};
use crate::delivery::turn_end::TurnEndPlan;
use crate::delivery::TurnEndPlanned;
use crate::domain::host::RewriteKind;
use crate::domain::transcript::TranscriptMark;
use crate::messages::delivery::{turn_end_messages, CloseWindow, PlanTurnEnd};
use crate::messages::feed::{ObserveTurn, TurnObserved};
use crate::messages::host::PrimaryTurnEnded;

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

/// The turn the feeds are told of: the transcript as it stood and whether it is work in
/// progress (P1).
struct TurnSeen {
    transcript: TranscriptMark,
    wip: bool,
}

impl Supervisor {
    /// What a turn end does before it is planned: the primary's spend counted (SP5), the
    /// spend ceilings checked (SP6: before this boundary is scheduled, so a switch applies
    /// to it) and changed roster entries rebuilt (RO21: reading from the previous turn end,
    /// so this turn is their first).
    fn before_turn_end(&mut self, ctx: &mut Context<Self>, msg: &PrimaryTurnEnded) {
        if let Some(text) = self.session.primary_turn_ended(&msg.transcript) {
            self.links.notice_about(None, text);
        }
        self.check_spend_ceilings(ctx);
        let changes = self.members.turn_ended(msg.transcript.transcript());
        self.carry_out(ctx, changes);
        self.check_roster(ctx);
    }

    /// The turn end's plan ([`TurnEndPlan::decide`]) as the messages it sends: the seed
    /// guard, sent to the router now (P3), and the router's `PlanTurnEnd`; and the feeds of
    /// the running members to tell.
    fn plan_turn_end(&mut self, msg: &PrimaryTurnEnded) -> (PlanTurnEnd, Feeds) {
        let running = self.members.reviewing();
        let seed = self.members.take_seed_guard();
        let prompts = self.session.prompts();
        let plan = TurnEndPlan::decide(&msg.transcript, msg.will_continue, seed, running, prompts);
        // SP6: a spend ceiling may have switched the unnamed advisor to agent-end.
        let mode = self.members.unnamed_review_mode();
        let (seed, turn_ended) = turn_end_messages(plan, self.members.epoch(), mode);
        if let Some(seed) = seed {
            self.router().do_send(seed);
        }
        let feeds = (self.members.iter())
            .filter_map(|m| Some((m.slug().map(str::to_string), self.links.feed_of(m.slug())?)))
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

    /// The waits of a turn end that may wait, over the running members' agents; the
    /// router's plan and the scheduled reviews are filled in once the turn is observed.
    fn turn_waits(&self, router: Addr<DeliveryRouter>) -> TurnWaits {
        let config = self.members.config();
        let hold = config.hold_wait_through_retries;
        let (said, released) = self.session.wait_flags();
        TurnWaits {
            agents: self.agents(),
            scheduled: Vec::new(),
            router,
            plan: None,
            cap: config.settings.sync_wait_cap,
            hold_through_retries: hold,
            // A replay paces itself with this wait (L2): nothing to tell a user there.
            slow: (!hold).then(|| SlowWaitNotice {
                host: self.links.host().clone(),
                said,
            }),
            released,
        }
    }
    /// Tells the router and every member's feed (by slug) of the turn end `turn_ended` at
    /// `transcript`. The router is told first and answers before any feed is told, so its
    /// plan — the catch-up block (D5), whether the boundary is a continuation's (CA17), the
    /// window it opened (CA13) — is known when each member's capture goes through its
    /// cadence (CA1–CA4) and a scheduled review is queued at its agent. The receiver gets
    /// that plan and the members whose review was scheduled (CA9) once all have answered.
    fn observe_turn(
        &mut self,
        ctx: &mut Context<Self>,
        router: &Addr<DeliveryRouter>,
        feeds: Feeds,
        transcript: &TranscriptMark,
        turn_ended: PlanTurnEnd,
    ) -> oneshot::Receiver<Observed> {
        // The router first: it hears of the turn end before the review of its delta can
        // raise anything (D4's terminal flag, D7's count, CA13's window), and its answer
        // (CA17: a continuation boundary) is known before the feeds observe. Every
        // member's feed gets the same turn (RO13).
        let turn = TurnSeen {
            wip: turn_ended.wip,
            transcript: transcript.clone(),
        };
        let plan = router.send(turn_ended);
        let (planned_tx, planned_rx) = oneshot::channel();
        // The turn is observed before the supervisor takes its next message: a host that
        // did not wait for this turn end (nothing to wait for, see `AdvisorHandle::turn_end`)
        // still has its next turn end checked against this one's cursor and epoch, and a
        // status query sees this turn's delta queued.
        ctx.wait(
            async move { plan.await.unwrap_or_default() }
                .into_actor(self)
                .map(move |plan, act, ctx| {
                    act.observe_feeds(ctx, feeds, turn, plan, planned_tx, true);
                }),
        );
        planned_rx
    }

    /// Tells each member's feed of `turn` and answers `planned_tx` with what they captured.
    /// A feed that saw a rewrite (X1) resets the session (R1); the same turn is then
    /// observed once more from the rewound cursors (`retry`), so the turn that revealed the
    /// rewrite sends the whole current transcript instead of waiting for a next turn end that
    /// may never come (a host's last turn).
    fn observe_feeds(
        &mut self,
        ctx: &mut Context<Self>,
        feeds: Feeds,
        turn: TurnSeen,
        plan: TurnEndPlanned,
        planned_tx: oneshot::Sender<Observed>,
        retry: bool,
    ) {
        let (slugs, addrs): (Vec<_>, Vec<_>) = feeds.iter().cloned().unzip();
        let message = ObserveTurn {
            transcript: turn.transcript.clone(),
            wip: turn.wip,
        };
        ctx.wait(
            async move {
                let observed = addrs.iter().map(|feed| feed.send(message.clone()));
                futures_util::future::join_all(observed).await
            }
            .into_actor(self)
            .map(move |outcomes, act, ctx| {
                let rewritten = outcomes
                    .iter()
                    .any(|o| matches!(o, Ok(TurnObserved::Rewrite)));
                if rewritten {
                    // R1: the rewind reaches each feed before the turn is observed again.
                    act.reset(ctx, RewriteKind::Detected);
                    if retry {
                        act.observe_feeds(ctx, feeds, turn, plan, planned_tx, false);
                    } else {
                        let _ = planned_tx.send((plan, Vec::new(), None));
                    }
                    return;
                }
                let (scheduled, judged) = act.observed(ctx, slugs, outcomes, turn.wip, &plan);
                let _ = planned_tx.send((plan, scheduled, judged));
            }),
        );
    }

    /// What the feeds captured at a turn end: each member's capture goes through its cadence
    /// (CA1–CA4, CA17: with the router's continuation mark), the WIP reviews the gate takes
    /// go to the judge first (SP9), and the members whose review was scheduled are answered
    /// with their agents.
    fn observed(
        &mut self,
        ctx: &mut Context<Self>,
        slugs: Vec<Option<String>>,
        outcomes: Vec<Result<TurnObserved, actix::MailboxError>>,
        wip: bool,
        plan: &TurnEndPlanned,
    ) -> (Vec<CatchUp>, Option<JudgeDone>) {
        let captured = (slugs.into_iter().zip(outcomes))
            .filter_map(|(slug, observed)| observed.ok()?.captured(slug))
            .collect();
        let (changes, scheduled) = self.members.on_boundary(captured, wip, plan.continuation);
        let changes = (self.session).gate_reviews(changes, self.members.judge_gate_on());
        self.carry_out(ctx, changes);
        let judged = self.judge_gated(ctx);
        let scheduled = scheduled
            .into_iter()
            .filter_map(|s| {
                let agent = self.links.agent_of(s.slug.as_deref())?;
                Some(CatchUp {
                    agent,
                    sync: s.sync,
                })
            })
            .collect();
        (scheduled, judged)
    }
}
