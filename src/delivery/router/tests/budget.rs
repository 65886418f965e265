//! The note budget per session update a review covers (D8, SP3): its size, the free
//! blockers and what a note over it displaces.

use super::*;

#[test]
fn d8_a_review_of_k_updates_allows_k_times_the_budget() {
    let mut r = router();
    r.run_state(true);
    r.review_started(&rv(0, 1), 3);
    let outcomes: Vec<RaiseOutcome> = (0..7)
        .map(|i| r.raise(&rv(0, 1), adv(&format!("nit {i}"), None)).0)
        .collect();
    assert_eq!(
        outcomes
            .iter()
            .filter(|o| **o == RaiseOutcome::Recorded)
            .count(),
        6
    );
    assert_eq!(outcomes[6], RaiseOutcome::Dropped(DropReason::OverBudget));
    // The next review, of one update, has 2 places again.
    r.review_started(&rv(0, 2), 1);
    assert_eq!(r.raise(&rv(0, 2), adv("a", None)).0, RaiseOutcome::Recorded);
    assert_eq!(r.raise(&rv(0, 2), adv("b", None)).0, RaiseOutcome::Recorded);
    assert_eq!(
        r.raise(&rv(0, 2), adv("c", None)).0,
        RaiseOutcome::Dropped(DropReason::OverBudget)
    );
    // A start announced for another epoch changes nothing.
    r.review_started(&rv(5, 3), 10);
    assert_eq!(r.raise(&rv(0, 3), adv("d", None)).0, RaiseOutcome::Recorded);
    assert_eq!(r.raise(&rv(0, 3), adv("e", None)).0, RaiseOutcome::Recorded);
    assert_eq!(
        r.raise(&rv(0, 3), adv("f", None)).0,
        RaiseOutcome::Dropped(DropReason::OverBudget)
    );
}

#[test]
fn sp3_d8_a_review_s_first_two_blockers_are_free_and_later_ones_take_places() {
    let mut r = router();
    r.run_state(true);
    let outcomes: Vec<RaiseOutcome> = (0..5)
        .map(|i| {
            r.raise(
                &rv(0, 1),
                adv(&format!("blocker {i}"), Some(Severity::Blocker)),
            )
            .0
        })
        .collect();
    // Two free, two in the review's two places, the fifth over budget.
    assert_eq!(
        outcomes,
        [
            RaiseOutcome::Recorded,
            RaiseOutcome::Recorded,
            RaiseOutcome::Recorded,
            RaiseOutcome::Recorded,
            RaiseOutcome::Dropped(DropReason::OverBudget)
        ]
    );
    assert_eq!(
        r.raise(&rv(0, 1), adv("nit a", None)).0,
        RaiseOutcome::Dropped(DropReason::OverBudget),
        "the blockers took the places"
    );
    assert_eq!(r.step_boundary().steers.len(), 4);
    // The next review: two nits fill its places; its third blocker displaces the
    // newest nit the host has not taken.
    r.review_started(&rv(0, 2), 1);
    r.raise(&rv(0, 2), adv("nit x", None));
    r.raise(&rv(0, 2), adv("nit y", None));
    for i in 0..3 {
        let note = format!("later blocker {i}");
        let (outcome, _) = r.raise(&rv(0, 2), adv(&note, Some(Severity::Blocker)));
        assert_eq!(outcome, RaiseOutcome::Recorded, "{note}");
    }
    let step = r.step_boundary();
    assert_eq!(step.steers.len(), 3);
    let kept = step.aside.expect("the nit kept").notes;
    assert_eq!((kept.len(), kept[0].note.as_str()), (1, "nit x"));
    assert_eq!(r.counts().dropped.get(&DropReason::OverBudget), Some(&3));
}

#[test]
fn d8_a_concern_over_budget_displaces_the_newest_nit_the_host_has_not_taken() {
    let mut r = router();
    r.run_state(true);
    r.raise(&rv(0, 1), adv("nit a", None));
    r.raise(&rv(0, 1), adv("nit b", Some(Severity::Nit)));
    let (outcome, events) = r.raise(&rv(0, 1), adv("concern c", Some(Severity::Concern)));
    assert_eq!(outcome, RaiseOutcome::Recorded);
    assert_eq!(events, vec![HostEvent::SteerReady]);
    assert_eq!(r.counts().dropped.get(&DropReason::OverBudget), Some(&1));
    assert_eq!(r.counts().pending, 2);
    let step = r.step_boundary();
    let aside: Vec<String> = step
        .aside
        .unwrap()
        .notes
        .into_iter()
        .map(|a| a.note)
        .collect();
    assert_eq!(aside, vec!["nit a"]);
    assert_eq!(step.steers[0].notes[0].note, "concern c");
    assert_eq!(r.counts().raised(), 3);
    // The displaced nit never reached the primary: raised again later, it is no duplicate.
    assert_eq!(
        r.raise(&rv(0, 2), adv("nit b", None)).0,
        RaiseOutcome::Recorded
    );
}

#[test]
fn d8_a_note_ranking_no_higher_than_what_it_would_displace_is_dropped() {
    // No immune turns (D7): every concern steers.
    let mut r = router().with_immune_turns(0);
    r.run_state(true);
    // Concerns cannot displace concerns.
    r.raise(&rv(0, 1), adv("c1", Some(Severity::Concern)));
    r.raise(&rv(0, 1), adv("c2", Some(Severity::Concern)));
    assert_eq!(
        r.raise(&rv(0, 1), adv("c3", Some(Severity::Concern))).0,
        RaiseOutcome::Dropped(DropReason::OverBudget)
    );
    // Nits cannot displace nits.
    r.raise(&rv(0, 2), adv("n1", None));
    r.raise(&rv(0, 2), adv("n2", None));
    assert_eq!(
        r.raise(&rv(0, 2), adv("n3", None)).0,
        RaiseOutcome::Dropped(DropReason::OverBudget)
    );
    // Nits the host already took cannot be displaced.
    r.step_boundary();
    assert_eq!(
        r.raise(&rv(0, 2), adv("c4", Some(Severity::Concern))).0,
        RaiseOutcome::Dropped(DropReason::OverBudget)
    );
    // Nor can the nits of another review.
    r.raise(&rv(0, 3), adv("n4", None));
    r.raise(&rv(0, 3), adv("n5", None));
    r.review_started(&rv(0, 4), 1);
    r.raise(&rv(0, 4), adv("c5", Some(Severity::Concern)));
    r.raise(&rv(0, 4), adv("c6", Some(Severity::Concern)));
    assert_eq!(
        r.raise(&rv(0, 4), adv("c7", Some(Severity::Concern))).0,
        RaiseOutcome::Dropped(DropReason::OverBudget)
    );
    assert_eq!(r.step_boundary().aside.unwrap().notes.len(), 2);
    assert_eq!(r.counts().dropped.get(&DropReason::OverBudget), Some(&4));
}

#[test]
fn d8_stress_blockers_survive_sixty_turns_of_notes_that_nits_do_not() {
    // Sixty turns, one review each, every review over budget: three nits, a concern
    // and, every tenth turn, a blocker last.
    // No immune turns (D7): every concern steers.
    let mut r = RouterState::new(DeliveryPolicy::Interrupt, 2).with_immune_turns(0);
    r.run_state(true);
    let mut blockers = 0;
    for turn in 1..=60u64 {
        r.review_started(&rv(0, turn), 1);
        for i in 0..3 {
            r.raise(&rv(0, turn), adv(&format!("turn {turn} nit {i}"), None));
        }
        r.raise(
            &rv(0, turn),
            adv(&format!("turn {turn} concern"), Some(Severity::Concern)),
        );
        if turn % 10 == 0 {
            blockers += 1;
            let (outcome, _) = r.raise(
                &rv(0, turn),
                adv(&format!("turn {turn} blocker"), Some(Severity::Blocker)),
            );
            assert_eq!(outcome, RaiseOutcome::Recorded, "turn {turn}");
        }
        r.step_boundary();
        r.turn_ended(false, true);
    }
    let c = r.counts();
    // Per turn: one nit and the concern kept (the concern displaced the second nit),
    // the third nit dropped; every blocker delivered.
    assert_eq!(c.aside, 60);
    assert_eq!(c.steer, 60 + blockers);
    assert_eq!(c.dropped.get(&DropReason::OverBudget), Some(&120));
    assert_eq!(c.raised(), 60 * 4 + blockers);
}

#[test]
fn d8_d4_under_reconfirm_a_held_concern_over_budget_displaces_a_queued_nit() {
    let mut r = reconfirm();
    r.run_state(true);
    r.raise(&rv(0, 1), adv("nit a", None));
    r.raise(&rv(0, 1), adv("nit b", None));
    assert_eq!(
        r.raise(&rv(0, 1), adv("concern c", Some(Severity::Concern)))
            .0,
        RaiseOutcome::Held
    );
    assert_eq!(r.step_boundary().aside.unwrap().notes.len(), 1);
    assert_eq!(r.counts().dropped.get(&DropReason::OverBudget), Some(&1));
    assert_eq!(r.counts().held, 1);
}
