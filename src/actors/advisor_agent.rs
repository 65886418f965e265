//! AdvisorAgent: the advisor model's conversation (G1–G5, G8) as an actor shell around the
//! review engine ([`crate::review`]).
//!
//! The [`ReviewState`] holds the backlog, the failure state and the policy deciding what a
//! failure means (F1–F3); the [`Reviewer`] runs one batch or question against the model and
//! reaches the other actors through [`crate::review::ReviewPort`], implemented over
//! recipients in [`crate::actors::agent_port`]. One review runs at a time, as a future
//! spawned on the actor's context; the context is moved into it and back when it ends, so
//! the actor never blocks. The actor runs the retry and pause timers and reports failures,
//! dropped backlogs and pauses to the supervisor, which only counts and tells the user.

use std::sync::Arc;

use actix::{
    Actor, ActorFutureExt, AsyncContext, Context, Handler, ResponseFuture, SpawnHandle, Supervised,
    WrapFuture,
};
use tokio::time::Instant;
use tracing::Instrument;

use crate::actors::agent_port::{AgentLinks, AgentPort};
use crate::delivery::ReviewRef;
use crate::messages::delivery::{ReviewEnded, ReviewSucceeded};
use crate::messages::review::{
    AwaitBacklog, BacklogWait, CheckedIn, EndHalt, NoticeRaised, QueueDelta, ReleaseWaiters,
    ResetAdvisor, RestoreReviews, ResumeReviews, SpendRecorded,
};
use crate::review::fallback::{self, Fallback};
use crate::review::state::{AskReply, PendingAsk};
use crate::review::{
    AdvisorContext, AskError, FailurePolicy, ReviewEngine, ReviewRun, ReviewState, ReviewTotals,
    Reviewer, Work,
};
use crate::settings::AdvisorSettings;
use crate::spend::SilenceWatch;

/// What the agent is started with.
pub struct AgentSetup {
    /// Models, tools, base prompt and limits of the reviews.
    pub engine: ReviewEngine,
    /// The other actors.
    pub links: AgentLinks,
    /// Settings.
    pub settings: AdvisorSettings,
    /// See [`crate::RuntimeConfig::hold_wait_through_retries`].
    pub hold_wait_through_retries: bool,
    /// The epoch the agent starts in.
    pub epoch: u64,
    /// The backup models (P6), used unless `retry.modelFallback` is off.
    pub fallback_models: Vec<Arc<dyn crate::model::ModelClient>>,
}

/// The agent actor.
pub struct AdvisorAgent {
    engine: ReviewEngine,
    links: Arc<AgentLinks>,
    settings: AdvisorSettings,
    epoch: u64,
    state: ReviewState,
    context: AdvisorContext,
    /// The newest part of the context as the running review or ask took it, for the
    /// action gate meanwhile (GT3); bounded by the gate's conversation bound.
    context_tail: Vec<crate::model::ChatMessage>,
    /// The turn end the context's reviews cover up to (GT3); a running review's not yet.
    context_turn: Option<u64>,
    totals: ReviewTotals,
    review_seq: u64,
    last_system: String,
    /// Reviews quarantined in a row (P5); a success starts over.
    quarantine_streak: u32,
    /// The backup reviewer (P6).
    fallback: Fallback,
    /// The ask whose model call runs now: its future (cancelled when a reset, `/advisor
    /// off` or dispose ends the ask, G8) and where its answer goes.
    running_ask: Option<RunningAsk>,
    /// The review running now: its future, cancelled when the agent is stopped (RO19,
    /// RO21); a session reset (R1) lets it end and discards its result.
    running_review: Option<SpawnHandle>,
    /// Whether the advisor spends without ever advising (SP4).
    silence: SilenceWatch,
}

/// An ask in flight.
struct RunningAsk {
    future: SpawnHandle,
    reply: AskReply,
}

impl AdvisorAgent {
    /// A fresh agent.
    pub fn new(setup: AgentSetup) -> Self {
        let policy = FailurePolicy::new(
            setup.settings.max_consecutive_failures,
            setup.settings.retry_delay,
        );
        let chain = if setup.settings.retry.model_fallback {
            setup.fallback_models
        } else {
            Vec::new()
        };
        let fallback = Fallback::new(
            Arc::clone(&setup.engine.model),
            chain,
            setup.settings.retry.revert,
        );
        Self {
            fallback,
            engine: setup.engine,
            links: Arc::new(setup.links),
            state: ReviewState::new(policy, setup.hold_wait_through_retries),
            settings: setup.settings,
            epoch: setup.epoch,
            context: AdvisorContext::new(),
            context_tail: Vec::new(),
            context_turn: None,
            totals: ReviewTotals::default(),
            review_seq: 0,
            last_system: String::new(),
            quarantine_streak: 0,
            running_ask: None,
            running_review: None,
            silence: SilenceWatch::default(),
        }
    }

    fn maybe_start(&mut self, ctx: &mut Context<Self>) {
        if self.settings.no_review {
            // ADVISOR_NO_REVIEW: no model calls; the deltas count as reviewed.
            self.state.skip_all();
            return;
        }
        let Some(work) = self.state.next_work(Instant::now()) else {
            return;
        };
        if let Some(own) = self.fallback.revert_due(Instant::now()) {
            // P6 cooldown-expiry: back on the advisor's own model before this review.
            tracing::info!(model = %own.info().id, "the advisor's model cooled down: back on it");
            self.links.notices.do_send(NoticeRaised {
                text: fallback::revert_notice(&own.info().id),
                advisor: self.links.advisor.clone(),
            });
            self.engine.model = own;
        }
        self.review_seq += 1;
        let (epoch, review) = (self.epoch, self.review_seq);
        // The session updates the review covers set its note budget (D8); an ask covers none.
        let (updates, wip) = match &work {
            Work::Review { batch, .. } => (batch.units, batch.wip),
            Work::Ask(_) => (0, false),
        };
        let port = AgentPort {
            review: ReviewRef::new(self.links.advisor.clone(), epoch, review),
            links: Arc::clone(&self.links),
            updates,
            wip,
        };
        // Moved into the review; maintenance (G5) happens there, on this batch only.
        self.context_tail = self
            .context
            .newest(crate::gate::verdict::MAX_CONVERSATION_CHARS)
            .to_vec();
        let context = std::mem::take(&mut self.context);
        let reviewer = Reviewer::new(self.engine.clone(), port, context);
        match work {
            Work::Review { batch, prompt } => {
                let span = tracing::info_span!("review", review, epoch, turns = batch.turns);
                let fut = contained(reviewer.review(prompt).instrument(span)).into_actor(self);
                let last_turn = batch.last_turn;
                let future = ctx.spawn(fut.map(move |run, act, ctx| {
                    act.review_done(run, (epoch, review, last_turn), ctx)
                }));
                self.running_review = Some(future);
            }
            Work::Ask(PendingAsk {
                question, reply, ..
            }) => {
                let span = tracing::info_span!("ask", review, epoch);
                let fut = async move { reviewer.ask(&question).await };
                let fut = contained(fut.instrument(span)).into_actor(self);
                let future = ctx.spawn(fut.map(move |run, act, ctx| act.ask_done(run, epoch, ctx)));
                self.running_ask = Some(RunningAsk { future, reply });
            }
        }
    }

    /// Counts what a run spent (G4, even for a stale epoch) and keeps a promotion (G5).
    /// Returns whether the run is of the current epoch.
    fn absorb(&mut self, run: &mut ReviewRun, epoch: u64, ask: bool) -> bool {
        self.totals.add_run(run, ask);
        // SP6: the supervisor adds up the session's spend, pauses and restarts included.
        self.links.spent.do_send(SpendRecorded {
            advisor: self.links.advisor.clone(),
            usage: run.usage,
        });
        self.last_system = std::mem::take(&mut run.system);
        if let Some(model) = run.promoted.take() {
            // G5: the larger window is kept for the rest of the session, resets included.
            self.fallback.own_model_changed(Arc::clone(&model));
            self.engine.promote(model);
        }
        if epoch != self.epoch {
            // A reset happened meanwhile: the context and backlog were already cleared.
            self.state.finished_stale();
            return false;
        }
        self.context = std::mem::take(&mut run.context);
        true
    }

    /// A review ended; `(epoch, review, last_turn)`: its epoch, number, and the turn end
    /// its batch ended at (SP7).
    fn review_done(
        &mut self,
        mut run: ReviewRun,
        (epoch, review, last_turn): (u64, u64, u64),
        ctx: &mut Context<Self>,
    ) {
        self.running_review = None;
        if self.absorb(&mut run, epoch, false) {
            match run.result {
                Ok(()) if run.quarantined.is_some() => {
                    let hazards = run.quarantined.take().unwrap_or_default();
                    self.quarantined(&hazards, epoch);
                }
                Ok(()) => {
                    self.quarantine_streak = 0;
                    self.totals.reviews += 1;
                    self.context_turn = Some(last_turn);
                    self.watch_silence(&run);
                    if let Some(check_in) = run.check_in.take() {
                        // SP7: the supervisor holds this advisor's next reviews back, those
                        // already queued behind this one too.
                        self.links.checked_in.do_send(CheckedIn {
                            epoch,
                            turn: last_turn,
                            after_turns: check_in.after_turns,
                            advisor: self.links.advisor.clone(),
                            postponed: self.state.take_pending(),
                        });
                    }
                    // D9: before any waiter wakes, so a catch-up block's end sees the pruning.
                    self.links.review_succeeded.do_send(ReviewSucceeded {
                        review: ReviewRef::new(self.links.advisor.clone(), epoch, review),
                    });
                    self.state.review_succeeded();
                }
                Err(err) => self.failed(err, ctx),
            }
        }
        self.review_ended();
        self.maybe_start(ctx);
    }

    /// SP4: tells the user, once, of an advisor that finished its 50th review on its model
    /// without one `advise` call while spending more than 100k input tokens.
    fn watch_silence(&mut self, run: &ReviewRun) {
        let model = self.engine.model.info().id;
        if let Some(silent) = self
            .silence
            .review_finished(&model, &run.usage, &run.tool_calls)
        {
            tracing::warn!(
                %model,
                reviews = silent.reviews,
                input_tokens = silent.input_tokens,
                "the advisor reviews without advising"
            );
            self.links.notices.do_send(NoticeRaised {
                text: silent.notice(),
                advisor: self.links.advisor.clone(),
            });
        }
    }

    /// Tells the router the review in progress ended (RO22: cards waiting for it go out).
    fn review_ended(&self) {
        self.links.review_ended.do_send(ReviewEnded {
            advisor: self.links.advisor.clone(),
        });
    }
}

impl Actor for AdvisorAgent {
    type Context = Context<Self>;
}

impl Supervised for AdvisorAgent {
    fn restarting(&mut self, _ctx: &mut Context<Self>) {
        // The asker hears `Released` when the reply is dropped.
        self.running_ask = None;
        self.running_review = None;
        self.state.restarted();
        self.context.clear();
        self.epoch += 1;
    }
}

impl Handler<QueueDelta> for AdvisorAgent {
    type Result = ();

    fn handle(&mut self, msg: QueueDelta, ctx: &mut Context<Self>) {
        if msg.epoch == self.epoch {
            self.state.push_review_at(msg.updates, msg.wip, msg.turn);
            self.maybe_start(ctx);
        }
    }
}

impl Handler<RestoreReviews> for AdvisorAgent {
    type Result = ();

    fn handle(&mut self, msg: RestoreReviews, ctx: &mut Context<Self>) {
        if msg.epoch == self.epoch {
            self.state.restore_pending(msg.reviews);
            self.maybe_start(ctx);
        }
    }
}

impl Handler<AwaitBacklog> for AdvisorAgent {
    type Result = ResponseFuture<BacklogWait>;

    fn handle(&mut self, msg: AwaitBacklog, _ctx: &mut Context<Self>) -> Self::Result {
        match self.state.await_backlog(msg.threshold) {
            Ok(now) => Box::pin(async move { now }),
            Err(rx) => Box::pin(async move { rx.await.unwrap_or(BacklogWait::Released) }),
        }
    }
}

impl Handler<ReleaseWaiters> for AdvisorAgent {
    type Result = ();

    fn handle(&mut self, _msg: ReleaseWaiters, _ctx: &mut Context<Self>) {
        self.state.release_waiters();
    }
}

impl Handler<ResetAdvisor> for AdvisorAgent {
    type Result = ();

    fn handle(&mut self, msg: ResetAdvisor, ctx: &mut Context<Self>) {
        self.epoch = msg.epoch;
        self.state.reset(msg.cause);
        self.context.clear();
        self.context_tail.clear();
        self.context_turn = None;
        let mut ended = false;
        if let Some(ask) = self.running_ask.take() {
            // G8: the ask ends now, not when its call does; dropping the future cancels the
            // HTTP request. Its context went with it, and the reset clears it anyway.
            ctx.cancel_future(ask.future);
            let _ = ask.reply.send(Err(AskError::Ended(msg.cause)));
            ended = true;
        }
        if let Some(review) = self.running_review.take_if(|_| msg.stopping) {
            // RO19, RO21: a stopped advisor's review ends now: dropping its future cancels
            // the model call (and the provider slot it holds) and any tool call it awaits,
            // so it raises nothing more under a registration started after this one.
            ctx.cancel_future(review);
            self.review_ended();
            ended = true;
        }
        if ended {
            self.state.finished_stale();
            self.maybe_start(ctx);
        }
    }
}

impl Handler<ResumeReviews> for AdvisorAgent {
    type Result = ();

    fn handle(&mut self, _msg: ResumeReviews, ctx: &mut Context<Self>) {
        self.state.resume();
        // P6: the user resumed; a pause that came on a backup keeps no cooldown.
        self.fallback.clear_cooldowns();
        self.maybe_start(ctx);
    }
}

impl Handler<EndHalt> for AdvisorAgent {
    type Result = ();

    fn handle(&mut self, _msg: EndHalt, ctx: &mut Context<Self>) {
        if self.state.end_halt() {
            self.maybe_start(ctx);
        }
    }
}

mod ask;
mod failure;
use failure::contained;
mod queries;
