//! A fixed pool of threads for the blocking file work of every session of a process (A6):
//! discovery at open (settings, WATCHDOG files, instruction files, the roster), watchdog
//! checks, roster reloads and the advisor transcript's reads and appends. Tokio's blocking
//! pool grows a thread for each job that finds every thread busy, per runtime (each arbiter
//! is one), so 10,000 opens grew the process by nine threads; here the threads are
//! [`FILE_THREADS`], started on first use, and further jobs wait their turn in a queue.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc;
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::oneshot;

/// Threads of the pool: enough to keep a disk busy, few enough that opening thousands of
/// sessions adds none (A6).
pub const FILE_THREADS: usize = 2;

type Job = Box<dyn FnOnce() + Send + 'static>;

/// File work that did not finish: it panicked, or its pool is gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the file work ended abnormally")]
pub struct WorkLost;

/// The pool: [`FILE_THREADS`] threads taking jobs from one queue, started on first use and
/// ended when the pool is dropped.
#[derive(Debug, Default)]
pub struct FilePool {
    queue: Mutex<Option<mpsc::Sender<Job>>>,
}

impl FilePool {
    /// Runs `work` on one of the pool's threads; its answer, or [`WorkLost`] when it
    /// panicked or no thread could be started.
    pub async fn run<R, F>(&self, work: F) -> Result<R, WorkLost>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        let (tx, rx) = oneshot::channel();
        let job: Job = Box::new(move || {
            let _ = tx.send(catch_unwind(AssertUnwindSafe(work)).map_err(|_| WorkLost));
        });
        self.sender()
            .ok_or(WorkLost)?
            .send(job)
            .map_err(|_| WorkLost)?;
        rx.await.map_err(|_| WorkLost)?
    }

    /// Starts the threads, if not yet started.
    pub fn start(&self) {
        let _ = self.sender();
    }

    /// The queue's sender, starting the threads the first time.
    fn sender(&self) -> Option<mpsc::Sender<Job>> {
        let mut queue = self.queue.lock();
        if let Some(tx) = queue.as_ref() {
            return Some(tx.clone());
        }
        let (tx, rx) = mpsc::channel::<Job>();
        let rx = Arc::new(Mutex::new(rx));
        for i in 0..FILE_THREADS {
            let rx = Arc::clone(&rx);
            let started = std::thread::Builder::new()
                .name(format!("advisor-files-{i}"))
                .spawn(move || loop {
                    let job = rx.lock().recv();
                    match job {
                        Ok(job) => job(),
                        Err(_) => return,
                    }
                });
            if let Err(err) = started {
                tracing::warn!(error = %err, "a file thread could not be started");
                if i == 0 {
                    return None;
                }
            }
        }
        *queue = Some(tx.clone());
        Some(tx)
    }
}

/// Where a session's blocking file work runs: the process's [`FilePool`] when the session
/// runs on a shared runtime, else tokio's blocking pool.
#[derive(Debug, Clone, Default)]
pub struct Blocking(Option<Arc<FilePool>>);

impl Blocking {
    /// Work on `pool`.
    pub fn on(pool: Arc<FilePool>) -> Self {
        Self(Some(pool))
    }

    /// Runs `work` off the actor threads; its answer, or [`WorkLost`].
    pub async fn run<R, F>(&self, work: F) -> Result<R, WorkLost>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        match &self.0 {
            Some(pool) => pool.run(work).await,
            None => tokio::task::spawn_blocking(work)
                .await
                .map_err(|_| WorkLost),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a6_many_jobs_run_on_the_pools_fixed_threads_and_a_panic_is_work_lost() {
        let pool = Arc::new(FilePool::default());
        let jobs = (0..64).map(|i| {
            let pool = Arc::clone(&pool);
            async move {
                pool.run(move || (i, std::thread::current().name().map(str::to_string)))
                    .await
            }
        });
        let mut names = std::collections::BTreeSet::new();
        for (i, answer) in futures_util::future::join_all(jobs)
            .await
            .into_iter()
            .enumerate()
        {
            let (n, name) = answer.expect("ran");
            assert_eq!(n, i);
            names.insert(name.expect("named"));
        }
        assert!(names.len() <= FILE_THREADS, "{names:?}");
        assert!(names.iter().all(|n| n.starts_with("advisor-files-")));
        let lost = pool.run(|| -> u8 { panic!("boom") }).await;
        assert_eq!(lost, Err(WorkLost));
        assert_eq!(pool.run(|| 7).await, Ok(7), "the thread lives on");
    }
}
