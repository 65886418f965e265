//! A per-provider limit on concurrent model calls (SPEC A6, `advisor.maxConcurrentReviews`).
//!
//! One [`CallLimit`] exists per provider in a process; every session's model client is
//! wrapped in a [`LimitedModel`] that takes a slot before the call and gives it back when
//! the call ends (answer, error or cancellation). Slots are handed out first come, first
//! served (a fair `tokio::sync::Semaphore`), so a session that calls often cannot push
//! ahead of one that calls rarely, and the provider never sees more than the limit at once.
//!
//! Waiting for a slot is part of the call: it is not a failure, it is not retried, and to
//! the caller it looks exactly like a slow model.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::{ModelClient, ModelError, ModelFuture, ModelInfo, ModelRequest, ThinkingLevel};

/// A snapshot of one provider's limit (C3: in-flight calls and queue length).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallCounts {
    /// The provider the limit belongs to (the `provider` of `provider/model-id`).
    pub provider: String,
    /// Calls allowed at once.
    pub limit: usize,
    /// Calls running now.
    pub in_flight: usize,
    /// Calls waiting for a slot now.
    pub waiting: usize,
    /// The most calls that ever ran at once.
    pub peak: usize,
    /// Calls that got a slot so far.
    pub started: u64,
}

/// The limit on concurrent calls to one provider, shared by every session using it.
#[derive(Debug)]
pub struct CallLimit {
    provider: String,
    limit: usize,
    slots: Arc<Semaphore>,
    in_flight: AtomicUsize,
    waiting: AtomicUsize,
    peak: AtomicUsize,
    started: AtomicU64,
}

impl CallLimit {
    /// A limit of `limit` concurrent calls (at least 1) for `provider`.
    pub fn new(provider: impl Into<String>, limit: usize) -> Self {
        let limit = limit.max(1);
        Self {
            provider: provider.into(),
            limit,
            slots: Arc::new(Semaphore::new(limit)),
            in_flight: AtomicUsize::new(0),
            waiting: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
            started: AtomicU64::new(0),
        }
    }

    /// The provider this limit belongs to.
    pub fn provider(&self) -> &str {
        &self.provider
    }

    /// Calls allowed at once.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// The counts now.
    pub fn counts(&self) -> CallCounts {
        CallCounts {
            provider: self.provider.clone(),
            limit: self.limit,
            in_flight: self.in_flight.load(Ordering::Relaxed),
            waiting: self.waiting.load(Ordering::Relaxed),
            peak: self.peak.load(Ordering::Relaxed),
            started: self.started.load(Ordering::Relaxed),
        }
    }

    /// Waits for a slot, in arrival order. The slot is given back when the returned
    /// permit is dropped; a caller that gives up while waiting leaves the queue.
    pub async fn acquire(self: &Arc<Self>) -> CallSlot {
        let queued = Queued::enter(self);
        // The semaphore is never closed, so acquiring only fails if it were; a call then
        // runs without a slot rather than not at all.
        let permit = Arc::clone(&self.slots).acquire_owned().await.ok();
        drop(queued);
        let now = self.in_flight.fetch_add(1, Ordering::Relaxed) + 1;
        self.peak.fetch_max(now, Ordering::Relaxed);
        self.started.fetch_add(1, Ordering::Relaxed);
        CallSlot {
            _permit: permit,
            limit: Arc::clone(self),
        }
    }
}

/// Counts one waiter for as long as it waits (also when its future is dropped).
struct Queued<'a>(&'a CallLimit);

impl<'a> Queued<'a> {
    fn enter(limit: &'a CallLimit) -> Self {
        limit.waiting.fetch_add(1, Ordering::Relaxed);
        Self(limit)
    }
}

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        self.0.waiting.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A held slot of a [`CallLimit`]; dropping it frees the slot.
#[derive(Debug)]
pub struct CallSlot {
    _permit: Option<OwnedSemaphorePermit>,
    limit: Arc<CallLimit>,
}

impl Drop for CallSlot {
    fn drop(&mut self) {
        self.limit.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A model client whose calls go through a provider's [`CallLimit`].
///
/// Wrap each client once: two wrappers around the same limit would take two slots per
/// call. [`crate::runtime::AdvisorRuntime::open`] does the wrapping for its sessions.
#[derive(Clone)]
pub struct LimitedModel {
    inner: Arc<dyn ModelClient>,
    limit: Arc<CallLimit>,
    runs_on: Option<tokio::runtime::Handle>,
}

impl LimitedModel {
    /// `inner`, limited by `limit`.
    pub fn new(inner: Arc<dyn ModelClient>, limit: Arc<CallLimit>) -> Self {
        Self {
            inner,
            limit,
            runs_on: None,
        }
    }

    /// Runs each call (the HTTP exchange and the stream decoding) as a task of `runtime`
    /// instead of on the caller's thread, so the threads carrying the sessions' actors do
    /// only actor work. A call whose caller gives up is aborted; a call that panics comes
    /// back as a retryable error.
    pub fn running_on(mut self, runtime: Option<tokio::runtime::Handle>) -> Self {
        self.runs_on = runtime;
        self
    }

    /// The limit the calls go through.
    pub fn limit(&self) -> &Arc<CallLimit> {
        &self.limit
    }
}

impl ModelClient for LimitedModel {
    fn complete(&self, request: ModelRequest) -> ModelFuture {
        let inner = Arc::clone(&self.inner);
        let limit = Arc::clone(&self.limit);
        let runs_on = self.runs_on.clone();
        Box::pin(async move {
            let slot = limit.acquire().await;
            let Some(runtime) = runs_on else {
                let answer = inner.complete(request).await;
                drop(slot);
                return answer;
            };
            // The slot goes with the call's task: a caller that gives up aborts the task,
            // and the slot is freed only when the task (its connection with it) is gone, not
            // while the aborted exchange may still be open at the provider (A6).
            let call = AbortOnDrop(runtime.spawn(async move {
                let answer = inner.complete(request).await;
                drop(slot);
                answer
            }));
            match call.await {
                Ok(answer) => answer,
                Err(e) => Err(ModelError::Retryable {
                    message: format!("the model call ended abnormally: {e}"),
                    retry_after: None,
                    usage: None,
                }),
            }
        })
    }

    fn info(&self) -> ModelInfo {
        self.inner.info()
    }

    fn thinking(&self) -> ThinkingLevel {
        self.inner.thinking()
    }
}

/// A spawned call that is aborted when its caller stops waiting for it.
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> std::future::Future for AbortOnDrop<T> {
    type Output = Result<T, tokio::task::JoinError>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        std::pin::Pin::new(&mut self.0).poll(cx)
    }
}

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The provider part of a model id (`openai` for `openai/gpt-4o`, the whole id when it has
/// no `/`): the key a process keeps one [`CallLimit`] per.
pub fn provider_of(model_id: &str) -> &str {
    model_id.split_once('/').map_or(model_id, |(p, _)| p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ModelResponse, StopReason, Usage};
    use std::time::Duration;

    /// Answers after `delay` (virtual time) and records the most calls it saw at once.
    struct Slow {
        delay: Duration,
        now: Arc<AtomicUsize>,
        most: Arc<AtomicUsize>,
    }

    impl ModelClient for Slow {
        fn complete(&self, _request: ModelRequest) -> ModelFuture {
            let (delay, now, most) = (self.delay, self.now.clone(), self.most.clone());
            Box::pin(async move {
                let n = now.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(n, Ordering::SeqCst);
                tokio::time::sleep(delay).await;
                now.fetch_sub(1, Ordering::SeqCst);
                Ok(ModelResponse {
                    parts: Vec::new(),
                    usage: Usage::default(),
                    stop: StopReason::EndTurn,
                })
            })
        }
        fn info(&self) -> ModelInfo {
            ModelInfo {
                id: "test/slow".into(),
                context_window: 1000,
                max_output: 100,
                reasoning: false,
            }
        }
    }

    fn request() -> ModelRequest {
        ModelRequest {
            system: String::new(),
            messages: Vec::new(),
            tools: Vec::new(),
            max_tokens: 10,
            thinking: ThinkingLevel::Off,
            reminder: None,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a6_the_limit_is_never_exceeded_and_waiters_are_served_in_arrival_order() {
        let now = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let limit = Arc::new(CallLimit::new("test", 3));
        let model = LimitedModel::new(
            Arc::new(Slow {
                delay: Duration::from_secs(1),
                now: now.clone(),
                most: most.clone(),
            }),
            limit.clone(),
        );
        let order = Arc::new(parking_lot::Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for i in 0..10 {
            let (model, order) = (model.clone(), order.clone());
            tasks.push(tokio::spawn(async move {
                model.complete(request()).await.unwrap();
                order.lock().push(i);
            }));
            // Arrival order is the spawn order.
            tokio::task::yield_now().await;
        }
        tokio::task::yield_now().await;
        let counts = limit.counts();
        assert_eq!((counts.in_flight, counts.waiting), (3, 7));
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(most.load(Ordering::SeqCst), 3);
        let order = order.lock().clone();
        // Three at a time, in arrival order: every call finishes in its wave of three.
        let waves: Vec<usize> = order.iter().map(|i| i / 3).collect();
        let mut sorted = waves.clone();
        sorted.sort_unstable();
        assert_eq!(waves, sorted, "served out of arrival order: {order:?}");
        let counts = limit.counts();
        assert_eq!((counts.in_flight, counts.waiting, counts.peak), (0, 0, 3));
        assert_eq!(counts.started, 10);
    }

    #[tokio::test(start_paused = true)]
    async fn a6_a_caller_that_gives_up_while_waiting_leaves_the_queue() {
        let limit = Arc::new(CallLimit::new("test", 1));
        let held = limit.acquire().await;
        let gave_up = tokio::time::timeout(Duration::from_secs(1), limit.acquire()).await;
        assert!(gave_up.is_err());
        assert_eq!(limit.counts().waiting, 0);
        drop(held);
        let again = limit.acquire().await;
        assert_eq!(limit.counts().in_flight, 1);
        drop(again);
        assert_eq!(limit.counts().in_flight, 0);
    }

    struct Boom;

    impl ModelClient for Boom {
        fn complete(&self, _request: ModelRequest) -> ModelFuture {
            Box::pin(async { panic!("the client blew up") })
        }
        fn info(&self) -> ModelInfo {
            ModelInfo {
                id: "test/boom".into(),
                context_window: 1000,
                max_output: 100,
                reasoning: false,
            }
        }
    }

    #[tokio::test]
    async fn a6_a_call_that_panics_on_the_call_pool_comes_back_as_a_retryable_error() {
        let pool = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .build()
            .unwrap();
        let limit = Arc::new(CallLimit::new("test", 1));
        let model = LimitedModel::new(Arc::new(Boom), limit.clone())
            .running_on(Some(pool.handle().clone()));
        let err = model.complete(request()).await.unwrap_err();
        assert!(
            matches!(&err, ModelError::Retryable { message, .. } if message.contains("abnormally")),
            "{err:?}"
        );
        // The slot came back: the next call gets one at once.
        assert_eq!(limit.counts().in_flight, 0);
        assert!(model.complete(request()).await.is_err());
        pool.shutdown_background();
    }

    #[test]
    fn a6_the_limit_key_is_the_provider_of_the_model_id() {
        assert_eq!(provider_of("openai/gpt-4o"), "openai");
        assert_eq!(provider_of("openrouter/anthropic/claude"), "openrouter");
        assert_eq!(provider_of("local"), "local");
        assert_eq!(CallLimit::new("p", 0).limit(), 1);
    }
}
