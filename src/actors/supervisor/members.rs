//! The Supervisor's members (RO13): one per roster entry, or the unnamed advisor alone
//! (RO12). Each has its own actors, transcript file, failure count and `/advisor off NAME`
//! pause; all run on the session's arbiter (A6).

use actix::{Actor, Addr, AsyncContext, Context};

use super::Supervisor;
use crate::actors::advisor_agent::AdvisorAgent;
use crate::actors::audit_log::AuditLog;
use crate::actors::transcript_feed::TranscriptFeed;
use crate::actors::watchdog_loader::WatchdogLoader;
use crate::actors::wiring::{start_children, AgentReports, ChildLinks, Children};
use crate::config::MemberPlan;
use crate::domain::advice::AdvisorLabel;
use crate::domain::host::HostEvent;
use crate::domain::transcript::Transcript;
use crate::messages::delivery::RegisterAdvisor;
use crate::messages::review::{AskEnd, ReleaseWaiters, ResetAdvisor};
use crate::review::cadence::{AdvisorCadence, Cadence};
use crate::settings::{AdvisorSettings, ReviewMode};
use crate::status::{AdvisorState, CadenceStatus, SpendCeiling};
use crate::texts::{notice, NOTICES};

/// One advisor of the session.
pub(crate) struct Member {
    /// What it is started with.
    pub plan: MemberPlan,
    /// Its actors while it runs.
    pub children: Option<Children>,
    /// Its transcript file (P9), started on its first run; kept across pauses.
    pub audit: Option<Addr<AuditLog>>,
    /// Paused by `/advisor off NAME` (RO19).
    pub held_off: bool,
    /// Its failed reviews so far (C3).
    pub failures: u64,
    /// Its entry changed on disk: the new plan, swapped in before its next review (RO21).
    pub rebuild: Option<MemberPlan>,
    /// The updates its `when` did not match (RO17, CA4), over every run: a pause or
    /// rebuild never restarts the count.
    pub skipped_updates: u64,
    /// Its eligible-update counter and held updates (CA2, CA3): kept across a rebuild
    /// (CA7), dropped by a reset (CA8) or a pause.
    pub cadence: AdvisorCadence,
    /// Its spend over the session and what its ceiling did to it (SP6).
    pub ceiling: SpendCeiling,
}

impl Member {
    /// A member of `plan`, not started.
    pub fn new(plan: MemberPlan) -> Self {
        Self {
            plan,
            children: None,
            audit: None,
            held_off: false,
            failures: 0,
            rebuild: None,
            skipped_updates: 0,
            cadence: AdvisorCadence::new(),
            ceiling: SpendCeiling::default(),
        }
    }

    /// Whether it may run: enabled in its entry, not paused by the user, with a model.
    pub fn runnable(&self) -> bool {
        self.plan.enabled && !self.held_off && self.plan.model.is_ok()
    }

    /// Its agent, while it runs.
    pub fn agent(&self) -> Option<Addr<AdvisorAgent>> {
        self.children.as_ref().map(|c| c.agent.clone())
    }

    /// Its feed, while it runs.
    pub fn feed(&self) -> Option<Addr<TranscriptFeed>> {
        self.children.as_ref().map(|c| c.feed.clone())
    }

    /// Stops its actors: waiters released, its ask ended with `cause` and a review still
    /// running cancelled (its model call dropped, so it makes no further model call, tool
    /// call or raise and frees its slot of the provider's call limit); the agent moves to
    /// `epoch` (RO19, RO21).
    pub fn stop(&mut self, epoch: u64, cause: AskEnd) {
        if let Some(children) = self.children.take() {
            children.agent.do_send(ReleaseWaiters);
            children.agent.do_send(ResetAdvisor {
                epoch,
                cause,
                stopping: true,
            });
        }
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

    /// Its spend ceiling in effect (SP6): its entry's, else `advisor.maxSpendRatio`.
    pub fn spend_limit(&self, settings: &AdvisorSettings) -> Option<f64> {
        self.plan.max_spend_ratio.or(settings.max_spend_ratio)
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
        }
    }

    /// Whether this is the member `advisor` names (`None`: the unnamed advisor).
    pub fn is(&self, advisor: Option<&AdvisorLabel>) -> bool {
        self.plan.slug() == advisor.map(|l| &*l.slug)
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
}

impl Supervisor {
    /// The member `advisor` names (`None`: the unnamed advisor).
    pub(super) fn member_of(&mut self, advisor: Option<&AdvisorLabel>) -> Option<&mut Member> {
        self.members.iter_mut().find(|m| m.is(advisor))
    }

    /// The index of the named member `typed` (its name or slug, RO7).
    pub(super) fn find_member(&self, typed: &str) -> Option<usize> {
        self.members.iter().position(|m| m.plan.answers_to(typed))
    }

    /// The names of the named members, for a line about an unknown one; `None` when the
    /// session has none (no roster, RO12).
    pub(super) fn member_names(&self) -> Option<String> {
        let names: Vec<&str> = self.members.iter().filter_map(|m| m.plan.name()).collect();
        (!names.is_empty()).then(|| names.join(", "))
    }

    /// The agents of the running members.
    pub(super) fn agents(&self) -> Vec<Addr<AdvisorAgent>> {
        self.members.iter().filter_map(Member::agent).collect()
    }

    /// Stops member `index` (see [`Member::stop`]).
    pub(super) fn stop_member(&mut self, index: usize, epoch: u64, cause: AskEnd) {
        if let Some(member) = self.members.get_mut(index) {
            member.stop(epoch, cause);
        }
    }

    /// Whether any member runs.
    pub(super) fn any_running(&self) -> bool {
        self.members.iter().any(|m| m.children.is_some())
    }

    /// Starts every runnable member, seeded at `seed` (X4).
    pub(super) fn start_members(
        &mut self,
        ctx: &mut Context<Self>,
        seed: Option<(Transcript, usize)>,
    ) {
        for index in 0..self.members.len() {
            self.start_member(ctx, index, seed.clone());
        }
    }

    /// Starts member `index` when it may run and is not running, seeded at `seed` (X4); a
    /// named one is registered with the router first (RO10, RO15, RO16).
    pub(super) fn start_member(
        &mut self,
        ctx: &mut Context<Self>,
        index: usize,
        seed: Option<(Transcript, usize)>,
    ) {
        let router = self.router();
        let runnable = self.members.get(index).is_some_and(Member::runnable);
        let watchdog = runnable.then(|| self.watchdog_loader(ctx)).flatten();
        let cwd = self.config.workspace_root.display().to_string();
        let host = self.host.clone();
        let me = ctx.address();
        let Some(member) = self.members.get_mut(index) else {
            return;
        };
        let Ok(model) = member.plan.model.clone() else {
            return;
        };
        if !member.runnable() || member.children.is_some() {
            return;
        }
        if let Some(label) = &member.plan.label {
            router.do_send(RegisterAdvisor {
                label: label.clone(),
                policy: member.plan.policy,
                max_notes: member.plan.max_notes,
                max_severity: member.plan.max_severity,
                // CA6, CA16, CA18: the entry's own review mode.
                review_mode: member.cadence_in_effect(&self.config.settings).mode,
            });
        }
        if member.audit.is_none() {
            if let Some(path) = member.plan.audit_path.clone() {
                let audit = AuditLog::new(path, cwd, host).start();
                // SP6, P9: the ratio counts what the file recorded before.
                super::ceiling::restore_spend(ctx, member.plan.label.clone(), &audit);
                member.audit = Some(audit);
            }
        }
        let audit = member.audit.clone().map(Addr::recipient);
        let reports = AgentReports {
            failed: me.clone().recipient(),
            dropped: me.clone().recipient(),
            paused: me.clone().recipient(),
            quarantined: me.clone().recipient(),
            notices: me.clone().recipient(),
            spent: me.recipient(),
        };
        let links = ChildLinks {
            router: &router,
            watchdog: watchdog.map(Addr::recipient),
            audit,
            reports,
        };
        let children = start_children(&self.config, &member.plan, model, links, self.epoch, seed);
        member.children = Some(children);
    }

    /// The session's WATCHDOG.md loader, started on first use when watchdog files are in
    /// use: one for every member, its warnings told once and unnamed (W3, W8, RO13).
    fn watchdog_loader(&mut self, ctx: &mut Context<Self>) -> Option<Addr<WatchdogLoader>> {
        if let Some(loader) = &self.watchdog {
            return Some(loader.clone());
        }
        let config = self.config.watchdog.clone()?;
        let loader = WatchdogLoader::new(config)
            .with_cache(self.config.watchdog_cache())
            .with_redactor(self.config.redactor())
            .with_context_files(self.config.context_files.clone())
            .with_notices(ctx.address().recipient())
            .start();
        self.watchdog = Some(loader.clone());
        Some(loader)
    }

    /// Sends `text` to the user; about a named advisor, naming it (RO23).
    pub(super) fn notice_about(&self, advisor: Option<&AdvisorLabel>, text: String) {
        let event = match advisor {
            None => HostEvent::notice(text),
            Some(label) => HostEvent::Notice {
                text: named_notice(&label.name, &text),
                advisor: Some(label.name.to_string()),
            },
        };
        self.host.do_send(event);
    }
}

/// `text`, a line about the advisor, as a line about the named advisor `name` (RO23): the
/// leading words of notices.txt's `unnamed` form (`advisor: `) become its `named` form
/// (`advisor NAME: `). A text without them is named as it is.
pub(crate) fn named_notice(name: &str, text: &str) -> String {
    let rest = text.strip_prefix(unnamed_prefix()).unwrap_or(text);
    notice("named", &[("name", name), ("text", rest)])
}

/// What notices.txt puts before a line about the (unnamed) advisor: its `unnamed` form up
/// to `{text}`.
fn unnamed_prefix() -> &'static str {
    let form = NOTICES.get("unnamed");
    form.split_once("{text}").map_or(form, |(prefix, _)| prefix)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::config::RuntimeConfig;
    use crate::model::scripted::ScriptedModel;

    fn member(model: Result<(), &str>, enabled: bool) -> Member {
        let config = RuntimeConfig::new("p", "/w", Some(Arc::new(ScriptedModel::new([]))));
        let mut plan = config.unnamed_plan();
        plan.label = Some(AdvisorLabel::new("sec", "Sec"));
        plan.enabled = enabled;
        if let Err(reason) = model {
            plan.model = Err(reason.to_string());
        }
        Member::new(plan)
    }

    #[test]
    fn ro8_ro19_a_members_state_says_why_it_does_not_run() {
        let state = |m: &Member, on: bool, paused: Option<&str>| m.state(on, paused).0;
        let no_model = member(Err("no key for acme"), true);
        assert_eq!(
            no_model.state(true, None),
            (AdvisorState::NoModel, Some("no key for acme".into()))
        );
        assert_eq!(
            state(&member(Ok(()), false), true, None),
            AdvisorState::Paused
        );
        let mut held = member(Ok(()), true);
        held.held_off = true;
        assert_eq!(
            held.state(true, None),
            (AdvisorState::Paused, Some("paused by /advisor off".into()))
        );
        assert_eq!(state(&member(Ok(()), true), false, None), AdvisorState::Off);
        assert_eq!(
            member(Ok(()), true).state(true, Some("invalid key")),
            (AdvisorState::Failing, Some("invalid key".into()))
        );
        assert_eq!(
            state(&member(Ok(()), true), true, None),
            AdvisorState::Running
        );
        assert!(!member(Err("x"), true).runnable() && member(Ok(()), true).runnable());
    }

    #[test]
    fn ro23_every_notice_about_the_advisor_has_the_prefix_named_notice_replaces() {
        let prefix = unnamed_prefix();
        let word = prefix.split([' ', ':']).next().unwrap_or_default();
        assert!(!word.is_empty() && !prefix.contains('{'), "{prefix:?}");
        let (lead, _) = NOTICES.get("named").split_once("{name}").unwrap();
        let named_form = format!("{lead}{{name}}");
        for line in NOTICES.0.lines().filter(|l| !l.starts_with('#')) {
            let Some((key, text)) = line.split_once(':') else {
                continue;
            };
            let text = text.trim();
            let first = text.split([' ', ':']).next().unwrap_or_default();
            // A line about the advisor is in the unnamed form `named_notice` rewrites, or
            // names its advisor already.
            // `/advisor test` answers for the unnamed advisor only, never through here.
            if first.eq_ignore_ascii_case(word) && key != "test" {
                assert!(
                    text.starts_with(prefix) || text.starts_with(&named_form),
                    "notices.txt `{key}` starts neither with {prefix:?} nor with {named_form:?}"
                );
            }
        }
        let on = notice("on", &[]);
        let rest = on.strip_prefix(prefix).unwrap();
        assert_eq!(
            named_notice("Security", &on),
            notice("named", &[("name", "Security"), ("text", rest)])
        );
    }

    #[test]
    fn ro23_a_notice_about_a_named_advisor_names_it() {
        assert_eq!(
            named_notice("Security", "advisor: paused: rate limited"),
            "advisor Security: paused: rate limited"
        );
        assert_eq!(
            named_notice("Security", "model warning"),
            "advisor Security: model warning"
        );
    }
}
