//! The same note of two advisors about one update goes out once (RO22).

use super::*;

#[test]
fn ro22_the_same_note_of_two_advisors_about_one_update_goes_out_once_naming_both() {
    let mut r = router();
    r.run_state(true);
    let (a, s) = (arch(), sec());
    assert_eq!(
        raise(&mut r, &a, 1, "Check the null case.", None).0,
        RaiseOutcome::Recorded
    );
    let (outcome, events) = raise(
        &mut r,
        &s,
        1,
        "check  the NULL case",
        Some(Severity::Concern),
    );
    assert_eq!(outcome, RaiseOutcome::Dropped(DropReason::DuplicateOf));
    assert!(
        outcome.tool_text(4).contains("another advisor"),
        "{}",
        outcome.tool_text(4)
    );
    // Merged at the higher severity: the nit left the aside queue and steers.
    assert_eq!(events, vec![HostEvent::SteerReady]);
    let step = r.step_boundary();
    assert!(step.aside.is_none());
    assert_eq!(step.steers.len(), 1);
    assert!(
        step.steers[0].content.starts_with(
            "<advisory advisor=\"Architecture, Security\" severity=\"concern\" guidance="
        ),
        "{}",
        step.steers[0].content
    );
    assert!(
        step.steers[0].content.contains("\nCheck the null case.\n"),
        "the first text"
    );
    assert_eq!(r.per_advisor()["architecture"].steer, 1);
    assert_eq!(
        r.per_advisor()["security"].dropped[&DropReason::DuplicateOf],
        1
    );
    assert_eq!(r.counts().raised(), 2);
    // Neither says it again.
    assert_eq!(
        raise(
            &mut r,
            &s,
            1,
            "check the null case",
            Some(Severity::Concern)
        )
        .0,
        RaiseOutcome::Dropped(DropReason::Duplicate)
    );
    assert_eq!(
        raise(
            &mut r,
            &a,
            1,
            "check the null case",
            Some(Severity::Concern)
        )
        .0,
        RaiseOutcome::Dropped(DropReason::Duplicate)
    );
}

#[test]
fn ro22_merges_into_steers_and_held_notes_but_not_across_updates_or_once_delivered() {
    let (a, s) = (arch(), sec());
    // Into an outbox steer: one card naming both, at the higher severity.
    let mut r = router();
    r.run_state(true);
    raise(
        &mut r,
        &a,
        1,
        "the loop never ends",
        Some(Severity::Concern),
    );
    let (outcome, events) = raise(
        &mut r,
        &s,
        1,
        "The loop never ends!",
        Some(Severity::Blocker),
    );
    assert_eq!(
        (outcome, events),
        (RaiseOutcome::Dropped(DropReason::DuplicateOf), vec![])
    );
    let steers = r.step_boundary().steers;
    assert_eq!(steers.len(), 1);
    assert!(steers[0]
        .content
        .starts_with("<advisory advisor=\"Architecture, Security\" severity=\"blocker\""));
    // Once delivered, the other advisor's note goes out on its own.
    assert_eq!(
        raise(&mut r, &a, 1, "rename x", None).0,
        RaiseOutcome::Recorded
    );
    r.step_boundary();
    assert_eq!(
        raise(&mut r, &s, 1, "rename x", None).0,
        RaiseOutcome::Recorded
    );
    // Another update (a turn end between the reviews' starts): not merged.
    r.turn_ended(false, true);
    r.review_batch(&ReviewRef::new(Some(a.clone()), 0, 2), 1, false);
    raise(&mut r, &a, 2, "use a slice", None);
    r.turn_ended(false, true);
    r.review_batch(&ReviewRef::new(Some(s.clone()), 0, 2), 1, false);
    assert_eq!(
        raise(&mut r, &s, 2, "use a slice", None).0,
        RaiseOutcome::Recorded
    );
    assert_eq!(r.step_boundary().aside.unwrap().notes.len(), 3);
    // The unnamed advisor's notes are never merged (RO12).
    r.raise(&rv(0, 3), adv("unnamed point", None));
    assert_eq!(
        raise(&mut r, &a, 3, "unnamed point", None).0,
        RaiseOutcome::Recorded
    );
    // Into a held note: held once, naming both.
    let mut h = RouterState::new(DeliveryPolicy::Reconfirm, 2);
    raise(&mut h, &a, 1, "data loss", Some(Severity::Concern));
    assert_eq!(
        raise(&mut h, &s, 1, "data loss", Some(Severity::Blocker)).0,
        RaiseOutcome::Dropped(DropReason::DuplicateOf)
    );
    assert_eq!(h.held().len(), 1);
    assert_eq!(
        h.held()[0].advisory.advisor.as_deref(),
        Some("Architecture, Security")
    );
    assert_eq!(h.held()[0].advisory.severity, Some(Severity::Blocker));
    assert_eq!(h.undelivered()[0].channel, Channel::Wake);
}

#[test]
fn ro22_a_merged_note_dropped_for_its_first_advisor_is_forgotten_by_both() {
    let (a, s) = (arch(), sec());
    // Displaced by the first advisor's budget.
    let mut r = router();
    r.run_state(true);
    raise(&mut r, &a, 1, "nit one", None);
    raise(&mut r, &a, 1, "check the null case", None);
    assert_eq!(
        raise(&mut r, &s, 1, "Check the null case", None).0,
        RaiseOutcome::Dropped(DropReason::DuplicateOf)
    );
    assert_eq!(
        raise(&mut r, &a, 1, "wrong table", Some(Severity::Concern)).0,
        RaiseOutcome::Recorded
    );
    let aside = r.step_boundary().aside.expect("the first nit");
    assert_eq!(aside.notes.len(), 1, "the merged note was displaced");
    assert_eq!(
        raise(&mut r, &s, 2, "check the null case", None).0,
        RaiseOutcome::Recorded,
        "Security never got it to the primary"
    );
    // Its first advisor removed.
    let mut r = router();
    r.run_state(true);
    raise(&mut r, &a, 1, "check the null case", None);
    raise(&mut r, &s, 1, "check the null case", None);
    r.remove_advisor(Some(&a.slug));
    assert!(r.step_boundary().is_empty());
    assert_eq!(
        raise(&mut r, &s, 2, "check the null case", None).0,
        RaiseOutcome::Recorded
    );
    // Its first advisor's attempt discarded (a deferred note, P1).
    let mut r = crate::delivery::testing::defer();
    r.run_state(true);
    r.review_batch(&ReviewRef::new(Some(a.clone()), 0, 1), 1, true);
    r.review_batch(&ReviewRef::new(Some(s.clone()), 0, 1), 1, true);
    raise(&mut r, &a, 1, "check the null case", None);
    raise(&mut r, &s, 1, "check the null case", None);
    r.discard_attempt(&ReviewRef::new(Some(a.clone()), 0, 1));
    assert!(r.undelivered().is_empty());
    assert_eq!(
        raise(&mut r, &s, 1, "check the null case", None).0,
        RaiseOutcome::Deferred
    );
}

#[test]
fn ro22_d9_a_held_merge_follows_reconfirmation_and_a_recant_does_not_silence_the_other() {
    let (a, s) = (arch(), sec());
    let mut r = RouterState::new(DeliveryPolicy::Reconfirm, 2);
    raise(&mut r, &a, 1, "data loss", Some(Severity::Concern));
    r.turn_ended(false, true);
    // Architecture reconfirms it in the next update: the held note is about that one now.
    r.held_preamble(&ReviewRef::new(Some(a.clone()), 0, 2));
    assert_eq!(
        raise(&mut r, &a, 2, "data loss", None).0,
        RaiseOutcome::Reconfirmed
    );
    r.review_batch(&ReviewRef::new(Some(s.clone()), 0, 1), 1, false);
    assert_eq!(
        raise(&mut r, &s, 1, "Data loss", Some(Severity::Concern)).0,
        RaiseOutcome::Dropped(DropReason::DuplicateOf)
    );
    r.review_succeeded(&ReviewRef::new(Some(a.clone()), 0, 2));
    r.turn_ended(false, true);
    // Architecture recants it: gone. Security still thinks so: its own note, held.
    r.held_preamble(&ReviewRef::new(Some(a.clone()), 0, 3));
    r.review_succeeded(&ReviewRef::new(Some(a.clone()), 0, 3));
    assert!(r.held().is_empty());
    assert_eq!(
        raise(&mut r, &s, 2, "data loss", Some(Severity::Concern)).0,
        RaiseOutcome::Held
    );
    assert_eq!(r.held()[0].advisory.advisor.as_deref(), Some("Security"));
}

/// RO22 under each policy: two advisors review the final turn and raise the same concern;
/// the primary gets one delivery naming both, however the policy routes it — a card after
/// the terminal answer (`defer`, the default), a wake (`interrupt`), a held note released
/// by the catch-up (`reconfirm`) — and the second advisor's note counts `duplicateOf`.
#[test]
fn ro22_under_each_policy_two_advisors_same_concern_about_the_final_turn_is_delivered_once() {
    use crate::delivery::CatchUpEnd;
    let (a, s) = (arch(), sec());
    for policy in [
        DeliveryPolicy::Defer,
        DeliveryPolicy::Interrupt,
        DeliveryPolicy::Reconfirm,
    ] {
        let mut r = RouterState::new(policy, 2);
        // The final answer: the turn ends, the run settles, both reviews start.
        r.run_state(true);
        let mut events = r.boundary(true, false);
        let plan = r.turn_ended(true, true);
        events.extend(r.run_state(false));
        events.extend(r.review_batch(&ReviewRef::new(Some(a.clone()), 0, 1), 1, false));
        events.extend(r.review_batch(&ReviewRef::new(Some(s.clone()), 0, 1), 1, false));
        let mut outcomes = Vec::new();
        for (who, note) in [
            (&a, "the migration drops a column"),
            (&s, "The migration drops a column."),
        ] {
            let (outcome, raised) = raise(&mut r, who, 1, note, Some(Severity::Concern));
            outcomes.push(outcome);
            events.extend(raised);
            r.review_succeeded(&ReviewRef::new(Some(who.clone()), 0, 1));
            events.extend(r.review_ended(Some(who)));
        }
        let [first, second] = [outcomes[0].clone(), outcomes[1].clone()];
        if let Some(plan) = plan {
            events.extend(r.catch_up_finished(&plan, CatchUpEnd::Settled));
        }
        events.extend(r.close_open_window());
        events.extend(
            r.step_boundary()
                .steers
                .into_iter()
                .map(|card| HostEvent::Card { card }),
        );
        let delivered: Vec<&Delivery> = events
            .iter()
            .filter_map(|e| match e {
                HostEvent::Card { card } | HostEvent::Wake { card } => Some(card),
                _ => None,
            })
            .collect();
        assert_eq!(delivered.len(), 1, "{policy:?}: {events:?}");
        assert!(
            delivered[0]
                .content
                .contains("advisor=\"Architecture, Security\""),
            "{policy:?}: {}",
            delivered[0].content
        );
        assert_ne!(
            first,
            RaiseOutcome::Dropped(DropReason::DuplicateOf),
            "{policy:?}"
        );
        assert!(
            matches!(
                second,
                RaiseOutcome::Dropped(DropReason::DuplicateOf)
                    | RaiseOutcome::Declined(DropReason::DuplicateOf)
            ),
            "{policy:?}: {second:?}"
        );
        assert_eq!(r.counts().pending, 0, "{policy:?}");
    }
}

/// RO22: a card waits only for another advisor's review of the same update; once every
/// such review ended — or at the next turn end — it goes out, and a card of an advisor
/// nobody else is reviewing with goes out at once.
#[test]
fn ro22_a_card_waits_for_the_other_review_of_its_update_and_no_longer() {
    let (a, s) = (arch(), sec());
    let mut r = RouterState::new(DeliveryPolicy::Defer, 2);
    r.boundary(true, false);
    r.turn_ended(true, true);
    r.close_open_window();
    r.review_batch(&ReviewRef::new(Some(a.clone()), 0, 1), 1, false);
    // Alone: out at once.
    let (_, events) = raise(&mut r, &a, 1, "rename the flag", Some(Severity::Concern));
    assert_eq!(events.len(), 1, "{events:?}");
    r.review_batch(&ReviewRef::new(Some(s.clone()), 0, 1), 1, false);
    let (_, events) = raise(&mut r, &a, 1, "add a test", Some(Severity::Concern));
    assert!(events.is_empty(), "waits for Security's review");
    assert_eq!(r.undelivered().len(), 1);
    let out = r.review_ended(Some(&s));
    assert_eq!(out.len(), 1, "{out:?}");
    // Waiting again; the next turn end sends it whatever still runs.
    r.review_batch(&ReviewRef::new(Some(a.clone()), 0, 2), 1, false);
    r.review_batch(&ReviewRef::new(Some(s.clone()), 0, 2), 1, false);
    raise(&mut r, &a, 2, "log the error", Some(Severity::Concern));
    let out = r.boundary(false, true);
    assert!(
        matches!(&out[..], [HostEvent::Card { card }] if card.content.contains("log the error")),
        "{out:?}"
    );
    assert_eq!(r.counts().pending, 0);
}
