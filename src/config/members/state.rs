//! The Supervisor's decisions about its members, as plain state (RO12–RO21, R1, C1, CA1–CA12,
//! S1, D5): who runs, who is paused, rebuilt, added or removed, where a started member reads
//! from (X4), whether a roster check runs, each member's cadence (its counter and held
//! updates) and whether a turn end may be held. Each method answers the [`MemberChange`]s the
//! actor carries out — start and stop actors, tell the router, queue a review — as the
//! router's `RouterState` answers outcomes and events; nothing here sends or starts anything.

use std::sync::Arc;

use crate::config::{MemberPlan, RosterDiff, RuntimeConfig};
use crate::domain::advice::AdvisorLabel;
use crate::domain::host::RewriteKind;
use crate::domain::transcript::Transcript;
use crate::feed::Update;
use crate::model::{ModelClient, Usage};
use crate::review::cadence::{held_dropped_notice, AdvisorCadence, Boundary, Cadence, Decision};
use crate::review::check_in::{CheckInCounts, CheckInWait};
use crate::review::{AskEnd, AskError};
use crate::roster::Roster;
use crate::settings::{AdvisorSettings, DeliveryPolicy, ReviewMode, SyncBacklog};
use crate::status::{
    AdvisorState, CadenceStatus, CeilingAction, CeilingStatus, PrimarySpend, SpendCeiling,
};
use crate::texts::notice;

/// What the actor carries out for a decision of [`Members`], in order. A member is named by
/// its slug (`None`: the unnamed advisor).
#[derive(Debug, Clone)]
pub enum MemberChange {
    /// Start the member's actors at the session's epoch, reading the transcript from `seed`
    /// (X4); a named member is registered with the router first (RO10, RO15, RO16).
    Start {
        /// The member.
        slug: Option<String>,
        /// The transcript and the length to read it from.
        seed: Option<(Transcript, usize)>,
    },
    /// Stop the member's actors: its waiters released, its ask ended with `cause` and a
    /// review still running cancelled; its agent moves to `epoch` (RO19, RO21).
    Stop {
        /// The member.
        slug: Option<String>,
        /// The epoch its agent moves to.
        epoch: u64,
        /// Why its ask ends.
        cause: AskEnd,
    },
    /// Forget the member (stopped before): the router drops its undelivered notes and what
    /// its reviews still raise (`removed`, D10); its transcript file is closed.
    Remove {
        /// The member.
        slug: Option<String>,
    },
    /// Tell the router a named member's delivery fields again (CA16, CA18: its review mode
    /// changed).
    Register {
        /// The member.
        slug: String,
    },
    /// The router takes the unnamed advisor's raises with this budget (RO12).
    RegisterUnnamed {
        /// Its D8 budget per update.
        max_notes: usize,
    },
    /// The router drops what the paused named member raises (RO19).
    PauseAtRouter {
        /// The member.
        slug: String,
    },
    /// The member's agent resumes its reviews (C1, RO19).
    Resume {
        /// The member.
        slug: Option<String>,
    },
    /// R1 for one running member: its agent reset to `epoch` (ended with `cause`), its halt
    /// ended when `end_halt` (P7: a new session), its feed rewound.
    Rewind {
        /// The member.
        slug: Option<String>,
        /// The session's new epoch.
        epoch: u64,
        /// Why its ask ends.
        cause: AskEnd,
        /// Whether its halt ends too.
        end_halt: bool,
    },
    /// The router resets its delivery state (R1, CA8).
    ResetDelivery {
        /// The session's new epoch.
        epoch: u64,
        /// The rewrite moved to another branch (P3).
        branch: bool,
        /// Another conversation began (CA8).
        conversation: bool,
    },
    /// The router delivers, or not (C1).
    SetDeliveryEnabled(bool),
    /// One review to the member's agent (CA3, CA12), or what it held sent at once (CA4,
    /// CA21).
    Queue {
        /// The member.
        slug: Option<String>,
        /// The session's epoch.
        epoch: u64,
        /// The parts of the one review, oldest first.
        updates: Vec<Update>,
        /// Whether the review is work in progress (P1).
        wip: bool,
        /// The member's turn end it was scheduled at: a `check_in` of the review counts
        /// from it (SP7).
        turn: u64,
    },
    /// Tell the user, naming no advisor.
    Notice(String),
}

/// One member's capture of a turn end (CA3), as its feed answered it.
#[derive(Debug, Clone, PartialEq)]
pub struct Captured {
    /// The member.
    pub slug: Option<String>,
    /// Its delta; `None` when blank (X3).
    pub update: Option<Update>,
    /// Whether its `when` matched (RO17).
    pub paths_match: bool,
}

/// A member whose review a boundary scheduled, and the catch-up it is waited on with (CA9).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scheduled {
    /// The member.
    pub slug: Option<String>,
    /// Its catch-up in effect.
    pub sync: SyncBacklog,
}

/// One advisor of the session and what is decided about it.
pub struct Member {
    plan: MemberPlan,
    /// Its actors run.
    running: bool,
    /// Paused by `/advisor off NAME` (RO19).
    held_off: bool,
    /// Its failed reviews so far (C3).
    failures: u64,
    /// Its entry changed on disk: the new plan, swapped in before its next review (RO21).
    rebuild: Option<MemberPlan>,
    /// The updates its `when` did not match (RO17, CA4), over every run: a pause or rebuild
    /// never restarts the count.
    skipped_updates: u64,
    /// Its eligible-update counter and held updates (CA2, CA3): kept across a rebuild
    /// (CA7), dropped by a reset (CA8) or a pause.
    cadence: AdvisorCadence,
    /// Its turn ends counted and the wait its last `check_in` asked for (SP7): kept across
    /// a rebuild like the cadence; the wait ended by a reset, a pause, a user prompt or an
    /// abort.
    check_in: CheckInWait,
    /// Its spend over the session and what its ceiling did to it (SP6).
    ceiling: SpendCeiling,
    /// The transcript's length at its newest turn ends, oldest first (GT3: what a review
    /// covering up to that turn end has seen).
    turn_lens: std::collections::VecDeque<(u64, usize)>,
}

/// How many of a member's turn ends keep their transcript length (GT3).
const KEPT_TURN_LENS: usize = 64;

impl Member {
    /// A member of `plan`, not started.
    pub fn new(plan: MemberPlan) -> Self {
        Self {
            plan,
            running: false,
            held_off: false,
            failures: 0,
            rebuild: None,
            skipped_updates: 0,
            cadence: AdvisorCadence::new(),
            check_in: CheckInWait::new(),
            ceiling: SpendCeiling::default(),
            turn_lens: std::collections::VecDeque::new(),
        }
    }

    /// Its check-ins and the turn ends they held back (SP7).
    pub fn check_in_counts(&self) -> CheckInCounts {
        self.check_in.counts()
    }

    /// Its current turn end: what a review queued for it now covers up to (SP7).
    pub fn turn(&self) -> u64 {
        self.check_in.turn()
    }

    /// What it runs with.
    pub fn plan(&self) -> &MemberPlan {
        &self.plan
    }

    /// Its slug (`None`: the unnamed advisor).
    pub fn slug(&self) -> Option<&str> {
        self.plan.slug()
    }

    /// Whether its actors run.
    #[cfg(test)]
    pub fn running(&self) -> bool {
        self.running
    }

    /// Whether `/advisor off NAME` paused it (RO19).
    pub fn held_off(&self) -> bool {
        self.held_off
    }

    /// Its failed reviews so far (C3).
    pub fn failures(&self) -> u64 {
        self.failures
    }

    /// The updates its `when` did not match (RO17).
    pub fn skipped_updates(&self) -> u64 {
        self.skipped_updates
    }

    /// Whether it may run: enabled in its entry, not paused by the user, with a model.
    pub fn runnable(&self) -> bool {
        self.plan.enabled && !self.held_off && self.plan.model.is_ok()
    }

    /// Whether this is the member `advisor` names (`None`: the unnamed advisor).
    pub fn is(&self, advisor: Option<&AdvisorLabel>) -> bool {
        self.plan.slug() == advisor.map(|l| &*l.slug)
    }

    /// Its cadence in effect under `settings` (CA5): its plan's, at `agent-end` once its
    /// spend ceiling switched it (SP6).
    pub fn cadence_in_effect(&self, settings: &AdvisorSettings) -> Cadence {
        let mut cadence = self.plan.cadence(settings);
        if self.ceiling.forces_agent_end() {
            cadence.mode = ReviewMode::AgentEnd;
        }
        cadence
    }

    /// Its action gate's settings (GT10): its entry's `gate` and `gateFailMode` over the
    /// session's.
    pub fn gate_settings(&self, settings: &AdvisorSettings) -> crate::settings::GateSettings {
        crate::settings::GateSettings {
            mode: self.plan.gate.unwrap_or(settings.gate.mode),
            fail_mode: self.plan.gate_fail_mode.or(settings.gate.fail_mode),
            ..settings.gate
        }
    }

    /// Its spend ceiling in effect (SP6): its entry's, else `advisor.maxSpendRatio`.
    pub fn spend_limit(&self, settings: &AdvisorSettings) -> Option<f64> {
        self.plan.max_spend_ratio.or(settings.max_spend_ratio)
    }

    /// Its ceiling as status shows it under `settings` (SP6), and whether the ceiling
    /// paused it.
    pub fn ceiling_status(&self, settings: &AdvisorSettings) -> (Option<CeilingStatus>, bool) {
        let status = self.ceiling.status(self.spend_limit(settings));
        (status, self.held_off && self.ceiling.paused())
    }

    /// Its cadence in effect under `settings`, held updates and counter (CA12).
    pub fn cadence_status(&self, settings: &AdvisorSettings) -> CadenceStatus {
        let cadence = self.cadence_in_effect(settings);
        CadenceStatus {
            review_mode: cadence.mode,
            review_interval: cadence.interval,
            sync_backlog: cadence.sync,
            held_updates: self.cadence.held_updates(),
            eligible_updates: self.cadence.eligible_updates(),
            dropped_updates: self.cadence.dropped_total(),
        }
    }

    /// Its state and why (RO8, RO19) in a session that is `enabled`, with its agent's pause.
    pub fn state(&self, enabled: bool, paused: Option<&str>) -> (AdvisorState, Option<String>) {
        match &self.plan.model {
            Err(reason) => return (AdvisorState::NoModel, Some(reason.clone())),
            Ok(_) if !self.plan.enabled => {
                return (AdvisorState::Paused, Some(notice("reasonNotEnabled", &[])));
            }
            Ok(_) => {}
        }
        if self.held_off && self.ceiling.paused() {
            (AdvisorState::Paused, Some(notice("reasonCeiling", &[])))
        } else if self.held_off {
            (AdvisorState::Paused, Some(notice("reasonHeldOff", &[])))
        } else if !enabled {
            (AdvisorState::Off, None)
        } else if let Some(reason) = paused {
            (AdvisorState::Failing, Some(reason.to_string()))
        } else {
            (AdvisorState::Running, None)
        }
    }

    fn slug_owned(&self) -> Option<String> {
        self.plan.slug().map(str::to_string)
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

/// Whether a rewrite moves the advisor to another branch (P3's seed), as opposed to a
/// rewrite within the branch (compaction, pruning, one the feed detected).
fn changes_branch(kind: RewriteKind) -> bool {
    begins_conversation(kind) || kind == RewriteKind::Rewind
}

/// Whether a rewrite begins another conversation (CA8): the counters restart. Compaction,
/// pruning, a rewrite the feed detected and a rewind keep them.
pub fn begins_conversation(kind: RewriteKind) -> bool {
    matches!(
        kind,
        RewriteKind::SessionSwitch
            | RewriteKind::NewSession
            | RewriteKind::Branch
            | RewriteKind::TreeNavigation
    )
}

/// The session's members and the Supervisor's state about them: its configuration (whose
/// roster a reload replaces), the enabled flag, the epoch (R1), the last transcript and
/// where a started member reads from, the roster check's flags.
pub struct Members {
    config: RuntimeConfig,
    members: Vec<Member>,
    enabled: bool,
    /// The session's epoch (R1): a reset resets every member.
    epoch: u64,
    /// `/advisor test` injections so far (C2): each is its own update for the note budget.
    tests_injected: u64,
    last_transcript: Option<Transcript>,
    /// Where the initial transcript is read from (X4).
    initial_len: Option<usize>,
    /// The transcript's length at the last turn end (0 after a reset, R1): where a member
    /// rebuilt or added before the next one starts reading (RO21).
    turn_end_len: Option<usize>,
    /// A branch change happened: the next turn end seeds the emission guard from the
    /// branch's advisories (P3).
    seed_guard: bool,
    /// A check of the roster files is running (RO21).
    roster_checking: bool,
    /// A turn ended while it ran: check again when it ends.
    roster_recheck: bool,
}

impl Members {
    /// The members `config` starts with (RO12, RO13), none running yet.
    pub fn new(config: RuntimeConfig) -> Self {
        let last_transcript = config.initial_transcript.clone();
        let members = config.member_plans().into_iter().map(Member::new).collect();
        Self {
            enabled: config.settings.enabled,
            initial_len: last_transcript.as_ref().map(Transcript::len),
            last_transcript,
            members,
            config,
            epoch: 0,
            tests_injected: 0,
            turn_end_len: None,
            seed_guard: false,
            roster_checking: false,
            roster_recheck: false,
        }
    }

    /// Reads the initial transcript from `len` messages on (X4) instead of its length now.
    pub fn seed_initial_at(&mut self, len: Option<usize>) {
        self.initial_len = len;
    }

    /// The session's configuration (its roster as last reloaded).
    pub fn config(&self) -> &RuntimeConfig {
        &self.config
    }

    /// The members, the unnamed advisor first, then in roster order (RO2).
    pub fn iter(&self) -> impl Iterator<Item = &Member> {
        self.members.iter()
    }

    /// The member of `slug` (`None`: the unnamed advisor).
    pub fn get(&self, slug: Option<&str>) -> Option<&Member> {
        self.members.iter().find(|m| m.slug() == slug)
    }

    fn get_mut(&mut self, slug: Option<&str>) -> Option<&mut Member> {
        self.members.iter_mut().find(|m| m.slug() == slug)
    }

    /// The member the action gate asks (GT10): the first, in roster order, that is enabled
    /// in its entry, not paused by the user, and whose gate is not off; its gate settings
    /// and its model (`None` when it has none: the fail mode answers). Without one, the
    /// session's settings with the gate off.
    pub fn gate_choice(&self) -> (crate::settings::GateSettings, Option<Arc<dyn ModelClient>>) {
        let settings = &self.config.settings;
        match self.gate_member() {
            Some(member) => (
                member.gate_settings(settings),
                member.plan.model.clone().ok(),
            ),
            None => {
                let mut off = settings.gate;
                off.mode = crate::settings::GateMode::Off;
                (off, None)
            }
        }
    }

    /// The member the action gate asks (GT10, see [`Members::gate_choice`]), if any.
    pub fn gate_member(&self) -> Option<&Member> {
        let settings = &self.config.settings;
        self.members.iter().find(|m| {
            m.plan.enabled
                && !m.held_off
                && m.gate_settings(settings).mode != crate::settings::GateMode::Off
        })
    }

    /// The transcript's length at the newest turn ends of the member `slug`, as (turn end,
    /// length) pairs (GT3): where what a review covering up to one of them has seen ends.
    pub fn turn_lens(&self, slug: Option<&str>) -> Vec<(u64, usize)> {
        self.members
            .iter()
            .find(|m| m.slug() == slug)
            .map(|m| m.turn_lens.iter().copied().collect())
            .unwrap_or_default()
    }

    /// Whether the advisor is on (C1).
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// The session's epoch (R1).
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The transcript the host last handed over.
    pub fn last_transcript(&self) -> Option<&Transcript> {
        self.last_transcript.as_ref()
    }

    /// Whether a turn end may be held now (see [`turn_end_may_wait`]): recomputed by the
    /// actor after every change, so it follows the members as they come, go, are rebuilt
    /// and retuned (RO21).
    pub fn turn_end_may_wait(&self) -> bool {
        let plans = self
            .members
            .iter()
            .flat_map(|m| std::iter::once(&m.plan).chain(m.rebuild.as_ref()));
        turn_end_may_wait(&self.config.settings, plans)
    }

    /// Whether an advisor reviews: the session is on and a member runs (D7).
    pub fn reviewing(&self) -> bool {
        self.enabled && self.members.iter().any(|m| m.running)
    }

    /// The actor started: every runnable member starts, reading the initial transcript
    /// from its seed point (X4), when the advisor is on.
    pub fn started(&mut self) -> Vec<MemberChange> {
        let mut changes = Vec::new();
        if self.enabled {
            let seed = self.config.initial_transcript.clone().zip(self.initial_len);
            self.start_all(seed, &mut changes);
        }
        changes
    }

    /// A turn ended at `transcript`: it is the transcript from now on; a member whose entry
    /// changed is rebuilt, reading from the turn end before, so this turn is its first
    /// (RO21, CA7: its held updates and counter kept).
    pub fn turn_ended(&mut self, transcript: &Transcript) -> Vec<MemberChange> {
        self.last_transcript = Some(transcript.clone());
        let previous_len = self.turn_end_len.replace(transcript.len());
        let next = self.epoch + 1;
        let seed = self
            .last_transcript
            .clone()
            .zip(previous_len.or(self.initial_len));
        let mut changes = Vec::new();
        for index in 0..self.members.len() {
            let Some(plan) = self.members[index].rebuild.take() else {
                continue;
            };
            let was_running = self.members[index].running;
            self.stop(index, next, AskEnd::TurnedOff, &mut changes);
            self.members[index].plan = plan;
            if was_running || self.enabled {
                self.start(index, seed.clone(), &mut changes);
            }
        }
        changes
    }

    /// Whether this turn end seeds the emission guard from the branch's advisories (P3): once
    /// after a branch change.
    pub fn take_seed_guard(&mut self) -> bool {
        std::mem::take(&mut self.seed_guard)
    }

    /// A turn ended: whether a check of the roster files starts now (RO21) — only when the
    /// host asked for reloads and no check runs; a turn end while one runs asks for one more
    /// when it ends.
    pub fn roster_check_due(&mut self) -> bool {
        let reloads = self
            .config
            .roster
            .as_ref()
            .is_some_and(|setup| setup.reload.is_some());
        if !reloads {
            return false;
        }
        if self.roster_checking {
            self.roster_recheck = true;
            return false;
        }
        self.roster_checking = true;
        true
    }

    /// The roster check ended, with the roster when the files changed: what changed is
    /// started, stopped or marked for rebuild (RO21). Also answers whether to check again
    /// (a turn ended while it ran).
    pub fn roster_checked(&mut self, fresh: Option<Roster>) -> (Vec<MemberChange>, bool) {
        self.roster_checking = false;
        let changes = fresh.map(|r| self.reload(r)).unwrap_or_default();
        (changes, std::mem::take(&mut self.roster_recheck))
    }

    /// Runs `roster` from now on. An added entry starts reading from the last turn end
    /// (X4); a removed one is stopped and forgotten; a changed one is rebuilt at the next
    /// turn end; a retuned one takes its new cadence at once (CA7). The unnamed advisor
    /// goes when the first entry comes and comes back when the last goes (RO12).
    fn reload(&mut self, roster: Roster) -> Vec<MemberChange> {
        let mut changes = Vec::new();
        let unnamed_before = self.config.unnamed_plan();
        let Some(setup) = self.config.roster.as_mut() else {
            return changes;
        };
        let diff = RosterDiff::between(&setup.roster, &roster);
        for warning in roster.warnings.iter() {
            if !setup.roster.warnings.contains(warning) {
                let text = notice("warning", &[("warning", &warning.to_string())]);
                changes.push(MemberChange::Notice(text));
            }
        }
        setup.roster = roster;
        self.update_unnamed(&unnamed_before, &mut changes);
        if diff.is_empty() {
            return changes;
        }
        tracing::info!(?diff, "the roster files changed");
        for slug in &diff.removed {
            self.remove(Some(slug), &mut changes);
        }
        if !self.config.roster_is_empty() {
            // RO12: the unnamed advisor runs only while the roster has no entry.
            self.remove(None, &mut changes);
        }
        for slug in &diff.retuned {
            // CA7: a cadence edit rebuilds nothing; it applies from the next boundary.
            let plan = self.plan_of(slug);
            if let (Some(member), Some(plan)) = (self.get_mut(Some(slug)), plan) {
                member.plan.retune(&plan);
                if let Some(pending) = member.rebuild.as_mut() {
                    pending.retune(&plan);
                }
                // CA16, CA18: the router routes by the entry's review mode.
                if member.runnable() {
                    changes.push(MemberChange::Register { slug: slug.clone() });
                }
            }
        }
        for slug in &diff.changed {
            let plan = self.plan_of(slug);
            if let Some(member) = self.get_mut(Some(slug)) {
                member.rebuild = plan;
            }
        }
        if self.members.is_empty() && self.config.roster_is_empty() {
            // RO12: the last entry went; the router takes the unnamed advisor's raises again.
            let plan = self.config.unnamed_plan();
            changes.push(MemberChange::RegisterUnnamed {
                max_notes: plan.max_notes,
            });
            self.members.push(Member::new(plan));
        } else {
            for slug in &diff.added {
                if let Some(plan) = self.plan_of(slug) {
                    self.members.push(Member::new(plan));
                }
            }
        }
        self.order();
        if self.enabled {
            let len = self.turn_end_len.or(self.initial_len);
            let seed = self.last_transcript.clone().zip(len);
            self.start_all(seed, &mut changes);
        }
        changes
    }

    /// RO12, RO21: roster files without entries give the unnamed advisor the shared
    /// instructions and `maxNotesPerUpdate`; when either differs from `before` (its plan
    /// before the roster changed), the unnamed advisor is rebuilt at the next turn end and
    /// the router given its new budget. Once the roster has entries, the unnamed advisor is
    /// not changed but removed.
    fn update_unnamed(&mut self, before: &MemberPlan, changes: &mut Vec<MemberChange>) {
        let after = self.config.unnamed_plan();
        let same = after.instructions == before.instructions && after.max_notes == before.max_notes;
        if same || !self.config.roster_is_empty() {
            return;
        }
        let max_notes = after.max_notes;
        let Some(member) = self.get_mut(None) else {
            return;
        };
        member.rebuild = Some(after);
        tracing::info!(max_notes, "the unnamed advisor's roster settings changed");
        changes.push(MemberChange::RegisterUnnamed { max_notes });
    }

    /// The unnamed advisor's plan with the session's own model built once more (CA23), when
    /// it builds now; the configuration keeps the model for the rest of the session.
    fn late_unnamed_plan(&mut self) -> Option<MemberPlan> {
        let model = (self.config.late_model.as_ref()?)()?;
        self.config.model = Some(self.config.limited(model));
        self.config.late_model = None;
        Some(self.config.unnamed_plan())
    }

    /// The plan of the roster entry `slug` as the roster stands now.
    fn plan_of(&self, slug: &str) -> Option<MemberPlan> {
        let setup = self.config.roster.as_ref()?;
        let entry = setup.roster.advisors.iter().find(|a| a.slug == slug)?;
        Some(self.config.member_plan(setup, &setup.roster, entry))
    }

    /// Stops and forgets the member `slug` (`None`: the unnamed advisor).
    fn remove(&mut self, slug: Option<&str>, changes: &mut Vec<MemberChange>) {
        let Some(index) = self.members.iter().position(|m| m.slug() == slug) else {
            return;
        };
        self.stop(index, self.epoch + 1, AskEnd::TurnedOff, changes);
        self.members.remove(index);
        changes.push(MemberChange::Remove {
            slug: slug.map(str::to_string),
        });
    }

    /// Puts the members in roster order (RO2), the unnamed advisor first.
    fn order(&mut self) {
        let Some(setup) = &self.config.roster else {
            return;
        };
        let advisors = &setup.roster.advisors;
        self.members.sort_by_key(|member| {
            member.slug().map_or(0, |slug| {
                1 + advisors
                    .iter()
                    .position(|a| a.slug == slug)
                    .unwrap_or(usize::MAX - 1)
            })
        });
    }

    /// Starts member `index` when it may run and does not, reading from `seed` (X4).
    fn start(
        &mut self,
        index: usize,
        seed: Option<(Transcript, usize)>,
        changes: &mut Vec<MemberChange>,
    ) {
        let Some(member) = self.members.get_mut(index) else {
            return;
        };
        if !member.runnable() || member.running {
            return;
        }
        member.running = true;
        changes.push(MemberChange::Start {
            slug: member.slug_owned(),
            seed,
        });
    }

    /// Starts every runnable member that does not run, reading from `seed` (X4).
    fn start_all(&mut self, seed: Option<(Transcript, usize)>, changes: &mut Vec<MemberChange>) {
        for index in 0..self.members.len() {
            self.start(index, seed.clone(), changes);
        }
    }

    /// Stops member `index` when it runs; its agent moves to `epoch`.
    fn stop(&mut self, index: usize, epoch: u64, cause: AskEnd, changes: &mut Vec<MemberChange>) {
        let Some(member) = self.members.get_mut(index) else {
            return;
        };
        if std::mem::take(&mut member.running) {
            changes.push(MemberChange::Stop {
                slug: member.slug_owned(),
                epoch,
                cause,
            });
        }
    }

    /// Stops every member and starts a new epoch: what a member still runs is discarded.
    fn stop_all(&mut self, cause: AskEnd, changes: &mut Vec<MemberChange>) {
        let next = self.epoch + 1;
        for index in 0..self.members.len() {
            self.stop(index, next, cause, changes);
        }
        self.epoch = next;
    }

    /// The transcript at its current end, for members started now (X4).
    fn seed_at_end(&self) -> Option<(Transcript, usize)> {
        self.last_transcript.clone().map(|t| {
            let len = t.len();
            (t, len)
        })
    }

    /// A rewrite of the transcript (R1): a new epoch, every running member reset and its
    /// feed rewound; the held updates dropped, the counters restarted only when another
    /// conversation begins (CA8); a branch change seeds the guard at the next turn end (P3).
    pub fn reset(&mut self, kind: RewriteKind) -> Vec<MemberChange> {
        self.epoch += 1;
        tracing::info!(?kind, epoch = self.epoch, "advisor reset");
        let branch = changes_branch(kind);
        self.seed_guard |= branch;
        let conversation = begins_conversation(kind);
        for member in &mut self.members {
            if conversation {
                member.cadence.restart();
            } else {
                member.cadence.drop_held();
            }
            // SP7: a reset ends a check-in's wait.
            member.check_in.end_wait();
        }
        // R1, RO21: the rewound members read the transcript from 0 at the next turn end; a
        // member rebuilt or added before it does the same.
        self.turn_end_len = Some(0);
        let mut changes = vec![MemberChange::ResetDelivery {
            epoch: self.epoch,
            branch,
            conversation,
        }];
        let end_halt = matches!(kind, RewriteKind::NewSession | RewriteKind::SessionSwitch);
        for member in self.members.iter().filter(|m| m.running) {
            changes.push(MemberChange::Rewind {
                slug: member.slug_owned(),
                epoch: self.epoch,
                cause: AskEnd::Rewritten(kind),
                end_halt,
            });
        }
        changes
    }

    /// `/advisor on` (C1, RO19): the whole roster, members paused by `/advisor off NAME`
    /// included. Answers the line for the user.
    pub fn enable(&mut self) -> (String, Vec<MemberChange>) {
        let mut changes = Vec::new();
        if self.members.iter().all(|m| m.plan.model.is_err()) {
            self.enabled = true;
            return (notice("noModelAssigned", &[]), changes);
        }
        if !self.enabled {
            self.enabled = true;
            self.stop_all(AskEnd::TurnedOff, &mut changes);
            changes.push(MemberChange::SetDeliveryEnabled(true));
            changes.push(MemberChange::ResetDelivery {
                epoch: self.epoch,
                branch: false,
                conversation: false,
            });
        } else {
            // On already, even with every member paused by name: no reset, so the notes the
            // paused members left deferred or held stay (RO19).
            for member in self.members.iter().filter(|m| m.running) {
                changes.push(MemberChange::Resume {
                    slug: member.slug_owned(),
                });
            }
        }
        for member in &mut self.members {
            member.held_off = false;
        }
        let seed = self.seed_at_end();
        self.start_all(seed, &mut changes);
        (notice("on", &[]), changes)
    }

    /// `/advisor off` (C1), or a dispose (R2) with `cause`: every member stops, a new epoch
    /// begins, delivery stops. Answers the line for the user.
    pub fn disable(&mut self, cause: AskEnd) -> (String, Vec<MemberChange>) {
        self.enabled = false;
        let mut changes = Vec::new();
        self.stop_all(cause, &mut changes);
        for member in &mut self.members {
            // CA7 (our choice): turning the advisor off drops what it held and its count;
            // SP7: and ends a check-in's wait.
            member.cadence.restart();
            member.check_in.end_wait();
        }
        changes.push(MemberChange::SetDeliveryEnabled(false));
        (notice("off", &[]), changes)
    }

    /// `/advisor toggle` (C1).
    pub fn toggle(&mut self) -> (String, Vec<MemberChange>) {
        if self.enabled {
            self.disable(AskEnd::TurnedOff)
        } else {
            self.enable()
        }
    }

    /// The index of the named member `typed` (its name or slug, RO7).
    fn find(&self, typed: &str) -> Option<usize> {
        self.members.iter().position(|m| m.plan.answers_to(typed))
    }

    /// The members `/advisor dump` shows (C4, RO19): every one, or the one `advisor` names;
    /// a name no advisor has is answered with its line.
    pub fn chosen(&self, advisor: Option<&str>) -> Result<Vec<&Member>, String> {
        match advisor {
            Some(name) => self
                .find(name)
                .map(|i| vec![&self.members[i]])
                .ok_or_else(|| self.unknown_advisor(name)),
            None => Ok(self.members.iter().collect()),
        }
    }

    /// The line answering a name no advisor has (RO19, RO20).
    pub fn unknown_advisor(&self, name: &str) -> String {
        let names: Vec<&str> = self.members.iter().filter_map(|m| m.plan.name()).collect();
        if names.is_empty() {
            notice("unknownAdvisorNoRoster", &[("name", name)])
        } else {
            notice(
                "unknownAdvisor",
                &[("name", name), ("known", &names.join(", "))],
            )
        }
    }

    /// `/advisor on NAME` (RO19): resumes one advisor, started at the transcript's end (X4)
    /// when it does not run; the others are untouched.
    pub fn member_on(&mut self, name: &str) -> (String, Vec<MemberChange>) {
        let mut changes = Vec::new();
        let Some(index) = self.find(name) else {
            return (self.unknown_advisor(name), changes);
        };
        let member = &mut self.members[index];
        let label = member.plan.name().unwrap_or_default().to_string();
        if let Err(reason) = &member.plan.model {
            let line = notice("memberNoModel", &[("name", &label), ("reason", reason)]);
            return (line, changes);
        }
        if !member.plan.enabled {
            return (notice("memberNotEnabled", &[("name", &label)]), changes);
        }
        member.held_off = false;
        if !self.enabled {
            return (notice("memberOnWhileOff", &[("name", &label)]), changes);
        }
        if member.running {
            changes.push(MemberChange::Resume {
                slug: member.slug_owned(),
            });
        } else {
            let seed = self.seed_at_end();
            self.start(index, seed, &mut changes);
        }
        (notice("memberOn", &[("name", &label)]), changes)
    }

    /// `/advisor off NAME` (RO19): pauses one advisor for this session, its running review
    /// cancelled; the others' reviews, in flight or queued, go on (the session's epoch stays).
    pub fn member_off(&mut self, name: &str) -> (String, Vec<MemberChange>) {
        let mut changes = Vec::new();
        let Some(index) = self.find(name) else {
            return (self.unknown_advisor(name), changes);
        };
        self.hold_off(index, &mut changes);
        let label = self.members[index].plan.name().unwrap_or_default();
        (notice("memberOff", &[("name", label)]), changes)
    }

    /// Pauses member `index` for this session (RO19; SP6's ceiling pause): its running
    /// review cancelled, its raises dropped at the router, the others untouched.
    fn hold_off(&mut self, index: usize, changes: &mut Vec<MemberChange>) {
        let member = &mut self.members[index];
        member.held_off = true;
        // CA7 (our choice): a paused advisor drops its held updates and counts from 0;
        // SP7: and its check-in's wait ends.
        member.cadence.restart();
        member.check_in.end_wait();
        if let Some(slug) = member.plan.slug() {
            // Before the reply: a raise already on its way is dropped; the review itself
            // is cancelled by the stop below.
            changes.push(MemberChange::PauseAtRouter {
                slug: slug.to_string(),
            });
        }
        self.stop(index, self.epoch + 1, AskEnd::TurnedOff, changes);
    }

    /// `/advisor test` (C2): the epoch and the number of this injection.
    pub fn next_test(&mut self) -> (u64, u64) {
        self.tests_injected += 1;
        (self.epoch, self.tests_injected)
    }

    /// Runs each member's capture of a turn end through its cadence (CA1–CA4, RO17): a
    /// scheduled review is queued as one review carrying what it held (CA3, CA12); an update
    /// its `when` did not match is counted (RO17). `wip`: the boundary is work in progress
    /// (P1); `continuation`: the router marked it an advisor continuation's (CA17). Answers
    /// the reviews to queue and the members whose review was scheduled (CA9).
    pub fn on_boundary(
        &mut self,
        captured: Vec<Captured>,
        wip: bool,
        continuation: bool,
    ) -> (Vec<MemberChange>, Vec<Scheduled>) {
        let epoch = self.epoch;
        let boundary_len = self.turn_end_len;
        let (mut changes, mut scheduled) = (Vec::new(), Vec::new());
        for capture in captured {
            let settings = &self.config.settings;
            let Some(member) = self
                .members
                .iter_mut()
                .find(|m| m.slug() == capture.slug.as_deref() && m.running)
            else {
                continue;
            };
            if !capture.paths_match && capture.update.is_some() {
                member.skipped_updates += 1;
            }
            let cadence = member.cadence_in_effect(settings);
            let boundary = Boundary {
                final_boundary: !wip,
                continuation,
                paths_match: capture.paths_match,
            };
            // SP7: a check-in's wait holds the review back; the cadence decides otherwise.
            let decision = member.check_in.on_boundary(
                &mut member.cadence,
                cadence,
                boundary,
                capture.update,
                wip,
            );
            if let Some(len) = boundary_len {
                if member.turn_lens.len() == KEPT_TURN_LENS {
                    member.turn_lens.pop_front();
                }
                member.turn_lens.push_back((member.check_in.turn(), len));
            }
            if member.cadence.take_drop_notice() {
                // CA3: a drop past the held-update cap is never silent.
                let name = member.plan.label.as_ref().map(|l| l.name.to_string());
                changes.push(MemberChange::Notice(held_dropped_notice(name.as_deref())));
            }
            if let Decision::Scheduled { updates, wip } = decision {
                if !updates.is_empty() {
                    changes.push(MemberChange::Queue {
                        slug: capture.slug.clone(),
                        epoch,
                        updates,
                        wip,
                        turn: member.check_in.turn(),
                    });
                }
                scheduled.push(Scheduled {
                    slug: capture.slug,
                    sync: cadence.sync,
                });
            }
        }
        (changes, scheduled)
    }

    /// The host's model catalog changed (CA23): every named member without a model is
    /// planned once more from its roster entry, quietly; one whose model now builds starts
    /// at the transcript's end (X4), nothing held or counted for it.
    pub fn models_changed(&mut self) -> Vec<MemberChange> {
        let mut changes = Vec::new();
        let seed = self.seed_at_end();
        for index in 0..self.members.len() {
            let member = &self.members[index];
            if member.plan.model.is_ok() {
                continue;
            }
            let plan = match member.slug_owned() {
                Some(slug) => self.plan_of(&slug),
                None => self.late_unnamed_plan(),
            };
            let Some(plan) = plan.filter(|plan| plan.model.is_ok()) else {
                continue;
            };
            tracing::info!(advisor = ?plan.label, "a late model resolved");
            let member = &mut self.members[index];
            member.plan = plan;
            member.cadence.restart();
            if self.enabled {
                self.start(index, seed.clone(), &mut changes);
            }
        }
        changes
    }

    /// The headless drain (CA21 (2)): every running member sends what it holds as one
    /// review, its counter unchanged. Nothing when the advisor is off.
    pub fn drain(&mut self) -> Vec<MemberChange> {
        if !self.enabled {
            return Vec::new();
        }
        let slugs: Vec<_> = self
            .members
            .iter()
            .filter(|m| m.running)
            .map(Member::slug_owned)
            .collect();
        slugs
            .into_iter()
            .filter_map(|slug| self.send_held(slug.as_deref()))
            .collect()
    }

    /// What member `slug` holds, sent as one review without moving its counter (CA4's
    /// consult, CA21's drain); `None` when it holds nothing or does not run.
    pub fn send_held(&mut self, slug: Option<&str>) -> Option<MemberChange> {
        let epoch = self.epoch;
        let member = self.get_mut(slug).filter(|m| m.running)?;
        let (updates, wip) = member.cadence.take_held()?;
        Some(MemberChange::Queue {
            slug: slug.map(str::to_string),
            epoch,
            updates,
            wip,
            turn: member.check_in.turn(),
        })
    }

    /// The member an ask goes to (RO20): the advisor named (its name or slug), else the
    /// unnamed advisor, else the roster's first running entry, else its first enabled one.
    /// One that does not run is [`AskError::NotRunning`], named when it has a name.
    pub fn asked(&self, advisor: Option<&str>) -> Result<Option<String>, AskError> {
        let member = match advisor {
            Some(name) => {
                let index = self
                    .find(name)
                    .ok_or_else(|| AskError::UnknownAdvisor(name.to_string()))?;
                &self.members[index]
            }
            None => {
                let unnamed = self.members.iter().find(|m| m.plan.label.is_none());
                let running = || self.members.iter().find(|m| m.running);
                let first = || self.members.iter().find(|m| m.plan.enabled);
                match unnamed.or_else(running).or_else(first) {
                    Some(member) => member,
                    None => return Err(AskError::NotRunning),
                }
            }
        };
        if member.running {
            return Ok(member.slug_owned());
        }
        Err(match member.plan.name() {
            Some(name) => AskError::MemberNotRunning(name.to_string()),
            None => AskError::NotRunning,
        })
    }

    /// A review of `advisor` failed in `epoch` (C3): counted when the epoch is the session's.
    pub fn review_failed(&mut self, epoch: u64, advisor: Option<&AdvisorLabel>) {
        if epoch != self.epoch {
            return;
        }
        if let Some(member) = self.members.iter_mut().find(|m| m.is(advisor)) {
            member.failures += 1;
        }
    }

    /// A review of `advisor` that ran in `epoch` and whose batch ended at the member's turn
    /// end `turn` called `check_in {afterTurns: after_turns}` (SP7): its next review waits
    /// for turn end `turn + after_turns`, and the updates of the reviews queued behind it
    /// (`postponed`, taken from the agent's queue) are held back for that review. A report
    /// from before a reset is ignored (its updates dropped, as the reset dropped the
    /// queue). `Some` with the updates to queue again when nothing waits.
    pub fn checked_in(
        &mut self,
        epoch: u64,
        advisor: Option<&AdvisorLabel>,
        (turn, after_turns): (u64, u8),
        (postponed, wip): (Vec<Update>, bool),
    ) -> Option<Vec<Update>> {
        if epoch != self.epoch {
            return None;
        }
        let member = self.members.iter_mut().find(|m| m.is(advisor))?;
        member.check_in.checked_in(turn, after_turns);
        member
            .check_in
            .postpone(&mut member.cadence, postponed, wip)
    }

    /// A user prompt or an abort (SP7): every member's check-in wait ends, and a check-in
    /// reported later by a review running now sets none.
    pub fn end_check_in_waits(&mut self) {
        for member in &mut self.members {
            member.check_in.prompted();
        }
    }

    /// The unnamed advisor's review mode (CA1, CA5), from the live settings, at `agent-end`
    /// once its spend ceiling switched it (SP6).
    pub fn unnamed_review_mode(&self) -> ReviewMode {
        let settings = &self.config.settings;
        match self.members.iter().find(|m| m.plan.label.is_none()) {
            Some(member) => member.cadence_in_effect(settings).mode,
            None => settings.review_mode,
        }
    }

    /// A model run of `advisor` spent `usage` (SP6: over the whole session, whatever the
    /// epoch).
    pub fn spent(&mut self, advisor: Option<&AdvisorLabel>, usage: &Usage) {
        if let Some(member) = self.members.iter_mut().find(|m| m.is(advisor)) {
            member.ceiling.spent(usage);
        }
    }

    /// `advisor`'s transcript file had recorded `usage` before this process (P9, SP6).
    pub fn restored(&mut self, advisor: Option<&str>, usage: &Usage) {
        if let Some(member) = self.get_mut(advisor) {
            member.ceiling.restored(usage);
        }
    }

    /// Checks every member's spend ceiling against the primary's spend so far (SP6): one
    /// past it reviews at `agent-end` from this boundary on (a named one registered again
    /// with the router, CA16, CA18), one past twice it is paused as `/advisor off NAME`
    /// pauses. Answers the lines for the user, each about its advisor and naming the ratio,
    /// and the changes to carry out.
    pub fn check_spend_ceilings(
        &mut self,
        primary: Option<&PrimarySpend>,
    ) -> (Vec<(Option<AdvisorLabel>, String)>, Vec<MemberChange>) {
        let (mut lines, mut changes) = (Vec::new(), Vec::new());
        for index in 0..self.members.len() {
            let member = &mut self.members[index];
            let limit = member.spend_limit(&self.config.settings);
            let actions = member.ceiling.check(limit, primary, member.held_off);
            let label = member.plan.label.clone();
            for action in actions {
                tracing::info!(advisor = ?label.as_ref().map(|l| &l.slug), ?action, "spend ceiling");
                lines.push((label.clone(), action.notice()));
                match action {
                    CeilingAction::SwitchToAgentEnd { .. } => {
                        if let Some(label) = &label {
                            let slug = label.slug.to_string();
                            changes.push(MemberChange::Register { slug });
                        }
                    }
                    CeilingAction::Pause { .. } => self.hold_off(index, &mut changes),
                }
            }
        }
        (lines, changes)
    }

    /// The parts of a WIP review the triage gate held (SP9) go back in front of what member
    /// `slug` holds, for its next review.
    pub fn hold_back(&mut self, slug: Option<&str>, updates: Vec<Update>) {
        if let Some(member) = self.get_mut(slug) {
            member.cadence.hold_back(updates, true);
        }
    }

    /// A review of `advisor` was quarantined (P5): it drops what it held (CA8: the re-prime,
    /// or the next turn end after its rewind, covers it).
    pub fn drop_held(&mut self, advisor: Option<&AdvisorLabel>) {
        if let Some(member) = self.members.iter_mut().find(|m| m.is(advisor)) {
            member.cadence.drop_held();
        }
    }
}

#[cfg(test)]
mod tests;
