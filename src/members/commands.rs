//! The commands over [`Members`] (C1, C2, RO19, RO20), a boundary's cadence (CA1–CA12),
//! late models, check-ins (SP7) and the spend ceilings (SP6): more of its decisions, each
//! answering the [`MemberChange`]s the actor carries out.

use crate::command::{parse_command, AdvisorCommand};
use crate::domain::advice::{AdvisorLabel, Advisory};
use crate::feed::Update;
use crate::model::Usage;
use crate::review::cadence::{held_dropped_notice, Boundary, Decision};
use crate::review::{AskEnd, AskError};
use crate::settings::ReviewMode;
use crate::status::{CeilingAction, PrimarySpend};
use crate::texts::notice;

use super::*;

/// What a `/advisor` command line comes to ([`Members::run_command`]).
#[derive(Debug)]
pub enum CommandRun {
    /// Answered now (C1, RO19, or the usage line), with the changes to carry out.
    Answered(String, Vec<MemberChange>),
    /// `/advisor test` (C2): `advisory` injected as the `nth` test of `epoch`.
    Test {
        /// The session's epoch.
        epoch: u64,
        /// The number of this injection.
        nth: u64,
        /// The note to deliver.
        advisory: Advisory,
    },
    /// `/advisor status` (C3): the actor gathers it.
    Status,
    /// `/advisor dump` (C4, RO19): the actor gathers it.
    Dump {
        /// Whether `raw` was given.
        raw: bool,
        /// The advisor named, as typed.
        advisor: Option<String>,
    },
}

impl Members {
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

    /// Runs the `/advisor` command `line` (C1–C4, RO19): on, off and toggle, for the roster
    /// or one named advisor, are answered here with their changes; a test, the status and a
    /// dump are the actor's to gather; anything else gets the usage line.
    pub fn run_command(&mut self, line: &str) -> CommandRun {
        let (reply, changes) = match parse_command(line) {
            Ok(AdvisorCommand::Toggle) => self.toggle(),
            Ok(AdvisorCommand::On { advisor: None }) => self.enable(),
            Ok(AdvisorCommand::Off { advisor: None }) => self.disable(AskEnd::TurnedOff),
            Ok(AdvisorCommand::On {
                advisor: Some(name),
            }) => self.member_on(&name),
            Ok(AdvisorCommand::Off {
                advisor: Some(name),
            }) => self.member_off(&name),
            Ok(AdvisorCommand::Test(advisory)) => {
                let (epoch, nth) = self.next_test();
                return CommandRun::Test {
                    epoch,
                    nth,
                    advisory,
                };
            }
            Ok(AdvisorCommand::Status) => return CommandRun::Status,
            Ok(AdvisorCommand::Dump { raw, advisor }) => return CommandRun::Dump { raw, advisor },
            Err(usage) => (usage, Vec::new()),
        };
        CommandRun::Answered(reply, changes)
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
                member.remember_turn_len(len);
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
    /// or the next turn end after its rewind, covers it). Answers what a re-prime reads:
    /// the last transcript and the member's turn end (0 for no member).
    pub fn quarantined(&mut self, advisor: Option<&AdvisorLabel>) -> (Option<Transcript>, u64) {
        let transcript = self.last_transcript.clone();
        let member = self.members.iter_mut().find(|m| m.is(advisor));
        let turn = member.as_ref().map_or(0, |m| m.turn());
        if let Some(member) = member {
            member.cadence.drop_held();
        }
        (transcript, turn)
    }
}
