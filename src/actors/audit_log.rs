//! AuditLog: appends the advisor's own transcript to a JSON-lines file beside the session
//! (G7), one [`AppendAudit`] a line.
//!
//! Entries are buffered and written by one append at a time on the blocking pool, so the
//! actor's thread never blocks and lines keep their order. The path must be a regular file
//! (or not exist yet): a FIFO or a device is refused at once, never waited on, so flushing
//! and disposing cannot hang on it. A write that fails is reported to the user once, as a
//! warning notice; the lines of that write are lost, later writes are still tried, and
//! reviews never fail because of the audit file.

use std::path::PathBuf;

use actix::{Actor, ActorFutureExt, AsyncContext, Context, Handler, Recipient, WrapFuture};
use tokio::sync::oneshot;

use crate::domain::host::HostEvent;
use crate::messages::review::{AppendAudit, FlushAudit};
use crate::regular_file::{append_regular, clip, FileError, SHOWN_CHARS};

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
    host: Recipient<HostEvent>,
    pending: String,
    writing: bool,
    warned: bool,
    flush_waiters: Vec<oneshot::Sender<()>>,
}

impl AuditLog {
    /// An audit log appending to `path`; a failed write sends one notice to `host`.
    pub fn new(path: PathBuf, host: Recipient<HostEvent>) -> Self {
        Self {
            path,
            host,
            pending: String::new(),
            writing: false,
            warned: false,
            flush_waiters: Vec::new(),
        }
    }

    /// Starts a write of everything buffered, unless one is running; answers the flush
    /// waiters once nothing is left.
    fn write_pending(&mut self, ctx: &mut Context<Self>) {
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
        let write = async move { append(path, chunk).await };
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
            self.host.do_send(HostEvent::Notice {
                text: format!("advisor: could not write the audit log ({err}); reviews go on"),
            });
        }
    }
}

/// Appends `text` to the regular file at `path`, creating it when missing; on the blocking
/// pool.
async fn append(path: PathBuf, text: String) -> Result<(), AuditError> {
    let target = path.clone();
    match tokio::task::spawn_blocking(move || append_regular(&target, text.as_bytes())).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(source)) => Err(AuditError::Io { path, source }),
        Err(_) => Err(AuditError::Interrupted { path }),
    }
}

impl Actor for AuditLog {
    type Context = Context<Self>;
}

impl Handler<AppendAudit> for AuditLog {
    type Result = ();

    fn handle(&mut self, msg: AppendAudit, ctx: &mut Context<Self>) {
        match serde_json::to_string(&msg) {
            Ok(line) => {
                self.pending.push_str(&line);
                self.pending.push('\n');
            }
            Err(err) => tracing::warn!(error = %err, "audit entry not serialisable; skipped"),
        }
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
            if let HostEvent::Notice { text } = msg {
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
        let audit = AuditLog::new(path, host.clone().recipient()).start();
        audit.do_send(entry(1));
        audit.do_send(entry(2));
        audit.send(FlushAudit).await.unwrap();
        let notices = host.send(GetNotices).await.unwrap();
        (host, notices)
    }

    #[actix::test]
    async fn g7_entries_are_appended_one_line_each() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s__advisor.jsonl");
        let (_, notices) = write_twice_and_flush(path.clone()).await;
        assert!(notices.is_empty(), "{notices:?}");
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 2, "{text}");
    }

    #[test]
    fn issue10_6_a_fifo_audit_path_is_one_notice_never_a_wait() {
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
