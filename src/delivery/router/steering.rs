//! D3, D6, D7, SP3, P3: the run state that decides how a concern or blocker reaches the
//! primary — whether it runs, the user-interrupt latch, a branch change's replay, a terminal
//! answer behind it, the immune turns after an interrupting delivery and the wakes left
//! until the next user prompt.

use crate::delivery::lane::WakeLimit;
use crate::delivery::texts::{EARLIER_STEP, FINAL_ANSWER};
use crate::delivery::window::qualifies;
use crate::domain::advice::{Advisory, Channel, Delivery, Severity};
use crate::settings::{DeliveryPolicy, ReviewMode};

/// The primary's run state as the router's channels see it.
#[derive(Debug, Clone)]
pub(super) struct Steering {
    /// The primary runs: a concern steers (D3).
    running: bool,
    /// The user-interrupt latch (D6): interrupting notes become cards.
    suppressed: bool,
    /// A branch change replayed the transcript (P3): until the next user prompt, concerns
    /// and blockers are cards, never wakes.
    replayed: bool,
    /// From a final boundary whose turn was a terminal answer until the next run starts
    /// (P1, CA18).
    answered: bool,
    /// The last turn was the final answer (D4).
    last_turn_terminal: bool,
    /// The turns an interrupting delivery makes immune (D7); 0: immunity off.
    immune_turns: u32,
    /// The immune turns left.
    immune_left: u32,
    /// The advisor-started wakes since the last user prompt (SP3).
    wakes: WakeLimit,
    /// SP3's wake limit applies (`advisor.spendControls`).
    bounded: bool,
}

impl Steering {
    /// An idle primary, nothing latched, `immune_turns` after an interrupting delivery.
    pub(super) fn new(immune_turns: u32) -> Self {
        Self {
            running: false,
            suppressed: false,
            replayed: false,
            answered: false,
            last_turn_terminal: false,
            immune_turns,
            immune_left: 0,
            wakes: WakeLimit::default(),
            bounded: true,
        }
    }

    /// Sets the immune turns after an interrupting delivery (D7).
    pub(super) fn set_immune_turns(&mut self, turns: u32) {
        self.immune_turns = turns;
    }

    /// Turns SP3's wake limit on or off.
    pub(super) fn bound_wakes(&mut self, on: bool) {
        self.bounded = on;
    }

    /// Whether concerns go out as asides now (D7).
    pub(super) fn immune(&self) -> bool {
        self.immune_left > 0
    }

    /// Whether the user-interrupt latch is set (D6).
    pub(super) fn suppressed(&self) -> bool {
        self.suppressed
    }

    /// Whether the primary runs.
    pub(super) fn running(&self) -> bool {
        self.running
    }

    /// Sets whether the last boundary's turn was a terminal answer (P1).
    pub(super) fn set_answered(&mut self, answered: bool) {
        self.answered = answered;
    }

    /// Whether a note may start a continuation: neither the latch (D6) nor a replay (P3)
    /// holds.
    pub(super) fn may_continue(&self) -> bool {
        !self.suppressed && !self.replayed
    }

    /// The channel a concern or blocker takes now (D3, D6, P3).
    pub(super) fn interrupt_channel(&self) -> Channel {
        if self.suppressed || self.replayed {
            Channel::Card
        } else if self.running {
            Channel::Steer
        } else {
            Channel::Wake
        }
    }

    /// The channel a note takes now under its advisor's `policy` and review `mode`: under
    /// `interrupt` and `reconfirm` as D3 says, under `defer` as P1 and CA18 say; D6, D7 and
    /// a branch change's replay (P3) on top.
    pub(super) fn channel(
        &self,
        policy: DeliveryPolicy,
        mode: ReviewMode,
        severity: Severity,
    ) -> Channel {
        let immune_concern = severity == Severity::Concern && self.immune();
        if policy != DeliveryPolicy::Defer {
            if !severity.interrupts() || immune_concern {
                return Channel::Aside;
            }
            return self.interrupt_channel();
        }
        if self.answered && severity != Severity::Blocker {
            // CA18: after a terminal answer an `agent-end` advisor's concern (outside the
            // immune turns) starts one continuation; other nits and concerns are visible
            // and start no turn.
            if qualifies(severity, mode, self.immune()) {
                return self.interrupt_channel();
            }
            return Channel::Card;
        }
        if severity == Severity::Nit || immune_concern {
            Channel::Aside
        } else {
            self.interrupt_channel()
        }
    }

    /// The channel a waiting note would be shown on now ([`Steering::channel`]), a wake as
    /// a card when none is left (SP3).
    pub(super) fn shown(
        &self,
        policy: DeliveryPolicy,
        mode: ReviewMode,
        severity: Severity,
    ) -> Channel {
        match self.channel(policy, mode, severity) {
            Channel::Wake if self.wakes.spent() => Channel::Card,
            other => other,
        }
    }

    /// A delivery of `notes`, each with its advisor's policy: under `reconfirm` a note
    /// carries the `context` attribute, and after a terminal turn the delivery the
    /// final-answer note (D4). One policy for all gives what the one-advisor router gave.
    pub(super) fn delivery(
        &self,
        channel: Channel,
        notes: Vec<(Advisory, DeliveryPolicy)>,
    ) -> Delivery {
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

    /// The primary started (a new run has no terminal turn behind it, D4) or went idle;
    /// going idle answers the channel the outbox's steers take: a wake, or a card while the
    /// latch is set.
    pub(super) fn run_state(&mut self, running: bool) -> Option<Channel> {
        self.running = running;
        if running {
            self.last_turn_terminal = false;
            self.answered = false;
            return None;
        }
        Some(if self.suppressed {
            Channel::Card
        } else {
            Channel::Wake
        })
    }

    /// A user interrupt latches suppression (D6).
    pub(super) fn latch(&mut self) {
        self.suppressed = true;
    }

    /// A branch change replays the transcript (P3).
    pub(super) fn replay(&mut self) {
        self.replayed = true;
    }

    /// A user prompt clears the latch (D6), ends a replay (P3) and allows the wakes again
    /// (SP3).
    pub(super) fn user_prompt(&mut self) {
        self.suppressed = false;
        self.replayed = false;
        self.wakes.user_prompted();
    }

    /// Another conversation begins: its immune turns start over (CA19).
    pub(super) fn new_conversation(&mut self) {
        self.immune_left = 0;
    }

    /// A primary turn ended (`terminal`: the final answer): one immune turn is used (D7).
    pub(super) fn turn_ended(&mut self, terminal: bool) {
        self.last_turn_terminal = terminal;
        self.immune_left = self.immune_left.saturating_sub(1);
    }

    /// `n` notes went out on `channel`: a steer or wake makes the turn in progress and the
    /// next `immune_turns` turn ends immune (D7, session-wide).
    pub(super) fn delivered(&mut self, channel: Channel, n: u64) {
        if n > 0 && matches!(channel, Channel::Steer | Channel::Wake) && self.immune_turns > 0 {
            self.immune_left = self.immune_turns + 1;
        }
    }

    /// Takes a wake (SP3): true when one is left (used now) or the limit is off.
    pub(super) fn take_wake(&mut self) -> bool {
        !self.bounded || self.wakes.take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn d3_d6_p3_a_concern_steers_a_run_wakes_an_idle_primary_and_is_a_card_when_latched() {
        let mut s = Steering::new(3);
        assert_eq!(s.interrupt_channel(), Channel::Wake);
        assert_eq!(s.run_state(true), None);
        assert_eq!(s.interrupt_channel(), Channel::Steer);
        s.latch();
        assert_eq!(s.interrupt_channel(), Channel::Card);
        assert_eq!(
            s.run_state(false),
            Some(Channel::Card),
            "A5: latched, steers are cards"
        );
        s.user_prompt();
        assert_eq!(s.run_state(false), Some(Channel::Wake));
        s.replay();
        assert!(!s.may_continue());
        assert_eq!(s.interrupt_channel(), Channel::Card);
        s.user_prompt();
        assert!(s.may_continue());
    }

    #[test]
    fn d7_an_interrupting_delivery_makes_the_turn_in_progress_and_the_next_ones_immune() {
        let mut s = Steering::new(2);
        s.delivered(Channel::Aside, 1);
        assert!(!s.immune(), "an aside interrupts nothing");
        s.delivered(Channel::Wake, 1);
        for _ in 0..3 {
            assert!(s.immune());
            s.turn_ended(false);
        }
        assert!(!s.immune());
        let mut off = Steering::new(0);
        off.delivered(Channel::Steer, 1);
        assert!(!off.immune(), "0 immune turns: immunity off");
    }

    #[test]
    fn sp3_two_wakes_per_user_prompt_unless_the_limit_is_off() {
        let mut s = Steering::new(3);
        assert!(s.take_wake() && s.take_wake());
        assert!(!s.take_wake());
        s.user_prompt();
        assert!(s.take_wake());
        s.bound_wakes(false);
        assert!((0..5).all(|_| s.take_wake()));
    }
}
