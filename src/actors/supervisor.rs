//! Supervisor: owns the other actors, routes the host protocol, applies the failure policy
//! (F1–F5) and resets on rewrites (R1, R2).

use std::path::PathBuf;
use std::sync::Arc;

use actix::{
    Actor, ActorFutureExt, Addr, AsyncContext, Context, Handler, Recipient, ResponseActFuture,
    ResponseFuture, WrapFuture,
};

use crate::actors::advisor_agent::{AdvisorAgent, AgentSetup};
use crate::actors::audit_log::AuditLog;
use crate::actors::delivery_router::DeliveryRouter;
use crate::actors::tool_executor::ToolExecutor;
use crate::actors::transcript_feed::TranscriptFeed;
use crate::actors::watchdog_loader::WatchdogLoader;
use crate::command::{parse_command, AdvisorCommand};
use crate::delivery::{turn_was_terminal, CatchUpEnd};
use crate::domain::host::{HostEvent, RewriteKind, StepAdvice};
use crate::domain::transcript::Transcript;
use crate::messages::delivery::{
    CatchUpFinished, GetDeliveryStatus, RaiseAdvice, ResetDelivery, SetDeliveryEnabled, TurnEnded,
};
use crate::messages::feed::{ObserveTurn, RewindCursor, SeedCursor, TurnObserved};
use crate::messages::host::{
    Dispose, GetDump, GetStatus, Interrupt, Rewrite, RunCommand, RunState, StepBoundary, TurnEnd,
    UserPrompt,
};
use crate::messages::review::{
    AwaitBacklog, BacklogWait, DropBacklog, DumpContext, FlushAudit, GetAgentStatus, NoticeRaised,
    ReleaseWaiters, ResetAdvisor, RetryReview, ReviewFinished, SetPaused,
};
use crate::messages::tools::ClearToolSession;
use crate::model::ModelClient;
use crate::review::{FailureAction, FailurePolicy};
use crate::settings::AdvisorSettings;
use crate::status::AdvisorStatus;
use crate::tools::{ToolRegistry, ToolSession};
use crate::watchdog::WatchdogConfig;

/// The built-in advisor system prompt (G1), a data file in `config/`.
pub const BUILTIN_PROMPT: &str = include_str!("../../config/advisor-prompt.md");

/// Everything the runtime is started with; loaded once by the host and passed in.
pub struct RuntimeConfig {
    /// The primary session's id; the advisor's tool session is `<id>-advisor` (T1).
    pub primary_session_id: String,
    /// The workspace root the tools are confined to (T2), named in the prompt (G1).
    pub workspace_root: PathBuf,
    /// Settings (K1).
    pub settings: AdvisorSettings,
    /// The advisor model; `None` when no model is assigned (K2).
    pub model: Option<Arc<dyn ModelClient>>,
    /// The client for `advisor.contextPromotion` (built by the host from
    /// [`AdvisorSettings::context_promotion`]): when the context fills up and this model's
    /// window is larger, the advisor switches to it for the rest of the session (G5).
    pub promotion_model: Option<Arc<dyn ModelClient>>,
    /// The workspace tools (normally [`ToolRegistry::workspace`]).
    pub tools: ToolRegistry,
    /// Watchdog discovery settings; `None` disables WATCHDOG.md files.
    pub watchdog: Option<WatchdogConfig>,
    /// A replacement for the built-in prompt (`<agentDir>/system-prompts/advisor.md`, G1).
    pub system_prompt_override: Option<String>,
    /// The transcript as it stands when the advisor starts: the cursor is seeded at its end
    /// so a resumed session is not replayed (X4).
    pub initial_transcript: Option<Transcript>,
    /// Where the advisor's own transcript is appended as JSON lines (G7), e.g.
    /// `<session dir>/<session name>__advisor.jsonl`; `None` keeps no audit file.
    pub audit_path: Option<PathBuf>,
    /// What the sessions of the process share (A6), set by
    /// [`crate::runtime::AdvisorRuntime::open`]; `None` builds everything for this session.
    pub shared: Option<Arc<crate::runtime::SharedResources>>,
}

impl RuntimeConfig {
    /// A configuration with default settings, the workspace tools and no watchdog.
    pub fn new(
        primary_session_id: impl Into<String>,
        workspace_root: impl Into<PathBuf>,
        model: Option<Arc<dyn ModelClient>>,
    ) -> Self {
        Self {
            primary_session_id: primary_session_id.into(),
            workspace_root: workspace_root.into(),
            settings: AdvisorSettings::default(),
            model,
            promotion_model: None,
            tools: ToolRegistry::workspace(),
            watchdog: None,
            system_prompt_override: None,
            initial_transcript: None,
            audit_path: None,
            shared: None,
        }
    }

    /// The configuration of a subagent's own advisor (W7), or `None` when
    /// `advisor.subagents` is off (the default: only the main session has an advisor).
    ///
    /// The subagent's advisor shares the model, tools, settings and workspace root, gets
    /// its own tool session (`<subagent-id>-advisor`, T1), and reruns WATCHDOG.md discovery
    /// from the subagent's working directory. It starts with no transcript and no audit
    /// file; the host sets those if it wants them.
    pub fn for_subagent(
        &self,
        subagent_session_id: impl Into<String>,
        cwd: impl Into<PathBuf>,
    ) -> Option<Self> {
        if !self.settings.subagents {
            return None;
        }
        let cwd = cwd.into();
        Some(Self {
            primary_session_id: subagent_session_id.into(),
            workspace_root: self.workspace_root.clone(),
            settings: self.settings.clone(),
            model: self.model.clone(),
            promotion_model: self.promotion_model.clone(),
            tools: self.tools.clone(),
            watchdog: self.watchdog.as_ref().map(|w| w.with_cwd(cwd)),
            system_prompt_override: self.system_prompt_override.clone(),
            initial_transcript: None,
            audit_path: None,
            shared: self.shared.clone(),
        })
    }

    /// The base system prompt: the built-in one (or the override) plus the workspace root.
    pub fn base_prompt(&self) -> String {
        let prompt = self
            .system_prompt_override
            .as_deref()
            .unwrap_or(BUILTIN_PROMPT)
            .trim_end();
        format!(
            "{prompt}\n\nThe workspace root is `{}`; tool paths are relative to it.",
            self.workspace_root.display()
        )
    }
}

struct Children {
    feed: Addr<TranscriptFeed>,
    agent: Addr<AdvisorAgent>,
    executor: Addr<ToolExecutor>,
}

/// The supervisor actor; the [`crate::AdvisorHandle`] talks to it.
pub struct Supervisor {
    config: RuntimeConfig,
    host: Recipient<HostEvent>,
    router: Option<Addr<DeliveryRouter>>,
    audit: Option<Addr<AuditLog>>,
    children: Option<Children>,
    enabled: bool,
    epoch: u64,
    failures: FailurePolicy,
    failure_count: u64,
    paused: Option<String>,
    last_transcript: Option<Transcript>,
    initial_len: Option<usize>,
}

impl Supervisor {
    /// A supervisor that will start the runtime described by `config` and send host
    /// events to `host`.
    pub fn new(config: RuntimeConfig, host: Recipient<HostEvent>) -> Self {
        let failures = FailurePolicy::new(
            config.settings.max_consecutive_failures,
            config.settings.retry_delay,
        );
        let enabled = config.settings.enabled;
        let last_transcript = config.initial_transcript.clone();
        let initial_len = last_transcript.as_ref().map(Transcript::len);
        Self {
            config,
            host,
            router: None,
            audit: None,
            children: None,
            enabled,
            epoch: 0,
            failures,
            failure_count: 0,
            paused: None,
            last_transcript,
            initial_len,
        }
    }

    fn router(&mut self) -> Addr<DeliveryRouter> {
        if let Some(router) = &self.router {
            return router.clone();
        }
        let policy = self.config.settings.policy;
        let max_notes = self.config.settings.max_notes_per_update;
        let immune_turns = self.config.settings.immune_turns;
        let host = self.host.clone();
        let router = actix::Supervisor::start(move |_| {
            DeliveryRouter::new(policy, max_notes, immune_turns, host)
        });
        self.router = Some(router.clone());
        router
    }

    /// The audit log (G7), started on first use when the host gave a path.
    fn audit(&mut self) -> Option<Addr<AuditLog>> {
        if self.audit.is_none() {
            let path = self.config.audit_path.clone()?;
            self.audit = Some(AuditLog::new(path, self.host.clone()).start());
        }
        self.audit.clone()
    }

    /// Starts feed, agent and executor (when a model is assigned), seeded at `seed`'s
    /// given length (X4).
    fn start_children(&mut self, ctx: &mut Context<Self>, seed: Option<(Transcript, usize)>) {
        let Some(model) = self.config.model.clone() else {
            return;
        };
        let router = self.router();
        let settings = self.config.settings.clone();
        let session = Arc::new(ToolSession::for_primary(
            &self.config.primary_session_id,
            self.config.workspace_root.clone(),
        ));
        let registry = self.config.tools.clone();
        let router_rcpt: Recipient<RaiseAdvice> = router.clone().recipient();
        let max_notes = settings.max_notes_per_update;
        // X5: the advisor's own tool results leave the process too; redact them like deltas.
        let redactor = self.config.redactor();
        let executor = actix::Supervisor::start(move |_| {
            ToolExecutor::new(registry, session, router_rcpt, max_notes)
                .with_redactor(redactor.clone())
        });
        let watchdog = self.config.watchdog.clone().map(|cfg| {
            WatchdogLoader::new(cfg)
                .with_cache(self.config.watchdog_cache())
                .start()
                .recipient()
        });
        let tools = self.config.tools.schemas_with_advise();
        let base_prompt = self.config.base_prompt();
        let supervisor = ctx.address().recipient();
        let exec_rcpt = executor.clone().recipient();
        let clear_rcpt = executor.clone().recipient();
        let agent_settings = settings.clone();
        let epoch = self.epoch;
        let held_preamble = Some(router.clone().recipient());
        let review_succeeded = Some(router.clone().recipient());
        let discard_attempt = Some(router.recipient());
        let notices = Some(ctx.address().recipient());
        let promotion = self.config.promotion_model.clone();
        let audit = self.audit().map(Addr::recipient);
        let agent = actix::Supervisor::start(move |_| {
            AdvisorAgent::new(AgentSetup {
                model,
                promotion,
                discard_attempt,
                notices,
                audit,
                tools,
                executor: exec_rcpt,
                tool_session: clear_rcpt,
                watchdog,
                supervisor,
                held_preamble,
                review_succeeded,
                base_prompt,
                settings: agent_settings,
                epoch,
            })
        });
        // R1: a replay after reset is bounded to about half the window (4 chars a token).
        let window = self
            .config
            .model
            .as_ref()
            .map(|m| m.info().context_window)
            .unwrap_or(128_000);
        let budget = (window as usize).saturating_mul(2);
        let cursor = self.config.feed_cursor(settings.transcript, Some(budget));
        let agent_rcpt = agent.clone().recipient();
        let feed = actix::Supervisor::start(move |_| TranscriptFeed::new(cursor, agent_rcpt));
        if let Some((transcript, len)) = seed {
            feed.do_send(SeedCursor { transcript, len });
        }
        self.children = Some(Children {
            feed,
            agent,
            executor,
        });
    }

    fn stop_children(&mut self) {
        if let Some(children) = self.children.take() {
            children.agent.do_send(ReleaseWaiters);
            children.agent.do_send(ResetAdvisor {
                epoch: self.epoch + 1,
            });
        }
        self.epoch += 1;
    }

    fn reset(&mut self, kind: RewriteKind) {
        self.epoch += 1;
        tracing::info!(?kind, epoch = self.epoch, "advisor reset");
        self.failures.succeeded();
        self.router().do_send(ResetDelivery { epoch: self.epoch });
        if let Some(children) = &self.children {
            children.agent.do_send(ResetAdvisor { epoch: self.epoch });
            children.feed.do_send(RewindCursor);
            children.executor.do_send(ClearToolSession);
        }
    }

    fn notice(&self, text: String) {
        self.host.do_send(HostEvent::Notice { text });
    }

    fn enable(&mut self, ctx: &mut Context<Self>) -> String {
        self.paused = None;
        if self.config.model.is_none() {
            self.enabled = true;
            return "advisor: enabled, but no advisor model is assigned (set modelRoles.advisor)"
                .to_string();
        }
        if !self.enabled || self.children.is_none() {
            self.enabled = true;
            self.stop_children();
            self.router().do_send(SetDeliveryEnabled { enabled: true });
            self.router().do_send(ResetDelivery { epoch: self.epoch });
            let seed = self.last_transcript.clone().map(|t| {
                let len = t.len();
                (t, len)
            });
            self.start_children(ctx, seed);
        } else if let Some(children) = &self.children {
            children.agent.do_send(SetPaused { reason: None });
        }
        "advisor: on".to_string()
    }

    fn disable(&mut self) -> String {
        self.enabled = false;
        self.stop_children();
        self.router().do_send(SetDeliveryEnabled { enabled: false });
        "advisor: off".to_string()
    }
}

impl Actor for Supervisor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        self.router();
        if self.enabled {
            let seed = self.config.initial_transcript.clone().zip(self.initial_len);
            self.start_children(ctx, seed);
        }
    }
}

impl Handler<TurnEnd> for Supervisor {
    type Result = ResponseActFuture<Self, ()>;

    fn handle(&mut self, msg: TurnEnd, _ctx: &mut Context<Self>) -> Self::Result {
        self.last_transcript = Some(msg.transcript.clone());
        // D4: O(1), the last message only.
        let terminal = turn_was_terminal(&msg.transcript);
        let router = self.router();
        let Some(children) = self.children.as_ref().filter(|_| self.enabled) else {
            // D7: immune turns count turn ends even with no advisor running.
            router.do_send(TurnEnded {
                terminal,
                can_wait: false,
            });
            return Box::pin(actix::fut::ready(()));
        };
        let feed = children.feed.clone();
        let agent = children.agent.clone();
        let epoch = self.epoch;
        let threshold = self.config.settings.sync_backlog.threshold();
        let cap = self.config.settings.sync_wait_cap;
        // Both enqueued now, in this order: the router hears of the turn end before the
        // review of its delta can raise anything (D4's terminal flag, D7's count).
        let plan = router.send(TurnEnded {
            terminal,
            can_wait: true,
        });
        let observed = feed.send(ObserveTurn {
            transcript: msg.transcript,
            epoch,
        });
        let observe = async move {
            let outcome = observed.await;
            let plan = plan.await.ok().flatten();
            (plan, outcome)
        };
        Box::pin(
            observe
                .into_actor(self)
                .then(move |(plan, outcome), act, _ctx| {
                    if let Ok(TurnObserved::Rewrite) = outcome {
                        act.reset(RewriteKind::Detected);
                    }
                    let wait = async move {
                        if let Some(plan) = plan {
                            // D5: the catch-up block, in place of the syncBacklog wait.
                            let waited = tokio::time::timeout(
                                plan.timeout,
                                agent.send(AwaitBacklog { threshold: 1 }),
                            )
                            .await;
                            let end = match waited {
                                Err(_) => CatchUpEnd::TimedOut,
                                Ok(Ok(BacklogWait::Drained)) => CatchUpEnd::Settled,
                                Ok(Ok(BacklogWait::Failing)) => CatchUpEnd::Failed,
                                Ok(Ok(BacklogWait::Released)) | Ok(Err(_)) => CatchUpEnd::Aborted,
                            };
                            // Awaited, so what it delivers is there at the next step boundary.
                            let _ = router.send(CatchUpFinished { plan, end }).await;
                        } else if let Some(threshold) = threshold {
                            let waited =
                                tokio::time::timeout(cap, agent.send(AwaitBacklog { threshold }));
                            if waited.await.is_err() {
                                tracing::info!("syncBacklog wait hit its cap; the primary goes on");
                            }
                        }
                    };
                    wait.into_actor(act)
                }),
        )
    }
}

impl Handler<StepBoundary> for Supervisor {
    type Result = ResponseFuture<StepAdvice>;

    fn handle(&mut self, msg: StepBoundary, _ctx: &mut Context<Self>) -> Self::Result {
        let router = self.router();
        Box::pin(async move { router.send(msg).await.unwrap_or_default() })
    }
}

impl Handler<RunState> for Supervisor {
    type Result = ();

    fn handle(&mut self, msg: RunState, _ctx: &mut Context<Self>) {
        self.router().do_send(msg);
    }
}

impl Handler<Interrupt> for Supervisor {
    type Result = ();

    fn handle(&mut self, msg: Interrupt, _ctx: &mut Context<Self>) {
        self.router().do_send(msg);
        if let Some(children) = &self.children {
            children.agent.do_send(ReleaseWaiters);
        }
    }
}

impl Handler<UserPrompt> for Supervisor {
    type Result = ();

    fn handle(&mut self, msg: UserPrompt, _ctx: &mut Context<Self>) {
        self.router().do_send(msg);
    }
}

impl Handler<Rewrite> for Supervisor {
    type Result = ();

    fn handle(&mut self, msg: Rewrite, _ctx: &mut Context<Self>) {
        self.reset(msg.kind);
    }
}

impl Handler<ReviewFinished> for Supervisor {
    type Result = ();

    fn handle(&mut self, msg: ReviewFinished, ctx: &mut Context<Self>) {
        if msg.epoch != self.epoch {
            return;
        }
        let Some(agent) = self.children.as_ref().map(|c| c.agent.clone()) else {
            return;
        };
        let error = match msg.result {
            Ok(()) => {
                self.failures.succeeded();
                return;
            }
            Err(e) => e,
        };
        self.failure_count += 1;
        match self.failures.failed(&error) {
            FailureAction::Retry(after) => agent.do_send(RetryReview { after }),
            FailureAction::DropBacklog => {
                let host = self.host.clone();
                let limit = self.config.settings.max_consecutive_failures;
                ctx.spawn(
                    async move {
                        let dropped = agent.send(DropBacklog).await.unwrap_or(0);
                        tracing::warn!(dropped, %error, "advisor failed {limit} times in a row; backlog dropped");
                        host.do_send(HostEvent::Notice {
                            text: format!(
                                "advisor: {limit} consecutive model failures ({error}); skipped {dropped} turn{} of review",
                                if dropped == 1 { "" } else { "s" }
                            ),
                        });
                    }
                    .into_actor(self),
                );
            }
            FailureAction::Pause(reason) => {
                tracing::warn!(%reason, "advisor paused");
                self.paused = Some(reason.clone());
                agent.do_send(SetPaused {
                    reason: Some(reason.clone()),
                });
                self.notice(format!(
                    "advisor: paused: {reason}. Fix the model settings, then run /advisor on to resume."
                ));
            }
        }
    }
}

impl Handler<NoticeRaised> for Supervisor {
    type Result = ();

    fn handle(&mut self, msg: NoticeRaised, _ctx: &mut Context<Self>) {
        self.notice(msg.text);
    }
}

impl Handler<RunCommand> for Supervisor {
    type Result = ResponseActFuture<Self, String>;

    fn handle(&mut self, msg: RunCommand, ctx: &mut Context<Self>) -> Self::Result {
        let reply = match parse_command(&msg.line) {
            Ok(AdvisorCommand::Toggle) => {
                if self.enabled {
                    self.disable()
                } else {
                    self.enable(ctx)
                }
            }
            Ok(AdvisorCommand::On) => self.enable(ctx),
            Ok(AdvisorCommand::Off) => self.disable(),
            Ok(AdvisorCommand::Test(advisory)) => {
                let router = self.router();
                let epoch = self.epoch;
                let fut = async move {
                    match router
                        .send(RaiseAdvice {
                            epoch,
                            review: u64::MAX - 1,
                            advisory,
                        })
                        .await
                    {
                        Ok(outcome) => format!("advisor test: {}", outcome.tool_text(usize::MAX)),
                        Err(_) => "advisor test: the router is restarting".to_string(),
                    }
                };
                return Box::pin(fut.into_actor(self));
            }
            Ok(AdvisorCommand::Status) => {
                let fut = ctx.address().send(GetStatus);
                return Box::pin(
                    async move {
                        fut.await
                            .map(|s| s.render())
                            .unwrap_or_else(|_| "advisor: unavailable".into())
                    }
                    .into_actor(self),
                );
            }
            Ok(AdvisorCommand::Dump { raw }) => {
                let fut = ctx.address().send(GetDump { raw });
                return Box::pin(
                    async move { fut.await.unwrap_or_else(|_| "advisor: unavailable".into()) }
                        .into_actor(self),
                );
            }
            Err(usage) => usage,
        };
        Box::pin(actix::fut::ready(reply))
    }
}

impl Handler<GetStatus> for Supervisor {
    type Result = ResponseActFuture<Self, AdvisorStatus>;

    fn handle(&mut self, _msg: GetStatus, _ctx: &mut Context<Self>) -> Self::Result {
        let router = self.router();
        let agent = self.children.as_ref().map(|c| c.agent.clone());
        let mut status = AdvisorStatus {
            enabled: self.enabled,
            model: self.config.model.as_ref().map(|m| m.info().id),
            thinking: self
                .config
                .model
                .as_ref()
                .map(|m| m.thinking().as_str().to_string()),
            policy: self.config.settings.policy,
            failures: self.failure_count,
            consecutive_failures: self.failures.consecutive(),
            paused: self.paused.clone(),
            provider_calls: self.config.provider_calls(),
            ..AdvisorStatus::default()
        };
        Box::pin(
            async move {
                if let Ok(d) = router.send(GetDeliveryStatus).await {
                    status.deliveries = d.counts;
                    status.suppressed = d.suppressed;
                    status.held_notes = d.held;
                }
                if let Some(agent) = agent {
                    if let Ok(a) = agent.send(GetAgentStatus).await {
                        // The agent knows the model it calls now (G5 promotion).
                        if a.model.is_some() {
                            status.model = a.model.clone();
                            status.thinking = a.thinking.clone();
                        }
                        status.agent = a;
                    }
                }
                status
            }
            .into_actor(self),
        )
    }
}

impl Handler<GetDump> for Supervisor {
    type Result = ResponseFuture<String>;

    fn handle(&mut self, msg: GetDump, _ctx: &mut Context<Self>) -> Self::Result {
        let agent = self.children.as_ref().map(|c| c.agent.clone());
        Box::pin(async move {
            match agent {
                Some(agent) => agent
                    .send(DumpContext { raw: msg.raw })
                    .await
                    .unwrap_or_else(|_| "advisor: unavailable".into()),
                None => "(the advisor is not running)\n".to_string(),
            }
        })
    }
}

impl Handler<Dispose> for Supervisor {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, _msg: Dispose, _ctx: &mut Context<Self>) -> Self::Result {
        self.disable();
        // G7: the audit file is complete when dispose returns.
        let audit = self.audit.clone();
        Box::pin(async move {
            if let Some(audit) = audit {
                let _ = audit.send(FlushAudit).await;
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::actors::tool_executor::HaltForTest;
    use crate::messages::tools::ExecuteTool;
    use crate::model::scripted::ScriptedModel;

    struct Sink;
    impl Actor for Sink {
        type Context = Context<Self>;
    }
    impl Handler<HostEvent> for Sink {
        type Result = ();
        fn handle(&mut self, _msg: HostEvent, _ctx: &mut Context<Self>) {}
    }

    /// Hands out the executor's address (test-only).
    #[derive(actix::Message)]
    #[rtype(result = "Option<Addr<ToolExecutor>>")]
    struct GetExecutor;

    impl Handler<GetExecutor> for Supervisor {
        type Result = Option<Addr<ToolExecutor>>;
        fn handle(&mut self, _msg: GetExecutor, _ctx: &mut Context<Self>) -> Self::Result {
            self.children.as_ref().map(|c| c.executor.clone())
        }
    }

    #[actix::test]
    async fn f5_a_stopped_actor_is_restarted_and_the_same_address_keeps_working() {
        let model = ScriptedModel::new([]);
        let config = RuntimeConfig::new("p", std::env::temp_dir(), Some(Arc::new(model)));
        let sup = Supervisor::new(config, Sink.start().recipient()).start();
        let executor = sup
            .send(GetExecutor)
            .await
            .unwrap()
            .expect("children started");
        executor.send(HaltForTest).await.unwrap();
        let out = executor
            .send(ExecuteTool {
                epoch: 0,
                review: 1,
                name: "advise".into(),
                arguments: serde_json::json!({"note": "still alive", "severity": "nit"}),
            })
            .await
            .expect("the restarted executor answers");
        assert_eq!(out.text, "Recorded.");
    }
}
