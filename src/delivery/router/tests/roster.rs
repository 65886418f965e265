//! The roster through the router's state (RO12, RO13, RO15, RO16, RO18, RO19, RO21, D10):
//! each advisor's budget, memory, policy, cap, pause and removal.

use super::*;

#[test]
fn ro19_a_paused_advisors_raises_are_dropped_its_earlier_notes_stay_the_others_go_on() {
    let mut r = router();
    r.run_state(true);
    let (a, s) = (arch(), sec());
    r.register_advisor(&a, None, 4, Severity::Blocker, ReviewMode::Turn);
    r.register_advisor(&s, None, 4, Severity::Blocker, ReviewMode::Turn);
    let queued = raise(&mut r, &s, 1, "escape the query", None).0;
    assert_eq!(queued, RaiseOutcome::Recorded);
    r.pause_advisor(&s.slug, true);
    let late = raise(
        &mut r,
        &s,
        1,
        "use prepared statements",
        Some(Severity::Blocker),
    );
    assert_eq!(
        late,
        (RaiseOutcome::Dropped(DropReason::Disabled), Vec::new())
    );
    let other = raise(&mut r, &a, 1, "split the module", None).0;
    assert_eq!(other, RaiseOutcome::Recorded);
    let step = r.step_boundary();
    let aside = step.aside.expect("the nits queued");
    assert!(
        aside.content.contains("escape the query"),
        "{}",
        aside.content
    );
    assert!(aside.content.contains("split the module"));
    assert!(step.steers.is_empty(), "the late blocker never steers");
    let dropped = &r.per_advisor()["security"].dropped;
    assert_eq!(dropped.get(&DropReason::Disabled), Some(&1));
    // Registered again (`/advisor on NAME` starts it), it delivers again.
    r.register_advisor(&s, None, 4, Severity::Blocker, ReviewMode::Turn);
    let resumed = raise(
        &mut r,
        &s,
        2,
        "use prepared statements",
        Some(Severity::Blocker),
    );
    assert_ne!(resumed.0, RaiseOutcome::Dropped(DropReason::Disabled));
}

#[test]
fn ro13_each_advisor_counts_its_own_budget_per_review_from_review_one() {
    let mut r = router();
    r.run_state(true);
    let (a, s) = (arch(), sec());
    // Both agents number their reviews from 1: review 1 of each has its own 2 places.
    for who in [&a, &s] {
        for i in 0..2 {
            let note = format!("{} nit {i}", who.slug);
            assert_eq!(raise(&mut r, who, 1, &note, None).0, RaiseOutcome::Recorded);
        }
    }
    assert_eq!(
        raise(&mut r, &a, 1, "one too many", None).0,
        RaiseOutcome::Dropped(DropReason::OverBudget)
    );
    // The unnamed advisor's review 1 is a third review.
    assert_eq!(
        r.raise(&rv(0, 1), adv("unnamed nit", None)).0,
        RaiseOutcome::Recorded
    );
    // A review of two updates of one advisor doubles only its budget.
    r.review_batch(&ReviewRef::new(Some(s.clone()), 0, 2), 2, false);
    let kept = (0..5)
        .filter(|i| raise(&mut r, &s, 2, &format!("batch {i}"), None).0 == RaiseOutcome::Recorded)
        .count();
    assert_eq!(kept, 4);
    assert_eq!(
        r.per_advisor()["architecture"].dropped[&DropReason::OverBudget],
        1
    );
    assert_eq!(
        r.per_advisor()["security"].dropped[&DropReason::OverBudget],
        1
    );
    assert_eq!(r.counts().dropped[&DropReason::OverBudget], 2);
}

#[test]
fn ro13_each_advisor_has_its_own_dedupe_memory() {
    let mut r = router();
    r.run_state(true);
    let (a, s) = (arch(), sec());
    raise(&mut r, &a, 1, "check the null case", None);
    r.step_boundary();
    r.turn_ended(false, true);
    // Security never said it: no duplicate of Architecture's.
    assert_eq!(
        raise(&mut r, &s, 1, "Check the NULL case", None).0,
        RaiseOutcome::Recorded
    );
    assert_eq!(
        raise(&mut r, &a, 2, "check the null case", None).0,
        RaiseOutcome::Dropped(DropReason::Duplicate)
    );
    assert_eq!(
        r.raise(&rv(0, 1), adv("check the null case", None)).0,
        RaiseOutcome::Recorded,
        "nor did the unnamed advisor"
    );
}

#[test]
fn ro13_d9_a_review_reconfirms_prunes_and_discards_only_its_own_held_notes() {
    let mut r = RouterState::new(DeliveryPolicy::Reconfirm, 2);
    let (a, s) = (arch(), sec());
    assert_eq!(
        raise(&mut r, &a, 1, "arch worry", Some(Severity::Concern)).0,
        RaiseOutcome::Held
    );
    assert_eq!(
        raise(&mut r, &s, 1, "sec worry", Some(Severity::Blocker)).0,
        RaiseOutcome::Held
    );
    r.turn_ended(false, true);
    let preamble = r.held_preamble(&ReviewRef::new(Some(a.clone()), 0, 2));
    assert!(preamble.contains("arch worry"), "{preamble}");
    assert!(!preamble.contains("sec worry"), "{preamble}");
    assert_eq!(r.held_preamble(&rv(0, 2)), "", "the unnamed holds nothing");
    // Architecture raising Security's note is its own note, not a reconfirmation.
    assert_eq!(
        raise(&mut r, &a, 2, "sec worry", Some(Severity::Blocker)).0,
        RaiseOutcome::Held
    );
    // Its attempt is thrown away: only its hold goes.
    assert_eq!(r.discard_attempt(&ReviewRef::new(Some(a.clone()), 0, 2)), 1);
    // Security's review 2 sees its own note, raises it again.
    r.held_preamble(&ReviewRef::new(Some(s.clone()), 0, 2));
    assert_eq!(
        raise(&mut r, &s, 2, "sec worry", None).0,
        RaiseOutcome::Reconfirmed
    );
    // Architecture's review 2 succeeds silent: its note is recanted, Security's stays.
    r.review_succeeded(&ReviewRef::new(Some(a.clone()), 0, 2));
    r.review_succeeded(&ReviewRef::new(Some(s.clone()), 0, 2));
    let held: Vec<(&str, bool)> = r
        .held()
        .iter()
        .map(|h| (h.advisory.note.as_str(), h.confirmed))
        .collect();
    assert_eq!(held, [("sec worry", true)]);
    assert_eq!(
        r.per_advisor()["architecture"].dropped[&DropReason::Recanted],
        1
    );
    assert_eq!(r.per_advisor()["architecture"].held, 0);
    assert_eq!(r.per_advisor()["security"].held, 1);
    assert_eq!(r.per_advisor()["security"].reconfirmed, 1);
}

#[test]
fn ro15_each_advisor_delivers_under_its_own_policy() {
    let mut r = router();
    r.run_state(true);
    let (a, s) = (arch(), sec());
    r.register_advisor(
        &a,
        Some(DeliveryPolicy::Reconfirm),
        4,
        Severity::Blocker,
        ReviewMode::Turn,
    );
    // Registered without a policy: the session's.
    r.register_advisor(&s, None, 4, Severity::Blocker, ReviewMode::Turn);
    assert_eq!(
        raise(&mut r, &a, 1, "held one", Some(Severity::Concern)).0,
        RaiseOutcome::Held
    );
    let (outcome, events) = raise(&mut r, &s, 1, "steer one", Some(Severity::Concern));
    assert_eq!(
        (outcome, events),
        (RaiseOutcome::Recorded, vec![HostEvent::SteerReady])
    );
    raise(&mut r, &a, 1, "arch nit", None);
    raise(&mut r, &s, 1, "sec nit", None);
    let step = r.step_boundary();
    let aside = step.aside.expect("one aside");
    // Each element as its advisor's policy writes it: only reconfirm's carries context.
    assert_eq!(
        aside
            .content
            .matches("context=\"raised about an earlier step\"")
            .count(),
        1,
        "{}",
        aside.content
    );
    assert!(
        aside.content.starts_with(
            "<advisory advisor=\"Architecture\" guidance=\"weigh, don't blindly obey\" context="
        ),
        "{}",
        aside.content
    );
    assert!(!step.steers[0].content.contains("context="));
    // A reconfirm advisor in use: a terminal turn end waits for the advisors (D5),
    // though the session's policy is interrupt.
    assert!(r.turn_ended(true, true).is_some());
    let mut plain = router();
    plain.raise(&ReviewRef::new(Some(s.clone()), 0, 1), named(&s, "x", None));
    assert!(plain.turn_ended(true, true).is_none());
}

#[test]
fn ro16_a_capped_advisor_s_blockers_go_out_as_concerns_and_are_counted() {
    let mut r = router().with_immune_turns(0);
    r.run_state(true);
    let (a, s) = (arch(), sec());
    r.register_advisor(&a, None, 4, Severity::Concern, ReviewMode::Turn);
    r.register_advisor(&s, None, 4, Severity::Nit, ReviewMode::Turn);
    raise(&mut r, &a, 1, "tests never ran", Some(Severity::Blocker));
    raise(&mut r, &a, 1, "wrong table", Some(Severity::Concern));
    assert_eq!(
        raise(&mut r, &s, 1, "data loss", Some(Severity::Blocker)).1,
        vec![]
    );
    raise(&mut r, &s, 1, "odd name", Some(Severity::Concern));
    raise(&mut r, &s, 1, "tidy", None);
    let step = r.step_boundary();
    let steers: Vec<&str> = step.steers.iter().map(|d| d.content.as_str()).collect();
    assert_eq!(steers.len(), 2);
    assert!(steers[0].contains("severity=\"concern\"") && steers[0].contains("tests never ran"));
    let aside = step
        .aside
        .expect("the nit-capped advisor's notes are asides");
    assert_eq!(aside.notes.len(), 3);
    assert_eq!(
        aside.content.matches("severity=\"nit\"").count(),
        2,
        "{}",
        aside.content
    );
    assert_eq!(
        aside.notes[2].severity, None,
        "an omitted severity stays omitted"
    );
    assert_eq!(r.per_advisor()["architecture"].capped, 1);
    assert_eq!(r.per_advisor()["security"].capped, 2);
    assert_eq!(r.counts().capped, 3);
    assert_eq!(
        r.counts().raised(),
        5,
        "capping is counted beside, not instead"
    );
    // Capped at concern, a blocker of the same note is a duplicate, not an escalation.
    assert_eq!(
        raise(&mut r, &a, 2, "wrong table", Some(Severity::Blocker)).0,
        RaiseOutcome::Dropped(DropReason::Duplicate)
    );
}

#[test]
fn ro18_every_delivery_path_keeps_the_advisor_name() {
    let (a, s) = (arch(), sec());
    // Asides of two advisors at one step boundary: one message, each element named.
    let mut r = router();
    r.run_state(true);
    raise(&mut r, &a, 1, "rename x", None);
    raise(&mut r, &s, 1, "drop the clone", Some(Severity::Nit));
    r.raise(&rv(0, 1), adv("unnamed nit", None));
    let aside = r.step_boundary().aside.expect("one aside");
    assert_eq!(
        aside.content,
        "<advisory advisor=\"Architecture\" guidance=\"weigh, don't blindly obey\">\nrename x\n</advisory>\n\
         <advisory advisor=\"Security\" severity=\"nit\" guidance=\"weigh, don't blindly obey\">\ndrop the clone\n</advisory>\n\
         <advisory guidance=\"weigh, don't blindly obey\">\nunnamed nit\n</advisory>"
    );
    assert_eq!(aside.notes[0].advisor.as_deref(), Some("Architecture"));
    // Steer, and an advisory the executor did not name: the router names it.
    raise(&mut r, &a, 2, "wrong file", Some(Severity::Concern));
    r.raise(
        &ReviewRef::new(Some(s.clone()), 0, 2),
        adv("tests fail", Some(Severity::Blocker)),
    );
    let steers = r.step_boundary().steers;
    assert!(steers[0]
        .content
        .starts_with("<advisory advisor=\"Architecture\" severity=\"concern\""));
    assert!(steers[1]
        .content
        .starts_with("<advisory advisor=\"Security\" severity=\"blocker\""));
    // Wake, and a card while the user-interrupt latch is set.
    let mut r = router();
    let (_, events) = raise(&mut r, &a, 1, "idle worry", Some(Severity::Blocker));
    assert!(card_of(&events).starts_with("<advisory advisor=\"Architecture\""));
    r.interrupt(true);
    let (_, events) = raise(&mut r, &s, 1, "latched worry", Some(Severity::Blocker));
    assert!(card_of(&events).starts_with("<advisory advisor=\"Security\""));
    // Held notes released by a catch-up block (D5).
    let mut r = RouterState::new(DeliveryPolicy::Reconfirm, 2);
    raise(&mut r, &a, 1, "held worry", Some(Severity::Blocker));
    let plan = r.turn_ended(true, true).expect("a terminal turn waits");
    let events = r.catch_up_finished(&plan, crate::delivery::CatchUpEnd::TimedOut);
    let wake = events
        .iter()
        .find_map(|e| match e {
            HostEvent::Wake { card } => Some(card.content.as_str()),
            _ => None,
        })
        .expect("the held note wakes the primary");
    assert!(
        wake.starts_with("<advisory advisor=\"Architecture\" severity=\"blocker\""),
        "{wake}"
    );
    // Deferred notes released at the final boundary (P1).
    let mut r = crate::delivery::testing::defer();
    r.run_state(true);
    r.review_batch(&ReviewRef::new(Some(s.clone()), 0, 1), 1, true);
    assert_eq!(
        raise(&mut r, &s, 1, "wrong table", Some(Severity::Concern)).0,
        RaiseOutcome::Deferred
    );
    assert_eq!(
        r.undelivered()[0].notes[0].advisor.as_deref(),
        Some("Security")
    );
    assert!(r.boundary(true, false).is_empty());
    let events = r.close_open_window();
    assert_eq!(
        card_of(&events),
        format!(
            "{}\n<advisory advisor=\"Security\" severity=\"concern\" guidance=\"weigh, don't blindly obey\">\nwrong table\n</advisory>",
            crate::delivery::window::GUIDANCE
        )
    );
}

#[test]
fn ro21_a_removed_advisor_s_undelivered_notes_are_dropped_removed() {
    let mut r = router().with_immune_turns(0);
    r.run_state(true);
    let (a, s) = (arch(), sec());
    r.register_advisor(&a, None, 4, Severity::Blocker, ReviewMode::Turn);
    raise(&mut r, &a, 1, "arch nit", None);
    raise(&mut r, &a, 1, "arch concern", Some(Severity::Concern));
    raise(&mut r, &s, 1, "sec nit", None);
    let mut held = RouterState::new(DeliveryPolicy::Reconfirm, 2);
    raise(&mut held, &a, 1, "arch held", Some(Severity::Blocker));
    raise(&mut held, &s, 1, "sec held", Some(Severity::Blocker));
    r.remove_advisor(Some("architecture"));
    held.remove_advisor(Some("architecture"));
    let step = r.step_boundary();
    assert!(step.steers.is_empty());
    let notes: Vec<&str> = step
        .aside
        .iter()
        .flat_map(|d| &d.notes)
        .map(|n| n.note.as_str())
        .collect();
    assert_eq!(notes, ["sec nit"]);
    assert_eq!(
        r.per_advisor()["architecture"].dropped[&DropReason::Removed],
        2
    );
    assert_eq!(r.per_advisor()["architecture"].pending, 0);
    assert_eq!(r.counts().dropped[&DropReason::Removed], 2);
    assert_eq!(r.counts().pending, 0);
    assert_eq!(r.counts().raised(), 3);
    let notes: Vec<&str> = held
        .held()
        .iter()
        .map(|h| h.advisory.note.as_str())
        .collect();
    assert_eq!(notes, ["sec held"]);
    assert_eq!(held.counts().dropped[&DropReason::Removed], 1);
    assert_eq!(held.counts().held, 1);
    // Its guard is forgotten: back in the roster, it starts with an empty memory.
    r.register_advisor(&a, None, 4, Severity::Blocker, ReviewMode::Turn);
    assert_eq!(
        raise(&mut r, &a, 2, "arch nit", None).0,
        RaiseOutcome::Recorded
    );
}

#[test]
fn ro15_ro16_f5_a_restarted_router_keeps_the_registrations_and_forgets_the_rest() {
    let mut r = router().with_immune_turns(0);
    r.reset(2);
    r.run_state(true);
    let a = arch();
    r.register_advisor(
        &a,
        Some(DeliveryPolicy::Reconfirm),
        1,
        Severity::Concern,
        ReviewMode::Turn,
    );
    let in_epoch = |r: &mut RouterState, note: &str, sev: Option<Severity>| {
        r.raise(&ReviewRef::new(Some(a.clone()), 2, 1), named(&a, note, sev))
            .0
    };
    in_epoch(&mut r, "rename x", None);
    let mut fresh = r.restarted();
    assert_eq!(fresh.policy(), DeliveryPolicy::Interrupt);
    assert_eq!(fresh.max_notes_per_update(), 2);
    assert!(fresh.step_boundary().is_empty(), "nothing queued survives");
    assert_eq!(
        in_epoch(&mut fresh, "rename x", None),
        RaiseOutcome::Recorded,
        "a fresh memory and budget, in the same epoch"
    );
    assert_eq!(
        in_epoch(&mut fresh, "tests never ran", Some(Severity::Blocker)),
        RaiseOutcome::Held,
        "its policy kept"
    );
    assert_eq!(
        fresh.held()[0].advisory.severity,
        Some(Severity::Concern),
        "its cap kept"
    );
    assert_eq!(
        fresh
            .raise(
                &ReviewRef::new(Some(a.clone()), 1, 1),
                named(&a, "old", None)
            )
            .0,
        RaiseOutcome::Dropped(DropReason::StaleEpoch)
    );
    // The run state stays: the primary still runs, a concern steers.
    assert_eq!(
        fresh
            .raise(&rv(2, 1), adv("wrong file", Some(Severity::Concern)))
            .1,
        vec![HostEvent::SteerReady]
    );
    // Delivery switched off by `/advisor off` stays off.
    r.set_enabled(false);
    assert_eq!(
        in_epoch(&mut r.restarted(), "anything", None),
        RaiseOutcome::Dropped(DropReason::Disabled)
    );
}

#[test]
fn ro21_ro16_a_removed_advisors_late_raise_is_dropped_removed() {
    let mut r = router();
    r.run_state(true);
    let a = arch();
    r.register_advisor(
        &a,
        Some(DeliveryPolicy::Reconfirm),
        4,
        Severity::Nit,
        ReviewMode::Turn,
    );
    r.remove_advisor(Some(&a.slug));
    // Its review was already running: its start, a raise, a discarded attempt.
    assert!(r
        .review_batch(&ReviewRef::new(Some(a.clone()), 0, 2), 1, false)
        .is_empty());
    let (outcome, events) = raise(&mut r, &a, 2, "data loss", Some(Severity::Blocker));
    assert_eq!(outcome, RaiseOutcome::Dropped(DropReason::Removed));
    assert!(events.is_empty());
    assert_eq!(
        outcome.tool_text(4),
        "Advice discarded: this advisor was removed from the roster."
    );
    assert_eq!(r.discard_attempt(&ReviewRef::new(Some(a.clone()), 0, 2)), 0);
    assert!(r.step_boundary().is_empty(), "nothing reaches the primary");
    assert!(r.held().is_empty());
    assert_eq!(
        r.per_advisor()["architecture"].dropped[&DropReason::Removed],
        1
    );
    assert_eq!(r.counts().raised(), 1);
    // Back in the roster, registered again: heard again, under its cap.
    r.register_advisor(&a, None, 4, Severity::Nit, ReviewMode::Turn);
    assert_eq!(
        raise(&mut r, &a, 3, "data loss", Some(Severity::Blocker)),
        (RaiseOutcome::Recorded, Vec::new())
    );
}

#[test]
fn ro12_ro21_a_replaced_unnamed_advisors_notes_are_dropped_removed_until_it_runs_again() {
    let mut r = RouterState::new(DeliveryPolicy::Reconfirm, 2);
    r.review_started(&rv(0, 1), 1);
    assert_eq!(
        r.raise(&rv(0, 1), adv("data loss", Some(Severity::Concern)))
            .0,
        RaiseOutcome::Held
    );
    assert_eq!(
        r.raise(&rv(0, 1), adv("rename x", None)).0,
        RaiseOutcome::Recorded
    );
    // The roster's first entry replaced it.
    r.remove_advisor(None);
    assert!(r.held().is_empty());
    assert!(
        r.turn_ended(false, true).is_none(),
        "no catch-up for an advisor no longer in use"
    );
    assert_eq!(
        r.raise(&rv(0, 1), adv("tests never ran", Some(Severity::Blocker)))
            .0,
        RaiseOutcome::Dropped(DropReason::Removed)
    );
    r.run_state(true);
    assert!(r.step_boundary().is_empty());
    assert_eq!(r.counts().dropped[&DropReason::Removed], 3);
    assert_eq!((r.counts().held, r.counts().pending), (0, 0));
    // The roster's last entry went: it runs again, with the roster's budget and a
    // memory that kept nothing of the dropped notes.
    r.register_unnamed(1);
    assert_eq!(r.max_notes_per_update(), 1);
    r.review_started(&rv(0, 2), 1);
    assert_eq!(
        r.raise(&rv(0, 2), adv("rename x", None)).0,
        RaiseOutcome::Recorded
    );
    assert_eq!(
        r.raise(&rv(0, 2), adv("rename y", None)).0,
        RaiseOutcome::Dropped(DropReason::OverBudget)
    );
    assert_eq!(
        r.raise(&rv(0, 2), adv("data loss", Some(Severity::Concern)))
            .0,
        RaiseOutcome::Held
    );
    assert!(r.turn_ended(false, true).is_some(), "in use again");
}

#[test]
fn ro15_c2_an_advisor_test_raise_does_not_put_the_unnamed_policy_in_use() {
    let mut r = RouterState::new(DeliveryPolicy::Reconfirm, 2);
    let a = arch();
    r.register_advisor(
        &a,
        Some(DeliveryPolicy::Interrupt),
        4,
        Severity::Blocker,
        ReviewMode::Turn,
    );
    // `/advisor test`: raised as the unnamed advisor, no review of it.
    let (outcome, _) = r.inject(
        ReviewId {
            epoch: 0,
            number: u64::MAX,
        },
        adv("injected", Some(Severity::Nit)),
    );
    assert_eq!(outcome, RaiseOutcome::Recorded);
    assert!(r.turn_ended(true, true).is_none(), "no catch-up block");
    // A review of the unnamed advisor puts it in use.
    r.review_started(&rv(0, 1), 1);
    assert!(r.turn_ended(true, true).is_some());
    // Replaced by the roster, it is out of use; the user's check is still taken.
    r.remove_advisor(None);
    let (outcome, _) = r.inject(
        ReviewId {
            epoch: 0,
            number: u64::MAX - 1,
        },
        adv("injected again", None),
    );
    assert_eq!(outcome, RaiseOutcome::Recorded);
    assert!(r.turn_ended(true, true).is_none());
}

#[test]
fn ro19_d9_off_name_drops_that_advisors_held_notes_and_no_turn_end_waits_for_them() {
    let mut r = router();
    r.run_state(true);
    let (a, s) = (arch(), sec());
    r.register_advisor(
        &a,
        Some(DeliveryPolicy::Reconfirm),
        4,
        Severity::Blocker,
        ReviewMode::Turn,
    );
    r.register_advisor(&s, None, 4, Severity::Blocker, ReviewMode::Turn);
    assert_eq!(
        raise(&mut r, &a, 1, "data loss", Some(Severity::Concern)).0,
        RaiseOutcome::Held
    );
    raise(&mut r, &a, 1, "rename x", None);
    raise(&mut r, &s, 1, "escape the query", None);
    r.pause_advisor(&a.slug, true);
    assert!(r.held().is_empty());
    assert!(
        r.turn_ended(false, true).is_none(),
        "a mid-run turn end plans no catch-up"
    );
    if let Some(plan) = r.turn_ended(true, true) {
        let events = r.catch_up_finished(&plan, crate::delivery::CatchUpEnd::TimedOut);
        assert!(
            !events.iter().any(|e| matches!(e, HostEvent::Wake { .. })),
            "{events:?}"
        );
    }
    let aside = r.step_boundary().aside.expect("its queued nit stays");
    assert_eq!(aside.notes.len(), 2);
    let arch_counts = &r.per_advisor()["architecture"];
    assert_eq!(arch_counts.dropped[&DropReason::Disabled], 1);
    assert_eq!(arch_counts.held, 0);
}

#[test]
fn p3_ro13_the_seed_keeps_no_note_longer_than_the_note_cap() {
    let mut g = Guards::new(DeliveryPolicy::Interrupt, 4);
    let long = "x".repeat(11);
    g.seed(
        &[
            Advisory::new(long.clone(), None).with_advisor("Ghost"),
            Advisory::new(long.clone(), None),
            Advisory::new("short", None).with_advisor("Ghost"),
        ],
        10,
    );
    let seeded: Vec<&str> = g.branch_seed.iter().map(|a| a.note.as_str()).collect();
    assert_eq!(seeded, ["short"]);
    assert_eq!(g.unnamed.history.rank(&long), None);
    let guard = g.for_label(Some(&arch()));
    assert_eq!(guard.history.rank("short"), Some(1));
}

#[test]
fn l2_d9_an_undelivered_held_note_takes_the_channel_its_advisors_policy_calls_for() {
    let mut r = router();
    let a = arch();
    r.register_advisor(
        &a,
        Some(DeliveryPolicy::Reconfirm),
        4,
        Severity::Blocker,
        ReviewMode::Turn,
    );
    raise(&mut r, &a, 1, "data loss", Some(Severity::Concern));
    // Its entry now says `defer`; after a terminal answer a concern is a card (P1).
    r.register_advisor(
        &a,
        Some(DeliveryPolicy::Defer),
        4,
        Severity::Blocker,
        ReviewMode::Turn,
    );
    r.boundary(true, false);
    assert_eq!(r.undelivered()[0].channel, Channel::Card);
}

proptest::proptest! {
    #[test]
    fn d10_ro13_with_named_advisors_only_the_session_counts_are_the_sum_of_theirs(
        policy in 0u8..3,
        steps in proptest::collection::vec((0u8..9, 0u8..3, 0u8..4, 0u8..6), 1..60),
    ) {
        let policy = [DeliveryPolicy::Interrupt, DeliveryPolicy::Defer, DeliveryPolicy::Reconfirm][policy as usize];
        let mut r = RouterState::new(policy, 2).with_immune_turns(1);
        let who = [arch(), sec(), label("perf", "Performance")];
        r.register_advisor(&who[2], Some(DeliveryPolicy::Reconfirm), 1, Severity::Concern, ReviewMode::Turn);
        let mut review = 1;
        for (op, w, sev, note) in steps {
            let who = &who[w as usize];
            let sev = [None, Some(Severity::Nit), Some(Severity::Concern), Some(Severity::Blocker)][sev as usize];
            match op {
                0..=3 => {
                    r.raise(&ReviewRef::new(Some(who.clone()), 0, review), named(who, &format!("proptest note {note}"), sev));
                }
                4 => {
                    r.step_boundary();
                }
                5 => {
                    review += 1;
                    r.review_batch(&ReviewRef::new(Some(who.clone()), 0, review), 1, note % 2 == 0);
                    r.held_preamble(&ReviewRef::new(Some(who.clone()), 0, review));
                }
                6 => {
                    r.review_succeeded(&ReviewRef::new(Some(who.clone()), 0, review));
                    r.review_ended(Some(who));
                    r.discard_attempt(&ReviewRef::new(Some(who.clone()), 0, review));
                    if let Some(plan) = r.turn_ended(note % 2 == 0, true) {
                        r.catch_up_finished(&plan, crate::delivery::CatchUpEnd::TimedOut);
                    }
                    r.boundary(note % 3 == 0, note % 2 == 1);
                }
                7 => {
                    r.run_state(note % 2 == 0);
                    r.interrupt(note % 3 == 0);
                }
                _ => r.remove_advisor(Some(&who.slug)),
            }
        }
        proptest::prop_assert_eq!(r.counts(), &sum(&r));
    }
}
