//! The host handle (SPEC A3): one type that starts the actors and offers the A4 calls,
//! hiding actix addresses.

use std::any::Any;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use actix::dev::SendError;
use actix::{Actor, Addr, Recipient};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};
use tokio::sync::oneshot;

use crate::actors::event_forwarder::EventForwarder;
use crate::actors::supervisor::Supervisor;
use crate::config::RuntimeConfig;
use crate::domain::host::{HostEvent, RewriteKind, StepAdvice};
use crate::domain::transcript::Transcript;
use crate::messages::host::{
    CloseSession, DisposeSession, GetDump, GetStatus, ModelCatalogChanged, PrimaryTurnEnded,
    RunCommand, RunInterrupted, RunStateChanged, SessionTransitionChanged, TakeStepAdvice,
    TranscriptRewritten, UserPrompted,
};
use crate::messages::review::AskAdvisor;
pub use crate::review::ask::MAX_QUESTION_CHARS;
pub use crate::review::{AskEnd, AskError, BacklogWait};
use crate::shared::SharedResources;
use crate::status::AdvisorStatus;

/// Failures of the handle itself (the runtime is gone).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandleError {
    /// The runtime stopped (disposed, or its thread ended).
    #[error("the advisor runtime is not running")]
    Stopped,
    /// The runtime thread could not be started.
    #[error("could not start the advisor runtime: {0}")]
    Spawn(String),
    /// A question to the advisor got no answer (G8).
    #[error("the advisor could not answer: {0}")]
    Ask(AskError),
}

/// What the host may say about a turn that ended ([`AdvisorHandle::turn_end_with`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TurnEndOptions {
    /// Whether the primary will call its model again in this run: `Some(true)` marks the
    /// turn work in progress (WIP), `Some(false)` a final boundary (P1); `None` derives it
    /// from the turn's last assistant message (it made a tool call: WIP).
    pub will_continue: Option<bool>,
}

/// The host's handle on a running advisor. Cheap to clone; every call goes through the
/// supervisor's mailbox, so it works from any thread or runtime once started.
#[derive(Clone)]
pub struct AdvisorHandle {
    supervisor: Addr<Supervisor>,
    system: Option<actix::System>,
    /// The session's place on a shared runtime (A6), when it was opened on one.
    lease: Option<Arc<SessionLease>>,
    /// Whether a turn end can ever make the host wait (S1, D5, RO15), fixed at open.
    turn_end_may_wait: bool,
    /// Whether a turn end may make the host wait now, kept by the supervisor as roster
    /// entries change; when not, `turn_end` does not wait for the supervisor's answer.
    turn_end_flag: Arc<AtomicBool>,
    /// Set (for every clone) once `dispose` has closed a session of its own thread or of a
    /// shared runtime, so a turn end that does not wait still answers `Stopped` after it.
    closed: Arc<AtomicBool>,
}

/// One session's start, the same for every way a host starts one ([`AdvisorHandle::start`],
/// [`AdvisorHandle::spawn_dedicated`], `AdvisorRuntime::open`): the supervisor is built
/// from the configuration seeded at the initial transcript's length when the start was
/// asked for (X4), and shares its turn-end flag with the session's handles.
pub(crate) struct SessionStart {
    config: RuntimeConfig,
    seed_len: Option<usize>,
    turn_end_flag: Arc<AtomicBool>,
}

/// What a session's handles are made with: the turn-end flags of its start.
pub(crate) struct HandleFlags {
    turn_end_may_wait: bool,
    turn_end_flag: Arc<AtomicBool>,
}

impl SessionStart {
    /// The start of the session `config` describes, and its handles' flags.
    pub(crate) fn new(config: RuntimeConfig) -> (Self, HandleFlags) {
        let turn_end_may_wait = config.turn_end_may_wait();
        let turn_end_flag = Arc::new(AtomicBool::new(turn_end_may_wait));
        let start = Self {
            seed_len: config.initial_transcript.as_ref().map(Transcript::len),
            config,
            turn_end_flag: Arc::clone(&turn_end_flag),
        };
        let flags = HandleFlags {
            turn_end_may_wait,
            turn_end_flag,
        };
        (start, flags)
    }

    /// The session's supervisor, sending host events to `host`; built where it will run.
    pub(crate) fn supervisor(self, host: Recipient<HostEvent>) -> Supervisor {
        Supervisor::new(self.config, host)
            .seeded_at(self.seed_len)
            .with_turn_end_flag(self.turn_end_flag)
    }
}

impl HandleFlags {
    /// The handle on the started `supervisor`, with the actix system of its own thread or
    /// its lease on a shared runtime (A6) when it has one.
    pub(crate) fn handle(
        self,
        supervisor: Addr<Supervisor>,
        system: Option<actix::System>,
        lease: Option<SessionLease>,
    ) -> AdvisorHandle {
        AdvisorHandle {
            supervisor,
            system,
            lease: lease.map(Arc::new),
            turn_end_may_wait: self.turn_end_may_wait,
            turn_end_flag: self.turn_end_flag,
            closed: Arc::default(),
        }
    }
}

impl AdvisorHandle {
    /// Starts the runtime inside the current actix system (for actix-web servers and
    /// `#[actix::main]` programs). Host events go to `host`.
    pub fn start(config: RuntimeConfig, host: Recipient<HostEvent>) -> Self {
        let (start, flags) = SessionStart::new(config);
        flags.handle(start.supervisor(host).start(), None, None)
    }

    /// Starts the session on a thread and actix system of its own, as `spawn` did before
    /// the shared runtime (A6). It costs a thread per session; it is kept for hosts that
    /// want a session isolated and as the baseline of the `sessions` bench.
    pub async fn spawn_dedicated(
        config: RuntimeConfig,
    ) -> Result<(Self, UnboundedReceiver<HostEvent>), HandleError> {
        let (start, flags) = SessionStart::new(config);
        let (events_tx, events_rx) = unbounded_channel();
        let (ready_tx, ready_rx) = oneshot::channel();
        std::thread::Builder::new()
            .name("advisor-runtime".into())
            .spawn(move || {
                let system = actix::System::new();
                system.block_on(async move {
                    let forwarder = EventForwarder::new(events_tx).start();
                    let supervisor = start.supervisor(forwarder.recipient()).start();
                    let _ = ready_tx.send((supervisor, actix::System::current()));
                });
                let _ = system.run();
            })
            .map_err(|e| HandleError::Spawn(e.to_string()))?;
        let (supervisor, system) = ready_rx
            .await
            .map_err(|_| HandleError::Spawn("the runtime thread ended early".into()))?;
        Ok((flags.handle(supervisor, Some(system), None), events_rx))
    }

    /// A primary turn finished (A4). Resolves after the syncBacklog wait (S1) or the
    /// catch-up block (D5).
    ///
    /// When neither can happen (`syncBacklog: off` and a policy other than `reconfirm`,
    /// the defaults) there is nothing to wait for: the turn is put in the session's mailbox
    /// and the call returns at once, without waiting for the advisor's threads. Every
    /// later call on the handle is answered after the turn has been observed (the
    /// supervisor takes its mailbox in order and observes a turn before anything else), so
    /// a `status` right after shows the turn's delta queued. Only a full mailbox makes the
    /// call wait, for its turn in line.
    pub async fn turn_end(&self, transcript: &Transcript) -> Result<(), HandleError> {
        self.turn_end_with(transcript, TurnEndOptions::default())
            .await
    }

    /// Whether [`AdvisorHandle::turn_end`] may ever wait for the advisor's answer in this
    /// session: a syncBacklog threshold (S1) or a catch-up block (D5) may hold it, the
    /// session's `reconfirm` or a roster entry's (RO15), and a roster that is reloaded may
    /// gain such an entry (RO21). When false it always hands the turn over at once; a host
    /// that bounds its own wait for a turn end needs no bound then. While the session's
    /// advisors give nothing to wait for (no threshold, none under `reconfirm`), a turn end
    /// is handed over at once even when this is true.
    pub fn turn_end_may_wait(&self) -> bool {
        self.turn_end_may_wait
    }

    /// [`AdvisorHandle::turn_end`] with what the host knows about the turn: whether the
    /// primary will call its model again (`will_continue`, §3 Expanded, P1). Left `None`,
    /// it is derived from the turn's last assistant message (a tool call: it continues).
    pub async fn turn_end_with(
        &self,
        transcript: &Transcript,
        options: TurnEndOptions,
    ) -> Result<(), HandleError> {
        let turn = PrimaryTurnEnded {
            transcript: transcript.mark(),
            will_continue: options.will_continue,
        };
        let turn = if self.turn_end_flag.load(Ordering::Acquire) {
            turn
        } else if self.closed.load(Ordering::Acquire) {
            return Err(HandleError::Stopped);
        } else {
            match self.supervisor.try_send(turn) {
                Ok(()) => return Ok(()),
                Err(SendError::Closed(_)) => return Err(HandleError::Stopped),
                Err(SendError::Full(turn)) => turn,
            }
        };
        self.call(turn).await
    }

    /// Hands a turn over without waiting for it (a host that must answer at once, H10): it
    /// is queued now, in order with the turns before it, even past a full mailbox, and is
    /// observed though nobody waits for its answer. (Dropping a [`AdvisorHandle::turn_end`]
    /// future instead may lose its turn: a request whose caller went away before the
    /// supervisor took it is skipped.)
    pub fn hand_over_turn(
        &self,
        transcript: &Transcript,
        options: TurnEndOptions,
    ) -> Result<(), HandleError> {
        if self.closed.load(Ordering::Acquire) || !self.supervisor.connected() {
            return Err(HandleError::Stopped);
        }
        self.supervisor.do_send(PrimaryTurnEnded {
            transcript: transcript.mark(),
            will_continue: options.will_continue,
        });
        Ok(())
    }

    /// Hands a turn over as [`AdvisorHandle::hand_over_turn`] does — queued now, in order —
    /// and gives the wait for its answer (S1, D5) as a future that may be dropped (a host's
    /// bounded wait, H12) without losing the turn. Outside a tokio runtime, or when nothing
    /// can make a turn end wait, the turn is handed over and the future is ready at once.
    pub fn hand_over_turn_waiting(
        &self,
        transcript: &Transcript,
        options: TurnEndOptions,
    ) -> impl std::future::Future<Output = Result<(), HandleError>> + Send + 'static {
        let tokio = tokio::runtime::Handle::try_current().ok();
        let waiting = match tokio {
            Some(tokio) if self.turn_end_flag.load(Ordering::Acquire) => {
                // `send` queues the turn at once when the mailbox has room (a full one
                // queues it when the task first runs, so only then may a turn handed over
                // right after overtake it); the task keeps the request, and so the turn,
                // alive whoever stops waiting for it.
                let request = self.supervisor.send(PrimaryTurnEnded {
                    transcript: transcript.mark(),
                    will_continue: options.will_continue,
                });
                Some(tokio.spawn(request))
            }
            _ => None,
        };
        let handed = match waiting {
            Some(_) => Ok(()),
            None => self.hand_over_turn(transcript, options),
        };
        async move {
            handed?;
            match waiting {
                Some(task) => match task.await {
                    Ok(Ok(())) => Ok(()),
                    _ => Err(HandleError::Stopped),
                },
                None => Ok(()),
            }
        }
    }

    /// Sends `message` to the session's supervisor and waits for its answer; a session
    /// that has stopped is [`HandleError::Stopped`].
    async fn call<M>(&self, message: M) -> Result<M::Result, HandleError>
    where
        M: actix::Message + Send + 'static,
        M::Result: Send,
        Supervisor: actix::Handler<M>,
    {
        self.supervisor
            .send(message)
            .await
            .map_err(|_| HandleError::Stopped)
    }

    /// The host is about to call its model: the advice to fold in now (D3).
    pub async fn step_boundary(&self) -> Result<StepAdvice, HandleError> {
        self.call(TakeStepAdvice).await
    }

    /// The primary started (`true`) or went idle (`false`).
    pub async fn run_state(&self, running: bool) -> Result<(), HandleError> {
        self.call(RunStateChanged { running }).await
    }

    /// Puts a proposed tool call to the action gate before it runs (SPEC §20, GT11): the
    /// verdict says whether it may run (`allow`), must not (`deny`, with the reason for the
    /// agent) or needs a person (`ask`). Answers at once when the gate is off or the
    /// classifier passes the call; else within `advisor.gateTimeoutMs` (the fail mode then,
    /// GT5). Assumes a host that can ask a person; see [`AdvisorHandle::gate_with`].
    pub async fn gate(
        &self,
        action: crate::gate::ProposedAction,
    ) -> Result<crate::gate::GateVerdict, HandleError> {
        self.gate_with(action, crate::gate::GateOptions::default())
            .await
    }

    /// [`AdvisorHandle::gate`] with what the host says beside the call: whether it can ask
    /// a person (GT5, GT7).
    pub async fn gate_with(
        &self,
        action: crate::gate::ProposedAction,
        options: crate::gate::GateOptions,
    ) -> Result<crate::gate::GateVerdict, HandleError> {
        self.call(crate::messages::host::GateAction { action, options })
            .await
    }

    /// The host aborted the run (D6).
    pub async fn interrupt(&self, by_user: bool) -> Result<(), HandleError> {
        self.call(RunInterrupted { by_user }).await
    }

    /// A user-initiated prompt (D6).
    pub async fn user_prompt(&self) -> Result<(), HandleError> {
        self.call(UserPrompted).await
    }

    /// The host is preparing a session switch, new session or fork (`true`), or it ended
    /// without one (`false`): while one is prepared, every catch-up wait is released and
    /// new ones return at once (CA11). The rewrite that begins the other conversation ends
    /// it too.
    pub async fn session_transition(&self, preparing: bool) -> Result<(), HandleError> {
        self.call(SessionTransitionChanged { preparing }).await
    }

    /// The host's model catalog changed (a provider registered, models discovered): every
    /// named advisor at `no model` is resolved once more, quietly, and one that resolves
    /// starts at the transcript's end (CA23).
    pub async fn model_catalog_changed(&self) -> Result<(), HandleError> {
        self.call(ModelCatalogChanged).await
    }

    /// The host replaced its transcript (R1).
    pub async fn rewrite(&self, kind: RewriteKind) -> Result<(), HandleError> {
        self.call(TranscriptRewritten { kind }).await
    }

    /// Runs an `/advisor …` command and returns the text to show (C1–C4).
    pub async fn command(&self, line: &str) -> Result<String, HandleError> {
        self.call(RunCommand {
            line: line.to_string(),
        })
        .await
    }

    /// The status (C3).
    pub async fn status(&self) -> Result<AdvisorStatus, HandleError> {
        self.call(GetStatus).await
    }

    /// The advisor's transcript (C4).
    pub async fn dump(&self, raw: bool) -> Result<String, HandleError> {
        self.call(GetDump { raw }).await
    }

    /// Waits until the advisor has nothing left to review (L2's end of a replay): resolves
    /// `Drained` once nothing is left to review (at once when no advisor runs), `Failing` at
    /// once while a retry is pending or the advisor is paused (S2), `Released` on abort,
    /// reset or dispose. Unbounded: wrap it in a timeout.
    pub async fn await_drain(&self) -> Result<BacklogWait, HandleError> {
        self.call(crate::messages::host::AwaitDrain).await
    }

    /// What the advisor still holds back from the primary, as it would be delivered now:
    /// queued nits, outbox steers, held notes (L2). Takes nothing.
    pub async fn undelivered(&self) -> Result<Vec<crate::domain::advice::Delivery>, HandleError> {
        self.call(crate::messages::delivery::GetUndelivered).await
    }

    /// Asks the advisor a question on the primary's behalf (G8). The advisor answers from
    /// its own context once the pending backlog is reviewed (or 30 s passed), may use its
    /// read-only tools, cannot raise advice meanwhile, and keeps the question and answer in
    /// its context. Fails at once while it is paused or failing or when `advisor.consult` is
    /// off, and after a total time limit at the latest.
    pub async fn ask(&self, question: &str) -> Result<String, HandleError> {
        self.ask_advisor(question, None).await
    }

    /// Asks one advisor of the roster a question (G8, RO20): the one named by `advisor`
    /// (its name or slug), else the unnamed advisor, else the roster's first enabled entry.
    pub async fn ask_advisor(
        &self,
        question: &str,
        advisor: Option<&str>,
    ) -> Result<String, HandleError> {
        self.call(AskAdvisor {
            question: question.to_string(),
            advisor: advisor.map(str::to_string),
        })
        .await?
        .map_err(HandleError::Ask)
    }

    /// Stops all work and wakes all waiters (R2). A session opened on a shared runtime
    /// ([`AdvisorHandle::spawn`], [`crate::runtime::AdvisorRuntime::open`]) is then closed
    /// and frees everything it held; one started with [`AdvisorHandle::spawn_dedicated`]
    /// also stops its thread.
    pub async fn dispose(&self) -> Result<(), HandleError> {
        let result = self.call(DisposeSession).await;
        if self.system.is_some() || self.lease.is_some() {
            self.closed.store(true, Ordering::Release);
        }
        if let Some(system) = &self.system {
            system.stop();
        }
        if let Some(lease) = &self.lease {
            let _ = self.supervisor.send(CloseSession).await;
            lease.release();
        }
        result
    }

    /// The model calls of every provider across the sessions of this handle's shared
    /// runtime: in flight, waiting, limit (A6, C3). Empty for a session not opened on one.
    pub fn provider_calls(&self) -> Vec<crate::model::limit::CallCounts> {
        self.lease
            .as_ref()
            .map(|lease| lease.shared.calls())
            .unwrap_or_default()
    }
}

/// A session's claim on its arbiter of a shared runtime (A6); released once, at dispose or
/// when the last handle clone is dropped (which closes the session as `dispose` would).
pub(crate) struct SessionLease {
    supervisor: Addr<Supervisor>,
    /// The open-session count of the session's arbiter.
    sessions: Arc<AtomicUsize>,
    released: AtomicBool,
    /// The runtime's shared resources, for the providers' call counts (C3).
    shared: Arc<SharedResources>,
    /// Keeps the runtime's threads alive while the session is open.
    _runtime: Arc<dyn Any + Send + Sync>,
}

impl SessionLease {
    /// A lease on one place of an arbiter whose count is `sessions` (already counted).
    pub(crate) fn new(
        supervisor: Addr<Supervisor>,
        sessions: Arc<AtomicUsize>,
        shared: Arc<SharedResources>,
        runtime: Arc<dyn Any + Send + Sync>,
    ) -> Self {
        Self {
            supervisor,
            sessions,
            released: AtomicBool::new(false),
            shared,
            _runtime: runtime,
        }
    }

    /// Gives the session's place on its arbiter back.
    fn release(&self) {
        if !self.released.swap(true, Ordering::AcqRel) {
            self.sessions.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

impl Drop for SessionLease {
    fn drop(&mut self) {
        if !self.released.load(Ordering::Acquire) {
            // The host let go of the session without disposing it: close it anyway, so
            // nothing it held outlives its last handle.
            self.supervisor.do_send(DisposeSession);
            self.supervisor.do_send(CloseSession);
        }
        self.release();
    }
}
