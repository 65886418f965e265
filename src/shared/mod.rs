//! What the sessions of one process share (SPEC A6): built once, handed to every session
//! through the session's runtime configuration.

pub mod file_pool;
pub mod settings_cache;
pub mod watchdog_cache;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::Semaphore;

use crate::model::limit::{provider_of, CallCounts, CallLimit, LimitedModel};
use crate::model::ModelClient;
use crate::providers::{
    resolve_config, Catalog, EndpointQuirks, ErrorSource, ModelSpec, ProviderConfig, ProviderError,
    StreamingClient,
};
use crate::redact::Redactor;
use crate::review::quarantine::OutputGuard;
use crate::roster::RosterCache;
use file_pool::{Blocking, FilePool};
use settings_cache::SettingsCache;
use watchdog_cache::WatchdogCache;

/// Resources every session of a process uses and none owns: the compiled secret patterns
/// (X5), the model catalog (M3), one HTTP client per provider endpoint, one limit on
/// concurrent model calls per provider, and the settings, WATCHDOG.md and roster results per
/// directory (K1, W8, RO24).
#[derive(Debug)]
pub struct SharedResources {
    redactor: Option<Redactor>,
    output_guard: Option<Arc<OutputGuard>>,
    catalog: Catalog,
    http: Mutex<HashMap<(String, Duration), reqwest::Client>>,
    quirks: Mutex<HashMap<String, Arc<EndpointQuirks>>>,
    limits: Mutex<HashMap<String, Arc<CallLimit>>>,
    max_concurrent_reviews: Option<usize>,
    watchdog: Arc<WatchdogCache>,
    roster: Arc<RosterCache>,
    settings: Arc<SettingsCache>,
    discovery: Arc<Semaphore>,
    /// The threads every session's blocking file work runs on (A6).
    files: Arc<FilePool>,
    /// Where model calls run (a runtime of their own), `None` = on the caller's thread.
    calls_on: Option<tokio::runtime::Handle>,
}

impl SharedResources {
    /// Compiles the redaction patterns and parses the built-in catalog. A limit of
    /// `max_concurrent_reviews` calls per provider applies to every session; `None` takes
    /// it from the settings of the first session calling that provider (default 16).
    pub fn new(max_concurrent_reviews: Option<usize>) -> Self {
        let redactor = Redactor::new()
            .map_err(|e| tracing::error!(error = %e, "secret redaction unavailable"))
            .ok();
        let catalog = Catalog::builtin()
            .map_err(|e| tracing::error!(error = %e, "built-in model catalog unreadable"))
            .unwrap_or_else(|_| Catalog::empty());
        Self::with_catalog(catalog, redactor, max_concurrent_reviews)
    }

    /// Resources with a given catalog (a replacement file the host loaded) and redactor.
    pub fn with_catalog(
        catalog: Catalog,
        redactor: Option<Redactor>,
        max_concurrent_reviews: Option<usize>,
    ) -> Self {
        Self {
            redactor,
            output_guard: compile_output_guard(),
            catalog,
            http: Mutex::new(HashMap::new()),
            quirks: Mutex::new(HashMap::new()),
            limits: Mutex::new(HashMap::new()),
            max_concurrent_reviews,
            watchdog: Arc::new(WatchdogCache::new()),
            roster: Arc::new(RosterCache::new()),
            settings: Arc::new(SettingsCache::new()),
            discovery: Arc::new(Semaphore::new(DISCOVERY_THREADS)),
            files: Arc::new(FilePool::default()),
            calls_on: None,
        }
    }

    /// Runs every limited model call as a task of `runtime` (see
    /// [`LimitedModel::running_on`]); the shared runtime sets its call pool here.
    pub fn with_calls_on(mut self, runtime: Option<tokio::runtime::Handle>) -> Self {
        self.calls_on = runtime;
        self
    }

    /// The compiled secret patterns, `None` if they failed to compile (logged).
    pub fn redactor(&self) -> Option<Redactor> {
        self.redactor.clone()
    }

    /// The output quarantine's compiled patterns (P5), `None` if they failed to compile
    /// (logged).
    pub fn output_guard(&self) -> Option<Arc<OutputGuard>> {
        self.output_guard.clone()
    }

    /// The model catalog.
    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// The WATCHDOG.md results cache.
    pub fn watchdog_cache(&self) -> Arc<WatchdogCache> {
        Arc::clone(&self.watchdog)
    }

    /// The roster loads cache (RO24): one load, and one set of compiled globs, per project.
    pub fn roster_cache(&self) -> Arc<RosterCache> {
        Arc::clone(&self.roster)
    }

    /// The settings files cache (K1, A6): one read per project while its files are
    /// unchanged.
    pub fn settings_cache(&self) -> Arc<SettingsCache> {
        Arc::clone(&self.settings)
    }

    /// Runs `work` — a session's file discovery: settings, WATCHDOG files, instruction files,
    /// the roster — on the process's file threads ([`FilePool`]), at most `DISCOVERY_THREADS`
    /// at once for the whole process; the others wait their turn as tasks (A6: opening
    /// sessions adds actors, never threads). `None` when the work panicked.
    pub async fn discover<R, F>(&self, work: F) -> Option<R>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        let _permit = Arc::clone(&self.discovery).acquire_owned().await.ok()?;
        self.files.run(work).await.ok()
    }

    /// Starts the file threads now rather than at the first session's file work.
    pub fn start_file_threads(&self) {
        self.files.start();
    }

    /// Where the sessions' blocking file work runs: the process's fixed [`FilePool`]
    /// (A6: opening sessions starts no thread).
    pub fn blocking(&self) -> Blocking {
        Blocking::on(Arc::clone(&self.files))
    }

    /// The HTTP client for one endpoint (base URL and connect timeout), created on first
    /// use: every session calling that endpoint shares its connection pool (HTTP/2 where
    /// the server offers it over TLS).
    pub fn http_client(&self, config: &ProviderConfig) -> Result<reqwest::Client, ProviderError> {
        let key = (config.base_url.clone(), config.connect_timeout);
        let mut clients = self.http.lock();
        if let Some(client) = clients.get(&key) {
            return Ok(client.clone());
        }
        let client = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            .build()
            .map_err(|e| ProviderError::Http(ErrorSource::new(e)))?;
        clients.insert(key, client.clone());
        Ok(client)
    }

    /// Resolves `spec` against the shared catalog and builds a streaming client over the
    /// shared HTTP client of its endpoint (the runtime's counterpart of
    /// [`crate::providers::build_client`]).
    pub fn build_client(
        &self,
        spec: &ModelSpec,
        key_lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Arc<dyn ModelClient>, ProviderError> {
        self.client_for(resolve_config(spec, &self.catalog, key_lookup)?)
    }

    /// A streaming client for a resolved `config` over the shared HTTP client of its
    /// endpoint (the runtime's counterpart of [`crate::providers::client_for`]); what the
    /// endpoint was found to refuse is shared too (P10).
    pub fn client_for(
        &self,
        config: ProviderConfig,
    ) -> Result<Arc<dyn ModelClient>, ProviderError> {
        let http = self.http_client(&config)?;
        let quirks = self.quirks_of(&config.base_url);
        Ok(Arc::new(StreamingClient::with_endpoint(
            config, http, quirks,
        )))
    }

    /// What the endpoint at `base_url` was found to refuse (P10), created on first use.
    pub fn quirks_of(&self, base_url: &str) -> Arc<EndpointQuirks> {
        let key = base_url.trim_end_matches('/').to_string();
        Arc::clone(self.quirks.lock().entry(key).or_default())
    }

    /// How many HTTP clients were built: one per endpoint (base URL and connect timeout),
    /// however many sessions call it.
    pub fn http_clients(&self) -> usize {
        self.http.lock().len()
    }

    /// The call limit of `provider`, created on first use with the runtime's limit, else
    /// `fallback` (the first caller's `advisor.maxConcurrentReviews`).
    pub fn limit_for(&self, provider: &str, fallback: usize) -> Arc<CallLimit> {
        let mut limits = self.limits.lock();
        let limit = limits.entry(provider.to_string()).or_insert_with(|| {
            Arc::new(CallLimit::new(
                provider,
                self.max_concurrent_reviews.unwrap_or(fallback),
            ))
        });
        Arc::clone(limit)
    }

    /// `model` behind its provider's call limit.
    pub fn limited(&self, model: Arc<dyn ModelClient>, fallback: usize) -> Arc<dyn ModelClient> {
        let limit = self.limit_for(provider_of(&model.info().id), fallback);
        Arc::new(LimitedModel::new(model, limit).running_on(self.calls_on.clone()))
    }

    /// The counts of the provider `model_id` belongs to, if a session called it.
    pub fn calls_of(&self, model_id: &str) -> Option<CallCounts> {
        self.limits
            .lock()
            .get(provider_of(model_id))
            .map(|limit| limit.counts())
    }

    /// The counts of every provider called so far, sorted by provider.
    pub fn calls(&self) -> Vec<CallCounts> {
        let mut all: Vec<CallCounts> = self.limits.lock().values().map(|l| l.counts()).collect();
        all.sort_by(|a, b| a.provider.cmp(&b.provider));
        all
    }
}

/// How many sessions' file discovery runs at once in a process (A6): enough to keep a
/// disk busy, few enough that opening thousands of sessions adds no thread worth counting.
pub const DISCOVERY_THREADS: usize = 2;

/// Compiles the output quarantine's patterns (P5); a failure is logged and leaves the
/// quarantine off.
pub(crate) fn compile_output_guard() -> Option<Arc<OutputGuard>> {
    OutputGuard::new()
        .map(Arc::new)
        .map_err(|e| tracing::error!(error = %e, "output quarantine unavailable"))
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a6_session_discovery_runs_at_most_two_at_once() {
        let shared = Arc::new(SharedResources::with_catalog(Catalog::empty(), None, None));
        let (started, running, most) = (
            Arc::new(AtomicUsize::new(0)),
            Arc::new(AtomicUsize::new(0)),
            Arc::new(AtomicUsize::new(0)),
        );
        let (release, gate) = std::sync::mpsc::channel::<()>();
        let gate = Arc::new(std::sync::Mutex::new(gate));
        let opens: Vec<_> = (0..20)
            .map(|_| {
                let (shared, started, running, most, gate) = (
                    Arc::clone(&shared),
                    Arc::clone(&started),
                    Arc::clone(&running),
                    Arc::clone(&most),
                    Arc::clone(&gate),
                );
                tokio::spawn(async move {
                    shared
                        .discover(move || {
                            started.fetch_add(1, Ordering::SeqCst);
                            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                            most.fetch_max(now, Ordering::SeqCst);
                            // Each open's discovery blocks until the test lets one through.
                            let _ = gate.lock().map(|gate| gate.recv());
                            running.fetch_sub(1, Ordering::SeqCst);
                        })
                        .await
                })
            })
            .collect();
        for released in 0..20 {
            // Wait until as many have started as may run at once, then let one through.
            while started.load(Ordering::SeqCst) < (released + DISCOVERY_THREADS).min(20) {
                tokio::task::yield_now().await;
            }
            release.send(()).unwrap();
        }
        for open in opens {
            assert!(open.await.unwrap().is_some());
        }
        assert_eq!(started.load(Ordering::SeqCst), 20);
        assert!(
            most.load(Ordering::SeqCst) <= DISCOVERY_THREADS,
            "{} ran at once",
            most.load(Ordering::SeqCst)
        );
    }
}
