//! AuditLog: appends the advisor's own transcript to its file (P9, G7): a session file of
//! oh-my-pi's version 3 in the session's artifacts directory, written by
//! [`TranscriptWriter`].
//!
//! On start the existing file is read once on the blocking pool (at most
//! [`MAX_RESUME_BYTES`]; a symlink there is never followed): the chain of entries goes on
//! from its last one, and its recorded usage is the lifetime a resumed session starts from
//! ([`GetRestoredUsage`]). Entries received meanwhile wait. Entries are then buffered and
//! written by one append at a time on the blocking pool, so the actor's thread never blocks
//! and lines keep their order. The path must be a regular file (or not exist yet): a FIFO or
//! a device is refused at once, never waited on, and a symlink is refused, never followed.
//! A write that fails is reported to the user once, as a warning notice; the lines of that
//! write are lost, later writes are still tried, and reviews never fail because of the file.

use std::path::PathBuf;

use actix::{Actor, ActorFutureExt, AsyncContext, Context, Handler, Recipient, WrapFuture};
use tokio::sync::oneshot;

use crate::shared::file_pool::Blocking;

use crate::domain::host::HostEvent;
use crate::messages::review::{AppendAudit, FlushAudit, GetRestoredUsage};
use crate::model::Usage;
use crate::regular_file::{append_regular, clip, read_bytes_capped, FileError, SHOWN_CHARS};
use crate::review::transcript_file::{fingerprint, Restored, TranscriptWriter};

/// How much of an existing transcript file is read back on start (P9).
pub const MAX_RESUME_BYTES: usize = 256 * 1024 * 1024;

/// Why a write to the audit file failed.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// The file could not be opened or written, or is not a regular file.
    #[error("{}: {source}", clip(&path.display().to_string(), SHOWN_CHARS))]
    Io {
        /// The audit file.
        path: PathBuf,
        /// What went wrong.
        source: FileError,
    },
    /// The blocking task doing the write was lost.
    #[error("{}: the write was interrupted", clip(&path.display().to_string(), SHOWN_CHARS))]
    Interrupted {
        /// The audit file.
        path: PathBuf,
    },
}

/// The audit-log actor.
pub struct AuditLog {
    path: PathBuf,
    cwd: String,
    host: Recipient<HostEvent>,
    /// `None` until the existing file has been read.
    writer: Option<TranscriptWriter>,
    restored: Usage,
    queued: Vec<AppendAudit>,
    pending: String,
    writing: bool,
    warned: bool,
    flush_waiters: Vec<oneshot::Sender<()>>,
    restore_waiters: Vec<oneshot::Sender<Usage>>,
    /// Where the file is read and written (A6).
    blocking: Blocking,
}

impl AuditLog {
    /// An audit log appending to `path` for a session working in `cwd`; a failed write
    /// sends one notice to `host`.
    pub fn new(path: PathBuf, cwd: impl Into<String>, host: Recipient<HostEvent>) -> Self {
        Self {
            path,
            cwd: cwd.into(),
            host,
            writer: None,
            restored: Usage::default(),
            queued: Vec::new(),
            pending: String::new(),
            writing: false,
            warned: false,
            flush_waiters: Vec::new(),
            restore_waiters: Vec::new(),
            blocking: Blocking::default(),
        }
    }

    /// Reads and writes the file on `blocking` (A6: the process's file threads).
    pub fn with_blocking(mut self, blocking: Blocking) -> Self {
        self.blocking = blocking;
        self
    }

    /// The existing file has been read: the writer goes on from it.
    fn restored(&mut self, restored: Restored, ctx: &mut Context<Self>) {
        let salt = fingerprint(&self.path.display().to_string());
        self.writer = Some(TranscriptWriter::new(self.cwd.clone(), salt, &restored));
        self.restored = restored.lifetime;
        for waiter in self.restore_waiters.drain(..) {
            let _ = waiter.send(restored.lifetime);
        }
        self.write_pending(ctx);
    }

    /// Starts a write of everything buffered, unless one is running or the file is still
    /// being read; answers the flush waiters once nothing is left.
    fn write_pending(&mut self, ctx: &mut Context<Self>) {
        let Some(writer) = &mut self.writer else {
            return;
        };
        for entry in self.queued.drain(..) {
            let lines = writer.lines(entry.epoch, entry.review, entry.at_ms, &entry.event);
            self.pending.push_str(&lines);
        }
        if self.writing {
            return;
        }
        if self.pending.is_empty() {
            for waiter in self.flush_waiters.drain(..) {
                let _ = waiter.send(());
            }
            return;
        }
        self.writing = true;
        let chunk = std::mem::take(&mut self.pending);
        let path = self.path.clone();
        let blocking = self.blocking.clone();
        let write = async move { append(path, chunk, &blocking).await };
        ctx.spawn(write.into_actor(self).map(|result, act, ctx| {
            act.writing = false;
            if let Err(err) = result {
                act.failed(&err);
            }
            act.write_pending(ctx);
        }));
    }

    fn failed(&mut self, err: &AuditError) {
        tracing::warn!(error = %err, "advisor audit log write failed");
        if !self.warned {
            self.warned = true;
            self.host.do_send(HostEvent::notice(crate::texts::notice(
                "auditFailed",
                &[("error", &err.to_string())],
            )));
        }
    }
}

/// What an existing transcript file holds (P9); nothing when there is none or it cannot be
/// read (the first write then says why). On the blocking pool.
async fn read_existing(path: PathBuf, blocking: Blocking) -> Restored {
    let read = blocking.run(move || {
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_symlink() => return Restored::default(),
            Err(_) => return Restored::default(),
            Ok(_) => {}
        }
        match read_bytes_capped(&path, MAX_RESUME_BYTES) {
            Ok(capped) => {
                if capped.truncated {
                    tracing::warn!(path = %path.display(), "advisor transcript larger than the resume cap; totals restored from its start");
                }
                Restored::read(&capped.content)
            }
            Err(err) => {
                tracing::warn!(error = %err, "advisor transcript not read back");
                Restored::default()
            }
        }
    });
    read.await.unwrap_or_default()
}

/// Appends `text` to the regular file at `path`, creating it and its directory (the
/// session's artifacts directory, P9) when missing; on the blocking pool.
async fn append(path: PathBuf, text: String, blocking: &Blocking) -> Result<(), AuditError> {
    let target = path.clone();
    let write = move || {
        if let Some(dir) = target.parent() {
            std::fs::create_dir_all(dir).map_err(FileError::Io)?;
        }
        append_regular(&target, text.as_bytes())
    };
    match blocking.run(write).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(source)) => Err(AuditError::Io { path, source }),
        Err(_) => Err(AuditError::Interrupted { path }),
    }
}

impl Actor for AuditLog {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        let read = read_existing(self.path.clone(), self.blocking.clone());
        ctx.spawn(
            read.into_actor(self)
                .map(|restored, act, ctx| act.restored(restored, ctx)),
        );
    }
}

impl Handler<AppendAudit> for AuditLog {
    type Result = ();

    fn handle(&mut self, msg: AppendAudit, ctx: &mut Context<Self>) {
        self.queued.push(msg);
        self.write_pending(ctx);
    }
}

impl Handler<FlushAudit> for AuditLog {
    type Result = actix::ResponseFuture<()>;

    fn handle(&mut self, _msg: FlushAudit, ctx: &mut Context<Self>) -> Self::Result {
        let (tx, rx) = oneshot::channel();
        self.flush_waiters.push(tx);
        self.write_pending(ctx);
        Box::pin(async move {
            let _ = rx.await;
        })
    }
}

impl Handler<GetRestoredUsage> for AuditLog {
    type Result = actix::ResponseFuture<Usage>;

    fn handle(&mut self, _msg: GetRestoredUsage, _ctx: &mut Context<Self>) -> Self::Result {
        if self.writer.is_some() {
            let usage = self.restored;
            return Box::pin(async move { usage });
        }
        let (tx, rx) = oneshot::channel();
        self.restore_waiters.push(tx);
        Box::pin(async move { rx.await.unwrap_or_default() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::review::AuditEvent;
    use actix::Addr;

    /// Collects the host events it is sent.
    #[derive(Default)]
    struct HostRecorder {
        notices: Vec<String>,
    }

    impl Actor for HostRecorder {
        type Context = Context<Self>;
    }

    impl Handler<HostEvent> for HostRecorder {
        type Result = ();

        fn handle(&mut self, msg: HostEvent, _ctx: &mut Context<Self>) {
            if let HostEvent::Notice { text, .. } = msg {
                self.notices.push(text);
            }
        }
    }

    #[derive(actix::Message)]
    #[rtype(result = "Vec<String>")]
    struct GetNotices;

    impl Handler<GetNotices> for HostRecorder {
        type Result = actix::MessageResult<GetNotices>;

        fn handle(&mut self, _msg: GetNotices, _ctx: &mut Context<Self>) -> Self::Result {
            actix::MessageResult(self.notices.clone())
        }
    }

    fn entry(attempt: u32) -> AppendAudit {
        AppendAudit {
            epoch: 0,
            review: 1,
            at_ms: 0,
            event: AuditEvent::AttemptDiscarded {
                attempt,
                error: "x".into(),
            },
        }
    }

    async fn write_twice_and_flush(path: PathBuf) -> (Addr<HostRecorder>, Vec<String>) {
        let host = HostRecorder::default().start();
        let audit = AuditLog::new(path, "/w", host.clone().recipient()).start();
        audit.do_send(entry(1));
        audit.do_send(entry(2));
        audit.send(FlushAudit).await.unwrap();
        let notices = host.send(GetNotices).await.unwrap();
        (host, notices)
    }

    #[actix::test]
    async fn g7_entries_are_appended_one_line_each() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s/__advisor.jsonl");
        let (_, notices) = write_twice_and_flush(path.clone()).await;
        assert!(notices.is_empty(), "{notices:?}");
        let text = std::fs::read_to_string(&path).unwrap();
        // P9: oh-my-pi's title line, the header, then one entry each.
        assert_eq!(text.lines().count(), 4, "{text}");
        assert!(text.starts_with("{\"type\":\"title\",\"v\":1"), "{text}");
        assert!(
            text.lines()
                .nth(1)
                .is_some_and(|l| l.starts_with("{\"type\":\"session\",\"version\":3")),
            "{text}"
        );
    }

    #[actix::test]
    async fn v4_a_symlink_at_the_audit_path_is_one_notice_and_never_followed() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("elsewhere");
        std::fs::write(&target, "kept\n").unwrap();
        let path = dir.path().join("__advisor.jsonl");
        std::os::unix::fs::symlink(&target, &path).unwrap();
        let (_, notices) = write_twice_and_flush(path.clone()).await;
        assert_eq!(
            notices,
            [format!(
                "advisor: could not write the audit log ({}: a symlink (not followed)); \
                 reviews go on",
                path.display()
            )]
        );
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "kept\n");
    }

    #[test]
    fn g7_a_fifo_audit_path_is_one_notice_never_a_wait() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        crate::regular_file::testing::mkfifo(&path);
        let (tx, rx) = std::sync::mpsc::channel();
        let fifo = path.clone();
        // On its own thread so that a write stuck on the FIFO fails the test, not hangs it.
        std::thread::spawn(move || {
            let system = actix::System::new();
            let notices = system.block_on(async move { write_twice_and_flush(fifo).await.1 });
            let _ = tx.send(notices);
        });
        let notices = rx
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("the flush finished without waiting on the FIFO");
        assert_eq!(
            notices,
            [format!(
                "advisor: could not write the audit log ({}: not a regular file (a FIFO)); \
                 reviews go on",
                path.display()
            )]
        );
    }
}
