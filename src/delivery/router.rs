//! Routing and the outbox (D1–D3, D6–D8): what happens to each advisory an advisor raises,
//! the aside queue and the steering cards the host has not taken yet, the user-interrupt
//! latch, immune turns and the emission guards. Under `reconfirm` it holds concerns and
//! blockers ([`super::held`]) and runs the catch-up block ([`super::catch_up`]). One router
//! serves every advisor of a session (RO13): each has its own guard, policy and severity
//! cap ([`super::advisors`]); the queue, the outbox, the latch and immunity are shared, and
//! a note two named advisors raise about the same update goes out once (RO22). Pure logic;
//! the DeliveryRouter actor wraps it and forwards the host events.
//!
//! `RouterState`'s methods are spread over this module and its parts, by concern: the raise
//! pipeline, the channels and the routing stay here; `steering` what the host takes (D3,
//! D6, SP3), `window_flow` the final-boundary window (CA13–CA20), `review_flow` a
//! review's start and end and the deferred notes (RO22, P1), `held_flow` the held notes
//! and the catch-up block (D4, D5, D9), `merge` one note of two advisors (RO22).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::advisors::{Guards, Origin, Owner, UpdateId};
use super::budget::ReviewId;
use super::catch_up::{CatchUp, CatchUpPlan};
use super::deferred::{DeferredNote, DeferredNotes};
use super::held::{HeldNote, HeldNotes};
use super::lane::{is_too_short, WakeLimit, MIN_NOTE_CHARS};
use super::note::{is_content_free_key, normalize_note};
use super::outbox::{Outbox, OutboxSteer, QueuedAside};
use super::outcome::{DeliveryCounts, DropReason, RaiseOutcome};
use super::review_ref::ReviewRef;
use super::texts::{EARLIER_STEP, FINAL_ANSWER};
use super::window::{qualifies, BoundaryWindow, LastPrompt, WindowNote};
use crate::domain::advice::{AdvisorLabel, Advisory, Channel, Delivery, Severity};
use crate::domain::host::HostEvent;
use crate::settings::{DeliveryPolicy, ReviewMode};
use crate::texts::exceeds_chars;
use tally::Tally;

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
    /// The counters (D10), the session's and each named advisor's.
    tally: Tally,
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
            tally: Tally::default(),
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
        self.tally.counts()
    }

    /// The counters of each named advisor, by slug (D10, RO13).
    pub fn per_advisor(&self) -> &BTreeMap<String, DeliveryCounts> {
        self.tally.per_advisor()
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
        self.tally.known(&label.slug);
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
        self.tally.add(owner, f);
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
        self.tally.dropped(owner, reason, n);
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

mod held_flow;
mod merge;
mod review_flow;
mod steering;
mod tally;
mod window_flow;

#[cfg(test)]
mod tests;
