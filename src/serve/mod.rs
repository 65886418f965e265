//! `advisor serve` (SPEC §13, V1–V4): the advisor runtime for other processes, as JSON-RPC
//! 2.0 over a byte stream (standard input and output), one JSON object per LF-terminated
//! line, many sessions per process.
//!
//! Inside (private modules): `lines`, the bounded LF splitter (64 MiB per line, refused
//! without buffering it); `protocol`, framing, error codes, typed params; `params`,
//! `session/open`'s params as they come over the wire; `open`, a session's settings and model
//! from its params and files; `served`, one served session
//! (`ServedSession`: its transcript, cursor check and notifications); `dispatch`, the
//! method table.
//!
//! [`serve`] is the I/O edge: it reads lines, runs each request in its own task (replies
//! may come out of order, V3), and writes every reply and notification through one writer
//! task. It must run inside an actix system (the I/O tasks run there); the sessions' actors
//! run on the shared runtime of [`ServeOptions::runtime`] (A6).

mod dispatch;
mod lines;
mod open;
mod params;
mod protocol;
mod served;

use std::fs::File;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, Notify, Semaphore};

use crate::regular_file::open_append;
use crate::runtime::AdvisorRuntime;
use dispatch::{Dispatcher, DISPOSE_TIMEOUT};
pub use lines::{InputLine, LineReader, MAX_LINE_BYTES};
pub use open::ServeDefaults;
use protocol::{parse_line, response_line, Incoming, RequestId, RpcError};
pub use served::DEFAULT_HELD_BYTES;

/// The whole end, from the end of input to the return of [`serve`], at worst: V1 asks for an
/// exit within 2 s, and this leaves the process half a second for the rest (its start-up of
/// the end, the runtime's teardown, a loaded machine).
pub const SHUTDOWN_BUDGET: Duration = Duration::from_millis(1500);
/// At the end of input, how long calls already read may run on before the sessions are
/// disposed (a client that writes its requests and closes the pipe gets its answers).
const GRACE_TIMEOUT: Duration = Duration::from_millis(400);
/// How long the end may wait, after disposal woke every waiter, for the replies still in
/// flight to be written and the writer to finish: one deadline for both.
const DRAIN_TIMEOUT: Duration = Duration::from_millis(300);
/// The worst case of the end: grace, disposal (audits flushed), drain and writer.
const SHUTDOWN_WORST_CASE: Duration = GRACE_TIMEOUT
    .saturating_add(DISPOSE_TIMEOUT)
    .saturating_add(DRAIN_TIMEOUT);
const _: () = assert!(
    SHUTDOWN_WORST_CASE.as_millis() <= SHUTDOWN_BUDGET.as_millis(),
    "the end's timeouts must fit the shutdown budget (V1)"
);

/// Calls in flight at once; the reader waits for one to finish before reading on (a bound
/// on what a flooding client can make the server hold).
pub const MAX_INFLIGHT: usize = 4096;

/// Lines (replies and notifications) waiting for the writer at most. While the queue is
/// full — a client that does not read its replies — senders wait and the reader reads no
/// more input until it drains (V4: backpressure instead of an unbounded pile of replies).
pub const MAX_QUEUED_LINES: usize = 1024;

/// Options of one [`serve`] run.
pub struct ServeOptions {
    /// Session defaults (model flags, environment, keys, catalog).
    pub defaults: ServeDefaults,
    /// The line cap (V4: [`MAX_LINE_BYTES`]).
    pub max_line_bytes: usize,
    /// The budget for the transcripts held for all sessions (V4:
    /// [`DEFAULT_HELD_BYTES`]); a call that would pass it is refused.
    pub max_held_bytes: usize,
    /// The shared runtime every session of the run is opened on (A6): its arbiters carry
    /// the sessions' actors, and its resources (HTTP clients, redaction patterns, WATCHDOG.md
    /// cache, the per-provider limit `advisor.maxConcurrentReviews`) serve them all.
    pub runtime: AdvisorRuntime,
}

impl ServeOptions {
    /// Options with the V4 line cap and held-transcript budget.
    pub fn new(defaults: ServeDefaults, runtime: AdvisorRuntime) -> Self {
        Self {
            defaults,
            max_line_bytes: MAX_LINE_BYTES,
            max_held_bytes: served::DEFAULT_HELD_BYTES,
            runtime,
        }
    }
}

/// The `--log` file could not be used.
#[derive(Debug, thiserror::Error)]
#[error("cannot use the log file {path}: {reason}")]
pub struct LogFileError {
    /// The path, as given.
    pub path: String,
    /// Why: not a regular file (a FIFO, a directory, …), or the system's error.
    pub reason: String,
}

/// Opens the `--log` file of `advisor serve` for appending, creating it when missing (V1).
/// An existing path must be a regular file: a FIFO or a device is refused at once, never
/// waited on.
pub fn open_log(path: &Path) -> Result<File, LogFileError> {
    open_append(path).map_err(|e| LogFileError {
        path: path.display().to_string(),
        reason: e.to_string(),
    })
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServeEnd {
    /// The input reached its end.
    EndOfInput,
    /// A `shutdown` request.
    Shutdown,
}

/// Serves requests from `input`, writing replies and notifications to `output`, until the
/// input ends or `shutdown` is called; then disposes every session (audits flushed) and
/// returns, within [`SHUTDOWN_BUDGET`] (V1: 2 s). Must be called inside an actix system.
pub async fn serve<R, W>(input: R, output: W, options: ServeOptions) -> ServeEnd
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + 'static,
{
    let (out_tx, out_rx) = mpsc::channel::<String>(MAX_QUEUED_LINES);
    let writer = actix::spawn(write_lines(output, out_rx));
    let dispatcher = Arc::new(Dispatcher::new(
        options.defaults,
        options.runtime,
        out_tx.clone(),
        options.max_held_bytes,
    ));
    let calls = Calls {
        dispatcher,
        out_tx,
        inflight: Arc::new(Inflight::default()),
        permits: Arc::new(Semaphore::new(MAX_INFLIGHT)),
    };
    let mut reader = LineReader::new(input, options.max_line_bytes);
    let end = loop {
        // Backpressure (V4): no more input while the outgoing queue is full.
        let room = tokio::select! {
            room = calls.out_tx.reserve() => room,
            _ = calls.dispatcher.shutdown_requested() => break ServeEnd::Shutdown,
        };
        if room.is_err() {
            break ServeEnd::EndOfInput;
        }
        drop(room);
        let line = tokio::select! {
            line = reader.next() => line,
            _ = calls.dispatcher.shutdown_requested() => break ServeEnd::Shutdown,
        };
        let Some(line) = line else {
            break ServeEnd::EndOfInput;
        };
        let bytes = match line {
            InputLine::Line(bytes) => bytes,
            InputLine::TooLong { bytes } => {
                tracing::warn!("serve: refused a line of {bytes} bytes");
                let error = RpcError::invalid_request(format!(
                    "line longer than {} bytes",
                    options.max_line_bytes
                ));
                let _ = calls
                    .out_tx
                    .send(response_line(&RequestId::null(), Err(error)))
                    .await;
                continue;
            }
        };
        if bytes.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if let Err(end) = calls.take(&bytes).await {
            break end;
        }
    };
    calls.wind_down(end, writer).await;
    end
}

/// What the read loop hands each request to: the dispatcher, the outgoing queue, and the
/// bounds on calls in flight (V3).
struct Calls {
    dispatcher: Arc<Dispatcher>,
    out_tx: mpsc::Sender<String>,
    inflight: Arc<Inflight>,
    permits: Arc<Semaphore>,
}

impl Calls {
    /// Answers a bad line at once, or starts the call a line asks for (V3: concurrently);
    /// `Err` ends the loop.
    async fn take(&self, bytes: &[u8]) -> Result<(), ServeEnd> {
        let (dispatcher, out_tx, inflight, permits) = (
            &self.dispatcher,
            &self.out_tx,
            &self.inflight,
            &self.permits,
        );
        match parse_line(bytes) {
            Incoming::Invalid { id, error } => {
                tracing::debug!(code = error.code, "serve: bad input line");
                let _ = out_tx.send(response_line(&id, Err(error))).await;
            }
            Incoming::Request { id, method, params } => {
                let Ok(permit) = Arc::clone(permits).acquire_owned().await else {
                    return Err(ServeEnd::EndOfInput);
                };
                let (dispatcher, out, guard) =
                    (Arc::clone(dispatcher), out_tx.clone(), inflight.enter());
                actix::spawn(async move {
                    let result = dispatcher.call(&method, params).await;
                    if let Err(e) = &result {
                        tracing::debug!(%method, code = e.code, "serve: call failed: {}", e.message);
                    }
                    let _ = out.send(response_line(&id, result)).await;
                    drop((guard, permit));
                });
            }
            Incoming::Notification { method, params } => {
                let Ok(permit) = Arc::clone(permits).acquire_owned().await else {
                    return Err(ServeEnd::EndOfInput);
                };
                let (dispatcher, guard) = (Arc::clone(dispatcher), inflight.enter());
                actix::spawn(async move {
                    if let Err(e) = dispatcher.call(&method, params).await {
                        tracing::debug!(%method, "serve: notification failed: {}", e.message);
                    }
                    drop((guard, permit));
                });
            }
        }
        Ok(())
    }

    /// V1: the calls already read finish (bounded), every session is disposed (audits
    /// flushed; waiters wake and their replies go out), all within SHUTDOWN_BUDGET.
    async fn wind_down(self, end: ServeEnd, writer: tokio::task::JoinHandle<()>) {
        let Calls {
            dispatcher,
            out_tx,
            inflight,
            ..
        } = self;
        if end == ServeEnd::EndOfInput {
            let _ = tokio::time::timeout(GRACE_TIMEOUT, inflight.idle()).await;
        }
        dispatcher.dispose_all().await;
        let drained = tokio::time::Instant::now() + DRAIN_TIMEOUT;
        let _ = tokio::time::timeout_at(drained, inflight.idle()).await;
        drop(dispatcher);
        drop(out_tx);
        // Session actors may still hold an outbox clone; don't wait on them past the drain.
        let _ = tokio::time::timeout_at(drained, writer).await;
    }
}

/// The one writer: each line plus LF, flushed whenever the queue runs dry.
async fn write_lines<W: AsyncWrite + Unpin>(mut output: W, mut rx: mpsc::Receiver<String>) {
    while let Some(line) = rx.recv().await {
        let mut batch = line.into_bytes();
        batch.push(b'\n');
        while let Ok(more) = rx.try_recv() {
            batch.extend_from_slice(more.as_bytes());
            batch.push(b'\n');
            if batch.len() > 1 << 20 {
                break;
            }
        }
        if output.write_all(&batch).await.is_err() || output.flush().await.is_err() {
            tracing::warn!("serve: the output is closed");
            return;
        }
    }
    let _ = output.flush().await;
}

/// Counts calls in flight, so the end can wait for their replies.
#[derive(Default)]
struct Inflight {
    count: AtomicUsize,
    idle: Notify,
}

struct InflightGuard(Arc<Inflight>);

impl Inflight {
    fn enter(self: &Arc<Self>) -> InflightGuard {
        self.count.fetch_add(1, Ordering::SeqCst);
        InflightGuard(Arc::clone(self))
    }

    async fn idle(&self) {
        loop {
            let notified = self.idle.notified();
            if self.count.load(Ordering::SeqCst) == 0 {
                return;
            }
            notified.await;
        }
    }
}

impl Drop for InflightGuard {
    fn drop(&mut self) {
        if self.0.count.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}
