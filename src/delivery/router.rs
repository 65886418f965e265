//! Routing and the outbox (D1–D3, D6–D8): what happens to each advisory the advisor raises,
//! the aside queue and the steering cards the host has not taken yet, the user-interrupt
//! latch, immune turns and the emission guard. Under `reconfirm` it holds concerns and
//! blockers ([`super::held`]) and runs the catch-up block ([`super::catch_up`]). Pure
//! logic; the DeliveryRouter actor wraps it and forwards the host events.

use super::budget::{NoteBudget, ReviewId};
use super::catch_up::{best_effort_notice, CatchUp, CatchUpEnd, CatchUpPlan, HeldRelease};
use super::deferred::{DeferredNote, DeferredNotes};
use super::guard::GuardHistory;
use super::held::{HeldNote, HeldNotes, Reraised};
use super::note::{is_content_free_key, normalize_note};
use super::outcome::{DeliveryCounts, DropReason, RaiseOutcome};
use super::texts::{EARLIER_STEP, FINAL_ANSWER};
use crate::domain::advice::{Advisory, Channel, Delivery, Severity};
use crate::domain::host::{HostEvent, StepAdvice};
use crate::settings::DeliveryPolicy;
use crate::texts::exceeds_chars;

/// The note cap when none is configured (`advisor.maxNoteChars`, K1).
pub const DEFAULT_MAX_NOTE_CHARS: usize = 2000;

/// A nit (or an immune concern) waiting in the aside queue for the next step boundary.
#[derive(Debug, Clone)]
struct QueuedAside {
    advisory: Advisory,
    /// The dedupe key.
    key: String,
    /// The review that raised it; `None` for a held note released by a catch-up block.
    raised_by: Option<ReviewId>,
}

/// The router's state: outbox, aside queue, held notes, latch, immunity, dedupe memory and
/// counters.
#[derive(Debug)]
pub struct RouterState {
    policy: DeliveryPolicy,
    budget: NoteBudget,
    max_note_chars: usize,
    immune_turns: u32,
    epoch: u64,
    running: bool,
    suppressed: bool,
    enabled: bool,
    asides: Vec<QueuedAside>,
    steers: Vec<Delivery>,
    held: HeldNotes,
    /// The emission guard's memory (P3): survives resets within a branch.
    history: GuardHistory,
    /// A branch change replayed the transcript (P3): until the next user
    /// prompt, concerns and blockers are cards, never wakes.
    replayed: bool,
    /// The review in progress covers a WIP batch: under `defer` its nits and concerns wait
    /// in `deferred` for the next final boundary (P1).
    wip_review: Option<ReviewId>,
    /// The notes `defer` keeps back until the next final boundary (P1).
    deferred: DeferredNotes,
    /// From a final boundary whose turn was a terminal answer until the next run starts
    /// (P1): nits and concerns become cards.
    answered: bool,
    immune_left: u32,
    last_turn_terminal: bool,
    catch_up: CatchUp,
    counts: DeliveryCounts,
}

impl RouterState {
    /// A router for `policy`, allowing `max_notes_per_update` non-blocker notes per session
    /// update a review covers (D8), with the default 3 immune turns (D7) and the default
    /// note cap.
    pub fn new(policy: DeliveryPolicy, max_notes_per_update: usize) -> Self {
        Self {
            policy,
            budget: NoteBudget::new(max_notes_per_update),
            max_note_chars: DEFAULT_MAX_NOTE_CHARS,
            immune_turns: 3,
            epoch: 0,
            running: false,
            suppressed: false,
            enabled: true,
            asides: Vec::new(),
            steers: Vec::new(),
            held: HeldNotes::default(),
            history: GuardHistory::new(),
            replayed: false,
            wip_review: None,
            deferred: DeferredNotes::default(),
            answered: false,
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

    /// The same router refusing notes longer than `max_chars` characters (D10 `tooLong`).
    pub fn with_max_note_chars(mut self, max_chars: usize) -> Self {
        self.max_note_chars = max_chars;
        self
    }

    /// The note cap in characters.
    pub fn max_note_chars(&self) -> usize {
        self.max_note_chars
    }

    /// The delivery policy in force.
    pub fn policy(&self) -> DeliveryPolicy {
        self.policy
    }

    /// The counters (D10).
    pub fn counts(&self) -> &DeliveryCounts {
        &self.counts
    }

    /// The notes-per-update bound (D8).
    pub fn max_notes_per_update(&self) -> usize {
        self.budget.per_update()
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
        self.held.as_slice()
    }

    fn drop_note(&mut self, reason: DropReason) -> RaiseOutcome {
        self.count_drop(reason, 1);
        tracing::info!(reason = reason.as_str(), "advisory dropped");
        if self.policy == DeliveryPolicy::Defer {
            RaiseOutcome::Declined(reason)
        } else {
            RaiseOutcome::Dropped(reason)
        }
    }

    fn count_drop(&mut self, reason: DropReason, n: u64) {
        self.counts.drop(reason, n);
    }

    /// Counts a delivery; a steer or wake makes the next turns immune (D7).
    fn delivered(&mut self, channel: Channel, n: u64) {
        self.counts.deliver(channel, n);
        if n > 0 && matches!(channel, Channel::Steer | Channel::Wake) && self.immune_turns > 0 {
            // The turn in progress plus the next `immune_turns` turn ends.
            self.immune_left = self.immune_turns + 1;
        }
    }

    /// Review `review` of `epoch` starts and covers `updates` session updates (its batch,
    /// G2): its note budget is `updates` × `maxNotesPerUpdate` (D8). A review the router is
    /// not told about covers one update.
    pub fn review_started(&mut self, epoch: u64, review: u64, updates: usize) {
        if epoch == self.epoch {
            self.budget.start((epoch, review), updates);
        }
    }

    /// [`RouterState::review_started`] for a batch that is `wip` or not (P1): under `defer`
    /// a WIP review's nits and concerns are deferred, and a review of a final batch is a
    /// final boundary that releases what earlier reviews deferred. Returns the events of
    /// the release.
    pub fn review_batch(
        &mut self,
        epoch: u64,
        review: u64,
        updates: usize,
        wip: bool,
    ) -> Vec<HostEvent> {
        self.review_started(epoch, review, updates);
        if epoch != self.epoch || self.policy != DeliveryPolicy::Defer {
            return Vec::new();
        }
        if wip {
            self.wip_review = Some((epoch, review));
            Vec::new()
        } else {
            self.release_deferred()
        }
    }

    /// A primary turn ended (P1): `answered` when it was a terminal answer, `wip` when the
    /// primary goes on. A turn end that is not WIP is a final boundary: under `defer` the
    /// deferred notes are released now, before the turn's delta is queued, and routed as a
    /// terminal answer calls for. Call before [`RouterState::turn_ended`].
    pub fn boundary(&mut self, answered: bool, wip: bool) -> Vec<HostEvent> {
        self.answered = answered && !wip;
        if wip || self.policy != DeliveryPolicy::Defer {
            return Vec::new();
        }
        self.release_deferred()
    }

    /// Routes every deferred note now (a final boundary, P1); later notes of the review in
    /// progress are routed at once.
    fn release_deferred(&mut self) -> Vec<HostEvent> {
        self.wip_review = None;
        let notes = self.deferred.take_all();
        if !notes.is_empty() {
            tracing::info!(notes = notes.len(), "deferred advisories released");
        }
        let mut events = Vec::new();
        for note in notes {
            self.counts.pending -= 1;
            events.extend(self.route(note.advisory, note.key, Some(note.review)));
        }
        events
    }

    /// P1 under `defer`: a nit or concern of a WIP review waits for the final boundary; a
    /// blocker supersedes a deferred note of the same key and goes at once. `None` when the
    /// note takes the usual way; otherwise the outcome.
    fn defer(&mut self, key: &str, review: ReviewId, advisory: &Advisory) -> Option<RaiseOutcome> {
        let severity = advisory.effective_severity();
        if severity == Severity::Blocker {
            if self.deferred.remove(key).is_some() {
                // Superseded: it is the same note, raised again as a blocker.
                self.counts.pending -= 1;
                self.count_drop(DropReason::Duplicate, 1);
            }
            return None;
        }
        if self.wip_review != Some(review) {
            return None;
        }
        let existing = self.deferred.get_mut(key)?;
        // Raised again while deferred: one note, at the higher severity.
        if severity > existing.severity() {
            existing.advisory.severity = Some(severity);
            self.history.record(key, severity.rank());
        }
        self.count_drop(DropReason::Duplicate, 1);
        tracing::info!("deferred advisory raised again");
        Some(RaiseOutcome::Deferred)
    }

    /// Routes one advisory raised by review `review` of `epoch`. Returns what the advisor is
    /// told and the events for the host.
    ///
    /// The guard, in order: disabled, stale epoch, too long (a bounded count on the raw
    /// note, before it is normalised or stored), content-free, a held note raised again (D9), a
    /// duplicate, then the budget (D8): blockers are never counted; a note over budget
    /// displaces the newest lower-ranked nit of the same review that the host has not
    /// taken yet, or is dropped itself.
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
        if exceeds_chars(&advisory.note, self.max_note_chars) {
            self.count_drop(DropReason::TooLong, 1);
            tracing::info!(
                reason = DropReason::TooLong.as_str(),
                bytes = advisory.note.len(),
                max_chars = self.max_note_chars,
                "advisory refused"
            );
            let outcome = RaiseOutcome::TooLong {
                max_chars: self.max_note_chars,
            };
            return (outcome, Vec::new());
        }
        let key = normalize_note(&advisory.note);
        if key.is_empty() {
            return (self.drop_note(DropReason::Empty), Vec::new());
        }
        if is_content_free_key(&key) {
            return (self.drop_note(DropReason::ContentFree), Vec::new());
        }
        let severity = advisory.effective_severity();
        if let Some(outcome) = self.reraise(&key, review, severity) {
            return (outcome, Vec::new());
        }
        let id = (epoch, review);
        if self.policy == DeliveryPolicy::Defer {
            if let Some(outcome) = self.defer(&key, id, &advisory) {
                return (outcome, Vec::new());
            }
        }
        if self.history.repeats(&key, severity.rank()) {
            return (self.drop_note(DropReason::Duplicate), Vec::new());
        }
        let counted = severity != Severity::Blocker;
        if counted && !self.budget.take(id) && !self.displace_lower(id, severity) {
            return (self.drop_note(DropReason::OverBudget), Vec::new());
        }
        if self.policy == DeliveryPolicy::Reconfirm && severity.interrupts() {
            // D4: held on first emission; not recorded as delivered (D8).
            tracing::info!(
                severity = severity.as_str(),
                "advisory held for reconfirmation"
            );
            self.held.hold(advisory, key, review, counted);
            self.counts.held += 1;
            return (RaiseOutcome::Held, Vec::new());
        }
        self.history.record(&key, severity.rank());
        if self.policy == DeliveryPolicy::Defer {
            if counted && self.wip_review == Some(id) {
                tracing::info!(
                    severity = severity.as_str(),
                    "advisory deferred to the end of the turn"
                );
                self.deferred.push(DeferredNote {
                    advisory,
                    key,
                    review: id,
                });
                self.counts.pending += 1;
                return (RaiseOutcome::Deferred, Vec::new());
            }
            let events = self.route(advisory, key, Some(id));
            return (RaiseOutcome::Delivered, events);
        }
        let events = self.route(advisory, key, Some(id));
        (RaiseOutcome::Recorded, events)
    }

    /// D8 over budget: drops the newest note of review `id` still in the aside queue that
    /// ranks below `severity`, so the higher-ranked note takes its place. False when there is
    /// none (the host took them, or nothing ranks lower).
    fn displace_lower(&mut self, id: ReviewId, severity: Severity) -> bool {
        if let Some(displaced) = self.deferred.displace_lower(id, severity) {
            // P1: a still-deferred note of the same review gives way first.
            self.history
                .forget(&displaced.key, displaced.severity().rank());
            self.counts.pending -= 1;
            self.count_drop(DropReason::OverBudget, 1);
            tracing::info!(
                reason = DropReason::OverBudget.as_str(),
                displaced_by = severity.as_str(),
                "deferred advisory displaced by a higher-ranked one"
            );
            return true;
        }
        let Some(index) = self
            .asides
            .iter()
            .rposition(|q| q.raised_by == Some(id) && q.advisory.effective_severity() < severity)
        else {
            return false;
        };
        let displaced = self.asides.remove(index);
        let rank = displaced.advisory.effective_severity().rank();
        // It never reached the primary: a later repeat is not a duplicate of it.
        self.history.forget(&displaced.key, rank);
        self.counts.pending -= 1;
        self.count_drop(DropReason::OverBudget, 1);
        tracing::info!(
            reason = DropReason::OverBudget.as_str(),
            displaced_by = severity.as_str(),
            "queued advisory displaced by a higher-ranked one"
        );
        true
    }

    /// A note matching a held one (D9): reconfirmed by a later review, a duplicate within
    /// the review that held it.
    fn reraise(&mut self, key: &str, review: u64, severity: Severity) -> Option<RaiseOutcome> {
        match self.held.reraise(key, review, severity)? {
            Reraised::Duplicate => Some(self.drop_note(DropReason::Duplicate)),
            Reraised::Reconfirmed => {
                self.counts.reconfirmed += 1;
                Some(RaiseOutcome::Reconfirmed)
            }
        }
    }

    /// The `context` attribute and the final-answer note for a delivery now (D4).
    fn build(&self, channel: Channel, notes: Vec<Advisory>) -> Delivery {
        if self.policy != DeliveryPolicy::Reconfirm {
            return Delivery::new(channel, notes, None);
        }
        let mut delivery = Delivery::new(channel, notes, Some(EARLIER_STEP));
        if self.last_turn_terminal {
            delivery.content.push_str("\n\n");
            delivery.content.push_str(FINAL_ANSWER);
        }
        delivery
    }

    /// The channel a concern or blocker takes now (D3, D6).
    fn interrupt_channel(&self) -> Channel {
        if self.suppressed || self.replayed {
            Channel::Card
        } else if self.running {
            Channel::Steer
        } else {
            Channel::Wake
        }
    }

    /// The channel a note takes now: under `interrupt` and `reconfirm` as D3 says, under
    /// `defer` as P1 says; D6, D7 and a branch change's replay (P3) on top.
    fn channel_for(&self, severity: Severity) -> Channel {
        if self.policy != DeliveryPolicy::Defer {
            let immune_concern = severity == Severity::Concern && self.immune();
            if !severity.interrupts() || immune_concern {
                return Channel::Aside;
            }
            return self.interrupt_channel();
        }
        if self.answered && severity != Severity::Blocker {
            // After a terminal answer: visible, starts no turn.
            return Channel::Card;
        }
        let immune_concern = severity == Severity::Concern && self.immune();
        if severity == Severity::Nit || immune_concern {
            Channel::Aside
        } else {
            self.interrupt_channel()
        }
    }

    fn route(
        &mut self,
        advisory: Advisory,
        key: String,
        raised_by: Option<ReviewId>,
    ) -> Vec<HostEvent> {
        let severity = advisory.effective_severity();
        let channel = self.channel_for(severity);
        if channel == Channel::Aside {
            tracing::info!(
                severity = severity.as_str(),
                immune = severity.interrupts(),
                "advisory queued as aside"
            );
            self.asides.push(QueuedAside {
                advisory,
                key,
                raised_by,
            });
            self.counts.pending += 1;
            return Vec::new();
        }
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

    /// What the router still holds back from the primary, as it would be delivered now: the
    /// queued nits as one aside, the steering cards in the outbox, then each held note
    /// (D9) on its own. Takes nothing; for a host with no next step boundary to come (the
    /// end of a replay, L2).
    pub fn undelivered(&self) -> Vec<Delivery> {
        let mut out = Vec::new();
        if !self.asides.is_empty() {
            let notes = self.asides.iter().map(|q| q.advisory.clone()).collect();
            out.push(self.build(Channel::Aside, notes));
        }
        out.extend(self.steers.iter().cloned());
        for deferred in self.deferred.as_slice() {
            let channel = self.channel_for(deferred.severity());
            out.push(self.build(channel, vec![deferred.advisory.clone()]));
        }
        for held in self.held.as_slice() {
            let severity = held.severity();
            let channel = if severity == Severity::Concern && self.immune() {
                Channel::Aside
            } else {
                self.interrupt_channel()
            };
            out.push(self.build(channel, vec![held.advisory.clone()]));
        }
        out
    }

    /// The host is about to call its model: all queued nits as one aside message, plus the
    /// steering cards in the outbox (D3).
    pub fn step_boundary(&mut self) -> StepAdvice {
        let aside = if self.asides.is_empty() {
            None
        } else {
            let notes: Vec<Advisory> = std::mem::take(&mut self.asides)
                .into_iter()
                .map(|q| q.advisory)
                .collect();
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
            self.answered = false;
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

    /// A user prompt clears the latch (D6) and ends a branch change's replay (P3).
    pub fn user_prompt(&mut self) {
        self.suppressed = false;
        self.replayed = false;
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
                    events.push(HostEvent::notice(best_effort_notice(count)));
                }
                events.extend(self.release_held(|_| true));
                events
            }
        }
    }

    fn release_held(&mut self, pick: impl Fn(&HeldNote) -> bool) -> Vec<HostEvent> {
        let out = self.held.take(pick);
        let mut events = Vec::new();
        for note in out {
            self.counts.held -= 1;
            let rank = note.severity().rank();
            self.history.record(&note.key, rank);
            events.extend(self.route(note.advisory, note.key, None));
        }
        events
    }

    /// The held-notes preamble of review `review` (D9), empty when nothing is held. The
    /// notes listed are the ones this review must raise again to keep.
    pub fn held_preamble(&mut self, epoch: u64, review: u64) -> String {
        if epoch != self.epoch {
            return String::new();
        }
        self.held.preamble(review)
    }

    /// Review `review` of `epoch` succeeded (D9): held notes it was shown and did not raise
    /// again are dropped (`recanted`). A failed review prunes nothing.
    pub fn review_succeeded(&mut self, epoch: u64, review: u64) {
        if epoch != self.epoch {
            return;
        }
        let dropped = self.held.prune(review) as u64;
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
        let deferred = self.deferred.take_review((epoch, review));
        if !deferred.is_empty() {
            // Its notes will be raised again by the next attempt: not duplicates then.
            for note in &deferred {
                self.history.forget(&note.key, note.severity().rank());
            }
            let n = deferred.len() as u64;
            self.counts.pending -= n;
            self.count_drop(DropReason::Discarded, n);
            self.budget.give_back((epoch, review), deferred.len());
        }
        let discarded = self.held.discard(review);
        let dropped = discarded.len();
        if dropped > 0 {
            tracing::info!(dropped, review, "holds of a discarded attempt rolled back");
            self.counts.held -= dropped as u64;
            self.count_drop(DropReason::Discarded, dropped as u64);
            let counted = discarded.iter().filter(|h| h.counted()).count();
            self.budget.give_back((epoch, review), counted);
        }
        dropped
    }

    /// A reset (R1): a new epoch; the held notes and the catch-up streak of the old one are
    /// forgotten. The emission guard's memory stays (P3: it survives compaction and the
    /// other resets within a branch). Advice already accepted stays in the outbox: it was
    /// raised before the rewrite.
    pub fn reset(&mut self, epoch: u64) {
        self.epoch = epoch;
        self.budget.reset();
        self.wip_review = None;
        self.drop_deferred(DropReason::Reset);
        self.drop_held(DropReason::StaleEpoch);
        self.catch_up.reset();
    }

    /// A reset that moved to another branch (R1: session switch, resume, new session, fork,
    /// tree move, rewind): a reset, and until the next user prompt the review of the
    /// replayed transcript starts no run (P3): concerns and blockers become
    /// cards. The guard's memory is seeded from the branch at its next turn end
    /// ([`RouterState::seed_guard`]).
    pub fn reset_branch(&mut self, epoch: u64) {
        self.reset(epoch);
        self.replayed = true;
    }

    /// Seeds the emission guard's memory from the advisories present in the branch now
    /// reviewed (P3), in place of what it remembered.
    pub fn seed_guard(&mut self, epoch: u64, advisories: &[Advisory]) {
        if epoch == self.epoch {
            self.history.seed(advisories);
            tracing::info!(
                keys = self.history.len(),
                "emission guard seeded from the branch"
            );
        }
    }

    fn drop_deferred(&mut self, reason: DropReason) {
        let n = self.deferred.take_all().len() as u64;
        self.counts.pending -= n;
        self.count_drop(reason, n);
    }

    fn drop_held(&mut self, reason: DropReason) {
        let n = self.held.clear() as u64;
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
            self.drop_deferred(DropReason::Disabled);
            self.drop_held(DropReason::Disabled);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delivery::testing::{adv, defer, reconfirm, router};
    use proptest::prelude::*;

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
        r.raise(0, 1, adv("stop: the tests fail", Some(Severity::Concern)));
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

    #[test]
    fn d10_a_note_over_the_cap_is_refused_and_counted_too_long() {
        let mut r = router().with_max_note_chars(2000);
        r.run_state(true);
        let huge = "x".repeat(100_000);
        let (outcome, events) = r.raise(0, 1, adv(&huge, Some(Severity::Blocker)));
        assert_eq!(outcome, RaiseOutcome::TooLong { max_chars: 2000 });
        assert!(outcome.is_error());
        assert!(events.is_empty());
        assert!(r.step_boundary().is_empty(), "the primary gets nothing");
        assert_eq!(r.counts().dropped.get(&DropReason::TooLong), Some(&1));
        assert_eq!(r.counts().raised(), 1);
        // At the cap exactly, in characters (not bytes), a note passes.
        let at_cap = "é".repeat(2000);
        assert_eq!(r.raise(0, 1, adv(&at_cap, None)).0, RaiseOutcome::Recorded);
        // A refused note is not remembered: the shorter retry is no duplicate.
        let retry = &huge[..100];
        assert_eq!(r.raise(0, 1, adv(retry, None)).0, RaiseOutcome::Recorded);
    }

    #[test]
    fn d8_a_review_of_k_updates_allows_k_times_the_budget() {
        let mut r = router();
        r.run_state(true);
        r.review_started(0, 1, 3);
        let outcomes: Vec<RaiseOutcome> = (0..7)
            .map(|i| r.raise(0, 1, adv(&format!("nit {i}"), None)).0)
            .collect();
        assert_eq!(
            outcomes
                .iter()
                .filter(|o| **o == RaiseOutcome::Recorded)
                .count(),
            6
        );
        assert_eq!(outcomes[6], RaiseOutcome::Dropped(DropReason::OverBudget));
        // The next review, of one update, has 2 places again.
        r.review_started(0, 2, 1);
        assert_eq!(r.raise(0, 2, adv("a", None)).0, RaiseOutcome::Recorded);
        assert_eq!(r.raise(0, 2, adv("b", None)).0, RaiseOutcome::Recorded);
        assert_eq!(
            r.raise(0, 2, adv("c", None)).0,
            RaiseOutcome::Dropped(DropReason::OverBudget)
        );
        // A start announced for another epoch changes nothing.
        r.review_started(5, 3, 10);
        assert_eq!(r.raise(0, 3, adv("d", None)).0, RaiseOutcome::Recorded);
        assert_eq!(r.raise(0, 3, adv("e", None)).0, RaiseOutcome::Recorded);
        assert_eq!(
            r.raise(0, 3, adv("f", None)).0,
            RaiseOutcome::Dropped(DropReason::OverBudget)
        );
    }

    #[test]
    fn d8_blockers_are_never_counted_and_never_dropped_for_budget() {
        let mut r = router();
        r.run_state(true);
        for i in 0..5 {
            let (outcome, events) =
                r.raise(0, 1, adv(&format!("blocker {i}"), Some(Severity::Blocker)));
            assert_eq!(outcome, RaiseOutcome::Recorded);
            assert_eq!(events, vec![HostEvent::SteerReady]);
        }
        // The blockers took no place: the review still has its 2.
        assert_eq!(r.raise(0, 1, adv("nit a", None)).0, RaiseOutcome::Recorded);
        assert_eq!(
            r.raise(0, 1, adv("concern b", Some(Severity::Concern))).0,
            RaiseOutcome::Recorded
        );
        assert_eq!(
            r.raise(0, 1, adv("blocker late", Some(Severity::Blocker)))
                .0,
            RaiseOutcome::Recorded
        );
        let step = r.step_boundary();
        assert_eq!(step.steers.len(), 7);
        assert_eq!(step.aside.map(|a| a.notes.len()), Some(1));
    }

    #[test]
    fn d8_a_concern_over_budget_displaces_the_newest_nit_the_host_has_not_taken() {
        let mut r = router();
        r.run_state(true);
        r.raise(0, 1, adv("nit a", None));
        r.raise(0, 1, adv("nit b", Some(Severity::Nit)));
        let (outcome, events) = r.raise(0, 1, adv("concern c", Some(Severity::Concern)));
        assert_eq!(outcome, RaiseOutcome::Recorded);
        assert_eq!(events, vec![HostEvent::SteerReady]);
        assert_eq!(r.counts().dropped.get(&DropReason::OverBudget), Some(&1));
        assert_eq!(r.counts().pending, 2);
        let step = r.step_boundary();
        let aside: Vec<String> = step
            .aside
            .unwrap()
            .notes
            .into_iter()
            .map(|a| a.note)
            .collect();
        assert_eq!(aside, vec!["nit a"]);
        assert_eq!(step.steers[0].notes[0].note, "concern c");
        assert_eq!(r.counts().raised(), 3);
        // The displaced nit never reached the primary: raised again later, it is no duplicate.
        assert_eq!(r.raise(0, 2, adv("nit b", None)).0, RaiseOutcome::Recorded);
    }

    #[test]
    fn d8_a_note_ranking_no_higher_than_what_it_would_displace_is_dropped() {
        // No immune turns (D7): every concern steers.
        let mut r = router().with_immune_turns(0);
        r.run_state(true);
        // Concerns cannot displace concerns.
        r.raise(0, 1, adv("c1", Some(Severity::Concern)));
        r.raise(0, 1, adv("c2", Some(Severity::Concern)));
        assert_eq!(
            r.raise(0, 1, adv("c3", Some(Severity::Concern))).0,
            RaiseOutcome::Dropped(DropReason::OverBudget)
        );
        // Nits cannot displace nits.
        r.raise(0, 2, adv("n1", None));
        r.raise(0, 2, adv("n2", None));
        assert_eq!(
            r.raise(0, 2, adv("n3", None)).0,
            RaiseOutcome::Dropped(DropReason::OverBudget)
        );
        // Nits the host already took cannot be displaced.
        r.step_boundary();
        assert_eq!(
            r.raise(0, 2, adv("c4", Some(Severity::Concern))).0,
            RaiseOutcome::Dropped(DropReason::OverBudget)
        );
        // Nor can the nits of another review.
        r.raise(0, 3, adv("n4", None));
        r.raise(0, 3, adv("n5", None));
        r.review_started(0, 4, 1);
        r.raise(0, 4, adv("c5", Some(Severity::Concern)));
        r.raise(0, 4, adv("c6", Some(Severity::Concern)));
        assert_eq!(
            r.raise(0, 4, adv("c7", Some(Severity::Concern))).0,
            RaiseOutcome::Dropped(DropReason::OverBudget)
        );
        assert_eq!(r.step_boundary().aside.unwrap().notes.len(), 2);
        assert_eq!(r.counts().dropped.get(&DropReason::OverBudget), Some(&4));
    }

    #[test]
    fn d8_issue_10_stress_blockers_survive_sixty_turns_of_notes_that_nits_do_not() {
        // Sixty turns, one review each, every review over budget: three nits, a concern
        // and, every tenth turn, a blocker last.
        // No immune turns (D7): every concern steers.
        let mut r = RouterState::new(DeliveryPolicy::Interrupt, 2).with_immune_turns(0);
        r.run_state(true);
        let mut blockers = 0;
        for turn in 1..=60u64 {
            r.review_started(0, turn, 1);
            for i in 0..3 {
                r.raise(0, turn, adv(&format!("turn {turn} nit {i}"), None));
            }
            r.raise(
                0,
                turn,
                adv(&format!("turn {turn} concern"), Some(Severity::Concern)),
            );
            if turn % 10 == 0 {
                blockers += 1;
                let (outcome, _) = r.raise(
                    0,
                    turn,
                    adv(&format!("turn {turn} blocker"), Some(Severity::Blocker)),
                );
                assert_eq!(outcome, RaiseOutcome::Recorded, "turn {turn}");
            }
            r.step_boundary();
            r.turn_ended(false, true);
        }
        let c = r.counts();
        // Per turn: one nit and the concern kept (the concern displaced the second nit),
        // the third nit dropped; every blocker delivered.
        assert_eq!(c.aside, 60);
        assert_eq!(c.steer, 60 + blockers);
        assert_eq!(c.dropped.get(&DropReason::OverBudget), Some(&120));
        assert_eq!(c.raised(), 60 * 4 + blockers);
    }

    #[test]
    fn l2_undelivered_lists_queued_nits_outbox_steers_and_held_notes_without_taking_them() {
        let mut r = router();
        r.run_state(true);
        assert!(r.undelivered().is_empty());
        r.raise(0, 1, adv("nit a", None));
        r.raise(0, 1, adv("nit b", None));
        r.raise(
            0,
            2,
            adv("stop: the build is broken", Some(Severity::Blocker)),
        );
        let pending = r.undelivered();
        assert_eq!(pending.len(), 2);
        assert_eq!(
            (pending[0].channel, pending[0].notes.len()),
            (Channel::Aside, 2)
        );
        assert_eq!(pending[1].channel, Channel::Steer);
        assert_eq!(r.counts().pending, 3, "nothing taken");
        let mut h = reconfirm();
        h.run_state(false);
        h.raise(0, 1, adv("held one", Some(Severity::Concern)));
        let pending = h.undelivered();
        assert_eq!(pending.len(), 1);
        assert_eq!(pending[0].channel, Channel::Wake);
        assert!(pending[0]
            .content
            .contains("context=\"raised about an earlier step\""));
        assert_eq!(h.held().len(), 1, "still held");
    }

    #[test]
    fn d8_d4_under_reconfirm_a_held_concern_over_budget_displaces_a_queued_nit() {
        let mut r = reconfirm();
        r.run_state(true);
        r.raise(0, 1, adv("nit a", None));
        r.raise(0, 1, adv("nit b", None));
        assert_eq!(
            r.raise(0, 1, adv("concern c", Some(Severity::Concern))).0,
            RaiseOutcome::Held
        );
        assert_eq!(r.step_boundary().aside.unwrap().notes.len(), 1);
        assert_eq!(r.counts().dropped.get(&DropReason::OverBudget), Some(&1));
        assert_eq!(r.counts().held, 1);
    }

    #[test]
    fn p1_a_wip_review_defers_nits_and_concerns_and_a_final_turn_end_releases_them_as_cards() {
        let mut r = defer();
        r.run_state(true);
        assert!(r.review_batch(0, 1, 1, true).is_empty());
        let (o1, e1) = r.raise(0, 1, adv("rename x", None));
        let (o2, e2) = r.raise(0, 1, adv("the loop never ends", Some(Severity::Concern)));
        assert_eq!((o1, o2), (RaiseOutcome::Deferred, RaiseOutcome::Deferred));
        assert!(e1.is_empty() && e2.is_empty());
        assert!(
            r.step_boundary().is_empty(),
            "nothing reaches the primary mid-work"
        );
        // Raised again while deferred: queued, one note.
        assert_eq!(
            r.raise(0, 1, adv("Rename X!", None)).0,
            RaiseOutcome::Deferred
        );
        // A WIP turn end keeps them back; a final one with a terminal answer releases them.
        assert!(r.boundary(false, true).is_empty());
        let events = r.boundary(true, false);
        let cards: Vec<&str> = events
            .iter()
            .map(|e| match e {
                HostEvent::Card { card } => card.notes[0].note.as_str(),
                other => panic!("expected cards, got {other:?}"),
            })
            .collect();
        assert_eq!(cards, ["rename x", "the loop never ends"]);
        assert_eq!(r.counts().card, 2);
        assert_eq!(r.counts().pending, 0);
    }

    #[test]
    fn p1_a_blocker_goes_at_once_and_supersedes_a_deferred_note_of_the_same_key() {
        let mut r = defer();
        r.run_state(true);
        r.review_batch(0, 1, 1, true);
        r.raise(
            0,
            1,
            adv("the migration drops a column", Some(Severity::Concern)),
        );
        let (outcome, events) = r.raise(
            0,
            1,
            adv("The migration drops a column.", Some(Severity::Blocker)),
        );
        assert_eq!(outcome, RaiseOutcome::Delivered);
        assert_eq!(events, vec![HostEvent::SteerReady]);
        assert_eq!(r.step_boundary().steers.len(), 1);
        assert!(r.boundary(false, false).is_empty(), "nothing left deferred");
    }

    #[test]
    fn p1_released_notes_route_by_run_state_and_a_final_review_start_releases_too() {
        // Mid-work and idle (the run stopped without an answer): nit aside, concern wake.
        let mut r = defer();
        r.run_state(true);
        r.review_batch(0, 1, 1, true);
        r.raise(0, 1, adv("tidy", None));
        r.raise(0, 1, adv("wrong table", Some(Severity::Concern)));
        r.run_state(false);
        let events = r.review_batch(0, 2, 1, false);
        assert!(
            matches!(&events[..], [HostEvent::Wake { .. }]),
            "{events:?}"
        );
        assert_eq!(r.step_boundary().aside.map(|a| a.notes.len()), Some(1));
        // Running, not after an answer: concern steers.
        let mut r = defer();
        r.run_state(true);
        r.review_batch(0, 1, 1, true);
        r.raise(0, 1, adv("wrong table", Some(Severity::Concern)));
        assert_eq!(r.boundary(false, false), vec![HostEvent::SteerReady]);
        // After a terminal answer, outside a WIP review: nit and concern cards, blocker wake.
        let mut r = defer();
        r.boundary(true, false);
        r.run_state(false);
        r.review_batch(0, 1, 1, false);
        assert_eq!(r.raise(0, 1, adv("tidy", None)).0, RaiseOutcome::Delivered);
        let (_, events) = r.raise(0, 1, adv("wrong table", Some(Severity::Concern)));
        assert!(matches!(&events[..], [HostEvent::Card { .. }]));
        let (_, events) = r.raise(0, 1, adv("data loss", Some(Severity::Blocker)));
        assert!(matches!(&events[..], [HostEvent::Wake { .. }]));
        // The next run ends the answer's window.
        r.run_state(true);
        let (_, events) = r.raise(0, 2, adv("another risk", Some(Severity::Concern)));
        assert_eq!(events, vec![HostEvent::SteerReady]);
    }

    #[test]
    fn p1_a_user_abort_keeps_deferred_notes_a_reset_drops_them() {
        let mut r = defer();
        r.run_state(true);
        r.review_batch(0, 1, 1, true);
        r.raise(0, 1, adv("wrong table", Some(Severity::Concern)));
        assert!(r.interrupt(true).is_empty());
        r.run_state(false);
        assert_eq!(r.undelivered().len(), 1, "still deferred");
        r.reset(1);
        assert!(r.boundary(true, false).is_empty());
        assert_eq!(r.counts().dropped.get(&DropReason::Reset), Some(&1));
        assert_eq!(r.counts().pending, 0);
        assert_eq!(r.counts().raised(), 1);
    }

    #[test]
    fn p1_a_concern_over_budget_displaces_a_deferred_nit_of_its_review_only() {
        let mut r = defer();
        r.run_state(true);
        r.review_batch(0, 1, 1, true);
        r.raise(0, 1, adv("old nit", None));
        r.review_batch(0, 2, 1, true);
        r.raise(0, 2, adv("nit a", None));
        r.raise(0, 2, adv("nit b", None));
        assert_eq!(
            r.raise(0, 2, adv("concern c", Some(Severity::Concern))).0,
            RaiseOutcome::Deferred
        );
        assert_eq!(
            r.raise(0, 2, adv("concern d", Some(Severity::Concern))).0,
            RaiseOutcome::Deferred
        );
        assert_eq!(
            r.raise(0, 2, adv("concern e", Some(Severity::Concern))).0,
            RaiseOutcome::Declined(DropReason::OverBudget)
        );
        let notes: Vec<String> = r
            .undelivered()
            .into_iter()
            .map(|d| d.notes[0].note.clone())
            .collect();
        assert_eq!(notes, ["old nit", "concern c", "concern d"]);
        // The displaced nit never reached the primary: no duplicate later.
        r.boundary(false, false);
        assert_eq!(r.raise(0, 3, adv("nit b", None)).0, RaiseOutcome::Delivered);
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
