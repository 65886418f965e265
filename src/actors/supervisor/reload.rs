//! The Supervisor's hot reload of the roster files (RO21, as W8 for WATCHDOG.md): checked
//! off the actor's thread at each turn end, never holding the turn end; an added entry
//! starts seeded at the transcript's end (X4), a removed one is stopped and its held notes
//! dropped by the router, a changed one is rebuilt before its next review. The unnamed
//! advisor (RO12) is told apart too: replaced by the first entry, its notes are dropped by
//! the router; back when the last entry goes; rebuilt when the shared instructions or
//! `maxNotesPerUpdate` of entry-less roster files change.

use actix::{ActorFutureExt, AsyncContext, Context, WrapFuture};

use super::members::Member;
use super::Supervisor;
use crate::config::{MemberPlan, RosterDiff};
use crate::messages::delivery::{RegisterAdvisor, RegisterUnnamedAdvisor, RemoveAdvisor};
use crate::messages::review::AskEnd;
use crate::roster::{Roster, RosterRefresh};
use crate::texts::notice;

impl Supervisor {
    /// Starts a check of the roster files when the host asked for reloads; while one runs,
    /// one more is made when it ends (a file may have changed after it looked).
    pub(super) fn check_roster(&mut self, ctx: &mut Context<Self>) {
        let Some(setup) = &self.config.roster else {
            return;
        };
        let Some(reload) = setup.reload.clone() else {
            return;
        };
        if self.roster_checking {
            // A turn ended while the check ran: one more check when it is done.
            self.roster_recheck = true;
            return;
        }
        self.roster_checking = true;
        let previous = setup.roster.fingerprint.clone();
        let redactor = self.config.redactor();
        let check =
            tokio::task::spawn_blocking(move || reload.refresh(redactor.as_ref(), &previous));
        let applied =
            async move { check.await.ok() }
                .into_actor(self)
                .map(move |outcome, act, ctx| {
                    act.roster_checking = false;
                    if let Some(RosterRefresh::Rebuilt(roster)) = outcome {
                        act.apply_roster(ctx, *roster);
                    }
                    if std::mem::take(&mut act.roster_recheck) {
                        act.check_roster(ctx);
                    }
                });
        ctx.spawn(applied);
    }

    /// Runs `roster` from now on: what changed is started, stopped or marked for rebuild;
    /// an added entry reads from the last turn end on (X4).
    fn apply_roster(&mut self, ctx: &mut Context<Self>, roster: Roster) {
        let unnamed_before = self.config.unnamed_plan();
        let Some(setup) = self.config.roster.as_mut() else {
            return;
        };
        let diff = RosterDiff::between(&setup.roster, &roster);
        let fresh: Vec<String> = roster
            .warnings
            .iter()
            .filter(|w| !setup.roster.warnings.contains(w))
            .map(ToString::to_string)
            .collect();
        setup.roster = roster;
        for warning in fresh {
            self.notice_about(None, notice("warning", &[("warning", &warning)]));
        }
        self.update_unnamed(&unnamed_before);
        if diff.is_empty() {
            return;
        }
        tracing::info!(?diff, "the roster files changed");
        for slug in &diff.removed {
            self.remove_member(Some(slug));
        }
        if !self.config.roster_is_empty() {
            // RO12: the unnamed advisor runs only while the roster has no entry.
            self.remove_member(None);
        }
        let mut retuned = Vec::new();
        for slug in &diff.retuned {
            // CA7: a cadence edit rebuilds nothing; it applies from the next boundary.
            let plan = self.plan_of(slug);
            let member = self
                .members
                .iter_mut()
                .find(|m| m.plan.slug() == Some(slug));
            if let (Some(member), Some(plan)) = (member, plan) {
                member.plan.retune(&plan);
                if let Some(pending) = member.rebuild.as_mut() {
                    pending.retune(&plan);
                }
                // CA16, CA18: the router routes by the entry's review mode; tell it the new one.
                if let Some(label) = member.plan.label.clone().filter(|_| member.runnable()) {
                    retuned.push(RegisterAdvisor {
                        label,
                        policy: member.plan.policy,
                        max_notes: member.plan.max_notes,
                        max_severity: member.plan.max_severity,
                        review_mode: member.plan.cadence(&self.config.settings).mode,
                    });
                }
            }
        }
        if !retuned.is_empty() {
            let router = self.router();
            for register in retuned {
                router.do_send(register);
            }
        }
        for slug in &diff.changed {
            let plan = self.plan_of(slug);
            if let Some(member) = self
                .members
                .iter_mut()
                .find(|m| m.plan.slug() == Some(slug))
            {
                member.rebuild = plan;
            }
        }
        let len = self.turn_end_len.or(self.initial_len);
        let seed = self.last_transcript.clone().zip(len);
        if self.members.is_empty() && self.config.roster_is_empty() {
            // RO12: the last entry went; the router takes the unnamed advisor's raises again.
            let plan = self.config.unnamed_plan();
            self.router().do_send(RegisterUnnamedAdvisor {
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
        self.order_members();
        self.update_turn_end_waits();
        if self.enabled {
            for index in 0..self.members.len() {
                self.start_member(ctx, index, seed.clone());
            }
        }
    }

    /// RO12, RO21: roster files without entries give the unnamed advisor the shared
    /// instructions and `maxNotesPerUpdate`; when either differs from `before` (its plan
    /// before the roster changed), a running unnamed advisor is rebuilt before its next
    /// review and the router given its new budget. Once the roster has entries, the
    /// unnamed advisor is not changed but removed ([`Self::apply_roster`]).
    fn update_unnamed(&mut self, before: &MemberPlan) {
        let after = self.config.unnamed_plan();
        let same = after.instructions == before.instructions && after.max_notes == before.max_notes;
        if same || !self.config.roster_is_empty() {
            return;
        }
        let max_notes = after.max_notes;
        let Some(member) = self.member_of(None) else {
            return;
        };
        member.rebuild = Some(after);
        tracing::info!(max_notes, "the unnamed advisor's roster settings changed");
        self.router().do_send(RegisterUnnamedAdvisor { max_notes });
    }

    /// The plan of the roster entry `slug` as the roster stands now.
    pub(super) fn plan_of(&self, slug: &str) -> Option<MemberPlan> {
        let setup = self.config.roster.as_ref()?;
        let entry = setup.roster.advisors.iter().find(|a| a.slug == slug)?;
        Some(self.config.member_plan(setup, &setup.roster, entry))
    }

    /// Stops and forgets the member `slug` (`None`: the unnamed advisor); the router drops
    /// its undelivered notes and what its reviews still raise (`removed`, D10).
    fn remove_member(&mut self, slug: Option<&str>) {
        let next = self.epoch + 1;
        let router = self.router();
        self.members.retain_mut(|member| {
            if member.plan.slug() != slug {
                return true;
            }
            member.stop(next, AskEnd::TurnedOff);
            router.do_send(RemoveAdvisor {
                advisor: slug.map(Into::into),
            });
            false
        });
    }

    /// Puts the members in roster order (RO2), the unnamed advisor first.
    fn order_members(&mut self) {
        let Some(setup) = &self.config.roster else {
            return;
        };
        let order = |member: &Member| {
            member.plan.slug().map_or(0, |slug| {
                1 + setup
                    .roster
                    .advisors
                    .iter()
                    .position(|a| a.slug == slug)
                    .unwrap_or(usize::MAX - 1)
            })
        };
        self.members.sort_by_key(order);
    }

    /// Swaps in the new plan of every member whose entry changed (RO21): its actors are
    /// stopped and started again, reading from `previous_len` (the last turn end) so the
    /// turn ending now is reviewed by the rebuilt advisor.
    pub(super) fn rebuild_changed(&mut self, ctx: &mut Context<Self>, previous_len: Option<usize>) {
        let next = self.epoch + 1;
        let len = previous_len.or(self.initial_len);
        let seed = self.last_transcript.clone().zip(len);
        let mut rebuilt = false;
        for index in 0..self.members.len() {
            let Some(plan) = self.members[index].rebuild.take() else {
                continue;
            };
            rebuilt = true;
            let was_running = self.members[index].children.is_some();
            // CA7: the successor keeps the member's held updates and counter.
            self.stop_member(index, next, AskEnd::TurnedOff);
            self.members[index].plan = plan;
            if was_running || self.enabled {
                self.start_member(ctx, index, seed.clone());
            }
        }
        if rebuilt {
            // The old plan's policy no longer counts (RO15).
            self.update_turn_end_waits();
        }
    }
}
