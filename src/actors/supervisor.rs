//! Supervisor: owns the other actors, routes the host protocol and resets on rewrites
//! (R1, R2). The agent decides what a failure means (F1–F3); the supervisor counts the
//! failures for status and tells the user about dropped backlogs and pauses
//! (`supervisor/reports.rs`); the `/advisor` commands are in `supervisor/commands.rs`.

use actix::{
    Actor, ActorContext, ActorFutureExt, Addr, AsyncContext, Context, Handler, Recipient,
    ResponseActFuture, ResponseFuture, WrapFuture,
};

use crate::actors::audit_log::AuditLog;
use crate::actors::delivery_router::DeliveryRouter;
use crate::actors::wiring::{start_children, wait_after_turn, AgentReports, Children};
use crate::delivery::turn_end::TurnEndPlan;
use crate::domain::host::{HostEvent, RewriteKind, StepAdvice};
use crate::domain::transcript::Transcript;
use crate::messages::delivery::{PlanTurnEnd, ResetDelivery, SeedGuard, SetDeliveryEnabled};
use crate::messages::feed::{ObserveTurn, RewindCursor, TurnObserved};
use crate::messages::host::{
    CloseSession, DisposeSession, PrimaryTurnEnded, RunInterrupted, RunStateChanged,
    TakeStepAdvice, TranscriptRewritten, UserPrompted,
};
use crate::messages::review::{
    AskEnd, EndHalt, FlushAudit, ReleaseWaiters, ResetAdvisor, ResumeReviews,
};
use crate::messages::tools::ClearToolSession;

use crate::config::RuntimeConfig;
use crate::texts::notice;

/// The supervisor actor; the [`crate::AdvisorHandle`] talks to it.
pub struct Supervisor {
    config: RuntimeConfig,
    host: Recipient<HostEvent>,
    router: Option<Addr<DeliveryRouter>>,
    audit: Option<Addr<AuditLog>>,
    children: Option<Children>,
    enabled: bool,
    epoch: u64,
    failure_count: u64,
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
}

impl Supervisor {
    /// A supervisor that will start the runtime described by `config` and send host
    /// events to `host`.
    pub fn new(config: RuntimeConfig, host: Recipient<HostEvent>) -> Self {
        let enabled = config.settings.enabled;
        let last_transcript = config.initial_transcript.clone();
        let initial_len = last_transcript.as_ref().map(Transcript::len);
        Self {
            config,
            host,
            router: None,
            audit: None,
            children: None,
            enabled,
            epoch: 0,
            failure_count: 0,
            tests_injected: 0,
            last_transcript,
            initial_len,
            turn_waits: 0,
            closing: false,
            seed_guard: false,
        }
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
        let max_notes = self.config.settings.max_notes_per_update;
        let immune_turns = self.config.settings.immune_turns;
        let max_chars = self.config.settings.max_note_chars;
        let host = self.host.clone();
        let router = actix::Supervisor::start(move |_| {
            DeliveryRouter::new(policy, max_notes, immune_turns, host)
                .with_max_note_chars(max_chars)
        });
        self.router = Some(router.clone());
        router
    }

    /// The audit log (G7), started on first use when the host gave a path.
    fn audit(&mut self) -> Option<Addr<AuditLog>> {
        if self.audit.is_none() {
            let path = self.config.audit_path.clone()?;
            let cwd = self.config.workspace_root.display().to_string();
            self.audit = Some(AuditLog::new(path, cwd, self.host.clone()).start());
        }
        self.audit.clone()
    }

    /// Starts the children (when a model is assigned), seeded at `seed`'s given length (X4).
    fn start_children(&mut self, ctx: &mut Context<Self>, seed: Option<(Transcript, usize)>) {
        let Some(model) = self.config.model.clone() else {
            return;
        };
        let router = self.router();
        let audit = self.audit().map(Addr::recipient);
        let me = ctx.address();
        let reports = AgentReports {
            failed: me.clone().recipient(),
            dropped: me.clone().recipient(),
            paused: me.clone().recipient(),
            quarantined: me.clone().recipient(),
            notices: me.recipient(),
        };
        let (config, epoch) = (&self.config, self.epoch);
        let children = start_children(config, model, &router, audit, reports, epoch, seed);
        self.children = Some(children);
    }

    fn stop_children(&mut self, cause: AskEnd) {
        if let Some(children) = self.children.take() {
            children.agent.do_send(ReleaseWaiters);
            children.agent.do_send(ResetAdvisor {
                epoch: self.epoch + 1,
                cause,
            });
        }
        self.epoch += 1;
    }

    fn reset(&mut self, kind: RewriteKind) {
        self.epoch += 1;
        tracing::info!(?kind, epoch = self.epoch, "advisor reset");
        let branch = changes_branch(kind);
        self.seed_guard |= branch;
        self.router().do_send(ResetDelivery {
            epoch: self.epoch,
            branch,
        });
        if let Some(children) = &self.children {
            children.agent.do_send(ResetAdvisor {
                epoch: self.epoch,
                cause: AskEnd::Rewritten(kind),
            });
            if matches!(kind, RewriteKind::NewSession | RewriteKind::SessionSwitch) {
                // P7: a halt lasts until /advisor on, new settings or a new session.
                children.agent.do_send(EndHalt);
            }
            children.feed.do_send(RewindCursor);
            children.executor.do_send(ClearToolSession);
        }
    }

    fn notice(&self, text: String) {
        self.host.do_send(HostEvent::notice(text));
    }

    fn enable(&mut self, ctx: &mut Context<Self>) -> String {
        if self.config.model.is_none() {
            self.enabled = true;
            return notice("noModelAssigned", &[]);
        }
        if !self.enabled || self.children.is_none() {
            self.enabled = true;
            self.stop_children(AskEnd::TurnedOff);
            self.router().do_send(SetDeliveryEnabled { enabled: true });
            self.router().do_send(ResetDelivery {
                epoch: self.epoch,
                branch: false,
            });
            let seed = self.last_transcript.clone().map(|t| {
                let len = t.len();
                (t, len)
            });
            self.start_children(ctx, seed);
        } else if let Some(children) = &self.children {
            children.agent.do_send(ResumeReviews);
        }
        notice("on", &[])
    }

    fn disable(&mut self, cause: AskEnd) -> String {
        self.enabled = false;
        self.stop_children(cause);
        self.router().do_send(SetDeliveryEnabled { enabled: false });
        notice("off", &[])
    }
}

/// Whether a rewrite moves the advisor to another branch (P3's seed), as
/// opposed to a rewrite within the branch (compaction, pruning, one the feed detected).
fn changes_branch(kind: RewriteKind) -> bool {
    matches!(
        kind,
        RewriteKind::SessionSwitch
            | RewriteKind::NewSession
            | RewriteKind::Branch
            | RewriteKind::TreeNavigation
            | RewriteKind::Rewind
    )
}

impl Actor for Supervisor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        self.router();
        if self.enabled {
            let seed = self.config.initial_transcript.clone().zip(self.initial_len);
            self.start_children(ctx, seed);
        }
    }
}

impl Handler<PrimaryTurnEnded> for Supervisor {
    type Result = ResponseActFuture<Self, ()>;

    fn handle(&mut self, msg: PrimaryTurnEnded, ctx: &mut Context<Self>) -> Self::Result {
        self.last_transcript = Some(msg.transcript.transcript().clone());
        let running = self.enabled && self.children.is_some();
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
        };
        let Some(children) = self.children.as_ref().filter(|_| plan.review) else {
            router.do_send(turn_ended);
            return Box::pin(actix::fut::ready(()));
        };
        let feed = children.feed.clone();
        let agent = children.agent.clone();
        let epoch = self.epoch;
        let threshold = self.config.settings.sync_backlog.threshold();
        let cap = self.config.settings.sync_wait_cap;
        let hold = self.config.hold_wait_through_retries;
        // Both enqueued now, in this order: the router hears of the turn end before the
        // review of its delta can raise anything (D4's terminal flag, D7's count).
        let wip = plan.wip;
        let plan = router.send(turn_ended);
        let observed = feed.send(ObserveTurn {
            transcript: msg.transcript,
            epoch,
            wip,
        });
        // The turn is observed before the supervisor takes its next message: a host that
        // did not wait for this turn end (nothing to wait for, see `AdvisorHandle::turn_end`)
        // still has its next turn end checked against this one's cursor and epoch, and a
        // status query sees this turn's delta queued.
        let (planned_tx, planned_rx) = tokio::sync::oneshot::channel();
        ctx.wait(
            async move {
                let outcome = observed.await;
                let plan = plan.await.ok().flatten();
                (plan, outcome)
            }
            .into_actor(self)
            .map(move |(plan, outcome), act, _ctx| {
                if let Ok(TurnObserved::Rewrite) = outcome {
                    act.reset(RewriteKind::Detected);
                }
                let _ = planned_tx.send(plan);
            }),
        );
        self.turn_waits += 1;
        Box::pin(
            async move {
                let plan = planned_rx.await.ok().flatten();
                wait_after_turn(agent, router, plan, threshold, cap, hold).await;
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
        if let Some(children) = &self.children {
            children.agent.do_send(ReleaseWaiters);
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

    fn handle(&mut self, _msg: DisposeSession, _ctx: &mut Context<Self>) -> Self::Result {
        self.disable(AskEnd::Disposed);
        // G7: the audit file is complete when dispose returns.
        let audit = self.audit.clone();
        Box::pin(async move {
            if let Some(audit) = audit {
                let _ = audit.send(FlushAudit).await;
            }
        })
    }
}

mod commands;
mod reports;
#[cfg(test)]
mod tests;

impl Handler<CloseSession> for Supervisor {
    type Result = ();

    fn handle(&mut self, _msg: CloseSession, ctx: &mut Context<Self>) {
        self.close(ctx);
    }
}
