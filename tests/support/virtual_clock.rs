//! A paced virtual clock for tests that run real loopback sockets under a paused tokio
//! clock.
//!
//! With a paused clock, tokio jumps to the next timer whenever the runtime is idle, and a
//! runtime waiting for a loopback socket to become readable *is* idle. With only a client's
//! timeouts pending, the jump would fire them before the answer is read. [`VirtualClock`]
//! keeps a 1 ms timer pending, so each jump is at most 1 ms of virtual time: socket
//! exchanges take a few virtual milliseconds, and a 20 s wait still takes 20 s of virtual
//! time (about 20,000 quick idle turns of the runtime). It also notes the virtual instant
//! at which the server saw each request.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::sse_server::SseServer;

const TICK: Duration = Duration::from_millis(1);

/// Paces a paused clock in 1 ms steps and notes when the server sees each request (see the
/// module comment). Dropping it stops the pacing.
pub struct VirtualClock {
    arrivals: tokio::sync::watch::Receiver<Vec<Instant>>,
    task: tokio::task::JoinHandle<()>,
}

impl VirtualClock {
    /// Starts pacing (inside a tokio runtime, normally with a paused clock), watching
    /// `server`'s request count.
    pub fn start(server: Arc<SseServer>) -> Self {
        let (tx, arrivals) = tokio::sync::watch::channel(Vec::new());
        let task = tokio::spawn(async move {
            loop {
                tokio::time::sleep(TICK).await;
                let count = server.request_count();
                tx.send_if_modified(|seen| {
                    let grew = seen.len() < count;
                    while seen.len() < count {
                        seen.push(Instant::now());
                    }
                    grew
                });
            }
        });
        Self { arrivals, task }
    }

    /// The virtual instant (to the tick) at which request `i` had reached the server;
    /// waits for the tick that sees it.
    pub async fn arrival(&self, i: usize) -> Instant {
        let mut rx = self.arrivals.clone();
        let seen = rx
            .wait_for(|seen| seen.len() > i)
            .await
            .expect("the clock runs until dropped");
        seen[i]
    }
}

impl Drop for VirtualClock {
    fn drop(&mut self) {
        self.task.abort();
    }
}
