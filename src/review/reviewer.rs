//! The [`Reviewer`]: runs one batch (or one question, G8) against a [`ModelClient`].
//!
//! A review is: the system prompt (base prompt + watchdog blocks, G1), the held-notes
//! preamble (D9), context maintenance when the estimate passes the threshold (G5: promote,
//! compact, re-prime), then the tool loop (G3) until the model answers without tool calls.
//! An attempt that overflows the context or the output bound is discarded and the batch is
//! replayed once into a fresh context (G5's reactive path); a second overflow, like any
//! other error, is the review's failure (F1). Every model call's usage is counted, a failed
//! call's too when its error carries one (G4).
//!
//! The reviewer talks outward only through [`ReviewPort`]; the AdvisorAgent implements it
//! over its recipients, the unit tests with a recording stub.

use std::future::Future;
use std::sync::Arc;

use serde_json::Value;
use tracing::Instrument;

use super::audit::AuditEvent;
use super::context::{limit_stop, AdvisorContext, LimitStop, MaintenanceCounts, MaintenanceKind};
use super::failure::failed_call_usage;
use super::quarantine::{labels, output_pieces, Hazard, OutputGuard};
use super::repeat::{Repeat, RepeatGuard, REPEAT_LIMIT};
use super::rereads::{rereadable, ReadRecord};
use super::{ask, texts, ReviewPrompt};
use crate::model::{
    AssistantPart, ChatMessage, ModelClient, ModelError, ModelRequest, ModelResponse, StopReason,
    ToolSchema, Usage,
};
use crate::redact::Redactor;
use crate::settings::AdvisorSettings;
use crate::spend::{ToolBudget, ToolSpendCounts};
use crate::tools::{advise, check_in};

mod maintenance;

/// What a tool call answered, as the model sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolReply {
    /// The text.
    pub text: String,
    /// Whether the tool failed.
    pub is_error: bool,
    /// The fingerprint of the files the call covered (SP2), when it was taken.
    pub fingerprint: Option<u64>,
    /// SP2: the files still gave the earlier call's fingerprint; the tool was not run.
    pub unchanged: bool,
}

impl ToolReply {
    /// A reply of `text` that is no workspace result (an error, a refusal, `advise`).
    pub fn plain(text: impl Into<String>, is_error: bool) -> Self {
        Self {
            text: text.into(),
            is_error,
            fingerprint: None,
            unchanged: false,
        }
    }
}

/// The watchdog part of this review's system prompt (W5) and the warnings to show (W3).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WatchdogBlocks {
    /// The blocks joined by a blank line; empty when there are none.
    pub joined: String,
    /// Warnings about unreadable files, each reported once.
    pub warnings: Vec<String>,
}

/// How a review reaches the rest of the runtime. One port serves one review (it knows the
/// epoch and the review number).
pub trait ReviewPort {
    /// Runs a tool call (a workspace tool, or `advise`, which raises the advice at once,
    /// G3) made by the model `model` (`provider/id`: the one this review calls now, after a
    /// fallback or promotion; an `advise` note carries it, SP8); `None` when the executor
    /// could not be reached. `unchanged_since` is the fingerprint of an earlier call with the
    /// same arguments whose result the context still holds (SP2): when the files still give
    /// it the tool is not run ([`ToolReply::unchanged`]).
    fn execute_tool(
        &self,
        name: &str,
        arguments: Value,
        unchanged_since: Option<u64>,
        model: &str,
    ) -> impl Future<Output = Option<ToolReply>>;
    /// The number of the review (or ask) this port serves, which a re-read's pointer names
    /// (SP2).
    fn review_number(&self) -> u64;
    /// The held notes this review must raise again to keep (D9); empty when none.
    fn held_preamble(&self) -> impl Future<Output = String>;
    /// Attempt `attempt` was thrown away: roll back what it held (G5). Resolves when done.
    fn discard_attempt(&self, attempt: u32) -> impl Future<Output = ()>;
    /// The watchdog blocks for this review, `None` when watchdog files are off.
    fn watchdog(&self) -> impl Future<Output = Option<WatchdogBlocks>>;
    /// Whether audit events are recorded (G7); when not, none are built.
    fn audits(&self) -> bool;
    /// Records an audit event (G7).
    fn audit(&self, event: AuditEvent);
    /// A line for the user.
    fn notice(&self, text: String);
}

/// The review limits from the settings (G3, G5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReviewLimits {
    /// Tool rounds per review (G3).
    pub max_tool_rounds: usize,
    /// Output bound per call.
    pub max_output_tokens: u32,
    /// Context threshold in percent of the window (G5).
    pub compact_at_percent: u8,
    /// Absolute context threshold, when set (G5).
    pub compact_threshold_tokens: Option<u64>,
    /// Notes longer than this are refused (D10 `tooLong`) and kept cut in the context.
    pub max_note_chars: usize,
    /// Whether stale read/search/find results are evicted before each review (P4).
    pub evict_stale_results: bool,
    /// Calls of workspace tools one review may make (SP1).
    pub tool_budget: u32,
    /// `advisor.spendControls`: false, the tool budget (SP1) and the re-read answers (SP2)
    /// are off — every call runs, every re-read is paid.
    pub spend_controls: bool,
}

impl ReviewLimits {
    /// The limits `settings` give.
    pub fn from_settings(settings: &AdvisorSettings) -> Self {
        Self {
            max_tool_rounds: settings.max_tool_rounds,
            max_output_tokens: settings.max_output_tokens,
            compact_at_percent: settings.compact_at_percent,
            compact_threshold_tokens: settings.compact_threshold_tokens,
            max_note_chars: settings.max_note_chars,
            evict_stale_results: settings.evict_stale_results,
            tool_budget: settings.tool_budget,
            spend_controls: settings.spend_controls,
        }
    }
}

/// What every review of a session shares: the models, the tools, the base prompt and the
/// limits. Cheap to clone.
#[derive(Clone)]
pub struct ReviewEngine {
    /// The advisor model.
    pub model: Arc<dyn ModelClient>,
    /// The larger-window model to promote to (G5), if any.
    pub promotion: Option<Arc<dyn ModelClient>>,
    /// The tools offered in a review (workspace tools + `advise`).
    pub tools: Arc<[ToolSchema]>,
    /// The base system prompt (G1).
    pub base_prompt: Arc<str>,
    /// A named advisor's roster instructions, the shared ones then its own (RO11), placed
    /// after the WATCHDOG.md blocks; `None` for the unnamed advisor without a roster.
    pub instructions: Option<Arc<str>>,
    /// The working directory named in each request's reminder (P8).
    pub cwd: Arc<str>,
    /// The limits.
    pub limits: ReviewLimits,
    /// The output quarantine's patterns (P5); `None` when they failed to compile (logged).
    pub guard: Option<Arc<OutputGuard>>,
    /// Redacts everything that enters the context or the system prompt (X5): the update
    /// (deltas, replays, the held-note preamble), questions (G8), tool results, compaction
    /// summaries and WATCHDOG.md blocks. `None` with `advisor.redactSecrets: false`.
    pub redactor: Option<Redactor>,
}

impl ReviewEngine {
    /// Keeps `model` for every later review (a promotion, G5); promotion is then done.
    pub fn promote(&mut self, model: Arc<dyn ModelClient>) {
        self.model = model;
        self.promotion = None;
    }
}

/// What one review (or ask) hands back.
pub struct ReviewRun {
    /// The context after the review.
    pub context: AdvisorContext,
    /// Usage of every call made, failed ones included when known (G4).
    pub usage: Usage,
    /// Model calls made.
    pub calls: u64,
    /// The system prompt used.
    pub system: String,
    /// Success, or the failure (F1).
    pub result: Result<(), ModelError>,
    /// The text of the model's last answer (an ask's answer).
    pub answer: String,
    /// Maintenance events of this review (G5).
    pub maintenance: MaintenanceCounts,
    /// The model the review promoted to (G5).
    pub promoted: Option<Arc<dyn ModelClient>>,
    /// The hazard classes for which the output quarantine withheld a turn (P5): none of
    /// its tool calls ran and it is not in the context.
    pub quarantined: Option<Vec<Hazard>>,
    /// What the tool budget refused and the re-reads not paid for (SP1, SP2).
    pub tool_spend: ToolSpendCounts,
    /// The tool calls the model made, run or not (SP5).
    pub tool_calls: crate::spend::ToolCallCounts,
    /// What the review's first valid `check_in` call asked for (SP7).
    pub check_in: Option<check_in::CheckIn>,
}

impl ReviewRun {
    /// The run of a review (or ask) whose future panicked (F5): what it held, the context
    /// included, is lost, so the agent goes on with a fresh context, and the batch fails as a
    /// retryable error (F1), retried and, if it keeps panicking, dropped by three strikes
    /// (F2). `payload` is what the panic carried.
    pub fn panicked(payload: &(dyn std::any::Any + Send)) -> Self {
        let what = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic".to_string());
        Self {
            context: AdvisorContext::new(),
            usage: Usage::default(),
            calls: 0,
            system: String::new(),
            result: Err(ModelError::Retryable {
                message: format!("the review ended abnormally: {what}"),
                retry_after: None,
                usage: None,
            }),
            answer: String::new(),
            maintenance: MaintenanceCounts::default(),
            promoted: None,
            quarantined: None,
            tool_spend: ToolSpendCounts::default(),
            tool_calls: Default::default(),
            check_in: None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Review,
    Ask,
}

/// Runs one review or ask; see the module docs.
pub struct Reviewer<P> {
    engine: ReviewEngine,
    port: P,
    mode: Mode,
    run: ReviewRun,
    /// Tool calls this review has made so far, for the pointer of a re-read (SP2).
    calls_made: u32,
}

impl<P: ReviewPort> Reviewer<P> {
    /// A reviewer of `context` with `engine`'s models and tools, talking through `port`.
    pub fn new(engine: ReviewEngine, port: P, context: AdvisorContext) -> Self {
        Self {
            engine,
            port,
            mode: Mode::Review,
            calls_made: 0,
            run: ReviewRun {
                context,
                usage: Usage::default(),
                calls: 0,
                system: String::new(),
                result: Ok(()),
                answer: String::new(),
                maintenance: MaintenanceCounts::default(),
                promoted: None,
                quarantined: None,
                tool_spend: ToolSpendCounts::default(),
                tool_calls: Default::default(),
                check_in: None,
            },
        }
    }

    /// Reviews `prompt` (a batch of deltas, G2), each of its parts one user message.
    pub async fn review(mut self, mut prompt: ReviewPrompt) -> ReviewRun {
        self.run.system = self.system_prompt().await;
        let preamble = self.port.held_preamble().await;
        if !preamble.is_empty() {
            prompt.prefix(&preamble);
        }
        self.evict_stale_results();
        let text = prompt.joined();
        let parts = prompt.parts;
        let prompt = text;
        self.maintain_if_needed(&prompt).await;
        let mut attempt: u32 = 0;
        loop {
            attempt += 1;
            let err = match self.attempt(&parts, attempt).await {
                Ok(()) => return self.run,
                Err(err) => err,
            };
            self.port.discard_attempt(attempt).await;
            // SP7: a check-in of a thrown-away attempt schedules nothing.
            self.run.check_in = None;
            match err {
                ModelError::ContextOverflow { message, .. } if attempt == 1 => {
                    let threshold = self.threshold();
                    let span =
                        tracing::info_span!("context_maintenance", trigger = "overflow", threshold);
                    let _entered = span.enter();
                    tracing::info!(%message, "the review overflowed the context: replaying the batch once into a fresh context");
                    self.finish_maintenance(&prompt, MaintenanceKind::Reprime, "overflow");
                }
                err => {
                    self.run.result = Err(err);
                    return self.run;
                }
            }
        }
    }

    /// Answers `question` (G8): the same context and read-only tools, no `advise`, one
    /// attempt. The question and the answer stay in the context.
    pub async fn ask(mut self, question: &str) -> ReviewRun {
        self.mode = Mode::Ask;
        self.run.system = self.system_prompt().await;
        let prompt = ReviewPrompt::single(ask::ask_prompt(question));
        self.maintain_if_needed(&prompt.joined()).await;
        if let Err(err) = self.attempt(&prompt.parts, 1).await {
            self.run.result = Err(err);
        }
        self.run
    }

    /// The base prompt plus the watchdog blocks (G1, W5) and the roster instructions
    /// (RO11), redacted (X5); warnings go to the user (W3).
    async fn system_prompt(&self) -> String {
        let mut prompt = self.engine.base_prompt.to_string();
        if let Some(watchdog) = self.port.watchdog().await {
            for text in watchdog.warnings {
                self.port.notice(text);
            }
            if !watchdog.joined.is_empty() {
                prompt = format!("{prompt}\n\n{}", watchdog.joined);
            }
        }
        if let Some(instructions) = self.engine.instructions.as_deref() {
            prompt = format!("{prompt}\n\n{instructions}");
        }
        self.redacted(prompt)
    }

    /// `text` with its secrets replaced (X5), when redaction is on.
    fn redacted(&self, text: String) -> String {
        match &self.engine.redactor {
            Some(redactor) => match redactor.redact(&text) {
                std::borrow::Cow::Borrowed(_) => text,
                std::borrow::Cow::Owned(clean) => clean,
            },
            None => text,
        }
    }

    /// One attempt: on failure its messages are taken out of the context again and the
    /// discard is audited.
    async fn attempt(&mut self, parts: &[String], attempt: u32) -> Result<(), ModelError> {
        let start = self.run.context.messages.len();
        let outcome = self.tool_loop(parts).await;
        if let Err(err) = &outcome {
            self.run.context.truncate(start);
            self.audit(AuditEvent::AttemptDiscarded {
                attempt,
                error: err.to_string(),
            });
        }
        outcome
    }

    /// The tools this run offers: no `advise` nor `check_in` while answering a question
    /// (G8, SP7).
    fn offered_tools(&self) -> Vec<ToolSchema> {
        self.engine
            .tools
            .iter()
            .filter(|t| {
                self.mode == Mode::Review || (t.name != advise::NAME && t.name != check_in::NAME)
            })
            .cloned()
            .collect()
    }

    /// G3, P2: the model until it answers without tool calls, or makes a turn of `advise`
    /// calls only whose last one succeeded (no follow-up call), or repeats one call past the
    /// repeated-call guard; at most `max_tool_rounds` rounds of tools, the last allowed
    /// round's results telling it to finish. Each of `parts` is one user message.
    async fn tool_loop(&mut self, parts: &[String]) -> Result<(), ModelError> {
        for part in parts {
            let text = self.redacted(part.clone());
            self.append(ChatMessage::User { text });
        }
        let mut repeats = RepeatGuard::new();
        let limits = &self.engine.limits;
        let mut budget = ToolBudget::new(if limits.spend_controls {
            limits.tool_budget
        } else {
            u32::MAX
        });
        let tools = self.offered_tools();
        let max_rounds = self.engine.limits.max_tool_rounds;
        // P5: what the review's turns said so far, checked with each new turn.
        let mut said: Vec<String> = Vec::new();
        for round in 0..=max_rounds {
            let today = today();
            let request = ModelRequest {
                system: self.run.system.clone(),
                reminder: self.run.context.request_reminder(&today, &self.engine.cwd),
                messages: self.run.context.messages.clone(),
                tools: tools.clone(),
                max_tokens: self.max_tokens(),
                thinking: self.engine.model.thinking(),
            };
            let bound = request.max_tokens;
            let covered = self.run.context.messages.len();
            let span =
                tracing::info_span!("model_call", model = %self.engine.model.info().id, round);
            let mut response = self.call(request, span).await?;
            self.run.context.record_usage(&response.usage, covered);
            let (usage, stop) = (response.usage, response.stop.clone());
            let cut = self.limit_stop(&response, bound)?;
            if cut {
                // A cut reply's tool calls may be partial: only its text is kept.
                response
                    .parts
                    .retain(|p| !matches!(p, AssistantPart::ToolCall { .. }));
            }
            if let Some(hazards) = self.quarantine(&said, &response.parts) {
                tracing::warn!(
                    hazards = %labels(&hazards),
                    "advisor output quarantined: nothing of the turn is dispatched"
                );
                // P9: the transcript file records the withheld reply as oh-my-pi does: an
                // errored assistant message naming the hazards, with the call's usage; the
                // withheld text itself is not written.
                let text = texts::fill(texts::QUARANTINED, &[("labels", &labels(&hazards))]);
                self.audit(AuditEvent::Spend {
                    model: self.engine.model.info().id,
                    usage,
                    text: text.clone(),
                    error: Some(text),
                });
                self.run.quarantined = Some(hazards);
                return Ok(());
            }
            said.extend(output_pieces(&response.parts).into_iter().map(String::from));
            let calls: Vec<(String, String, Value)> = response
                .tool_calls()
                .map(|(id, name, args)| (id.to_string(), name.to_string(), args.clone()))
                .collect();
            self.run.answer = answer_text(&response.parts);
            let parts = kept_parts(response.parts, self.engine.limits.max_note_chars);
            self.append_reply(ChatMessage::Assistant { parts }, usage, stop);
            if calls.is_empty() || cut {
                return Ok(());
            }
            let last_round = round == max_rounds;
            // SP7: a `check_in` beside the advice ends the review like the advice alone.
            let advise_only = calls
                .iter()
                .all(|(_, name, _)| name == advise::NAME || name == check_in::NAME);
            let guards = (&mut repeats, &mut budget);
            let (ended, last_ok) = self.run_calls(calls, round, guards).await;
            if ended || last_round {
                return Ok(());
            }
            if advise_only && last_ok {
                // P2: the advice is given; a follow-up call would only say so.
                tracing::debug!("advise-only turn: review ends");
                return Ok(());
            }
        }
        Ok(())
    }

    /// Runs one round's tool calls in order under the repeated-call guard (P2) and the tool
    /// budget (SP1): a call past the guard ends the review and is not run, nor is any after
    /// it; a call past the budget is not run; the last call of the last-but-one round tells
    /// the model to finish (G3). Answers whether the guard ended the review and whether the
    /// last call succeeded.
    async fn run_calls(
        &mut self,
        calls: Vec<(String, String, Value)>,
        round: usize,
        (repeats, budget): (&mut RepeatGuard, &mut ToolBudget),
    ) -> (bool, bool) {
        let max_rounds = self.engine.limits.max_tool_rounds;
        let last_round = round == max_rounds;
        let count = calls.len();
        let mut last_ok = false;
        let mut ended = false;
        for (i, (call_id, name, arguments)) in calls.into_iter().enumerate() {
            self.run.tool_calls.count(&name);
            self.calls_made += 1;
            let call = self.calls_made;
            let repeat = repeats.observe(&name, &arguments);
            // SP1: a call G3 or P2 does not run costs nothing of the budget.
            let admitted = last_round
                || ended
                || repeat == Repeat::End
                || budget.admit(&name, self.offers(&name));
            let gate = (last_round, admitted.then_some(()).ok_or(budget.budget()));
            let mut reply = match (ended, repeat) {
                (false, Repeat::Run) => self.run_tool(&name, arguments.clone(), gate).await,
                (false, Repeat::Warn) => {
                    let mut reply = self.run_tool(&name, arguments.clone(), gate).await;
                    let warning = texts::fill(
                        texts::REPEATED_CALL,
                        &[("count", &REPEAT_LIMIT.to_string())],
                    );
                    reply.text.push_str("\n\n");
                    reply.text.push_str(&warning);
                    reply
                }
                (true, _) | (false, Repeat::End) => {
                    if !ended {
                        tracing::info!(tool = %name, "repeated call after the warning: review ends");
                    }
                    ended = true;
                    ToolReply::plain(texts::REPEAT_NOT_RUN, true)
                }
            };
            if round + 1 == max_rounds && i + 1 == count && !ended {
                reply.text.push_str("\n\n");
                reply.text.push_str(texts::FINISH_NOW);
            }
            last_ok = !reply.is_error;
            let text = self.redacted(reply.text);
            let record = match reply.fingerprint {
                Some(fingerprint) if !reply.is_error && !reply.unchanged && rereadable(&name) => {
                    let index = self.run.context.messages.len();
                    let place = (self.port.review_number(), call);
                    Some(ReadRecord::new(
                        &name,
                        arguments,
                        fingerprint,
                        place,
                        index,
                        &text,
                    ))
                }
                _ => None,
            };
            self.append(ChatMessage::ToolResult {
                call_id,
                name,
                text,
                is_error: reply.is_error,
            });
            if let Some(record) = record {
                self.run.context.rereads.record(record);
            }
        }
        (ended, last_ok)
    }

    /// P5: the hazard classes for which this turn must be withheld, checked against what
    /// the advisor was given (its context, the update included).
    /// `said` holds what the review's earlier turns said (their text, thinking and notes).
    fn quarantine(&self, said: &[String], parts: &[AssistantPart]) -> Option<Vec<Hazard>> {
        self.engine
            .guard
            .as_ref()?
            .check(said, parts, &self.run.context.messages)
    }

    /// Whether this run offers the tool `name` (SP1 counts only the advisor's own tools).
    fn offers(&self, name: &str) -> bool {
        self.engine.tools.iter().any(|t| t.name == name)
    }

    /// Runs one call, or says why it is not run: past the last round (G3), past the tool
    /// budget (`admitted` is `Err(budget)`, SP1), `advise` in an ask (G8). A `read`, `search`
    /// or `find` repeating an earlier call whose result the context still holds is answered
    /// with a pointer to it when its files are unchanged (SP2).
    async fn run_tool(
        &mut self,
        name: &str,
        arguments: Value,
        (last_round, admitted): (bool, Result<(), u32>),
    ) -> ToolReply {
        if last_round {
            return ToolReply::plain(texts::TOOL_NOT_RUN, true);
        }
        if let Err(budget) = admitted {
            tracing::info!(tool = %name, budget, "tool budget spent: call not run");
            self.run.tool_spend.budget_refused += 1;
            let calls = texts::tool_calls(budget);
            return ToolReply::plain(texts::fill(texts::BUDGET_SPENT, &[("calls", &calls)]), true);
        }
        if self.mode == Mode::Ask && name == advise::NAME {
            return ToolReply::plain(texts::ASK_NO_ADVISE, true);
        }
        if name == check_in::NAME && self.offers(name) {
            return self.check_in(&arguments);
        }
        let earlier = (self.engine.limits.spend_controls && rereadable(name))
            .then(|| {
                self.run
                    .context
                    .rereads
                    .earlier(name, &arguments, &self.run.context.messages)
                    .cloned()
            })
            .flatten();
        let since = earlier.as_ref().map(|e| e.fingerprint);
        let model = self.engine.model.info().id;
        let Some(reply) = self.port.execute_tool(name, arguments, since, &model).await else {
            return ToolReply::plain(texts::EXECUTOR_RESTARTING, true);
        };
        match earlier {
            Some(earlier) if reply.unchanged => {
                tracing::info!(tool = %name, review = earlier.review, call = earlier.call, bytes = earlier.bytes, "re-read answered from the context");
                self.run.tool_spend.rereads_saved += 1;
                self.run.tool_spend.reread_bytes_saved += earlier.bytes as u64;
                let vars = [
                    ("review", earlier.review.to_string()),
                    ("call", earlier.call.to_string()),
                    ("bytes", earlier.bytes.to_string()),
                ];
                let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
                ToolReply {
                    text: texts::fill(texts::REREAD_SAVED, &vars),
                    ..reply
                }
            }
            _ => reply,
        }
    }

    /// SP7: `check_in`, answered here. The first valid call of a review is what the review
    /// hands back ([`ReviewRun::check_in`]); a later one changes nothing and says so; bad
    /// arguments are a tool error the model reads; in a question it schedules nothing.
    fn check_in(&mut self, arguments: &Value) -> ToolReply {
        if self.mode == Mode::Ask {
            return ToolReply::plain(check_in::in_ask_text(), true);
        }
        let asked = match check_in::parse(arguments) {
            Ok(asked) => asked,
            Err(err) => return ToolReply::plain(err.to_string(), true),
        };
        if let Some(first) = &self.run.check_in {
            return ToolReply::plain(check_in::already_scheduled_text(first.after_turns), false);
        }
        tracing::info!(after_turns = asked.after_turns, reason = ?asked.reason, "the advisor scheduled its next review");
        let text = check_in::scheduled_text(asked.after_turns);
        self.run.check_in = Some(asked);
        ToolReply::plain(text, false)
    }

    /// One model call; its usage counts (G4), a failed call's too when its error says.
    async fn call(
        &mut self,
        request: ModelRequest,
        span: tracing::Span,
    ) -> Result<ModelResponse, ModelError> {
        let result = self.engine.model.complete(request).instrument(span).await;
        self.run.calls += 1;
        match &result {
            Ok(response) => self.run.usage.add(&response.usage),
            Err(err) => {
                if let Some(usage) = failed_call_usage(err) {
                    self.run.usage.add(&usage);
                    self.audit(AuditEvent::Spend {
                        model: self.engine.model.info().id,
                        usage,
                        text: String::new(),
                        error: Some(err.to_string()),
                    });
                }
            }
        }
        result
    }

    fn audit(&self, event: AuditEvent) {
        if self.port.audits() {
            self.port.audit(event);
        }
    }

    /// Appends `message` to the context, recording it in the audit log (G7).
    fn append(&mut self, message: ChatMessage) {
        if self.port.audits() {
            self.port.audit(AuditEvent::Message {
                message: message.clone(),
            });
        }
        self.run.context.messages.push(message);
    }

    /// Appends the model's answer, recording it with what the call cost (G4, P9).
    fn append_reply(&mut self, message: ChatMessage, usage: Usage, stop: StopReason) {
        if self.port.audits() {
            self.port.audit(AuditEvent::Reply {
                message: message.clone(),
                model: self.engine.model.info().id,
                usage,
                stop,
            });
        }
        self.run.context.messages.push(message);
    }

    /// The output bound of the current model's calls.
    fn max_tokens(&self) -> u32 {
        let model_max = u32::try_from(self.engine.model.info().max_output).unwrap_or(u32::MAX);
        self.engine.limits.max_output_tokens.min(model_max).max(1)
    }

    /// G5: a call that stopped at a limit. A context overflow (the provider said so, or the
    /// context is full, [`limit_stop`]) is an error for the reactive path; a reply cut at its
    /// output bound while the context had room answers `true`: it is kept, warned about, and
    /// ends the review, nothing compacted, promoted, replayed or failed.
    fn limit_stop(&self, response: &ModelResponse, bound: u32) -> Result<bool, ModelError> {
        let usage = &response.usage;
        let threshold = self.threshold();
        match response.stop {
            StopReason::ContextOverflow => Err(ModelError::ContextOverflow {
                usage: None,
                message: "the provider said the context window was exceeded".into(),
            }),
            StopReason::MaxTokens => match limit_stop(usage, bound, threshold) {
                LimitStop::ContextFull => Err(ModelError::ContextOverflow {
                    usage: None,
                    message: format!(
                        "the reply stopped at a length limit with the context full ({} prompt and {} output tokens, threshold {threshold}, output bound {bound})",
                        usage.prompt_tokens(),
                        usage.output
                    ),
                }),
                LimitStop::OutputCap => {
                    tracing::warn!(
                        bound,
                        output = usage.output,
                        estimated = usage.estimated,
                        "the advisor's reply reached its output cap (advisor.maxOutputTokens) and was cut there: what arrived is kept and the review ends"
                    );
                    Ok(true)
                }
            },
            _ => Ok(false),
        }
    }
}

/// Today's date (UTC), `YYYY-MM-DD`, for the reminder (P8).
fn today() -> String {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(0));
    let mut date = super::transcript_file::iso_time(ms);
    date.truncate(10);
    date
}

/// The visible text of an answer: its non-empty text parts, trimmed, a blank line apart.
fn answer_text(parts: &[AssistantPart]) -> String {
    let texts: Vec<&str> = parts
        .iter()
        .filter_map(|p| match p {
            AssistantPart::Text { text } if !text.trim().is_empty() => Some(text.trim()),
            _ => None,
        })
        .collect();
    texts.join("\n\n")
}

/// An answer's parts as the context keeps them: an `advise` call whose note is over the
/// cap is kept with the note cut (the call itself runs with the whole note and is refused).
fn kept_parts(parts: Vec<AssistantPart>, max_note_chars: usize) -> Vec<AssistantPart> {
    parts
        .into_iter()
        .map(|part| match part {
            AssistantPart::ToolCall {
                id,
                name,
                arguments,
            } if name == advise::NAME => {
                let arguments =
                    advise::kept_arguments(&arguments, max_note_chars).unwrap_or(arguments);
                AssistantPart::ToolCall {
                    id,
                    name,
                    arguments,
                }
            }
            other => other,
        })
        .collect()
}

#[cfg(test)]
mod tests;
