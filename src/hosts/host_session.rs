//! One host session in the background process (SPEC H6–H12): its advisor handle, the
//! transcript handed over so far, and what waits for its next hooks. Jobs (hook events) are
//! taken one at a time, in order; each is answered as soon as what it delivers is known, and
//! the slow part (reading the transcript, handing turns over) comes after the answer —
//! except at `Stop`, where the final turn is handed over first, within the hook's bound.

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::mpsc::UnboundedReceiver;
use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::domain::host::{HostEvent, RewriteKind};
use crate::domain::transcript::{Transcript, TranscriptMessage};
use crate::handle::AdvisorHandle;
use crate::session::{HostTail, ReadLimits};

use super::gate_hook::PreToolUseWatch;
use super::output::{DeliveryState, HookPoint, HookReply};
use super::payload::{HookEvent, HookPayload, StartSource};
use super::protocol::Outcome;
use super::turns::{complete_turns, read_transcript_tail, TranscriptError};

/// What one hook event asks of a session.
#[derive(Debug)]
pub struct EventJob {
    /// The event.
    pub payload: HookPayload,
    /// When the hook stops waiting (less the margin for the answer's way back).
    pub deadline: Instant,
    /// Where the answer goes.
    pub reply: oneshot::Sender<HookReply>,
}

/// A job of a session's worker, taken in order.
#[derive(Debug)]
pub enum SessionJob {
    /// A hook event.
    Event(Box<EventJob>),
    /// Answer once everything before this job is done and nothing is left to review.
    Drain(oneshot::Sender<()>),
}

/// Where a session's transcript is read from and under which checks.
#[derive(Debug, Clone, Default)]
pub struct TranscriptSource {
    /// `transcript_path` of the latest event that gave one.
    pub path: Option<PathBuf>,
    /// The session's `cwd`.
    pub cwd: Option<PathBuf>,
    /// The user's home.
    pub home: Option<PathBuf>,
    /// The reader's limits.
    pub limits: ReadLimits,
    /// The last read's state, so that the next reads only what was appended (H31); shared
    /// by the clones a read takes off the async threads (one read at a time).
    pub tail: Arc<parking_lot::Mutex<Option<HostTail>>>,
}

/// The messages read now, or why none were.
type ReadResult = Result<Vec<Arc<TranscriptMessage>>, TranscriptError>;

impl TranscriptSource {
    /// Takes the paths an event gives.
    pub fn update(&mut self, payload: &HookPayload) {
        if payload.transcript_path.is_some() {
            self.path = payload.transcript_path.clone();
        }
        if payload.cwd.is_some() {
            self.cwd = payload.cwd.clone();
        }
    }

    /// Reads the transcript's current messages off the async threads.
    pub fn start_read(&self) -> tokio::task::JoinHandle<ReadResult> {
        let source = self.clone();
        tokio::task::spawn_blocking(move || source.read())
    }

    /// Reads the transcript's current messages (blocking). No path yet reads as none.
    pub fn read(&self) -> ReadResult {
        let Some(path) = &self.path else {
            return Ok(Vec::new());
        };
        read_transcript_tail(
            path,
            self.home.as_deref(),
            self.cwd.as_deref(),
            &self.limits,
            &mut self.tail.lock(),
        )
    }
}

/// The end of a read started with [`TranscriptSource::start_read`]; a missing file is no
/// messages, any other failure one warning and nothing handed over.
fn settle(done: Result<ReadResult, tokio::task::JoinError>) -> Option<Vec<Arc<TranscriptMessage>>> {
    match done {
        Ok(Ok(messages)) => Some(messages),
        Ok(Err(TranscriptError::Missing(_))) => Some(Vec::new()),
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "hook session: transcript not read");
            None
        }
        Err(e) => {
            tracing::warn!(error = %e, "hook session: transcript reader failed");
            None
        }
    }
}

/// The transcript handed to the advisor so far.
#[derive(Debug, Default)]
pub struct FeedState {
    /// The messages handed over (up to the last complete turn).
    pub transcript: Transcript,
    /// Their number.
    pub fed_len: usize,
    /// A compaction was announced (`SessionStart` with source `compact`) and no read since
    /// has shown it: the CLI writes its transcript a moment after its hooks run (H11).
    pub compaction_announced: bool,
}

impl FeedState {
    /// A state seeded with `messages` up to their last complete turn (X4): nothing of them
    /// is reviewed.
    pub fn seeded(messages: &[Arc<TranscriptMessage>]) -> Self {
        let len = complete_turns(messages, 0, false)
            .last()
            .map_or(0, |cut| cut.len);
        let transcript = Transcript::new();
        for message in &messages[..len] {
            transcript.push_shared(Arc::clone(message));
        }
        Self {
            transcript,
            fed_len: len,
            compaction_announced: false,
        }
    }

    /// Whether `messages` are held back: a compaction was announced, but they still continue
    /// what was handed over — the CLI has not written the compaction yet — so handing them
    /// over would replay what is being compacted to the advisor reset for it (R1, H11). A
    /// read that shows the rewrite, nothing handed over yet, or the run's end (`at_stop`:
    /// its last turn is never left unreviewed) ends the hold.
    pub fn holds_for_compaction(
        &mut self,
        messages: &[Arc<TranscriptMessage>],
        at_stop: bool,
    ) -> bool {
        if !self.compaction_announced {
            return false;
        }
        if at_stop || self.fed_len == 0 || !self.extended_by(messages) {
            self.compaction_announced = false;
            return false;
        }
        true
    }

    /// Whether `messages` continues what was handed over.
    fn extended_by(&self, messages: &[Arc<TranscriptMessage>]) -> bool {
        match self.fed_len.checked_sub(1) {
            None => true,
            Some(last) => {
                messages.len() >= self.fed_len
                    && self.transcript.get(last).as_deref() == messages.get(last).map(|m| &**m)
            }
        }
    }
}

/// The session's advisor and its hook state.
pub struct HostSession {
    handle: AdvisorHandle,
    events: UnboundedReceiver<HostEvent>,
    delivery: DeliveryState,
    feed: FeedState,
    source: TranscriptSource,
    late_told: bool,
    pre_tool_use: PreToolUseWatch,
}

/// The time kept back from the hook's bound for the answer's way back.
pub const REPLY_MARGIN: std::time::Duration = std::time::Duration::from_millis(20);

/// How long before a PreToolUse's answer is due the gate's model call is cut (GT12): time
/// for the fail mode's verdict to be made and answered.
const GATE_ANSWER_MARGIN: std::time::Duration = std::time::Duration::from_millis(250);

impl HostSession {
    /// A session over an opened `handle`, its events, the transcript seeded, and the lines
    /// to tell its user first.
    pub fn new(
        handle: AdvisorHandle,
        events: UnboundedReceiver<HostEvent>,
        feed: FeedState,
        source: TranscriptSource,
        notices: Vec<String>,
    ) -> Self {
        let mut delivery = DeliveryState::new();
        for notice in notices {
            delivery.push_user_line(notice);
        }
        Self {
            handle,
            events,
            delivery,
            feed,
            source,
            late_told: false,
            pre_tool_use: PreToolUseWatch::default(),
        }
    }

    /// Watches for tool calls that end unannounced while the session's gate is on
    /// (`gate_on`): the user is told once that the PreToolUse hook is missing (H33).
    pub fn watching_gate(mut self, gate_on: bool) -> Self {
        self.pre_tool_use = PreToolUseWatch::new(gate_on);
        self
    }

    /// The session's handle.
    pub fn handle(&self) -> &AdvisorHandle {
        &self.handle
    }

    /// Serves one job; `true` when the session ended (SessionEnd).
    pub async fn serve(&mut self, job: EventJob) -> bool {
        let EventJob {
            payload,
            deadline,
            reply,
        } = job;
        self.source.update(&payload);
        if let Some(line) = self.pre_tool_use.observe(&payload.event, payload.host) {
            self.delivery.push_user_line(line);
        }
        let mut late_read = None;
        let mut gated = None;
        match &payload.event {
            HookEvent::PreToolUse {
                tool_name,
                tool_input,
                ..
            } => {
                let action = crate::gate::ProposedAction {
                    tool: tool_name.clone(),
                    input: tool_input.clone(),
                    cwd: payload.cwd.clone(),
                };
                // GT15: Codex cannot ask a person from a hook (it ignores `ask`).
                let can_ask = payload.host != super::payload::HookHost::Codex;
                // GT12: the model call ends early enough for the fail mode's answer to
                // reach the hook inside its bound, whatever the project's timeout.
                let options = crate::gate::GateOptions {
                    can_ask,
                    model_deadline: deadline.checked_sub(GATE_ANSWER_MARGIN),
                };
                let asked =
                    tokio::time::timeout_at(deadline, self.handle.gate_with(action, options)).await;
                gated = Some(gate_reply(payload.host, asked.ok().and_then(Result::ok)));
            }
            HookEvent::SessionStart { source } => {
                if let Some(kind) = rewrite_kind(*source) {
                    self.feed.compaction_announced = kind == RewriteKind::Compaction;
                    let _ = self.handle.rewrite(kind).await;
                }
            }
            HookEvent::PostToolUse { .. } => self.take_step().await,
            // A sub-agent's session (W7, H30) ends its run at SubagentStop as a main one at
            // Stop: its final turn is handed over and answered as a Stop is (H7).
            HookEvent::Stop { .. } | HookEvent::SubagentStop { .. } => {
                let mut read = self.source.start_read();
                match tokio::time::timeout_at(deadline, &mut read).await {
                    Ok(done) => self.hand_over(settle(done), true, Some(deadline)).await,
                    Err(_) => late_read = Some(read),
                }
                self.take_step().await;
            }
            _ => {}
        }
        match gated {
            Some(gate) if gate.stdout.is_some() || gate.outcome != Outcome::Empty => {
                let _ = reply.send(gate);
            }
            _ => self.answer(point_of(&payload.event), reply),
        }
        self.after_answer(&payload.event, late_read).await
    }

    /// What follows the answer; `true` when the session ended.
    async fn after_answer(
        &mut self,
        event: &HookEvent,
        late_read: Option<tokio::task::JoinHandle<ReadResult>>,
    ) -> bool {
        match event {
            HookEvent::SessionStart { .. }
            | HookEvent::PreToolUse { .. }
            | HookEvent::PostToolUse { .. } => {
                let messages = settle(self.source.start_read().await);
                self.hand_over(messages, false, None).await;
            }
            HookEvent::UserPromptSubmit { .. } => {
                let messages = settle(self.source.start_read().await);
                self.hand_over(messages, false, None).await;
                let _ = self.handle.user_prompt().await;
                let _ = self.handle.run_state(true).await;
            }
            HookEvent::Stop { .. } | HookEvent::SubagentStop { .. } => {
                if let Some(read) = late_read {
                    let messages = settle(read.await);
                    self.hand_over(messages, true, None).await;
                }
                let _ = self.handle.run_state(false).await;
            }
            HookEvent::SessionEnd { .. } => {
                let _ = self.handle.dispose().await;
                return true;
            }
            HookEvent::Other { .. } => {}
        }
        false
    }

    /// Takes the step's advice into what waits (D3).
    async fn take_step(&mut self) {
        if let Ok(advice) = self.handle.step_boundary().await {
            self.delivery.absorb_step(advice);
        }
    }

    /// Answers the hook at `point` with what is due; a reply that cannot be sent (the hook
    /// stopped waiting) is kept for the next call, and the user is told once (H9).
    fn answer(&mut self, point: HookPoint, reply: oneshot::Sender<HookReply>) {
        self.drain_events();
        let (hook_reply, taken) = self.delivery.reply(point);
        if reply.send(hook_reply).is_err() {
            self.delivery.restore(taken);
            if !self.late_told {
                self.late_told = true;
                self.delivery.push_user_line(
                    "advisor: a hook answer came late (raise advisor.hookTimeoutMs?); \
                     what it held is delivered now",
                );
            }
        }
    }

    /// Takes the runtime's host events that arrived so far.
    fn drain_events(&mut self) {
        while let Ok(event) = self.events.try_recv() {
            self.delivery.absorb_event(event);
        }
    }

    /// Hands the complete turns of `messages` over (H10): each turn end after the last one
    /// handed over, the last one awaited until `until` (a syncBacklog wait, H12), the others
    /// not awaited. A transcript that does not continue the one handed over replaces it.
    async fn hand_over(
        &mut self,
        messages: Option<Vec<Arc<TranscriptMessage>>>,
        at_stop: bool,
        until: Option<Instant>,
    ) {
        let Some(messages) = messages else { return };
        let feed = &mut self.feed;
        if feed.holds_for_compaction(&messages, at_stop) {
            return;
        }
        let extends = feed.extended_by(&messages);
        let from = if extends { feed.fed_len } else { 0 };
        let mut cuts = complete_turns(&messages, from, at_stop);
        if !extends {
            let len = cuts.last().map_or(0, |cut| cut.len);
            feed.transcript
                .replace(messages[..len].iter().map(|m| (**m).clone()));
            feed.fed_len = len;
            cuts = cuts.split_off(cuts.len().saturating_sub(1));
        }
        let count = cuts.len();
        for (index, cut) in cuts.into_iter().enumerate() {
            for message in messages.get(feed.fed_len..cut.len).unwrap_or_default() {
                feed.transcript.push_shared(Arc::clone(message));
            }
            feed.fed_len = feed.fed_len.max(cut.len);
            match until {
                Some(until) if index + 1 == count && self.handle.turn_end_may_wait() => {
                    let wait = self
                        .handle
                        .hand_over_turn_waiting(&feed.transcript, cut.options);
                    let _ = tokio::time::timeout_at(until, wait).await;
                }
                // Queued now; its answer (a wait's end) is not needed.
                _ => {
                    let _ = self.handle.hand_over_turn(&feed.transcript, cut.options);
                }
            }
        }
    }
}

/// A PreToolUse answer on `host` for the action gate's `verdict` (GT12): `deny` and `ask` as
/// the host's `permissionDecision` with the reason; an allow adds nothing (the host's own
/// permission rules still apply), but a breaker's note (GT7) is shown to the user; no
/// verdict in time answers nothing. Codex ignores an `ask` and runs the call, so there an
/// ask is answered `deny` with its reason: nothing the gate wants confirmed runs
/// unconfirmed (GT15).
pub fn gate_reply(
    host: super::payload::HookHost,
    verdict: Option<crate::gate::GateVerdict>,
) -> HookReply {
    use crate::gate::{GateDecision, VerdictSource};
    let Some(verdict) = verdict else {
        return HookReply::empty();
    };
    let decided = |decision: &str, outcome| HookReply {
        stdout: Some(serde_json::json!({
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": decision,
                "permissionDecisionReason": verdict.reason,
            }
        })),
        outcome,
    };
    match (verdict.decision, verdict.source) {
        (GateDecision::Deny, _) => decided("deny", Outcome::Deny),
        (GateDecision::Ask, _) if host == super::payload::HookHost::Codex => {
            decided("deny", Outcome::Deny)
        }
        (GateDecision::Ask, _) => decided("ask", Outcome::Ask),
        (GateDecision::Allow, VerdictSource::Breaker | VerdictSource::FailMode) => HookReply {
            stdout: Some(serde_json::json!({ "systemMessage": verdict.reason })),
            outcome: Outcome::Allow,
        },
        (GateDecision::Allow, VerdictSource::Model | VerdictSource::Cache) => HookReply {
            stdout: None,
            outcome: Outcome::Allow,
        },
        (GateDecision::Allow, VerdictSource::Classifier) => HookReply::empty(),
    }
}

/// The rewrite a `SessionStart` announces (R1, H11).
fn rewrite_kind(source: StartSource) -> Option<RewriteKind> {
    match source {
        StartSource::Compact => Some(RewriteKind::Compaction),
        StartSource::Resume => Some(RewriteKind::SessionSwitch),
        StartSource::Clear => Some(RewriteKind::NewSession),
        StartSource::Startup | StartSource::Other => None,
    }
}

/// The delivery point of an event.
pub fn point_of(event: &HookEvent) -> HookPoint {
    match event {
        HookEvent::SessionStart { .. } => HookPoint::SessionStart,
        HookEvent::UserPromptSubmit { .. } => HookPoint::UserPromptSubmit,
        HookEvent::PreToolUse { .. } => HookPoint::PreToolUse,
        HookEvent::PostToolUse { .. } => HookPoint::PostToolUse,
        // Both CLIs honour a block at SubagentStop: the sub-agent continues (H30).
        HookEvent::Stop {
            stop_hook_active, ..
        }
        | HookEvent::SubagentStop { stop_hook_active } => HookPoint::Stop {
            stop_hook_active: *stop_hook_active,
        },
        HookEvent::SessionEnd { .. } | HookEvent::Other { .. } => HookPoint::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(texts: &[&str]) -> Vec<Arc<TranscriptMessage>> {
        texts
            .iter()
            .map(|t| Arc::new(TranscriptMessage::user(*t)))
            .collect()
    }

    fn fed(texts: &[&str]) -> FeedState {
        let mut feed = FeedState::default();
        for m in messages(texts) {
            feed.transcript.push_shared(m);
        }
        feed.fed_len = texts.len();
        feed.compaction_announced = true;
        feed
    }

    #[test]
    fn h11_an_announced_compaction_holds_a_read_that_does_not_show_it() {
        let mut feed = fed(&["one", "two"]);
        assert!(feed.holds_for_compaction(&messages(&["one", "two"]), false));
        assert!(feed.holds_for_compaction(&messages(&["one", "two", "three"]), false));
        assert!(feed.compaction_announced, "still waiting for the rewrite");
        assert!(!feed.holds_for_compaction(&messages(&["summary", "three"]), false));
        assert!(!feed.compaction_announced, "the rewrite was seen");
        assert!(!feed.holds_for_compaction(&messages(&["one", "two", "four"]), false));
    }

    #[test]
    fn h11_the_run_s_end_or_an_empty_feed_ends_the_hold() {
        let mut feed = fed(&["one"]);
        assert!(!feed.holds_for_compaction(&messages(&["one", "two"]), true));
        assert!(!feed.compaction_announced);
        let mut empty = FeedState {
            compaction_announced: true,
            ..FeedState::default()
        };
        assert!(!empty.holds_for_compaction(&messages(&["one"]), false));
        let mut quiet = fed(&["one"]);
        quiet.compaction_announced = false;
        assert!(!quiet.holds_for_compaction(&messages(&["one"]), false));
    }
}
