//! D3, D6, D7, SP3, CA13–CA18, RO22: how a note that passed the raise pipeline reaches the
//! primary — the channel its advisor's policy and the run state call for, the aside queue,
//! the outbox's steers and the cards waiting for another review, the final-boundary window
//! and its one merged message, what the host takes at a step boundary, a run's end or a
//! user interrupt — and the counts of it. A function over the router's parts, borrowed for
//! one call: it keeps no state of its own.

use super::conversation::Conversation;
use super::merge::Merge;
use super::steering::Steering;
use super::tally::Tally;
use crate::delivery::advisors::{Guards, Origin, Owner};
use crate::delivery::budget::ReviewId;
use crate::delivery::deferred::{DeferredNote, DeferredNotes};
use crate::delivery::held::HeldNote;
use crate::delivery::outbox::{Outbox, OutboxSteer, QueuedAside};
use crate::delivery::outcome::DropReason;
use crate::delivery::outcome::RaiseOutcome;
use crate::delivery::window::{merge_order, qualifies, WindowNote};
use crate::domain::advice::{AdvisorLabel, Advisory, Channel, Delivery, Severity};
use crate::domain::host::{HostEvent, StepAdvice};
use crate::settings::DeliveryPolicy;

/// The router's parts that deliver, borrowed for one call.
pub(super) struct Dispatch<'a> {
    pub(super) guards: &'a mut Guards,
    pub(super) outbox: &'a mut Outbox,
    pub(super) steering: &'a mut Steering,
    pub(super) conversation: &'a mut Conversation,
    pub(super) tally: &'a mut Tally,
    /// The notes `defer` keeps back until the next final boundary (P1).
    pub(super) deferred: &'a mut DeferredNotes,
    /// The session's primary turn ends: the merged delivery's covered turns (CA14) and the
    /// guards' recent notes (SP3).
    pub(super) turns: u64,
}

impl Dispatch<'_> {
    /// One note of `owner` on `channel`, under its advisor's policy.
    pub(super) fn build_one(
        &self,
        channel: Channel,
        owner: &Owner,
        advisory: Advisory,
    ) -> Delivery {
        let policy = self.guards.policy(owner);
        self.steering.delivery(channel, vec![(advisory, policy)])
    }

    /// The channel a note of `owner` takes now under its policy (see [`Steering::channel`]).
    pub(super) fn channel_for(&self, owner: &Owner, severity: Severity) -> Channel {
        let (policy, mode) = (self.guards.policy(owner), self.guards.review_mode(owner));
        self.steering.channel(policy, mode, severity)
    }

    /// SP3: a wake past the two allowed per user prompt becomes a card, counted
    /// `wakesRefused` for `owner`; any other channel, or a wake still allowed (now used),
    /// stays.
    fn limit_wake(&mut self, owner: &Owner, channel: Channel) -> Channel {
        if channel != Channel::Wake || self.steering.take_wake() {
            return channel;
        }
        tracing::info!("advisor-started wake refused: sent as a card");
        self.tally.add(owner, |c| c.wakes_refused += 1);
        Channel::Card
    }

    /// Counts a delivery of `owner`'s notes; a steer or wake makes the next turns immune
    /// (D7, session-wide).
    fn delivered(&mut self, owner: &Owner, channel: Channel, n: u64) {
        self.tally.add(owner, |c| c.deliver(channel, n));
        self.steering.delivered(channel, n);
    }

    /// Counts a note of `owner` that left a waiting place to be routed again or delivered.
    fn unqueued(&mut self, owner: &Owner) {
        self.tally.add(owner, |c| c.pending -= 1);
    }

    /// Routes a note on the channel its advisor's policy calls for now. A card, or a wake
    /// for a nit or concern, of a named advisor waits while another named advisor reviews
    /// the same update (RO22), so that advisor's same note merges into it.
    pub(super) fn route(
        &mut self,
        advisory: Advisory,
        key: String,
        origin: Origin,
        raised_by: Option<ReviewId>,
    ) -> Vec<HostEvent> {
        let Some((advisory, key, origin)) = self.buffer(advisory, key, origin) else {
            return Vec::new();
        };
        let severity = advisory.effective_severity();
        let channel = self.channel_for(&origin.owner, severity);
        let waits = match channel {
            Channel::Card => true,
            Channel::Wake => severity != Severity::Blocker,
            _ => false,
        };
        if waits && origin.owner.is_some() && self.guards.another_reviewing(&origin) {
            let owner = origin.owner.clone();
            let card = self.build_one(channel, &owner, advisory);
            self.outbox
                .cards
                .push(OutboxSteer::single(card, key, origin));
            self.tally.add(&owner, |c| c.pending += 1);
            return Vec::new();
        }
        self.send_on(advisory, key, origin, raised_by)
    }

    /// [`Self::route`] without waiting for another advisor's review.
    fn route_now(
        &mut self,
        advisory: Advisory,
        key: String,
        origin: Origin,
        raised_by: Option<ReviewId>,
    ) -> Vec<HostEvent> {
        let Some((advisory, key, origin)) = self.buffer(advisory, key, origin) else {
            return Vec::new();
        };
        self.send_on(advisory, key, origin, raised_by)
    }

    /// Sends a note no window holds on the channel its advisor's policy calls for now.
    fn send_on(
        &mut self,
        advisory: Advisory,
        key: String,
        origin: Origin,
        raised_by: Option<ReviewId>,
    ) -> Vec<HostEvent> {
        let severity = advisory.effective_severity();
        let owner = origin.owner.clone();
        let channel = self.channel_for(&owner, severity);
        let channel = self.limit_wake(&owner, channel);
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
            self.tally.add(&owner, |c| c.pending += 1);
            return Vec::new();
        }
        let card = self.build_one(channel, &owner, advisory);
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
                self.tally.add(&owner, |c| c.pending += 1);
                vec![HostEvent::SteerReady]
            }
            Channel::Card => {
                self.delivered(&owner, Channel::Card, 1);
                vec![HostEvent::Card { card }]
            }
            _ => {
                self.delivered(&owner, Channel::Wake, 1);
                self.conversation.mark_continuation();
                vec![HostEvent::Wake { card }]
            }
        }
    }

    /// Buffers a note routed while the window is open (CA13), whatever its severity and
    /// policy; it waits as `pending`. Gives the note back when no window is open.
    fn buffer(
        &mut self,
        advisory: Advisory,
        key: String,
        origin: Origin,
    ) -> Option<(Advisory, String, Origin)> {
        let owner = origin.owner.clone();
        let note = WindowNote {
            advisory,
            key,
            origin,
        };
        match self.conversation.buffer(note) {
            None => {
                self.tally.add(&owner, |c| c.pending += 1);
                None
            }
            Some(note) => Some((note.advisory, note.key, note.origin)),
        }
    }

    /// The host is about to call its model: all queued nits, of every advisor, as one
    /// aside message, plus the steering cards in the outbox (D3, RO18).
    pub(super) fn step_boundary(&mut self) -> StepAdvice {
        let aside = if self.outbox.asides.is_empty() {
            None
        } else {
            let queued = std::mem::take(&mut self.outbox.asides);
            let aside = aside_of(self.guards, self.steering, &queued);
            for q in &queued {
                self.unqueued(&q.origin.owner);
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
                self.unqueued(owner);
                self.delivered(owner, channel, 1);
            }
            cards.push(steer.card);
        }
        cards
    }

    /// Takes the outbox's steers as `channel` (wake or card); past the wakes allowed per
    /// user prompt a wake is a card (SP3).
    pub(super) fn flush_steers(&mut self, channel: Channel) -> Vec<HostEvent> {
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
                self.unqueued(owner);
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
            self.conversation.mark_continuation();
        }
        events
    }

    /// Sends the waiting cards and wakes (RO22): all of them, or with `all` false those no
    /// other advisor's running review of their update waits for. Each takes the channel its
    /// note calls for now (a run may have started meanwhile: then it steers).
    pub(super) fn release_cards(&mut self, all: bool) -> Vec<HostEvent> {
        let (waiting, ready): (Vec<OutboxSteer>, Vec<OutboxSteer>) =
            std::mem::take(&mut self.outbox.cards)
                .into_iter()
                .partition(|c| !all && self.guards.another_reviewing(&c.origin));
        self.outbox.cards = waiting;
        let mut events = Vec::with_capacity(ready.len());
        for waited in ready {
            self.unqueued(&waited.origin.owner);
            let Some(note) = waited.card.notes.first().cloned() else {
                continue;
            };
            events.extend(self.route_now(note, waited.key, waited.origin, None));
        }
        events
    }

    /// Empties the outbox, each note dropped for `reason`.
    pub(super) fn drop_outbox(&mut self, reason: DropReason) {
        for owner in self.outbox.take_owners() {
            self.unqueued(&owner);
            self.tally.dropped(&owner, reason, 1);
        }
    }

    /// Drops the notes buffered in the open window (CA8); the window stays open, so its
    /// turn end closes it as usual.
    pub(super) fn drop_buffered(&mut self, reason: DropReason) {
        for note in self.conversation.take_notes(|_| true) {
            self.unqueued(&note.origin.owner);
            self.tally.dropped(&note.origin.owner, reason, 1);
        }
    }

    /// The aside-queue half of [`Self::displace_lower`].
    fn displace_queued(&mut self, owner: &Owner, id: ReviewId, severity: Severity) -> bool {
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
        self.guards
            .forget_note(&displaced.origin, &displaced.key, displaced_severity);
        self.unqueued(owner);
        self.tally.dropped(owner, DropReason::OverBudget, 1);
        tracing::info!(
            reason = DropReason::OverBudget.as_str(),
            displaced_by = severity.as_str(),
            "queued advisory displaced by a higher-ranked one"
        );
        true
    }

    /// RO22: merges the incoming note into the same note of another named advisor waiting
    /// in the outbox — queued, steering or a waiting card — which both advisors remember at
    /// the merged severity. A merged nit that now interrupts leaves the aside queue and is
    /// routed again; a waiting card merged into a blocker goes at once (P1). `None` when
    /// there is no such note.
    pub(super) fn merge_outbox(&mut self, merge: &Merge) -> Option<Vec<HostEvent>> {
        if let Some(i) = self
            .outbox
            .asides
            .iter()
            .position(|q| merge.same(&q.key, &q.origin))
        {
            return Some(self.merge_aside(merge, i));
        }
        if let Some(i) = self
            .outbox
            .steers
            .iter()
            .position(|s| merge.same(&s.key, &s.origin))
        {
            return self.merge_steer(merge, i);
        }
        let i = self
            .outbox
            .cards
            .iter()
            .position(|c| merge.same(&c.key, &c.origin))?;
        self.merge_card(merge, i)
    }

    /// Both advisors of a merged note remember it at `severity` (RO22).
    fn remember_merged(&mut self, merge: &Merge, owners: [&Owner; 2], severity: Severity) {
        for owner in owners {
            self.guards
                .remember(owner, self.turns, merge.key(), severity);
        }
    }

    fn merge_aside(&mut self, merge: &Merge, i: usize) -> Vec<HostEvent> {
        let queued = &mut self.outbox.asides[i];
        let merged = merge.fold_into(&mut queued.advisory, &mut queued.origin);
        let owner = queued.origin.owner.clone();
        let author = merge.author();
        self.remember_merged(merge, [&owner, &author], merged);
        if self.channel_for(&owner, merged) == Channel::Aside {
            return Vec::new();
        }
        let queued = self.outbox.asides.remove(i);
        self.unqueued(&queued.origin.owner);
        self.route(queued.advisory, queued.key, queued.origin, queued.raised_by)
    }

    fn merge_steer(&mut self, merge: &Merge, i: usize) -> Option<Vec<HostEvent>> {
        let steer = &mut self.outbox.steers[i];
        let note = steer.card.notes.first_mut()?;
        let severity = merge.fold_into(note, &mut steer.origin);
        let merged = note.clone();
        let owner = steer.origin.owner.clone();
        let author = merge.author();
        self.remember_merged(merge, [&owner, &author], severity);
        self.outbox.steers[i].card = self.build_one(Channel::Steer, &owner, merged);
        Some(Vec::new())
    }

    fn merge_card(&mut self, merge: &Merge, i: usize) -> Option<Vec<HostEvent>> {
        let card = &mut self.outbox.cards[i];
        let note = card.card.notes.first_mut()?;
        let severity = merge.fold_into(note, &mut card.origin);
        let merged = note.clone();
        let owner = card.origin.owner.clone();
        let author = merge.author();
        self.remember_merged(merge, [&owner, &author], severity);
        let channel = self.channel_for(&owner, severity);
        if channel == Channel::Card || (channel == Channel::Wake && severity != Severity::Blocker) {
            self.outbox.cards[i].card = self.build_one(channel, &owner, merged);
            return Some(Vec::new());
        }
        // Merged into a blocker: it goes at once (P1).
        let waiting = self.outbox.cards.remove(i);
        self.unqueued(&owner);
        Some(self.route(merged, waiting.key, waiting.origin, None))
    }

    /// RO22 inside the open window (CA13): merges the incoming note into the same note of
    /// another named advisor buffered there; false when there is none.
    pub(super) fn merge_window(&mut self, merge: &Merge) -> bool {
        let Some(note) = self
            .conversation
            .find_mut(|n| merge.same(&n.key, &n.origin))
        else {
            return false;
        };
        let merged = merge.fold_into(&mut note.advisory, &mut note.origin);
        let owner = note.origin.owner.clone();
        let author = merge.author();
        self.remember_merged(merge, [&owner, &author], merged);
        true
    }

    /// Closes the open window: its notes as one message (CA14), opened by the guidance text
    /// when it is due (CA15), on one channel (CA16): a continuation — a steer while the run
    /// still takes steering, else a wake — when a note qualifies on its own and neither the
    /// user-interrupt latch (D6) nor a branch change's replay (P3) holds, else a card.
    pub(super) fn flush_window(&mut self) -> Vec<HostEvent> {
        let Some(window) = self.conversation.close() else {
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
            self.unqueued(&note.origin.owner);
        }
        merge_order(&mut notes, self.turns);
        let (continuation, channel) = self.merged_channel(&notes);
        let parts = notes
            .iter()
            .map(|n| (n.advisory.clone(), self.guards.policy(&n.origin.owner)))
            .collect();
        let mut card = self.steering.delivery(channel, parts);
        card.content = self.conversation.with_guidance(card.content);
        tracing::info!(
            channel = channel.as_str(),
            notes = notes.len(),
            "merged advisories routed"
        );
        // A refused wake is a card: it starts no turn (CA17).
        if continuation && channel != Channel::Card {
            self.conversation.mark_continuation();
        }
        self.send_merged(card, notes)
    }

    /// The channel of a closing window's merged message (CA16), and whether it asks for a
    /// continuation.
    fn merged_channel(&mut self, notes: &[WindowNote]) -> (bool, Channel) {
        let immune = self.steering.immune();
        let continuation = self.steering.may_continue()
            && notes.iter().any(|n| {
                let mode = self.guards.review_mode(&n.origin.owner);
                qualifies(n.advisory.effective_severity(), mode, immune)
            });
        let channel = match (continuation, self.steering.running()) {
            (true, true) => Channel::Steer,
            // SP3: a merged wake counts toward the wakes per user prompt as any wake does,
            // against the advisor whose note comes first; past them it is a card.
            (true, false) => match notes.first().map(|n| n.origin.owner.clone()) {
                Some(first) => self.limit_wake(&first, Channel::Wake),
                None => Channel::Wake,
            },
            (false, _) => Channel::Card,
        };
        (continuation, channel)
    }

    /// Sends the merged message `card` of `notes`: a steer waits in the outbox as one
    /// message, a wake or card goes now.
    fn send_merged(&mut self, card: Delivery, notes: Vec<WindowNote>) -> Vec<HostEvent> {
        let channel = card.channel;
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
                self.tally.add(owner, |c| c.pending += 1);
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

    /// D8 over budget: drops the newest note of `owner`'s review `id` still deferred or in
    /// the aside queue that ranks below `severity`, so the higher-ranked note takes its
    /// place. False when there is none (the host took them, or nothing ranks lower). A
    /// displaced note never reached the primary: its advisor and its co-authors (RO22)
    /// forget it.
    pub(super) fn displace_lower(
        &mut self,
        owner: &Owner,
        id: ReviewId,
        severity: Severity,
    ) -> bool {
        if let Some(displaced) = self.deferred.displace_lower(owner, id, severity) {
            // P1: a still-deferred note of the same review gives way first.
            self.guards
                .forget_note(&displaced.origin, &displaced.key, displaced.severity());
            self.tally.add(owner, |c| c.pending -= 1);
            self.tally.dropped(owner, DropReason::OverBudget, 1);
            tracing::info!(
                reason = DropReason::OverBudget.as_str(),
                displaced_by = severity.as_str(),
                "deferred advisory displaced by a higher-ranked one"
            );
            return true;
        }
        self.displace_queued(owner, id, severity)
    }

    /// Routes every deferred note now (a final boundary, P1); later notes of the reviews in
    /// progress are routed at once.
    pub(super) fn release_deferred(&mut self) -> Vec<HostEvent> {
        for guard in self.guards.all_mut() {
            guard.wip_review = None;
        }
        let notes = self.deferred.take_all();
        if !notes.is_empty() {
            tracing::info!(notes = notes.len(), "deferred advisories released");
        }
        let mut events = Vec::new();
        for note in notes {
            self.unqueued(&note.origin.owner);
            events.extend(self.route(note.advisory, note.key, note.origin, Some(note.review)));
        }
        events
    }

    /// P1 under `defer`: a nit or concern of a WIP review waits for the final boundary; a
    /// blocker supersedes a deferred note of the same key and goes at once. `None` when the
    /// note takes the usual way; otherwise the outcome.
    pub(super) fn defer(
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
                self.tally.add(owner, |c| c.pending -= 1);
                self.tally.dropped(owner, DropReason::Duplicate, 1);
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
        self.tally.dropped(owner, DropReason::Duplicate, 1);
        tracing::info!("deferred advisory raised again");
        Some(RaiseOutcome::Deferred)
    }

    /// Drops every deferred note for `reason` (P1).
    pub(super) fn drop_deferred(&mut self, reason: DropReason) {
        for note in self.deferred.take_all() {
            self.unqueued(&note.origin.owner);
            self.tally.dropped(&note.origin.owner, reason, 1);
        }
    }

    /// A primary turn ended (P1): `answered` when it was a terminal answer, `wip` when the
    /// primary goes on. A turn end that is not WIP is a final boundary: its window opens
    /// (CA13) and every advisor's deferred notes are released into it (CA20), before the
    /// turn's delta is queued. A window a turn end left open (its host did not wait) closes
    /// first. A final boundary opens the window only when `window`: a turn end whose turn the host ended before its model answered (no
    /// assistant message closes it, and the host did not say the run stops) is counted and
    /// releases the deferred notes, routed at once as before CA13.
    pub(super) fn boundary(&mut self, answered: bool, wip: bool, window: bool) -> Vec<HostEvent> {
        let mut events = self.flush_window();
        if wip || !window {
            // A new update: cards still waiting for a review of an earlier one go out (RO22),
            // as the turn before left the run.
            events.extend(self.release_cards(true));
            self.steering.set_answered(answered && !wip);
            if !wip {
                events.extend(self.release_deferred());
            }
            return events;
        }
        self.steering.set_answered(answered);
        self.conversation.open_window();
        events.extend(self.release_cards(true));
        events.extend(self.release_deferred());
        events
    }

    /// RO22: merges the incoming note into the same note of another named advisor
    /// deferred (P1); a deferred note that became a blocker goes at once. `None` when there
    /// is no such note.
    pub(super) fn merge_deferred(&mut self, merge: &Merge) -> Option<Vec<HostEvent>> {
        let note = self.deferred.find_mut(|n| merge.same(&n.key, &n.origin))?;
        let merged = merge.fold_into(&mut note.advisory, &mut note.origin);
        let owner = note.origin.owner.clone();
        self.remember_merged(merge, [&owner, &merge.author()], merged);
        if merged != Severity::Blocker {
            return Some(Vec::new());
        }
        // P1: a blocker goes at once.
        let note = self.deferred.remove(|n| merge.same(&n.key, &n.origin))?;
        self.unqueued(&owner);
        Some(self.route(note.advisory, note.key, note.origin, Some(note.review)))
    }

    /// Takes the notes whose origin is `ours` that wait in the outbox, deferred or in the
    /// window, as (origin, key, severity); a merged final-boundary card (CA14) stays whole.
    pub(super) fn take_waiting(
        &mut self,
        ours: impl Fn(&Origin) -> bool,
    ) -> Vec<(Origin, String, Severity)> {
        let mut gone = self.outbox.take_single(&ours);
        for note in self.deferred.take_where(|d| ours(&d.origin)) {
            let severity = note.severity();
            gone.push((note.origin, note.key, severity));
        }
        gone.extend(self.conversation.take_notes(ours).into_iter().map(|n| {
            let severity = n.advisory.effective_severity();
            (n.origin, n.key, severity)
        }));
        gone
    }

    /// Drops the deferred notes of `owner`'s review `id`, an attempt of it thrown away
    /// (`discarded`); answers how many. The next attempt raises them again: not duplicates
    /// then, for their advisor nor for their co-authors (RO22).
    pub(super) fn discard_deferred(&mut self, owner: &Owner, id: ReviewId) -> usize {
        let deferred = self
            .deferred
            .take_where(|n| n.origin.owner == *owner && n.review == id);
        if !deferred.is_empty() {
            let n = deferred.len() as u64;
            self.tally.add(owner, |c| c.pending -= n);
            self.tally.dropped(owner, DropReason::Discarded, n);
        }
        for note in &deferred {
            self.guards
                .forget_note(&note.origin, &note.key, note.severity());
        }
        deferred.len()
    }

    /// The last step of a raise that passed every check and was not held (D4): under
    /// `defer` (P1) a nit or concern of a WIP review waits for the final boundary and
    /// anything else goes at once (`delivered`); under the other policies it is routed now
    /// (`recorded`).
    pub(super) fn defer_or_route(
        &mut self,
        label: Option<&AdvisorLabel>,
        policy: DeliveryPolicy,
        note: DeferredNote,
    ) -> (RaiseOutcome, Vec<HostEvent>) {
        let (severity, id) = (note.advisory.effective_severity(), note.review);
        if policy != DeliveryPolicy::Defer {
            let events = self.route(note.advisory, note.key, note.origin, Some(id));
            return (RaiseOutcome::Recorded, events);
        }
        // P1: a blocker goes at once, counted or not.
        if severity != Severity::Blocker && self.guards.for_label(label).wip_review == Some(id) {
            tracing::info!(
                severity = severity.as_str(),
                "advisory deferred to the end of the turn"
            );
            self.tally.add(&note.origin.owner, |c| c.pending += 1);
            self.deferred.push(note);
            return (RaiseOutcome::Deferred, Vec::new());
        }
        let events = self.route(note.advisory, note.key, note.origin, Some(id));
        (RaiseOutcome::Delivered, events)
    }
}

/// The queued nits of every advisor as one aside message (D3, RO18), each keeping its name.
fn aside_of(guards: &Guards, steering: &Steering, queued: &[QueuedAside]) -> Delivery {
    let notes = queued
        .iter()
        .map(|q| (q.advisory.clone(), guards.policy(&q.origin.owner)))
        .collect();
    steering.delivery(Channel::Aside, notes)
}

/// Everything that waits for the primary, borrowed to show it.
pub(super) struct Waiting<'a> {
    pub(super) outbox: &'a Outbox,
    pub(super) deferred: &'a DeferredNotes,
    pub(super) held: &'a [HeldNote],
    pub(super) window: &'a [WindowNote],
}

impl Waiting<'_> {
    /// What waits, as it would be delivered now: the queued nits as one aside, the steering
    /// cards in the outbox, then each deferred note (P1) and each held note (D9) on its
    /// own, each on the channel its advisor's policy calls for now (a wake as a card when
    /// none is left, SP3), then each note buffered in the window as a card.
    pub(super) fn as_delivered(&self, guards: &Guards, steering: &Steering) -> Vec<Delivery> {
        let mut out = Vec::new();
        if !self.outbox.asides.is_empty() {
            out.push(aside_of(guards, steering, &self.outbox.asides));
        }
        out.extend(self.outbox.steers.iter().map(|s| s.card.clone()));
        out.extend(self.outbox.cards.iter().map(|c| c.card.clone()));
        let one = |owner: &Owner, severity: Severity, advisory: &Advisory| {
            let (policy, mode) = (guards.policy(owner), guards.review_mode(owner));
            let channel = steering.shown(policy, mode, severity);
            steering.delivery(channel, vec![(advisory.clone(), policy)])
        };
        for deferred in self.deferred.as_slice() {
            out.push(one(
                &deferred.origin.owner,
                deferred.severity(),
                &deferred.advisory,
            ));
        }
        for held in self.held {
            out.push(one(&held.origin.owner, held.severity(), &held.advisory));
        }
        for note in self.window {
            let policy = guards.policy(&note.origin.owner);
            out.push(steering.delivery(Channel::Card, vec![(note.advisory.clone(), policy)]));
        }
        out
    }
}
