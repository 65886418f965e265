//! The background process of the hook hosts (SPEC H4, H11, H13): one shared
//! [`AdvisorRuntime`], one [`HostSession`] per host session, served over the Unix socket.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::json;
use tokio::io::BufReader;
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use crate::handle::AdvisorHandle;
use crate::runtime::AdvisorRuntime;
use crate::settings::LoadedSettings;
use crate::shared::SharedResources;

use super::host_session::{point_of, EventJob, HostSession, SessionJob, REPLY_MARGIN};
use super::open::prepare;
pub use super::open::DaemonOptions;
use super::output::{HookPoint, HookReply};
use super::paths::{ensure_private_dir, HostPaths};
use super::payload::{HookEvent, HookHost, HookPayload};
use super::protocol::{
    read_json_line, session_vars, write_json_line, Outcome, Request, Response, SessionReport,
    MAX_REQUEST_BYTES, PROTOCOL_VERSION,
};

/// Jobs waiting per session before new ones are answered `timeout` at once.
const SESSION_QUEUE: usize = 64;
/// How long a client may take to send its request.
const REQUEST_TIME: Duration = Duration::from_secs(5);

/// Why the background process cannot run.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    /// The shared runtime did not start.
    #[error("{0}")]
    Runtime(String),
    /// The socket cannot be bound.
    #[error("cannot listen on {}: {source}", path.display())]
    Bind {
        /// The socket.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A place cannot be used.
    #[error("{0}")]
    Paths(#[from] super::paths::PathsError),
}

/// One open host session as the process keeps it.
struct Slot {
    jobs: mpsc::Sender<SessionJob>,
    handle: Arc<Mutex<Option<AdvisorHandle>>>,
    cwd: Option<PathBuf>,
    last_event: Instant,
}

/// An open session as status and control see it: host, id, directory, handle.
type Open = (HookHost, String, Option<PathBuf>, AdvisorHandle);

/// The background process's state.
pub struct Daemon {
    options: DaemonOptions,
    runtime: AdvisorRuntime,
    sessions: Mutex<HashMap<(HookHost, String), Slot>>,
    settings: Mutex<HashMap<PathBuf, Arc<LoadedSettings>>>,
    idle_since: Mutex<Instant>,
}

impl Daemon {
    /// A process with its shared runtime started.
    pub fn new(options: DaemonOptions) -> Result<Arc<Self>, DaemonError> {
        let runtime = AdvisorRuntime::new(options.runtime.clone())
            .map_err(|e| DaemonError::Runtime(e.to_string()))?;
        Ok(Arc::new(Self {
            options,
            runtime,
            sessions: Mutex::new(HashMap::new()),
            settings: Mutex::new(HashMap::new()),
            idle_since: Mutex::new(Instant::now()),
        }))
    }

    /// Binds the socket (mode 0600, a stale socket file replaced) in the private runtime
    /// directory. The caller holds the lock, so no live process owns the file.
    pub fn bind(paths: &HostPaths, uid: u32) -> Result<UnixListener, DaemonError> {
        use std::os::unix::fs::PermissionsExt;
        ensure_private_dir(&paths.runtime_dir, uid)?;
        let socket = paths.socket();
        let bind_err = |source| DaemonError::Bind {
            path: socket.clone(),
            source,
        };
        match std::fs::remove_file(&socket) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(bind_err(e)),
            _ => {}
        }
        let listener = UnixListener::bind(&socket).map_err(bind_err)?;
        std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o600))
            .map_err(bind_err)?;
        Ok(listener)
    }

    /// Serves `listener` until `shutdown` resolves or the process has been idle long
    /// enough, then closes every session.
    pub async fn serve(
        self: Arc<Self>,
        listener: UnixListener,
        shutdown: impl std::future::Future<Output = ()>,
    ) {
        tokio::pin!(shutdown);
        let tick = self
            .options
            .idle
            .unwrap_or(Duration::from_secs(60))
            .min(Duration::from_secs(60));
        let mut ticker = tokio::time::interval(tick);
        loop {
            tokio::select! {
                _ = &mut shutdown => break,
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => {
                        let daemon = Arc::clone(&self);
                        tokio::spawn(async move { daemon.connection(stream).await });
                    }
                    Err(e) => tracing::warn!(error = %e, "hook daemon: accept failed"),
                },
                _ = ticker.tick() => if self.expire() { break },
            }
        }
        self.close_all().await;
    }

    /// Closes sessions with no event for the expiry time; `true` when the process has had
    /// no session for its idle time.
    fn expire(&self) -> bool {
        let now = Instant::now();
        let mut sessions = self.sessions.lock();
        let mut ended = Vec::new();
        sessions.retain(|key, slot| {
            let open = now.duration_since(slot.last_event) < self.options.session_expiry;
            if !open {
                ended.push(key.clone());
            }
            open
        });
        // A sub-agent's session ends with its main session (H30).
        sessions.retain(|(host, id), _| {
            main_session_of(id)
                .is_none_or(|main| !ended.iter().any(|(h, m)| h == host && m == main))
        });
        if !sessions.is_empty() {
            *self.idle_since.lock() = now;
            return false;
        }
        let idle_since = *self.idle_since.lock();
        self.options
            .idle
            .is_some_and(|idle| now.duration_since(idle_since) >= idle)
    }

    /// Disposes every session (each within 2 s).
    async fn close_all(&self) {
        let handles: Vec<AdvisorHandle> = self
            .sessions
            .lock()
            .drain()
            .filter_map(|(_, slot)| slot.handle.lock().clone())
            .collect();
        let disposals = handles
            .iter()
            .map(|handle| tokio::time::timeout(Duration::from_secs(2), handle.dispose()));
        futures_util::future::join_all(disposals).await;
    }

    /// Serves one connection: one request, one answer.
    async fn connection(self: Arc<Self>, stream: UnixStream) {
        if let Ok(cred) = stream.peer_cred() {
            if cred.uid() != self.options.uid {
                tracing::warn!(
                    uid = cred.uid(),
                    "hook daemon: refused a peer of another user"
                );
                return;
            }
        }
        let (read, mut write) = stream.into_split();
        let mut reader = BufReader::new(read);
        let request = tokio::time::timeout(
            REQUEST_TIME,
            read_json_line::<Request, _>(&mut reader, MAX_REQUEST_BYTES),
        )
        .await;
        let response = match request {
            Ok(Ok(request)) => self.respond(request).await,
            Ok(Err(e)) => Response::Error {
                message: e.to_string(),
            },
            Err(_) => Response::Error {
                message: "no request within 5 s".into(),
            },
        };
        let _ = tokio::time::timeout(REQUEST_TIME, write_json_line(&mut write, &response)).await;
    }

    /// Answers one request.
    pub async fn respond(self: &Arc<Self>, request: Request) -> Response {
        if request.version() != PROTOCOL_VERSION {
            return Response::Error {
                message: format!(
                    "protocol version {} (this process speaks {PROTOCOL_VERSION}); \
                     stop the old background process",
                    request.version()
                ),
            };
        }
        match request {
            Request::Event {
                deadline_ms,
                payload,
                env,
                ..
            } => {
                let budget = Duration::from_millis(deadline_ms).saturating_sub(REPLY_MARGIN);
                let env = env.map(session_vars);
                let reply = self
                    .event_from(*payload, env, Instant::now() + budget)
                    .await;
                Response::Hook {
                    stdout: reply.stdout,
                    outcome: reply.outcome,
                }
            }
            Request::Status { session, .. } => self.status(session.as_deref()).await,
            Request::Control {
                session, command, ..
            } => self.control(session.as_deref(), &command).await,
            Request::Ping { .. } => Response::Pong {
                pid: std::process::id(),
            },
        }
    }

    /// Hands an event to its session's worker (starting one for a new session) and waits
    /// for the answer until `deadline`.
    pub async fn event(self: &Arc<Self>, payload: HookPayload, deadline: Instant) -> HookReply {
        self.event_from(payload, None, deadline).await
    }

    /// [`Daemon::event`] from a hook whose environment holds the session variables `env`
    /// (H32): a session this event opens takes its keys and model from them instead of the
    /// process's own environment.
    pub async fn event_from(
        self: &Arc<Self>,
        payload: HookPayload,
        env: Option<BTreeMap<String, String>>,
        deadline: Instant,
    ) -> HookReply {
        // A sub-agent's events belong to the sub-agent's own session, never to the main
        // one's: its transcript is another file, and what its hooks deliver reaches the
        // sub-agent's model, not the main agent's (W7, H30).
        let payload = payload.into_subagent_session();
        if matches!(payload.event, HookEvent::SessionEnd { .. }) && payload.agent_id.is_none() {
            self.end_subagents(&payload);
        }
        let Some(jobs) = self.session_jobs(&payload, env) else {
            return HookReply::empty();
        };
        let (tx, rx) = oneshot::channel();
        let job = SessionJob::Event(Box::new(EventJob {
            payload,
            deadline,
            reply: tx,
        }));
        if jobs.try_send(job).is_err() {
            return timed_out();
        }
        match tokio::time::timeout_at(deadline, rx).await {
            Ok(Ok(reply)) => reply,
            _ => timed_out(),
        }
    }

    /// Ends the sub-agent sessions of the main session `end` ends (H30): each gets the
    /// `SessionEnd` as its own last event (queued behind what it was sent before), so it is
    /// disposed with its main session instead of at the expiry.
    fn end_subagents(&self, end: &HookPayload) {
        let prefix = format!("{}{SUBAGENT_INFIX}", end.session_id);
        let queues: Vec<(String, mpsc::Sender<SessionJob>)> = self
            .sessions
            .lock()
            .iter()
            .filter(|((host, id), _)| *host == end.host && id.starts_with(&prefix))
            .map(|((_, id), slot)| (id.clone(), slot.jobs.clone()))
            .collect();
        for (id, jobs) in queues {
            let mut payload = end.clone();
            payload.session_id = id;
            payload.transcript_path = None;
            let (reply, answered) = oneshot::channel();
            let job = SessionJob::Event(Box::new(EventJob {
                payload,
                deadline: Instant::now() + REQUEST_TIME,
                reply,
            }));
            if jobs.try_send(job).is_ok() {
                // Nobody waits for this answer; keeping the receiver until it comes spares
                // the session a "late answer" notice.
                tokio::spawn(answered);
            }
        }
    }

    /// Waits until everything the session was sent before is done and nothing is left to
    /// review (at most 120 s): for tests and benches that check what a review raised.
    /// `false` when no such session is open.
    pub async fn drain(&self, host: HookHost, session: &str) -> bool {
        let jobs = {
            let sessions = self.sessions.lock();
            match sessions.get(&(host, session.to_string())) {
                Some(slot) => slot.jobs.clone(),
                None => return false,
            }
        };
        let (tx, rx) = oneshot::channel();
        if jobs.send(SessionJob::Drain(tx)).await.is_err() {
            return false;
        }
        rx.await.is_ok()
    }

    /// The job queue of the payload's session; a new session gets a worker, except for an
    /// event that ends it.
    fn session_jobs(
        self: &Arc<Self>,
        payload: &HookPayload,
        env: Option<BTreeMap<String, String>>,
    ) -> Option<mpsc::Sender<SessionJob>> {
        let key = (payload.host, payload.session_id.clone());
        let mut sessions = self.sessions.lock();
        if let Some(slot) = sessions.get_mut(&key) {
            slot.last_event = Instant::now();
            return Some(slot.jobs.clone());
        }
        if matches!(payload.event, HookEvent::SessionEnd { .. }) {
            return None;
        }
        let (jobs, queue) = mpsc::channel(SESSION_QUEUE);
        let handle = Arc::new(Mutex::new(None));
        sessions.insert(
            key.clone(),
            Slot {
                jobs: jobs.clone(),
                handle: Arc::clone(&handle),
                cwd: payload.cwd.clone(),
                last_event: Instant::now(),
            },
        );
        let worker = Worker {
            daemon: Arc::downgrade(self),
            key,
            options: self.options.clone(),
            shared: Arc::clone(self.runtime.shared()),
            cached: payload
                .cwd
                .as_deref()
                .and_then(|cwd| self.settings.lock().get(cwd).cloned()),
            handle,
            env,
        };
        let first = payload.clone();
        tokio::spawn(worker.run(first, queue));
        Some(jobs)
    }

    /// The sessions `session` names (an id or a unique prefix; `None`: all), with handles.
    fn matching(&self, session: Option<&str>) -> Result<Vec<Open>, String> {
        let sessions = self.sessions.lock();
        let all: Vec<_> = sessions
            .iter()
            .filter_map(|((host, id), slot)| {
                let handle = slot.handle.lock().clone()?;
                Some((*host, id.clone(), slot.cwd.clone(), handle))
            })
            .collect();
        let Some(wanted) = session else {
            return Ok(all);
        };
        if let Some(exact) = all.iter().find(|(_, id, _, _)| id == wanted) {
            return Ok(vec![exact.clone()]);
        }
        let found: Vec<_> = all
            .into_iter()
            .filter(|(_, id, _, _)| id.starts_with(wanted))
            .collect();
        match found.len() {
            0 => Err(format!("no open session {wanted:?}")),
            1 => Ok(found),
            n => Err(format!(
                "{n} open sessions start with {wanted:?}: give more of the id"
            )),
        }
    }

    /// The status of the sessions asked for (C3, SP5).
    async fn status(&self, session: Option<&str>) -> Response {
        let matching = match self.matching(session) {
            Ok(matching) => matching,
            Err(message) => return Response::Error { message },
        };
        let mut sessions = Vec::new();
        for (host, id, cwd, handle) in matching {
            let text = handle
                .command("status")
                .await
                .unwrap_or_else(|e| e.to_string());
            let status = match handle.status().await {
                Ok(status) => serde_json::to_value(status).unwrap_or_default(),
                Err(e) => json!({"error": e.to_string()}),
            };
            sessions.push(SessionReport {
                host: host.as_str().into(),
                session: id,
                cwd: cwd.map(|c| c.display().to_string()),
                text,
                status,
            });
        }
        Response::Status {
            pid: std::process::id(),
            sessions,
        }
    }

    /// `on`, `off` or `pause` (as `off`) for the sessions asked for (C1), or
    /// `test <severity> <note>` (C2).
    async fn control(&self, session: Option<&str>, command: &str) -> Response {
        let line = match command {
            "on" => "on",
            "off" | "pause" => "off",
            // C2: an advisory injected through the delivery path, to check a setup.
            test if test.starts_with("test ") => test,
            other => {
                return Response::Error {
                    message: format!("unknown command {other:?}: on, off, pause or test"),
                }
            }
        };
        let matching = match self.matching(session) {
            Ok(matching) => matching,
            Err(message) => return Response::Error { message },
        };
        let mut results = Vec::new();
        for (_, id, _, handle) in matching {
            let text = handle.command(line).await.unwrap_or_else(|e| e.to_string());
            results.push((id, text));
        }
        Response::Control { results }
    }

    /// The shared runtime.
    pub fn runtime(&self) -> &AdvisorRuntime {
        &self.runtime
    }

    /// Remembers a project's settings for later sessions (loaded once per project, H4).
    pub(crate) fn remember_settings(&self, cwd: &Path, loaded: Arc<LoadedSettings>) {
        self.settings.lock().insert(cwd.to_path_buf(), loaded);
    }

    /// Open sessions.
    pub fn sessions(&self) -> usize {
        self.sessions.lock().len()
    }

    /// Forgets an ended session.
    pub(crate) fn forget(&self, key: &(HookHost, String)) {
        self.sessions.lock().remove(key);
    }
}

/// What joins a main session's id and a sub-agent's id in the sub-agent's session id.
const SUBAGENT_INFIX: &str = ".agent-";

/// The main session of a sub-agent's session id (`<main>.agent-<agent_id>`, H30); `None`
/// for a main session's id.
fn main_session_of(id: &str) -> Option<&str> {
    id.rsplit_once(SUBAGENT_INFIX).map(|(main, _)| main)
}

/// A hook answer given when the session's worker did not answer in time.
fn timed_out() -> HookReply {
    HookReply {
        stdout: None,
        outcome: Outcome::Timeout,
    }
}

/// The longest a drain job waits for the session's reviews.
const DRAIN_LIMIT: Duration = Duration::from_secs(120);

/// The worker of one host session: opens it, then serves its jobs in order.
struct Worker {
    daemon: Weak<Daemon>,
    key: (HookHost, String),
    options: DaemonOptions,
    shared: Arc<SharedResources>,
    cached: Option<Arc<LoadedSettings>>,
    handle: Arc<Mutex<Option<AdvisorHandle>>>,
    /// The session variables of the hook that opened the session (H32).
    env: Option<BTreeMap<String, String>>,
}

impl Worker {
    /// Runs until the session ends or the process drops its queue.
    async fn run(self, first: HookPayload, mut queue: mpsc::Receiver<SessionJob>) {
        let options = self.options.clone();
        let shared = Arc::clone(&self.shared);
        let cached = self.cached.clone();
        let env = self.env.clone();
        let prepared = tokio::task::spawn_blocking(move || {
            prepare(&options, &shared, cached, &first, env.as_ref())
        })
        .await;
        let prepared = match prepared {
            Ok(Ok(Some(prepared))) => prepared,
            Ok(Ok(None)) => return self.failed(None, queue).await,
            Ok(Err(e)) => return self.failed(Some(e), queue).await,
            Err(e) => return self.failed(Some(e.to_string()), queue).await,
        };
        let Some(daemon) = self.daemon.upgrade() else {
            return;
        };
        daemon.remember_settings(&prepared.cwd, Arc::clone(&prepared.loaded));
        let (handle, events) = daemon.runtime().open(prepared.config);
        drop(daemon);
        *self.handle.lock() = Some(handle.clone());
        let mut session = HostSession::new(
            handle,
            events,
            prepared.feed,
            prepared.source,
            prepared.notices,
        )
        .watching_gate(prepared.gate_on);
        while let Some(job) = queue.recv().await {
            match job {
                SessionJob::Event(job) => {
                    if session.serve(*job).await {
                        break;
                    }
                }
                SessionJob::Drain(done) => {
                    let drain = session.handle().await_drain();
                    let _ = tokio::time::timeout(DRAIN_LIMIT, drain).await;
                    let _ = done.send(());
                }
            }
        }
        self.forget();
    }

    /// A session that cannot be set up, or gets no advisor (`error` `None`: a sub-agent's
    /// while `advisor.subagents` is off): every job is answered empty, and the user is told
    /// the error once, at the first prompt or stop.
    async fn failed(self, error: Option<String>, mut queue: mpsc::Receiver<SessionJob>) {
        if let Some(error) = &error {
            tracing::warn!(error = %error, "hook session: not opened");
        }
        let mut told = error.is_none();
        let error = error.unwrap_or_default();
        while let Some(job) = queue.recv().await {
            let job = match job {
                SessionJob::Event(job) => *job,
                SessionJob::Drain(done) => {
                    let _ = done.send(());
                    continue;
                }
            };
            let point = point_of(&job.payload.event);
            let tell =
                !told && matches!(point, HookPoint::UserPromptSubmit | HookPoint::Stop { .. });
            let reply = if tell {
                told = true;
                HookReply {
                    stdout: Some(serde_json::json!({
                        "systemMessage": format!("advisor: not running for this session: {error}")
                    })),
                    outcome: Outcome::Error,
                }
            } else {
                HookReply::empty()
            };
            let _ = job.reply.send(reply);
            if matches!(job.payload.event, HookEvent::SessionEnd { .. }) {
                break;
            }
        }
        self.forget();
    }

    fn forget(&self) {
        if let Some(daemon) = self.daemon.upgrade() {
            daemon.forget(&self.key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn h30_a_subagent_session_id_names_its_main_session() {
        let main = "5170e527-b0bd-4965-9c59-ea51fe52b08f";
        assert_eq!(
            main_session_of(&format!("{main}.agent-a59a26be")),
            Some(main)
        );
        assert_eq!(main_session_of(main), None);
        let input = serde_json::json!({"session_id": main, "transcript_path": "/t.jsonl",
            "cwd": "/w", "hook_event_name": "SubagentStop", "agent_id": "a59a26be"});
        let sub = super::super::payload::parse_payload(input.to_string().as_bytes(), None).unwrap();
        assert_eq!(
            main_session_of(&sub.into_subagent_session().session_id),
            Some(main)
        );
    }
}
