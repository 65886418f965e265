//! D3, D6, SP3: what the host takes — the aside at a step boundary, the outbox's steers, the wakes
//! and cards a run's end or a user interrupt turns them into, the user-interrupt latch and the wake
//! limit — and what is still undelivered.

use super::RouterState;
use crate::delivery::advisors::Owner;
use crate::delivery::outbox::QueuedAside;
use crate::domain::advice::{Channel, Delivery};
use crate::domain::host::{HostEvent, StepAdvice};

impl RouterState {
    /// SP3: a wake past the two allowed per user prompt becomes a card, counted
    /// `wakesRefused` for `owner`; any other channel, or a wake still allowed (now used),
    /// stays.
    pub(super) fn limit_wake(&mut self, owner: &Owner, channel: Channel) -> Channel {
        if channel != Channel::Wake || !self.spend_controls || self.wakes.take() {
            return channel;
        }
        tracing::info!("advisor-started wake refused: sent as a card");
        self.tally(owner, |c| c.wakes_refused += 1);
        Channel::Card
    }

    /// The queued nits of every advisor as one aside message (D3, RO18), each keeping its
    /// name.
    pub(super) fn aside_of(&self, queued: &[QueuedAside]) -> Delivery {
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
    pub(super) fn take_steers(&mut self, channel: Channel) -> Vec<Delivery> {
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
}
