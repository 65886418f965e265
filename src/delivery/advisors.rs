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

pub use super::review_ref::UpdateId;

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
    pub(super) unnamed: AdvisorGuard,
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
    pub(super) branch_seed: Vec<Advisory>,
    /// The named advisors paused by `/advisor off NAME` (RO19): what they raise is dropped.
    paused: BTreeSet<Arc<str>>,
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
            paused: BTreeSet::new(),
        }
    }

    /// Pauses (`paused`) or resumes the named advisor `slug` (RO19).
    pub(super) fn pause(&mut self, slug: &str, paused: bool) {
        if paused {
            self.paused.insert(slug.into());
        } else {
            self.paused.remove(slug);
        }
    }

    /// Whether the advisor `label` is paused (RO19).
    pub(super) fn is_paused(&self, label: Option<&AdvisorLabel>) -> bool {
        label.is_some_and(|l| self.paused.contains(&l.slug))
    }

    /// Records in `owner`'s memory that its note `key` goes out at `severity` in primary
    /// turn `turn` (P3, SP3).
    pub(super) fn remember(&mut self, owner: &Owner, turn: u64, key: &str, severity: Severity) {
        if let Some(guard) = self.get_mut(owner) {
            guard.remember(turn, key, severity.rank());
        }
    }

    /// Forgets `key` at `severity` in the memories of the advisor of `origin` and of its
    /// co-authors (RO22): the note was dropped before it reached the primary, so a later
    /// repeat is not a duplicate of it.
    pub(super) fn forget_note(&mut self, origin: &Origin, key: &str, severity: Severity) {
        let co_authors = origin.co_authors.iter().cloned().map(Some);
        for owner in std::iter::once(origin.owner.clone()).chain(co_authors) {
            if let Some(guard) = self.get_mut(&owner) {
                guard.forget(key, severity.rank());
            }
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
        self.paused.remove(&label.slug);
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
            paused: self.paused.clone(),
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
        if let Some(slug) = owner {
            self.paused.remove(slug);
        }
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
