//! The `defer` policy (P1): notes of a WIP review wait for the next final boundary.

use super::*;

#[test]
fn p1_a_wip_review_defers_nits_and_concerns_and_a_final_turn_end_releases_them_as_cards() {
    let mut r = defer();
    r.run_state(true);
    assert!(r.review_batch(&rv(0, 1), 1, true).is_empty());
    let (o1, e1) = r.raise(&rv(0, 1), adv("rename x", None));
    let (o2, e2) = r.raise(
        &rv(0, 1),
        adv("the loop never ends", Some(Severity::Concern)),
    );
    assert_eq!((o1, o2), (RaiseOutcome::Deferred, RaiseOutcome::Deferred));
    assert!(e1.is_empty() && e2.is_empty());
    assert!(
        r.step_boundary().is_empty(),
        "nothing reaches the primary mid-work"
    );
    // Raised again while deferred: queued, one note.
    assert_eq!(
        r.raise(&rv(0, 1), adv("Rename X!", None)).0,
        RaiseOutcome::Deferred
    );
    // A WIP turn end keeps them back; a final one with a terminal answer releases them
    // into its window (CA20), which sends them as one card (CA14, CA16).
    assert!(r.boundary(false, true).is_empty());
    assert!(r.boundary(true, false).is_empty());
    let events = r.close_open_window();
    let cards: Vec<Vec<&str>> = events
        .iter()
        .map(|e| match e {
            HostEvent::Card { card } => card.notes.iter().map(|n| n.note.as_str()).collect(),
            other => panic!("expected cards, got {other:?}"),
        })
        .collect();
    assert_eq!(cards, [["the loop never ends", "rename x"]]);
    assert_eq!(r.counts().card, 2);
    assert_eq!(r.counts().pending, 0);
}

#[test]
fn p1_a_blocker_goes_at_once_and_supersedes_a_deferred_note_of_the_same_key() {
    let mut r = defer();
    r.run_state(true);
    r.review_batch(&rv(0, 1), 1, true);
    r.raise(
        &rv(0, 1),
        adv("the migration drops a column", Some(Severity::Concern)),
    );
    let (outcome, events) = r.raise(
        &rv(0, 1),
        adv("The migration drops a column.", Some(Severity::Blocker)),
    );
    assert_eq!(outcome, RaiseOutcome::Delivered);
    assert_eq!(events, vec![HostEvent::SteerReady]);
    assert_eq!(r.step_boundary().steers.len(), 1);
    assert!(r.boundary(false, false).is_empty(), "nothing left deferred");
}

#[test]
fn p1_released_notes_route_by_run_state_and_a_final_review_start_releases_too() {
    // Mid-work and idle (the run stopped without an answer): nit aside, concern wake.
    let mut r = defer();
    r.run_state(true);
    r.review_batch(&rv(0, 1), 1, true);
    r.raise(&rv(0, 1), adv("tidy", None));
    r.raise(&rv(0, 1), adv("wrong table", Some(Severity::Concern)));
    r.run_state(false);
    let events = r.review_batch(&rv(0, 2), 1, false);
    assert!(
        matches!(&events[..], [HostEvent::Wake { .. }]),
        "{events:?}"
    );
    assert_eq!(r.step_boundary().aside.map(|a| a.notes.len()), Some(1));
    // Running, not after an answer: concern steers.
    let mut r = defer();
    r.run_state(true);
    r.review_batch(&rv(0, 1), 1, true);
    r.raise(&rv(0, 1), adv("wrong table", Some(Severity::Concern)));
    assert_eq!(r.boundary(false, false), vec![]);
    // CA16: at a final boundary a turn-mode concern starts no continuation.
    assert!(matches!(
        &r.close_open_window()[..],
        [HostEvent::Card { .. }]
    ));
    // After a terminal answer, outside a WIP review: nit and concern cards, blocker wake.
    let mut r = defer();
    r.boundary(true, false);
    r.close_open_window();
    r.run_state(false);
    r.review_batch(&rv(0, 1), 1, false);
    assert_eq!(
        r.raise(&rv(0, 1), adv("tidy", None)).0,
        RaiseOutcome::Delivered
    );
    let (_, events) = r.raise(&rv(0, 1), adv("wrong table", Some(Severity::Concern)));
    assert!(matches!(&events[..], [HostEvent::Card { .. }]));
    let (_, events) = r.raise(&rv(0, 1), adv("data loss", Some(Severity::Blocker)));
    assert!(matches!(&events[..], [HostEvent::Wake { .. }]));
    // The next run ends the answer's window.
    r.run_state(true);
    let (_, events) = r.raise(&rv(0, 2), adv("another risk", Some(Severity::Concern)));
    assert_eq!(events, vec![HostEvent::SteerReady]);
}

#[test]
fn p1_a_user_abort_keeps_deferred_notes_a_reset_drops_them() {
    let mut r = defer();
    r.run_state(true);
    r.review_batch(&rv(0, 1), 1, true);
    r.raise(&rv(0, 1), adv("wrong table", Some(Severity::Concern)));
    assert!(r.interrupt(true).is_empty());
    r.run_state(false);
    assert_eq!(r.undelivered().len(), 1, "still deferred");
    r.reset(1);
    assert!(r.boundary(true, false).is_empty());
    assert_eq!(r.counts().dropped.get(&DropReason::Reset), Some(&1));
    assert_eq!(r.counts().pending, 0);
    assert_eq!(r.counts().raised(), 1);
}

#[test]
fn p1_a_concern_over_budget_displaces_a_deferred_nit_of_its_review_only() {
    let mut r = defer();
    r.run_state(true);
    r.review_batch(&rv(0, 1), 1, true);
    r.raise(&rv(0, 1), adv("old nit", None));
    r.review_batch(&rv(0, 2), 1, true);
    r.raise(&rv(0, 2), adv("nit a", None));
    r.raise(&rv(0, 2), adv("nit b", None));
    assert_eq!(
        r.raise(&rv(0, 2), adv("concern c", Some(Severity::Concern)))
            .0,
        RaiseOutcome::Deferred
    );
    assert_eq!(
        r.raise(&rv(0, 2), adv("concern d", Some(Severity::Concern)))
            .0,
        RaiseOutcome::Deferred
    );
    assert_eq!(
        r.raise(&rv(0, 2), adv("concern e", Some(Severity::Concern)))
            .0,
        RaiseOutcome::Declined(DropReason::OverBudget)
    );
    let notes: Vec<String> = r
        .undelivered()
        .into_iter()
        .map(|d| d.notes[0].note.clone())
        .collect();
    assert_eq!(notes, ["old nit", "concern c", "concern d"]);
    // The displaced nit never reached the primary: no duplicate later.
    r.boundary(false, false);
    assert_eq!(
        r.raise(&rv(0, 3), adv("nit b", None)).0,
        RaiseOutcome::Delivered
    );
}
