//! Replaying a recorded session through the runtime, as a live host would (SPEC L2).
//!
//! A [`Replay`] walks a [`SessionDriver`] and makes the host calls of each [`HostStep`] on an
//! [`AdvisorHandle`]:
//!
//! | step | host calls |
//! |---|---|
//! | [`HostStep::RunStarted`] | `RunState { running: true }` |
//! | [`HostStep::TurnEnded`] | `TurnEnd` (returns after the syncBacklog wait, S1), then at once `StepBoundary`; what the boundary returns is reported with the turn's number. With [`ReplayOptions::merge_cut_turns`] a turn cut by an abort sends neither: its messages go into the next turn's review |
//! | [`HostStep::Compacted`] | `Rewrite { kind: Compaction }` (R1) |
//! | [`HostStep::RunEnded`] | `RunState { running: false }` |
//!
//! Questions given with [`Replay::with_asks`] are put to the advisor (G8) right after the
//! step boundary of their turn, after that turn's advice is reported, one at a time in the
//! order given; the replay awaits each answer (the ask is bounded by its own time limit)
//! and reports it, or the error, as [`ReplayEvent::Answered`] before it goes on. An ask
//! whose turn never comes (the file has fewer turns) is reported as
//! [`ReplayEvent::AskNotReached`] at the end, before the final status.
//!
//! Host events the runtime sends between steps (`Wake`, `Card`, `Notice`) are reported with
//! the number of the last turn end; `SteerReady` is not (the steer itself is reported when
//! the next step boundary takes it). At the end of the file the replay awaits the advisor's
//! drain (it does not poll) like oh-my-pi's print mode (P11): through retries, bounded by
//! [`ReplayOptions::drain_timeout`] (600 s), or by [`ReplayOptions::drain_timeout_after_error`]
//! (30 s) when the input ended in an error (its last message is an assistant message that
//! stopped with `error`). When the wait ends with work outstanding it says so once
//! ([`ReplayEvent::Outstanding`]: the turns never reviewed, the review still in flight and
//! for how long). Then it reports what the
//! advisor still holds back — nits queued for a next run that will never come, and under
//! `reconfirm` the notes still held — as [`ReplayEvent::Pending`], then the final status.
//! Nothing the advisor said is left unreported.
//!
//! Delivered advice is not appended to the replayed transcript: the recorded session
//! already holds what the primary did next, and the feed drops advisor messages anyway (X2).
//!
//! The replay prints nothing: everything goes to the caller's sink as a [`ReplayEvent`].
//!
//! [`eval`] replays a corpus of such sessions with planted mistakes and scores what the
//! advisor said (`advisor eval`, §18).

pub mod eval;

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tokio::sync::mpsc::UnboundedReceiver;

use crate::domain::advice::{Channel, Delivery, Severity};
use crate::domain::host::{HostEvent, RewriteKind};
use crate::handle::{AdvisorHandle, BacklogWait, HandleError};
use crate::review::ask::check_question;
use crate::session::{HostStep, SessionDriver};
use crate::status::AdvisorStatus;

/// The end-of-file drain's bound (P11, as oh-my-pi's print mode).
pub const DEFAULT_DRAIN_TIMEOUT: Duration = Duration::from_secs(600);
/// The drain's bound when the input ended in an error (P11).
pub const DRAIN_TIMEOUT_AFTER_ERROR: Duration = Duration::from_secs(30);

/// Work the advisor still had when the end-of-file drain ran out (P11).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Outstanding {
    /// Turns never reviewed (the backlog, the batch in flight included).
    pub unreviewed_turns: usize,
    /// How long the review (or ask) still in flight had run, in seconds; `None` (absent in
    /// JSON) when none was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_flight_secs: Option<u64>,
    /// How long the drain waited, in seconds.
    pub waited_secs: u64,
    /// Whether the input ended in an error (the shorter bound applied).
    pub input_ended_in_error: bool,
}

/// Knobs of a replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplayOptions {
    /// The longest wait for the advisor to drain its backlog at the end of the file (P11:
    /// 600 s).
    pub drain_timeout: Duration,
    /// The same when the input ended in an error (P11: 30 s).
    pub drain_timeout_after_error: Duration,
    /// Whether the drain timeout was given explicitly (`--drain-timeout`): only then does
    /// it bound an advisor whose catch-up is `strict` (CA21, our choice); otherwise such a
    /// drain waits until it is done, halted, paused or stopped.
    pub drain_timeout_explicit: bool,
    /// While the advisor is failing (a retry pending, F1) the drain cannot be awaited until
    /// the retry starts; the wait looks again after this long.
    pub failure_recheck: Duration,
    /// A tool-calling turn that no completed reply follows before the next user message (a
    /// run cut by an abort) sends no `TurnEnd` of its own: its messages go into the next
    /// turn's review, as a live oh-my-pi does (SPEC §3 Expanded). On for the expanded view.
    pub merge_cut_turns: bool,
}

/// The drain's bound for a `strict` advisor without `--drain-timeout` (CA21): in effect
/// none (a century), so only its success, a halt, a quota pause or a stop ends it.
const STRICT_DRAIN_BOUND: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

impl Default for ReplayOptions {
    fn default() -> Self {
        Self {
            drain_timeout: DEFAULT_DRAIN_TIMEOUT,
            drain_timeout_after_error: DRAIN_TIMEOUT_AFTER_ERROR,
            drain_timeout_explicit: false,
            failure_recheck: Duration::from_secs(1),
            merge_cut_turns: false,
        }
    }
}

/// Where the replay stands, reported after every host step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplayProgress {
    /// Branch entries consumed so far.
    pub entries_done: usize,
    /// Branch entries in the session.
    pub entries_total: usize,
    /// `TurnEnd`s sent so far.
    pub turns: usize,
}

/// How a replay ended.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayOutcome {
    /// `TurnEnd`s sent.
    pub turns: usize,
    /// Runs started (`RunState { running: true }` sent).
    pub runs: usize,
    /// Compactions replayed (`Rewrite { kind: Compaction }` sent).
    pub compactions: usize,
    /// Whether the advisor's backlog drained before the end-of-file wait ran out.
    pub drained: bool,
    /// What was left when it did not (P11); also reported as [`ReplayEvent::Outstanding`].
    pub outstanding: Option<Outstanding>,
    /// Notes the primary never received, reported as [`ReplayEvent::Pending`] at the end.
    pub pending: usize,
    /// Questions never asked because their turn never came ([`ReplayEvent::AskNotReached`]).
    pub asks_not_reached: usize,
    /// Time from the first host call to the final status.
    pub elapsed: Duration,
    /// The advisor's status at the end (C3).
    pub status: AdvisorStatus,
}

/// What a replay reports, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum ReplayEvent {
    /// A host step was made.
    Progress(ReplayProgress),
    /// Advice reached the primary: taken at a step boundary (aside, steer) or sent as a host
    /// event (wake, card).
    Delivery {
        /// `TurnEnd`s sent before it (counted from 1, as in `advisor render`).
        turn: usize,
        /// What the primary would receive.
        delivery: Delivery,
    },
    /// Advice the primary never received: at the end of the file, what the advisor still
    /// held back — nits queued for a next run, outbox steers, notes held under `reconfirm`
    /// — as it would be delivered (L2).
    Pending {
        /// `TurnEnd`s sent in all.
        turn: usize,
        /// What the primary would receive; its channel is the one it was queued for.
        delivery: Delivery,
    },
    /// A line for the user (warnings, failures, pauses).
    Notice {
        /// `TurnEnd`s sent before it.
        turn: usize,
        /// The text.
        text: String,
    },
    /// A question was put to the advisor after the step boundary of `turn` (G8).
    Answered {
        /// The turn after whose step boundary it was asked.
        turn: usize,
        /// The question as given.
        question: String,
        /// The advisor's answer, or why there is none.
        answer: Result<String, HandleError>,
    },
    /// A question whose turn never came: the session has fewer turns (reported at the end).
    AskNotReached {
        /// The turn it was meant for.
        turn: usize,
        /// The question as given.
        question: String,
    },
    /// The end-of-file drain ran out with work outstanding (P11): reported once, before
    /// the pending notes and the final status.
    Outstanding(Outstanding),
    /// The replay is over.
    Finished(Box<ReplayOutcome>),
}

/// How the end-of-file drain ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DrainEnd {
    Drained,
    TimedOut,
    /// The advisor is paused (F3): it will not drain.
    Paused,
}

/// Whether the input ended in an error (P11): its last message is an assistant message
/// that stopped with `error` (the primary's run failed).
fn ended_in_error(last: &crate::domain::transcript::TranscriptMessage) -> bool {
    matches!(
        last,
        crate::domain::transcript::TranscriptMessage::Assistant(a)
            if a.stop_reason.as_deref() == Some("error")
    )
}

/// A question to put to the advisor during a replay: after the step boundary of `turn`
/// (`advisor replay --ask TURN:QUESTION`, G8).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayAsk {
    /// The turn after whose step boundary it is asked, counting `TurnEnd`s from 1.
    pub turn: usize,
    /// The question.
    pub question: String,
}

/// Why a `TURN:QUESTION` argument is unusable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplayAskError {
    /// No `:` between the turn and the question.
    #[error("`{0}` is not TURN:QUESTION (e.g. 3:why was the test skipped?)")]
    NoColon(String),
    /// The part before the colon is not a whole number.
    #[error("`{0}` is not a turn number (turns count from 1)")]
    BadTurn(String),
    /// Turn 0: turns count from 1.
    #[error("turn 0 does not exist (turns count from 1)")]
    TurnZero,
    /// The question is empty or too long for the advisor (G8).
    #[error("the question of turn {turn}: {reason}")]
    BadQuestion {
        /// The turn it was for.
        turn: usize,
        /// What is wrong with it.
        reason: String,
    },
}

impl std::str::FromStr for ReplayAsk {
    type Err = ReplayAskError;

    /// Parses `TURN:QUESTION`; the question is everything after the first colon and must
    /// pass the advisor's own size check.
    fn from_str(arg: &str) -> Result<Self, Self::Err> {
        let (turn, question) = arg
            .split_once(':')
            .ok_or_else(|| ReplayAskError::NoColon(arg.to_string()))?;
        let turn_text = turn.trim();
        if turn_text.is_empty() || !turn_text.bytes().all(|b| b.is_ascii_digit()) {
            return Err(ReplayAskError::BadTurn(turn_text.to_string()));
        }
        let turn: usize = turn_text
            .parse()
            .map_err(|_| ReplayAskError::BadTurn(turn_text.to_string()))?;
        if turn == 0 {
            return Err(ReplayAskError::TurnZero);
        }
        check_question(question).map_err(|e| ReplayAskError::BadQuestion {
            turn,
            reason: e.to_string(),
        })?;
        Ok(Self {
            turn,
            question: question.to_string(),
        })
    }
}

/// The `--json` line of an ask: `{"turn":N,"ask":…,"answer":…}`, or `"error"` in place of
/// `"answer"` when the ask failed (G8).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AskLine {
    /// The turn after whose step boundary it was asked.
    pub turn: usize,
    /// The question.
    pub ask: String,
    /// The advisor's answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// Why there is no answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl AskLine {
    /// The line for the answer (or error) to `question` asked at `turn`.
    pub fn new(turn: usize, question: &str, answer: &Result<String, HandleError>) -> Self {
        let (answer, error) = match answer {
            Ok(text) => (Some(text.clone()), None),
            Err(e) => (None, Some(e.to_string())),
        };
        Self {
            turn,
            ask: question.to_string(),
            answer,
            error,
        }
    }
}

/// How a printed note reached the primary, or `pending` for one it never received (L2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LineChannel {
    /// Folded in at a step boundary.
    Aside,
    /// A steering card taken at a step boundary.
    Steer,
    /// Started a turn of the idle primary.
    Wake,
    /// Appended visibly, no turn.
    Card,
    /// Still queued or held when the replay ended.
    Pending,
}

impl LineChannel {
    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            LineChannel::Aside => "aside",
            LineChannel::Steer => "steer",
            LineChannel::Wake => "wake",
            LineChannel::Card => "card",
            LineChannel::Pending => "pending",
        }
    }
}

impl From<Channel> for LineChannel {
    fn from(channel: Channel) -> Self {
        match channel {
            Channel::Aside => LineChannel::Aside,
            Channel::Steer => LineChannel::Steer,
            Channel::Wake => LineChannel::Wake,
            Channel::Card => LineChannel::Card,
        }
    }
}

/// One note of a delivery, flattened for line-oriented output (`advisor replay --json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeliveryLine {
    /// `TurnEnd`s sent before the delivery.
    pub turn: usize,
    /// How it reached the primary, or `pending`.
    pub channel: LineChannel,
    /// The severity the advisor gave, `null` when it gave none.
    pub severity: Option<Severity>,
    /// The note as the advisor wrote it.
    pub note: String,
    /// The XML message the primary receives (shared by every note of a batched aside).
    pub content: String,
    /// The named advisor that raised the note (RO23); absent for the unnamed advisor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advisor: Option<String>,
    /// The model that produced the note, after fallback (SP8); absent for a note no model
    /// wrote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// How many turns ago the turn its review covered ended (CA14): on every note of a
    /// merged final-boundary delivery, absent on a live one.
    #[serde(default, rename = "turnsAgo", skip_serializing_if = "Option::is_none")]
    pub turns_ago: Option<u64>,
}

/// The guidance text that opens a merged final-boundary delivery when it is due (CA15), for
/// renderers that show such a delivery note by note.
pub fn merged_guidance() -> &'static str {
    crate::delivery::window::GUIDANCE
}

/// One line per note of `delivery`; the notes of a batched aside each get a line with the
/// same `content` (L2).
pub fn delivery_lines(turn: usize, delivery: &Delivery) -> Vec<DeliveryLine> {
    lines(turn, delivery.channel.into(), delivery)
}

/// One line per note of a delivery the primary never received, with channel `pending` (L2).
pub fn pending_lines(turn: usize, delivery: &Delivery) -> Vec<DeliveryLine> {
    lines(turn, LineChannel::Pending, delivery)
}

fn lines(turn: usize, channel: LineChannel, delivery: &Delivery) -> Vec<DeliveryLine> {
    delivery
        .notes
        .iter()
        .map(|advisory| DeliveryLine {
            turn,
            channel,
            severity: advisory.severity,
            note: advisory.note.clone(),
            content: delivery.content.clone(),
            advisor: advisory.advisor.clone(),
            turns_ago: advisory.turns_ago,
            model: advisory.model.clone(),
        })
        .collect()
}

/// A replay failure: the runtime went away under it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplayError {
    /// The advisor runtime stopped before the replay finished.
    #[error("the advisor runtime stopped during the replay: {0}")]
    Runtime(#[from] HandleError),
}

/// Drives a recorded session through a running advisor (module docs).
pub struct Replay {
    driver: SessionDriver,
    handle: AdvisorHandle,
    events: UnboundedReceiver<HostEvent>,
    options: ReplayOptions,
    asks: VecDeque<ReplayAsk>,
}

impl Replay {
    /// A replay of `driver` through `handle`; `events` is where the runtime's host events
    /// arrive (the receiver [`AdvisorHandle::spawn`] returns).
    pub fn new(
        driver: SessionDriver,
        handle: AdvisorHandle,
        events: UnboundedReceiver<HostEvent>,
    ) -> Self {
        Self {
            driver,
            handle,
            events,
            options: ReplayOptions::default(),
            asks: VecDeque::new(),
        }
    }

    /// The same replay, asking these questions along the way (module docs); asks for the
    /// same turn keep their order.
    pub fn with_asks(mut self, asks: impl IntoIterator<Item = ReplayAsk>) -> Self {
        let mut asks: Vec<ReplayAsk> = asks.into_iter().collect();
        asks.sort_by_key(|a| a.turn);
        self.asks = asks.into();
        self
    }

    /// The same replay with other options.
    pub fn with_options(mut self, options: ReplayOptions) -> Self {
        self.options = options;
        self
    }

    /// Runs the whole session, reporting to `sink` as it goes, and returns the outcome (also
    /// reported last as [`ReplayEvent::Finished`]). The handle is left running: dispose of
    /// it when done.
    pub async fn run(
        mut self,
        mut sink: impl FnMut(ReplayEvent),
    ) -> Result<ReplayOutcome, ReplayError> {
        let started = Instant::now();
        let transcript = self.driver.transcript();
        let (runs, compactions) = self.drive(&transcript, &mut sink).await?;
        let (drained, outstanding) = self.drain_at_end(&transcript, &mut sink).await?;
        let turn = self.driver.turns();
        let asks_not_reached = self.asks.len();
        for ask in self.asks.drain(..) {
            sink(ReplayEvent::AskNotReached {
                turn: ask.turn,
                question: ask.question,
            });
        }
        let mut pending = 0;
        for delivery in self.handle.undelivered().await? {
            pending += delivery.notes.len();
            sink(ReplayEvent::Pending { turn, delivery });
        }
        let status = self.handle.status().await?;
        self.forward_events(turn, &mut sink);
        let outcome = ReplayOutcome {
            turns: turn,
            runs,
            compactions,
            drained,
            outstanding,
            pending,
            asks_not_reached,
            elapsed: started.elapsed(),
            status,
        };
        sink(ReplayEvent::Finished(Box::new(outcome.clone())));
        Ok(outcome)
    }

    /// Drives the session file's steps through the handle (L2); answers how many runs and
    /// compactions it had.
    async fn drive(
        &mut self,
        transcript: &crate::domain::transcript::Transcript,
        sink: &mut impl FnMut(ReplayEvent),
    ) -> Result<(usize, usize), ReplayError> {
        let (mut runs, mut compactions) = (0usize, 0usize);
        while let Some(step) = self.driver.next() {
            match step {
                HostStep::RunStarted => {
                    runs += 1;
                    self.handle.run_state(true).await?;
                }
                HostStep::TurnEnded { turn, terminal }
                    if self.options.merge_cut_turns && !terminal && self.driver.turn_was_cut() =>
                {
                    self.ask_at(turn, sink).await?;
                }
                HostStep::TurnEnded { turn, .. } => {
                    self.handle.turn_end(transcript).await?;
                    // Host events sent during the wait come before the step boundary's advice.
                    self.forward_events(turn, sink);
                    let advice = self.handle.step_boundary().await?;
                    for delivery in advice.deliveries() {
                        sink(ReplayEvent::Delivery {
                            turn,
                            delivery: delivery.clone(),
                        });
                    }
                    self.ask_at(turn, sink).await?;
                }
                HostStep::Compacted => {
                    compactions += 1;
                    self.handle.rewrite(RewriteKind::Compaction).await?;
                }
                HostStep::RunEnded => self.handle.run_state(false).await?,
            }
            self.forward_events(self.driver.turns(), sink);
            sink(ReplayEvent::Progress(self.progress()));
        }
        Ok((runs, compactions))
    }

    /// The end-of-file drain (P11): bounded shorter after a session that ended in an error;
    /// answers whether everything was reviewed, and what a drain that ran out of time left.
    async fn drain_at_end(
        &mut self,
        transcript: &crate::domain::transcript::Transcript,
        sink: &mut impl FnMut(ReplayEvent),
    ) -> Result<(bool, Option<Outstanding>), ReplayError> {
        let ended_in_error = transcript
            .len()
            .checked_sub(1)
            .and_then(|i| transcript.get(i))
            .is_some_and(|m| ended_in_error(&m));
        let status = self.handle.status().await?;
        let strict = if status.advisors.is_empty() {
            status.cadence.sync_backlog.is_strict()
        } else {
            status
                .advisors
                .iter()
                .any(|a| a.cadence.sync_backlog.is_strict())
        };
        let bound = if strict && !self.options.drain_timeout_explicit {
            // CA21 (3): a strict advisor's drain has no time budget of its own.
            STRICT_DRAIN_BOUND
        } else if ended_in_error {
            self.options.drain_timeout_after_error
        } else {
            self.options.drain_timeout
        };
        let drain_started = tokio::time::Instant::now();
        let end = self.drain(bound, sink).await?;
        self.forward_events(self.driver.turns(), sink);
        let mut outstanding = None;
        // A paused advisor (F3) said why it stopped; a drain that ran out of time says what
        // it left.
        if end == DrainEnd::TimedOut {
            let agent = self.handle.status().await?.agent;
            let left = Outstanding {
                unreviewed_turns: agent.backlog,
                in_flight_secs: agent.running_secs,
                waited_secs: drain_started.elapsed().as_secs(),
                input_ended_in_error: ended_in_error,
            };
            if left.unreviewed_turns > 0 || left.in_flight_secs.is_some() {
                sink(ReplayEvent::Outstanding(left));
                outstanding = Some(left);
            }
        }
        Ok((end == DrainEnd::Drained, outstanding))
    }

    fn progress(&self) -> ReplayProgress {
        ReplayProgress {
            entries_done: self.driver.position(),
            entries_total: self.driver.len(),
            turns: self.driver.turns(),
        }
    }

    /// Puts the questions meant for `turn` to the advisor, one after the other, reporting
    /// each answer or error and the host events that arrive meanwhile. An ask that failed
    /// is reported and the replay goes on; only a stopped runtime ends it.
    async fn ask_at(
        &mut self,
        turn: usize,
        sink: &mut impl FnMut(ReplayEvent),
    ) -> Result<(), ReplayError> {
        while self.asks.front().is_some_and(|a| a.turn <= turn) {
            let Some(ask) = self.asks.pop_front() else {
                break;
            };
            let handle = self.handle.clone();
            let question = ask.question.clone();
            let asking = async move { handle.ask(&question).await };
            // The ask is bounded by its own time limit (G8), so no deadline here.
            let answer = match self.forward_until(turn, None, asking, sink).await {
                Some(answer) => answer,
                None => Err(HandleError::Stopped),
            };
            if matches!(answer, Err(HandleError::Stopped)) {
                return Err(ReplayError::Runtime(HandleError::Stopped));
            }
            self.forward_events(turn, sink);
            sink(ReplayEvent::Answered {
                turn,
                question: ask.question,
                answer,
            });
        }
        Ok(())
    }

    /// Reports the host events already received, attributed to `turn`.
    fn forward_events(&mut self, turn: usize, sink: &mut impl FnMut(ReplayEvent)) {
        while let Ok(event) = self.events.try_recv() {
            if let Some(e) = replay_event(turn, event) {
                sink(e);
            }
        }
    }

    /// Awaits the advisor's drain, or the drain timeout, reporting the host events that
    /// arrive meanwhile, and says how it ended. While the advisor is failing a retry is
    /// pending and there is nothing to await until it starts: the wait looks again after
    /// [`ReplayOptions::failure_recheck`]. A paused advisor (F3) will not drain.
    async fn drain(
        &mut self,
        bound: Duration,
        sink: &mut impl FnMut(ReplayEvent),
    ) -> Result<DrainEnd, ReplayError> {
        let deadline = tokio::time::Instant::now() + bound;
        let turn = self.driver.turns();
        loop {
            let handle = self.handle.clone();
            let ended = self
                .forward_until(turn, Some(deadline), handle.await_drain(), sink)
                .await;
            match ended {
                None => return Ok(DrainEnd::TimedOut),
                Some(ended) => match ended? {
                    BacklogWait::Drained => return Ok(DrainEnd::Drained),
                    // A reset or a restart woke the wait; what is left is awaited afresh.
                    BacklogWait::Released => {}
                    BacklogWait::Failing => {
                        let status = self.handle.status().await?;
                        if status.agent.backlog == 0 {
                            return Ok(DrainEnd::Drained);
                        }
                        if status.paused.is_some() {
                            return Ok(DrainEnd::Paused);
                        }
                        let recheck = tokio::time::Instant::now() + self.options.failure_recheck;
                        let pause = tokio::time::sleep_until(recheck.min(deadline));
                        if self
                            .forward_until(turn, Some(deadline), pause, sink)
                            .await
                            .is_none()
                        {
                            return Ok(DrainEnd::TimedOut);
                        }
                    }
                },
            }
        }
    }

    /// Runs `fut` to its end, reporting the host events that arrive meanwhile; `None` when
    /// `deadline` comes first (never without one).
    async fn forward_until<T>(
        &mut self,
        turn: usize,
        deadline: Option<tokio::time::Instant>,
        fut: impl std::future::Future<Output = T>,
        sink: &mut impl FnMut(ReplayEvent),
    ) -> Option<T> {
        tokio::pin!(fut);
        let mut open = true;
        loop {
            tokio::select! {
                out = &mut fut => return Some(out),
                event = self.events.recv(), if open => match event {
                    Some(event) => {
                        if let Some(e) = replay_event(turn, event) {
                            sink(e);
                        }
                    }
                    None => open = false,
                },
                _ = tokio::time::sleep_until(deadline.unwrap_or_else(tokio::time::Instant::now)),
                    if deadline.is_some() => return None,
            }
        }
    }
}

/// The replay event for a host event, attributed to `turn` (`SteerReady` has none).
pub fn replay_event(turn: usize, event: HostEvent) -> Option<ReplayEvent> {
    match event {
        HostEvent::Wake { card } | HostEvent::Card { card } => Some(ReplayEvent::Delivery {
            turn,
            delivery: card,
        }),
        HostEvent::Notice { text, .. } => Some(ReplayEvent::Notice { turn, text }),
        HostEvent::SteerReady => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::advice::Advisory;

    #[test]
    fn l2_a_batched_aside_gives_one_line_per_note_with_the_same_content() {
        let delivery = Delivery::new(
            Channel::Aside,
            vec![
                Advisory::new("rename x", None),
                Advisory::new("a < b & c", Some(Severity::Nit)),
            ],
            None,
        );
        let lines = delivery_lines(7, &delivery);
        assert_eq!(lines.len(), 2);
        assert!(lines
            .iter()
            .all(|l| l.turn == 7 && l.content == delivery.content));
        assert_eq!(lines[0].severity, None);
        assert_eq!(lines[1].note, "a < b & c");
        assert!(lines[1].content.contains("a &lt; b &amp; c"));
    }

    #[test]
    fn l2_json_line_has_null_severity_and_lowercase_channel() {
        let delivery = Delivery::new(Channel::Steer, vec![Advisory::new("stop", None)], None);
        let line = serde_json::to_value(&delivery_lines(3, &delivery)[0]).unwrap();
        assert_eq!(line["turn"], 3);
        assert_eq!(line["channel"], "steer");
        assert!(line["severity"].is_null());
        let keys: Vec<&str> = line
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys, ["turn", "channel", "severity", "note", "content"]);
    }

    #[test]
    fn l2_pending_lines_have_channel_pending_and_the_content_it_would_have_had() {
        let delivery = Delivery::new(
            Channel::Aside,
            vec![Advisory::new("left over", Some(Severity::Nit))],
            None,
        );
        let lines = pending_lines(12, &delivery);
        assert_eq!(lines.len(), 1);
        let line = serde_json::to_value(&lines[0]).unwrap();
        assert_eq!(line["channel"], "pending");
        assert_eq!(line["turn"], 12);
        assert_eq!(line["content"], delivery.content.as_str());
        assert_eq!(delivery_lines(12, &delivery)[0].channel, LineChannel::Aside);
    }

    #[test]
    fn a4_wake_card_and_notice_are_reported_steer_ready_is_not() {
        let card = Delivery::new(
            Channel::Wake,
            vec![Advisory::new("n", Some(Severity::Blocker))],
            None,
        );
        assert_eq!(
            replay_event(4, HostEvent::Wake { card: card.clone() }),
            Some(ReplayEvent::Delivery {
                turn: 4,
                delivery: card
            })
        );
        assert_eq!(
            replay_event(2, HostEvent::notice("advisor: x")),
            Some(ReplayEvent::Notice {
                turn: 2,
                text: "advisor: x".into()
            })
        );
        assert_eq!(replay_event(1, HostEvent::SteerReady), None);
    }

    #[test]
    fn g8_l5_ask_arguments_parse_turn_and_question_or_name_what_is_wrong() {
        let ask: ReplayAsk = "3:Is: the cache keyed by path?".parse().unwrap();
        assert_eq!(ask.turn, 3);
        assert_eq!(ask.question, "Is: the cache keyed by path?");
        assert_eq!(" 12 :why".parse::<ReplayAsk>().unwrap().turn, 12);
        let err = |arg: &str| arg.parse::<ReplayAsk>().unwrap_err();
        assert_eq!(err("why"), ReplayAskError::NoColon("why".into()));
        assert_eq!(err("x:why"), ReplayAskError::BadTurn("x".into()));
        assert_eq!(err("-1:why"), ReplayAskError::BadTurn("-1".into()));
        assert_eq!(err("+1:why"), ReplayAskError::BadTurn("+1".into()));
        assert_eq!(err(":why"), ReplayAskError::BadTurn(String::new()));
        assert_eq!(err("0:why"), ReplayAskError::TurnZero);
        assert!(matches!(
            err("2:  "),
            ReplayAskError::BadQuestion { turn: 2, .. }
        ));
        let long = format!(
            "2:{}",
            "q".repeat(crate::review::ask::MAX_QUESTION_CHARS + 1)
        );
        assert!(err(&long).to_string().contains("8000"), "{}", err(&long));
        assert!(err("why").to_string().contains("TURN:QUESTION"));
    }

    #[test]
    fn g8_ask_lines_carry_the_answer_or_the_error_never_both() {
        let ok = serde_json::to_value(AskLine::new(4, "why?", &Ok("because".into()))).unwrap();
        assert_eq!(
            ok,
            serde_json::json!({"turn": 4, "ask": "why?", "answer": "because"})
        );
        let error = HandleError::Ask(crate::review::AskError::Disabled);
        let line = serde_json::to_value(AskLine::new(4, "why?", &Err(error.clone()))).unwrap();
        assert_eq!(
            line,
            serde_json::json!({"turn": 4, "ask": "why?", "error": error.to_string()})
        );
    }
}
