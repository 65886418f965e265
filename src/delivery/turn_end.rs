//! What a primary turn end sets in motion, decided in plain code; the supervisor only
//! carries it out. From the transcript as the turn left it: whether the turn was terminal
//! (D4) or a final answer, whether it is work in progress (P1, the host's word first);
//! once per branch change, the advisories the branch already holds to seed the emission
//! guard with (P3); and whether an advisor runs to observe the turn and be waited for (S1),
//! or only the router counts the turn end (D7).

use super::catch_up::{turn_was_answer, turn_was_terminal, turn_will_continue};
use super::guard::branch_advisories;
use super::window::{LastPrompt, PromptCursor};
use crate::domain::advice::Advisory;
use crate::domain::transcript::TranscriptMark;

/// The plan of one primary turn end.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnEndPlan {
    /// The turn's last assistant message called no tools (D4).
    pub terminal: bool,
    /// The turn ended with a final answer (P1).
    pub answered: bool,
    /// The primary will call its model again in this run (P1).
    pub wip: bool,
    /// A final boundary that opens the merged-delivery window (CA13): not WIP, and the turn
    /// ended in an assistant message without tool calls or the host said the run stops. A
    /// turn end the host reports before its model answered opens none.
    pub window: bool,
    /// P3: the advisories of the branch, when the guard is to be seeded at this turn end.
    pub seed_guard: Option<Vec<Advisory>>,
    /// An advisor runs: the feed observes the turn and the host's turn end may wait for its
    /// review (S1). Otherwise the router alone hears of the turn end (D7 counts it).
    pub review: bool,
    /// The transcript's last genuine user prompt (CA17).
    pub last_prompt: LastPrompt,
}

impl TurnEndPlan {
    /// Decides the turn end of `transcript`. `will_continue` is the host's word on P1's
    /// work in progress (`None`: the turn's assistant message made a tool call);
    /// `seed_guard` is set after a branch change; `running` says an advisor is enabled
    /// and running. The terminal and answer checks read the last message only (O(1)); the
    /// seed reads the branch (O(branch)), once per branch change; the last user prompt is
    /// kept by `prompts`, which looks only at the messages since the last turn end.
    pub fn decide(
        transcript: &TranscriptMark,
        will_continue: Option<bool>,
        seed_guard: bool,
        running: bool,
        prompts: &mut PromptCursor,
    ) -> Self {
        let last = transcript.last();
        let wip =
            will_continue.unwrap_or_else(|| transcript.read(turn_will_continue).unwrap_or(false));
        let terminal = turn_was_terminal(last.as_deref());
        TurnEndPlan {
            window: !wip && (terminal || will_continue == Some(false)),
            terminal,
            answered: turn_was_answer(last.as_deref()),
            wip,
            seed_guard: seed_guard.then(|| transcript.read(branch_advisories).unwrap_or_default()),
            review: running,
            last_prompt: transcript
                .read(|messages| prompts.observe(messages))
                .unwrap_or_default(),
        }
    }
}

/// The `PrimaryTurnEnded` calls still waiting (S1) and whether a close was asked for
/// meanwhile: a close lets them answer first (R2).
#[derive(Debug, Default)]
pub struct TurnInFlight {
    waiting: usize,
    closing: bool,
}

impl TurnInFlight {
    /// A turn end starts waiting.
    pub fn begin(&mut self) {
        self.waiting += 1;
    }

    /// A waiting turn end answered; true when the supervisor should stop now (a close was
    /// asked for and it was the last one).
    pub fn end(&mut self) -> bool {
        self.waiting = self.waiting.saturating_sub(1);
        self.closing && self.waiting == 0
    }

    /// A close was asked for; true when the supervisor may stop at once (nothing waits).
    pub fn close(&mut self) -> bool {
        self.closing = true;
        self.waiting == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::advice::{Channel, Delivery, Severity};
    use crate::domain::transcript::{Transcript, TranscriptMessage};

    fn assistant(text: &str, calls: bool) -> TranscriptMessage {
        let stop = if calls { "toolUse" } else { "stop" };
        TranscriptMessage::test_assistant(text, calls, Some(stop))
    }

    #[test]
    fn d4_p1_a_final_answer_is_terminal_answered_and_not_wip() {
        let t =
            Transcript::from_messages([TranscriptMessage::user("go"), assistant("done", false)]);
        let plan = TurnEndPlan::decide(&t.mark(), None, false, true, &mut PromptCursor::default());
        assert!(plan.terminal && plan.answered && !plan.wip && plan.review);
        assert_eq!(plan.seed_guard, None);
    }

    #[test]
    fn p1_a_tool_call_is_wip_unless_the_host_says_otherwise() {
        let t =
            Transcript::from_messages([TranscriptMessage::user("go"), assistant("reading", true)]);
        let derived =
            TurnEndPlan::decide(&t.mark(), None, false, true, &mut PromptCursor::default());
        assert!(derived.wip && !derived.terminal && !derived.answered);
        let told = TurnEndPlan::decide(
            &t.mark(),
            Some(false),
            false,
            true,
            &mut PromptCursor::default(),
        );
        assert!(!told.wip);
    }

    #[test]
    fn p3_the_guard_is_seeded_with_the_branch_s_advisories_only_when_asked() {
        let card = Delivery::new(
            Channel::Card,
            vec![crate::domain::advice::Advisory::new(
                "Check the null case",
                Some(Severity::Concern),
            )],
            None,
        );
        let t = Transcript::from_messages([
            TranscriptMessage::user("go"),
            card.to_message(),
            assistant("done", false),
        ]);
        let seeded = TurnEndPlan::decide(&t.mark(), None, true, true, &mut PromptCursor::default());
        let notes: Vec<_> = seeded
            .seed_guard
            .expect("seeded")
            .into_iter()
            .map(|a| a.note)
            .collect();
        assert_eq!(notes, ["Check the null case"]);
        assert_eq!(
            TurnEndPlan::decide(&t.mark(), None, false, true, &mut PromptCursor::default())
                .seed_guard,
            None
        );
    }

    #[test]
    fn d7_with_no_advisor_running_the_turn_end_is_only_counted() {
        let t = Transcript::from_messages([TranscriptMessage::user("go")]);
        let plan = TurnEndPlan::decide(&t.mark(), None, false, false, &mut PromptCursor::default());
        assert!(!plan.review && !plan.terminal && !plan.wip);
    }

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
