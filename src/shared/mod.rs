//! What the sessions of one process share (SPEC A6): built once, handed to every session
//! through [`RuntimeConfig::shared`](crate::RuntimeConfig).

pub mod watchdog_cache;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use crate::feed::FeedCursor;
use crate::model::limit::{provider_of, CallCounts, CallLimit, LimitedModel};
use crate::model::ModelClient;
use crate::providers::{
    resolve_config, Catalog, EndpointQuirks, ErrorSource, ModelSpec, ProviderConfig, ProviderError,
    StreamingClient,
};
use crate::redact::Redactor;
use crate::render::TranscriptView;
use crate::review::quarantine::OutputGuard;
use crate::RuntimeConfig;
use watchdog_cache::WatchdogCache;

/// The default of `advisor.maxConcurrentReviews`.
pub const DEFAULT_MAX_CONCURRENT_REVIEWS: usize = 16;

/// Resources every session of a process uses and none owns: the compiled secret patterns
/// (X5), the model catalog (M3), one HTTP client per provider endpoint, one limit on
/// concurrent model calls per provider, and the WATCHDOG.md results per directory (W8).
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

/// Compiles the output quarantine's patterns (P5); a failure is logged and leaves the
/// quarantine off.
fn compile_output_guard() -> Option<Arc<OutputGuard>> {
    OutputGuard::new()
        .map(Arc::new)
        .map_err(|e| tracing::error!(error = %e, "output quarantine unavailable"))
        .ok()
}

/// How a session gets at the shared resources; without them (a config that was not opened
/// on a runtime) everything is built for the session alone, as before A6.
impl RuntimeConfig {
    /// The secret redactor for this session (X5): the shared compiled one, or one compiled
    /// now; `None` when `advisor.redactSecrets` is off.
    pub fn redactor(&self) -> Option<Redactor> {
        if !self.settings.redact_secrets {
            return None;
        }
        match &self.shared {
            Some(shared) => shared.redactor(),
            None => Redactor::new()
                .map_err(|e| tracing::error!(error = %e, "secret redaction unavailable"))
                .ok(),
        }
    }

    /// The output quarantine's patterns for this session (P5): the shared compiled ones, or
    /// ones compiled now.
    pub fn output_guard(&self) -> Option<Arc<OutputGuard>> {
        match &self.shared {
            Some(shared) => shared.output_guard(),
            None => compile_output_guard(),
        }
    }

    /// A fresh feed cursor for this session, redacting with [`RuntimeConfig::redactor`].
    pub fn feed_cursor(&self, view: TranscriptView, replay_budget: Option<usize>) -> FeedCursor {
        FeedCursor::with_redactor(view, replay_budget, self.redactor())
    }

    /// The shared WATCHDOG.md cache, when the session runs on a shared runtime.
    pub fn watchdog_cache(&self) -> Option<Arc<WatchdogCache>> {
        self.shared.as_ref().map(|s| s.watchdog_cache())
    }

    /// The call counts of this session's provider (C3), when it runs on a shared runtime
    /// and has called it.
    pub fn provider_calls(&self) -> Option<CallCounts> {
        let shared = self.shared.as_ref()?;
        shared.calls_of(&self.model.as_ref()?.info().id)
    }

    /// Wires the configuration to `shared` (A6): the session uses its redactor, catalog
    /// and watchdog cache, and its models go through the providers' call limits.
    /// A configuration already wired (its `shared` is set, as in one made by
    /// [`RuntimeConfig::for_subagent`] from a wired one) is returned as it is, so no model
    /// is limited twice.
    pub fn share(mut self, shared: &Arc<SharedResources>) -> Self {
        if self.shared.is_some() {
            return self;
        }
        let fallback = self.settings.max_concurrent_reviews;
        self.model = self.model.map(|m| shared.limited(m, fallback));
        self.promotion_model = self.promotion_model.map(|m| shared.limited(m, fallback));
        // A6: a backup's calls count against its own provider's limit (P6).
        self.fallback_models = std::mem::take(&mut self.fallback_models)
            .into_iter()
            .map(|m| shared.limited(m, fallback))
            .collect();
        self.shared = Some(Arc::clone(shared));
        self
    }
}
