//! Routing and the outbox (D1–D3, D6–D8): what happens to each advisory an advisor raises,
//! the aside queue and the steering cards the host has not taken yet, the user-interrupt
//! latch, immune turns and the emission guards. Under `reconfirm` it holds concerns and
//! blockers ([`super::held`]) and runs the catch-up block ([`super::catch_up`]). One router
//! serves every advisor of a session (RO13): each has its own guard, policy and severity
//! cap ([`super::advisors`]); the queue, the outbox, the latch and immunity are shared, and
//! a note two named advisors raise about the same update goes out once (RO22). Pure logic;
//! the DeliveryRouter actor wraps it and forwards the host events.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::advisors::{add_advisor_name, Guards, Origin, Owner, UpdateId};
use super::budget::ReviewId;
use super::catch_up::{best_effort_notice, CatchUp, CatchUpEnd, CatchUpPlan, HeldRelease};
use super::deferred::{DeferredNote, DeferredNotes};
use super::held::{HeldNote, HeldNotes, Reraised};
use super::lane::{is_too_short, WakeLimit, MIN_NOTE_CHARS};
use super::note::{is_content_free_key, normalize_note};
use super::outbox::{Outbox, OutboxSteer, QueuedAside};
use super::outcome::{DeliveryCounts, DropReason, RaiseOutcome};
use super::review_ref::ReviewRef;
use super::texts::{EARLIER_STEP, FINAL_ANSWER};
use super::window::{
    guidance_due, merge_order, qualifies, BoundaryWindow, LastPrompt, WindowNote, GUIDANCE,
};
use crate::domain::advice::{AdvisorLabel, Advisory, Channel, Delivery, Severity};
use crate::domain::host::{HostEvent, StepAdvice};
use crate::settings::{DeliveryPolicy, ReviewMode};
use crate::texts::exceeds_chars;

/// The note cap when none is configured (`advisor.maxNoteChars`, K1).
pub const DEFAULT_MAX_NOTE_CHARS: usize = 2000;

/// What the router answers a primary turn end (CA13, CA17, D5).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TurnEndPlanned {
    /// The catch-up block the turn end waits through (D5), if any.
    pub catch_up: Option<CatchUpPlan>,
    /// The boundary is an advisor continuation's (CA17): its review cadence counts nothing
    /// here and nothing is scheduled or waited on (CA4).
    pub continuation: bool,
    /// The final-boundary window this turn end opened (CA13), to close by its id when the
    /// turn end's waits are over; `None` at a WIP boundary.
    pub window: Option<u64>,
}

/// The router's state: outbox, aside queue, held notes, latch, immunity, the advisors'
/// guards and the counters.
#[derive(Debug)]
pub struct RouterState {
    /// Each advisor's guard, policy and cap; the unnamed advisor's are the session's.
    guards: Guards,
    max_note_chars: usize,
    /// Notes shorter than this once trimmed are dropped `tooShort` (SP3).
    min_note_chars: usize,
    immune_turns: u32,
    epoch: u64,
    /// Primary turn ends heard of in the session: tells updates apart (RO22).
    turns: u64,
    running: bool,
    suppressed: bool,
    enabled: bool,
    /// What waits for the host: the aside queue, the outbox's steers and the cards that
    /// wait for another review (D3, RO22).
    outbox: Outbox,
    held: HeldNotes,
    /// A branch change replayed the transcript (P3): until the next user
    /// prompt, concerns and blockers are cards, never wakes.
    replayed: bool,
    /// The notes `defer` keeps back until the next final boundary (P1).
    deferred: DeferredNotes,
    /// From a final boundary whose turn was a terminal answer until the next run starts
    /// (P1): nits and concerns become cards.
    answered: bool,
    immune_left: u32,
    last_turn_terminal: bool,
    catch_up: CatchUp,
    counts: DeliveryCounts,
    /// The counters of each named advisor, by slug (D10, RO13); they outlive its removal.
    per_advisor: BTreeMap<String, DeliveryCounts>,
    /// The named advisors paused by `/advisor off NAME` (RO19): what they raise is dropped.
    paused: BTreeSet<Arc<str>>,
    /// T (CA14): the conversation's turn ends, +1 at every boundary, WIP rounds and
    /// continuation turns included; 0 again when another conversation begins (CA8).
    conversation_turns: u64,
    /// The final-boundary window open now (CA13).
    window: Option<BoundaryWindow>,
    /// Windows opened in the session: the next one's id.
    windows: u64,
    /// T when the guidance text was last shown (CA15); `None`: not yet in this
    /// conversation.
    guidance_at: Option<u64>,
    /// The last genuine user prompt at the latest boundary (CA17).
    last_prompt: LastPrompt,
    /// The continuation mark (CA17): the last genuine user prompt when an advisor delivery
    /// last started a turn; boundaries under the same prompt are continuation boundaries.
    mark: Option<LastPrompt>,
    /// The advisor-started wakes since the last user prompt (SP3).
    wakes: WakeLimit,
    /// `advisor.spendControls`: false, the blocker lane is unbounded as before SP3 — no
    /// `tooShort` or `nearDuplicate` drops, blockers never counted against the budget, no
    /// wake limit.
    spend_controls: bool,
}

impl RouterState {
    /// A router for `policy`, allowing `max_notes_per_update` non-blocker notes per session
    /// update a review covers (D8), with the default 3 immune turns (D7) and the default
    /// note cap. These are the session's settings: the unnamed advisor's, and a named
    /// advisor's until it is registered ([`RouterState::register_advisor`]).
    pub fn new(policy: DeliveryPolicy, max_notes_per_update: usize) -> Self {
        Self {
            guards: Guards::new(policy, max_notes_per_update),
            max_note_chars: DEFAULT_MAX_NOTE_CHARS,
            min_note_chars: MIN_NOTE_CHARS,
            immune_turns: 3,
            epoch: 0,
            turns: 0,
            running: false,
            suppressed: false,
            enabled: true,
            outbox: Outbox::default(),
            held: HeldNotes::default(),
            replayed: false,
            deferred: DeferredNotes::default(),
            answered: false,
            immune_left: 0,
            last_turn_terminal: false,
            catch_up: CatchUp::new(),
            counts: DeliveryCounts::default(),
            per_advisor: BTreeMap::new(),
            paused: BTreeSet::new(),
            conversation_turns: 0,
            window: None,
            windows: 0,
            guidance_at: None,
            last_prompt: LastPrompt::default(),
            mark: None,
            wakes: WakeLimit::default(),
            spend_controls: true,
        }
    }

    /// A router as this one was made, with the advisors registered with it (paused and
    /// removed ones included) and the session's state — its epoch, turn count, run state,
    /// delivery switch, user-interrupt latch, replay and immunity — but nothing queued,
    /// held, deferred or remembered and no budget used (F5: the actor restarted after a
    /// panic).
    pub fn restarted(&self) -> Self {
        let mut fresh = Self::new(self.policy(), self.max_notes_per_update())
            .with_immune_turns(self.immune_turns)
            .with_max_note_chars(self.max_note_chars);
        fresh.min_note_chars = self.min_note_chars;
        fresh.guards = self.guards.settings_only();
        fresh.paused = self.paused.clone();
        fresh.epoch = self.epoch;
        fresh.turns = self.turns;
        fresh.running = self.running;
        fresh.suppressed = self.suppressed;
        fresh.enabled = self.enabled;
        fresh.replayed = self.replayed;
        fresh.answered = self.answered;
        fresh.immune_left = self.immune_left;
        fresh.last_turn_terminal = self.last_turn_terminal;
        fresh.conversation_turns = self.conversation_turns;
        fresh.windows = self.windows;
        fresh.guidance_at = self.guidance_at;
        fresh.last_prompt = self.last_prompt.clone();
        fresh.mark = self.mark.clone();
        fresh.wakes = self.wakes;
        fresh.spend_controls = self.spend_controls;
        fresh
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

    /// The same router with SP3's bounded blocker lane on (the default) or off
    /// (`advisor.spendControls: false`).
    pub fn with_spend_controls(mut self, on: bool) -> Self {
        self.spend_controls = on;
        self
    }

    /// The same router taking notes of any length from 0 characters up (SP3's `tooShort`
    /// off): for the unit tests of the other rules, whose notes are placeholders like `"a"`.
    #[cfg(test)]
    pub(crate) fn with_min_note_chars(mut self, min_chars: usize) -> Self {
        self.min_note_chars = min_chars;
        self
    }

    /// The session's delivery policy.
    pub fn policy(&self) -> DeliveryPolicy {
        self.guards.session_policy()
    }

    /// The counters (D10), every advisor's together.
    pub fn counts(&self) -> &DeliveryCounts {
        &self.counts
    }

    /// The counters of each named advisor, by slug (D10, RO13).
    pub fn per_advisor(&self) -> &BTreeMap<String, DeliveryCounts> {
        &self.per_advisor
    }

    /// The session's notes-per-update bound (D8).
    pub fn max_notes_per_update(&self) -> usize {
        self.guards.session_per_update()
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

    /// Registers the named advisor `label` (RO15, RO16, RO10, CA1): its delivery policy
    /// (`None`: the session's), its notes per update, its severity cap and its review mode.
    /// Registering it again applies a changed entry and keeps its memory and notes.
    pub fn register_advisor(
        &mut self,
        label: &AdvisorLabel,
        policy: Option<DeliveryPolicy>,
        max_notes: usize,
        max_severity: Severity,
        review_mode: ReviewMode,
    ) {
        self.guards
            .register(label, policy, max_notes, max_severity, review_mode);
        self.per_advisor.entry(label.slug.to_string()).or_default();
        self.paused.remove(&label.slug);
        tracing::info!(advisor = %label.slug, ?policy, max_notes, max_severity = max_severity.as_str(), "advisor registered");
    }

    /// The unnamed advisor runs (again) with `max_notes_per_update` notes per update (RO12:
    /// the roster's shared `maxNotesPerUpdate` when its files have no entries): after the
    /// roster replaced it ([`RouterState::remove_advisor`]), its raises are taken again.
    pub fn register_unnamed(&mut self, max_notes_per_update: usize) {
        self.guards.register_unnamed(max_notes_per_update);
        tracing::info!(
            max_notes = max_notes_per_update,
            "unnamed advisor registered"
        );
    }

    /// Pauses (`paused`) or resumes the named advisor `slug` (RO19): from now until it is
    /// resumed or registered again, its raises are dropped `disabled` — a review that was
    /// running when `/advisor off NAME` came delivers nothing more. Its held notes (D9) are
    /// dropped `disabled` too: no review of it will reconfirm or recant them, so they would
    /// only hold the turn ends up (D5) and go out unconfirmed. The notes it raised that are
    /// queued, in the outbox or deferred stay where they are.
    pub fn pause_advisor(&mut self, slug: &str, paused: bool) {
        if paused {
            self.paused.insert(slug.into());
            let owner: Owner = Some(slug.into());
            let held = self.held.take(|h| h.origin.owner == owner).len() as u64;
            if held > 0 {
                self.tally(&owner, |c| c.held -= held);
                self.count_drop(&owner, DropReason::Disabled, held);
            }
        } else {
            self.paused.remove(slug);
        }
        tracing::info!(advisor = slug, paused, "advisor paused");
    }

    /// The advisor `slug` left the roster (RO21; `None`: the unnamed advisor, replaced by
    /// the roster's entries, RO12): the notes it raised that the primary has not got yet —
    /// queued, in the outbox, deferred or held — are dropped `removed`, and its
    /// registration and guard are forgotten (the unnamed advisor's memory and budget, and
    /// it is no longer in use). What its reviews still raise is dropped `removed` until it
    /// is registered again. Its counters stay.
    pub fn remove_advisor(&mut self, slug: Option<&str>) {
        let owner: Owner = slug.map(Into::into);
        let ours = |o: &Origin| o.owner == owner;
        let mut gone = self.outbox.take_single(ours);
        for note in self.deferred.take_where(|d| ours(&d.origin)) {
            let severity = note.severity();
            gone.push((note.origin, note.key, severity));
        }
        if let Some(window) = &mut self.window {
            let (theirs, kept): (Vec<WindowNote>, Vec<WindowNote>) =
                std::mem::take(&mut window.notes)
                    .into_iter()
                    .partition(|n| ours(&n.origin));
            window.notes = kept;
            gone.extend(theirs.into_iter().map(|n| {
                let severity = n.advisory.effective_severity();
                (n.origin, n.key, severity)
            }));
        }
        let pending = gone.len() as u64;
        self.tally(&owner, |c| c.pending -= pending);
        let held = self.held.take(|h| ours(&h.origin));
        let held_n = held.len() as u64;
        self.tally(&owner, |c| c.held -= held_n);
        for note in held {
            let severity = note.severity();
            gone.push((note.origin, note.key, severity));
        }
        self.count_drop(&owner, DropReason::Removed, pending + held_n);
        // RO22: a note merged from other advisors' goes with its owner; they may say it again.
        for (origin, key, severity) in &gone {
            self.forget_note(origin, key, *severity);
        }
        if let Some(slug) = slug {
            self.paused.remove(slug);
        }
        let known = self.guards.remove(&owner);
        tracing::info!(
            advisor = slug,
            known,
            dropped = gone.len(),
            "advisor removed"
        );
    }

    /// Forgets `key` at `severity` in the memories of the advisor of `origin` and of its
    /// co-authors (RO22): the note was dropped before it reached the primary, so a later
    /// repeat is not a duplicate of it.
    fn forget_note(&mut self, origin: &Origin, key: &str, severity: Severity) {
        let co_authors = origin.co_authors.iter().cloned().map(Some);
        for owner in std::iter::once(origin.owner.clone()).chain(co_authors) {
            if let Some(guard) = self.guards.get_mut(&owner) {
                guard.forget(key, severity.rank());
            }
        }
    }

    /// Applies `f` to the session's counters and to `owner`'s (D10).
    fn tally(&mut self, owner: &Owner, f: impl Fn(&mut DeliveryCounts)) {
        f(&mut self.counts);
        if let Some(slug) = owner {
            f(self.per_advisor.entry(slug.to_string()).or_default());
        }
    }

    fn drop_note(&mut self, owner: &Owner, reason: DropReason) -> RaiseOutcome {
        self.count_drop(owner, reason, 1);
        tracing::info!(reason = reason.as_str(), "advisory dropped");
        if self.guards.policy(owner) == DeliveryPolicy::Defer {
            RaiseOutcome::Declined(reason)
        } else {
            RaiseOutcome::Dropped(reason)
        }
    }

    fn count_drop(&mut self, owner: &Owner, reason: DropReason, n: u64) {
        self.tally(owner, |c| c.drop(reason, n));
    }

    /// Counts a delivery of `owner`'s notes; a steer or wake makes the next turns immune
    /// (D7, session-wide).
    fn delivered(&mut self, owner: &Owner, channel: Channel, n: u64) {
        self.tally(owner, |c| c.deliver(channel, n));
        if n > 0 && matches!(channel, Channel::Steer | Channel::Wake) && self.immune_turns > 0 {
            // The turn in progress plus the next `immune_turns` turn ends.
            self.immune_left = self.immune_turns + 1;
        }
    }

    /// The update a review starting now covers (RO22).
    fn update_now(&self, epoch: u64) -> UpdateId {
        UpdateId {
            epoch,
            turns: self.turns,
        }
    }

    pub(crate) fn review_started(&mut self, review: &ReviewRef, updates: usize) {
        let label = review.advisor.as_ref();
        let epoch = review.epoch();
        if epoch == self.epoch && !self.guards.is_removed(&review.owner()) {
            self.guards.reviewing(label);
            let now = self.update_now(epoch);
            let guard = self.guards.for_label(label);
            guard.budget.start(review.id, updates);
            guard.update = Some((review.id, now));
            guard.reviewing = true;
        }
    }

    /// `review` (`None`: the unnamed advisor)
    /// starts and covers `updates` session updates (its batch, G2): its note budget is
    /// `updates` × its `maxNotesPerUpdate` (D8, RO10, RO13). Under `defer` (its policy,
    /// RO15) a review of a `wip` batch has its nits and concerns deferred (P1), and a
    /// review of a final batch is a final boundary that releases what earlier reviews
    /// deferred. Returns the events of the release. A review of a removed advisor (RO21)
    /// changes nothing.
    pub fn review_batch(
        &mut self,
        review: &ReviewRef,
        updates: usize,
        wip: bool,
    ) -> Vec<HostEvent> {
        let label = review.advisor.as_ref();
        let epoch = review.epoch();
        let owner = review.owner();
        if self.guards.is_removed(&owner) {
            return Vec::new();
        }
        self.review_started(review, updates);
        if epoch != self.epoch || self.guards.policy(&owner) != DeliveryPolicy::Defer {
            return Vec::new();
        }
        if wip {
            self.guards.for_label(label).wip_review = Some(review.id);
            Vec::new()
        } else {
            self.release_deferred()
        }
    }

    /// A primary turn end, the router's whole part of it (CA13, CA17, CA20, D5, D7):
    /// `answered` when the turn was a terminal answer, `wip` when the primary goes on,
    /// `terminal` when its last assistant message called no tools (D4), `can_wait` when an
    /// advisor runs that the turn end could wait for, `last_prompt` the transcript's last
    /// genuine user prompt, `mode` the unnamed advisor's review mode as the settings say
    /// now (CA5), `window` whether a final boundary opens the window (see
    /// [`RouterState::boundary_of`]). Returns the events to send now and what the turn end
    /// waits for; the window it opened is closed by [`RouterState::close_window`] when the
    /// waits end.
    #[allow(clippy::too_many_arguments)]
    pub fn plan_turn_end(
        &mut self,
        answered: bool,
        wip: bool,
        terminal: bool,
        can_wait: bool,
        window: bool,
        last_prompt: LastPrompt,
        mode: ReviewMode,
    ) -> (Vec<HostEvent>, TurnEndPlanned) {
        self.guards.set_unnamed_review_mode(mode);
        let continuation = self.continuation_boundary(&last_prompt, wip);
        self.last_prompt = last_prompt;
        let events = self.boundary_of(answered, wip, window);
        let catch_up = self.turn_ended(terminal, can_wait);
        let window = self.window.as_ref().map(|w| w.id);
        let planned = TurnEndPlanned {
            catch_up,
            continuation,
            window,
        };
        (events, planned)
    }

    /// CA17: whether a boundary under `prompt` is an advisor continuation's. It is while
    /// the mark holds that prompt, up to and including the continuation's final boundary
    /// (not `wip`), after which the mark clears; another prompt clears it.
    fn continuation_boundary(&mut self, prompt: &LastPrompt, wip: bool) -> bool {
        match &self.mark {
            Some(mark) if mark == prompt => {
                if !wip {
                    self.mark = None;
                }
                true
            }
            Some(_) => {
                self.mark = None;
                false
            }
            None => false,
        }
    }

    /// A primary turn ended (P1): `answered` when it was a terminal answer, `wip` when the
    /// primary goes on. A turn end that is not WIP is a final boundary: its window opens
    /// (CA13) and every advisor's deferred notes are released into it (CA20), before the
    /// turn's delta is queued. A window a turn end left open (its host did not wait) closes
    /// first. Call before [`RouterState::turn_ended`].
    #[cfg(test)]
    pub fn boundary(&mut self, answered: bool, wip: bool) -> Vec<HostEvent> {
        self.boundary_of(answered, wip, true)
    }

    /// [`RouterState::boundary`], where a final boundary opens the window only when
    /// `window`: a turn end whose turn the host ended before its model answered (no
    /// assistant message closes it, and the host did not say the run stops) is counted and
    /// releases the deferred notes, routed at once as before CA13.
    pub fn boundary_of(&mut self, answered: bool, wip: bool, window: bool) -> Vec<HostEvent> {
        let mut events = self.flush_window();
        if wip || !window {
            // A new update: cards still waiting for a review of an earlier one go out (RO22),
            // as the turn before left the run.
            events.extend(self.release_cards(true));
            self.answered = answered && !wip;
            if !wip {
                events.extend(self.release_deferred());
            }
            return events;
        }
        self.answered = answered;
        self.windows += 1;
        self.window = Some(BoundaryWindow {
            id: self.windows,
            notes: Vec::new(),
        });
        tracing::info!(window = self.windows, "final-boundary window opened");
        events.extend(self.release_cards(true));
        events.extend(self.release_deferred());
        events
    }

    /// The window `id` closes (CA13: its turn end's waits are over): what it buffered goes
    /// out as one message (CA14–CA16). A window already closed changes nothing.
    pub fn close_window(&mut self, id: u64) -> Vec<HostEvent> {
        if self.window.as_ref().is_some_and(|w| w.id == id) {
            self.flush_window()
        } else {
            Vec::new()
        }
    }

    /// Buffers a note routed while the window is open (CA13), whatever its severity and
    /// policy; it waits as `pending`.
    fn buffer(&mut self, advisory: Advisory, key: String, origin: Origin) -> Vec<HostEvent> {
        let owner = origin.owner.clone();
        if let Some(window) = &mut self.window {
            tracing::info!(
                severity = advisory.effective_severity().as_str(),
                window = window.id,
                "advisory buffered for the merged delivery"
            );
            window.notes.push(WindowNote {
                advisory,
                key,
                origin,
            });
            self.tally(&owner, |c| c.pending += 1);
        }
        Vec::new()
    }

    /// Closes the open window: its notes as one message (CA14), opened by the guidance text
    /// when it is due (CA15), on one channel (CA16): a continuation — a steer while the run
    /// still takes steering, else a wake — when a note qualifies on its own and neither the
    /// user-interrupt latch (D6) nor a branch change's replay (P3) holds, else a card.
    fn flush_window(&mut self) -> Vec<HostEvent> {
        let Some(window) = self.window.take() else {
            return Vec::new();
        };
        let mut notes = window.notes;
        tracing::info!(
            window = window.id,
            notes = notes.len(),
            "final-boundary window closed"
        );
        if notes.is_empty() {
            return Vec::new();
        }
        for note in &notes {
            self.tally(&note.origin.owner, |c| c.pending -= 1);
        }
        merge_order(&mut notes, self.turns);
        let immune = self.immune();
        let continuation = !self.suppressed
            && !self.replayed
            && notes.iter().any(|n| {
                let mode = self.guards.review_mode(&n.origin.owner);
                qualifies(n.advisory.effective_severity(), mode, immune)
            });
        let channel = match (continuation, self.running) {
            (true, true) => Channel::Steer,
            (true, false) => Channel::Wake,
            (false, _) => Channel::Card,
        };
        let parts = notes
            .iter()
            .map(|n| (n.advisory.clone(), self.guards.policy(&n.origin.owner)))
            .collect();
        let mut card = self.build(channel, parts);
        if guidance_due(self.guidance_at, self.conversation_turns) {
            card.content = format!("{GUIDANCE}\n{}", card.content);
            self.guidance_at = Some(self.conversation_turns);
        }
        tracing::info!(
            channel = channel.as_str(),
            notes = notes.len(),
            "merged advisories routed"
        );
        if continuation {
            self.mark_continuation();
        }
        let mut origins = notes.into_iter().map(|n| (n.key, n.origin));
        if channel == Channel::Steer {
            let Some((key, origin)) = origins.next() else {
                return Vec::new();
            };
            let others: Vec<Origin> = origins.map(|(_, o)| o).collect();
            let steer = OutboxSteer {
                card,
                key,
                origin,
                others,
            };
            let owners: Vec<Owner> = steer.owners().cloned().collect();
            for owner in &owners {
                self.tally(owner, |c| c.pending += 1);
            }
            self.outbox.steers.push(steer);
            return vec![HostEvent::SteerReady];
        }
        for (_, origin) in origins {
            self.delivered(&origin.owner, channel, 1);
        }
        match channel {
            Channel::Wake => vec![HostEvent::Wake { card }],
            _ => vec![HostEvent::Card { card }],
        }
    }

    /// An advisor delivery starts a turn (CA17): the boundaries under the last genuine user
    /// prompt are continuation boundaries until the continuation's final one.
    fn mark_continuation(&mut self) {
        tracing::info!("advisor continuation marked");
        self.mark = Some(self.last_prompt.clone());
    }

    /// Whether the mark is set (CA17).
    #[cfg(test)]
    pub fn marked(&self) -> bool {
        self.mark.is_some()
    }

    /// Closes whatever window is open, as its turn end's close would.
    #[cfg(test)]
    pub fn close_open_window(&mut self) -> Vec<HostEvent> {
        self.flush_window()
    }

    /// The review in progress of `advisor` ended, whatever its end (RO22): the
    /// cards that waited for it go out unless another advisor's review of their update
    /// still runs.
    pub fn review_ended(&mut self, advisor: Option<&AdvisorLabel>) -> Vec<HostEvent> {
        if let Some(guard) = self.guards.get_mut(&owner_of(advisor)) {
            guard.reviewing = false;
        }
        self.release_cards(false)
    }

    /// Sends the waiting cards and wakes (RO22): all of them, or with `all` false those no
    /// other advisor's running review of their update waits for. Each takes the channel its
    /// note calls for now (a run may have started meanwhile: then it steers).
    fn release_cards(&mut self, all: bool) -> Vec<HostEvent> {
        let (waiting, ready): (Vec<OutboxSteer>, Vec<OutboxSteer>) =
            std::mem::take(&mut self.outbox.cards)
                .into_iter()
                .partition(|c| !all && self.guards.another_reviewing(&c.origin));
        self.outbox.cards = waiting;
        let mut events = Vec::with_capacity(ready.len());
        for waited in ready {
            let owner = waited.origin.owner.clone();
            self.tally(&owner, |c| c.pending -= 1);
            let Some(note) = waited.card.notes.first().cloned() else {
                continue;
            };
            events.extend(self.route_now(note, waited.key, waited.origin, None));
        }
        events
    }

    /// Routes every deferred note now (a final boundary, P1); later notes of the reviews in
    /// progress are routed at once.
    fn release_deferred(&mut self) -> Vec<HostEvent> {
        for guard in self.guards.all_mut() {
            guard.wip_review = None;
        }
        let notes = self.deferred.take_all();
        if !notes.is_empty() {
            tracing::info!(notes = notes.len(), "deferred advisories released");
        }
        let mut events = Vec::new();
        for note in notes {
            self.tally(&note.origin.owner, |c| c.pending -= 1);
            events.extend(self.route(note.advisory, note.key, note.origin, Some(note.review)));
        }
        events
    }

    /// P1 under `defer`: a nit or concern of a WIP review waits for the final boundary; a
    /// blocker supersedes a deferred note of the same key and goes at once. `None` when the
    /// note takes the usual way; otherwise the outcome.
    fn defer(
        &mut self,
        owner: &Owner,
        key: &str,
        review: ReviewId,
        advisory: &Advisory,
    ) -> Option<RaiseOutcome> {
        let severity = advisory.effective_severity();
        if severity == Severity::Blocker {
            let superseded = self
                .deferred
                .remove(|n| n.origin.owner == *owner && n.key == key);
            if superseded.is_some() {
                // Superseded: it is the same note, raised again as a blocker.
                self.tally(owner, |c| c.pending -= 1);
                self.count_drop(owner, DropReason::Duplicate, 1);
            }
            return None;
        }
        let guard = self.guards.get_mut(owner)?;
        if guard.wip_review != Some(review) {
            return None;
        }
        let existing = self.deferred.get_mut(owner, key)?;
        // Raised again while deferred: one note, at the higher severity.
        if severity > existing.severity() {
            existing.advisory.severity = Some(severity);
            guard.remember(self.turns, key, severity.rank());
        }
        self.count_drop(owner, DropReason::Duplicate, 1);
        tracing::info!("deferred advisory raised again");
        Some(RaiseOutcome::Deferred)
    }

    /// Routes one advisory raised by `review`
    /// (`None`: the unnamed advisor). Returns what the advisor is told and the events for
    /// the host.
    ///
    /// The guard, in order: a removed advisor (RO21: dropped `removed`, no guard made for
    /// it), disabled, stale epoch, too long (a bounded count on the raw
    /// note, before it is normalised or stored), content-free, too short (SP3), the
    /// advisor's severity cap (RO16), a held note of the advisor raised again (D9), a
    /// duplicate in the advisor's memory, a near duplicate of a note it delivered in the last
    /// 20 primary turns (SP3), the same note of another named advisor about the same update
    /// still undelivered (RO22), then the advisor's budget (D8): a review's first two
    /// blockers are not counted, later ones are (SP3); a note over budget displaces the
    /// newest lower-ranked nit of the same review that the host has not taken yet, or is
    /// dropped itself.
    pub fn raise(
        &mut self,
        review: &ReviewRef,
        advisory: Advisory,
    ) -> (RaiseOutcome, Vec<HostEvent>) {
        let owner = review.owner();
        if self.guards.is_removed(&owner) {
            return (self.drop_note(&owner, DropReason::Removed), Vec::new());
        }
        self.raise_checked(review, advisory)
    }

    /// `/advisor test` (C2): raises `advisory` as the unnamed advisor's, through the same
    /// guard and routes, as review `review` of `epoch`. It is the user's check, not an
    /// advisor's raise: it does not put the unnamed advisor's policy in use (RO15), and it
    /// is taken when a roster replaced the unnamed advisor too (RO12, RO21).
    pub fn inject(&mut self, id: ReviewId, advisory: Advisory) -> (RaiseOutcome, Vec<HostEvent>) {
        self.raise_checked(&ReviewRef { advisor: None, id }, advisory)
    }

    /// [`RouterState::raise`] past the roster's check.
    fn raise_checked(
        &mut self,
        review: &ReviewRef,
        mut advisory: Advisory,
    ) -> (RaiseOutcome, Vec<HostEvent>) {
        let label = review.advisor.as_ref();
        let (epoch, number) = (review.epoch(), review.number());
        let owner = review.owner();
        let guard = self.guards.for_label(label);
        let (policy, cap) = (guard.policy, guard.max_severity);
        if let Some(label) = label {
            // RO18: a named advisor's advice always carries its name.
            if advisory.advisor.is_none() {
                advisory.advisor = Some(label.name.to_string());
            }
        }
        let paused = label.is_some_and(|l| self.paused.contains(&l.slug));
        if !self.enabled || paused {
            return (self.drop_note(&owner, DropReason::Disabled), Vec::new());
        }
        if epoch != self.epoch {
            return (self.drop_note(&owner, DropReason::StaleEpoch), Vec::new());
        }
        if exceeds_chars(&advisory.note, self.max_note_chars) {
            return (self.refuse_too_long(&owner, &advisory.note), Vec::new());
        }
        let key = normalize_note(&advisory.note);
        if key.is_empty() {
            return (self.drop_note(&owner, DropReason::Empty), Vec::new());
        }
        if is_content_free_key(&key) {
            return (self.drop_note(&owner, DropReason::ContentFree), Vec::new());
        }
        if self.spend_controls && is_too_short(&advisory.note, self.min_note_chars) {
            return (self.drop_note(&owner, DropReason::TooShort), Vec::new());
        }
        self.cap_severity(&owner, cap, &mut advisory);
        let severity = advisory.effective_severity();
        let id = review.id;
        let now = self.update_now(epoch);
        let update = self.guards.for_label(label).update_of(id, now);
        let origin = Origin {
            owner: owner.clone(),
            update,
            co_authors: Vec::new(),
        };
        if let Some(outcome) = self.reraise(&origin, &key, number, severity) {
            return (outcome, Vec::new());
        }
        if policy == DeliveryPolicy::Defer {
            if let Some(outcome) = self.defer(&owner, &key, id, &advisory) {
                return (outcome, Vec::new());
            }
        }
        if self
            .guards
            .for_label(label)
            .history
            .repeats(&key, severity.rank())
        {
            return (self.drop_note(&owner, DropReason::Duplicate), Vec::new());
        }
        let turn = self.turns;
        if self.spend_controls
            && self
                .guards
                .for_label(label)
                .recent
                .near_duplicate(turn, &key, severity.rank())
        {
            return (
                self.drop_note(&owner, DropReason::NearDuplicate),
                Vec::new(),
            );
        }
        if let Some(merged) = self.merge_across_advisors(&origin, &key, &advisory) {
            return merged;
        }
        let guard = self.guards.for_label(label);
        // SP3: a review's first two blockers are exempt from the budget; later ones count.
        // Without the spend controls, blockers are never counted (as oh-my-pi has it).
        let counted = severity != Severity::Blocker
            || (self.spend_controls && !guard.budget.take_free_blocker(id));
        if counted && !guard.budget.take(id) && !self.displace_lower(&owner, id, severity) {
            return (self.drop_note(&owner, DropReason::OverBudget), Vec::new());
        }
        let note = DeferredNote {
            advisory,
            key,
            review: id,
            origin,
        };
        self.route_by_policy(review, policy, note, counted)
    }

    /// A note over the character cap is refused and counted for `owner`; the outcome
    /// carries the cap.
    fn refuse_too_long(&mut self, owner: &Owner, note: &str) -> RaiseOutcome {
        self.count_drop(owner, DropReason::TooLong, 1);
        tracing::info!(
            reason = DropReason::TooLong.as_str(),
            bytes = note.len(),
            max_chars = self.max_note_chars,
            "advisory refused"
        );
        RaiseOutcome::TooLong {
            max_chars: self.max_note_chars,
        }
    }

    /// RO16: a capped advisor never says more than its cap; lowers `advisory` to `cap`
    /// and counts it for `owner`.
    fn cap_severity(&mut self, owner: &Owner, cap: Severity, advisory: &mut Advisory) {
        if advisory.effective_severity() > cap {
            tracing::info!(
                raised = advisory.effective_severity().as_str(),
                cap = cap.as_str(),
                "advisory severity capped"
            );
            advisory.severity = Some(cap);
            self.tally(owner, |c| c.capped += 1);
        }
    }

    /// RO22: a named advisor's note another named advisor already raised about the same
    /// update is merged into that one (see [`Self::merge_duplicate`]) and counted as
    /// `duplicateOf`; `None` when it is unnamed or there is nothing to merge into.
    fn merge_across_advisors(
        &mut self,
        origin: &Origin,
        key: &str,
        advisory: &Advisory,
    ) -> Option<(RaiseOutcome, Vec<HostEvent>)> {
        origin.owner.as_ref()?;
        let events = self.merge_duplicate(origin, key, advisory)?;
        Some((
            self.drop_note(&origin.owner, DropReason::DuplicateOf),
            events,
        ))
    }

    /// The last step of a raise that passed every check: the advisor's delivery policy
    /// decides whether `note` is held for reconfirmation (D4), deferred to the end of the
    /// turn, or routed now. `note.review` is the review that raised it; `counted` when it
    /// took a place in that review's note budget (D8, SP3).
    fn route_by_policy(
        &mut self,
        review: &ReviewRef,
        policy: DeliveryPolicy,
        note: DeferredNote,
        counted: bool,
    ) -> (RaiseOutcome, Vec<HostEvent>) {
        let label = review.advisor.as_ref();
        let severity = note.advisory.effective_severity();
        let DeferredNote {
            advisory,
            key,
            review: id,
            origin,
        } = note;
        let owner = origin.owner.clone();
        if policy == DeliveryPolicy::Reconfirm && severity.interrupts() {
            // D4: held on first emission; not recorded as delivered (D8).
            tracing::info!(
                severity = severity.as_str(),
                "advisory held for reconfirmation"
            );
            self.held.hold(advisory, key, origin, id.number, counted);
            self.tally(&owner, |c| c.held += 1);
            return (RaiseOutcome::Held, Vec::new());
        }
        let turn = self.turns;
        let guard = self.guards.for_label(label);
        guard.remember(turn, &key, severity.rank());
        if policy == DeliveryPolicy::Defer {
            // P1: a blocker goes at once, counted or not.
            if severity != Severity::Blocker && guard.wip_review == Some(id) {
                tracing::info!(
                    severity = severity.as_str(),
                    "advisory deferred to the end of the turn"
                );
                self.deferred.push(DeferredNote {
                    advisory,
                    key,
                    review: id,
                    origin,
                });
                self.tally(&owner, |c| c.pending += 1);
                return (RaiseOutcome::Deferred, Vec::new());
            }
            let events = self.route(advisory, key, origin, Some(id));
            return (RaiseOutcome::Delivered, events);
        }
        let events = self.route(advisory, key, origin, Some(id));
        (RaiseOutcome::Recorded, events)
    }

    /// RO22: a note of the named advisor of `origin` that another named advisor raised about
    /// the same update (equal keys: D8's normalisation, case-insensitive) and the primary
    /// has not got yet — queued, in the outbox, deferred or held — is merged into that
    /// note: one note naming both, in raise order, at the higher severity. A merged nit
    /// that now interrupts leaves the aside queue and is routed again; a deferred note
    /// that became a blocker goes at once (P1). Both advisors remember the note at the
    /// merged severity, except when it is held: held notes are remembered when they go
    /// out (D8), and a held note its advisor recants (D9) is not the other's to lose, so
    /// the other may raise it again. The other advisor becomes a co-author of the note
    /// ([`Origin::co_authors`]). `None` when there is no such note.
    fn merge_duplicate(
        &mut self,
        origin: &Origin,
        key: &str,
        incoming: &Advisory,
    ) -> Option<Vec<HostEvent>> {
        let author = origin.owner.clone()?;
        let co_author = |into: &mut Origin| {
            if !into.co_authors.contains(&author) {
                into.co_authors.push(author.clone());
            }
        };
        let same = |k: &str, o: &Origin| {
            k == key && o.update == origin.update && o.owner.is_some() && o.owner != origin.owner
        };
        let name = incoming.advisor.clone().unwrap_or_default();
        let severity = incoming.effective_severity();
        let merge = |into: &mut Advisory| {
            add_advisor_name(into, &name);
            into.add_model(incoming.model.as_deref());
            if severity > into.effective_severity() {
                into.severity = incoming.severity;
            }
            tracing::info!(
                advisors = into.advisor.as_deref().unwrap_or(""),
                severity = into.effective_severity().as_str(),
                "advisory merged with another advisor's"
            );
        };
        if let Some(i) = self
            .outbox
            .asides
            .iter()
            .position(|q| same(&q.key, &q.origin))
        {
            merge(&mut self.outbox.asides[i].advisory);
            co_author(&mut self.outbox.asides[i].origin);
            let owner = self.outbox.asides[i].origin.owner.clone();
            let merged = self.outbox.asides[i].advisory.effective_severity();
            self.remember(&owner, key, merged);
            self.remember(&origin.owner, key, merged);
            if self.channel_for(&owner, merged) == Channel::Aside {
                return Some(Vec::new());
            }
            let queued = self.outbox.asides.remove(i);
            self.tally(&queued.origin.owner, |c| c.pending -= 1);
            return Some(self.route(queued.advisory, queued.key, queued.origin, queued.raised_by));
        }
        if let Some(i) = self
            .outbox
            .steers
            .iter()
            .position(|s| same(&s.key, &s.origin))
        {
            let steer = &mut self.outbox.steers[i];
            co_author(&mut steer.origin);
            let note = steer.card.notes.first_mut()?;
            merge(note);
            let merged = note.clone();
            let owner = steer.origin.owner.clone();
            let policy = self.guards.policy(&owner);
            self.remember(&owner, key, merged.effective_severity());
            self.remember(&origin.owner, key, merged.effective_severity());
            self.outbox.steers[i].card = self.build(Channel::Steer, vec![(merged, policy)]);
            return Some(Vec::new());
        }
        if let Some(i) = self
            .outbox
            .cards
            .iter()
            .position(|c| same(&c.key, &c.origin))
        {
            let card = &mut self.outbox.cards[i];
            co_author(&mut card.origin);
            let note = card.card.notes.first_mut()?;
            merge(note);
            let merged = note.clone();
            let owner = card.origin.owner.clone();
            let policy = self.guards.policy(&owner);
            let severity = merged.effective_severity();
            self.remember(&owner, key, severity);
            self.remember(&origin.owner, key, severity);
            let channel = self.channel_for(&owner, severity);
            if channel == Channel::Card
                || (channel == Channel::Wake && severity != Severity::Blocker)
            {
                self.outbox.cards[i].card = self.build(channel, vec![(merged, policy)]);
                return Some(Vec::new());
            }
            // Merged into a blocker: it goes at once (P1).
            let waiting = self.outbox.cards.remove(i);
            self.tally(&owner, |c| c.pending -= 1);
            return Some(self.route(merged, waiting.key, waiting.origin, None));
        }
        if let Some(note) = self.deferred.find_mut(|n| same(&n.key, &n.origin)) {
            merge(&mut note.advisory);
            co_author(&mut note.origin);
            let (owner, merged) = (note.origin.owner.clone(), note.severity());
            self.remember(&owner, key, merged);
            self.remember(&origin.owner, key, merged);
            if merged != Severity::Blocker {
                return Some(Vec::new());
            }
            // P1: a blocker goes at once.
            let note = self.deferred.remove(|n| same(&n.key, &n.origin))?;
            self.tally(&owner, |c| c.pending -= 1);
            return Some(self.route(note.advisory, note.key, note.origin, Some(note.review)));
        }
        let buffered = self
            .window
            .as_mut()
            .and_then(|w| w.notes.iter_mut().find(|n| same(&n.key, &n.origin)));
        if let Some(note) = buffered {
            // CA13: RO22 merges inside the window too.
            merge(&mut note.advisory);
            co_author(&mut note.origin);
            let (owner, merged) = (
                note.origin.owner.clone(),
                note.advisory.effective_severity(),
            );
            self.remember(&owner, key, merged);
            self.remember(&origin.owner, key, merged);
            return Some(Vec::new());
        }
        let held = self.held.find_mut(|h| same(&h.key, &h.origin))?;
        merge(&mut held.advisory);
        co_author(&mut held.origin);
        Some(Vec::new())
    }

    /// Records in `owner`'s memory that its note `key` now goes out at `severity`.
    fn remember(&mut self, owner: &Owner, key: &str, severity: Severity) {
        let turn = self.turns;
        if let Some(guard) = self.guards.get_mut(owner) {
            guard.remember(turn, key, severity.rank());
        }
    }

    /// D8 over budget: drops the newest note of `owner`'s review `id` still in the aside
    /// queue that ranks below `severity`, so the higher-ranked note takes its place. False
    /// when there is none (the host took them, or nothing ranks lower). A displaced note
    /// never reached the primary: its advisor and its co-authors (RO22) forget it.
    fn displace_lower(&mut self, owner: &Owner, id: ReviewId, severity: Severity) -> bool {
        if let Some(displaced) = self.deferred.displace_lower(owner, id, severity) {
            // P1: a still-deferred note of the same review gives way first.
            self.forget_note(&displaced.origin, &displaced.key, displaced.severity());
            self.tally(owner, |c| c.pending -= 1);
            self.count_drop(owner, DropReason::OverBudget, 1);
            tracing::info!(
                reason = DropReason::OverBudget.as_str(),
                displaced_by = severity.as_str(),
                "deferred advisory displaced by a higher-ranked one"
            );
            return true;
        }
        let Some(index) = self.outbox.asides.iter().rposition(|q| {
            q.origin.owner == *owner
                && q.raised_by == Some(id)
                && q.advisory.effective_severity() < severity
        }) else {
            return false;
        };
        let displaced = self.outbox.asides.remove(index);
        // It never reached the primary: a later repeat is not a duplicate of it.
        let displaced_severity = displaced.advisory.effective_severity();
        self.forget_note(&displaced.origin, &displaced.key, displaced_severity);
        self.tally(owner, |c| c.pending -= 1);
        self.count_drop(owner, DropReason::OverBudget, 1);
        tracing::info!(
            reason = DropReason::OverBudget.as_str(),
            displaced_by = severity.as_str(),
            "queued advisory displaced by a higher-ranked one"
        );
        true
    }

    /// A note matching one the advisor of `origin` holds (D9): reconfirmed by a later
    /// review, a duplicate within the review that held it. A reconfirmed note is about the
    /// update of the review that reconfirmed it now (RO22).
    fn reraise(
        &mut self,
        origin: &Origin,
        key: &str,
        review: u64,
        severity: Severity,
    ) -> Option<RaiseOutcome> {
        let owner = &origin.owner;
        match self.held.reraise(owner, key, review, severity)? {
            Reraised::Duplicate => Some(self.drop_note(owner, DropReason::Duplicate)),
            Reraised::Reconfirmed => {
                if let Some(held) = self
                    .held
                    .find_mut(|h| h.origin.owner == *owner && h.key == key)
                {
                    held.origin.update = origin.update;
                }
                self.tally(owner, |c| c.reconfirmed += 1);
                Some(RaiseOutcome::Reconfirmed)
            }
        }
    }

    /// A delivery of `notes`, each with its advisor's policy: under `reconfirm` a note
    /// carries the `context` attribute, and after a terminal turn the delivery the
    /// final-answer note (D4). One policy for all gives what the one-advisor router gave.
    fn build(&self, channel: Channel, notes: Vec<(Advisory, DeliveryPolicy)>) -> Delivery {
        let reconfirm = |p: DeliveryPolicy| p == DeliveryPolicy::Reconfirm;
        let mut content = notes
            .iter()
            .map(|(a, p)| a.to_xml(reconfirm(*p).then_some(EARLIER_STEP)))
            .collect::<Vec<_>>()
            .join("\n");
        if notes.iter().any(|(_, p)| reconfirm(*p)) && self.last_turn_terminal {
            content.push_str("\n\n");
            content.push_str(FINAL_ANSWER);
        }
        Delivery {
            channel,
            notes: notes.into_iter().map(|(a, _)| a).collect(),
            content,
        }
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

    /// The channel a note of `owner` takes now under its policy: under `interrupt` and
    /// `reconfirm` as D3 says, under `defer` as P1 and CA18 say; D6, D7 and a branch
    /// change's replay (P3) on top.
    fn channel_for(&self, owner: &Owner, severity: Severity) -> Channel {
        let policy = self.guards.policy(owner);
        if policy != DeliveryPolicy::Defer {
            let immune_concern = severity == Severity::Concern && self.immune();
            if !severity.interrupts() || immune_concern {
                return Channel::Aside;
            }
            return self.interrupt_channel();
        }
        if self.answered && severity != Severity::Blocker {
            // CA18: after a terminal answer an `agent-end` advisor's concern (outside the
            // immune turns) starts one continuation; other nits and concerns are visible
            // and start no turn.
            let mode = self.guards.review_mode(owner);
            if qualifies(severity, mode, self.immune()) {
                return self.interrupt_channel();
            }
            return Channel::Card;
        }
        let immune_concern = severity == Severity::Concern && self.immune();
        if severity == Severity::Nit || immune_concern {
            Channel::Aside
        } else {
            self.interrupt_channel()
        }
    }

    /// Routes a note on the channel its advisor's policy calls for now. A card, or a wake
    /// for a nit or concern, of a named advisor waits while another named advisor reviews
    /// the same update (RO22), so that advisor's same note merges into it.
    fn route(
        &mut self,
        advisory: Advisory,
        key: String,
        origin: Origin,
        raised_by: Option<ReviewId>,
    ) -> Vec<HostEvent> {
        if self.window.is_some() {
            return self.buffer(advisory, key, origin);
        }
        let severity = advisory.effective_severity();
        let policy = self.guards.policy(&origin.owner);
        let waits = match self.channel_for(&origin.owner, severity) {
            Channel::Card => true,
            Channel::Wake => severity != Severity::Blocker,
            _ => false,
        };
        if waits && origin.owner.is_some() && self.guards.another_reviewing(&origin) {
            let owner = origin.owner.clone();
            let channel = self.channel_for(&origin.owner, severity);
            let card = self.build(channel, vec![(advisory, policy)]);
            self.outbox
                .cards
                .push(OutboxSteer::single(card, key, origin));
            self.tally(&owner, |c| c.pending += 1);
            return Vec::new();
        }
        self.route_now(advisory, key, origin, raised_by)
    }

    /// [`Self::route`] without waiting for another advisor's review.
    fn route_now(
        &mut self,
        advisory: Advisory,
        key: String,
        origin: Origin,
        raised_by: Option<ReviewId>,
    ) -> Vec<HostEvent> {
        if self.window.is_some() {
            return self.buffer(advisory, key, origin);
        }
        let severity = advisory.effective_severity();
        let policy = self.guards.policy(&origin.owner);
        let owner = origin.owner.clone();
        let channel = self.limit_wake(&owner, self.channel_for(&owner, severity));
        if channel == Channel::Aside {
            tracing::info!(
                severity = severity.as_str(),
                immune = severity.interrupts(),
                "advisory queued as aside"
            );
            self.outbox.asides.push(QueuedAside {
                advisory,
                key,
                origin,
                raised_by,
            });
            self.tally(&owner, |c| c.pending += 1);
            return Vec::new();
        }
        let card = self.build(channel, vec![(advisory, policy)]);
        tracing::info!(
            severity = severity.as_str(),
            channel = channel.as_str(),
            "advisory routed"
        );
        match channel {
            Channel::Steer => {
                self.outbox
                    .steers
                    .push(OutboxSteer::single(card, key, origin));
                self.tally(&owner, |c| c.pending += 1);
                vec![HostEvent::SteerReady]
            }
            Channel::Card => {
                self.delivered(&owner, Channel::Card, 1);
                vec![HostEvent::Card { card }]
            }
            _ => {
                self.delivered(&owner, Channel::Wake, 1);
                self.mark_continuation();
                vec![HostEvent::Wake { card }]
            }
        }
    }

    /// SP3: a wake past the two allowed per user prompt becomes a card, counted
    /// `wakesRefused` for `owner`; any other channel, or a wake still allowed (now used),
    /// stays.
    fn limit_wake(&mut self, owner: &Owner, channel: Channel) -> Channel {
        if channel != Channel::Wake || !self.spend_controls || self.wakes.take() {
            return channel;
        }
        tracing::info!("advisor-started wake refused: sent as a card");
        self.tally(owner, |c| c.wakes_refused += 1);
        Channel::Card
    }

    /// The queued nits of every advisor as one aside message (D3, RO18), each keeping its
    /// name.
    fn aside_of(&self, queued: &[QueuedAside]) -> Delivery {
        let notes = queued
            .iter()
            .map(|q| (q.advisory.clone(), self.guards.policy(&q.origin.owner)))
            .collect();
        self.build(Channel::Aside, notes)
    }

    /// What the router still holds back from the primary, as it would be delivered now: the
    /// queued nits as one aside, the steering cards in the outbox, then each deferred note
    /// (P1) and each held note (D9) on its own, each on the channel its advisor's policy
    /// calls for now. Takes nothing; for a host with no next step boundary to come (the
    /// end of a replay, L2).
    pub fn undelivered(&self) -> Vec<Delivery> {
        let mut out = Vec::new();
        if !self.outbox.asides.is_empty() {
            out.push(self.aside_of(&self.outbox.asides));
        }
        out.extend(self.outbox.steers.iter().map(|s| s.card.clone()));
        out.extend(self.outbox.cards.iter().map(|c| c.card.clone()));
        let shown = |channel: Channel| match channel {
            // SP3: no wake left, it would go as a card.
            Channel::Wake if self.wakes.spent() => Channel::Card,
            other => other,
        };
        for deferred in self.deferred.as_slice() {
            let policy = self.guards.policy(&deferred.origin.owner);
            let channel = shown(self.channel_for(&deferred.origin.owner, deferred.severity()));
            out.push(self.build(channel, vec![(deferred.advisory.clone(), policy)]));
        }
        for held in self.held.as_slice() {
            let policy = self.guards.policy(&held.origin.owner);
            let channel = shown(self.channel_for(&held.origin.owner, held.severity()));
            out.push(self.build(channel, vec![(held.advisory.clone(), policy)]));
        }
        for note in self.window.iter().flat_map(|w| &w.notes) {
            let policy = self.guards.policy(&note.origin.owner);
            out.push(self.build(Channel::Card, vec![(note.advisory.clone(), policy)]));
        }
        out
    }

    /// The host is about to call its model: all queued nits, of every advisor, as one
    /// aside message, plus the steering cards in the outbox (D3, RO18).
    pub fn step_boundary(&mut self) -> StepAdvice {
        let aside = if self.outbox.asides.is_empty() {
            None
        } else {
            let queued = std::mem::take(&mut self.outbox.asides);
            let aside = self.aside_of(&queued);
            for q in &queued {
                self.tally(&q.origin.owner, |c| c.pending -= 1);
                self.delivered(&q.origin.owner, Channel::Aside, 1);
            }
            Some(aside)
        };
        let steers = self.take_steers(Channel::Steer);
        StepAdvice { aside, steers }
    }

    /// Takes the outbox, counted as delivered on `channel`.
    fn take_steers(&mut self, channel: Channel) -> Vec<Delivery> {
        let steers = std::mem::take(&mut self.outbox.steers);
        let mut cards = Vec::with_capacity(steers.len());
        for steer in steers {
            let owners: Vec<Owner> = steer.owners().cloned().collect();
            for owner in &owners {
                self.tally(owner, |c| c.pending -= 1);
                self.delivered(owner, channel, 1);
            }
            cards.push(steer.card);
        }
        cards
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

    /// Takes the outbox's steers as `channel` (wake or card); past the wakes allowed per
    /// user prompt a wake is a card (SP3).
    fn flush_steers(&mut self, channel: Channel) -> Vec<HostEvent> {
        let steers = std::mem::take(&mut self.outbox.steers);
        let mut events = Vec::with_capacity(steers.len());
        let mut woke = false;
        for steer in steers {
            let owners: Vec<Owner> = steer.owners().cloned().collect();
            // SP3: past the wakes allowed per user prompt a wake goes as a card, counted
            // against the advisor that raised the note first.
            let channel = match owners.first() {
                Some(first) => self.limit_wake(first, channel),
                None => channel,
            };
            for owner in &owners {
                self.tally(owner, |c| c.pending -= 1);
                self.delivered(owner, channel, 1);
            }
            woke |= channel == Channel::Wake;
            let mut card = steer.card;
            card.channel = channel;
            events.push(match channel {
                Channel::Wake => HostEvent::Wake { card },
                _ => HostEvent::Card { card },
            });
        }
        if woke {
            // A wake starts a turn of an idle primary (CA17).
            self.mark_continuation();
        }
        events
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

    /// A user prompt clears the latch (D6), ends a branch change's replay (P3), clears the
    /// continuation mark (CA17) and allows two advisor-started wakes again (SP3).
    pub fn user_prompt(&mut self) {
        self.suppressed = false;
        self.replayed = false;
        self.mark = None;
        self.wakes.user_prompted();
    }

    /// A primary turn ended (`terminal` when it was the final answer): one immune turn is
    /// used up (D7), and when an advisor in use delivers under `reconfirm` the turn end may
    /// have to wait for the advisors to catch up (D5). `can_wait` is false when no advisor
    /// runs to wait for.
    pub fn turn_ended(&mut self, terminal: bool, can_wait: bool) -> Option<CatchUpPlan> {
        self.turns += 1;
        self.conversation_turns += 1;
        self.last_turn_terminal = terminal;
        self.immune_left = self.immune_left.saturating_sub(1);
        if !self.guards.uses(DeliveryPolicy::Reconfirm) || !self.enabled || !can_wait {
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
            let owner = note.origin.owner.clone();
            self.tally(&owner, |c| c.held -= 1);
            self.remember(&owner, &note.key, note.severity());
            for co_author in &note.origin.co_authors {
                self.remember(&Some(co_author.clone()), &note.key, note.severity());
            }
            events.extend(self.route(note.advisory, note.key, note.origin, None));
        }
        events
    }

    /// The held-notes preamble of `review` (D9, RO13), empty
    /// when it holds nothing. The notes listed are the ones this review must raise again to
    /// keep; another advisor's held notes are not its to keep or drop.
    pub fn held_preamble(&mut self, review: &ReviewRef) -> String {
        let (epoch, number) = (review.epoch(), review.number());
        if epoch != self.epoch {
            return String::new();
        }
        self.held.preamble(&review.owner(), number)
    }

    /// `review` succeeded (D9, RO13): the notes it
    /// holds that it was shown and did not raise again are dropped (`recanted`). A failed
    /// review prunes nothing.
    pub fn review_succeeded(&mut self, review: &ReviewRef) {
        let (epoch, number) = (review.epoch(), review.number());
        if epoch != self.epoch {
            return;
        }
        let owner = review.owner();
        let dropped = self.held.prune(&owner, number) as u64;
        if dropped > 0 {
            tracing::info!(dropped, "held advisories recanted");
            self.tally(&owner, |c| c.held -= dropped);
            self.count_drop(&owner, DropReason::Recanted, dropped);
        }
    }

    /// An attempt of `review` was thrown away
    /// before the review is tried again (G5: its context overflowed; F1: it failed). The
    /// attempts of one review run one after another and the agent reports a discarded one
    /// before the next starts, so everything the review changed so far is the discarded
    /// attempt's: the notes it held are dropped (`discarded`) and free their place in the
    /// review's note budget, and the held notes it raised again lose that reconfirmation
    /// (and any escalation). Advice it delivered cannot be recalled; its dedupe memory
    /// stays, so a replay does not repeat it. Returns how many holds were rolled back. A
    /// removed advisor's (RO21) has nothing left to roll back.
    pub fn discard_attempt(&mut self, review: &ReviewRef) -> usize {
        let label = review.advisor.as_ref();
        let (epoch, number) = (review.epoch(), review.number());
        let owner = review.owner();
        if epoch != self.epoch || self.guards.is_removed(&owner) {
            return 0;
        }
        let id = review.id;
        let deferred = self
            .deferred
            .take_where(|n| n.origin.owner == owner && n.review == id);
        if !deferred.is_empty() {
            let n = deferred.len() as u64;
            self.tally(&owner, |c| c.pending -= n);
            self.count_drop(&owner, DropReason::Discarded, n);
        }
        let discarded = self.held.discard(&owner, number);
        let dropped = discarded.len();
        if dropped > 0 {
            tracing::info!(
                dropped,
                review = number,
                "holds of a discarded attempt rolled back"
            );
            self.tally(&owner, |c| c.held -= dropped as u64);
            self.count_drop(&owner, DropReason::Discarded, dropped as u64);
        }
        // Its deferred notes will be raised again by the next attempt: not duplicates then,
        // nor for their co-authors (RO22).
        for note in &deferred {
            self.forget_note(&note.origin, &note.key, note.severity());
        }
        let counted = discarded.iter().filter(|h| h.counted()).count();
        // SP3: a held blocker that took no place gives its exemption back.
        let free_blockers = discarded
            .iter()
            .filter(|h| !h.counted() && h.severity() == Severity::Blocker)
            .count();
        let guard = self.guards.for_label(label);
        guard.budget.give_back(id, deferred.len() + counted);
        guard.budget.give_back_blockers(id, free_blockers);
        dropped
    }

    /// A reset (R1): a new epoch; the held notes and the catch-up streak of the old one are
    /// forgotten. The emission guards' memory stays (P3: it survives compaction and the
    /// other resets within a branch). Advice already accepted stays in the outbox: it was
    /// raised before the rewrite.
    pub fn reset(&mut self, epoch: u64) {
        self.epoch = epoch;
        for guard in self.guards.all_mut() {
            guard.budget.reset();
            guard.wip_review = None;
        }
        self.drop_deferred(DropReason::Reset);
        self.drop_held(DropReason::StaleEpoch);
        self.drop_buffered(DropReason::Reset);
        self.catch_up.reset();
    }

    /// Another conversation begins (CA8: new session, switch or resume, fork, tree move):
    /// T, the guidance turn (CA15), the immune turns (CA19) and the continuation mark
    /// (CA17) start over. Call with the reset that comes with it.
    pub fn new_conversation(&mut self) {
        self.conversation_turns = 0;
        self.guidance_at = None;
        self.immune_left = 0;
        self.mark = None;
        tracing::info!("conversation counters reset");
    }

    /// Drops the notes buffered in the open window (CA8); the window stays open, so its
    /// turn end closes it as usual.
    fn drop_buffered(&mut self, reason: DropReason) {
        let notes = self
            .window
            .as_mut()
            .map(|w| std::mem::take(&mut w.notes))
            .unwrap_or_default();
        for note in notes {
            self.tally(&note.origin.owner, |c| c.pending -= 1);
            self.count_drop(&note.origin.owner, reason, 1);
        }
    }

    /// A reset that moved to another branch (R1: session switch, resume, new session, fork,
    /// tree move, rewind): a reset, and until the next user prompt the review of the
    /// replayed transcript starts no run (P3): concerns and blockers become
    /// cards. The guards' memory is seeded from the branch at its next turn end
    /// ([`RouterState::seed_guard`]).
    pub fn reset_branch(&mut self, epoch: u64) {
        self.reset(epoch);
        self.replayed = true;
    }

    /// Seeds the emission guards' memory from the advisories present in the branch now
    /// reviewed (P3), in place of what they remembered: each advisor's from the advice
    /// that names it (RO13, RO18), the unnamed advisor's from the advice that names none.
    pub fn seed_guard(&mut self, epoch: u64, advisories: &[Advisory]) {
        if epoch == self.epoch {
            self.guards.seed(advisories, self.max_note_chars);
            tracing::info!(
                advisories = advisories.len(),
                "emission guards seeded from the branch"
            );
        }
    }

    fn drop_deferred(&mut self, reason: DropReason) {
        for note in self.deferred.take_all() {
            self.tally(&note.origin.owner, |c| c.pending -= 1);
            self.count_drop(&note.origin.owner, reason, 1);
        }
    }

    fn drop_held(&mut self, reason: DropReason) {
        for note in self.held.take(|_| true) {
            self.tally(&note.origin.owner, |c| c.held -= 1);
            self.count_drop(&note.origin.owner, reason, 1);
        }
    }

    /// Enables or disables delivery; disabling drops what is queued and held (reason
    /// `disabled`).
    pub fn set_enabled(&mut self, enabled: bool) {
        self.enabled = enabled;
        if !enabled {
            let owners = self.outbox.take_owners();
            for owner in owners {
                self.tally(&owner, |c| c.pending -= 1);
                self.count_drop(&owner, DropReason::Disabled, 1);
            }
            self.drop_deferred(DropReason::Disabled);
            self.drop_held(DropReason::Disabled);
            self.drop_buffered(DropReason::Disabled);
        }
    }
}

/// The key of `advisor`'s state: its slug, `None` for the unnamed advisor.
fn owner_of(advisor: Option<&AdvisorLabel>) -> Owner {
    advisor.map(|l| l.slug.clone())
}

#[cfg(test)]
mod tests;
