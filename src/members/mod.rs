//! The Supervisor's decisions about its members, as plain state (RO12–RO21, R1, C1, CA1–CA12,
//! S1, D5): who runs, who is paused, rebuilt, added or removed, where a started member reads
//! from (X4), whether a roster check runs, each member's cadence (its counter and held
//! updates) and whether a turn end may be held. Each method answers the [`MemberChange`]s the
//! actor carries out — start and stop actors, tell the router, queue a review — as the
//! router's `RouterState` answers outcomes and events; nothing here sends or starts anything.
//! Beside them: the `/advisor` commands ([`Members::run_command`], C1–C4), the status's parts
//! (`status.rs`, C3, RO19) and what the Supervisor keeps over the session ([`SessionState`],
//! `session.rs`).

use std::sync::Arc;

use crate::config::{turn_end_may_wait, MemberPlan, RosterDiff, RuntimeConfig};
use crate::domain::host::RewriteKind;
use crate::domain::transcript::Transcript;
use crate::gate::request::GateTranscript;
use crate::model::ModelClient;
use crate::review::AskEnd;
use crate::roster::Roster;
use crate::texts::notice;

mod commands;
mod member;
mod session;
mod status;

pub use commands::CommandRun;
use member::changes_branch;
pub use member::{begins_conversation, Captured, Member, MemberChange, Scheduled};
pub use session::SessionState;
pub use status::SessionCounts;

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

    /// The slug of the member the action gate asks (GT10), if any, and what the gate's
    /// conversation is made of beside that member's own context (GT3).
    pub fn gate_view(&self) -> (Option<Option<String>>, GateTranscript) {
        let member = self.gate_member().map(|m| m.slug().map(str::to_string));
        let turn_lens = (member.as_ref())
            .map(|slug| self.turn_lens(slug.as_deref()))
            .unwrap_or_default();
        let transcript = self.last_transcript().cloned();
        (
            member,
            GateTranscript {
                transcript,
                turn_lens,
            },
        )
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
}

#[cfg(test)]
mod tests;
