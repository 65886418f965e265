//! The Supervisor's links to the other actors, as long as it lives ([`SupervisorLinks`]):
//! the host it tells, the router, the session's one WATCHDOG.md loader (RO13) and each
//! member's actors (its feed, agent and executor while it runs, its transcript file once it
//! ran, P9). The links start, stop and rewind a member's actors as the supervisor carries
//! out what [`crate::members::Members`] decided; they decide nothing. All run on the
//! session's arbiter (A6).

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use actix::{Actor, Addr, Recipient};

use crate::actors::advisor_agent::AdvisorAgent;
use crate::actors::audit_log::AuditLog;
use crate::actors::delivery_router::DeliveryRouter;
use crate::actors::transcript_feed::TranscriptFeed;
use crate::actors::watchdog_loader::WatchdogLoader;
use crate::actors::wiring::{start_children, AgentReports, ChildLinks, Children};
use crate::config::{MemberPlan, RuntimeConfig};
use crate::domain::advice::AdvisorLabel;
use crate::domain::host::HostEvent;
use crate::domain::transcript::Transcript;
use crate::messages::feed::RewindCursor;
use crate::messages::review::{
    AgentStatus, AskEnd, EndHalt, GetAgentStatus, GetRestoredUsage, NoticeRaised, ReleaseWaiters,
    ResetAdvisor,
};
use crate::model::ModelClient;
use crate::texts::{notice, NOTICES};

/// One member's actors, by its slug (`None`: the unnamed advisor).
#[derive(Default)]
pub(crate) struct MemberActors {
    /// Its feed, agent and executor while it runs.
    pub children: Option<Children>,
    /// Its transcript file (P9), started on its first run; kept across pauses and rebuilds.
    pub audit: Option<Addr<AuditLog>>,
}

impl MemberActors {
    /// Its agent's part of the status, with the lifetime its transcript file recorded
    /// before (P9); `None` while it does not run.
    pub(crate) fn agent_status(&self) -> impl Future<Output = Option<AgentStatus>> + 'static {
        let agent = self.children.as_ref().map(|c| c.agent.clone());
        let audit = self.audit.clone();
        async move {
            let mut status = agent?.send(GetAgentStatus).await.ok()?;
            if let Some(audit) = audit {
                if let Ok(restored) = audit.send(GetRestoredUsage).await {
                    status.lifetime.add(&restored);
                }
            }
            Some(status)
        }
    }
}

/// The links to the other actors, as long as the supervisor lives: the host it tells, the
/// router, the session's one WATCHDOG.md loader (RO13) and each member's actors.
pub(crate) struct SupervisorLinks {
    /// Where host events go.
    host: Recipient<HostEvent>,
    /// The delivery router, started with the supervisor.
    router: Option<Addr<DeliveryRouter>>,
    /// The session's one WATCHDOG.md loader, every member's (RO13), started with the first.
    watchdog: Option<Addr<WatchdogLoader>>,
    /// The actors of the members that have any, by slug.
    actors: HashMap<Option<String>, MemberActors>,
}

/// What one member's actors start from (X4, RO13).
pub(crate) struct MemberStart<'a> {
    /// The session's configuration.
    pub config: &'a RuntimeConfig,
    /// The member's plan.
    pub plan: &'a MemberPlan,
    /// Its model.
    pub model: Arc<dyn ModelClient>,
    /// The session's epoch.
    pub epoch: u64,
    /// Where its feed starts reading (X4).
    pub seed: Option<(Transcript, usize)>,
    /// Where its agent reports to.
    pub reports: AgentReports,
}

impl SupervisorLinks {
    /// Links that send host events to `host`; no other actor started yet.
    pub(crate) fn new(host: Recipient<HostEvent>) -> Self {
        Self {
            host,
            router: None,
            watchdog: None,
            actors: HashMap::new(),
        }
    }

    /// Where host events go.
    pub(crate) fn host(&self) -> &Recipient<HostEvent> {
        &self.host
    }

    /// The session's router, started on first use as `config` says.
    pub(crate) fn router(&mut self, config: &RuntimeConfig) -> Addr<DeliveryRouter> {
        if let Some(router) = &self.router {
            return router.clone();
        }
        let policy = config.settings.policy;
        // The unnamed advisor's budget (RO12: a roster's shared value applies to it); a
        // named advisor registers its own (RO10).
        let max_notes = config.unnamed_plan().max_notes;
        let immune_turns = config.settings.immune_turns;
        let max_chars = config.settings.max_note_chars;
        let spend_controls = config.settings.spend_controls;
        let host = self.host.clone();
        let tap = config.advice_tap.clone();
        let router = actix::Supervisor::start(move |_| {
            DeliveryRouter::new(policy, max_notes, immune_turns, host)
                .with_max_note_chars(max_chars)
                .with_spend_controls(spend_controls)
                .with_tap(tap.clone())
        });
        self.router = Some(router.clone());
        router
    }

    /// The session's WATCHDOG.md loader, started on first use when watchdog files are in
    /// use: one for every member, its warnings told to `notices` once and unnamed (W3, W8,
    /// RO13).
    pub(crate) fn watchdog(
        &mut self,
        config: &RuntimeConfig,
        notices: Recipient<NoticeRaised>,
    ) -> Option<Addr<WatchdogLoader>> {
        if let Some(loader) = &self.watchdog {
            return Some(loader.clone());
        }
        let loader = WatchdogLoader::new(config.watchdog.clone()?)
            .with_cache(config.watchdog_cache())
            .with_blocking(config.blocking())
            .with_redactor(config.redactor())
            .with_context_files(config.context_files.clone())
            .with_notices(notices)
            .start();
        self.watchdog = Some(loader.clone());
        Some(loader)
    }

    /// The WATCHDOG.md loader, once started.
    pub(crate) fn watchdog_started(&self) -> Option<Addr<WatchdogLoader>> {
        self.watchdog.clone()
    }

    /// The actors of the member `slug`, while it has any.
    pub(crate) fn actors_of(&self, slug: Option<&str>) -> Option<&MemberActors> {
        self.actors.get(&slug.map(str::to_string))
    }

    /// The agent of the member `slug`, while it runs.
    pub(crate) fn agent_of(&self, slug: Option<&str>) -> Option<Addr<AdvisorAgent>> {
        let children = self.actors_of(slug)?.children.as_ref()?;
        Some(children.agent.clone())
    }

    /// The feed of the member `slug`, while it runs.
    pub(crate) fn feed_of(&self, slug: Option<&str>) -> Option<Addr<TranscriptFeed>> {
        let children = self.actors_of(slug)?.children.as_ref()?;
        Some(children.feed.clone())
    }

    /// The member `slug`'s transcript file (P9) when it has none yet and its plan keeps
    /// one: started now and answered, for the spend it recorded before to be restored (SP6).
    pub(crate) fn open_audit(
        &mut self,
        slug: &Option<String>,
        config: &RuntimeConfig,
        plan: &MemberPlan,
    ) -> Option<Addr<AuditLog>> {
        let actors = self.actors.entry(slug.clone()).or_default();
        if actors.audit.is_some() {
            return None;
        }
        let cwd = config.workspace_root.display().to_string();
        let audit = AuditLog::new(plan.audit_path.clone()?, cwd, self.host.clone())
            .with_blocking(config.blocking())
            .start();
        actors.audit = Some(audit.clone());
        Some(audit)
    }

    /// Starts the feed, agent and executor of the member `slug` as `start` says, linked to
    /// the router, the WATCHDOG.md loader and its transcript file.
    pub(crate) fn start(&mut self, slug: Option<String>, start: MemberStart<'_>) {
        let router = self.router(start.config);
        let watchdog = self.watchdog.clone().map(Addr::recipient);
        let actors = self.actors.entry(slug).or_default();
        let links = ChildLinks {
            router: &router,
            watchdog,
            audit: actors.audit.clone().map(Addr::recipient),
            reports: start.reports,
        };
        let MemberStart {
            config,
            plan,
            model,
            epoch,
            seed,
            ..
        } = start;
        actors.children = Some(start_children(config, plan, model, links, epoch, seed));
    }

    /// Stops the member `slug`'s actors: its model call dropped, it makes no further model
    /// call, tool call or raise and frees its slot of the provider's call limit (RO19, RO21).
    pub(crate) fn stop(&mut self, slug: &Option<String>, epoch: u64, cause: AskEnd) {
        let actors = self.actors.get_mut(slug);
        if let Some(children) = actors.and_then(|a| a.children.take()) {
            children.agent.do_send(ReleaseWaiters);
            children.agent.do_send(ResetAdvisor {
                epoch,
                cause,
                stopping: true,
            });
        }
    }

    /// Forgets the member `slug`'s actors (RO21: its entry was removed).
    pub(crate) fn remove(&mut self, slug: &Option<String>) {
        self.actors.remove(slug);
    }

    /// Resets the member `slug`'s agent at `epoch` and rewinds its feed (R1), ending its
    /// halt when `end_halt`.
    pub(crate) fn rewind(&self, slug: &Option<String>, epoch: u64, cause: AskEnd, end_halt: bool) {
        let actors = self.actors.get(slug);
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

    /// Sends `text` to the user; about a named advisor, naming it (RO23).
    pub(crate) fn notice_about(&self, advisor: Option<&AdvisorLabel>, text: String) {
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
