//! CA13–CA20: the final-boundary window — a primary turn end, the window it opens, the notes it
//! buffers and the one merged message it sends when it closes, and the continuation mark.

use super::{RouterState, TurnEndPlanned};
use crate::delivery::advisors::{Origin, Owner};
use crate::delivery::outbox::OutboxSteer;
use crate::delivery::window::{
    guidance_due, merge_order, qualifies, BoundaryWindow, LastPrompt, WindowNote, GUIDANCE,
};
use crate::domain::advice::{Advisory, Channel};
use crate::domain::host::HostEvent;
use crate::settings::ReviewMode;

impl RouterState {
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
    pub(super) fn continuation_boundary(&mut self, prompt: &LastPrompt, wip: bool) -> bool {
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
    pub(super) fn buffer(
        &mut self,
        advisory: Advisory,
        key: String,
        origin: Origin,
    ) -> Vec<HostEvent> {
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
    pub(super) fn flush_window(&mut self) -> Vec<HostEvent> {
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
            // SP3: a merged wake counts toward the wakes per user prompt as any wake does,
            // against the advisor whose note comes first; past them it is a card.
            (true, false) => match notes.first().map(|n| n.origin.owner.clone()) {
                Some(first) => self.limit_wake(&first, Channel::Wake),
                None => Channel::Wake,
            },
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
        // A refused wake is a card: it starts no turn (CA17).
        if continuation && channel != Channel::Card {
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
    pub(super) fn mark_continuation(&mut self) {
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
}
