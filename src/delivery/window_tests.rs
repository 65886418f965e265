//! The final-boundary window and its merged delivery through the router's state (CA13–CA20,
//! CA-S4, CA-S5, CA-S6, CA-S11).

use std::sync::Arc;

use super::router::TurnEndPlanned;
use super::testing::{adv, defer, router, rv};
use super::window::{LastPrompt, GUIDANCE};
use super::ReviewRef;
use super::{DropReason, RaiseOutcome, RouterState};
use crate::domain::advice::{AdvisorLabel, Advisory, Channel, Delivery, Severity};
use crate::domain::host::HostEvent;
use crate::domain::transcript::TranscriptMessage;
use crate::settings::{DeliveryPolicy, ReviewMode};

/// The last genuine user prompt of a transcript whose prompt was `text`.
fn prompt(text: &str) -> LastPrompt {
    LastPrompt::of(&[Arc::new(TranscriptMessage::user(text))])
}

/// One primary turn end under `p`, the unnamed advisor in `mode`: a terminal answer when
/// `answered`, work in progress when `wip`.
fn turn_in(
    r: &mut RouterState,
    wip: bool,
    answered: bool,
    p: &LastPrompt,
    mode: ReviewMode,
) -> (Vec<HostEvent>, TurnEndPlanned) {
    r.plan_turn_end(answered, wip, answered, true, true, p.clone(), mode)
}

/// [`turn_in`] with the unnamed advisor in `turn` mode.
fn turn(
    r: &mut RouterState,
    wip: bool,
    answered: bool,
    p: &LastPrompt,
) -> (Vec<HostEvent>, TurnEndPlanned) {
    turn_in(r, wip, answered, p, ReviewMode::Turn)
}

/// The one delivery of `events` that reaches the primary by itself (wake or card).
fn only_delivery(events: &[HostEvent]) -> &Delivery {
    match events {
        [HostEvent::Wake { card }] | [HostEvent::Card { card }] => card,
        other => panic!("expected one wake or card, got {other:?}"),
    }
}

fn named(who: &AdvisorLabel, note: &str, sev: Severity) -> Advisory {
    adv(note, Some(sev)).with_advisor(&*who.name)
}

/// The `<advisory>` element CA14 prescribes, without `turns_ago` when `ago` is 0.
fn element(advisor: &str, severity: &str, ago: u64, note: &str) -> String {
    let ago = if ago > 0 {
        format!(" turns_ago=\"{ago}\"")
    } else {
        String::new()
    };
    format!(
        "<advisory advisor=\"{advisor}\" severity=\"{severity}\"{ago} guidance=\"weigh, don't blindly obey\">\n{note}\n</advisory>"
    )
}

#[test]
fn ca13_inside_the_window_every_note_is_buffered_whatever_its_severity_and_policy() {
    for policy in [DeliveryPolicy::Interrupt, DeliveryPolicy::Defer] {
        let mut r = RouterState::new(policy, 4).with_immune_turns(0);
        r.run_state(true);
        let p = prompt("fix the parser");
        let (events, planned) = turn(&mut r, false, false, &p);
        assert!(events.is_empty());
        let window = planned.window.expect("a final boundary opens a window");
        r.review_batch(&rv(0, 1), 1, false);
        for (note, sev) in [
            ("tidy the names", Severity::Nit),
            ("the cache is never invalidated", Severity::Concern),
            ("the build is broken", Severity::Blocker),
        ] {
            let (_, events) = r.raise(&rv(0, 1), adv(note, Some(sev)));
            assert!(events.is_empty(), "{policy:?}: {note} went out: {events:?}");
        }
        assert_eq!(r.counts().pending, 3, "{policy:?}: buffered notes wait");
        assert!(r.step_boundary().is_empty(), "{policy:?}: nothing taken");
        let events = r.close_window(window);
        assert_eq!(events, vec![HostEvent::SteerReady], "{policy:?}");
        let steers = r.step_boundary().steers;
        assert_eq!(steers.len(), 1, "{policy:?}: one message");
        assert_eq!(steers[0].notes.len(), 3, "{policy:?}");
        assert_eq!(r.counts().steer, 3, "{policy:?}: each note counted (D10)");
        assert_eq!(r.counts().pending, 0, "{policy:?}");
        // Closing it again, or after a later turn end closed it, does nothing.
        assert!(r.close_window(window).is_empty());
        // Outside the window the old routing holds: a blocker steers at once, a nit is an
        // aside, and a WIP boundary opens no window.
        let (_, planned) = turn(&mut r, true, false, &p);
        assert_eq!(planned.window, None, "{policy:?}");
        r.review_batch(&rv(0, 2), 1, false);
        let (_, events) = r.raise(
            &rv(0, 2),
            adv("the test deletes $HOME", Some(Severity::Blocker)),
        );
        assert_eq!(events, vec![HostEvent::SteerReady], "{policy:?}");
        r.raise(&rv(0, 2), adv("prefer iter()", Some(Severity::Nit)));
        assert!(r.step_boundary().aside.is_some(), "{policy:?}");
    }
}

#[test]
fn ca13_a_turn_end_a_host_did_not_wait_for_closes_at_the_next_one_and_a_reset_drops_its_notes() {
    let mut r = router();
    let p = prompt("go");
    let (_, first) = turn(&mut r, false, true, &p);
    r.review_batch(&rv(0, 1), 1, false);
    r.raise(&rv(0, 1), adv("rename the flag", None));
    // The next turn end comes before the first window was closed: it goes out first.
    let (events, second) = turn(&mut r, false, true, &p);
    assert_eq!(only_delivery(&events).notes[0].note, "rename the flag");
    assert!(
        r.close_window(first.window.unwrap()).is_empty(),
        "stale close"
    );
    r.review_batch(&rv(0, 2), 1, false);
    r.raise(&rv(0, 2), adv("add a test", None));
    r.reset(1);
    assert_eq!(r.counts().dropped.get(&DropReason::Reset), Some(&1));
    assert_eq!(r.counts().pending, 0);
    assert!(r.close_window(second.window.unwrap()).is_empty());
}

/// CA-S4: A (turn) and B (agent-end); A's review of WIP `TurnEnd` 2 defers nit n2; at the
/// final `TurnEnd` 4 A raises concern cA, B blocker bB then nit nB: one message, guidance,
/// bB, cA, nB, then n2 with `turns_ago="2"`; one continuation; CA19 armed with K = 4.
#[test]
fn ca14_ca_s4_one_merged_message_newest_turn_first_then_severity_then_routing_order() {
    let (a, b) = (AdvisorLabel::new("a", "A"), AdvisorLabel::new("b", "B"));
    let mut r = defer().with_immune_turns(3);
    r.register_advisor(&a, None, 4, Severity::Blocker, ReviewMode::Turn);
    r.register_advisor(&b, None, 4, Severity::Blocker, ReviewMode::AgentEnd);
    let p = prompt("add the endpoint");
    r.run_state(true);
    turn(&mut r, true, false, &p);
    turn(&mut r, true, false, &p);
    r.review_batch(&ReviewRef::new(Some(a.clone()), 0, 1), 1, true);
    let (outcome, _) = r.raise(
        &ReviewRef::new(Some(a.clone()), 0, 1),
        named(&a, "n2", Severity::Nit),
    );
    assert_eq!(outcome, RaiseOutcome::Deferred);
    turn(&mut r, true, false, &p);
    let (events, planned) = turn(&mut r, false, true, &p);
    assert!(events.is_empty(), "released into the window (CA20)");
    r.run_state(false);
    r.review_batch(&ReviewRef::new(Some(a.clone()), 0, 2), 1, false);
    r.review_batch(&ReviewRef::new(Some(b.clone()), 0, 1), 3, false);
    for (who, review, note, sev) in [
        (&a, 2, "cA", Severity::Concern),
        (&b, 1, "bB", Severity::Blocker),
        (&b, 1, "nB", Severity::Nit),
    ] {
        let (_, events) = r.raise(
            &ReviewRef::new(Some(who.clone()), 0, review),
            named(who, note, sev),
        );
        assert!(events.is_empty(), "{note} buffered");
    }
    let events = r.close_window(planned.window.unwrap());
    let wakes: Vec<&Delivery> = events
        .iter()
        .filter_map(|e| match e {
            HostEvent::Wake { card } => Some(card),
            _ => None,
        })
        .collect();
    assert_eq!(events.len(), 1, "exactly one continuation: {events:?}");
    assert_eq!(wakes.len(), 1);
    let expected = [
        GUIDANCE.to_string(),
        element("B", "blocker", 0, "bB"),
        element("A", "concern", 0, "cA"),
        element("B", "nit", 0, "nB"),
        element("A", "nit", 2, "n2"),
    ]
    .join("\n");
    assert_eq!(wakes[0].content, expected);
    let ago: Vec<Option<u64>> = wakes[0].notes.iter().map(|n| n.turns_ago).collect();
    assert_eq!(ago, [Some(0), Some(0), Some(0), Some(2)]);
    // CA19: K = 4; concerns are asides while T < 4 + 1 + 3.
    for _ in 5..=7 {
        turn(&mut r, true, false, &p);
        assert!(r.immune());
    }
    turn(&mut r, true, false, &p);
    assert!(!r.immune(), "T = 8 is past the immune window");
}

#[test]
fn ca14_a_note_keeps_its_covered_turn_and_the_details_carry_turns_ago() {
    let mut r = defer();
    let p = prompt("go");
    turn(&mut r, true, false, &p);
    r.review_batch(&rv(0, 1), 1, true);
    r.raise(&rv(0, 1), adv("a & b < c", Some(Severity::Concern)));
    turn(&mut r, true, false, &p);
    turn(&mut r, true, false, &p);
    let (_, planned) = turn(&mut r, false, true, &p);
    let events = r.close_window(planned.window.unwrap());
    let card = only_delivery(&events);
    assert_eq!(
        card.content,
        format!(
            "{GUIDANCE}\n<advisory severity=\"concern\" turns_ago=\"3\" guidance=\"weigh, don't blindly obey\">\na &amp; b &lt; c\n</advisory>"
        )
    );
    let details = card.to_message();
    let crate::domain::transcript::TranscriptMessage::Custom(custom) = details else {
        panic!("a custom message");
    };
    assert_eq!(custom.custom_type, "advisor");
    assert_eq!(custom.details.unwrap().to_value()[0]["turnsAgo"], 3);
}

/// CA-S5: merged deliveries at T = 6, 30, 56, 57: only 6 and 56 carry the guidance; after
/// another conversation begins the next one (T = 3) carries it again.
#[test]
fn ca15_ca_s5_guidance_on_the_first_merged_delivery_then_every_fifty_turns() {
    let mut r = router();
    let p = prompt("go");
    let mut review = 0;
    let mut shown = Vec::new();
    let mut deliver_at = |r: &mut RouterState, t: u64, epoch: u64| {
        review += 1;
        let (_, planned) = turn(r, false, true, &p);
        r.review_batch(&rv(epoch, review), 1, false);
        r.raise(&rv(epoch, review), adv(&format!("nit at {t}"), None));
        let events = r.close_window(planned.window.unwrap());
        only_delivery(&events).content.starts_with(GUIDANCE)
    };
    for t in 1..=57u64 {
        if [6, 30, 56, 57].contains(&t) {
            shown.push((t, deliver_at(&mut r, t, 0)));
        } else {
            turn(&mut r, true, false, &p);
        }
    }
    assert_eq!(shown, [(6, true), (30, false), (56, true), (57, false)]);
    // `/new`: another conversation.
    r.reset_branch(1);
    r.new_conversation();
    turn(&mut r, true, false, &p);
    turn(&mut r, true, false, &p);
    assert!(deliver_at(&mut r, 3, 1), "T = 3 of the new conversation");
    // A live (unmerged) delivery never carries it.
    r.user_prompt();
    r.run_state(true);
    let (_, events) = r.raise(&rv(1, 99), adv("live blocker", Some(Severity::Blocker)));
    assert_eq!(events, vec![HostEvent::SteerReady]);
    assert!(!r.step_boundary().steers[0].content.contains(GUIDANCE));
}

#[test]
fn ca16_at_most_one_continuation_a_steer_while_the_run_takes_steering_else_one_wake() {
    // Two advisors' blockers: one wake.
    let (a, b) = (AdvisorLabel::new("a", "A"), AdvisorLabel::new("b", "B"));
    let mut r = router();
    let p = prompt("go");
    let (_, planned) = turn(&mut r, false, true, &p);
    r.review_batch(&ReviewRef::new(Some(a.clone()), 0, 1), 1, false);
    r.review_batch(&ReviewRef::new(Some(b.clone()), 0, 1), 1, false);
    r.raise(
        &ReviewRef::new(Some(a.clone()), 0, 1),
        named(&a, "tests fail", Severity::Blocker),
    );
    r.raise(
        &ReviewRef::new(Some(b.clone()), 0, 1),
        named(&b, "secret in log", Severity::Blocker),
    );
    let events = r.close_window(planned.window.unwrap());
    assert_eq!(only_delivery(&events).channel, Channel::Wake);
    assert_eq!(only_delivery(&events).notes.len(), 2);
    assert_eq!(r.counts().wake, 2);
    // The run still takes steering: one steer with both.
    let mut r = router();
    r.run_state(true);
    let (_, planned) = turn(&mut r, false, true, &p);
    r.review_batch(&rv(0, 1), 1, false);
    r.raise(&rv(0, 1), adv("tests fail", Some(Severity::Blocker)));
    r.raise(&rv(0, 1), adv("rename", None));
    assert_eq!(
        r.close_window(planned.window.unwrap()),
        vec![HostEvent::SteerReady]
    );
    let steers = r.step_boundary().steers;
    assert_eq!(steers.len(), 1);
    assert_eq!(steers[0].notes.len(), 2);
    assert_eq!(r.counts().steer, 2);
    assert_eq!(r.counts().pending, 0);
}

#[test]
fn sp3_ca16_a_merged_wake_counts_toward_the_two_wakes_per_user_prompt() {
    let p = prompt("go");
    // Two wakes spent by blockers raised while the primary is idle (outside any window),
    // then a final boundary's merged blocker: a card, counted refused.
    let mut r = router();
    r.run_state(false);
    for (review, note) in [
        (1, "first: the tests are deleted"),
        (2, "second: the tag moved"),
    ] {
        let (_, events) = r.raise(&rv(0, review), adv(note, Some(Severity::Blocker)));
        assert!(matches!(events[..], [HostEvent::Wake { .. }]), "{events:?}");
    }
    let (_, planned) = turn(&mut r, false, true, &p);
    r.review_batch(&rv(0, 3), 1, false);
    r.raise(
        &rv(0, 3),
        adv("third: the secret is logged", Some(Severity::Blocker)),
    );
    let events = r.close_window(planned.window.unwrap());
    assert_eq!(only_delivery(&events).channel, Channel::Card);
    assert_eq!((r.counts().wake, r.counts().wakes_refused), (2, 1));
    assert!(!r.marked(), "a refused wake starts no continuation");
    // The other way round: a merged wake spends one, so only one raised wake is left.
    let mut r = router();
    r.run_state(false);
    let (_, planned) = turn(&mut r, false, true, &p);
    r.review_batch(&rv(0, 1), 1, false);
    r.raise(
        &rv(0, 1),
        adv("first: the tests are deleted", Some(Severity::Blocker)),
    );
    let events = r.close_window(planned.window.unwrap());
    assert_eq!(only_delivery(&events).channel, Channel::Wake);
    let mut seen = Vec::new();
    for (review, note) in [(2, "second: the tag moved"), (3, "third: the key leaked")] {
        let (_, events) = r.raise(&rv(0, review), adv(note, Some(Severity::Blocker)));
        seen.push(only_delivery(&events).channel);
    }
    assert_eq!(seen, [Channel::Wake, Channel::Card]);
    assert_eq!(r.counts().wakes_refused, 1);
}

#[test]
fn ca16_only_a_blocker_or_an_agent_end_concern_qualifies_and_the_gates_make_it_a_card() {
    let p = prompt("go");
    // (mode, severity, gate) → channel
    let cases = [
        (ReviewMode::Turn, Severity::Concern, "", Channel::Card),
        (ReviewMode::Turn, Severity::Nit, "", Channel::Card),
        (ReviewMode::AgentEnd, Severity::Nit, "", Channel::Card),
        (ReviewMode::AgentEnd, Severity::Concern, "", Channel::Wake),
        (ReviewMode::Turn, Severity::Blocker, "", Channel::Wake),
        (
            ReviewMode::AgentEnd,
            Severity::Concern,
            "immune",
            Channel::Card,
        ),
        (ReviewMode::Turn, Severity::Blocker, "immune", Channel::Wake),
        (ReviewMode::Turn, Severity::Blocker, "latch", Channel::Card),
        (
            ReviewMode::AgentEnd,
            Severity::Concern,
            "replay",
            Channel::Card,
        ),
    ];
    for (mode, severity, gate, channel) in cases {
        let mut r = defer().with_immune_turns(3);
        match gate {
            "immune" => {
                // A live wake before this boundary arms the immune turns (CA19).
                r.raise(&rv(0, 0), adv("earlier blocker", Some(Severity::Blocker)));
            }
            "latch" => {
                r.interrupt(true);
            }
            "replay" => r.reset_branch(0),
            _ => {}
        }
        let (_, planned) = turn_in(&mut r, false, true, &p, mode);
        r.review_batch(&rv(0, 1), 1, false);
        r.raise(&rv(0, 1), adv("the one note", Some(severity)));
        let events = r.close_window(planned.window.unwrap());
        assert_eq!(
            only_delivery(&events).channel,
            channel,
            "{mode:?} {severity:?} {gate}"
        );
        // Only a sent continuation sets the mark (CA17).
        let expect_mark = channel == Channel::Wake;
        assert_eq!(r.marked(), expect_mark, "{mode:?} {severity:?} {gate}");
    }
}

#[test]
fn ca17_boundaries_under_the_marked_prompt_are_continuation_boundaries_until_its_final_one() {
    let mut r = router();
    let p = prompt("fix the bug");
    let (_, planned) = turn(&mut r, false, true, &p);
    assert!(!planned.continuation);
    r.review_batch(&rv(0, 1), 1, false);
    r.raise(&rv(0, 1), adv("the fix is wrong", Some(Severity::Blocker)));
    r.close_window(planned.window.unwrap());
    assert!(r.marked(), "the wake started a continuation");
    // The woken run: a WIP turn and its final one are continuation boundaries.
    r.run_state(true);
    let (_, wip) = turn(&mut r, true, false, &p);
    assert!(wip.continuation);
    let (_, last) = turn(&mut r, false, true, &p);
    assert!(last.continuation, "up to and including its final boundary");
    assert!(!r.marked(), "then the mark clears");
    // A host follow-up under the same prompt afterwards is reviewed normally.
    let (_, next) = turn(&mut r, false, true, &p);
    assert!(!next.continuation);
    r.close_window(next.window.unwrap());
    // A new user prompt clears a mark, so does another prompt in the transcript, and
    // another conversation.
    for clear in ["user prompt", "other prompt", "new conversation"] {
        r.raise(
            &rv(0, 50),
            adv(&format!("blocker before {clear}"), Some(Severity::Blocker)),
        );
        r.run_state(false);
        assert!(r.marked(), "{clear}: a live wake marks too");
        let seen = match clear {
            "user prompt" => {
                r.user_prompt();
                p.clone()
            }
            "other prompt" => prompt("and now the docs"),
            _ => {
                r.new_conversation();
                p.clone()
            }
        };
        let (_, planned) = turn(&mut r, true, false, &seen);
        assert!(!planned.continuation, "{clear}");
        assert!(!r.marked(), "{clear}");
        r.user_prompt();
    }
}

#[test]
fn ca17_a_card_or_a_steer_into_a_working_run_sets_no_mark() {
    let mut r = router();
    r.run_state(true);
    let p = prompt("go");
    turn(&mut r, true, false, &p);
    r.review_batch(&rv(0, 1), 1, true);
    r.raise(&rv(0, 1), adv("wrong file", Some(Severity::Concern)));
    r.step_boundary();
    assert!(!r.marked(), "a live steer into the run");
    let (_, planned) = turn(&mut r, false, true, &p);
    r.raise(&rv(0, 2), adv("a nit", None));
    r.close_window(planned.window.unwrap());
    assert!(!r.marked(), "a card starts nothing");
}

/// CA-S6: sync off, turn 1 final, its review's concern arriving after `TurnEnd` returned:
/// one card; from an `agent-end` advisor one wake; a blocker one wake; after the host
/// started a same-run continuation (turn 2) it steers into turn 2.
#[test]
fn ca18_ca_s6_late_notes_after_a_terminal_answer() {
    let p = prompt("go");
    let cases = [
        (ReviewMode::Turn, Severity::Concern, false, vec!["card"]),
        (ReviewMode::Turn, Severity::Nit, false, vec!["card"]),
        (ReviewMode::AgentEnd, Severity::Concern, false, vec!["wake"]),
        (ReviewMode::Turn, Severity::Blocker, false, vec!["wake"]),
        (
            ReviewMode::Turn,
            Severity::Concern,
            true,
            vec!["steerReady"],
        ),
    ];
    for (mode, severity, continued, expected) in cases {
        let mut r = defer();
        r.run_state(true);
        let (_, planned) = turn_in(&mut r, false, true, &p, mode);
        // The waits end at once (sync off): the window closes empty.
        assert!(r.close_window(planned.window.unwrap()).is_empty());
        r.review_batch(&rv(0, 1), 1, false);
        // The run ends; or the host starts turn 2 of the same run.
        r.run_state(continued);
        let (_, events) = r.raise(&rv(0, 1), adv("late", Some(severity)));
        let kinds: Vec<&str> = events
            .iter()
            .map(|e| match e {
                HostEvent::Card { .. } => "card",
                HostEvent::Wake { .. } => "wake",
                HostEvent::SteerReady => "steerReady",
                HostEvent::Notice { .. } => "notice",
            })
            .collect();
        assert_eq!(
            kinds, expected,
            "{mode:?} {severity:?} continued={continued}"
        );
        assert_eq!(r.marked(), expected == ["wake"], "{mode:?} {severity:?}");
        if let [HostEvent::Card { card }] = &events[..] {
            assert_eq!(card.notes[0].turns_ago, None, "a live delivery");
        }
    }
}

/// CA-S11: immune turns 3, a continuation sent at T = 5: turn-mode concerns routed at
/// T = 6, 7, 8 (WIP rounds counted) become asides, at T = 9 one steers; a blocker at T = 6
/// steers.
#[test]
fn ca19_ca_s11_every_boundary_counts_from_the_continuation_s_turn() {
    let p = prompt("go");
    // A continuation sent at T = 5, the woken run going.
    let continued = || {
        let mut r = router().with_immune_turns(3);
        for _ in 1..=4 {
            turn(&mut r, true, false, &p);
        }
        let (_, planned) = turn(&mut r, false, true, &p);
        r.review_batch(&rv(0, 1), 1, false);
        r.raise(&rv(0, 1), adv("stop: wrong repo", Some(Severity::Blocker)));
        let events = r.close_window(planned.window.unwrap());
        assert_eq!(only_delivery(&events).channel, Channel::Wake);
        r.run_state(true);
        r
    };
    let mut r = continued();
    turn(&mut r, true, false, &p);
    r.review_batch(&rv(0, 6), 1, false);
    let (_, events) = r.raise(&rv(0, 6), adv("blocker at 6", Some(Severity::Blocker)));
    assert_eq!(events, vec![HostEvent::SteerReady], "blockers are exempt");
    let mut r = continued();
    for t in 6..=9u64 {
        turn(&mut r, true, false, &p);
        r.review_batch(&rv(0, t), 1, false);
        let (_, events) = r.raise(
            &rv(0, t),
            adv(&format!("concern at {t}"), Some(Severity::Concern)),
        );
        if t < 9 {
            assert!(events.is_empty(), "T = {t}: an aside");
            assert_eq!(r.step_boundary().aside.map(|a| a.notes.len()), Some(1));
        } else {
            assert_eq!(events, vec![HostEvent::SteerReady], "T = 9 steers");
        }
    }
}

#[test]
fn ca20_every_final_boundary_releases_deferred_notes_into_its_window_wip_ones_nothing() {
    let mut r = defer();
    let p = prompt("go");
    r.run_state(true);
    turn(&mut r, true, false, &p);
    r.review_batch(&rv(0, 1), 1, true);
    r.raise(&rv(0, 1), adv("first", Some(Severity::Concern)));
    let (events, _) = turn(&mut r, true, false, &p);
    assert!(events.is_empty(), "a WIP boundary releases nothing");
    assert_eq!(r.counts().pending, 1);
    // A continuation's final boundary releases them too.
    r.raise(&rv(0, 9), adv("wake up", Some(Severity::Blocker)));
    r.run_state(false);
    assert!(r.marked());
    let (_, planned) = turn(&mut r, false, true, &p);
    assert!(planned.continuation);
    let events = r.close_window(planned.window.unwrap());
    let card = only_delivery(&events);
    assert_eq!(card.notes[0].note, "first");
    assert_eq!(card.notes[0].turns_ago, Some(2), "its own covered turn");
}
