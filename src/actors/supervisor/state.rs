//! The Supervisor's state by lifetime: the actors it talks to
//! ([`SupervisorLinks`](crate::actors::links::SupervisorLinks)), what
//! it keeps for the session ([`SessionState`]) and the turn ends in flight
//! ([`TurnInFlight`]). The members and every decision about them are [`super::Members`]'s.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::gate::GatedReview;
use crate::delivery::PromptCursor;
use crate::gate::GateState;
use crate::review::judge_gate::GateCounts;
use crate::status::PrimaryTally;

/// What the supervisor keeps over the session beside its members: the flags it shares with
/// the handles, the primary's spend (SP5), the last user prompt (CA17) and the gates'
/// state (SP9, GT6–GT8).
#[derive(Default)]
pub(super) struct SessionState {
    /// Whether a turn end may be held now (S1, D5, RO15), shared with the session's
    /// handles: kept current as roster entries come, go and change.
    pub(super) turn_end_flag: Arc<AtomicBool>,
    /// A syncBacklog wait ran long and the user was told so (S1): said once per session.
    pub(super) sync_wait_said: Arc<AtomicBool>,
    /// Set while a session transition is being prepared (CA11): catch-up waits return at
    /// once.
    pub(super) transitioning: Arc<AtomicBool>,
    /// The primary's usage as its transcript's assistant messages record it (SP5).
    pub(super) primary_spend: PrimaryTally,
    /// The last genuine user prompt, kept as the transcript grows (CA17, O(delta)).
    pub(super) prompts: PromptCursor,
    /// The triage gate's counters (SP9).
    pub(super) gate: GateCounts,
    /// WIP reviews scheduled at this boundary and waiting for the judge (SP9).
    pub(super) gated: Vec<GatedReview>,
    /// The action gate's cache, breaker and counters (GT6–GT8).
    pub(super) action_gate: GateState,
}

impl SessionState {
    /// CA11: whether a session transition is being prepared, stored for the catch-up waits.
    pub(super) fn set_transitioning(&self, preparing: bool) {
        self.transitioning.store(preparing, Ordering::Relaxed);
    }
}

/// The `PrimaryTurnEnded` calls still waiting (S1) and whether a close was asked for
/// meanwhile: a close lets them answer first (R2).
#[derive(Debug, Default)]
pub(super) struct TurnInFlight {
    waiting: usize,
    closing: bool,
}

impl TurnInFlight {
    /// A turn end starts waiting.
    pub(super) fn begin(&mut self) {
        self.waiting += 1;
    }

    /// A waiting turn end answered; true when the supervisor should stop now (a close was
    /// asked for and it was the last one).
    pub(super) fn end(&mut self) -> bool {
        self.waiting = self.waiting.saturating_sub(1);
        self.closing && self.waiting == 0
    }

    /// A close was asked for; true when the supervisor may stop at once (nothing waits).
    pub(super) fn close(&mut self) -> bool {
        self.closing = true;
        self.waiting == 0
    }
}

#[cfg(test)]
mod tests {
    use super::TurnInFlight;

    #[test]
    fn r2_a_close_with_nothing_waiting_stops_at_once() {
        let mut turns = TurnInFlight::default();
        assert!(turns.close());
    }

    #[test]
    fn r2_a_close_waits_for_the_last_turn_end_to_answer() {
        let mut turns = TurnInFlight::default();
        turns.begin();
        turns.begin();
        assert!(!turns.close(), "two turn ends still wait");
        assert!(!turns.end(), "one still waits");
        assert!(turns.end(), "the last one answered: stop");
    }

    #[test]
    fn s1_turn_ends_answering_without_a_close_never_stop() {
        let mut turns = TurnInFlight::default();
        turns.begin();
        assert!(!turns.end());
        turns.begin();
        assert!(!turns.end());
    }
}
