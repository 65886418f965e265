//! The `reconfirm` policy's turn-end side (D4, D5): whether the turn that ended was the
//! final answer, and the catch-up block that makes the host's turn end wait for the
//! advisor, with its backoff and what its end means for the held notes.

use std::time::Duration;

use super::texts::{fill, plural, NOTICES};
use crate::domain::transcript::TranscriptMessage;

/// How long a terminal turn's catch-up block waits at most (D5).
pub const TERMINAL_CATCH_UP: Duration = Duration::from_secs(120);

/// The catch-up waits of non-terminal turns, one per consecutive block; the last repeats (D5).
pub const CATCH_UP_BACKOFF: [Duration; 4] = [
    Duration::from_secs(15),
    Duration::from_secs(30),
    Duration::from_secs(60),
    Duration::from_secs(120),
];

/// True when the turn that just ended was terminal: the transcript's `last` message is an
/// assistant message that calls no tools (D4). Looks at the last message only, so it costs
/// O(1) whatever the session's length.
pub fn turn_was_terminal(last: Option<&TranscriptMessage>) -> bool {
    matches!(last, Some(TranscriptMessage::Assistant(a)) if !a.has_tool_calls())
}

/// True when the turn that just ended was a terminal answer (P1): the transcript's `last`
/// message is an assistant message that stopped normally, calls no tools and has text
/// that is not blank. O(1), like [`turn_was_terminal`].
pub fn turn_was_answer(last: Option<&TranscriptMessage>) -> bool {
    let Some(TranscriptMessage::Assistant(a)) = last else {
        return false;
    };
    let stopped = matches!(a.stop_reason.as_deref(), None | Some("stop"));
    let text = a.content.iter().any(
        |b| matches!(b, crate::domain::transcript::AssistantBlock::Text { text, .. } if !text.trim().is_empty()),
    );
    stopped && text && !a.has_tool_calls()
}

/// Whether the turn that ended is work in progress (§3 Expanded, P1): its assistant message
/// made at least one tool call, so the primary will call its model again. `messages` is the
/// transcript as it stood at the turn end; the scan walks back over the turn's tool results
/// and the advisor's own messages to the turn's assistant message, and stops at the first
/// message of any other kind (no assistant message in the turn: not WIP).
pub fn turn_will_continue(messages: &[std::sync::Arc<TranscriptMessage>]) -> bool {
    for message in messages.iter().rev() {
        match &**message {
            TranscriptMessage::Assistant(a) => return a.has_tool_calls(),
            TranscriptMessage::ToolResult(_) => {}
            m if m.is_advisor_message() => {}
            _ => return false,
        }
    }
    false
}

/// A catch-up block the host's turn end should wait through (D5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CatchUpPlan {
    /// How long to wait at most.
    pub timeout: Duration,
    /// Whether the turn that ended was terminal.
    pub terminal: bool,
    /// Notes held when the block began.
    pub held: usize,
}

impl CatchUpPlan {
    /// The notice telling the user the turn end waits for the advisor (D5).
    pub fn notice(&self) -> String {
        let secs = self.timeout.as_secs().to_string();
        if self.terminal {
            fill(NOTICES.get("catchUpTerminal"), &[("secs", &secs)])
        } else {
            fill(
                NOTICES.get("catchUpHeld"),
                &[
                    ("secs", &secs),
                    ("held", &self.held.to_string()),
                    ("s", plural(self.held)),
                ],
            )
        }
    }
}

/// The notice of a terminal turn whose block ended before the advisor settled: `count`
/// held notes go out unconfirmed (D5).
pub(crate) fn best_effort_notice(count: usize) -> String {
    fill(
        NOTICES.get("bestEffort"),
        &[("count", &count.to_string()), ("s", plural(count))],
    )
}

/// How a catch-up block ended (D5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CatchUpEnd {
    /// The advisor drained its backlog.
    Settled,
    /// The wait hit its bound.
    TimedOut,
    /// The advisor is failing or paused.
    Failed,
    /// The host aborted (or a reset or dispose released the wait).
    Aborted,
}

/// What happens to the held notes when a catch-up block ends (D5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeldRelease {
    /// Deliver the reconfirmed notes; the others stay held.
    Confirmed,
    /// Deliver every held note; `best_effort` when the advisor did not catch up.
    All {
        /// The advisor did not settle: the notes go out unconfirmed, with a notice.
        best_effort: bool,
    },
    /// Deliver nothing; everything stays held.
    Keep,
}

/// The catch-up block's decisions (D5): whether a turn end waits, how long, and what a
/// block's end means for the held notes. Counts consecutive blocks that did not settle.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CatchUp {
    streak: usize,
}

impl CatchUp {
    /// A fresh policy (no block yet).
    pub fn new() -> Self {
        Self::default()
    }

    /// Consecutive non-terminal blocks that ended without the advisor settling.
    #[cfg(test)]
    pub fn streak(&self) -> usize {
        self.streak
    }

    /// Whether a turn end waits, and how long: terminal turns always wait (120 s), other
    /// turns only while notes are held, with a backoff growing per consecutive block.
    pub fn plan(&self, terminal: bool, held: usize) -> Option<CatchUpPlan> {
        let timeout = if terminal {
            TERMINAL_CATCH_UP
        } else if held > 0 {
            CATCH_UP_BACKOFF[self.streak.min(CATCH_UP_BACKOFF.len() - 1)]
        } else {
            return None;
        };
        Some(CatchUpPlan {
            timeout,
            terminal,
            held,
        })
    }

    /// A block ended: settling resets the streak; a mid-run timeout or failure grows it and
    /// keeps the notes; a terminal turn delivers what is held either way; an abort keeps
    /// everything as it is.
    pub fn finish(&mut self, plan: &CatchUpPlan, end: CatchUpEnd) -> HeldRelease {
        match (end, plan.terminal) {
            (CatchUpEnd::Aborted, _) => HeldRelease::Keep,
            (CatchUpEnd::Settled, terminal) => {
                self.streak = 0;
                if terminal {
                    HeldRelease::All { best_effort: false }
                } else {
                    HeldRelease::Confirmed
                }
            }
            (CatchUpEnd::TimedOut | CatchUpEnd::Failed, true) => {
                self.streak = 0;
                HeldRelease::All { best_effort: true }
            }
            (CatchUpEnd::TimedOut | CatchUpEnd::Failed, false) => {
                self.streak += 1;
                HeldRelease::Keep
            }
        }
    }

    /// Forgets the streak (reset, R1).
    pub fn reset(&mut self) {
        self.streak = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::HeldRelease;
    use super::*;
    use crate::delivery::testing::{adv, reconfirm, router, rv};
    use crate::delivery::texts::FINAL_ANSWER as FINAL_ANSWER_NOTE;
    use crate::delivery::{CatchUpEnd, RaiseOutcome};
    use crate::domain::advice::Severity;
    use crate::domain::host::HostEvent;
    use crate::domain::transcript::Transcript;

    #[test]
    fn d5_catch_up_backoff_is_15_30_60_120_120_seconds() {
        let mut c = CatchUp::new();
        let mut waits = Vec::new();
        for _ in 0..5 {
            let plan = c.plan(false, 1).expect("notes held: the turn end waits");
            waits.push(plan.timeout.as_secs());
            assert_eq!(c.finish(&plan, CatchUpEnd::TimedOut), HeldRelease::Keep);
        }
        assert_eq!(waits, vec![15, 30, 60, 120, 120]);
        assert_eq!(c.streak(), 5);
    }

    #[test]
    fn d5_non_terminal_turn_with_nothing_held_does_not_wait() {
        assert_eq!(CatchUp::new().plan(false, 0), None);
    }

    #[test]
    fn d5_terminal_turn_waits_even_with_nothing_held() {
        let plan = CatchUp::new().plan(true, 0).expect("a terminal turn waits");
        assert_eq!(plan.timeout, Duration::from_secs(120));
        assert!(
            plan.notice().contains("before the turn ends"),
            "{}",
            plan.notice()
        );
    }

    #[test]
    fn d5_settled_delivers_the_reconfirmed_and_resets_the_streak() {
        let mut c = CatchUp::new();
        let plan = c.plan(false, 1).unwrap();
        c.finish(&plan, CatchUpEnd::TimedOut);
        c.finish(&plan, CatchUpEnd::Failed);
        assert_eq!(c.streak(), 2);
        let plan = c.plan(false, 1).unwrap();
        assert_eq!(plan.timeout.as_secs(), 60);
        assert!(
            plan.notice().contains("waiting up to 60s"),
            "{}",
            plan.notice()
        );
        assert_eq!(c.finish(&plan, CatchUpEnd::Settled), HeldRelease::Confirmed);
        assert_eq!(c.streak(), 0);
        assert_eq!(c.plan(false, 1).unwrap().timeout.as_secs(), 15);
    }

    #[test]
    fn d5_terminal_settle_delivers_all_and_timeout_delivers_best_effort() {
        let mut c = CatchUp::new();
        let plan = c.plan(true, 1).unwrap();
        assert_eq!(
            c.finish(&plan, CatchUpEnd::Settled),
            HeldRelease::All { best_effort: false }
        );
        assert_eq!(
            c.finish(&plan, CatchUpEnd::TimedOut),
            HeldRelease::All { best_effort: true }
        );
        assert_eq!(
            c.finish(&plan, CatchUpEnd::Failed),
            HeldRelease::All { best_effort: true }
        );
    }

    #[test]
    fn d5_abort_keeps_the_notes_and_the_streak() {
        let mut c = CatchUp::new();
        let plan = c.plan(false, 1).unwrap();
        c.finish(&plan, CatchUpEnd::TimedOut);
        assert_eq!(c.finish(&plan, CatchUpEnd::Aborted), HeldRelease::Keep);
        let terminal = c.plan(true, 1).unwrap();
        assert_eq!(c.finish(&terminal, CatchUpEnd::Aborted), HeldRelease::Keep);
        assert_eq!(c.streak(), 1);
    }

    #[test]
    fn d4_terminal_turn_is_read_from_the_last_message_only() {
        let answer = |calls: bool| TranscriptMessage::test_assistant("done", calls, None);
        let last = |t: &Transcript| t.mark().last();
        assert!(!turn_was_terminal(last(&Transcript::new()).as_deref()));
        let t = Transcript::from_messages([TranscriptMessage::user("go"), answer(true)]);
        assert!(!turn_was_terminal(last(&t).as_deref()));
        t.push(answer(false));
        assert!(turn_was_terminal(last(&t).as_deref()));
        t.push(TranscriptMessage::user("more"));
        assert!(!turn_was_terminal(last(&t).as_deref()));
    }

    fn assistant(text: &str, calls: bool, stop: Option<&str>) -> TranscriptMessage {
        TranscriptMessage::test_assistant(text, calls, stop)
    }

    fn tool_result() -> TranscriptMessage {
        use crate::domain::transcript::{Content, ToolResultMessage};
        TranscriptMessage::ToolResult(ToolResultMessage {
            tool_call_id: "1".into(),
            tool_name: "read".into(),
            content: Content::Text("ok".into()),
            is_error: false,
            details: None,
        })
    }

    #[test]
    fn p1_a_turn_is_wip_when_its_assistant_message_made_a_tool_call() {
        use crate::domain::advice::{Advisory, Channel, Delivery};
        let wip = |t: &Transcript| t.mark().read(turn_will_continue).unwrap();
        let t = Transcript::from_messages([TranscriptMessage::user("go")]);
        assert!(!wip(&t), "no assistant message in the turn");
        t.push(assistant("reading", true, Some("toolUse")));
        assert!(wip(&t));
        t.push(tool_result());
        let card = Delivery::new(Channel::Aside, vec![Advisory::new("x", None)], None);
        t.push(card.to_message());
        assert!(
            wip(&t),
            "tool results and advice after the call keep it WIP"
        );
        t.push(assistant("all done", false, Some("stop")));
        assert!(!wip(&t), "a final answer");
        t.push(TranscriptMessage::user("next"));
        assert!(!wip(&t));
    }

    #[test]
    fn p1_a_terminal_answer_stopped_with_text_and_no_tool_calls() {
        let answer = |m: TranscriptMessage| turn_was_answer(Some(&m));
        assert!(answer(assistant("done", false, Some("stop"))));
        assert!(answer(assistant("done", false, None)));
        assert!(!answer(assistant("  ", false, Some("stop"))), "blank text");
        assert!(!answer(assistant("done", true, Some("toolUse"))));
        assert!(!answer(assistant("done", false, Some("length"))));
        assert!(!answer(tool_result()));
        assert!(!turn_was_answer(None));
    }

    #[test]
    fn d4_concern_and_blocker_are_held_on_first_emission() {
        let mut r = reconfirm();
        r.run_state(true);
        let (outcome, events) = r.raise(&rv(0, 1), adv("wrong table", Some(Severity::Blocker)));
        assert_eq!(outcome, RaiseOutcome::Held);
        assert_eq!(outcome.tool_text(2), "Held pending reconfirmation.");
        assert!(events.is_empty());
        assert!(r.step_boundary().is_empty());
        assert_eq!((r.counts().held, r.counts().raised()), (1, 1));
        assert_eq!(r.held().len(), 1);
    }

    #[test]
    fn d4_nits_go_out_at_once_tagged_as_about_an_earlier_step() {
        let mut r = reconfirm();
        r.run_state(true);
        assert_eq!(
            r.raise(&rv(0, 1), adv("rename tmp", Some(Severity::Nit))).0,
            RaiseOutcome::Recorded
        );
        let aside = r.step_boundary().aside.expect("the nit");
        assert!(
            aside
                .content
                .contains("context=\"raised about an earlier step\""),
            "{}",
            aside.content
        );
        assert!(!aside.content.contains(FINAL_ANSWER_NOTE));
    }

    #[test]
    fn d4_advice_after_a_terminal_turn_carries_the_final_answer_note() {
        let mut r = reconfirm();
        r.run_state(true);
        assert_eq!(r.turn_ended(true, true).map(|p| p.held), Some(0));
        r.raise(&rv(0, 1), adv("the answer skips the error case", None));
        let aside = r.step_boundary().aside.unwrap();
        assert!(
            aside.content.ends_with(FINAL_ANSWER_NOTE),
            "{}",
            aside.content
        );
        // A new run has no terminal turn behind it.
        r.run_state(true);
        r.raise(&rv(0, 2), adv("another nit", None));
        assert!(!r
            .step_boundary()
            .aside
            .unwrap()
            .content
            .contains(FINAL_ANSWER_NOTE));
        // The interrupt policy never adds it.
        let mut i = router();
        i.turn_ended(true, true);
        i.raise(&rv(0, 1), adv("a nit", None));
        let aside = i.step_boundary().aside.unwrap();
        assert!(!aside.content.contains(FINAL_ANSWER_NOTE) && !aside.content.contains("context="));
    }

    #[test]
    fn d5_settled_block_delivers_reconfirmed_notes_one_message_each() {
        let mut r = reconfirm();
        r.run_state(true);
        r.raise(&rv(0, 1), adv("first", Some(Severity::Blocker)));
        r.raise(&rv(0, 1), adv("second", Some(Severity::Concern)));
        r.held_preamble(&rv(0, 2));
        r.raise(&rv(0, 2), adv("first", Some(Severity::Blocker)));
        r.raise(&rv(0, 2), adv("second", Some(Severity::Concern)));
        r.raise(&rv(0, 2), adv("third", Some(Severity::Blocker)));
        r.review_succeeded(&rv(0, 2));
        let plan = r.turn_ended(false, true).expect("notes held");
        assert_eq!(plan.held, 3);
        let events = r.catch_up_finished(&plan, CatchUpEnd::Settled);
        assert_eq!(events, vec![HostEvent::SteerReady, HostEvent::SteerReady]);
        let step = r.step_boundary();
        assert_eq!(step.steers.len(), 2);
        assert!(step.steers[0]
            .content
            .contains("context=\"raised about an earlier step\""));
        assert_eq!(r.held().len(), 1, "the unconfirmed third stays held");
        assert_eq!(r.counts().held, 1);
    }

    #[test]
    fn d5_terminal_timeout_delivers_held_notes_best_effort_with_a_notice() {
        let mut r = reconfirm();
        r.raise(&rv(0, 1), adv("unconfirmed", Some(Severity::Blocker)));
        let plan = r.turn_ended(true, true).unwrap();
        let events = r.catch_up_finished(&plan, CatchUpEnd::TimedOut);
        match &events[..] {
            [HostEvent::Notice { text, .. }, HostEvent::Wake { card }] => {
                assert!(text.contains("1 held note unconfirmed"), "{text}");
                assert!(card.content.ends_with(FINAL_ANSWER_NOTE));
            }
            other => panic!("expected a notice and a wake, got {other:?}"),
        }
        assert!(r.held().is_empty());
    }
}
