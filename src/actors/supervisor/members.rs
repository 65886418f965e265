//! The Supervisor's members' actors (RO13): each member of [`Members`] that runs has its
//! feed, agent and executor, and its transcript file (P9) once it ran; all run on the
//! session's arbiter (A6). What starts, stops or is removed is decided by [`Members`]; here
//! its [`MemberChange`]s are carried out.

use std::collections::HashMap;

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
use crate::members::{MemberChange, Members};
use crate::messages::delivery::{
    PauseAdvisor, RegisterAdvisor, RegisterUnnamedAdvisor, RemoveAdvisor, ResetDelivery,
    SetDeliveryEnabled,
};
use crate::messages::feed::RewindCursor;
use crate::messages::review::{
    AskEnd, EndHalt, QueueDelta, ReleaseWaiters, ResetAdvisor, ResumeReviews,
};
use crate::texts::{notice, NOTICES};

/// One member's actors, by its slug (`None`: the unnamed advisor).
#[derive(Default)]
pub(super) struct MemberActors {
    /// Its feed, agent and executor while it runs.
    pub children: Option<Children>,
    /// Its transcript file (P9), started on its first run; kept across pauses and rebuilds.
    pub audit: Option<Addr<AuditLog>>,
}

/// The members' actors by slug.
pub(super) type ActorsBySlug = HashMap<Option<String>, MemberActors>;

impl Supervisor {
    /// The actors of the member `slug`, while it has any.
    pub(super) fn actors_of(&self, slug: Option<&str>) -> Option<&MemberActors> {
        self.links.actors.get(&slug.map(str::to_string))
    }

    /// The agent of the member `slug`, while it runs.
    pub(super) fn agent_of(&self, slug: Option<&str>) -> Option<Addr<AdvisorAgent>> {
        let children = self.actors_of(slug)?.children.as_ref()?;
        Some(children.agent.clone())
    }

    /// The feed of the member `slug`, while it runs.
    pub(super) fn feed_of(&self, slug: Option<&str>) -> Option<Addr<TranscriptFeed>> {
        let children = self.actors_of(slug)?.children.as_ref()?;
        Some(children.feed.clone())
    }

    /// The agents of the running members, in member order.
    pub(super) fn agents(&self) -> Vec<Addr<AdvisorAgent>> {
        self.members
            .iter()
            .filter_map(|m| self.agent_of(m.slug()))
            .collect()
    }

    /// Carries out what [`Members`] decided, in order; then the turn-end wait flag follows
    /// the members as they are now (S1, D5, RO15, RO21).
    pub(super) fn carry_out(&mut self, ctx: &mut Context<Self>, changes: Vec<MemberChange>) {
        for change in changes {
            self.carry_out_one(ctx, change);
        }
        self.update_turn_end_flag();
    }

    fn carry_out_one(&mut self, ctx: &mut Context<Self>, change: MemberChange) {
        match change {
            MemberChange::Start { slug, seed } => self.start_member(ctx, slug, seed),
            MemberChange::Stop { slug, epoch, cause } => self.stop_member(&slug, epoch, cause),
            MemberChange::Remove { slug } => {
                self.links.actors.remove(&slug);
                let advisor = slug.map(Into::into);
                self.router().do_send(RemoveAdvisor { advisor });
            }
            MemberChange::Register { slug } => {
                if let Some(register) = self.registration(Some(&slug)) {
                    self.router().do_send(register);
                }
            }
            MemberChange::RegisterUnnamed { max_notes } => {
                self.router().do_send(RegisterUnnamedAdvisor { max_notes });
            }
            MemberChange::PauseAtRouter { slug } => {
                let slug = slug.into();
                self.router().do_send(PauseAdvisor { slug, paused: true });
            }
            MemberChange::Resume { slug } => {
                if let Some(agent) = self.agent_of(slug.as_deref()) {
                    agent.do_send(ResumeReviews);
                }
            }
            MemberChange::Rewind {
                slug,
                epoch,
                cause,
                end_halt,
            } => self.rewind_member(&slug, epoch, cause, end_halt),
            MemberChange::ResetDelivery {
                epoch,
                branch,
                conversation,
            } => self.router().do_send(ResetDelivery {
                epoch,
                branch,
                conversation,
            }),
            MemberChange::SetDeliveryEnabled(enabled) => {
                self.router().do_send(SetDeliveryEnabled { enabled });
            }
            MemberChange::Queue {
                slug,
                epoch,
                updates,
                wip,
                turn,
            } => {
                if let Some(agent) = self.agent_of(slug.as_deref()) {
                    agent.do_send(QueueDelta {
                        epoch,
                        updates,
                        wip,
                        turn,
                    });
                }
            }
            MemberChange::Notice(text) => self.notice_about(None, text),
        }
    }

    /// Stops the member `slug`'s actors: its model call dropped, it makes no further model
    /// call, tool call or raise and frees its slot of the provider's call limit (RO19, RO21).
    fn stop_member(&mut self, slug: &Option<String>, epoch: u64, cause: AskEnd) {
        let actors = self.links.actors.get_mut(slug);
        if let Some(children) = actors.and_then(|a| a.children.take()) {
            children.agent.do_send(ReleaseWaiters);
            children.agent.do_send(ResetAdvisor {
                epoch,
                cause,
                stopping: true,
            });
        }
    }

    /// Resets the member `slug`'s agent at `epoch` and rewinds its feed (R1), ending its
    /// halt when `end_halt`.
    fn rewind_member(&self, slug: &Option<String>, epoch: u64, cause: AskEnd, end_halt: bool) {
        let actors = self.links.actors.get(slug);
        if let Some(children) = actors.and_then(|a| a.children.as_ref()) {
            children.agent.do_send(ResetAdvisor {
                epoch,
                cause,
                stopping: false,
            });
            if end_halt {
                children.agent.do_send(EndHalt);
            }
            children.feed.do_send(RewindCursor);
        }
    }

    /// What the router is told of the named member `slug` (RO10, RO15, RO16; CA6, CA16,
    /// CA18: the entry's own review mode); `None` for the unnamed advisor.
    fn registration(&self, slug: Option<&str>) -> Option<RegisterAdvisor> {
        let member = self.members.get(slug)?;
        let plan: &MemberPlan = member.plan();
        Some(RegisterAdvisor {
            label: plan.label.clone()?,
            policy: plan.policy,
            max_notes: plan.max_notes,
            max_severity: plan.max_severity,
            // SP6: at agent-end once its spend ceiling switched it.
            review_mode: member
                .cadence_in_effect(&self.members.config().settings)
                .mode,
        })
    }

    /// Starts the actors of the member `slug`, reading from `seed` (X4); a named one is
    /// registered with the router first (RO10, RO15, RO16).
    fn start_member(
        &mut self,
        ctx: &mut Context<Self>,
        slug: Option<String>,
        seed: Option<(Transcript, usize)>,
    ) {
        let router = self.router();
        let watchdog = self.watchdog_loader(ctx);
        if let Some(register) = self.registration(slug.as_deref()) {
            router.do_send(register);
        }
        let members: &Members = &self.members;
        let config = members.config();
        let Some(plan) = members.get(slug.as_deref()).map(|m| m.plan()) else {
            return;
        };
        let Ok(model) = plan.model.clone() else {
            return;
        };
        let actors = self.links.actors.entry(slug.clone()).or_default();
        if actors.audit.is_none() {
            if let Some(path) = plan.audit_path.clone() {
                let cwd = config.workspace_root.display().to_string();
                let audit = AuditLog::new(path, cwd, self.links.host.clone())
                    .with_blocking(config.blocking())
                    .start();
                // SP6, P9: the ratio counts what the file recorded before.
                super::ceiling::restore_spend(ctx, slug, &audit);
                actors.audit = Some(audit);
            }
        }
        let me = ctx.address();
        let reports = AgentReports {
            failed: me.clone().recipient(),
            dropped: me.clone().recipient(),
            paused: me.clone().recipient(),
            quarantined: me.clone().recipient(),
            notices: me.clone().recipient(),
            checked_in: me.clone().recipient(),
            spent: me.recipient(),
        };
        let links = ChildLinks {
            router: &router,
            watchdog: watchdog.map(Addr::recipient),
            audit: actors.audit.clone().map(Addr::recipient),
            reports,
        };
        let epoch = members.epoch();
        actors.children = Some(start_children(config, plan, model, links, epoch, seed));
    }

    /// The session's WATCHDOG.md loader, started on first use when watchdog files are in
    /// use: one for every member, its warnings told once and unnamed (W3, W8, RO13).
    fn watchdog_loader(&mut self, ctx: &mut Context<Self>) -> Option<Addr<WatchdogLoader>> {
        if let Some(loader) = &self.links.watchdog {
            return Some(loader.clone());
        }
        let config = self.members.config();
        let loader = WatchdogLoader::new(config.watchdog.clone()?)
            .with_cache(config.watchdog_cache())
            .with_blocking(config.blocking())
            .with_redactor(config.redactor())
            .with_context_files(config.context_files.clone())
            .with_notices(ctx.address().recipient())
            .start();
        self.links.watchdog = Some(loader.clone());
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
        self.links.host.do_send(event);
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
    use super::*;

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
