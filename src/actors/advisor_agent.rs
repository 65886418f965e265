//! AdvisorAgent: the advisor model's conversation (G1–G5): its append-only context, the
//! review backlog, the model calls and the tool-call loop, usage accounting.
//!
//! One review runs at a time, as a future spawned on the actor's context; deltas arriving
//! meanwhile queue up and are coalesced into the next batch (G2). The conversation is moved
//! into the review future and moved back when it ends, so the actor never blocks.

use std::sync::Arc;

use actix::{
    Actor, ActorFutureExt, AsyncContext, Context, Handler, Recipient, ResponseFuture, Supervised,
    WrapFuture,
};
use tokio::sync::oneshot;
use tracing::Instrument;

use crate::messages::delivery::{HeldPreamble, ReviewSucceeded};
use crate::messages::review::{
    AgentStatus, AwaitBacklog, BacklogWait, DropBacklog, DumpContext, GetAgentStatus, QueueDelta,
    ReleaseWaiters, ResetAdvisor, RetryReview, ReviewFinished, SetPaused,
};
use crate::messages::tools::{ClearToolSession, ExecuteTool};
use crate::messages::watchdog::GetWatchdogPrompt;
use crate::model::{
    AssistantPart, ChatMessage, ModelClient, ModelError, ModelRequest, StopReason, ToolSchema,
    Usage,
};
use crate::review::{context_threshold, AdvisorContext, ReviewQueue};
use crate::settings::AdvisorSettings;

/// What the agent needs besides its mailbox.
pub struct AgentSetup {
    /// The advisor model.
    pub model: Arc<dyn ModelClient>,
    /// Tool schemas offered to the model (workspace tools + `advise`).
    pub tools: Vec<ToolSchema>,
    /// Where tool calls go.
    pub executor: Recipient<ExecuteTool>,
    /// Where the tool session is cleared on re-prime.
    pub tool_session: Recipient<ClearToolSession>,
    /// The watchdog loader, when watchdog files are in use.
    pub watchdog: Option<Recipient<GetWatchdogPrompt>>,
    /// Where review outcomes are reported (the Supervisor).
    pub supervisor: Recipient<ReviewFinished>,
    /// Where each review asks for the held-notes preamble (the DeliveryRouter, D9).
    pub held_preamble: Option<Recipient<HeldPreamble>>,
    /// Where successful reviews are reported so unconfirmed held notes are dropped
    /// (the DeliveryRouter, D9).
    pub review_succeeded: Option<Recipient<ReviewSucceeded>>,
    /// The base system prompt (built-in or the user's override, G1) with the workspace root.
    pub base_prompt: String,
    /// Settings.
    pub settings: AdvisorSettings,
    /// The epoch the agent starts in.
    pub epoch: u64,
}

/// The agent actor.
pub struct AdvisorAgent {
    setup: AgentSetup,
    epoch: u64,
    queue: ReviewQueue,
    context: AdvisorContext,
    reviewing: bool,
    failing: bool,
    paused: Option<String>,
    waiters: Vec<(usize, oneshot::Sender<BacklogWait>)>,
    review_seq: u64,
    lifetime: Usage,
    model_calls: u64,
    reviews: u64,
    dropped_turns: u64,
    reprimes: u64,
    last_system: String,
}

impl AdvisorAgent {
    /// A fresh agent.
    pub fn new(setup: AgentSetup) -> Self {
        Self {
            epoch: setup.epoch,
            setup,
            queue: ReviewQueue::new(),
            context: AdvisorContext::new(),
            reviewing: false,
            failing: false,
            paused: None,
            waiters: Vec::new(),
            review_seq: 0,
            lifetime: Usage::default(),
            model_calls: 0,
            reviews: 0,
            dropped_turns: 0,
            reprimes: 0,
            last_system: String::new(),
        }
    }

    /// Answers the waiters whose wait is over: drained below their threshold, or the
    /// advisor failing or paused (S2).
    fn release_ready_waiters(&mut self) {
        let backlog = self.queue.backlog();
        let failing = self.failing || self.paused.is_some();
        let mut kept = Vec::with_capacity(self.waiters.len());
        for (threshold, tx) in self.waiters.drain(..) {
            if backlog < threshold {
                let _ = tx.send(BacklogWait::Drained);
            } else if failing {
                let _ = tx.send(BacklogWait::Failing);
            } else {
                kept.push((threshold, tx));
            }
        }
        self.waiters = kept;
    }

    /// Wakes every waiter with "failing" (backlog dropped, paused).
    fn fail_all_waiters(&mut self) {
        for (_, tx) in self.waiters.drain(..) {
            let _ = tx.send(BacklogWait::Failing);
        }
    }

    /// Wakes every waiter with "released" (abort, reset, dispose): dropped senders.
    fn release_all_waiters(&mut self) {
        self.waiters.clear();
    }

    fn maybe_start(&mut self, ctx: &mut Context<Self>) {
        if self.reviewing || self.failing || self.paused.is_some() {
            return;
        }
        if self.setup.settings.no_review {
            // ADVISOR_NO_REVIEW: no model calls; the deltas count as reviewed.
            while self.queue.take_batch().is_some() {
                self.queue.finish_ok();
            }
            self.release_ready_waiters();
            return;
        }
        let Some(batch) = self.queue.take_batch() else {
            return;
        };
        let prompt = self.queue.prompt_for(&batch);
        self.reviewing = true;
        self.review_seq += 1;
        let review = self.review_seq;
        let epoch = self.epoch;

        // G5: maintenance before the batch (re-prime when the estimate passes the threshold).
        let info = self.setup.model.info();
        let threshold = context_threshold(
            info.context_window,
            self.setup.settings.compact_at_percent,
            self.setup.settings.compact_threshold_tokens,
        );
        if !self.context.messages.is_empty() && self.context.estimate_with(&prompt) > threshold {
            tracing::info!(threshold, "advisor context near its limit: re-priming");
            self.context.clear();
            self.reprimes += 1;
            self.setup.tool_session.do_send(ClearToolSession);
        }

        let job = ReviewJob {
            model: Arc::clone(&self.setup.model),
            executor: self.setup.executor.clone(),
            watchdog: self.setup.watchdog.clone(),
            tools: self.setup.tools.clone(),
            base_prompt: self.setup.base_prompt.clone(),
            max_rounds: self.setup.settings.max_tool_rounds,
            max_tokens: self
                .setup
                .settings
                .max_output_tokens
                .min(u32::try_from(info.max_output).unwrap_or(u32::MAX))
                .max(1),
            epoch,
            review,
            held_preamble: self.setup.held_preamble.clone(),
        };
        let context = std::mem::take(&mut self.context);
        let span = tracing::info_span!("review", review, epoch, turns = batch.turns);
        let fut = run_review_with_overflow_retry(job, context, prompt).instrument(span);
        ctx.spawn(fut.into_actor(self).map(move |run, act, ctx| {
            act.finish_review(run, epoch, review, ctx);
        }));
    }

    fn finish_review(&mut self, run: ReviewRun, epoch: u64, review: u64, ctx: &mut Context<Self>) {
        self.reviewing = false;
        self.lifetime.add(&run.usage);
        self.model_calls += run.calls;
        self.last_system = run.system;
        if epoch != self.epoch {
            // A reset happened meanwhile: the context and backlog were already cleared.
            self.maybe_start(ctx);
            return;
        }
        self.context = run.context;
        match run.result {
            Ok(()) => {
                self.reviews += 1;
                self.queue.finish_ok();
                // D9: before any waiter wakes, so a catch-up block's end sees the pruning.
                if let Some(router) = &self.setup.review_succeeded {
                    router.do_send(ReviewSucceeded { epoch, review });
                }
                self.setup.supervisor.do_send(ReviewFinished {
                    epoch,
                    result: Ok(()),
                });
            }
            Err(err) => {
                tracing::warn!(error = %err, "review failed");
                self.queue.finish_failed();
                self.failing = true;
                self.setup.supervisor.do_send(ReviewFinished {
                    epoch,
                    result: Err(err),
                });
            }
        }
        self.release_ready_waiters();
        self.maybe_start(ctx);
    }

    fn status(&self) -> AgentStatus {
        let info = self.setup.model.info();
        AgentStatus {
            backlog: self.queue.backlog(),
            context_tokens: self.context.estimate_with(""),
            context_window: info.context_window,
            lifetime: self.lifetime,
            model_calls: self.model_calls,
            reviews: self.reviews,
            dropped_turns: self.dropped_turns,
            reprimes: self.reprimes,
            paused: self.paused.clone(),
            failing: self.failing,
        }
    }

    fn dump(&self, raw: bool) -> String {
        let mut out = String::new();
        if raw {
            let info = self.setup.model.info();
            out.push_str("## System prompt\n\n");
            if self.last_system.is_empty() {
                out.push_str(&self.setup.base_prompt);
            } else {
                out.push_str(&self.last_system);
            }
            out.push_str(&format!(
                "\n\n## Model\n\n{} (thinking: {})\n\n## Tools\n\n",
                info.id,
                self.setup.model.thinking().as_str()
            ));
            for tool in &self.setup.tools {
                out.push_str(&format!(
                    "- {}: {}\n  {}\n",
                    tool.name, tool.description, tool.parameters
                ));
            }
            out.push_str("\n## Messages\n\n");
        }
        for message in &self.context.messages {
            match message {
                ChatMessage::User { text } => {
                    out.push_str("**user**:\n");
                    out.push_str(text.trim_end());
                    out.push_str("\n\n");
                }
                ChatMessage::Assistant { parts } => {
                    out.push_str("**advisor**:\n");
                    for part in parts {
                        match part {
                            AssistantPart::Text { text } => {
                                out.push_str(text.trim_end());
                                out.push('\n');
                            }
                            AssistantPart::Thinking { text, .. } if raw => {
                                out.push_str("_thinking:_ ");
                                out.push_str(text.trim_end());
                                out.push('\n');
                            }
                            AssistantPart::Thinking { .. } => {}
                            AssistantPart::ToolCall {
                                name, arguments, ..
                            } => {
                                out.push_str(&format!("→ {name}({arguments})\n"));
                            }
                        }
                    }
                    out.push('\n');
                }
                ChatMessage::ToolResult {
                    name,
                    text,
                    is_error,
                    ..
                } => {
                    if raw {
                        let flag = if *is_error { " (error)" } else { "" };
                        out.push_str(&format!(
                            "**{name} result{flag}**:\n{}\n\n",
                            text.trim_end()
                        ));
                    }
                }
            }
        }
        if out.is_empty() {
            out.push_str("(the advisor's context is empty)\n");
        }
        out
    }
}

impl Actor for AdvisorAgent {
    type Context = Context<Self>;
}

impl Supervised for AdvisorAgent {
    fn restarting(&mut self, _ctx: &mut Context<Self>) {
        self.queue.clear();
        self.context.clear();
        self.reviewing = false;
        self.failing = false;
        self.epoch += 1;
        self.release_all_waiters();
    }
}

impl Handler<QueueDelta> for AdvisorAgent {
    type Result = ();

    fn handle(&mut self, msg: QueueDelta, ctx: &mut Context<Self>) {
        if msg.epoch != self.epoch {
            return;
        }
        self.queue.push(msg.prompt);
        self.maybe_start(ctx);
    }
}

impl Handler<AwaitBacklog> for AdvisorAgent {
    type Result = ResponseFuture<BacklogWait>;

    fn handle(&mut self, msg: AwaitBacklog, _ctx: &mut Context<Self>) -> Self::Result {
        if self.queue.backlog() < msg.threshold {
            return Box::pin(async { BacklogWait::Drained });
        }
        if self.failing || self.paused.is_some() {
            return Box::pin(async { BacklogWait::Failing });
        }
        let (tx, rx) = oneshot::channel();
        self.waiters.push((msg.threshold, tx));
        Box::pin(async move { rx.await.unwrap_or(BacklogWait::Released) })
    }
}

impl Handler<ReleaseWaiters> for AdvisorAgent {
    type Result = ();

    fn handle(&mut self, _msg: ReleaseWaiters, _ctx: &mut Context<Self>) {
        self.release_all_waiters();
    }
}

impl Handler<ResetAdvisor> for AdvisorAgent {
    type Result = ();

    fn handle(&mut self, msg: ResetAdvisor, _ctx: &mut Context<Self>) {
        self.epoch = msg.epoch;
        self.queue.clear();
        self.context.clear();
        self.failing = false;
        self.release_all_waiters();
    }
}

impl Handler<RetryReview> for AdvisorAgent {
    type Result = ();

    fn handle(&mut self, msg: RetryReview, ctx: &mut Context<Self>) {
        let epoch = self.epoch;
        ctx.run_later(msg.after, move |act, ctx| {
            if act.epoch == epoch {
                act.failing = false;
                act.maybe_start(ctx);
            }
        });
    }
}

impl Handler<DropBacklog> for AdvisorAgent {
    type Result = usize;

    fn handle(&mut self, _msg: DropBacklog, ctx: &mut Context<Self>) -> usize {
        let dropped = self.queue.drop_all();
        self.dropped_turns += dropped as u64;
        self.failing = false;
        self.fail_all_waiters();
        self.maybe_start(ctx);
        dropped
    }
}

impl Handler<SetPaused> for AdvisorAgent {
    type Result = ();

    fn handle(&mut self, msg: SetPaused, ctx: &mut Context<Self>) {
        self.paused = msg.reason;
        if self.paused.is_some() {
            self.fail_all_waiters();
        } else {
            self.failing = false;
            self.maybe_start(ctx);
        }
    }
}

impl Handler<GetAgentStatus> for AdvisorAgent {
    type Result = actix::MessageResult<GetAgentStatus>;

    fn handle(&mut self, _msg: GetAgentStatus, _ctx: &mut Context<Self>) -> Self::Result {
        actix::MessageResult(self.status())
    }
}

impl Handler<DumpContext> for AdvisorAgent {
    type Result = String;

    fn handle(&mut self, msg: DumpContext, _ctx: &mut Context<Self>) -> String {
        self.dump(msg.raw)
    }
}

/// Everything one review needs, detached from the actor.
struct ReviewJob {
    model: Arc<dyn ModelClient>,
    executor: Recipient<ExecuteTool>,
    watchdog: Option<Recipient<GetWatchdogPrompt>>,
    tools: Vec<ToolSchema>,
    base_prompt: String,
    max_rounds: usize,
    max_tokens: u32,
    epoch: u64,
    review: u64,
    held_preamble: Option<Recipient<HeldPreamble>>,
}

/// What a review hands back to the actor.
struct ReviewRun {
    context: AdvisorContext,
    usage: Usage,
    calls: u64,
    system: String,
    result: Result<(), ModelError>,
}

/// The tool-round cap message appended to the last tool result (G3).
const BUDGET_NOTE: &str =
    "\n\n[Tool budget for this update is used up: give your final answer now, without tool calls.]";

/// Runs one review; on a context or output overflow, clears the history and replays the
/// batch once into a fresh context (G5 reactive path); a second overflow is a failure.
async fn run_review_with_overflow_retry(
    job: ReviewJob,
    context: AdvisorContext,
    prompt: String,
) -> ReviewRun {
    let system = match &job.watchdog {
        Some(loader) => match loader.send(GetWatchdogPrompt).await {
            Ok(w) if !w.blocks.is_empty() => format!("{}\n\n{}", job.base_prompt, w.joined()),
            _ => job.base_prompt.clone(),
        },
        None => job.base_prompt.clone(),
    };
    // D9: the held notes this review must raise again to keep, ahead of the update.
    let preamble = match &job.held_preamble {
        Some(router) => router
            .send(HeldPreamble {
                epoch: job.epoch,
                review: job.review,
            })
            .await
            .unwrap_or_default(),
        None => String::new(),
    };
    let prompt = if preamble.is_empty() {
        prompt
    } else {
        format!("{preamble}\n\n{prompt}")
    };
    let mut usage = Usage::default();
    let mut calls = 0;
    let mut context = context;
    let mut retried = false;
    loop {
        let start = context.messages.len();
        let outcome =
            run_review(&job, &system, &mut context, &prompt, &mut usage, &mut calls).await;
        match outcome {
            Ok(()) => {
                return ReviewRun {
                    context,
                    usage,
                    calls,
                    system,
                    result: Ok(()),
                }
            }
            Err(ModelError::ContextOverflow { message }) if !retried => {
                tracing::info!(%message, "advisor context overflow: replaying the batch into a fresh context");
                retried = true;
                context.clear();
            }
            Err(err) => {
                context.truncate(start);
                return ReviewRun {
                    context,
                    usage,
                    calls,
                    system,
                    result: Err(err),
                };
            }
        }
    }
}

async fn run_review(
    job: &ReviewJob,
    system: &str,
    context: &mut AdvisorContext,
    prompt: &str,
    usage: &mut Usage,
    calls: &mut u64,
) -> Result<(), ModelError> {
    context.messages.push(ChatMessage::User {
        text: prompt.to_string(),
    });
    for round in 0..=job.max_rounds {
        let request = ModelRequest {
            system: system.to_string(),
            messages: context.messages.clone(),
            tools: job.tools.clone(),
            max_tokens: job.max_tokens,
            thinking: job.model.thinking(),
        };
        let covered = context.messages.len();
        let span = tracing::info_span!("model_call", model = %job.model.info().id, round);
        let response = job.model.complete(request).instrument(span).await;
        *calls += 1;
        let response = response?;
        usage.add(&response.usage);
        context.record_usage(&response.usage, covered);
        if matches!(
            response.stop,
            StopReason::MaxTokens | StopReason::ContextOverflow
        ) {
            return Err(ModelError::ContextOverflow {
                message: format!("the model stopped with {:?}", response.stop),
            });
        }
        let tool_calls: Vec<(String, String, serde_json::Value)> = response
            .tool_calls()
            .map(|(id, name, args)| (id.to_string(), name.to_string(), args.clone()))
            .collect();
        context.messages.push(ChatMessage::Assistant {
            parts: response.parts,
        });
        if tool_calls.is_empty() {
            return Ok(());
        }
        let last_round = round == job.max_rounds;
        let count = tool_calls.len();
        for (i, (id, name, arguments)) in tool_calls.into_iter().enumerate() {
            let (mut text, is_error) = if last_round {
                (
                    "Not run: the tool budget for this update is used up.".to_string(),
                    true,
                )
            } else {
                match job
                    .executor
                    .send(ExecuteTool {
                        epoch: job.epoch,
                        review: job.review,
                        name: name.clone(),
                        arguments,
                    })
                    .await
                {
                    Ok(out) => (out.text, out.is_error),
                    Err(_) => (
                        "The tool executor is restarting; try again.".to_string(),
                        true,
                    ),
                }
            };
            if round + 1 == job.max_rounds && i + 1 == count {
                text.push_str(BUDGET_NOTE);
            }
            context.messages.push(ChatMessage::ToolResult {
                call_id: id,
                name,
                text,
                is_error,
            });
        }
        if last_round {
            return Ok(());
        }
    }
    Ok(())
}
