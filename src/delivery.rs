//! Delivery policy (SPEC D1–D10): what happens to each advisory the advisor raises, the
//! held notes of the `reconfirm` policy and its catch-up block, and immune turns. Pure logic;
//! the DeliveryRouter actor wraps it and forwards the host events.

use std::collections::HashMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use unicode_normalization::UnicodeNormalization;

use crate::domain::advice::{Advisory, Channel, Delivery, Severity};
use crate::domain::host::{HostEvent, StepAdvice};
use crate::domain::transcript::{Transcript, TranscriptMessage};
use crate::settings::DeliveryPolicy;

/// The `context` attribute of advice delivered under `reconfirm` (D4): by the time it
/// arrives the agent has moved on.
pub const EARLIER_STEP_CONTEXT: &str = "raised about an earlier step";

/// Appended to advice delivered under `reconfirm` right after a terminal turn (D4).
pub const FINAL_ANSWER_NOTE: &str = "[Your last turn was already your final answer. If this \
advice changes anything, end with a new final answer that stands on its own and covers the \
whole task, not a short follow-up to the previous one.]";

/// The heading of the held-notes preamble of a review prompt (D9).
pub const HELD_HEADING: &str = "### Held advisories — reconfirm";

/// How long a terminal turn's catch-up block waits at most (D5).
pub const TERMINAL_CATCH_UP: Duration = Duration::from_secs(120);

/// The catch-up waits of non-terminal turns, one per consecutive block; the last repeats (D5).
pub const CATCH_UP_BACKOFF: [Duration; 4] = [
    Duration::from_secs(15),
    Duration::from_secs(30),
    Duration::from_secs(60),
    Duration::from_secs(120),
];

/// Why an advisory was dropped (D10).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum DropReason {
    /// Same note already delivered at the same or a higher severity in this epoch (D8).
    Duplicate,
    /// "lgtm", "looks good", "all clear", "done" and the like (D8).
    ContentFree,
    /// More than `maxNotesPerUpdate` notes in one review (D8).
    OverBudget,
    /// Raised by a review of an epoch that a reset ended (R1).
    StaleEpoch,
    /// The advisor was disabled or disposed.
    Disabled,
    /// A held note the next successful review did not raise again (D9).
    Recanted,
    /// Held by a review attempt that was thrown away (its context overflowed, or the
    /// review failed); the attempt's conversation is gone, so its holds go too (G5).
    Discarded,
}

impl DropReason {
    /// The camelCase name used in status output.
    pub fn as_str(self) -> &'static str {
        match self {
            DropReason::Duplicate => "duplicate",
            DropReason::ContentFree => "contentFree",
            DropReason::OverBudget => "overBudget",
            DropReason::StaleEpoch => "staleEpoch",
            DropReason::Disabled => "disabled",
            DropReason::Recanted => "recanted",
            DropReason::Discarded => "discarded",
        }
    }
}

/// How the `advise` tool call was answered, and what the advisor model is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RaiseOutcome {
    /// Accepted for delivery.
    Recorded,
    /// Held until a later review raises it again (`reconfirm`, D4).
    Held,
    /// Raised again while held: the held note is reconfirmed (D9).
    Reconfirmed,
    /// Dropped, with the reason.
    Dropped(DropReason),
}

impl RaiseOutcome {
    /// The tool result text the advisor model reads (D8).
    pub fn tool_text(&self, max_notes: usize) -> String {
        match self {
            RaiseOutcome::Recorded | RaiseOutcome::Reconfirmed => "Recorded.".to_string(),
            RaiseOutcome::Held => "Held pending reconfirmation.".to_string(),
            RaiseOutcome::Dropped(DropReason::Duplicate) => "Duplicate advice ignored.".to_string(),
            RaiseOutcome::Dropped(DropReason::ContentFree) => {
                "Advice ignored: it says nothing the agent can act on. Stay silent instead."
                    .to_string()
            }
            RaiseOutcome::Dropped(DropReason::OverBudget) => {
                format!("Advice ignored: at most {max_notes} notes per update. Finish the review.")
            }
            RaiseOutcome::Dropped(DropReason::StaleEpoch) => {
                "Advice discarded: the session was reset while you reviewed it.".to_string()
            }
            RaiseOutcome::Dropped(DropReason::Disabled) => {
                "Advice discarded: the advisor is disabled.".to_string()
            }
            RaiseOutcome::Dropped(DropReason::Recanted) => {
                "Advice discarded: it was withdrawn.".to_string()
            }
            RaiseOutcome::Dropped(DropReason::Discarded) => {
                "Advice discarded: the review attempt was abandoned.".to_string()
            }
        }
    }
}

/// Outcome counters (D10), shown in status (C3). `held` and `pending` count notes now
/// waiting; the others only grow.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryCounts {
    /// Notes delivered as asides (batched nits).
    pub aside: u64,
    /// Notes delivered as steering cards.
    pub steer: u64,
    /// Notes delivered as wakes.
    pub wake: u64,
    /// Notes delivered as visible cards.
    pub card: u64,
    /// Notes held now, waiting for reconfirmation (reconfirm policy, D9).
    pub held: u64,
    /// `advise` calls that raised a held note again and were merged into it (D9).
    #[serde(default)]
    pub reconfirmed: u64,
    /// Notes dropped, by reason.
    pub dropped: HashMap<DropReason, u64>,
    /// Notes accepted but not yet taken by the host (queued nits, outbox steers).
    pub pending: u64,
}

impl DeliveryCounts {
    /// Notes delivered on any channel.
    pub fn delivered(&self) -> u64 {
        self.aside + self.steer + self.wake + self.card
    }

    /// Notes dropped for any reason.
    pub fn dropped_total(&self) -> u64 {
        self.dropped.values().sum()
    }

    /// Every advisory raised so far: delivered + held + reconfirmed + dropped + pending.
    pub fn raised(&self) -> u64 {
        self.delivered() + self.held + self.reconfirmed + self.dropped_total() + self.pending
    }

    fn deliver(&mut self, channel: Channel, n: u64) {
        match channel {
            Channel::Aside => self.aside += n,
            Channel::Steer => self.steer += n,
            Channel::Wake => self.wake += n,
            Channel::Card => self.card += n,
        }
    }
}

/// Normalises a note for deduplication (D8): NFKC, whitespace runs collapsed, trimmed.
pub fn normalize_note(note: &str) -> String {
    let nfkc: String = note.nfkc().collect();
    nfkc.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// True for notes that carry no advice ("lgtm", "looks good", "all clear", "done"…).
pub fn is_content_free(note: &str) -> bool {
    let lowered = normalize_note(note).to_lowercase();
    let core = lowered.trim_matches(|c: char| !c.is_alphanumeric());
    matches!(
        core,
        "" | "lgtm"
            | "looks good"
            | "looks good to me"
            | "all clear"
            | "all good"
            | "done"
            | "ok"
            | "no issues"
            | "nothing to add"
            | "no concerns"
    )
}

/// True when the turn that just ended was terminal: the transcript ends with an assistant
/// message that calls no tools (D4). Looks at the last message only, so it costs O(1)
/// whatever the session's length.
pub fn turn_was_terminal(transcript: &Transcript) -> bool {
    let Some(last) = transcript.len().checked_sub(1) else {
        return false;
    };
    matches!(transcript.get(last).as_deref(), Some(TranscriptMessage::Assistant(a)) if !a.has_tool_calls())
}

/// A concern or blocker held under `reconfirm` (D9), kept by the router, outside the
/// advisor's context (G6).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldNote {
    /// The note with its original text and its current (never lowered) severity.
    pub advisory: Advisory,
    /// Whether a later review raised it again.
    pub confirmed: bool,
    key: String,
    held_in: u64,
    listed_in: Option<u64>,
    reraised_in: Option<u64>,
    /// How the note stood before review `.0` first raised it again, so a discarded
    /// attempt of that review can undo the reconfirmation (G5).
    before_reraise: Option<(u64, Reraise)>,
}

/// The part of a held note a reconfirmation changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Reraise {
    confirmed: bool,
    reraised_in: Option<u64>,
    severity: Option<Severity>,
}

impl HeldNote {
    fn severity(&self) -> Severity {
        self.advisory.effective_severity()
    }
}

/// A catch-up block the host's turn end should wait through (D5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CatchUpPlan {
    /// How long to wait at most.
    pub timeout: Duration,
    /// Whether the turn that ended was terminal.
    pub terminal: bool,
    /// Notes held when the block began.
    pub held: usize,
}

impl CatchUpPlan {
    /// The notice telling the user the turn end waits for the advisor (D5).
    pub fn notice(&self) -> String {
        let secs = self.timeout.as_secs();
        if self.terminal {
            format!("advisor: catching up before the turn ends (up to {secs}s)…")
        } else {
            format!(
                "advisor: waiting up to {secs}s to catch up ({} held note{})…",
                self.held,
                if self.held == 1 { "" } else { "s" }
            )
        }
    }
}

/// How a catch-up block ended (D5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CatchUpEnd {
    /// The advisor drained its backlog.
    Settled,
    /// The wait hit its bound.
    TimedOut,
    /// The advisor is failing or paused.
    Failed,
    /// The host aborted (or a reset or dispose released the wait).
    Aborted,
}

/// What happens to the held notes when a catch-up block ends (D5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeldRelease {
    /// Deliver the reconfirmed notes; the others stay held.
    Confirmed,
    /// Deliver every held note; `best_effort` when the advisor did not catch up.
    All {
        /// The advisor did not settle: the notes go out unconfirmed, with a notice.
        best_effort: bool,
    },
    /// Deliver nothing; everything stays held.
    Keep,
}

/// The catch-up block's decisions (D5): whether a turn end waits, how long, and what a
/// block's end means for the held notes. Counts consecutive blocks that did not settle.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CatchUp {
    streak: usize,
}

impl CatchUp {
    /// A fresh policy (no block yet).
    pub fn new() -> Self {
        Self::default()
    }

    /// Consecutive non-terminal blocks that ended without the advisor settling.
    pub fn streak(&self) -> usize {
        self.streak
    }

    /// Whether a turn end waits, and how long: terminal turns always wait (120 s), other
    /// turns only while notes are held, with a backoff growing per consecutive block.
    pub fn plan(&self, terminal: bool, held: usize) -> Option<CatchUpPlan> {
        let timeout = if terminal {
            TERMINAL_CATCH_UP
        } else if held > 0 {
            CATCH_UP_BACKOFF[self.streak.min(CATCH_UP_BACKOFF.len() - 1)]
        } else {
            return None;
        };
        Some(CatchUpPlan {
            timeout,
            terminal,
            held,
        })
    }

    /// A block ended: settling resets the streak; a mid-run timeout or failure grows it and
    /// keeps the notes; a terminal turn delivers what is held either way; an abort keeps
    /// everything as it is.
    pub fn finish(&mut self, plan: &CatchUpPlan, end: CatchUpEnd) -> HeldRelease {
        match (end, plan.terminal) {
            (CatchUpEnd::Aborted, _) => HeldRelease::Keep,
            (CatchUpEnd::Settled, terminal) => {
                self.streak = 0;
                if terminal {
                    HeldRelease::All { best_effort: false }
                } else {
                    HeldRelease::Confirmed
                }
            }
            (CatchUpEnd::TimedOut | CatchUpEnd::Failed, true) => {
                self.streak = 0;
                HeldRelease::All { best_effort: true }
            }
            (CatchUpEnd::TimedOut | CatchUpEnd::Failed, false) => {
                self.streak += 1;
                HeldRelease::Keep
            }
        }
    }

    /// Forgets the streak (reset, R1).
    pub fn reset(&mut self) {
        self.streak = 0;
    }
}

/// The router's state: outbox, aside queue, held notes, latch, immunity, dedupe memory and
/// counters.
#[derive(Debug)]
pub struct RouterState {
    policy: DeliveryPolicy,
    max_notes_per_update: usize,
    immune_turns: u32,
    epoch: u64,
    running: bool,
    suppressed: bool,
    enabled: bool,
    asides: Vec<Advisory>,
    steers: Vec<Delivery>,
    held: Vec<HeldNote>,
    delivered_rank: HashMap<String, u8>,
    review_budget: (u64, usize),
    immune_left: u32,
    last_turn_terminal: bool,
    catch_up: CatchUp,
    counts: DeliveryCounts,
}

impl RouterState {
    /// A router for `policy`, allowing `max_notes_per_update` notes per review, with the
    /// default 3 immune turns (D7).
    pub fn new(policy: DeliveryPolicy, max_notes_per_update: usize) -> Self {
        Self {
            policy,
            max_notes_per_update,
            immune_turns: 3,
            epoch: 0,
            running: false,
            suppressed: false,
            enabled: true,
            asides: Vec::new(),
            steers: Vec::new(),
            held: Vec::new(),
            delivered_rank: HashMap::new(),
            review_budget: (u64::MAX, 0),
            immune_left: 0,
            last_turn_terminal: false,
            catch_up: CatchUp::new(),
            counts: DeliveryCounts::default(),
        }
    }

    /// The same router with `turns` immune turns after an interrupting delivery (D7);
    /// 0 turns immunity off.
    pub fn with_immune_turns(mut self, turns: u32) -> Self {
        self.immune_turns = turns;
        self
    }

    /// The delivery policy in force.
    pub fn policy(&self) -> DeliveryPolicy {
        self.policy
    }

    /// The counters (D10).
    pub fn counts(&self) -> &DeliveryCounts {
        &self.counts
    }

    /// The notes-per-review bound (D8).
    pub fn max_notes_per_update(&self) -> usize {
        self.max_notes_per_update
    }

    /// The configured number of immune turns (D7).
    pub fn immune_turns(&self) -> u32 {
        self.immune_turns
    }

    /// Whether concerns go out as asides now (D7).
    pub fn immune(&self) -> bool {
        self.immune_left > 0
    }

    /// Whether the user-interrupt latch is set (D6).
    pub fn suppressed(&self) -> bool {
        self.suppressed
    }

    /// The notes held now, oldest first (D9).
    pub fn held(&self) -> &[HeldNote] {
        &self.held
    }

    /// Consecutive catch-up blocks that did not settle (D5).
    pub fn catch_up_streak(&self) -> usize {
        self.catch_up.streak()
    }

    fn drop_note(&mut self, reason: DropReason) -> RaiseOutcome {
        self.count_drop(reason, 1);
        tracing::info!(reason = reason.as_str(), "advisory dropped");
        RaiseOutcome::Dropped(reason)
    }

    fn count_drop(&mut self, reason: DropReason, n: u64) {
        if n > 0 {
            *self.counts.dropped.entry(reason).or_default() += n;
        }
    }

    /// Counts a delivery; a steer or wake makes the next turns immune (D7).
    fn delivered(&mut self, channel: Channel, n: u64) {
        self.counts.deliver(channel, n);
        if n > 0 && matches!(channel, Channel::Steer | Channel::Wake) && self.immune_turns > 0 {
            // The turn in progress plus the next `immune_turns` turn ends.
            self.immune_left = self.immune_turns + 1;
        }
    }

    /// Routes one advisory raised by review `review` of `epoch`. Returns what the advisor is
    /// told and the events for the host.
    pub fn raise(
        &mut self,
        epoch: u64,
        review: u64,
        advisory: Advisory,
    ) -> (RaiseOutcome, Vec<HostEvent>) {
        if !self.enabled {
            return (self.drop_note(DropReason::Disabled), Vec::new());
        }
        if epoch != self.epoch {
            return (self.drop_note(DropReason::StaleEpoch), Vec::new());
        }
        if is_content_free(&advisory.note) {
            return (self.drop_note(DropReason::ContentFree), Vec::new());
        }
        let key = normalize_note(&advisory.note);
        let severity = advisory.effective_severity();
        if let Some(outcome) = self.reraise(&key, review, severity) {
            return (outcome, Vec::new());
        }
        if self
            .delivered_rank
            .get(&key)
            .is_some_and(|&r| r >= severity.rank())
        {
            return (self.drop_note(DropReason::Duplicate), Vec::new());
        }
        if self.review_budget.0 != review {
            self.review_budget = (review, 0);
        }
        if self.review_budget.1 >= self.max_notes_per_update {
            return (self.drop_note(DropReason::OverBudget), Vec::new());
        }
        self.review_budget.1 += 1;
        if self.policy == DeliveryPolicy::Reconfirm && severity.interrupts() {
            // D4: held on first emission; not recorded as delivered (D8).
            tracing::info!(
                severity = severity.as_str(),
                "advisory held for reconfirmation"
            );
            self.held.push(HeldNote {
                advisory,
                confirmed: false,
                key,
                held_in: review,
                listed_in: None,
                reraised_in: None,
                before_reraise: None,
            });
            self.counts.held += 1;
            return (RaiseOutcome::Held, Vec::new());
        }
        self.delivered_rank.insert(key, severity.rank());
        let events = self.route(advisory);
        (RaiseOutcome::Recorded, events)
    }

    /// A note matching a held one (D9): a later review reconfirms it, escalating but never
    /// lowering its severity; a repeat within the review that held it is a duplicate.
    fn reraise(&mut self, key: &str, review: u64, severity: Severity) -> Option<RaiseOutcome> {
        let held = self.held.iter_mut().find(|h| h.key == key)?;
        if held.held_in != review && held.before_reraise.map(|(r, _)| r) != Some(review) {
            held.before_reraise = Some((
                review,
                Reraise {
                    confirmed: held.confirmed,
                    reraised_in: held.reraised_in,
                    severity: held.advisory.severity,
                },
            ));
        }
        if severity > held.severity() {
            held.advisory.severity = Some(severity);
        }
        if held.held_in == review {
            return Some(self.drop_note(DropReason::Duplicate));
        }
        held.confirmed = true;
        held.reraised_in = Some(review);
        tracing::info!(
            severity = held.severity().as_str(),
            "held advisory reconfirmed"
        );
        self.counts.reconfirmed += 1;
        Some(RaiseOutcome::Reconfirmed)
    }

    /// The `context` attribute and the final-answer note for a delivery now (D4).
    fn build(&self, channel: Channel, notes: Vec<Advisory>) -> Delivery {
        if self.policy != DeliveryPolicy::Reconfirm {
            return Delivery::new(channel, notes, None);
        }
        let mut delivery = Delivery::new(channel, notes, Some(EARLIER_STEP_CONTEXT));
        if self.last_turn_terminal {
            delivery.content.push_str("\n\n");
            delivery.content.push_str(FINAL_ANSWER_NOTE);
        }
        delivery
    }

    fn route(&mut self, advisory: Advisory) -> Vec<HostEvent> {
        let severity = advisory.effective_severity();
        let immune_concern = severity == Severity::Concern && self.immune();
        if !severity.interrupts() || immune_concern {
            tracing::info!(
                severity = severity.as_str(),
                immune = immune_concern,
                "advisory queued as aside"
            );
            self.asides.push(advisory);
            self.counts.pending += 1;
            return Vec::new();
        }
        let channel = if self.suppressed {
            Channel::Card
        } else if self.running {
            Channel::Steer
        } else {
            Channel::Wake
        };
        let card = self.build(channel, vec![advisory]);
        tracing::info!(
            severity = severity.as_str(),
            channel = channel.as_str(),
            "advisory routed"
        );
        match channel {
            Channel::Steer => {
                self.steers.push(card);
                self.counts.pending += 1;
                vec![HostEvent::SteerReady]
            }
            Channel::Card => {
                self.delivered(Channel::Card, 1);
                vec![HostEvent::Card { card }]
            }
            _ => {
                self.delivered(Channel::Wake, 1);
                vec![HostEvent::Wake { card }]
            }
        }
    }

    /// The host is about to call its model: all queued nits as one aside message, plus the
    /// steering cards in the outbox (D3).
    pub fn step_boundary(&mut self) -> StepAdvice {
        let aside = if self.asides.is_empty() {
            None
        } else {
            let notes = std::mem::take(&mut self.asides);
            let n = notes.len() as u64;
            self.counts.pending -= n;
            self.delivered(Channel::Aside, n);
            Some(self.build(Channel::Aside, notes))
        };
        let steers = std::mem::take(&mut self.steers);
        let n = steers.len() as u64;
        self.counts.pending -= n;
        self.delivered(Channel::Steer, n);
        StepAdvice { aside, steers }
    }

    /// The primary started or went idle. Going idle turns outbox steers into wakes (or
    /// cards while the latch is set, A5); queued nits wait for the next run. A new run
    /// starts with no terminal turn behind it (D4).
    pub fn run_state(&mut self, running: bool) -> Vec<HostEvent> {
        self.running = running;
        if running {
            self.last_turn_terminal = false;
            return Vec::new();
        }
        let channel = if self.suppressed {
            Channel::Card
        } else {
            Channel::Wake
        };
        self.flush_steers(channel)
    }

    fn flush_steers(&mut self, channel: Channel) -> Vec<HostEvent> {
        let steers = std::mem::take(&mut self.steers);
        let n = steers.len() as u64;
        self.counts.pending -= n;
        self.delivered(channel, n);
        steers
            .into_iter()
            .map(|mut card| {
                card.channel = channel;
                match channel {
                    Channel::Wake => HostEvent::Wake { card },
                    _ => HostEvent::Card { card },
                }
            })
            .collect()
    }

    /// The host aborted the run (D6): a user interrupt latches suppression and turns outbox
    /// steers into visible cards; another interrupt keeps auto-resume. Held notes stay held
    /// (D5).
    pub fn interrupt(&mut self, by_user: bool) -> Vec<HostEvent> {
        if !by_user {
            return Vec::new();
        }
        self.suppressed = true;
        self.flush_steers(Channel::Card)
    }

    /// A user prompt clears the latch (D6).
    pub fn user_prompt(&mut self) {
        self.suppressed = false;
    }

    /// A primary turn ended (`terminal` when it was the final answer): one immune turn is
    /// used up (D7), and under `reconfirm` the turn end may have to wait for the advisor to
    /// catch up (D5). `can_wait` is false when no advisor runs to wait for.
    pub fn turn_ended(&mut self, terminal: bool, can_wait: bool) -> Option<CatchUpPlan> {
        self.last_turn_terminal = terminal;
        self.immune_left = self.immune_left.saturating_sub(1);
        if self.policy != DeliveryPolicy::Reconfirm || !self.enabled || !can_wait {
            return None;
        }
        let plan = self.catch_up.plan(terminal, self.held.len());
        if let Some(plan) = &plan {
            tracing::info!(
                timeout_s = plan.timeout.as_secs(),
                terminal,
                held = plan.held,
                "catch-up block"
            );
        }
        plan
    }

    /// A catch-up block ended (D5): delivers the held notes its end allows, one message per
    /// note, on the channel the run state calls for.
    pub fn catch_up_finished(&mut self, plan: &CatchUpPlan, end: CatchUpEnd) -> Vec<HostEvent> {
        let release = self.catch_up.finish(plan, end);
        tracing::info!(
            ?end,
            ?release,
            held = self.held.len(),
            "catch-up block ended"
        );
        match release {
            HeldRelease::Keep => Vec::new(),
            HeldRelease::Confirmed => self.release_held(|h| h.confirmed),
            HeldRelease::All { best_effort } => {
                let count = self.held.len();
                let mut events = Vec::new();
                if best_effort && count > 0 {
                    events.push(HostEvent::Notice {
                        text: format!(
                            "advisor: did not catch up before the turn ended; delivering {count} held note{} unconfirmed",
                            if count == 1 { "" } else { "s" }
                        ),
                    });
                }
                events.extend(self.release_held(|_| true));
                events
            }
        }
    }

    fn release_held(&mut self, pick: impl Fn(&HeldNote) -> bool) -> Vec<HostEvent> {
        let (out, keep): (Vec<HeldNote>, Vec<HeldNote>) =
            std::mem::take(&mut self.held).into_iter().partition(pick);
        self.held = keep;
        let mut events = Vec::new();
        for note in out {
            self.counts.held -= 1;
            let rank = note.severity().rank();
            let slot = self.delivered_rank.entry(note.key).or_default();
            *slot = (*slot).max(rank);
            events.extend(self.route(note.advisory));
        }
        events
    }

    /// The held-notes preamble of review `review` (D9), empty when nothing is held. The
    /// notes listed are the ones this review must raise again to keep.
    pub fn held_preamble(&mut self, epoch: u64, review: u64) -> String {
        if epoch != self.epoch || self.held.is_empty() {
            return String::new();
        }
        let mut out = String::from(HELD_HEADING);
        out.push_str(
            "\n\nThese notes from your earlier reviews are held; the agent has not seen them:\n",
        );
        for held in &mut self.held {
            held.listed_in = Some(review);
            out.push_str(&format!(
                "- [{}] {}\n",
                held.severity().as_str().to_uppercase(),
                held.key
            ));
        }
        out.push_str(
            "\nFor each one that still applies after this update, call `advise` again with the \
same note at the same or a higher severity. Silence drops a note. Do not announce that an \
item is resolved; just leave it out.",
        );
        out
    }

    /// Review `review` of `epoch` succeeded (D9): held notes it was shown and did not raise
    /// again are dropped (`recanted`). A failed review prunes nothing.
    pub fn review_succeeded(&mut self, epoch: u64, review: u64) {
        if epoch != self.epoch {
            return;
        }
        let before = self.held.len();
        self.held
            .retain(|h| h.listed_in != Some(review) || h.reraised_in == Some(review));
        let dropped = (before - self.held.len()) as u64;
        if dropped > 0 {
            tracing::info!(dropped, "held advisories recanted");
            self.counts.held -= dropped;
            self.count_drop(DropReason::Recanted, dropped);
        }
    }

    /// An attempt of review `review` of `epoch` was thrown away before the review is tried
    /// again (G5: its context overflowed; F1: it failed). The attempts of one review run one
    /// after another and the agent reports a discarded one before the next starts, so
    /// everything the review changed so far is the discarded attempt's: the notes it held
    /// are dropped (`discarded`) and free their place in the review's note budget, and the
    /// held notes it raised again lose that reconfirmation (and any escalation). Advice it
    /// delivered cannot be recalled; its dedupe memory stays, so a replay does not repeat
    /// it. Returns how many holds were rolled back.
    pub fn discard_attempt(&mut self, epoch: u64, review: u64) -> usize {
        if epoch != self.epoch {
            return 0;
        }
        let before = self.held.len();
        self.held.retain(|h| h.held_in != review);
        let dropped = before - self.held.len();
        for held in &mut self.held {
            if let Some((r, prior)) = held.before_reraise {
                if r == review {
                    held.confirmed = prior.confirmed;
                    held.reraised_in = prior.reraised_in;
                    held.advisory.severity = prior.severity;
                    held.before_reraise = None;
                }
            }
        }
        if dropped > 0 {
            tracing::info!(dropped, review, "holds of a discarded attempt rolled back");
            self.counts.held -= dropped as u64;
            self.count_drop(DropReason::Discarded, dropped as u64);
            if self.review_budget.0 == review {
                self.review_budget.1 = self.review_budget.1.saturating_sub(dropped);
            }
        }
        dropped
    }

    /// A reset (R1): a new epoch; the dedupe memory, the held notes and the catch-up streak
    /// of the old one are forgotten. Advice already accepted stays in the outbox: it was
    /// raised before the rewrite.
    pub fn reset(&mut self, epoch: u64) {
        self.epoch = epoch;
        self.delivered_rank.clear();
        self.review_budget = (u64::MAX, 0);
        self.drop_held(DropReason::StaleEpoch);
        self.catch_up.reset();
    }

    fn drop_held(&mut self, reason: DropReason) {
        let n = self.held.len() as u64;
        self.held.clear();
        self.counts.held -= n;
        self.count_drop(reason, n);
    }

    /// Enables or disables delivery; disabling drops what is queued and held (reason
    /// `disabled`).
    pub fn set_enabled(&mut self, enabled: bool) {
        self.enabled = enabled;
        if !enabled {
            let n = (self.asides.len() + self.steers.len()) as u64;
            self.asides.clear();
            self.steers.clear();
            self.counts.pending -= n;
            self.count_drop(DropReason::Disabled, n);
            self.drop_held(DropReason::Disabled);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::advice::Severity;
    use proptest::prelude::*;

    fn router() -> RouterState {
        RouterState::new(DeliveryPolicy::Interrupt, 2)
    }

    fn adv(note: &str, sev: Option<Severity>) -> Advisory {
        Advisory::new(note, sev)
    }

    #[test]
    fn d1_omitted_severity_is_routed_as_a_nit_but_keeps_no_attribute() {
        let mut r = router();
        r.run_state(true);
        let (_, events) = r.raise(0, 1, adv("prefer a slice here", None));
        assert!(events.is_empty(), "a nit neither steers nor wakes");
        let aside = r.step_boundary().aside.expect("queued as an aside");
        assert_eq!(aside.notes[0].severity, None);
        assert!(
            aside.content.starts_with("<advisory guidance="),
            "{}",
            aside.content
        );
    }

    #[test]
    fn d3_two_nits_in_one_step_become_one_message() {
        let mut r = router();
        r.run_state(true);
        assert_eq!(
            r.raise(0, 1, adv("rename x", Some(Severity::Nit))).0,
            RaiseOutcome::Recorded
        );
        assert_eq!(
            r.raise(0, 1, adv("drop the clone", None)).0,
            RaiseOutcome::Recorded
        );
        let step = r.step_boundary();
        let aside = step.aside.expect("one aside");
        assert_eq!(aside.notes.len(), 2);
        assert_eq!(aside.content.matches("<advisory").count(), 2);
        assert!(aside.content.contains("</advisory>\n<advisory"));
        assert!(step.steers.is_empty());
        assert!(r.step_boundary().is_empty());
        assert_eq!(r.counts().aside, 2);
    }

    #[test]
    fn d3_nits_never_wake_an_idle_primary() {
        let mut r = router();
        let (_, events) = r.raise(0, 1, adv("tidy", None));
        assert!(events.is_empty());
        assert!(r.run_state(false).is_empty());
        assert_eq!(r.counts().pending, 1);
    }

    #[test]
    fn d3_concern_steers_while_running_and_wakes_while_idle() {
        let mut r = router();
        r.run_state(true);
        let (_, events) = r.raise(0, 1, adv("wrong file", Some(Severity::Concern)));
        assert_eq!(events, vec![HostEvent::SteerReady]);
        let step = r.step_boundary();
        assert_eq!(step.steers.len(), 1);
        assert_eq!(step.steers[0].channel, Channel::Steer);
        r.run_state(false);
        let (_, events) = r.raise(0, 2, adv("tests never ran", Some(Severity::Blocker)));
        match &events[..] {
            [HostEvent::Wake { card }] => assert!(card.content.contains("severity=\"blocker\"")),
            other => panic!("expected a wake, got {other:?}"),
        }
    }

    #[test]
    fn a5_outbox_steer_becomes_a_wake_when_the_primary_goes_idle() {
        let mut r = router();
        r.run_state(true);
        r.raise(0, 1, adv("stop", Some(Severity::Concern)));
        let events = r.run_state(false);
        assert!(matches!(&events[..], [HostEvent::Wake { card }] if card.channel == Channel::Wake));
        assert_eq!(r.counts().wake, 1);
        assert_eq!(r.counts().pending, 0);
    }

    #[test]
    fn d6_user_interrupt_turns_outbox_steers_into_cards_until_user_prompt() {
        let mut r = router();
        r.run_state(true);
        r.raise(0, 1, adv("steer me", Some(Severity::Concern)));
        let events = r.interrupt(true);
        assert!(matches!(&events[..], [HostEvent::Card { card }] if card.channel == Channel::Card));
        assert!(r.step_boundary().steers.is_empty());
        r.run_state(false);
        let (_, events) = r.raise(0, 2, adv("another", Some(Severity::Blocker)));
        assert!(
            matches!(&events[..], [HostEvent::Card { .. }]),
            "suppressed: no wake"
        );
        r.user_prompt();
        let (_, events) = r.raise(0, 3, adv("third", Some(Severity::Blocker)));
        assert!(matches!(&events[..], [HostEvent::Wake { .. }]));
    }

    #[test]
    fn d6_non_user_interrupt_keeps_auto_resume() {
        let mut r = router();
        r.run_state(true);
        r.raise(0, 1, adv("steer me", Some(Severity::Concern)));
        assert!(r.interrupt(false).is_empty());
        assert!(matches!(&r.run_state(false)[..], [HostEvent::Wake { .. }]));
    }

    #[test]
    fn d8_repeats_dropped_escalation_passes() {
        let mut r = router();
        r.run_state(true);
        assert_eq!(
            r.raise(0, 1, adv("check  the\tnull case", None)).0,
            RaiseOutcome::Recorded
        );
        assert_eq!(
            r.raise(0, 2, adv("check the null case", None)).0,
            RaiseOutcome::Dropped(DropReason::Duplicate)
        );
        assert_eq!(
            r.raise(0, 3, adv("check the null case", Some(Severity::Concern)))
                .0,
            RaiseOutcome::Recorded
        );
        assert_eq!(
            r.raise(0, 4, adv("check the null case", Some(Severity::Nit)))
                .0,
            RaiseOutcome::Dropped(DropReason::Duplicate)
        );
        assert_eq!(
            RaiseOutcome::Dropped(DropReason::Duplicate).tool_text(2),
            "Duplicate advice ignored."
        );
    }

    #[test]
    fn d8_content_free_and_over_budget_are_dropped() {
        let mut r = router();
        assert_eq!(
            r.raise(0, 1, adv("LGTM!", None)).0,
            RaiseOutcome::Dropped(DropReason::ContentFree)
        );
        assert_eq!(r.raise(0, 1, adv("one", None)).0, RaiseOutcome::Recorded);
        assert_eq!(r.raise(0, 1, adv("two", None)).0, RaiseOutcome::Recorded);
        assert_eq!(
            r.raise(0, 1, adv("three", None)).0,
            RaiseOutcome::Dropped(DropReason::OverBudget)
        );
        assert_eq!(r.raise(0, 2, adv("three", None)).0, RaiseOutcome::Recorded);
    }

    #[test]
    fn r1_stale_epoch_advice_is_dropped() {
        let mut r = router();
        r.reset(1);
        assert_eq!(
            r.raise(0, 1, adv("old", Some(Severity::Blocker))).0,
            RaiseOutcome::Dropped(DropReason::StaleEpoch)
        );
        assert_eq!(r.raise(1, 2, adv("new", None)).0, RaiseOutcome::Recorded);
    }

    #[test]
    fn d10_every_advisory_is_counted_exactly_once() {
        let mut r = router();
        r.run_state(true);
        let notes = [
            ("a", Some(Severity::Nit)),
            ("a", Some(Severity::Nit)),
            ("lgtm", None),
            ("b", Some(Severity::Concern)),
            ("c", Some(Severity::Blocker)),
        ];
        for (i, (n, s)) in notes.iter().enumerate() {
            r.raise(0, i as u64, adv(n, *s));
        }
        r.step_boundary();
        let c = r.counts();
        assert_eq!(c.raised(), notes.len() as u64);
        assert_eq!(c.pending, 0);
        assert_eq!((c.aside, c.steer, c.dropped_total()), (1, 2, 2));
    }

    fn reconfirm() -> RouterState {
        RouterState::new(DeliveryPolicy::Reconfirm, 2)
    }

    #[test]
    fn d5_catch_up_backoff_is_15_30_60_120_120_seconds() {
        let mut c = CatchUp::new();
        let mut waits = Vec::new();
        for _ in 0..5 {
            let plan = c.plan(false, 1).expect("notes held: the turn end waits");
            waits.push(plan.timeout.as_secs());
            assert_eq!(c.finish(&plan, CatchUpEnd::TimedOut), HeldRelease::Keep);
        }
        assert_eq!(waits, vec![15, 30, 60, 120, 120]);
        assert_eq!(c.streak(), 5);
    }

    #[test]
    fn d5_non_terminal_turn_with_nothing_held_does_not_wait() {
        assert_eq!(CatchUp::new().plan(false, 0), None);
    }

    #[test]
    fn d5_terminal_turn_waits_even_with_nothing_held() {
        let plan = CatchUp::new().plan(true, 0).expect("a terminal turn waits");
        assert_eq!(plan.timeout, Duration::from_secs(120));
        assert!(
            plan.notice().contains("before the turn ends"),
            "{}",
            plan.notice()
        );
    }

    #[test]
    fn d5_settled_delivers_the_reconfirmed_and_resets_the_streak() {
        let mut c = CatchUp::new();
        let plan = c.plan(false, 1).unwrap();
        c.finish(&plan, CatchUpEnd::TimedOut);
        c.finish(&plan, CatchUpEnd::Failed);
        assert_eq!(c.streak(), 2);
        let plan = c.plan(false, 1).unwrap();
        assert_eq!(plan.timeout.as_secs(), 60);
        assert!(
            plan.notice().contains("waiting up to 60s"),
            "{}",
            plan.notice()
        );
        assert_eq!(c.finish(&plan, CatchUpEnd::Settled), HeldRelease::Confirmed);
        assert_eq!(c.streak(), 0);
        assert_eq!(c.plan(false, 1).unwrap().timeout.as_secs(), 15);
    }

    #[test]
    fn d5_terminal_settle_delivers_all_and_timeout_delivers_best_effort() {
        let mut c = CatchUp::new();
        let plan = c.plan(true, 1).unwrap();
        assert_eq!(
            c.finish(&plan, CatchUpEnd::Settled),
            HeldRelease::All { best_effort: false }
        );
        assert_eq!(
            c.finish(&plan, CatchUpEnd::TimedOut),
            HeldRelease::All { best_effort: true }
        );
        assert_eq!(
            c.finish(&plan, CatchUpEnd::Failed),
            HeldRelease::All { best_effort: true }
        );
    }

    #[test]
    fn d5_abort_keeps_the_notes_and_the_streak() {
        let mut c = CatchUp::new();
        let plan = c.plan(false, 1).unwrap();
        c.finish(&plan, CatchUpEnd::TimedOut);
        assert_eq!(c.finish(&plan, CatchUpEnd::Aborted), HeldRelease::Keep);
        let terminal = c.plan(true, 1).unwrap();
        assert_eq!(c.finish(&terminal, CatchUpEnd::Aborted), HeldRelease::Keep);
        assert_eq!(c.streak(), 1);
    }

    #[test]
    fn d4_terminal_turn_is_read_from_the_last_message_only() {
        use crate::domain::transcript::{AssistantBlock, AssistantMessage};
        let answer = |calls: bool| {
            let mut content = vec![AssistantBlock::Text {
                text: "done".into(),
            }];
            if calls {
                content.push(AssistantBlock::ToolCall {
                    id: "1".into(),
                    name: "read".into(),
                    arguments: serde_json::json!({}),
                });
            }
            TranscriptMessage::Assistant(AssistantMessage {
                content,
                stop_reason: None,
            })
        };
        assert!(!turn_was_terminal(&Transcript::new()));
        let t = Transcript::from_messages([TranscriptMessage::user("go"), answer(true)]);
        assert!(!turn_was_terminal(&t));
        t.push(answer(false));
        assert!(turn_was_terminal(&t));
        t.push(TranscriptMessage::user("more"));
        assert!(!turn_was_terminal(&t));
    }

    #[test]
    fn d4_concern_and_blocker_are_held_on_first_emission() {
        let mut r = reconfirm();
        r.run_state(true);
        let (outcome, events) = r.raise(0, 1, adv("wrong table", Some(Severity::Blocker)));
        assert_eq!(outcome, RaiseOutcome::Held);
        assert_eq!(outcome.tool_text(2), "Held pending reconfirmation.");
        assert!(events.is_empty());
        assert!(r.step_boundary().is_empty());
        assert_eq!((r.counts().held, r.counts().raised()), (1, 1));
        assert_eq!(r.held().len(), 1);
    }

    #[test]
    fn d4_nits_go_out_at_once_tagged_as_about_an_earlier_step() {
        let mut r = reconfirm();
        r.run_state(true);
        assert_eq!(
            r.raise(0, 1, adv("rename tmp", Some(Severity::Nit))).0,
            RaiseOutcome::Recorded
        );
        let aside = r.step_boundary().aside.expect("the nit");
        assert!(
            aside
                .content
                .contains("context=\"raised about an earlier step\""),
            "{}",
            aside.content
        );
        assert!(!aside.content.contains(FINAL_ANSWER_NOTE));
    }

    #[test]
    fn d4_advice_after_a_terminal_turn_carries_the_final_answer_note() {
        let mut r = reconfirm();
        r.run_state(true);
        assert_eq!(r.turn_ended(true, true).map(|p| p.held), Some(0));
        r.raise(0, 1, adv("the answer skips the error case", None));
        let aside = r.step_boundary().aside.unwrap();
        assert!(
            aside.content.ends_with(FINAL_ANSWER_NOTE),
            "{}",
            aside.content
        );
        // A new run has no terminal turn behind it.
        r.run_state(true);
        r.raise(0, 2, adv("another nit", None));
        assert!(!r
            .step_boundary()
            .aside
            .unwrap()
            .content
            .contains(FINAL_ANSWER_NOTE));
        // The interrupt policy never adds it.
        let mut i = router();
        i.turn_ended(true, true);
        i.raise(0, 1, adv("a nit", None));
        let aside = i.step_boundary().aside.unwrap();
        assert!(!aside.content.contains(FINAL_ANSWER_NOTE) && !aside.content.contains("context="));
    }

    #[test]
    fn d9_preamble_lists_held_notes_with_the_instruction() {
        let mut r = reconfirm();
        assert_eq!(r.held_preamble(0, 1), "");
        r.raise(
            0,
            1,
            adv("the  migration\ndrops a column", Some(Severity::Concern)),
        );
        r.raise(0, 1, adv("tests never ran", Some(Severity::Blocker)));
        let text = r.held_preamble(0, 2);
        assert!(
            text.starts_with("### Held advisories — reconfirm\n"),
            "{text}"
        );
        assert!(
            text.contains("\n- [CONCERN] the migration drops a column\n"),
            "{text}"
        );
        assert!(text.contains("\n- [BLOCKER] tests never ran\n"), "{text}");
        assert!(text.contains("call `advise` again"), "{text}");
        assert!(text.contains("same or a higher severity"), "{text}");
        assert!(text.contains("Silence drops"), "{text}");
        assert!(
            text.contains("Do not announce that an item is resolved"),
            "{text}"
        );
        assert_eq!(r.held_preamble(1, 3), "", "another epoch sees nothing");
    }

    #[test]
    fn d9_held_blocker_reraised_as_a_nit_stays_a_blocker() {
        let mut r = reconfirm();
        r.raise(0, 1, adv("Tests never ran", Some(Severity::Blocker)));
        r.held_preamble(0, 2);
        let (outcome, _) = r.raise(0, 2, adv("Tests  never\tran", Some(Severity::Nit)));
        assert_eq!(outcome, RaiseOutcome::Reconfirmed);
        assert_eq!(outcome.tool_text(2), "Recorded.");
        r.review_succeeded(0, 2);
        let held = &r.held()[0];
        assert!(held.confirmed);
        assert_eq!(held.advisory.severity, Some(Severity::Blocker));
        assert_eq!(held.advisory.note, "Tests never ran", "original text kept");
    }

    #[test]
    fn d9_held_concern_reraised_higher_escalates() {
        let mut r = reconfirm();
        r.raise(0, 1, adv("wrong file", Some(Severity::Concern)));
        r.held_preamble(0, 2);
        r.raise(0, 2, adv("wrong file", Some(Severity::Blocker)));
        assert_eq!(r.held()[0].advisory.severity, Some(Severity::Blocker));
    }

    #[test]
    fn d9_recanted_note_dropped_and_a_failed_review_prunes_nothing() {
        let mut r = reconfirm();
        r.raise(0, 1, adv("stale worry", Some(Severity::Blocker)));
        r.held_preamble(0, 2);
        // Review 2 failed: no report, nothing pruned; the retry lists it again.
        r.held_preamble(0, 3);
        r.raise(0, 3, adv("a fresh worry", Some(Severity::Concern)));
        r.review_succeeded(0, 3);
        let notes: Vec<&str> = r.held().iter().map(|h| h.advisory.note.as_str()).collect();
        assert_eq!(
            notes,
            vec!["a fresh worry"],
            "raised in review 3: not its to prune"
        );
        assert_eq!(r.counts().dropped.get(&DropReason::Recanted), Some(&1));
        assert_eq!(r.counts().held, 1);
        assert_eq!(r.counts().raised(), 2);
    }

    #[test]
    fn g5_d9_discarded_attempt_rolls_back_its_holds_and_keeps_earlier_ones() {
        let mut r = reconfirm();
        r.raise(0, 1, adv("held before", Some(Severity::Blocker)));
        r.held_preamble(0, 2);
        // Review 2's first attempt holds a phantom and fills the budget (2 notes).
        assert_eq!(
            r.raise(0, 2, adv("phantom one", Some(Severity::Concern))).0,
            RaiseOutcome::Held
        );
        r.raise(0, 2, adv("phantom two", Some(Severity::Blocker)));
        assert_eq!(r.discard_attempt(0, 2), 2);
        let notes: Vec<&str> = r.held().iter().map(|h| h.advisory.note.as_str()).collect();
        assert_eq!(notes, vec!["held before"]);
        assert_eq!(r.counts().held, 1);
        assert_eq!(r.counts().dropped.get(&DropReason::Discarded), Some(&2));
        assert_eq!(
            r.counts().raised(),
            3,
            "every advisory still ends somewhere (D10)"
        );
        // The replay has its whole budget again, and the phantom is not a duplicate.
        assert_eq!(
            r.raise(0, 2, adv("phantom one", Some(Severity::Concern))).0,
            RaiseOutcome::Held
        );
        assert_eq!(
            r.raise(0, 2, adv("another", Some(Severity::Concern))).0,
            RaiseOutcome::Held
        );
        // Stale epochs and other reviews are left alone.
        assert_eq!(r.discard_attempt(7, 2), 0);
        assert_eq!(r.discard_attempt(0, 5), 0);
        assert_eq!(r.held().len(), 3);
    }

    #[test]
    fn g5_d9_discarded_attempt_undoes_its_reconfirmation_and_escalation() {
        let mut r = reconfirm();
        r.raise(0, 1, adv("held before", Some(Severity::Concern)));
        r.held_preamble(0, 2);
        assert_eq!(
            r.raise(0, 2, adv("held before", Some(Severity::Blocker))).0,
            RaiseOutcome::Reconfirmed
        );
        assert!(r.held()[0].confirmed);
        r.discard_attempt(0, 2);
        assert!(!r.held()[0].confirmed);
        assert_eq!(r.held()[0].advisory.severity, Some(Severity::Concern));
        assert_eq!(r.counts().held, 1, "the note itself stays held");
        // The replay stays silent about it: it is recanted, as if the attempt never ran.
        r.review_succeeded(0, 2);
        assert!(r.held().is_empty());
        assert_eq!(r.counts().dropped.get(&DropReason::Recanted), Some(&1));
    }

    #[test]
    fn g5_d9_reconfirmation_by_the_replay_survives() {
        let mut r = reconfirm();
        r.raise(0, 1, adv("held before", Some(Severity::Concern)));
        r.held_preamble(0, 2);
        r.raise(0, 2, adv("held before", Some(Severity::Concern)));
        r.discard_attempt(0, 2);
        assert_eq!(
            r.raise(0, 2, adv("held before", Some(Severity::Concern))).0,
            RaiseOutcome::Reconfirmed
        );
        r.review_succeeded(0, 2);
        assert_eq!(r.held().len(), 1);
        assert!(r.held()[0].confirmed);
    }

    #[test]
    fn d8_a_held_note_is_not_recorded_as_delivered() {
        let mut r = reconfirm();
        r.run_state(true);
        r.raise(0, 1, adv("check the null case", Some(Severity::Concern)));
        r.held_preamble(0, 2);
        r.review_succeeded(0, 2);
        assert!(r.held().is_empty());
        // Raised afresh after being recanted: not a duplicate, held again.
        assert_eq!(
            r.raise(0, 3, adv("check the null case", Some(Severity::Concern)))
                .0,
            RaiseOutcome::Held
        );
        // Once delivered, a repeat is a duplicate.
        r.held_preamble(0, 4);
        r.raise(0, 4, adv("check the null case", Some(Severity::Concern)));
        let plan = r.turn_ended(false, true).unwrap();
        let events = r.catch_up_finished(&plan, CatchUpEnd::Settled);
        assert_eq!(events, vec![HostEvent::SteerReady]);
        assert_eq!(
            r.raise(0, 5, adv("check the null case", Some(Severity::Concern)))
                .0,
            RaiseOutcome::Dropped(DropReason::Duplicate)
        );
    }

    #[test]
    fn d5_settled_block_delivers_reconfirmed_notes_one_message_each() {
        let mut r = reconfirm();
        r.run_state(true);
        r.raise(0, 1, adv("first", Some(Severity::Blocker)));
        r.raise(0, 1, adv("second", Some(Severity::Concern)));
        r.held_preamble(0, 2);
        r.raise(0, 2, adv("first", Some(Severity::Blocker)));
        r.raise(0, 2, adv("second", Some(Severity::Concern)));
        r.raise(0, 2, adv("third", Some(Severity::Blocker)));
        r.review_succeeded(0, 2);
        let plan = r.turn_ended(false, true).expect("notes held");
        assert_eq!(plan.held, 3);
        let events = r.catch_up_finished(&plan, CatchUpEnd::Settled);
        assert_eq!(events, vec![HostEvent::SteerReady, HostEvent::SteerReady]);
        let step = r.step_boundary();
        assert_eq!(step.steers.len(), 2);
        assert!(step.steers[0]
            .content
            .contains("context=\"raised about an earlier step\""));
        assert_eq!(r.held().len(), 1, "the unconfirmed third stays held");
        assert_eq!(r.counts().held, 1);
    }

    #[test]
    fn d5_terminal_timeout_delivers_held_notes_best_effort_with_a_notice() {
        let mut r = reconfirm();
        r.raise(0, 1, adv("unconfirmed", Some(Severity::Blocker)));
        let plan = r.turn_ended(true, true).unwrap();
        let events = r.catch_up_finished(&plan, CatchUpEnd::TimedOut);
        match &events[..] {
            [HostEvent::Notice { text }, HostEvent::Wake { card }] => {
                assert!(text.contains("1 held note unconfirmed"), "{text}");
                assert!(card.content.ends_with(FINAL_ANSWER_NOTE));
            }
            other => panic!("expected a notice and a wake, got {other:?}"),
        }
        assert!(r.held().is_empty());
    }

    #[test]
    fn r1_reset_drops_held_notes() {
        let mut r = reconfirm();
        r.raise(0, 1, adv("old", Some(Severity::Blocker)));
        r.reset(1);
        assert!(r.held().is_empty());
        assert_eq!(r.counts().held, 0);
        assert_eq!(r.counts().dropped.get(&DropReason::StaleEpoch), Some(&1));
    }

    #[test]
    fn d7_concerns_are_asides_during_immune_turns_blockers_still_interrupt() {
        let mut r = router().with_immune_turns(2);
        r.run_state(true);
        r.raise(0, 1, adv("first concern", Some(Severity::Concern)));
        assert_eq!(r.step_boundary().steers.len(), 1);
        assert!(r.immune());
        for review in 2..=4 {
            if review > 2 {
                r.turn_ended(false, true);
            }
            let (_, events) = r.raise(
                0,
                review,
                adv(&format!("concern {review}"), Some(Severity::Concern)),
            );
            assert!(events.is_empty(), "review {review}: an aside");
        }
        let (_, events) = r.raise(0, 5, adv("a blocker", Some(Severity::Blocker)));
        assert_eq!(events, vec![HostEvent::SteerReady]);
        let step = r.step_boundary();
        assert_eq!(step.aside.unwrap().notes.len(), 3);
        assert_eq!(step.steers.len(), 1);
        // Immunity restarted by the blocker's steer; it lapses after three more turn ends.
        for _ in 0..3 {
            r.turn_ended(false, true);
        }
        assert!(!r.immune());
        let (_, events) = r.raise(0, 6, adv("late concern", Some(Severity::Concern)));
        assert_eq!(events, vec![HostEvent::SteerReady]);
    }

    #[test]
    fn d7_zero_immune_turns_turns_immunity_off() {
        let mut r = router().with_immune_turns(0);
        r.run_state(false);
        r.raise(0, 1, adv("one", Some(Severity::Concern)));
        let (_, events) = r.raise(0, 2, adv("two", Some(Severity::Concern)));
        assert!(matches!(&events[..], [HostEvent::Wake { .. }]));
    }

    proptest! {
        #[test]
        fn d2_no_note_can_break_the_advisory_element(note in ".*", sev in 0u8..4) {
            let severity = match sev { 0 => None, 1 => Some(Severity::Nit), 2 => Some(Severity::Concern), _ => Some(Severity::Blocker) };
            let xml = Advisory::new(note.clone(), severity).to_xml(None);
            prop_assert_eq!(xml.matches('<').count(), 2);
            prop_assert_eq!(xml.matches('>').count(), 2);
            prop_assert!(xml.starts_with("<advisory"));
            prop_assert!(xml.ends_with("\n</advisory>"));
            let body_start = xml.find(">\n").map(|i| i + 2).unwrap_or(0);
            let body = &xml[body_start..xml.len() - "\n</advisory>".len()];
            let unescaped = body.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&");
            prop_assert_eq!(unescaped, note);
        }
    }
}
