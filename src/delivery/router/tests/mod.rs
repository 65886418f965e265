//! The unit tests of the router's state ([`super::RouterState`]) and of the advisors'
//! guards ([`crate::delivery::advisors`]), by concern.

mod budget;
mod deferred;
mod guards;
mod merge;
mod roster;
mod routing;

use super::*;
use crate::delivery::advisors::*;
use crate::delivery::testing::{adv, defer, reconfirm, router, rv};
use crate::domain::host::HostEvent;
use proptest::prelude::*;

fn label(slug: &str, name: &str) -> AdvisorLabel {
    AdvisorLabel::new(slug, name)
}

fn arch() -> AdvisorLabel {
    label("architecture", "Architecture")
}

fn sec() -> AdvisorLabel {
    label("security", "Security")
}

/// A note of `who`, named as the executor names it (RO18).
fn named(who: &AdvisorLabel, note: &str, sev: Option<Severity>) -> Advisory {
    adv(note, sev).with_advisor(&*who.name)
}

fn raise(
    r: &mut RouterState,
    who: &AdvisorLabel,
    review: u64,
    note: &str,
    sev: Option<Severity>,
) -> (RaiseOutcome, Vec<HostEvent>) {
    r.raise(
        &ReviewRef::new(Some(who.clone()), 0, review),
        named(who, note, sev),
    )
}

fn card_of(events: &[HostEvent]) -> &str {
    match events {
        [HostEvent::Wake { card }] | [HostEvent::Card { card }] => &card.content,
        other => panic!("expected one wake or card, got {other:?}"),
    }
}

/// The sum of the named advisors' counters.
fn sum(r: &RouterState) -> crate::delivery::DeliveryCounts {
    let mut total = crate::delivery::DeliveryCounts::default();
    for c in r.per_advisor().values() {
        total.aside += c.aside;
        total.steer += c.steer;
        total.wake += c.wake;
        total.card += c.card;
        total.held += c.held;
        total.reconfirmed += c.reconfirmed;
        total.pending += c.pending;
        total.capped += c.capped;
        total.wakes_refused += c.wakes_refused;
        for (reason, n) in &c.dropped {
            total.drop(*reason, *n);
        }
    }
    total
}
