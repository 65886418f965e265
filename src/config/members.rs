//! The members of a session's roster (RO11–RO13, RO21): what each advisor is started with,
//! derived from the session's [`RuntimeConfig`] and its roster entry, and what a reload of
//! the roster files changed. Plain code; the Supervisor starts and stops the actors.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use super::RuntimeConfig;
use crate::domain::advice::{AdvisorLabel, Severity};
use crate::model::ModelClient;
use crate::review::cadence::Cadence;
use crate::roster::{ModelChoice, PathFilter, PolicyChoice, Roster, RosterAdvisor, RosterSetup};
use crate::settings::{AdvisorSettings, DeliveryPolicy, ReviewMode, SyncBacklog};
use crate::tools::ToolRegistry;

/// What one advisor of the session is started with: the unnamed advisor (RO12) or one
/// roster entry (RO13).
#[derive(Clone)]
pub struct MemberPlan {
    /// The roster entry's slug and name; `None` for the unnamed advisor.
    pub label: Option<AdvisorLabel>,
    /// `enabled` (RO8): false lists it as paused and builds no actors.
    pub enabled: bool,
    /// Its model client, or why it has none (RO8: it shows `no model`, the others run).
    pub model: Result<Arc<dyn ModelClient>, String>,
    /// Its workspace tools (RO9); `advise` is always offered.
    pub tools: ToolRegistry,
    /// The roster instructions after the WATCHDOG.md blocks: the shared ones, then the
    /// entry's (RO11); `None` when there are none.
    pub instructions: Option<Arc<str>>,
    /// Its D8 budget per update (RO10).
    pub max_notes: usize,
    /// Its delivery policy (RO15); `None`: the session's.
    pub policy: Option<DeliveryPolicy>,
    /// Its severity cap (RO16).
    pub max_severity: Severity,
    /// `when` (RO17); `None` reviews every update.
    pub when: Option<PathFilter>,
    /// Its tool budget per review (SP1): the entry's `toolBudget`, else
    /// `advisor.toolBudget`.
    pub tool_budget: u32,
    /// Its transcript file (P9): the unnamed advisor's path, or `__advisor.<slug>.jsonl`
    /// beside it (RO13).
    pub audit_path: Option<PathBuf>,
    /// Its `reviewMode` (CA1, CA6); `None`: `advisor.reviewMode`, read at every boundary
    /// (CA5: the unnamed advisor only; an entry without one is `turn`).
    pub review_mode: Option<ReviewMode>,
    /// Its `reviewInterval` (CA2, CA6); `None`: `advisor.reviewInterval` (CA5, as above).
    pub review_interval: Option<u64>,
    /// Its `syncBacklog` (CA9); `None`: `advisor.syncBacklog`, followed live.
    pub sync_backlog: Option<SyncBacklog>,
    /// Its `maxSpendRatio` (SP6); `None`: `advisor.maxSpendRatio`, followed live.
    pub max_spend_ratio: Option<f64>,
    /// The entry's `gate` (GT10); `None`: the session's `advisor.gate`.
    pub gate: Option<crate::settings::GateMode>,
    /// The entry's `gateFailMode` (GT10); `None`: the session's `advisor.gateFailMode`.
    pub gate_fail_mode: Option<crate::settings::GateFailMode>,
}

impl MemberPlan {
    /// The display name: the entry's name, `None` for the unnamed advisor.
    pub fn name(&self) -> Option<&str> {
        self.label.as_ref().map(|l| &*l.name)
    }

    /// The slug: the entry's, `None` for the unnamed advisor.
    pub fn slug(&self) -> Option<&str> {
        self.label.as_ref().map(|l| &*l.slug)
    }

    /// Its cadence in effect under `settings` (CA5, CA9): its own values, the settings'
    /// for those it leaves to them.
    pub fn cadence(&self, settings: &AdvisorSettings) -> Cadence {
        Cadence {
            mode: self.review_mode.unwrap_or(settings.review_mode),
            interval: self
                .review_interval
                .unwrap_or(settings.review_interval)
                .max(1),
            sync: self.sync_backlog.unwrap_or(settings.sync_backlog),
        }
    }

    /// Takes `other`'s cadence fields (CA7: an entry whose only change is its cadence is
    /// not rebuilt; the values apply from the next boundary).
    pub fn retune(&mut self, other: &MemberPlan) {
        self.review_mode = other.review_mode;
        self.review_interval = other.review_interval;
        self.sync_backlog = other.sync_backlog;
    }

    /// Whether `typed` names this advisor (RO7, RO20): its name, any case, or a text whose
    /// slug is this advisor's slug.
    pub fn answers_to(&self, typed: &str) -> bool {
        let Some(label) = &self.label else {
            return false;
        };
        let typed = typed.trim();
        typed.eq_ignore_ascii_case(&label.name) || crate::roster::slugify(typed) == *label.slug
    }
}

/// The delivery policy a roster entry's `policy` names (RO15).
pub fn policy_of(choice: PolicyChoice) -> DeliveryPolicy {
    match choice {
        PolicyChoice::Defer => DeliveryPolicy::Defer,
        PolicyChoice::Interrupt => DeliveryPolicy::Interrupt,
        PolicyChoice::Reconfirm => DeliveryPolicy::Reconfirm,
    }
}

/// Joins instruction texts by a blank line, leaving blank ones out; `None` when none is
/// left.
fn joined(texts: &[Option<&str>]) -> Option<Arc<str>> {
    let parts: Vec<&str> = texts
        .iter()
        .flatten()
        .map(|t| t.trim())
        .filter(|t| !t.is_empty())
        .collect();
    (!parts.is_empty()).then(|| parts.join("\n\n").into())
}

impl RuntimeConfig {
    /// The members this session runs: one per roster entry, in roster order (RO13), or,
    /// without a roster or with a roster without entries, the unnamed advisor alone (RO12).
    pub fn member_plans(&self) -> Vec<MemberPlan> {
        match &self.roster {
            Some(setup) if !setup.roster.is_empty() => setup
                .roster
                .advisors
                .iter()
                .map(|entry| self.member_plan(setup, &setup.roster, entry))
                .collect(),
            _ => vec![self.unnamed_plan()],
        }
    }

    /// The unnamed advisor (RO12): today's, with the shared instructions and the shared
    /// `maxNotesPerUpdate` of roster files that have no entries.
    pub fn unnamed_plan(&self) -> MemberPlan {
        let roster = self.roster.as_ref().map(|setup| &setup.roster);
        let shared = roster.and_then(|r| r.instructions.as_ref());
        let max_notes = roster
            .and_then(|r| r.max_notes_per_update.as_ref())
            .map_or(self.settings.max_notes_per_update, |n| n.value);
        MemberPlan {
            label: None,
            enabled: true,
            model: self.model.clone().ok_or_else(String::new),
            tools: self.tools.clone(),
            instructions: joined(&[shared.map(|s| s.text.as_str())]),
            max_notes,
            policy: None,
            max_severity: Severity::Blocker,
            when: None,
            tool_budget: self.settings.tool_budget,
            audit_path: self.audit_path.clone(),
            review_mode: None,
            review_interval: None,
            sync_backlog: None,
            max_spend_ratio: None,
            gate: None,
            gate_fail_mode: None,
        }
    }

    /// What the roster entry `entry` of `roster` is started with (RO7–RO17): its model is
    /// built by the host's [`crate::roster::RosterModels`] and goes through the provider's
    /// call limit like the session's own (RO24).
    pub fn member_plan(
        &self,
        setup: &RosterSetup,
        roster: &Roster,
        entry: &RosterAdvisor,
    ) -> MemberPlan {
        let model = match &entry.model.value {
            ModelChoice::NoModel { reason, .. } => Err(reason.clone()),
            ModelChoice::Resolved { .. } => setup.models.build(entry).map(|m| self.limited(m)),
        };
        let names: Vec<&str> = entry.tools.value.iter().map(|t| t.as_str()).collect();
        let shared = roster.instructions.as_ref().map(|s| s.text.as_str());
        let audit_path = self
            .audit_path
            .as_ref()
            .map(|path| path.with_file_name(format!("__advisor.{}.jsonl", entry.slug)));
        MemberPlan {
            label: Some(AdvisorLabel::new(entry.slug.as_str(), entry.name.as_str())),
            enabled: entry.enabled.value,
            model,
            tools: self.tools.only(&names),
            instructions: joined(&[shared, entry.instructions.value.as_deref()]),
            max_notes: entry.max_notes_per_update.value,
            policy: entry.policy.value.map(policy_of),
            max_severity: entry.max_severity.value,
            when: entry.when.value.clone(),
            tool_budget: entry.tool_budget.value.unwrap_or(self.settings.tool_budget),
            audit_path,
            // CA5: an entry uses only its own cadence fields; its catch-up may inherit.
            review_mode: Some(entry.review_mode.value),
            review_interval: Some(entry.review_interval.value),
            sync_backlog: entry.sync_backlog.value,
            max_spend_ratio: entry.max_spend_ratio.value,
            gate: entry.gate.value,
            gate_fail_mode: entry.gate_fail_mode.value,
        }
    }
}

/// What a reload of the roster files changed (RO21), by slug, each list in roster order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RosterDiff {
    /// Entries that are new: started seeded at the transcript's end (X4).
    pub added: Vec<String>,
    /// Entries that are gone: stopped, their held notes dropped (`removed`, D10).
    pub removed: Vec<String>,
    /// Entries that differ (any field but the cadence ones, or the shared instructions
    /// they are prompted with): rebuilt before their next review.
    pub changed: Vec<String>,
    /// Entries whose only change is `reviewMode`, `reviewInterval` or `syncBacklog` (CA7):
    /// nothing is rebuilt, the values apply from the next boundary, counters kept.
    pub retuned: Vec<String>,
}

impl RosterDiff {
    /// Compares the roster a session runs with a fresh load of its files.
    pub fn between(old: &Roster, new: &Roster) -> Self {
        let before: BTreeMap<&str, &RosterAdvisor> =
            old.advisors.iter().map(|a| (a.slug.as_str(), a)).collect();
        let after: BTreeMap<&str, &RosterAdvisor> =
            new.advisors.iter().map(|a| (a.slug.as_str(), a)).collect();
        let shared_changed = old.instructions != new.instructions;
        let mut diff = Self::default();
        for entry in &new.advisors {
            match before.get(entry.slug.as_str()) {
                None => diff.added.push(entry.slug.clone()),
                Some(previous) if shared_changed || !previous.same_but_cadence(entry) => {
                    diff.changed.push(entry.slug.clone());
                }
                Some(previous) if *previous != entry => diff.retuned.push(entry.slug.clone()),
                Some(_) => {}
            }
        }
        for entry in &old.advisors {
            if !after.contains_key(entry.slug.as_str()) {
                diff.removed.push(entry.slug.clone());
            }
        }
        diff
    }

    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty()
            && self.removed.is_empty()
            && self.changed.is_empty()
            && self.retuned.is_empty()
    }
}

/// Whether a turn end may be held now (S1, D5, RO15, CA9): a member's catch-up is not `off`,
/// or a member delivers under `reconfirm` — each under its own value, else the session's.
/// `plans` are the members' plans and the ones waiting to replace them (RO21); with none,
/// the session's settings decide. The one place this rule is written: the supervisor keeps
/// its flag by it, and [`RuntimeConfig::turn_end_may_wait`] asks it of the starting plans.
pub fn turn_end_may_wait<'a>(
    settings: &AdvisorSettings,
    plans: impl IntoIterator<Item = &'a MemberPlan>,
) -> bool {
    let holds = |sync: Option<SyncBacklog>, policy: Option<DeliveryPolicy>| {
        sync.unwrap_or(settings.sync_backlog) != SyncBacklog::Off
            || policy.unwrap_or(settings.policy) == DeliveryPolicy::Reconfirm
    };
    let mut plans = plans.into_iter().peekable();
    if plans.peek().is_none() {
        return holds(None, None);
    }
    plans.any(|plan| holds(plan.sync_backlog, plan.policy))
}

#[cfg(test)]
pub(crate) mod tests;
