//! How the supervisor's children are started and linked (the feed, the agent and the tool
//! executor of one advisor run, to the session's router and watchdog loader), and how a
//! turn end waits on them.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use actix::{Addr, Recipient};

use crate::actors::advisor_agent::{AdvisorAgent, AgentSetup};
use crate::actors::agent_port::AgentLinks;
use crate::actors::delivery_router::DeliveryRouter;
use crate::actors::tool_executor::ToolExecutor;
use crate::actors::transcript_feed::TranscriptFeed;
use crate::config::{MemberPlan, RuntimeConfig};
use crate::delivery::{turn_will_continue, CatchUpEnd, CatchUpPlan, ReviewId, TurnEndPlanned};
use crate::domain::advice::Advisory;
use crate::domain::host::HostEvent;
use crate::domain::transcript::{Transcript, TranscriptMark};
use crate::messages::delivery::{CatchUpFinished, CloseWindow, InjectAdvice, RaiseAdvice};
use crate::messages::feed::{ObserveTurn, SeedCursor, TurnObserved};
use crate::messages::review::{
    AdvisorPaused, AppendAudit, AwaitBacklog, BacklogDropped, BacklogWait, CheckedIn,
    GetAgentStatus, NoticeRaised, QueueDelta, ReviewFailed, ReviewQuarantined, SpendRecorded,
};
use crate::messages::watchdog::GetWatchdogPrompt;
use crate::model::ModelClient;
use crate::redact::Redactor;
use crate::review::{ReviewEngine, ReviewLimits};
use crate::settings::SyncBacklog;
use crate::texts::notice;
use crate::tools::ToolSession;

/// The running children of one advisor run.
pub struct Children {
    /// The transcript feed.
    pub feed: Addr<TranscriptFeed>,
    /// The agent.
    pub agent: Addr<AdvisorAgent>,
    /// The tool executor. Nothing is sent to it but the agent's tool calls (its tool
    /// session keeps no state to clear, SP2); the supervisor's tests reach it here.
    #[cfg_attr(not(test), allow(dead_code))]
    pub executor: Addr<ToolExecutor>,
}

/// Where the agent reports to (the supervisor).
pub struct AgentReports {
    /// Failed reviews and asks.
    pub failed: Recipient<ReviewFailed>,
    /// Dropped backlogs (F2).
    pub dropped: Recipient<BacklogDropped>,
    /// Pauses (F3).
    pub paused: Recipient<AdvisorPaused>,
    /// Quarantined reviews (P5).
    pub quarantined: Recipient<ReviewQuarantined>,
    /// Lines for the user.
    pub notices: Recipient<NoticeRaised>,
    /// Reviews that called `check_in` (SP7).
    pub checked_in: Recipient<CheckedIn>,
    /// What each model run spent (SP6).
    pub spent: Recipient<SpendRecorded>,
}

impl AgentReports {
    /// Every report to `actor` (the supervisor).
    pub fn to<A>(actor: &Addr<A>) -> Self
    where
        A: actix::Actor<Context = actix::Context<A>>
            + actix::Handler<ReviewFailed>
            + actix::Handler<BacklogDropped>
            + actix::Handler<AdvisorPaused>
            + actix::Handler<ReviewQuarantined>
            + actix::Handler<NoticeRaised>
            + actix::Handler<CheckedIn>
            + actix::Handler<SpendRecorded>,
    {
        Self {
            failed: actor.clone().recipient(),
            dropped: actor.clone().recipient(),
            paused: actor.clone().recipient(),
            quarantined: actor.clone().recipient(),
            notices: actor.clone().recipient(),
            checked_in: actor.clone().recipient(),
            spent: actor.clone().recipient(),
        }
    }
}

/// What one advisor run is linked to beside the supervisor.
pub struct ChildLinks<'a> {
    /// The session's delivery router.
    pub router: &'a Addr<DeliveryRouter>,
    /// The session's WATCHDOG.md loader, shared by its advisors (RO13); `None`: no
    /// watchdog files.
    pub watchdog: Option<Recipient<GetWatchdogPrompt>>,
    /// The advisor's transcript file (P9), when one is kept.
    pub audit: Option<Recipient<AppendAudit>>,
    /// Where the agent reports to.
    pub reports: AgentReports,
}

/// Starts feed, agent and executor of the advisor `plan` with its `model` in `epoch`,
/// linked as `links` say; the feed's cursor is seeded at `seed`'s given length (X4). All on
/// the current arbiter: no thread of its own (A6).
pub fn start_children(
    config: &RuntimeConfig,
    plan: &MemberPlan,
    model: Arc<dyn ModelClient>,
    links: ChildLinks<'_>,
    epoch: u64,
    seed: Option<(Transcript, usize)>,
) -> Children {
    let ChildLinks {
        router,
        watchdog,
        audit,
        reports,
    } = links;
    let settings = config.settings.clone();
    // X5: the advisor's own tool results leave the process too; redact them like deltas,
    // and the WATCHDOG.md blocks with them (W6).
    let redactor = config.redactor();
    let executor = start_executor(config, plan, router, redactor.clone());
    let engine = ReviewEngine {
        model: Arc::clone(&model),
        promotion: config.promotion_model.clone(),
        tools: plan.tools.schemas_with_advise().into(),
        base_prompt: config.base_prompt().into(),
        instructions: plan.instructions.clone(),
        cwd: config.workspace_root.display().to_string().into(),
        limits: ReviewLimits {
            // SP1: a roster entry's own budget wins over the setting.
            tool_budget: plan.tool_budget,
            ..ReviewLimits::from_settings(&settings)
        },
        guard: config.output_guard(),
        redactor: redactor.clone(),
    };
    let links = AgentLinks {
        advisor: plan.label.clone(),
        executor: executor.clone().recipient(),
        watchdog,
        failed: reports.failed,
        dropped: reports.dropped,
        paused: reports.paused,
        quarantined: reports.quarantined,
        notices: reports.notices,
        checked_in: reports.checked_in,
        spent: reports.spent,
        held_preamble: router.clone().recipient(),
        review_succeeded: router.clone().recipient(),
        review_ended: router.clone().recipient(),
        discard_attempt: router.clone().recipient(),
        audit,
    };
    let setup = AgentSetup {
        engine,
        links,
        settings: settings.clone(),
        hold_wait_through_retries: config.hold_wait_through_retries,
        epoch,
        fallback_models: config.fallback_models.clone(),
    };
    let agent = actix::Supervisor::start(move |_| AdvisorAgent::new(setup));
    // R1: a replay after reset is bounded to about half the window (4 chars a token).
    let budget = (model.info().context_window as usize).saturating_mul(2);
    let cursor = config
        .feed_cursor(settings.transcript, Some(budget))
        .with_when(plan.when.clone(), &config.workspace_root);
    let feed = actix::Supervisor::start(move |_| TranscriptFeed::new(cursor));
    if let Some((transcript, len)) = seed {
        feed.do_send(SeedCursor { transcript, len });
    }
    Children {
        feed,
        agent,
        executor,
    }
}

/// Starts the tool executor of the advisor `plan`: its tools in its own tool session
/// (T1, RO13: `<primary-id>-advisor`, or `<primary-id>-advisor.<slug>` for a named one),
/// its `advise` raises to `router` under its label, its results redacted by `redactor`.
fn start_executor(
    config: &RuntimeConfig,
    plan: &MemberPlan,
    router: &Addr<DeliveryRouter>,
    redactor: Option<Redactor>,
) -> Addr<ToolExecutor> {
    let session = Arc::new(ToolSession::for_member(
        &config.primary_session_id,
        plan.slug(),
        config.workspace_root.clone(),
    ));
    let registry = plan.tools.clone();
    let raise: Recipient<RaiseAdvice> = router.clone().recipient();
    let max_notes = plan.max_notes;
    let label = plan.label.clone();
    actix::Supervisor::start(move |_| {
        ToolExecutor::new(registry, session, raise, max_notes)
            .with_redactor(redactor.clone())
            .with_advisor(label.clone())
    })
}

/// Re-primes the advisor of `children` after a quarantine (P5): its feed observes the
/// whole transcript at `mark` (its cursor rewound already) and the capture is queued at its
/// agent as one update of `epoch` up to turn end `turn`, silently.
pub fn reprime(
    children: &Children,
    mark: TranscriptMark,
    epoch: u64,
    turn: u64,
) -> impl std::future::Future<Output = ()> + 'static {
    let wip = mark.read(turn_will_continue).unwrap_or(false);
    let (feed, agent) = (children.feed.clone(), children.agent.clone());
    async move {
        let observed = feed.send(ObserveTurn {
            transcript: mark,
            wip,
        });
        if let Ok(TurnObserved::Captured {
            update: Some(update),
            ..
        }) = observed.await
        {
            agent.do_send(QueueDelta {
                epoch,
                updates: vec![update],
                wip,
                turn,
            });
        }
    }
}

/// How long a syncBacklog wait runs before the user is told what the agent waits for (S1).
pub const SLOW_WAIT_NOTICE_AFTER: Duration = Duration::from_secs(5);

/// The one line a session's user gets when a syncBacklog wait runs past
/// [`SLOW_WAIT_NOTICE_AFTER`] (S1): what the agent waits for and how to turn the wait off,
/// as the `reconfirm` catch-up says its waits (D5).
#[derive(Clone)]
pub struct SlowWaitNotice {
    /// Where the notice goes.
    pub host: Recipient<HostEvent>,
    /// Whether the session said it already: once per session.
    pub said: Arc<AtomicBool>,
}

impl SlowWaitNotice {
    /// Says it for a wait under `threshold` capped at `cap`, unless the session did already.
    fn say(&self, threshold: usize, cap: Duration) {
        if self.said.swap(true, Ordering::Relaxed) {
            return;
        }
        let text = notice(
            "syncWait",
            &[
                ("threshold", &threshold.to_string()),
                ("secs", &cap.as_secs().to_string()),
            ],
        );
        self.host.do_send(HostEvent::notice(text));
    }
}

/// An advisor whose review a boundary scheduled, and how far the primary waits for it
/// (CA9).
pub struct CatchUp {
    /// Its agent.
    pub agent: Addr<AdvisorAgent>,
    /// Its catch-up in effect.
    pub sync: SyncBacklog,
}

/// What a turn end waits on.
pub struct TurnWaits {
    /// Every running advisor's agent: the catch-up block (D5) waits for them all.
    pub agents: Vec<Addr<AdvisorAgent>>,
    /// The advisors whose review was scheduled at this boundary (CA9).
    pub scheduled: Vec<CatchUp>,
    /// The session's router, told when a catch-up block ends.
    pub router: Addr<DeliveryRouter>,
    /// The router's catch-up block, when it planned one (D5).
    pub plan: Option<CatchUpPlan>,
    /// A numeric catch-up's wall-clock cap (S1: 30 s).
    pub cap: Duration,
    /// A replay holds a numeric wait through retries past its cap (S1, L2).
    pub hold_through_retries: bool,
    /// The once-per-session line about a slow wait; `None` in a replay.
    pub slow: Option<SlowWaitNotice>,
    /// Set while a session transition is being prepared (CA11): a wait starting then
    /// returns at once (a catch-up block ends as released).
    pub released: Arc<AtomicBool>,
}

/// Completes (with an error: nothing is sent) once the triage judge's decision was carried
/// out (SP9).
pub type JudgeDone = tokio::sync::oneshot::Receiver<()>;

/// What observing a turn answers: the router's plan, the members whose review was
/// scheduled (CA9) and the judge's decision to wait for (SP9).
pub type Observed = (TurnEndPlanned, Vec<CatchUp>, Option<JudgeDone>);

/// The wait of a turn end (S1, D5, CA9): once the turn is `observed`, the judge decides
/// (SP9), the catch-up waits run as `waits` say with the router's plan and the scheduled
/// reviews filled in, and the window's notes go out (CA13).
pub async fn wait_turn_end(
    observed: tokio::sync::oneshot::Receiver<Observed>,
    mut waits: TurnWaits,
) {
    let (planned, scheduled, judged) = observed.await.unwrap_or_default();
    if let Some(judged) = judged {
        // SP9: the judge decides (10 s at most) before the catch-up waits.
        let _ = judged.await;
    }
    let window = planned.window;
    let router = waits.router.clone();
    waits.scheduled = scheduled;
    waits.plan = planned.catch_up;
    wait_after_turn(waits).await;
    // CA13: the waits are over; the window's notes go out as one message before the turn
    // end returns.
    if let Some(window) = window {
        let _ = router.send(CloseWindow { window }).await;
    }
}

/// The wait a turn end makes: the catch-up block when the router planned one (D5), else
/// the catch-up of every advisor whose review was scheduled here (CA9), each under its own
/// value and in parallel: a number waits while that advisor's backlog is at least it, at
/// most the cap (which `hold_through_retries`, a replay, extends while the advisor is
/// retrying after a failure); `strict` waits until it has nothing queued or running, with
/// no cap (CA10). Advisors that scheduled nothing are not waited on, whatever their
/// backlog. What CA11 lists releases every wait: an interrupt or reset wakes the waiters,
/// a failing or paused advisor answers at once.
pub async fn wait_after_turn(waits: TurnWaits) {
    let TurnWaits {
        agents,
        scheduled,
        router,
        plan,
        cap,
        hold_through_retries,
        slow,
        released,
    } = waits;
    if released.load(Ordering::Relaxed) {
        if let Some(plan) = plan {
            let end = CatchUpEnd::Aborted;
            let _ = router.send(CatchUpFinished { plan, end }).await;
        }
        return;
    }
    if let Some(plan) = plan {
        let waited = tokio::time::timeout(plan.timeout, await_all(&agents, 1)).await;
        let end = match waited {
            Err(_) => CatchUpEnd::TimedOut,
            Ok(BacklogWait::Drained) => CatchUpEnd::Settled,
            Ok(BacklogWait::Failing) => CatchUpEnd::Failed,
            Ok(BacklogWait::Released) => CatchUpEnd::Aborted,
        };
        // Awaited, so what it delivers is there at the next step boundary.
        let _ = router.send(CatchUpFinished { plan, end }).await;
        return;
    }
    let each = scheduled.into_iter().filter_map(|catch_up| {
        let threshold = catch_up.sync.threshold()?;
        let agent = catch_up.agent;
        let slow = slow.clone();
        Some(async move {
            if catch_up.sync.is_strict() {
                // CA10: no wall-clock cap.
                await_all(std::slice::from_ref(&agent), threshold).await;
            } else {
                capped_wait(agent, threshold, cap, hold_through_retries, slow).await;
            }
        })
    });
    futures_util::future::join_all(each).await;
}

/// A numeric catch-up (S1, CA9): waits while `agent`'s backlog is at least `threshold`, at
/// most `cap`; a wait still running after [`SLOW_WAIT_NOTICE_AFTER`] says so through
/// `slow`, once per session.
async fn capped_wait(
    agent: Addr<AdvisorAgent>,
    threshold: usize,
    cap: Duration,
    hold_through_retries: bool,
    slow: Option<SlowWaitNotice>,
) {
    let agents = [agent];
    let waited = await_all(&agents, threshold);
    tokio::pin!(waited);
    let mut limit = cap;
    let slow = slow.filter(|s| !s.said.load(Ordering::Relaxed));
    if let Some(slow) = slow.filter(|_| SLOW_WAIT_NOTICE_AFTER < cap) {
        if tokio::time::timeout(SLOW_WAIT_NOTICE_AFTER, &mut waited)
            .await
            .is_ok()
        {
            return;
        }
        slow.say(threshold, cap);
        limit = cap - SLOW_WAIT_NOTICE_AFTER;
    }
    loop {
        if tokio::time::timeout(limit, &mut waited).await.is_ok() {
            break;
        }
        // A replay holds the wait through retries (S1): while an advisor has
        // failed and not yet succeeded, the cap does not end the wait; F1–F3 bound it
        // (the retry succeeds, the backlog is dropped, or the advisor pauses).
        if hold_through_retries && any_retrying(&agents).await {
            limit = cap;
            continue;
        }
        tracing::info!("syncBacklog wait hit its cap; the primary goes on");
        break;
    }
}

/// Resolves once every agent's backlog is below `threshold` (or it is failing or paused,
/// S2): released if one was released (or is gone), else failing if one is, else drained.
pub async fn await_all(agents: &[Addr<AdvisorAgent>], threshold: usize) -> BacklogWait {
    let waits = agents.iter().map(|a| a.send(AwaitBacklog { threshold }));
    let answers = futures_util::future::join_all(waits).await;
    let mut out = BacklogWait::Drained;
    for answer in answers {
        match answer.unwrap_or(BacklogWait::Released) {
            BacklogWait::Released => return BacklogWait::Released,
            BacklogWait::Failing => out = BacklogWait::Failing,
            BacklogWait::Drained => {}
        }
    }
    out
}

/// Whether an agent has failed since its last success and is not paused: a retry is
/// pending or running (a pending retry counts as a consecutive failure too).
async fn any_retrying(agents: &[Addr<AdvisorAgent>]) -> bool {
    for agent in agents {
        let status = agent.send(GetAgentStatus).await;
        if status.is_ok_and(|s| s.paused.is_none() && s.consecutive_failures > 0) {
            return true;
        }
    }
    false
}

/// `/advisor test` (C2): raises `advisory` through the normal delivery path and answers
/// what the router made of it.
pub async fn test_advice(
    router: Addr<DeliveryRouter>,
    epoch: u64,
    nth: u64,
    advisory: Advisory,
) -> String {
    // Each injection counts as its own update (C2, D8): review ids from the top of the range,
    // far from the agent's, so a user's checks are never budgeted as one review.
    // RO12, RO15: the user's check, not the unnamed advisor's raise (InjectAdvice).
    let inject = InjectAdvice {
        review: ReviewId {
            epoch,
            number: u64::MAX - nth,
        },
        advisory,
    };
    match router.send(inject).await {
        Ok(outcome) => notice("test", &[("outcome", &outcome.tool_text(usize::MAX))]),
        Err(_) => notice(
            "test",
            &[(
                "outcome",
                crate::tools::advise::TOOL_RESULTS.get("routerRestarting"),
            )],
        ),
    }
}
