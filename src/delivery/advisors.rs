//! The advisors a session's router serves (RO12, RO13, RO15, RO16): each its own emission
//! guard — D8 budget per update counted per (advisor, review), dedupe memory — its own
//! delivery policy and severity cap. The unnamed advisor (`None`, RO12) uses the session's
//! settings; a named advisor the router was not told about ([`Guards::register`]) too.
//! Pure data; the router decides.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::budget::{NoteBudget, ReviewId};
use super::guard::GuardHistory;
use crate::domain::advice::{AdvisorLabel, Advisory, Severity};
use crate::settings::DeliveryPolicy;

/// Whose a note is: a named advisor's slug, or `None` for the unnamed advisor (RO12).
pub type Owner = Option<Arc<str>>;

/// The session update a review covers, as the router tells updates apart (RO22): the epoch
/// and how many primary turn ends the router had heard of in the session when the review
/// started. Every advisor reviews the delta of a turn end after the router hears of it (the
/// supervisor tells the router first), so reviews started between the same two turn ends,
/// in the same epoch, cover the same update.
pub type UpdateId = (u64, u64);

/// Where a note waiting in the router came from: its advisor and the update its review
/// covered (RO13, RO22).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Origin {
    /// The advisor that raised it.
    pub owner: Owner,
    /// The update its review covered; `None` for notes that predate it.
    pub update: Option<UpdateId>,
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
    /// Its note budget (D8, RO10).
    pub(super) budget: NoteBudget,
    /// Its dedupe memory (D8, P3).
    pub(super) history: GuardHistory,
    /// Its review in progress covers a WIP batch (P1, under `defer`).
    pub(super) wip_review: Option<ReviewId>,
    /// The update its review in progress covers (RO22).
    pub(super) update: Option<(ReviewId, UpdateId)>,
}

impl AdvisorGuard {
    fn new(name: Option<Arc<str>>, policy: DeliveryPolicy, per_update: usize) -> Self {
        Self {
            name,
            policy,
            max_severity: Severity::Blocker,
            budget: NoteBudget::new(per_update),
            history: GuardHistory::new(),
            wip_review: None,
            update: None,
        }
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
    /// The unnamed advisor raised or reviewed something: its policy is in use.
    unnamed_used: bool,
}

impl Guards {
    /// The guards of a session whose settings are `policy` and `per_update` notes per
    /// update.
    pub(super) fn new(policy: DeliveryPolicy, per_update: usize) -> Self {
        Self {
            unnamed: AdvisorGuard::new(None, policy, per_update),
            named: BTreeMap::new(),
            unnamed_used: false,
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

    /// The guard of `label`'s advisor, made with the session's settings when the router
    /// has not heard of it yet.
    pub(super) fn for_label(&mut self, label: Option<&AdvisorLabel>) -> &mut AdvisorGuard {
        match label {
            None => {
                self.unnamed_used = true;
                &mut self.unnamed
            }
            Some(label) => {
                let policy = self.unnamed.policy;
                let per_update = self.unnamed.budget.per_update();
                self.named.entry(label.slug.clone()).or_insert_with(|| {
                    AdvisorGuard::new(Some(label.name.clone()), policy, per_update)
                })
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

    /// Whether a note of any advisor in use may be delivered under `policy`: the named
    /// advisors' policies, and the session's when the unnamed advisor is in use or no
    /// named one is known.
    pub(super) fn uses(&self, policy: DeliveryPolicy) -> bool {
        let unnamed = self.named.is_empty() || self.unnamed_used;
        (unnamed && self.unnamed.policy == policy)
            || self.named.values().any(|g| g.policy == policy)
    }

    /// Every guard.
    pub(super) fn all_mut(&mut self) -> impl Iterator<Item = &mut AdvisorGuard> {
        std::iter::once(&mut self.unnamed).chain(self.named.values_mut())
    }

    /// Registers `label`'s advisor (RO15, RO16, RO10): its policy (`None`: the session's),
    /// its notes per update and its severity cap. Registering again changes the settings
    /// and keeps its memory.
    pub(super) fn register(
        &mut self,
        label: &AdvisorLabel,
        policy: Option<DeliveryPolicy>,
        max_notes: usize,
        max_severity: Severity,
    ) {
        let session = self.unnamed.policy;
        let guard = self.for_label(Some(label));
        guard.name = Some(label.name.clone());
        guard.policy = policy.unwrap_or(session);
        guard.budget.set_per_update(max_notes);
        guard.max_severity = max_severity;
    }

    /// Forgets the advisor `slug` (RO21): its registration and guard.
    pub(super) fn remove(&mut self, slug: &str) -> bool {
        self.named.remove(slug).is_some()
    }

    /// Seeds every guard's memory from the advisories of the branch (P3): the unnamed
    /// advisor's from those without an `advisor` attribute, a named advisor's from those
    /// naming it (one of a merged note's names, RO22) and from those naming no advisor the
    /// router knows (advice of an advisor since renamed or removed).
    pub(super) fn seed(&mut self, advisories: &[Advisory]) {
        let names: Vec<Arc<str>> = self.named.values().filter_map(|g| g.name.clone()).collect();
        let unnamed: Vec<Advisory> = advisories
            .iter()
            .filter(|a| a.advisor.is_none())
            .cloned()
            .collect();
        self.unnamed.history.seed(&unnamed);
        for guard in self.named.values_mut() {
            let own: Vec<Advisory> = advisories
                .iter()
                .filter(|a| {
                    a.advisor.as_deref().is_some_and(|attr| {
                        let named = advisor_names(attr);
                        let known = names.iter().any(|n| named.contains(&&**n));
                        guard
                            .name
                            .as_deref()
                            .is_some_and(|own| named.contains(&own))
                            || !known
                    })
                })
                .cloned()
                .collect();
            guard.history.seed(&own);
        }
    }
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
        g.register(&arch, Some(DeliveryPolicy::Reconfirm), 2, Severity::Concern);
        assert_eq!(g.policy(&Some("arch".into())), DeliveryPolicy::Reconfirm);
        assert_eq!(g.policy(&Some("gone".into())), DeliveryPolicy::Interrupt);
        assert!(g.uses(DeliveryPolicy::Reconfirm));
        assert!(
            !g.uses(DeliveryPolicy::Interrupt),
            "the unnamed advisor is not in use"
        );
        g.for_label(None);
        assert!(g.uses(DeliveryPolicy::Interrupt));
        g.register(&arch, None, 2, Severity::Concern);
        assert_eq!(g.policy(&Some("arch".into())), DeliveryPolicy::Interrupt);
        assert!(g.remove("arch"));
        assert!(g.get_mut(&Some("arch".into())).is_none());
    }

    #[test]
    fn p3_ro13_the_seed_gives_each_advisor_its_own_advice_and_unknown_names_to_all() {
        let mut g = Guards::new(DeliveryPolicy::Interrupt, 4);
        g.register(&label("arch", "Architecture"), None, 4, Severity::Blocker);
        g.register(&label("sec", "Security"), None, 4, Severity::Blocker);
        g.seed(&[
            Advisory::new("unnamed note", None),
            Advisory::new("arch note", None).with_advisor("Architecture"),
            Advisory::new("both note", None).with_advisor("Architecture, Security"),
            Advisory::new("old note", None).with_advisor("Renamed"),
        ]);
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
}
