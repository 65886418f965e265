//! What the router accumulates for the host (D3, RO22, CA14): the nits queued for the next
//! step boundary, the outbox's steering cards and the cards that wait for another
//! advisor's review of their update. Pure data; the router decides what goes in and when
//! it goes out.

use super::advisors::{Origin, Owner};
use super::budget::ReviewId;
use crate::domain::advice::{Advisory, Delivery, Severity};

/// A nit (or an immune concern) waiting in the aside queue for the next step boundary.
#[derive(Debug, Clone)]
pub(super) struct QueuedAside {
    pub(super) advisory: Advisory,
    /// The dedupe key.
    pub(super) key: String,
    /// Its advisor and update (RO13, RO22).
    pub(super) origin: Origin,
    /// The review that raised it; `None` for a held note released by a catch-up block.
    pub(super) raised_by: Option<ReviewId>,
}

/// A steering card in the outbox, waiting for the next step boundary.
#[derive(Debug, Clone)]
pub(super) struct OutboxSteer {
    pub(super) card: Delivery,
    /// The dedupe key of its (first) note.
    pub(super) key: String,
    /// Its (first) note's advisor and update (RO13, RO22).
    pub(super) origin: Origin,
    /// The advisors and updates of the other notes of a merged final-boundary delivery
    /// (CA14), in its order; empty for a card of one note. A merged card is one message: it
    /// goes out whole.
    pub(super) others: Vec<Origin>,
}

impl OutboxSteer {
    /// A card of one note.
    pub(super) fn single(card: Delivery, key: String, origin: Origin) -> Self {
        Self {
            card,
            key,
            origin,
            others: Vec::new(),
        }
    }

    /// The advisors of its notes, one entry per note.
    pub(super) fn owners(&self) -> impl Iterator<Item = &Owner> {
        std::iter::once(&self.origin.owner).chain(self.others.iter().map(|o| &o.owner))
    }
}

/// The notes and cards waiting for the host.
#[derive(Debug, Clone, Default)]
pub(super) struct Outbox {
    /// The nits (and immune concerns) for the next step boundary, as one aside (D3).
    pub(super) asides: Vec<QueuedAside>,
    /// The steering cards for the next step boundary, or the wake when the primary goes
    /// idle (A5).
    pub(super) steers: Vec<OutboxSteer>,
    /// Cards of a named advisor waiting for another named advisor's review of the same
    /// update to end (RO22): its same note merges into them instead of going out as a
    /// second card. They go out when no such review runs any more, or at the next turn end.
    pub(super) cards: Vec<OutboxSteer>,
}

impl Outbox {
    /// Takes the queued nits, steers and waiting cards whose origin is `ours`, as (origin,
    /// key, severity). A merged final-boundary card (CA14) is one message of several
    /// advisors and stays whole.
    pub(super) fn take_single(
        &mut self,
        ours: impl Fn(&Origin) -> bool,
    ) -> Vec<(Origin, String, Severity)> {
        let (asides, kept): (Vec<QueuedAside>, Vec<QueuedAside>) = std::mem::take(&mut self.asides)
            .into_iter()
            .partition(|q| ours(&q.origin));
        self.asides = kept;
        let mut gone: Vec<(Origin, String, Severity)> = asides
            .into_iter()
            .map(|q| {
                let severity = q.advisory.effective_severity();
                (q.origin, q.key, severity)
            })
            .collect();
        for outbox in [&mut self.steers, &mut self.cards] {
            let (theirs, kept): (Vec<OutboxSteer>, Vec<OutboxSteer>) = std::mem::take(outbox)
                .into_iter()
                .partition(|s| ours(&s.origin) && s.others.is_empty());
            *outbox = kept;
            gone.extend(theirs.into_iter().map(|s| {
                let severity = s
                    .card
                    .notes
                    .first()
                    .map_or(Severity::Nit, Advisory::effective_severity);
                (s.origin, s.key, severity)
            }));
        }
        gone
    }

    /// Empties it, answering the advisor of each note it held, one entry per note.
    pub(super) fn take_owners(&mut self) -> Vec<Owner> {
        let outbox: Vec<OutboxSteer> = std::mem::take(&mut self.steers)
            .into_iter()
            .chain(std::mem::take(&mut self.cards))
            .collect();
        std::mem::take(&mut self.asides)
            .into_iter()
            .map(|q| q.origin.owner)
            .chain(outbox.iter().flat_map(|s| s.owners().cloned()))
            .collect()
    }
}
