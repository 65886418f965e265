//! Routing and the outbox (D1–D3, D6, D7, D10, L2, R1, A5): channels by severity and run
//! state, the latch, immune turns, the dedupe memory and the note cap.

use super::*;

#[test]
fn d1_omitted_severity_is_routed_as_a_nit_but_keeps_no_attribute() {
    let mut r = router();
    r.run_state(true);
    let (_, events) = r.raise(&rv(0, 1), adv("prefer a slice here", None));
    assert!(events.is_empty(), "a nit neither steers nor wakes");
    let aside = r.step_boundary().aside.expect("queued as an aside");
    assert_eq!(aside.notes[0].severity, None);
    assert!(
        aside.content.starts_with("<advisory guidance="),
        "{}",
        aside.content
    );
}

#[test]
fn d3_two_nits_in_one_step_become_one_message() {
    let mut r = router();
    r.run_state(true);
    assert_eq!(
        r.raise(&rv(0, 1), adv("rename x", Some(Severity::Nit))).0,
        RaiseOutcome::Recorded
    );
    assert_eq!(
        r.raise(&rv(0, 1), adv("drop the clone", None)).0,
        RaiseOutcome::Recorded
    );
    let step = r.step_boundary();
    let aside = step.aside.expect("one aside");
    assert_eq!(aside.notes.len(), 2);
    assert_eq!(aside.content.matches("<advisory").count(), 2);
    assert!(aside.content.contains("</advisory>\n<advisory"));
    assert!(step.steers.is_empty());
    assert!(r.step_boundary().is_empty());
    assert_eq!(r.counts().aside, 2);
}

#[test]
fn d3_nits_never_wake_an_idle_primary() {
    let mut r = router();
    let (_, events) = r.raise(&rv(0, 1), adv("tidy", None));
    assert!(events.is_empty());
    assert!(r.run_state(false).is_empty());
    assert_eq!(r.counts().pending, 1);
}

#[test]
fn d3_concern_steers_while_running_and_wakes_while_idle() {
    let mut r = router();
    r.run_state(true);
    let (_, events) = r.raise(&rv(0, 1), adv("wrong file", Some(Severity::Concern)));
    assert_eq!(events, vec![HostEvent::SteerReady]);
    let step = r.step_boundary();
    assert_eq!(step.steers.len(), 1);
    assert_eq!(step.steers[0].channel, Channel::Steer);
    r.run_state(false);
    let (_, events) = r.raise(&rv(0, 2), adv("tests never ran", Some(Severity::Blocker)));
    match &events[..] {
        [HostEvent::Wake { card }] => assert!(card.content.contains("severity=\"blocker\"")),
        other => panic!("expected a wake, got {other:?}"),
    }
}

#[test]
fn a5_outbox_steer_becomes_a_wake_when_the_primary_goes_idle() {
    let mut r = router();
    r.run_state(true);
    r.raise(
        &rv(0, 1),
        adv("stop: the tests fail", Some(Severity::Concern)),
    );
    let events = r.run_state(false);
    assert!(matches!(&events[..], [HostEvent::Wake { card }] if card.channel == Channel::Wake));
    assert_eq!(r.counts().wake, 1);
    assert_eq!(r.counts().pending, 0);
}

#[test]
fn d6_user_interrupt_turns_outbox_steers_into_cards_until_user_prompt() {
    let mut r = router();
    r.run_state(true);
    r.raise(&rv(0, 1), adv("steer me", Some(Severity::Concern)));
    let events = r.interrupt(true);
    assert!(matches!(&events[..], [HostEvent::Card { card }] if card.channel == Channel::Card));
    assert!(r.step_boundary().steers.is_empty());
    r.run_state(false);
    let (_, events) = r.raise(&rv(0, 2), adv("another", Some(Severity::Blocker)));
    assert!(
        matches!(&events[..], [HostEvent::Card { .. }]),
        "suppressed: no wake"
    );
    r.user_prompt();
    let (_, events) = r.raise(&rv(0, 3), adv("third", Some(Severity::Blocker)));
    assert!(matches!(&events[..], [HostEvent::Wake { .. }]));
}

#[test]
fn d6_non_user_interrupt_keeps_auto_resume() {
    let mut r = router();
    r.run_state(true);
    r.raise(&rv(0, 1), adv("steer me", Some(Severity::Concern)));
    assert!(r.interrupt(false).is_empty());
    assert!(matches!(&r.run_state(false)[..], [HostEvent::Wake { .. }]));
}

#[test]
fn d8_repeats_dropped_escalation_passes() {
    let mut r = router();
    r.run_state(true);
    assert_eq!(
        r.raise(&rv(0, 1), adv("check  the\tnull case", None)).0,
        RaiseOutcome::Recorded
    );
    assert_eq!(
        r.raise(&rv(0, 2), adv("check the null case", None)).0,
        RaiseOutcome::Dropped(DropReason::Duplicate)
    );
    assert_eq!(
        r.raise(
            &rv(0, 3),
            adv("check the null case", Some(Severity::Concern))
        )
        .0,
        RaiseOutcome::Recorded
    );
    assert_eq!(
        r.raise(&rv(0, 4), adv("check the null case", Some(Severity::Nit)))
            .0,
        RaiseOutcome::Dropped(DropReason::Duplicate)
    );
    assert_eq!(
        RaiseOutcome::Dropped(DropReason::Duplicate).tool_text(2),
        "Duplicate advice ignored."
    );
}

#[test]
fn d8_content_free_and_over_budget_are_dropped() {
    let mut r = router();
    assert_eq!(
        r.raise(&rv(0, 1), adv("LGTM!", None)).0,
        RaiseOutcome::Dropped(DropReason::ContentFree)
    );
    assert_eq!(
        r.raise(&rv(0, 1), adv("one", None)).0,
        RaiseOutcome::Recorded
    );
    assert_eq!(
        r.raise(&rv(0, 1), adv("two", None)).0,
        RaiseOutcome::Recorded
    );
    assert_eq!(
        r.raise(&rv(0, 1), adv("three", None)).0,
        RaiseOutcome::Dropped(DropReason::OverBudget)
    );
    assert_eq!(
        r.raise(&rv(0, 2), adv("three", None)).0,
        RaiseOutcome::Recorded
    );
}

#[test]
fn r1_stale_epoch_advice_is_dropped() {
    let mut r = router();
    r.reset(1);
    assert_eq!(
        r.raise(&rv(0, 1), adv("old", Some(Severity::Blocker))).0,
        RaiseOutcome::Dropped(DropReason::StaleEpoch)
    );
    assert_eq!(
        r.raise(&rv(1, 2), adv("new", None)).0,
        RaiseOutcome::Recorded
    );
}

#[test]
fn d10_every_advisory_is_counted_exactly_once() {
    let mut r = router();
    r.run_state(true);
    let notes = [
        ("a", Some(Severity::Nit)),
        ("a", Some(Severity::Nit)),
        ("lgtm", None),
        ("b", Some(Severity::Concern)),
        ("c", Some(Severity::Blocker)),
    ];
    for (i, (n, s)) in notes.iter().enumerate() {
        r.raise(&rv(0, i as u64), adv(n, *s));
    }
    r.step_boundary();
    let c = r.counts();
    assert_eq!(c.raised(), notes.len() as u64);
    assert_eq!(c.pending, 0);
    assert_eq!((c.aside, c.steer, c.dropped_total()), (1, 2, 2));
}

#[test]
fn d7_concerns_are_asides_during_immune_turns_blockers_still_interrupt() {
    let mut r = router().with_immune_turns(2);
    r.run_state(true);
    r.raise(&rv(0, 1), adv("first concern", Some(Severity::Concern)));
    assert_eq!(r.step_boundary().steers.len(), 1);
    assert!(r.immune());
    for review in 2..=4 {
        if review > 2 {
            r.turn_ended(false, true);
        }
        let (_, events) = r.raise(
            &rv(0, review),
            adv(&format!("concern {review}"), Some(Severity::Concern)),
        );
        assert!(events.is_empty(), "review {review}: an aside");
    }
    let (_, events) = r.raise(&rv(0, 5), adv("a blocker", Some(Severity::Blocker)));
    assert_eq!(events, vec![HostEvent::SteerReady]);
    let step = r.step_boundary();
    assert_eq!(step.aside.unwrap().notes.len(), 3);
    assert_eq!(step.steers.len(), 1);
    // Immunity restarted by the blocker's steer; it lapses after three more turn ends.
    for _ in 0..3 {
        r.turn_ended(false, true);
    }
    assert!(!r.immune());
    let (_, events) = r.raise(&rv(0, 6), adv("late concern", Some(Severity::Concern)));
    assert_eq!(events, vec![HostEvent::SteerReady]);
}

#[test]
fn d7_zero_immune_turns_turns_immunity_off() {
    let mut r = router().with_immune_turns(0);
    r.run_state(false);
    r.raise(&rv(0, 1), adv("one", Some(Severity::Concern)));
    let (_, events) = r.raise(&rv(0, 2), adv("two", Some(Severity::Concern)));
    assert!(matches!(&events[..], [HostEvent::Wake { .. }]));
}

#[test]
fn d10_a_note_over_the_cap_is_refused_and_counted_too_long() {
    let mut r = router().with_max_note_chars(2000);
    r.run_state(true);
    let huge = "x".repeat(100_000);
    let (outcome, events) = r.raise(&rv(0, 1), adv(&huge, Some(Severity::Blocker)));
    assert_eq!(outcome, RaiseOutcome::TooLong { max_chars: 2000 });
    assert!(outcome.is_error());
    assert!(events.is_empty());
    assert!(r.step_boundary().is_empty(), "the primary gets nothing");
    assert_eq!(r.counts().dropped.get(&DropReason::TooLong), Some(&1));
    assert_eq!(r.counts().raised(), 1);
    // At the cap exactly, in characters (not bytes), a note passes.
    let at_cap = "é".repeat(2000);
    assert_eq!(
        r.raise(&rv(0, 1), adv(&at_cap, None)).0,
        RaiseOutcome::Recorded
    );
    // A refused note is not remembered: the shorter retry is no duplicate.
    let retry = &huge[..100];
    assert_eq!(
        r.raise(&rv(0, 1), adv(retry, None)).0,
        RaiseOutcome::Recorded
    );
}

#[test]
fn l2_undelivered_lists_queued_nits_outbox_steers_and_held_notes_without_taking_them() {
    let mut r = router();
    r.run_state(true);
    assert!(r.undelivered().is_empty());
    r.raise(&rv(0, 1), adv("nit a", None));
    r.raise(&rv(0, 1), adv("nit b", None));
    r.raise(
        &rv(0, 2),
        adv("stop: the build is broken", Some(Severity::Blocker)),
    );
    let pending = r.undelivered();
    assert_eq!(pending.len(), 2);
    assert_eq!(
        (pending[0].channel, pending[0].notes.len()),
        (Channel::Aside, 2)
    );
    assert_eq!(pending[1].channel, Channel::Steer);
    assert_eq!(r.counts().pending, 3, "nothing taken");
    let mut h = reconfirm();
    h.run_state(false);
    h.raise(&rv(0, 1), adv("held one", Some(Severity::Concern)));
    let pending = h.undelivered();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].channel, Channel::Wake);
    assert!(pending[0]
        .content
        .contains("context=\"raised about an earlier step\""));
    assert_eq!(h.held().len(), 1, "still held");
}

proptest! {
    #[test]
    fn d2_no_note_can_break_the_advisory_element(note in ".*", sev in 0u8..4) {
        let severity = match sev { 0 => None, 1 => Some(Severity::Nit), 2 => Some(Severity::Concern), _ => Some(Severity::Blocker) };
        let xml = Advisory::new(note.clone(), severity).to_xml(None);
        prop_assert_eq!(xml.matches('<').count(), 2);
        prop_assert_eq!(xml.matches('>').count(), 2);
        prop_assert!(xml.starts_with("<advisory"));
        prop_assert!(xml.ends_with("\n</advisory>"));
        let body_start = xml.find(">\n").map(|i| i + 2).unwrap_or(0);
        let body = &xml[body_start..xml.len() - "\n</advisory>".len()];
        let unescaped = body.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&");
        prop_assert_eq!(unescaped, note);
    }
}
