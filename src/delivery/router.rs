//! Routing and the outbox (D1–D3, D6–D8): what happens to each advisory an advisor raises,
//! the aside queue and the steering cards the host has not taken yet, the user-interrupt
//! latch, immune turns and the emission guards. Under `reconfirm` it holds concerns and
//! blockers ([`super::held`]) and runs the catch-up block ([`super::catch_up`]). One router
//! serves every advisor of a session (RO13): each has its own guard, policy and severity
//! cap ([`super::advisors`]); the queue, the outbox, the latch and immunity are shared, and
//! a note two named advisors raise about the same update goes out once (RO22). Pure logic;
//! the DeliveryRouter actor wraps it and forwards the host events.
//!
//! `RouterState` keeps the raise pipeline — guards, budget, held and deferred notes, a
//! review's start and end, the roster — and owns the parts that deliver: `steering` (D3, D6,
//! D7, SP3), `conversation` (CA13–CA20), `holds` (D4, D5, D9), `tally` (D10), the outbox;
//! `dispatch` routes a note over them, `merge` folds two advisors' note into one (RO22).

use std::collections::BTreeMap;

use super::advisors::{Guards, Origin, Owner, UpdateId};
use super::budget::ReviewId;
use super::catch_up::{CatchUpEnd, CatchUpPlan};
use super::deferred::{DeferredNote, DeferredNotes};
use super::held::{HeldNote, Reraised};
use super::outbox::Outbox;
use super::outcome::{DeliveryCounts, DropReason, RaiseOutcome};
use super::review_ref::ReviewRef;
use super::window::LastPrompt;
use crate::domain::advice::{AdvisorLabel, Advisory, Channel, Delivery, Severity};
use crate::domain::host::{HostEvent, StepAdvice};
use crate::settings::{DeliveryPolicy, ReviewMode};
use conversation::Conversation;
pub use conversation::TurnEndPlanned;
use dispatch::{Dispatch, Waiting};
use holds::Holds;
use limits::{cap_severity, NoteLimits};
use merge::Merge;
use steering::Steering;
use tally::Tally;

/// The router's state: the advisors' guards and the raise pipeline's limits, the session's
/// epoch, turn count and delivery switch, the held and deferred notes and the catch-up
/// streak; what waits for the host ([`Outbox`]), the run state ([`Steering`]), the
/// conversation's window ([`Conversation`]) and the counters ([`Tally`]) are parts it owns.
#[derive(Debug)]
pub struct RouterState {
    /// Each advisor's guard, policy and cap; the unnamed advisor's are the session's.
    guards: Guards,
    limits: NoteLimits,
    epoch: u64,
    /// Primary turn ends heard of in the session: tells updates apart (RO22).
    turns: u64,
    enabled: bool,
    /// What waits for the host: the aside queue, the outbox's steers and the cards that
    /// wait for another review (D3, RO22).
    outbox: Outbox,
    /// The notes held for reconfirmation and the catch-up streak (D4, D5, D9).
    holds: Holds,
    /// The notes `defer` keeps back until the next final boundary (P1).
    deferred: DeferredNotes,
    tally: Tally,
    steering: Steering,
    conversation: Conversation,
}

impl RouterState {
    /// A router for `policy`, allowing `max_notes_per_update` non-blocker notes per session
    /// update a review covers (D8), with the default 3 immune turns (D7) and the default
    /// note cap. These are the session's settings: the unnamed advisor's, and a named
    /// advisor's until it is registered ([`RouterState::register_advisor`]).
    pub fn new(policy: DeliveryPolicy, max_notes_per_update: usize) -> Self {
        Self {
            guards: Guards::new(policy, max_notes_per_update),
            limits: NoteLimits::default(),
            epoch: 0,
            turns: 0,
            enabled: true,
            outbox: Outbox::default(),
            holds: Holds::new(),
            deferred: DeferredNotes::default(),
            tally: Tally::default(),
            steering: Steering::new(3),
            conversation: Conversation::default(),
        }
    }

    /// A router as this one was made, with the advisors registered with it (paused and
    /// removed ones included) and the session's state — its epoch, turn count, run state,
    /// delivery switch, user-interrupt latch, replay and immunity — but nothing queued,
    /// held, deferred or remembered and no budget used (F5: the actor restarted after a
    /// panic).
    pub fn restarted(&self) -> Self {
        let mut fresh = Self::new(self.policy(), self.max_notes_per_update());
        fresh.limits = self.limits;
        fresh.guards = self.guards.settings_only();
        fresh.epoch = self.epoch;
        fresh.turns = self.turns;
        fresh.enabled = self.enabled;
        fresh.steering = self.steering.clone();
        fresh.conversation = self.conversation.restarted();
        fresh
    }

    /// The same router with `turns` immune turns after an interrupting delivery (D7);
    /// 0 turns immunity off.
    pub fn with_immune_turns(mut self, turns: u32) -> Self {
        self.steering.set_immune_turns(turns);
        self
    }

    /// The same router refusing notes longer than `max_chars` characters (D10 `tooLong`).
    pub fn with_max_note_chars(mut self, max_chars: usize) -> Self {
        self.limits.max_chars = max_chars;
        self
    }

    /// The same router with SP3's bounded blocker lane on (the default) or off
    /// (`advisor.spendControls: false`).
    pub fn with_spend_controls(mut self, on: bool) -> Self {
        self.limits.spend_controls = on;
        self.steering.bound_wakes(on);
        self
    }

    /// The same router taking notes of any length from 0 characters up (SP3's `tooShort`
    /// off): for the unit tests of the other rules, whose notes are placeholders like `"a"`.
    #[cfg(test)]
    pub(crate) fn with_min_note_chars(mut self, min_chars: usize) -> Self {
        self.limits.min_chars = min_chars;
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
    #[cfg(test)]
    pub fn immune(&self) -> bool {
        self.steering.immune()
    }

    /// Whether the user-interrupt latch is set (D6).
    pub fn suppressed(&self) -> bool {
        self.steering.suppressed()
    }

    /// The notes held now, oldest first (D9).
    pub fn held(&self) -> &[HeldNote] {
        self.holds.notes()
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
        self.guards.pause(slug, paused);
        if paused {
            let owner: Owner = Some(slug.into());
            let held = self.holds.take(|h| h.origin.owner == owner).len() as u64;
            if held > 0 {
                self.tally.add(&owner, |c| c.held -= held);
                self.tally.dropped(&owner, DropReason::Disabled, held);
            }
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
        let mut gone = self.dispatch().take_waiting(ours);
        let pending = gone.len() as u64;
        self.tally.add(&owner, |c| c.pending -= pending);
        let held = self.holds.take(|h| ours(&h.origin));
        let held_n = held.len() as u64;
        self.tally.add(&owner, |c| c.held -= held_n);
        for note in held {
            let severity = note.severity();
            gone.push((note.origin, note.key, severity));
        }
        self.tally
            .dropped(&owner, DropReason::Removed, pending + held_n);
        // RO22: a note merged from other advisors' goes with its owner; they may say it again.
        for (origin, key, severity) in &gone {
            self.guards.forget_note(origin, key, *severity);
        }
        let known = self.guards.remove(&owner);
        tracing::info!(
            advisor = slug,
            known,
            dropped = gone.len(),
            "advisor removed"
        );
    }

    fn drop_note(&mut self, owner: &Owner, reason: DropReason) -> RaiseOutcome {
        self.tally.dropped(owner, reason, 1);
        tracing::info!(reason = reason.as_str(), "advisory dropped");
        if self.guards.policy(owner) == DeliveryPolicy::Defer {
            RaiseOutcome::Declined(reason)
        } else {
            RaiseOutcome::Dropped(reason)
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
        let paused = self.guards.is_paused(label);
        if !self.enabled || paused {
            return (self.drop_note(&owner, DropReason::Disabled), Vec::new());
        }
        if epoch != self.epoch {
            return (self.drop_note(&owner, DropReason::StaleEpoch), Vec::new());
        }
        let key = match self.limits.key_of(&advisory.note) {
            Ok(key) => key,
            Err(DropReason::TooLong) => {
                return (self.refuse_too_long(&owner, &advisory.note), Vec::new())
            }
            Err(reason) => return (self.drop_note(&owner, reason), Vec::new()),
        };
        if cap_severity(cap, &mut advisory) {
            self.tally.add(&owner, |c| c.capped += 1);
        }
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
            if let Some(outcome) = self.dispatch().defer(&owner, &key, id, &advisory) {
                return (outcome, Vec::new());
            }
        }
        if let Some(reason) = self.repeated(label, &key, severity) {
            return (self.drop_note(&owner, reason), Vec::new());
        }
        if let Some(merged) = self.merge_across_advisors(&origin, &key, &advisory) {
            return merged;
        }
        let guard = self.guards.for_label(label);
        // SP3: a review's first two blockers are exempt from the budget; later ones count.
        // Without the spend controls, blockers are never counted (as oh-my-pi has it).
        let counted = severity != Severity::Blocker
            || (self.limits.spend_controls && !guard.budget.take_free_blocker(id));
        if counted
            && !guard.budget.take(id)
            && !self.dispatch().displace_lower(&owner, id, severity)
        {
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

    /// Whether the advisor `label` said `key` at `severity` already: a duplicate in its
    /// memory (P3), or a near duplicate of a note it delivered in the last 20 primary turns
    /// (SP3, with the spend controls on).
    fn repeated(
        &mut self,
        label: Option<&AdvisorLabel>,
        key: &str,
        severity: Severity,
    ) -> Option<DropReason> {
        let (turn, near) = (self.turns, self.limits.spend_controls);
        let guard = self.guards.for_label(label);
        if guard.history.repeats(key, severity.rank()) {
            Some(DropReason::Duplicate)
        } else if near && guard.recent.near_duplicate(turn, key, severity.rank()) {
            Some(DropReason::NearDuplicate)
        } else {
            None
        }
    }

    /// A note over the character cap is refused and counted for `owner`; the outcome
    /// carries the cap.
    fn refuse_too_long(&mut self, owner: &Owner, note: &str) -> RaiseOutcome {
        self.tally.dropped(owner, DropReason::TooLong, 1);
        tracing::info!(
            reason = DropReason::TooLong.as_str(),
            bytes = note.len(),
            max_chars = self.limits.max_chars,
            "advisory refused"
        );
        RaiseOutcome::TooLong {
            max_chars: self.limits.max_chars,
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
            self.holds.hold(advisory, key, origin, id.number, counted);
            self.tally.add(&owner, |c| c.held += 1);
            return (RaiseOutcome::Held, Vec::new());
        }
        let turn = self.turns;
        self.guards
            .for_label(label)
            .remember(turn, &key, severity.rank());
        let note = DeferredNote {
            advisory,
            key,
            review: id,
            origin,
        };
        self.dispatch().defer_or_route(label, policy, note)
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
        let events = self.merge_duplicate(&Merge::of(origin, key, advisory)?)?;
        Some((
            self.drop_note(&origin.owner, DropReason::DuplicateOf),
            events,
        ))
    }

    /// RO22: a note of a named advisor that another named advisor raised about the same
    /// update and the primary has not got yet — queued, in the outbox, deferred, in the
    /// window or held — is merged into that note ([`Merge`]). A deferred note that became
    /// a blocker goes at once (P1). Both advisors remember the note at the merged severity,
    /// except when it is held: held notes are remembered when they go out (D8), and a held
    /// note its advisor recants (D9) is not the other's to lose, so the other may raise it
    /// again. `None` when there is no such note.
    fn merge_duplicate(&mut self, merge: &Merge) -> Option<Vec<HostEvent>> {
        if let Some(events) = self.dispatch().merge_outbox(merge) {
            return Some(events);
        }
        if let Some(events) = self.dispatch().merge_deferred(merge) {
            return Some(events);
        }
        if self.dispatch().merge_window(merge) {
            return Some(Vec::new());
        }
        let held = self.holds.find_mut(|h| merge.same(&h.key, &h.origin))?;
        merge.fold_into(&mut held.advisory, &mut held.origin);
        Some(Vec::new())
    }

    /// The router's parts that deliver, for one call.
    fn dispatch(&mut self) -> Dispatch<'_> {
        Dispatch {
            guards: &mut self.guards,
            outbox: &mut self.outbox,
            steering: &mut self.steering,
            conversation: &mut self.conversation,
            tally: &mut self.tally,
            deferred: &mut self.deferred,
            turns: self.turns,
        }
    }

    /// Routes a note on the channel its advisor's policy calls for now (see
    /// [`Dispatch::route`]).
    fn route(
        &mut self,
        advisory: Advisory,
        key: String,
        origin: Origin,
        raised_by: Option<ReviewId>,
    ) -> Vec<HostEvent> {
        self.dispatch().route(advisory, key, origin, raised_by)
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
        self.dispatch().drop_deferred(DropReason::Reset);
        self.drop_held(DropReason::StaleEpoch);
        self.dispatch().drop_buffered(DropReason::Reset);
        self.holds.reset_streak();
    }

    /// Another conversation begins (CA8: new session, switch or resume, fork, tree move):
    /// T, the guidance turn (CA15), the immune turns (CA19) and the continuation mark
    /// (CA17) start over. Call with the reset that comes with it.
    pub fn new_conversation(&mut self) {
        self.conversation.new_conversation();
        self.steering.new_conversation();
        tracing::info!("conversation counters reset");
    }

    /// A reset that moved to another branch (R1: session switch, resume, new session, fork,
    /// tree move, rewind): a reset, and until the next user prompt the review of the
    /// replayed transcript starts no run (P3): concerns and blockers become
    /// cards. The guards' memory is seeded from the branch at its next turn end
    /// ([`RouterState::seed_guard`]).
    pub fn reset_branch(&mut self, epoch: u64) {
        self.reset(epoch);
        self.steering.replay();
    }

    /// Seeds the emission guards' memory from the advisories present in the branch now
    /// reviewed (P3), in place of what they remembered: each advisor's from the advice
    /// that names it (RO13, RO18), the unnamed advisor's from the advice that names none.
    pub fn seed_guard(&mut self, epoch: u64, advisories: &[Advisory]) {
        if epoch == self.epoch {
            self.guards.seed(advisories, self.limits.max_chars);
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
            self.dispatch().drop_outbox(DropReason::Disabled);
            self.dispatch().drop_deferred(DropReason::Disabled);
            self.drop_held(DropReason::Disabled);
            self.dispatch().drop_buffered(DropReason::Disabled);
        }
    }
    /// A note matching one the advisor of `origin` holds (D9): reconfirmed by a later
    /// review, a duplicate within the review that held it (see [`Holds::reraise`]).
    fn reraise(
        &mut self,
        origin: &Origin,
        key: &str,
        review: u64,
        severity: Severity,
    ) -> Option<RaiseOutcome> {
        let owner = &origin.owner;
        match self.holds.reraise(origin, key, review, severity)? {
            Reraised::Duplicate => Some(self.drop_note(owner, DropReason::Duplicate)),
            Reraised::Reconfirmed => {
                self.tally.add(owner, |c| c.reconfirmed += 1);
                Some(RaiseOutcome::Reconfirmed)
            }
        }
    }

    /// A primary turn ended (`terminal` when it was the final answer): one immune turn is
    /// used up (D7), and when an advisor in use delivers under `reconfirm` the turn end may
    /// have to wait for the advisors to catch up (D5). `can_wait` is false when no advisor
    /// runs to wait for.
    pub fn turn_ended(&mut self, terminal: bool, can_wait: bool) -> Option<CatchUpPlan> {
        self.turns += 1;
        self.conversation.turn_ended();
        self.steering.turn_ended(terminal);
        if !self.guards.uses(DeliveryPolicy::Reconfirm) || !self.enabled || !can_wait {
            return None;
        }
        self.holds.plan(terminal)
    }

    /// A catch-up block ended (D5): delivers the held notes its end allows, one message per
    /// note, on the channel the run state calls for.
    pub fn catch_up_finished(&mut self, plan: &CatchUpPlan, end: CatchUpEnd) -> Vec<HostEvent> {
        let (notice, released) = self.holds.finish(plan, end);
        let mut events: Vec<HostEvent> = notice.into_iter().collect();
        events.extend(self.release_held(released));
        events
    }

    /// Routes `released` held notes (D5); each advisor of a note remembers it now (D8).
    fn release_held(&mut self, released: Vec<HeldNote>) -> Vec<HostEvent> {
        let mut events = Vec::new();
        for note in released {
            let owner = note.origin.owner.clone();
            self.tally.add(&owner, |c| c.held -= 1);
            self.guards
                .remember(&owner, self.turns, &note.key, note.severity());
            for co_author in &note.origin.co_authors {
                self.guards.remember(
                    &Some(co_author.clone()),
                    self.turns,
                    &note.key,
                    note.severity(),
                );
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
        self.holds.preamble(&review.owner(), number)
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
        let dropped = self.holds.prune(&owner, number);
        if dropped > 0 {
            self.tally.add(&owner, |c| c.held -= dropped);
            self.tally.dropped(&owner, DropReason::Recanted, dropped);
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
        let deferred = self.dispatch().discard_deferred(&owner, id);
        let discarded = self.holds.discard(&owner, number);
        let dropped = discarded.len();
        if dropped > 0 {
            self.tally.add(&owner, |c| c.held -= dropped as u64);
            self.tally
                .dropped(&owner, DropReason::Discarded, dropped as u64);
        }
        let counted = discarded.iter().filter(|h| h.counted()).count();
        // SP3: a held blocker that took no place gives its exemption back.
        let free_blockers = discarded
            .iter()
            .filter(|h| !h.counted() && h.severity() == Severity::Blocker)
            .count();
        let guard = self.guards.for_label(label);
        guard.budget.give_back(id, deferred + counted);
        guard.budget.give_back_blockers(id, free_blockers);
        dropped
    }

    /// Drops every held note for `reason`.
    fn drop_held(&mut self, reason: DropReason) {
        for note in self.holds.take(|_| true) {
            self.tally.add(&note.origin.owner, |c| c.held -= 1);
            self.tally.dropped(&note.origin.owner, reason, 1);
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
            self.dispatch().release_deferred()
        }
    }

    /// The review in progress of `advisor` ended, whatever its end (RO22): the
    /// cards that waited for it go out unless another advisor's review of their update
    /// still runs.
    pub fn review_ended(&mut self, advisor: Option<&AdvisorLabel>) -> Vec<HostEvent> {
        if let Some(guard) = self.guards.get_mut(&owner_of(advisor)) {
            guard.reviewing = false;
        }
        self.dispatch().release_cards(false)
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
        let continuation = self.conversation.boundary_under(last_prompt, wip);
        let events = self.boundary_of(answered, wip, window);
        let catch_up = self.turn_ended(terminal, can_wait);
        let window = self.conversation.window_id();
        let planned = TurnEndPlanned {
            catch_up,
            continuation,
            window,
        };
        (events, planned)
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
    /// `window` (see [`Dispatch::boundary`]).
    pub fn boundary_of(&mut self, answered: bool, wip: bool, window: bool) -> Vec<HostEvent> {
        self.dispatch().boundary(answered, wip, window)
    }

    /// The window `id` closes (CA13: its turn end's waits are over): what it buffered goes
    /// out as one message (CA14–CA16). A window already closed changes nothing.
    pub fn close_window(&mut self, id: u64) -> Vec<HostEvent> {
        if self.conversation.window_id() == Some(id) {
            self.dispatch().flush_window()
        } else {
            Vec::new()
        }
    }

    /// Whether the mark is set (CA17).
    #[cfg(test)]
    pub fn marked(&self) -> bool {
        self.conversation.marked()
    }

    /// Closes whatever window is open, as its turn end's close would.
    #[cfg(test)]
    pub fn close_open_window(&mut self) -> Vec<HostEvent> {
        self.dispatch().flush_window()
    }

    /// What the router still holds back from the primary, as it would be delivered now: the
    /// queued nits as one aside, the steering cards in the outbox, then each deferred note
    /// (P1) and each held note (D9) on its own, each on the channel its advisor's policy
    /// calls for now. Takes nothing; for a host with no next step boundary to come (the
    /// end of a replay, L2).
    pub fn undelivered(&self) -> Vec<Delivery> {
        let waiting = Waiting {
            outbox: &self.outbox,
            deferred: &self.deferred,
            held: self.holds.notes(),
            window: self.conversation.notes(),
        };
        waiting.as_delivered(&self.guards, &self.steering)
    }

    /// The host is about to call its model: all queued nits, of every advisor, as one
    /// aside message, plus the steering cards in the outbox (D3, RO18).
    pub fn step_boundary(&mut self) -> StepAdvice {
        self.dispatch().step_boundary()
    }

    /// The primary started or went idle. Going idle turns outbox steers into wakes (or
    /// cards while the latch is set, A5); queued nits wait for the next run. A new run
    /// starts with no terminal turn behind it (D4).
    pub fn run_state(&mut self, running: bool) -> Vec<HostEvent> {
        match self.steering.run_state(running) {
            Some(channel) => self.dispatch().flush_steers(channel),
            None => Vec::new(),
        }
    }

    /// The host aborted the run (D6): a user interrupt latches suppression and turns outbox
    /// steers into visible cards; another interrupt keeps auto-resume. Held notes stay held
    /// (D5).
    pub fn interrupt(&mut self, by_user: bool) -> Vec<HostEvent> {
        if !by_user {
            return Vec::new();
        }
        self.steering.latch();
        self.dispatch().flush_steers(Channel::Card)
    }

    /// A user prompt clears the latch (D6), ends a branch change's replay (P3), clears the
    /// continuation mark (CA17) and allows two advisor-started wakes again (SP3).
    pub fn user_prompt(&mut self) {
        self.steering.user_prompt();
        self.conversation.user_prompt();
    }
}

/// The key of `advisor`'s state: its slug, `None` for the unnamed advisor.
fn owner_of(advisor: Option<&AdvisorLabel>) -> Owner {
    advisor.map(|l| l.slug.clone())
}

mod conversation;
mod dispatch;
mod holds;
mod limits;
mod merge;
mod steering;
mod tally;

#[cfg(test)]
mod tests;
