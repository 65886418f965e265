//! AuditLog: appends the advisor's own transcript to a JSON-lines file beside the session
//! (G7), one [`AppendAudit`] a line.
//!
//! Entries are buffered and written by one async append at a time (tokio's file I/O, which
//! runs on the blocking pool), so the actor's thread never blocks and lines keep their
//! order. A write that fails is reported to the user once, as a warning notice; the lines
//! of that write are lost, later writes are still tried, and reviews never fail because of
//! the audit file.

use std::path::PathBuf;

use actix::{Actor, ActorFutureExt, AsyncContext, Context, Handler, Recipient, WrapFuture};
use tokio::io::AsyncWriteExt;
use tokio::sync::oneshot;

use crate::domain::host::HostEvent;
use crate::messages::review::{AppendAudit, FlushAudit};

/// Why a write to the audit file failed.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// The file could not be opened or written.
    #[error("{path}: {source}")]
    Io {
        /// The audit file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
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

/// Appends `text` to the file at `path`, creating it when missing.
async fn append(path: PathBuf, text: String) -> Result<(), AuditError> {
    let io = |source| AuditError::Io {
        path: path.clone(),
        source,
    };
    let mut file = tokio::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .await
        .map_err(io)?;
    file.write_all(text.as_bytes()).await.map_err(io)?;
    file.flush().await.map_err(io)
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
