//! RO22: a named advisor's note another named advisor already raised about the same update is
//! merged into that one, wherever it waits.

use super::RouterState;
use crate::delivery::advisors::{add_advisor_name, Origin};
use crate::delivery::outcome::{DropReason, RaiseOutcome};
use crate::domain::advice::{Advisory, Channel, Severity};
use crate::domain::host::HostEvent;

impl RouterState {
    /// RO22: a named advisor's note another named advisor already raised about the same
    /// update is merged into that one (see [`Self::merge_duplicate`]) and counted as
    /// `duplicateOf`; `None` when it is unnamed or there is nothing to merge into.
    pub(super) fn merge_across_advisors(
        &mut self,
        origin: &Origin,
        key: &str,
        advisory: &Advisory,
    ) -> Option<(RaiseOutcome, Vec<HostEvent>)> {
        origin.owner.as_ref()?;
        let events = self.merge_duplicate(origin, key, advisory)?;
        Some((
            self.drop_note(&origin.owner, DropReason::DuplicateOf),
            events,
        ))
    }

    /// RO22: a note of the named advisor of `origin` that another named advisor raised about
    /// the same update (equal keys: D8's normalisation, case-insensitive) and the primary
    /// has not got yet — queued, in the outbox, deferred or held — is merged into that
    /// note: one note naming both, in raise order, at the higher severity. A merged nit
    /// that now interrupts leaves the aside queue and is routed again; a deferred note
    /// that became a blocker goes at once (P1). Both advisors remember the note at the
    /// merged severity, except when it is held: held notes are remembered when they go
    /// out (D8), and a held note its advisor recants (D9) is not the other's to lose, so
    /// the other may raise it again. The other advisor becomes a co-author of the note
    /// ([`Origin::co_authors`]). `None` when there is no such note.
    pub(super) fn merge_duplicate(
        &mut self,
        origin: &Origin,
        key: &str,
        incoming: &Advisory,
    ) -> Option<Vec<HostEvent>> {
        let author = origin.owner.clone()?;
        let co_author = |into: &mut Origin| {
            if !into.co_authors.contains(&author) {
                into.co_authors.push(author.clone());
            }
        };
        let same = |k: &str, o: &Origin| {
            k == key && o.update == origin.update && o.owner.is_some() && o.owner != origin.owner
        };
        let name = incoming.advisor.clone().unwrap_or_default();
        let severity = incoming.effective_severity();
        let merge = |into: &mut Advisory| {
            add_advisor_name(into, &name);
            into.add_model(incoming.model.as_deref());
            if severity > into.effective_severity() {
                into.severity = incoming.severity;
            }
            tracing::info!(
                advisors = into.advisor.as_deref().unwrap_or(""),
                severity = into.effective_severity().as_str(),
                "advisory merged with another advisor's"
            );
        };
        if let Some(i) = self
            .outbox
            .asides
            .iter()
            .position(|q| same(&q.key, &q.origin))
        {
            merge(&mut self.outbox.asides[i].advisory);
            co_author(&mut self.outbox.asides[i].origin);
            let owner = self.outbox.asides[i].origin.owner.clone();
            let merged = self.outbox.asides[i].advisory.effective_severity();
            self.remember(&owner, key, merged);
            self.remember(&origin.owner, key, merged);
            if self.channel_for(&owner, merged) == Channel::Aside {
                return Some(Vec::new());
            }
            let queued = self.outbox.asides.remove(i);
            self.tally(&queued.origin.owner, |c| c.pending -= 1);
            return Some(self.route(queued.advisory, queued.key, queued.origin, queued.raised_by));
        }
        if let Some(i) = self
            .outbox
            .steers
            .iter()
            .position(|s| same(&s.key, &s.origin))
        {
            let steer = &mut self.outbox.steers[i];
            co_author(&mut steer.origin);
            let note = steer.card.notes.first_mut()?;
            merge(note);
            let merged = note.clone();
            let owner = steer.origin.owner.clone();
            let policy = self.guards.policy(&owner);
            self.remember(&owner, key, merged.effective_severity());
            self.remember(&origin.owner, key, merged.effective_severity());
            self.outbox.steers[i].card = self.build(Channel::Steer, vec![(merged, policy)]);
            return Some(Vec::new());
        }
        if let Some(i) = self
            .outbox
            .cards
            .iter()
            .position(|c| same(&c.key, &c.origin))
        {
            let card = &mut self.outbox.cards[i];
            co_author(&mut card.origin);
            let note = card.card.notes.first_mut()?;
            merge(note);
            let merged = note.clone();
            let owner = card.origin.owner.clone();
            let policy = self.guards.policy(&owner);
            let severity = merged.effective_severity();
            self.remember(&owner, key, severity);
            self.remember(&origin.owner, key, severity);
            let channel = self.channel_for(&owner, severity);
            if channel == Channel::Card
                || (channel == Channel::Wake && severity != Severity::Blocker)
            {
                self.outbox.cards[i].card = self.build(channel, vec![(merged, policy)]);
                return Some(Vec::new());
            }
            // Merged into a blocker: it goes at once (P1).
            let waiting = self.outbox.cards.remove(i);
            self.tally(&owner, |c| c.pending -= 1);
            return Some(self.route(merged, waiting.key, waiting.origin, None));
        }
        if let Some(note) = self.deferred.find_mut(|n| same(&n.key, &n.origin)) {
            merge(&mut note.advisory);
            co_author(&mut note.origin);
            let (owner, merged) = (note.origin.owner.clone(), note.severity());
            self.remember(&owner, key, merged);
            self.remember(&origin.owner, key, merged);
            if merged != Severity::Blocker {
                return Some(Vec::new());
            }
            // P1: a blocker goes at once.
            let note = self.deferred.remove(|n| same(&n.key, &n.origin))?;
            self.tally(&owner, |c| c.pending -= 1);
            return Some(self.route(note.advisory, note.key, note.origin, Some(note.review)));
        }
        let buffered = self
            .window
            .as_mut()
            .and_then(|w| w.notes.iter_mut().find(|n| same(&n.key, &n.origin)));
        if let Some(note) = buffered {
            // CA13: RO22 merges inside the window too.
            merge(&mut note.advisory);
            co_author(&mut note.origin);
            let (owner, merged) = (
                note.origin.owner.clone(),
                note.advisory.effective_severity(),
            );
            self.remember(&owner, key, merged);
            self.remember(&origin.owner, key, merged);
            return Some(Vec::new());
        }
        let held = self.held.find_mut(|h| same(&h.key, &h.origin))?;
        merge(&mut held.advisory);
        co_author(&mut held.origin);
        Some(Vec::new())
    }
}
