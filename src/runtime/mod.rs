//! Many sessions, one process (SPEC A6): a shared runtime for agent servers that host
//! hundreds or thousands of sessions at once.
//!
//! An [`AdvisorRuntime`] is created once per process. It owns a fixed pool of actix
//! arbiters (one thread each, about one per core) and the [`SharedResources`] every
//! session uses: the compiled secret patterns, the model catalog, one HTTP client per
//! provider endpoint, one limit on concurrent model calls per provider
//! (`advisor.maxConcurrentReviews`) and the WATCHDOG.md results per directory. Model calls
//! run on a small pool of their own ([`RuntimeOptions::call_threads`]), so the arbiters do
//! only actor work and a panicking model client cannot take an arbiter's task with it.
//! [`AdvisorRuntime::open`] places a session's actors on the least loaded arbiter and
//! starts no thread; [`AdvisorHandle::dispose`] frees everything the session held.
//!
//! ```
//! use std::sync::Arc;
//! use advisor::domain::transcript::{Transcript, TranscriptMessage};
//! use advisor::model::scripted::{ScriptedModel, ScriptedReply};
//! use advisor::{AdvisorRuntime, RuntimeOptions};
//! use advisor::RuntimeConfig;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let runtime = AdvisorRuntime::new(RuntimeOptions { arbiters: 2, ..RuntimeOptions::default() })?;
//! let mut sessions = Vec::new();
//! for i in 0..100 {
//!     let model = ScriptedModel::new([ScriptedReply::text("")]);
//!     let config = RuntimeConfig::new(format!("session-{i}"), ".", Some(Arc::new(model)));
//!     sessions.push(runtime.open(config));
//! }
//! assert_eq!(runtime.sessions(), 100);
//! let transcript = Transcript::from_messages([TranscriptMessage::user("Fix the flaky test")]);
//! for (advisor, _events) in &sessions {
//!     advisor.turn_end(&transcript).await?;
//! }
//! for (advisor, _events) in &sessions {
//!     advisor.dispose().await?;
//! }
//! assert_eq!(runtime.sessions(), 0);
//! # Ok(())
//! # }
//! ```

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use actix::{Actor, Arbiter, ArbiterHandle};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};

use crate::actors::event_forwarder::EventForwarder;
use crate::actors::supervisor::Supervisor;
use crate::config::RuntimeConfig;
use crate::domain::host::HostEvent;
use crate::handle::{AdvisorHandle, HandleError, SessionLease, SessionStart};
use crate::model::limit::CallCounts;

pub use crate::shared::SharedResources;

/// How a runtime is built.
#[derive(Debug, Clone)]
pub struct RuntimeOptions {
    /// Arbiters (threads) carrying the sessions; at least 1. Default: one per core.
    pub arbiters: usize,
    /// Concurrent model calls per provider across all sessions; `None` takes
    /// `advisor.maxConcurrentReviews` of the first session calling the provider (default 16).
    pub max_concurrent_reviews: Option<usize>,
    /// Threads of the pool the model calls run on (HTTP, TLS, stream decoding), so the
    /// arbiters do only actor work; 0 runs the calls on the arbiters. Default: half a
    /// thread per core, at least 1.
    pub call_threads: usize,
}

impl Default for RuntimeOptions {
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        Self {
            arbiters: cores,
            max_concurrent_reviews: None,
            call_threads: (cores / 2).max(1),
        }
    }
}

/// One arbiter of the pool and how many open sessions it carries.
struct Worker {
    arbiter: ArbiterHandle,
    sessions: Arc<AtomicUsize>,
}

struct Inner {
    workers: Vec<Worker>,
    shared: Arc<SharedResources>,
    system: actix::System,
    /// Where the next tie-break starts, so equal loads are filled round robin.
    next: AtomicUsize,
    /// Kept so the arbiters' threads are not detached before the system stops them.
    _arbiters: Vec<Arbiter>,
    /// The pool model calls run on, if any.
    calls: Option<tokio::runtime::Runtime>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Stops every arbiter of the pool, then the system thread.
        self.system.stop();
        if let Some(calls) = self.calls.take() {
            // Safe from inside an async context, unlike dropping the runtime.
            calls.shutdown_background();
        }
    }
}

/// The process's shared runtime: a fixed pool of arbiters plus the shared resources.
/// Cheap to clone; the threads stop when the last clone and the last session handle are
/// gone.
#[derive(Clone)]
pub struct AdvisorRuntime {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for AdvisorRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdvisorRuntime")
            .field("arbiters", &self.inner.workers.len())
            .field("sessions", &self.sessions())
            .finish()
    }
}

impl AdvisorRuntime {
    /// Starts the pool: one background thread runs an actix system whose own arbiter is
    /// the first of the pool, and the others are created from inside it, once. Blocks
    /// until the threads are up (a few milliseconds).
    pub fn new(options: RuntimeOptions) -> Result<Self, HandleError> {
        let count = options.arbiters.max(1);
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("advisor-runtime".into())
            .spawn(move || {
                let system = actix::System::new();
                system.block_on(async move {
                    let extra: Vec<Arbiter> = (1..count).map(|_| Arbiter::new()).collect();
                    let _ = ready_tx.send((actix::System::current(), Arbiter::current(), extra));
                });
                let _ = system.run();
            })
            .map_err(|e| HandleError::Spawn(e.to_string()))?;
        let (system, own, extra) = ready_rx
            .recv()
            .map_err(|_| HandleError::Spawn("the runtime thread ended early".into()))?;
        let calls = match options.call_threads {
            0 => None,
            n => Some(
                tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(n)
                    .thread_name("advisor-calls")
                    .enable_all()
                    .build()
                    .map_err(|e| HandleError::Spawn(e.to_string()))?,
            ),
        };
        let shared = SharedResources::new(options.max_concurrent_reviews)
            .with_calls_on(calls.as_ref().map(|rt| rt.handle().clone()));
        // A6: the file threads start with the runtime, so opening a session starts none.
        shared.start_file_threads();
        let workers = std::iter::once(own)
            .chain(extra.iter().map(Arbiter::handle))
            .map(|arbiter| Worker {
                arbiter,
                sessions: Arc::new(AtomicUsize::new(0)),
            })
            .collect();
        Ok(Self {
            inner: Arc::new(Inner {
                workers,
                shared: Arc::new(shared),
                system,
                next: AtomicUsize::new(0),
                _arbiters: extra,
                calls,
            }),
        })
    }

    /// The process's default runtime, created on first use with [`RuntimeOptions`]'s
    /// defaults; [`AdvisorHandle::spawn`] opens its sessions here. It lives until the
    /// process ends.
    pub fn global() -> Result<&'static AdvisorRuntime, HandleError> {
        static DEFAULT: OnceLock<Result<AdvisorRuntime, HandleError>> = OnceLock::new();
        DEFAULT
            .get_or_init(|| AdvisorRuntime::new(RuntimeOptions::default()))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Opens a session: wires `config` to the shared resources (its models go through the
    /// providers' call limits) and starts its actors on the least loaded arbiter. Starts
    /// no thread and does not wait; host events arrive on the returned receiver.
    pub fn open(&self, config: RuntimeConfig) -> (AdvisorHandle, UnboundedReceiver<HostEvent>) {
        let (start, flags) = SessionStart::new(config.share(&self.inner.shared));
        let worker = self.pick();
        worker.sessions.fetch_add(1, Ordering::AcqRel);
        let (events_tx, events_rx) = unbounded_channel();
        let forwarder = EventForwarder::start_in_arbiter(&worker.arbiter, move |_| {
            EventForwarder::new(events_tx)
        });
        let host = forwarder.recipient();
        let supervisor =
            Supervisor::start_in_arbiter(&worker.arbiter, move |_| start.supervisor(host));
        let lease = SessionLease::new(
            supervisor.clone(),
            Arc::clone(&worker.sessions),
            Arc::clone(&self.inner.shared),
            Arc::clone(&self.inner) as Arc<dyn std::any::Any + Send + Sync>,
        );
        (flags.handle(supervisor, None, Some(lease)), events_rx)
    }

    /// The resources the sessions share.
    pub fn shared(&self) -> &Arc<SharedResources> {
        &self.inner.shared
    }

    /// Sessions open now (opened and not yet disposed).
    pub fn sessions(&self) -> usize {
        self.inner
            .workers
            .iter()
            .map(|w| w.sessions.load(Ordering::Acquire))
            .sum()
    }

    /// Open sessions per arbiter, in pool order.
    pub fn load(&self) -> Vec<usize> {
        self.inner
            .workers
            .iter()
            .map(|w| w.sessions.load(Ordering::Acquire))
            .collect()
    }

    /// The arbiters of the pool.
    pub fn arbiters(&self) -> usize {
        self.inner.workers.len()
    }

    /// Threads of the pool model calls run on (0: they run on the arbiters).
    pub fn call_threads(&self) -> usize {
        self.inner
            .calls
            .as_ref()
            .map_or(0, |rt| rt.metrics().num_workers())
    }

    /// Every provider's model calls: in flight, waiting, limit, peak (C3).
    pub fn calls(&self) -> Vec<CallCounts> {
        self.inner.shared.calls()
    }

    /// The least loaded arbiter; ties go round robin.
    fn pick(&self) -> &Worker {
        let workers = &self.inner.workers;
        let start = self.inner.next.fetch_add(1, Ordering::Relaxed) % workers.len();
        let mut best = &workers[start];
        let mut best_load = best.sessions.load(Ordering::Acquire);
        for offset in 1..workers.len() {
            let worker = &workers[(start + offset) % workers.len()];
            let load = worker.sessions.load(Ordering::Acquire);
            if load < best_load {
                best = worker;
                best_load = load;
            }
        }
        best
    }
}

// `spawn` is the handle's, but it lives here: it opens the session on the process's
// runtime, and the runtime builds handles. Beside its type in handle.rs, the two modules
// would import each other.
impl AdvisorHandle {
    /// Opens the session on the process's default shared runtime
    /// ([`AdvisorRuntime::global`], created on first use), for hosts that are plain tokio
    /// programs (`#[tokio::main]`): no thread is started per session (A6). Host events
    /// arrive on the returned receiver.
    pub async fn spawn(
        config: RuntimeConfig,
    ) -> Result<(Self, UnboundedReceiver<HostEvent>), HandleError> {
        Ok(AdvisorRuntime::global()?.open(config))
    }
}
