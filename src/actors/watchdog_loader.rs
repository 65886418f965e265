//! The WatchdogLoader actor (SPEC §8): answers [`GetWatchdogPrompt`] with the watchdog
//! blocks, reloading only when the metadata fingerprint changed (W8).
//!
//! A thin shell over [`crate::watchdog`]: every filesystem access (the metadata check as
//! well as the reads) runs on tokio's blocking pool, never on the actor's thread. A
//! subagent's advisor gets its own loader built with the subagent's working directory
//! (W7, [`WatchdogConfig::with_cwd`]).

use std::sync::Arc;

use actix::prelude::*;

use crate::messages::watchdog::{
    GetWatchdogPrompt, GetWatchdogStats, WatchdogPrompt, WatchdogStats,
};
use crate::redact::Redactor;
use crate::shared::watchdog_cache::{CachedRefresh, WatchdogCache};
use crate::watchdog::{
    format_project_context, refresh_with, ContextFile, Loaded, Refresh, WatchdogConfig,
};

/// Discovers and expands WATCHDOG.md files for one working directory.
#[derive(Debug)]
pub struct WatchdogLoader {
    config: Arc<WatchdogConfig>,
    redactor: Option<Redactor>,
    /// The patterns are still to be compiled, on first use (no redactor was handed in).
    compile_redactor: bool,
    redactor_error: Option<String>,
    cached: Option<Arc<Loaded>>,
    stats: WatchdogStats,
    /// The process-wide results (A6); `None` loads for this loader alone.
    shared: Option<Arc<WatchdogCache>>,
    /// The host's own instruction files, replacing discovery (P8).
    context_files: Option<Arc<[ContextFile]>>,
    /// Their `<project-context>` block, built on first use.
    host_context: Option<Option<String>>,
}

impl WatchdogLoader {
    /// A loader for `config`, redacting secrets from the blocks (X5). Nothing is read or
    /// compiled until the first request.
    pub fn new(config: WatchdogConfig) -> Self {
        Self {
            config: Arc::new(config),
            redactor: None,
            compile_redactor: true,
            redactor_error: None,
            cached: None,
            stats: WatchdogStats::default(),
            shared: None,
            context_files: None,
            host_context: None,
        }
    }

    /// Uses the host's own instruction files instead of discovering them (P8); `None`
    /// keeps discovery.
    pub fn with_context_files(mut self, files: Option<Arc<[ContextFile]>>) -> Self {
        self.context_files = files;
        self
    }

    /// `prompt` with the host's instruction files in place of the discovered ones, when the
    /// host gave some (P8). The block is bounded and redacted once.
    fn with_host_context(&mut self, mut prompt: WatchdogPrompt) -> WatchdogPrompt {
        let Some(files) = self.context_files.clone() else {
            return prompt;
        };
        if self.host_context.is_none() {
            let redactor = self.redactor();
            self.host_context = Some(format_project_context(&files, redactor.as_ref()));
        }
        prompt.project_context = self.host_context.clone().flatten();
        prompt
    }

    /// Takes its results from `cache`, shared with the other sessions of the process
    /// (A6), instead of loading on its own.
    pub fn with_cache(mut self, cache: Option<Arc<WatchdogCache>>) -> Self {
        self.shared = cache;
        self
    }

    /// Folds an answer of the shared cache into the actor's state (A6): a load read now
    /// counts as this loader's load; another session's current result is adopted unread.
    fn settle_shared(
        &mut self,
        outcome: Result<CachedRefresh, tokio::task::JoinError>,
    ) -> WatchdogPrompt {
        match outcome {
            Ok(CachedRefresh::Loaded(loaded)) => {
                self.stats.loads += 1;
                self.stats.files_read += loaded.files_read as u64;
                self.stats.requests += 1;
                let prompt = loaded.prompt.clone();
                self.cached = Some(loaded);
                prompt
            }
            Ok(CachedRefresh::Shared(loaded)) => {
                self.stats.requests += 1;
                let prompt = loaded.prompt.clone();
                self.cached = Some(loaded);
                prompt
            }
            Ok(CachedRefresh::Unchanged) => self.settle(Ok(Refresh::Unchanged)),
            Err(err) => self.settle(Err(err)),
        }
    }

    /// Redacts with `redactor` (compiled once for the process, A6), or not at all when
    /// `None` (`advisor.redactSecrets: false`).
    pub fn with_redactor(mut self, redactor: Option<Redactor>) -> Self {
        self.redactor = redactor;
        self.compile_redactor = false;
        self
    }

    /// The redactor, compiled on first use when none was handed in.
    fn redactor(&mut self) -> Option<Redactor> {
        if std::mem::take(&mut self.compile_redactor) {
            match Redactor::new() {
                Ok(redactor) => self.redactor = Some(redactor),
                Err(err) => {
                    self.redactor_error = Some(format!("watchdog: blocks not redacted: {err}"))
                }
            }
        }
        self.redactor.clone()
    }

    /// Folds the outcome of one background check into the actor's state and picks the
    /// answer. An unchanged tree answers the cached blocks without repeating warnings;
    /// a failed check keeps the previous blocks and reports the failure as a warning.
    fn settle(&mut self, outcome: Result<Refresh, tokio::task::JoinError>) -> WatchdogPrompt {
        self.stats.requests += 1;
        match outcome {
            Ok(Refresh::Rebuilt(loaded)) => {
                self.stats.loads += 1;
                self.stats.files_read += loaded.files_read as u64;
                let mut prompt = loaded.prompt.clone();
                prompt.warnings.extend(self.redactor_error.take());
                self.cached = Some(Arc::new(loaded));
                prompt
            }
            Ok(Refresh::Unchanged) => self.cached_prompt(Vec::new()),
            Err(err) => {
                let warning = format!("watchdog: reload failed: {err}");
                tracing::warn!(target: "advisor::watchdog", "{warning}");
                self.cached_prompt(vec![warning])
            }
        }
    }

    /// The prompt of the last successful load (empty when none), with `warnings`.
    fn cached_prompt(&self, warnings: Vec<String>) -> WatchdogPrompt {
        let mut prompt = self
            .cached
            .as_ref()
            .map(|loaded| loaded.prompt.clone())
            .unwrap_or_default();
        prompt.warnings = warnings;
        prompt
    }
}

impl Actor for WatchdogLoader {
    type Context = Context<Self>;
}

impl Supervised for WatchdogLoader {}

impl Handler<GetWatchdogPrompt> for WatchdogLoader {
    type Result = ResponseActFuture<Self, WatchdogPrompt>;

    fn handle(&mut self, _msg: GetWatchdogPrompt, _ctx: &mut Self::Context) -> Self::Result {
        let config = Arc::clone(&self.config);
        let previous = self.cached.clone();
        let redactor = self.redactor();
        if let Some(cache) = self.shared.clone() {
            let check = tokio::task::spawn_blocking(move || {
                cache.refresh(&config, previous.as_ref(), redactor.as_ref())
            });
            return Box::pin(check.into_actor(self).map(|outcome, actor, _ctx| {
                let prompt = actor.settle_shared(outcome);
                actor.with_host_context(prompt)
            }));
        }
        let check = tokio::task::spawn_blocking(move || {
            refresh_with(
                &config,
                previous.as_ref().map(|loaded| &loaded.fingerprint),
                redactor.as_ref(),
            )
        });
        Box::pin(check.into_actor(self).map(|outcome, actor, _ctx| {
            let prompt = actor.settle(outcome);
            actor.with_host_context(prompt)
        }))
    }
}

impl Handler<GetWatchdogStats> for WatchdogLoader {
    type Result = MessageResult<GetWatchdogStats>;

    fn handle(&mut self, _msg: GetWatchdogStats, _ctx: &mut Self::Context) -> Self::Result {
        MessageResult(self.stats)
    }
}

#[cfg(test)]
mod tests;
