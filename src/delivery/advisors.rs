//! The advisors a session's router serves (RO12, RO13, RO15, RO16): each its own emission
//! guard — D8 budget per update counted per (advisor, review), dedupe memory — its own
//! delivery policy and severity cap. The unnamed advisor (`None`, RO12) uses the session's
//! settings; a named advisor the router was not told about ([`Guards::register`]) too.
//! Pure data; the router decides.

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::budget::{NoteBudget, ReviewId};
use super::guard::{GuardHistory, HISTORY_CAP};
use super::lane::RecentNotes;
use crate::domain::advice::{AdvisorLabel, Advisory, Severity};
use crate::settings::{DeliveryPolicy, ReviewMode};
use crate::texts::exceeds_chars;

/// Whose a note is: a named advisor's slug, or `None` for the unnamed advisor (RO12).
pub type Owner = Option<Arc<str>>;

/// The session update a review covers, as the router tells updates apart (RO22): the epoch
/// and how many primary turn ends the router had heard of in the session when the review
/// started. Every advisor reviews the delta of a turn end after the router hears of it (the
/// supervisor tells the router first), so reviews started between the same two turn ends,
/// in the same epoch, cover the same update.
pub type UpdateId = (u64, u64);

/// Where a note waiting in the router came from: its advisor, the update its review
/// covered and the advisors whose same note was merged into it (RO13, RO22).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Origin {
    /// The advisor that raised it.
    pub owner: Owner,
    /// The update its review covered (a reconfirmation moves it to the reconfirming
    /// review's, RO22).
    pub update: UpdateId,
    /// The slugs of the other named advisors whose same note was merged into it (RO22), in
    /// raise order: they remember it too, and forget it when it is dropped before it
    /// reaches the primary for a reason of its owner's (displaced, removed, discarded).
    pub co_authors: Vec<Arc<str>>,
}

/// One advisor's guard and delivery settings.
#[derive(Debug, Clone)]
pub(super) struct AdvisorGuard {
    /// Its display name (RO7); `None` for the unnamed advisor.
    pub(super) name: Option<Arc<str>>,
    /// Its delivery policy (RO15).
    pub(super) policy: DeliveryPolicy,
    /// The highest severity it may deliver (RO16).
    pub(super) max_severity: Severity,
    /// Its review mode (CA1): whether its concern asks for a continuation on its own
    /// (CA16, CA18).
    pub(super) review_mode: ReviewMode,
    /// Its note budget (D8, RO10).
    pub(super) budget: NoteBudget,
    /// Its dedupe memory (D8, P3).
    pub(super) history: GuardHistory,
    /// Its notes of the last 20 primary turns, for the near-duplicate check (SP3).
    pub(super) recent: RecentNotes,
    /// Its review in progress covers a WIP batch (P1, under `defer`).
    pub(super) wip_review: Option<ReviewId>,
    /// The update its review in progress covers (RO22).
    pub(super) update: Option<(ReviewId, UpdateId)>,
    /// A review of it is running (from its start until the agent says it ended): cards of
    /// the same update wait for it (RO22).
    pub(super) reviewing: bool,
}

impl AdvisorGuard {
    fn new(name: Option<Arc<str>>, policy: DeliveryPolicy, per_update: usize) -> Self {
        Self {
            name,
            policy,
            max_severity: Severity::Blocker,
            review_mode: ReviewMode::Turn,
            budget: NoteBudget::new(per_update),
            history: GuardHistory::new(),
            recent: RecentNotes::default(),
            wip_review: None,
            update: None,
            reviewing: false,
        }
    }

    /// Remembers that its note `key` goes out at `rank` in primary turn `turn`: in the
    /// dedupe memory (P3) and among its recent notes (SP3).
    pub(super) fn remember(&mut self, turn: u64, key: &str, rank: u8) {
        self.history.record(key, rank);
        self.recent.record(turn, key, rank);
    }

    /// Forgets its note `key` at `rank`: it was dropped before it reached the primary, so
    /// a later repeat is neither a duplicate (P3) nor a near duplicate (SP3) of it.
    pub(super) fn forget(&mut self, key: &str, rank: u8) {
        self.history.forget(key, rank);
        self.recent.forget(key, rank);
    }

    /// The update review `id` covers: the one recorded when it started, else `now`
    /// (recorded for its later notes).
    pub(super) fn update_of(&mut self, id: ReviewId, now: UpdateId) -> UpdateId {
        match self.update {
            Some((review, update)) if review == id => update,
            _ => {
                self.update = Some((id, now));
                now
            }
        }
    }
}

/// The guards of the unnamed advisor and of every named advisor the router heard of.
#[derive(Debug, Clone)]
pub(super) struct Guards {
    unnamed: AdvisorGuard,
    named: BTreeMap<Arc<str>, AdvisorGuard>,
    /// The unnamed advisor reviewed something since it last (re)started: its policy is in
    /// use (RO15). A raise alone (`/advisor test`, C2) does not count.
    unnamed_used: bool,
    /// The advisors that left the roster (RO21; `None`: the unnamed advisor replaced by
    /// the roster's entries): what their reviews still raise is dropped `removed`, and no
    /// guard is made for them again until they are registered again.
    removed: BTreeSet<Owner>,
    /// The named advice of the branch last seeded from (P3, the newest
    /// [`HISTORY_CAP`]), to seed an advisor the router hears of only later.
    branch_seed: Vec<Advisory>,
}

impl Guards {
    /// The guards of a session whose settings are `policy` and `per_update` notes per
    /// update.
    pub(super) fn new(policy: DeliveryPolicy, per_update: usize) -> Self {
        Self {
            unnamed: AdvisorGuard::new(None, policy, per_update),
            named: BTreeMap::new(),
            unnamed_used: false,
            removed: BTreeSet::new(),
            branch_seed: Vec::new(),
        }
    }

    /// The session's policy (the unnamed advisor's).
    pub(super) fn session_policy(&self) -> DeliveryPolicy {
        self.unnamed.policy
    }

    /// The session's notes per update (the unnamed advisor's).
    pub(super) fn session_per_update(&self) -> usize {
        self.unnamed.budget.per_update()
    }

    /// Whether `owner` left the roster and was not registered again (RO21).
    pub(super) fn is_removed(&self, owner: &Owner) -> bool {
        self.removed.contains(owner)
    }

    /// A review of the advisor `label` starts: the unnamed advisor's policy is in use from
    /// now on (RO15).
    pub(super) fn reviewing(&mut self, label: Option<&AdvisorLabel>) {
        if label.is_none() {
            self.unnamed_used = true;
        }
    }

    /// The guard of `label`'s advisor, made with the session's settings when the router
    /// has not heard of it yet. Callers check [`Guards::is_removed`] first: a removed
    /// advisor's guard is not made again.
    pub(super) fn for_label(&mut self, label: Option<&AdvisorLabel>) -> &mut AdvisorGuard {
        match label {
            None => &mut self.unnamed,
            Some(label) => {
                let known = if self.named.contains_key(&label.slug) {
                    Vec::new()
                } else {
                    self.known_names()
                };
                match self.named.entry(label.slug.clone()) {
                    Entry::Occupied(entry) => entry.into_mut(),
                    Entry::Vacant(entry) => {
                        let mut guard = AdvisorGuard::new(
                            Some(label.name.clone()),
                            self.unnamed.policy,
                            self.unnamed.budget.per_update(),
                        );
                        // Heard of after the branch was seeded: seeded now (P3).
                        seed_named(&mut guard, &self.branch_seed, &known);
                        entry.insert(guard)
                    }
                }
            }
        }
    }

    /// The guard of `owner`, if the router knows it.
    pub(super) fn get_mut(&mut self, owner: &Owner) -> Option<&mut AdvisorGuard> {
        match owner {
            None => Some(&mut self.unnamed),
            Some(slug) => self.named.get_mut(slug),
        }
    }

    /// The policy `owner`'s notes are delivered under: its own, else the session's.
    pub(super) fn policy(&self, owner: &Owner) -> DeliveryPolicy {
        owner
            .as_ref()
            .and_then(|slug| self.named.get(slug))
            .map_or(self.unnamed.policy, |g| g.policy)
    }

    /// The review mode of `owner` (CA1): its own, else the unnamed advisor's (the live
    /// `advisor.reviewMode`, CA5).
    pub(super) fn review_mode(&self, owner: &Owner) -> ReviewMode {
        owner
            .as_ref()
            .and_then(|slug| self.named.get(slug))
            .map_or(self.unnamed.review_mode, |g| g.review_mode)
    }

    /// The unnamed advisor reviews in `mode` now (CA5: the settings are read at every
    /// boundary).
    pub(super) fn set_unnamed_review_mode(&mut self, mode: ReviewMode) {
        self.unnamed.review_mode = mode;
    }

    /// Whether a note of any advisor in use may be delivered under `policy`: the named
    /// advisors' policies, and the session's when the unnamed advisor is in use or no
    /// named one is known (and the unnamed advisor was not removed, RO21).
    pub(super) fn uses(&self, policy: DeliveryPolicy) -> bool {
        let unnamed = (self.named.is_empty() || self.unnamed_used) && !self.removed.contains(&None);
        (unnamed && self.unnamed.policy == policy)
            || self.named.values().any(|g| g.policy == policy)
    }

    /// Whether a named advisor other than `origin`'s owner and its co-authors is reviewing
    /// the update of `origin` now (RO22): its same note would merge into `origin`'s.
    pub(super) fn another_reviewing(&self, origin: &Origin) -> bool {
        self.named.iter().any(|(slug, g)| {
            g.reviewing
                && origin.owner.as_ref() != Some(slug)
                && !origin.co_authors.contains(slug)
                && g.update.is_some_and(|(_, update)| update == origin.update)
        })
    }

    /// Every guard.
    pub(super) fn all_mut(&mut self) -> impl Iterator<Item = &mut AdvisorGuard> {
        std::iter::once(&mut self.unnamed).chain(self.named.values_mut())
    }

    /// Registers `label`'s advisor (RO15, RO16, RO10, CA1): its policy (`None`: the
    /// session's), its notes per update, its severity cap and its review mode. Registering
    /// again changes the settings and keeps its memory.
    pub(super) fn register(
        &mut self,
        label: &AdvisorLabel,
        policy: Option<DeliveryPolicy>,
        max_notes: usize,
        max_severity: Severity,
        review_mode: ReviewMode,
    ) {
        let session = self.unnamed.policy;
        self.removed.remove(&Some(label.slug.clone()));
        let guard = self.for_label(Some(label));
        guard.name = Some(label.name.clone());
        guard.policy = policy.unwrap_or(session);
        guard.budget.set_per_update(max_notes);
        guard.max_severity = max_severity;
        guard.review_mode = review_mode;
    }

    /// The same advisors with their settings and nothing else: empty memories and budgets
    /// (a router restarted after a panic, F5, keeps its registrations).
    pub(super) fn settings_only(&self) -> Self {
        let fresh = |g: &AdvisorGuard| {
            let mut guard = AdvisorGuard::new(g.name.clone(), g.policy, g.budget.per_update());
            guard.max_severity = g.max_severity;
            guard.review_mode = g.review_mode;
            guard
        };
        Self {
            unnamed: fresh(&self.unnamed),
            named: self
                .named
                .iter()
                .map(|(slug, g)| (slug.clone(), fresh(g)))
                .collect(),
            unnamed_used: self.unnamed_used,
            removed: self.removed.clone(),
            branch_seed: Vec::new(),
        }
    }

    /// The unnamed advisor runs (again, RO12) with `per_update` notes per update (the
    /// roster's shared `maxNotesPerUpdate`, RO12): its raises are taken again.
    pub(super) fn register_unnamed(&mut self, per_update: usize) {
        self.removed.remove(&None);
        self.unnamed.budget.set_per_update(per_update);
    }

    /// Forgets the advisor `owner` (RO21): a named one's registration and guard; the
    /// unnamed advisor's memory and budget (its settings stay the session's), and it is no
    /// longer in use. Until registered again, the advisor counts as removed. Whether the
    /// router knew it.
    pub(super) fn remove(&mut self, owner: &Owner) -> bool {
        self.removed.insert(owner.clone());
        match owner {
            Some(slug) => self.named.remove(slug).is_some(),
            None => {
                let fresh =
                    AdvisorGuard::new(None, self.unnamed.policy, self.unnamed.budget.per_update());
                self.unnamed = fresh;
                std::mem::take(&mut self.unnamed_used)
            }
        }
    }

    /// Seeds every guard's memory from the advisories of the branch (P3): the unnamed
    /// advisor's from those without an `advisor` attribute, a named advisor's from those
    /// naming it (one of a merged note's names, RO22) and from those naming no advisor the
    /// router knows (advice of an advisor since renamed or removed). An advisor the router
    /// hears of later is seeded from the same advice when it first comes. Notes longer
    /// than `max_chars` characters are left out: the router never delivers such a note,
    /// and the seed keeps no text of unbounded length.
    pub(super) fn seed(&mut self, advisories: &[Advisory], max_chars: usize) {
        let (unnamed, named): (Vec<Advisory>, Vec<Advisory>) = advisories
            .iter()
            .filter(|a| !exceeds_chars(&a.note, max_chars))
            .cloned()
            .partition(|a| a.advisor.is_none());
        self.unnamed.history.seed(&unnamed);
        self.unnamed.recent.clear();
        let skip = named.len().saturating_sub(HISTORY_CAP);
        self.branch_seed = named.into_iter().skip(skip).collect();
        let known = self.known_names();
        for guard in self.named.values_mut() {
            seed_named(guard, &self.branch_seed, &known);
        }
    }

    /// The names of the named advisors the router knows.
    fn known_names(&self) -> Vec<Arc<str>> {
        self.named.values().filter_map(|g| g.name.clone()).collect()
    }
}

/// Seeds a named advisor's memory from the branch's `named` advice (P3, RO13): the notes
/// naming it, and those naming none of the `known` advisors.
fn seed_named(guard: &mut AdvisorGuard, named: &[Advisory], known: &[Arc<str>]) {
    let own: Vec<Advisory> = named
        .iter()
        .filter(|a| {
            a.advisor.as_deref().is_some_and(|attr| {
                let names = advisor_names(attr);
                let mine = guard.name.as_deref().is_some_and(|n| names.contains(&n));
                mine || !known.iter().any(|k| names.contains(&&**k))
            })
        })
        .cloned()
        .collect();
    guard.history.seed(&own);
    // SP3's window is of this session's turns; the branch's notes are P3's seed alone.
    guard.recent.clear();
}

/// The names an `advisor` attribute lists: the whole value, and each name of a merged
/// note (`"Architecture, Security"`, RO22).
pub(super) fn advisor_names(attr: &str) -> Vec<&str> {
    let mut names = vec![attr];
    if attr.contains(", ") {
        names.extend(attr.split(", "));
    }
    names
}

/// Adds the advisor `name` to the names of `advisory` (RO22): `"Architecture, Security"`,
/// in raise order, each once.
pub(super) fn add_advisor_name(advisory: &mut Advisory, name: &str) {
    match &mut advisory.advisor {
        Some(names) if advisor_names(names).contains(&name) => {}
        Some(names) => {
            names.push_str(", ");
            names.push_str(name);
        }
        None => advisory.advisor = Some(name.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn label(slug: &str, name: &str) -> AdvisorLabel {
        AdvisorLabel::new(slug, name)
    }

    #[test]
    fn ro15_an_unregistered_advisor_uses_the_session_settings_a_registered_one_its_own() {
        let mut g = Guards::new(DeliveryPolicy::Interrupt, 4);
        let arch = label("arch", "Architecture");
        assert_eq!(g.for_label(Some(&arch)).policy, DeliveryPolicy::Interrupt);
        assert_eq!(g.for_label(Some(&arch)).budget.per_update(), 4);
        g.register(
            &arch,
            Some(DeliveryPolicy::Reconfirm),
            2,
            Severity::Concern,
            ReviewMode::Turn,
        );
        assert_eq!(g.policy(&Some("arch".into())), DeliveryPolicy::Reconfirm);
        assert_eq!(g.policy(&Some("gone".into())), DeliveryPolicy::Interrupt);
        assert!(g.uses(DeliveryPolicy::Reconfirm));
        assert!(
            !g.uses(DeliveryPolicy::Interrupt),
            "the unnamed advisor is not in use"
        );
        g.reviewing(None);
        assert!(g.uses(DeliveryPolicy::Interrupt));
        g.register(&arch, None, 2, Severity::Concern, ReviewMode::Turn);
        assert_eq!(g.policy(&Some("arch".into())), DeliveryPolicy::Interrupt);
        assert!(g.remove(&Some("arch".into())));
        assert!(g.get_mut(&Some("arch".into())).is_none());
    }

    #[test]
    fn p3_ro13_the_seed_gives_each_advisor_its_own_advice_and_unknown_names_to_all() {
        let mut g = Guards::new(DeliveryPolicy::Interrupt, 4);
        g.register(
            &label("arch", "Architecture"),
            None,
            4,
            Severity::Blocker,
            ReviewMode::Turn,
        );
        g.register(
            &label("sec", "Security"),
            None,
            4,
            Severity::Blocker,
            ReviewMode::Turn,
        );
        g.seed(
            &[
                Advisory::new("unnamed note", None),
                Advisory::new("arch note", None).with_advisor("Architecture"),
                Advisory::new("both note", None).with_advisor("Architecture, Security"),
                Advisory::new("old note", None).with_advisor("Renamed"),
            ],
            2000,
        );
        let rank = |g: &mut Guards, owner: Owner, key: &str| {
            g.get_mut(&owner).and_then(|x| x.history.rank(key))
        };
        assert_eq!(rank(&mut g, None, "unnamed note"), Some(1));
        assert_eq!(rank(&mut g, None, "arch note"), None);
        let arch: Owner = Some("arch".into());
        let sec: Owner = Some("sec".into());
        assert_eq!(rank(&mut g, arch.clone(), "arch note"), Some(1));
        assert_eq!(rank(&mut g, sec.clone(), "arch note"), None);
        assert_eq!(rank(&mut g, arch.clone(), "both note"), Some(1));
        assert_eq!(rank(&mut g, sec.clone(), "both note"), Some(1));
        assert_eq!(rank(&mut g, sec, "old note"), Some(1));
        assert_eq!(rank(&mut g, arch.clone(), "unnamed note"), None);
    }

    #[test]
    fn ro22_names_are_added_in_raise_order_once() {
        let mut a = Advisory::new("x", None).with_advisor("Architecture");
        add_advisor_name(&mut a, "Security");
        add_advisor_name(&mut a, "Security");
        add_advisor_name(&mut a, "Architecture");
        assert_eq!(a.advisor.as_deref(), Some("Architecture, Security"));
    }

    // The roster through the router's state (RO13, RO15, RO16, RO18, RO21, RO22, D10).

    use crate::delivery::testing::{adv, router};
    use crate::delivery::{DropReason, RaiseOutcome, RouterState};
    use crate::domain::advice::{Channel, Delivery};
    use crate::domain::host::HostEvent;

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
        r.raise_as(Some(who), 0, review, named(who, note, sev))
    }

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

    fn card_of(events: &[HostEvent]) -> &str {
        match events {
            [HostEvent::Wake { card }] | [HostEvent::Card { card }] => &card.content,
            other => panic!("expected one wake or card, got {other:?}"),
        }
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
            r.raise(0, 1, adv("unnamed nit", None)).0,
            RaiseOutcome::Recorded
        );
        // A review of two updates of one advisor doubles only its budget.
        r.advisor_review_batch(Some(&s), 0, 2, 2, false);
        let kept = (0..5)
            .filter(|i| {
                raise(&mut r, &s, 2, &format!("batch {i}"), None).0 == RaiseOutcome::Recorded
            })
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
            r.raise(0, 1, adv("check the null case", None)).0,
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
        let preamble = r.advisor_held_preamble(Some(&a), 0, 2);
        assert!(preamble.contains("arch worry"), "{preamble}");
        assert!(!preamble.contains("sec worry"), "{preamble}");
        assert_eq!(
            r.advisor_held_preamble(None, 0, 2),
            "",
            "the unnamed holds nothing"
        );
        // Architecture raising Security's note is its own note, not a reconfirmation.
        assert_eq!(
            raise(&mut r, &a, 2, "sec worry", Some(Severity::Blocker)).0,
            RaiseOutcome::Held
        );
        // Its attempt is thrown away: only its hold goes.
        assert_eq!(r.advisor_discard_attempt(Some(&a), 0, 2), 1);
        // Security's review 2 sees its own note, raises it again.
        r.advisor_held_preamble(Some(&s), 0, 2);
        assert_eq!(
            raise(&mut r, &s, 2, "sec worry", None).0,
            RaiseOutcome::Reconfirmed
        );
        // Architecture's review 2 succeeds silent: its note is recanted, Security's stays.
        r.advisor_review_succeeded(Some(&a), 0, 2);
        r.advisor_review_succeeded(Some(&s), 0, 2);
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
        assert!(aside.content.starts_with(
            "<advisory advisor=\"Architecture\" guidance=\"weigh, don't blindly obey\" context="
        ), "{}", aside.content);
        assert!(!step.steers[0].content.contains("context="));
        // A reconfirm advisor in use: a terminal turn end waits for the advisors (D5),
        // though the session's policy is interrupt.
        assert!(r.turn_ended(true, true).is_some());
        let mut plain = router();
        plain.raise_as(Some(&s), 0, 1, named(&s, "x", None));
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
        assert!(
            steers[0].contains("severity=\"concern\"") && steers[0].contains("tests never ran")
        );
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
        r.raise(0, 1, adv("unnamed nit", None));
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
        r.raise_as(Some(&s), 0, 2, adv("tests fail", Some(Severity::Blocker)));
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
        r.advisor_review_batch(Some(&s), 0, 1, 1, true);
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
        r.advisor_review_batch(Some(&a), 0, 2, 1, false);
        raise(&mut r, &a, 2, "use a slice", None);
        r.turn_ended(false, true);
        r.advisor_review_batch(Some(&s), 0, 2, 1, false);
        assert_eq!(
            raise(&mut r, &s, 2, "use a slice", None).0,
            RaiseOutcome::Recorded
        );
        assert_eq!(r.step_boundary().aside.unwrap().notes.len(), 3);
        // The unnamed advisor's notes are never merged (RO12).
        r.raise(0, 3, adv("unnamed point", None));
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
            r.raise_as(Some(&a), 2, 1, named(&a, note, sev)).0
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
            fresh.raise_as(Some(&a), 1, 1, named(&a, "old", None)).0,
            RaiseOutcome::Dropped(DropReason::StaleEpoch)
        );
        // The run state stays: the primary still runs, a concern steers.
        assert_eq!(
            fresh
                .raise(2, 1, adv("wrong file", Some(Severity::Concern)))
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
        assert!(r.advisor_review_batch(Some(&a), 0, 2, 1, false).is_empty());
        let (outcome, events) = raise(&mut r, &a, 2, "data loss", Some(Severity::Blocker));
        assert_eq!(outcome, RaiseOutcome::Dropped(DropReason::Removed));
        assert!(events.is_empty());
        assert_eq!(
            outcome.tool_text(4),
            "Advice discarded: this advisor was removed from the roster."
        );
        assert_eq!(r.advisor_discard_attempt(Some(&a), 0, 2), 0);
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
        r.review_started(0, 1, 1);
        assert_eq!(
            r.raise(0, 1, adv("data loss", Some(Severity::Concern))).0,
            RaiseOutcome::Held
        );
        assert_eq!(
            r.raise(0, 1, adv("rename x", None)).0,
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
            r.raise(0, 1, adv("tests never ran", Some(Severity::Blocker)))
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
        r.review_started(0, 2, 1);
        assert_eq!(
            r.raise(0, 2, adv("rename x", None)).0,
            RaiseOutcome::Recorded
        );
        assert_eq!(
            r.raise(0, 2, adv("rename y", None)).0,
            RaiseOutcome::Dropped(DropReason::OverBudget)
        );
        assert_eq!(
            r.raise(0, 2, adv("data loss", Some(Severity::Concern))).0,
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
        let (outcome, _) = r.inject(0, u64::MAX, adv("injected", Some(Severity::Nit)));
        assert_eq!(outcome, RaiseOutcome::Recorded);
        assert!(r.turn_ended(true, true).is_none(), "no catch-up block");
        // A review of the unnamed advisor puts it in use.
        r.review_started(0, 1, 1);
        assert!(r.turn_ended(true, true).is_some());
        // Replaced by the roster, it is out of use; the user's check is still taken.
        r.remove_advisor(None);
        let (outcome, _) = r.inject(0, u64::MAX - 1, adv("injected again", None));
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
        r.advisor_review_batch(Some(&a), 0, 1, 1, true);
        r.advisor_review_batch(Some(&s), 0, 1, 1, true);
        raise(&mut r, &a, 1, "check the null case", None);
        raise(&mut r, &s, 1, "check the null case", None);
        r.advisor_discard_attempt(Some(&a), 0, 1);
        assert!(r.undelivered().is_empty());
        assert_eq!(
            raise(&mut r, &s, 1, "check the null case", None).0,
            RaiseOutcome::Deferred
        );
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

    #[test]
    fn ro22_d9_a_held_merge_follows_reconfirmation_and_a_recant_does_not_silence_the_other() {
        let (a, s) = (arch(), sec());
        let mut r = RouterState::new(DeliveryPolicy::Reconfirm, 2);
        raise(&mut r, &a, 1, "data loss", Some(Severity::Concern));
        r.turn_ended(false, true);
        // Architecture reconfirms it in the next update: the held note is about that one now.
        r.advisor_held_preamble(Some(&a), 0, 2);
        assert_eq!(
            raise(&mut r, &a, 2, "data loss", None).0,
            RaiseOutcome::Reconfirmed
        );
        r.advisor_review_batch(Some(&s), 0, 1, 1, false);
        assert_eq!(
            raise(&mut r, &s, 1, "Data loss", Some(Severity::Concern)).0,
            RaiseOutcome::Dropped(DropReason::DuplicateOf)
        );
        r.advisor_review_succeeded(Some(&a), 0, 2);
        r.turn_ended(false, true);
        // Architecture recants it: gone. Security still thinks so: its own note, held.
        r.advisor_held_preamble(Some(&a), 0, 3);
        r.advisor_review_succeeded(Some(&a), 0, 3);
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
            events.extend(r.advisor_review_batch(Some(&a), 0, 1, 1, false));
            events.extend(r.advisor_review_batch(Some(&s), 0, 1, 1, false));
            let mut outcomes = Vec::new();
            for (who, note) in [
                (&a, "the migration drops a column"),
                (&s, "The migration drops a column."),
            ] {
                let (outcome, raised) = raise(&mut r, who, 1, note, Some(Severity::Concern));
                outcomes.push(outcome);
                events.extend(raised);
                r.advisor_review_succeeded(Some(who), 0, 1);
                events.extend(r.advisor_review_ended(Some(who)));
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
        r.advisor_review_batch(Some(&a), 0, 1, 1, false);
        // Alone: out at once.
        let (_, events) = raise(&mut r, &a, 1, "rename the flag", Some(Severity::Concern));
        assert_eq!(events.len(), 1, "{events:?}");
        r.advisor_review_batch(Some(&s), 0, 1, 1, false);
        let (_, events) = raise(&mut r, &a, 1, "add a test", Some(Severity::Concern));
        assert!(events.is_empty(), "waits for Security's review");
        assert_eq!(r.undelivered().len(), 1);
        let out = r.advisor_review_ended(Some(&s));
        assert_eq!(out.len(), 1, "{out:?}");
        // Waiting again; the next turn end sends it whatever still runs.
        r.advisor_review_batch(Some(&a), 0, 2, 1, false);
        r.advisor_review_batch(Some(&s), 0, 2, 1, false);
        raise(&mut r, &a, 2, "log the error", Some(Severity::Concern));
        let out = r.boundary(false, true);
        assert!(
            matches!(&out[..], [HostEvent::Card { card }] if card.content.contains("log the error")),
            "{out:?}"
        );
        assert_eq!(r.counts().pending, 0);
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
                        r.raise_as(Some(who), 0, review, named(who, &format!("proptest note {note}"), sev));
                    }
                    4 => {
                        r.step_boundary();
                    }
                    5 => {
                        review += 1;
                        r.advisor_review_batch(Some(who), 0, review, 1, note % 2 == 0);
                        r.advisor_held_preamble(Some(who), 0, review);
                    }
                    6 => {
                        r.advisor_review_succeeded(Some(who), 0, review);
                        r.advisor_review_ended(Some(who));
                        r.advisor_discard_attempt(Some(who), 0, review);
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
}
