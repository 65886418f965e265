//! AdvisorAgent: the advisor model's conversation (G1–G5): its append-only context, the
//! review backlog, the model calls and the tool-call loop, context maintenance, usage
//! accounting.
//!
//! One review runs at a time, as a future spawned on the actor's context; deltas arriving
//! meanwhile queue up and are coalesced into the next batch (G2). The conversation is moved
//! into the review future and moved back when it ends, so the actor never blocks.
//!
//! Context maintenance (G5) runs inside that future, after the batch was taken and before
//! it is sent: promotion to the larger-window model, then compaction (a summary call), then
//! re-prime, each only when the one before did not bring the estimate under the threshold.
//! A delta arriving meanwhile waits for the next batch. A review that overflows the context
//! or the output bound is discarded: the history is cleared and the batch replayed once into
//! a fresh context (G5's reactive path); the holds of the discarded attempt are rolled back
//! in the DeliveryRouter.

use std::sync::Arc;

use actix::{
    Actor, ActorFutureExt, AsyncContext, Context, Handler, Recipient, ResponseFuture, Supervised,
    WrapFuture,
};
use tokio::sync::oneshot;
use tracing::Instrument;

use crate::messages::delivery::{DiscardAttempt, GetHeldPreamble, ReviewSucceeded};
use crate::messages::review::{
    AgentStatus, AppendAudit, AuditEvent, AwaitBacklog, BacklogWait, DropBacklog, DumpContext,
    GetAgentStatus, NoticeRaised, QueueDelta, ReleaseWaiters, ResetAdvisor, RetryReview,
    ReviewFinished, SetPaused,
};
use crate::messages::tools::{ClearToolSession, ExecuteTool};
use crate::messages::watchdog::GetWatchdogPrompt;
use crate::model::{
    AssistantPart, ChatMessage, ModelClient, ModelError, ModelRequest, StopReason, ToolSchema,
    Usage,
};
use crate::review::{
    compaction_cut, context_threshold, keep_budget, needs_maintenance, render_for_summary,
    summary_message, AdvisorContext, MaintenanceCounts, MaintenanceKind, ReviewQueue,
    SUMMARY_INSTRUCTION,
};
use crate::settings::AdvisorSettings;

/// What the agent needs besides its mailbox.
pub struct AgentSetup {
    /// The advisor model.
    pub model: Arc<dyn ModelClient>,
    /// The larger-window model to switch to when the context fills up
    /// (`advisor.contextPromotion`, G5); used only when its window is larger.
    pub promotion: Option<Arc<dyn ModelClient>>,
    /// Tool schemas offered to the model (workspace tools + `advise`).
    pub tools: Vec<ToolSchema>,
    /// Where tool calls go.
    pub executor: Recipient<ExecuteTool>,
    /// Where the tool session is cleared on compaction and re-prime (T3).
    pub tool_session: Recipient<ClearToolSession>,
    /// The watchdog loader, when watchdog files are in use.
    pub watchdog: Option<Recipient<GetWatchdogPrompt>>,
    /// Where review outcomes are reported (the Supervisor).
    pub supervisor: Recipient<ReviewFinished>,
    /// Where each review asks for the held-notes preamble (the DeliveryRouter, D9).
    pub held_preamble: Option<Recipient<GetHeldPreamble>>,
    /// Where successful reviews are reported so unconfirmed held notes are dropped
    /// (the DeliveryRouter, D9).
    pub review_succeeded: Option<Recipient<ReviewSucceeded>>,
    /// Where discarded review attempts are reported so their holds are rolled back
    /// (the DeliveryRouter, G5).
    pub discard_attempt: Option<Recipient<DiscardAttempt>>,
    /// Where lines for the user go (the Supervisor, which forwards them to the host).
    pub notices: Option<Recipient<NoticeRaised>>,
    /// Where the advisor's transcript is recorded, when the host gave an audit path (G7).
    pub audit: Option<Recipient<AppendAudit>>,
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
    maintenance: MaintenanceCounts,
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
            maintenance: MaintenanceCounts::default(),
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
        let settings = &self.setup.settings;
        let job = ReviewJob {
            model: Arc::clone(&self.setup.model),
            promotion: self.setup.promotion.clone(),
            executor: self.setup.executor.clone(),
            tool_session: self.setup.tool_session.clone(),
            watchdog: self.setup.watchdog.clone(),
            tools: self.setup.tools.clone(),
            base_prompt: self.setup.base_prompt.clone(),
            max_rounds: settings.max_tool_rounds,
            max_output_tokens: settings.max_output_tokens,
            compact_at_percent: settings.compact_at_percent,
            compact_threshold_tokens: settings.compact_threshold_tokens,
            epoch,
            review,
            updates: batch.turns,
            held_preamble: self.setup.held_preamble.clone(),
            discard_attempt: self.setup.discard_attempt.clone(),
            notices: self.setup.notices.clone(),
            audit: self.setup.audit.clone(),
        };
        // Moved into the review; maintenance (G5) happens there, on this batch only.
        let context = std::mem::take(&mut self.context);
        let span = tracing::info_span!("review", review, epoch, turns = batch.turns);
        let fut = run_review_with_maintenance(job, context, prompt).instrument(span);
        ctx.spawn(fut.into_actor(self).map(move |run, act, ctx| {
            act.finish_review(run, epoch, review, ctx);
        }));
    }

    fn finish_review(&mut self, run: ReviewRun, epoch: u64, review: u64, ctx: &mut Context<Self>) {
        self.reviewing = false;
        self.lifetime.add(&run.usage);
        self.model_calls += run.calls;
        self.last_system = run.system;
        self.maintenance.add(&run.maintenance);
        if let Some(model) = run.promoted {
            // G5: the larger window is kept for the rest of the session, resets included.
            self.setup.model = model;
            self.setup.promotion = None;
        }
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
            reprimes: self.maintenance.reprimes,
            compactions: self.maintenance.compactions,
            promotions: self.maintenance.promotions,
            model: Some(info.id),
            thinking: Some(self.setup.model.thinking().as_str().to_string()),
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
    promotion: Option<Arc<dyn ModelClient>>,
    executor: Recipient<ExecuteTool>,
    tool_session: Recipient<ClearToolSession>,
    watchdog: Option<Recipient<GetWatchdogPrompt>>,
    tools: Vec<ToolSchema>,
    base_prompt: String,
    max_rounds: usize,
    max_output_tokens: u32,
    compact_at_percent: u8,
    compact_threshold_tokens: Option<u64>,
    epoch: u64,
    review: u64,
    /// The session updates the review covers (G2), for its note budget (D8).
    updates: usize,
    held_preamble: Option<Recipient<GetHeldPreamble>>,
    discard_attempt: Option<Recipient<DiscardAttempt>>,
    notices: Option<Recipient<NoticeRaised>>,
    audit: Option<Recipient<AppendAudit>>,
}

impl ReviewJob {
    /// Records `event` in the audit log, when there is one (G7).
    fn audit(&self, event: AuditEvent) {
        if let Some(log) = &self.audit {
            let at_ms = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
            log.do_send(AppendAudit {
                epoch: self.epoch,
                review: self.review,
                at_ms,
                event,
            });
        }
    }

    /// Appends `message` to the context, recording it in the audit log (G7).
    fn append(&self, context: &mut AdvisorContext, message: ChatMessage) {
        if self.audit.is_some() {
            self.audit(AuditEvent::Message {
                message: message.clone(),
            });
        }
        context.messages.push(message);
    }

    /// Records a maintenance event in the audit log (G7).
    fn audit_maintenance(&self, kind: MaintenanceKind, trigger: &str, context: &AdvisorContext) {
        if self.audit.is_none() {
            return;
        }
        let summary = match (kind, context.messages.first()) {
            (MaintenanceKind::Compaction, Some(ChatMessage::User { text })) => Some(text.clone()),
            _ => None,
        };
        self.audit(AuditEvent::Maintenance {
            kind,
            trigger: trigger.to_string(),
            model: self.model.info().id,
            messages: context.messages.len(),
            summary,
        });
    }

    /// The output bound of the current model's calls.
    fn max_tokens(&self) -> u32 {
        let model_max = u32::try_from(self.model.info().max_output).unwrap_or(u32::MAX);
        self.max_output_tokens.min(model_max).max(1)
    }

    /// The context threshold for the current model's window (G5).
    fn threshold(&self) -> u64 {
        context_threshold(
            self.model.info().context_window,
            self.compact_at_percent,
            self.compact_threshold_tokens,
        )
    }
}

/// What a review hands back to the actor.
struct ReviewRun {
    context: AdvisorContext,
    usage: Usage,
    calls: u64,
    system: String,
    result: Result<(), ModelError>,
    /// The maintenance events of this review (G5).
    maintenance: MaintenanceCounts,
    /// The model the review switched to, if it promoted (G5).
    promoted: Option<Arc<dyn ModelClient>>,
}

/// The tool-round cap message appended to the last tool result (G3).
const BUDGET_NOTE: &str =
    "\n\n[Tool budget for this update is used up: give your final answer now, without tool calls.]";

/// Why a compaction's summary call gave no usable summary; the maintenance falls back to a
/// re-prime.
#[derive(Debug, thiserror::Error)]
enum SummaryError {
    /// The call failed.
    #[error(transparent)]
    Model(#[from] ModelError),
    /// The model stopped at a limit before finishing.
    #[error("the summary call stopped with {0:?}")]
    Stopped(StopReason),
    /// The answer had no text.
    #[error("the summary call answered with no text")]
    Empty,
}

/// The system prompt of this review: the base prompt plus the watchdog blocks (G1, W5).
/// Watchdog warnings (W3) go to the user as notices; the loader reports each once.
async fn system_prompt(job: &ReviewJob) -> String {
    let Some(loader) = &job.watchdog else {
        return job.base_prompt.clone();
    };
    let Ok(watchdog) = loader.send(GetWatchdogPrompt).await else {
        return job.base_prompt.clone();
    };
    if let Some(notices) = &job.notices {
        for text in &watchdog.warnings {
            notices.do_send(NoticeRaised { text: text.clone() });
        }
    }
    if watchdog.blocks.is_empty() {
        job.base_prompt.clone()
    } else {
        format!("{}\n\n{}", job.base_prompt, watchdog.joined())
    }
}

/// Runs one review of `prompt`: maintenance first when the context would pass the
/// threshold (G5), then the model until it stops calling tools (G3). An attempt that
/// overflows the context or the output bound is discarded, the history cleared and the batch
/// replayed once into a fresh context (G5's reactive path); a second overflow, like any other
/// error, is the review's failure (F1).
async fn run_review_with_maintenance(
    mut job: ReviewJob,
    context: AdvisorContext,
    prompt: String,
) -> ReviewRun {
    let system = system_prompt(&job).await;
    // D9: the held notes this review must raise again to keep, ahead of the update.
    let preamble = match &job.held_preamble {
        Some(router) => router
            .send(GetHeldPreamble {
                epoch: job.epoch,
                review: job.review,
                updates: job.updates,
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
    let mut run = ReviewRun {
        context,
        usage: Usage::default(),
        calls: 0,
        system,
        result: Ok(()),
        maintenance: MaintenanceCounts::default(),
        promoted: None,
    };
    let threshold = job.threshold();
    if needs_maintenance(&run.context, &prompt, threshold) {
        let span = tracing::info_span!(
            "context_maintenance",
            trigger = "threshold",
            estimate = run.context.estimate_with(&prompt),
            threshold
        );
        maintain_before_batch(&mut job, &mut run, &prompt)
            .instrument(span)
            .await;
    }
    let mut attempt: u32 = 0;
    loop {
        attempt += 1;
        let start = run.context.messages.len();
        let outcome = run_review(
            &job,
            &run.system,
            &mut run.context,
            &prompt,
            &mut run.usage,
            &mut run.calls,
        )
        .await;
        let err = match outcome {
            Ok(()) => return run,
            Err(err) => err,
        };
        // The attempt leaves no trace: not in the context, not among the held notes.
        run.context.truncate(start);
        job.audit(AuditEvent::AttemptDiscarded {
            attempt,
            error: err.to_string(),
        });
        if let Some(router) = &job.discard_attempt {
            let _ = router
                .send(DiscardAttempt {
                    epoch: job.epoch,
                    review: job.review,
                    attempt,
                })
                .await;
        }
        match err {
            ModelError::ContextOverflow { message, .. } if attempt == 1 => {
                let threshold = job.threshold();
                let span =
                    tracing::info_span!("context_maintenance", trigger = "overflow", threshold);
                async {
                    tracing::info!(%message, "the review overflowed the context: replaying the batch once into a fresh context");
                    finish_maintenance(&job, &mut run, &prompt, MaintenanceKind::Reprime, "overflow");
                }
                .instrument(span)
                .await;
            }
            err => {
                run.result = Err(err);
                return run;
            }
        }
    }
}

/// G5 steps 1–3 before a batch whose estimate passes the threshold: promote when a
/// larger-window model is configured and that brings the estimate under the new threshold;
/// else compact, else re-prime.
async fn maintain_before_batch(job: &mut ReviewJob, run: &mut ReviewRun, prompt: &str) {
    if let Some(candidate) = job.promotion.take() {
        let (from, to) = (job.model.info(), candidate.info());
        if to.context_window > from.context_window {
            tracing::info!(
                from = %from.id,
                to = %to.id,
                window = to.context_window,
                "context maintenance: promoted to the larger-window model"
            );
            job.model = Arc::clone(&candidate);
            run.promoted = Some(candidate);
            run.maintenance.record(MaintenanceKind::Promotion);
            job.audit_maintenance(MaintenanceKind::Promotion, "threshold", &run.context);
            if !needs_maintenance(&run.context, prompt, job.threshold()) {
                return;
            }
        } else {
            tracing::debug!(
                promotion = %to.id,
                "the promotion model's window is not larger: not promoting"
            );
        }
    }
    let threshold = job.threshold();
    compact_or_reprime(job, run, prompt, threshold, "threshold").await;
}

/// G5 steps 2–3: summarise the older history and keep the recent part verbatim when that
/// leaves room for `prompt` under `threshold`; otherwise (nothing to summarise, the summary
/// call failed, or the result is still too large) clear the history. Either way the tool
/// session forgets what was read (T3): the reads are no longer in the context.
async fn compact_or_reprime(
    job: &ReviewJob,
    run: &mut ReviewRun,
    prompt: &str,
    threshold: u64,
    trigger: &str,
) {
    let kind = match compaction_cut(&run.context.messages, keep_budget(threshold)) {
        None => {
            tracing::info!("the whole history fits the verbatim budget: nothing to summarise");
            MaintenanceKind::Reprime
        }
        Some(cut) => {
            let older = &run.context.messages[..cut];
            match summarise(job, older, &mut run.usage, &mut run.calls).await {
                Ok(summary) => {
                    let overhead = overhead_tokens(&run.system, &job.tools);
                    run.context
                        .compact(cut, summary_message(&summary), overhead);
                    let estimate = run.context.estimate_with(prompt);
                    if estimate <= threshold {
                        MaintenanceKind::Compaction
                    } else {
                        tracing::info!(
                            estimate,
                            threshold,
                            "the compacted context is still too large"
                        );
                        MaintenanceKind::Reprime
                    }
                }
                Err(err) => {
                    tracing::warn!(error = %err, "compaction failed: re-priming instead");
                    MaintenanceKind::Reprime
                }
            }
        }
    };
    finish_maintenance(job, run, prompt, kind, trigger);
}

/// Ends a maintenance event: a re-prime clears the history (G5 step 3, and the reactive
/// path); either way the tool session forgets what it read (T3) and the event is counted
/// and audited.
fn finish_maintenance(
    job: &ReviewJob,
    run: &mut ReviewRun,
    prompt: &str,
    kind: MaintenanceKind,
    trigger: &str,
) {
    if kind == MaintenanceKind::Reprime {
        run.context.clear();
    }
    run.maintenance.record(kind);
    job.audit_maintenance(kind, trigger, &run.context);
    job.tool_session.do_send(ClearToolSession);
    tracing::info!(
        kind = kind.as_str(),
        messages = run.context.messages.len(),
        estimate = run.context.estimate_with(prompt),
        "context maintenance done"
    );
}

/// Tokens the system prompt and tool schemas take (characters / 4), for the estimate of a
/// context no provider has measured yet.
fn overhead_tokens(system: &str, tools: &[ToolSchema]) -> u64 {
    let schemas = serde_json::to_string(tools).map_or(0, |s| s.len());
    ((system.len() + schemas) / 4) as u64
}

/// The summary call of a compaction: the older messages rendered as text, the
/// summarisation instruction as the system prompt, no tools. Its usage counts (G4).
async fn summarise(
    job: &ReviewJob,
    older: &[ChatMessage],
    usage: &mut Usage,
    calls: &mut u64,
) -> Result<String, SummaryError> {
    let request = ModelRequest {
        system: SUMMARY_INSTRUCTION.to_string(),
        messages: vec![ChatMessage::User {
            text: render_for_summary(older),
        }],
        tools: Vec::new(),
        max_tokens: job.max_tokens(),
        thinking: job.model.thinking(),
    };
    let span =
        tracing::info_span!("summary_call", model = %job.model.info().id, messages = older.len());
    let response = job.model.complete(request).instrument(span).await;
    *calls += 1;
    let response = response?;
    usage.add(&response.usage);
    if response.stop == StopReason::ContextOverflow {
        return Err(SummaryError::Stopped(response.stop));
    }
    let text: Vec<&str> = response
        .parts
        .iter()
        .filter_map(|p| match p {
            AssistantPart::Text { text } if !text.trim().is_empty() => Some(text.trim()),
            _ => None,
        })
        .collect();
    if text.is_empty() {
        return Err(SummaryError::Empty);
    }
    Ok(text.join("\n\n"))
}

async fn run_review(
    job: &ReviewJob,
    system: &str,
    context: &mut AdvisorContext,
    prompt: &str,
    usage: &mut Usage,
    calls: &mut u64,
) -> Result<(), ModelError> {
    job.append(
        context,
        ChatMessage::User {
            text: prompt.to_string(),
        },
    );
    for round in 0..=job.max_rounds {
        let request = ModelRequest {
            system: system.to_string(),
            messages: context.messages.clone(),
            tools: job.tools.clone(),
            max_tokens: job.max_tokens(),
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
                usage: None,
                message: format!("the model stopped with {:?}", response.stop),
            });
        }
        let tool_calls: Vec<(String, String, serde_json::Value)> = response
            .tool_calls()
            .map(|(id, name, args)| (id.to_string(), name.to_string(), args.clone()))
            .collect();
        job.append(
            context,
            ChatMessage::Assistant {
                parts: response.parts,
            },
        );
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
            job.append(
                context,
                ChatMessage::ToolResult {
                    call_id: id,
                    name,
                    text,
                    is_error,
                },
            );
        }
        if last_round {
            return Ok(());
        }
    }
    Ok(())
}
