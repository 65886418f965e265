//! The WatchdogLoader actor (SPEC §8): answers [`GetWatchdogPrompt`] with the watchdog
//! blocks, reloading only when the metadata fingerprint changed (W8).
//!
//! A thin shell over [`crate::watchdog`]: every filesystem access (the metadata check as
//! well as the reads) runs on tokio's blocking pool, never on the actor's thread. A
//! subagent's advisor gets its own loader built with the subagent's working directory
//! (W7, [`WatchdogConfig::with_cwd`]).

use std::sync::Arc;

use actix::prelude::*;

use crate::messages::watchdog::{GetWatchdogPrompt, WatchdogPrompt};
use crate::redact::Redactor;
use crate::watchdog::{refresh_with, Loaded, Refresh, WatchdogConfig};

/// Asks the loader how much work it has done; for status lines and tests.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "WatchdogStats")]
pub struct GetWatchdogStats;

/// Counters of a [`WatchdogLoader`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WatchdogStats {
    /// Prompt requests answered.
    pub requests: u64,
    /// Full loads done (the first request, then one per detected change).
    pub loads: u64,
    /// Files read over all loads (WATCHDOG files and imports).
    pub files_read: u64,
}

/// Discovers and expands WATCHDOG.md files for one working directory.
#[derive(Debug)]
pub struct WatchdogLoader {
    config: Arc<WatchdogConfig>,
    redactor: Option<Redactor>,
    redactor_error: Option<String>,
    cached: Option<Arc<Loaded>>,
    stats: WatchdogStats,
}

impl WatchdogLoader {
    /// A loader for `config`, redacting secrets from the blocks (X5). Nothing is read until
    /// the first request.
    pub fn new(config: WatchdogConfig) -> Self {
        let (redactor, redactor_error) = match Redactor::new() {
            Ok(redactor) => (Some(redactor), None),
            Err(err) => (None, Some(format!("watchdog: blocks not redacted: {err}"))),
        };
        Self {
            config: Arc::new(config),
            redactor,
            redactor_error,
            cached: None,
            stats: WatchdogStats::default(),
        }
    }

    /// Turns secret redaction of the blocks on (the default) or off
    /// (`advisor.redactSecrets: false`).
    pub fn with_redaction(mut self, on: bool) -> Self {
        if !on {
            self.redactor = None;
            self.redactor_error = None;
        }
        self
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
            Ok(Refresh::Unchanged) => WatchdogPrompt {
                blocks: self.cached_blocks(),
                warnings: Vec::new(),
            },
            Err(err) => {
                let warning = format!("watchdog: reload failed: {err}");
                tracing::warn!(target: "advisor::watchdog", "{warning}");
                WatchdogPrompt {
                    blocks: self.cached_blocks(),
                    warnings: vec![warning],
                }
            }
        }
    }

    /// The blocks of the last successful load, if any.
    fn cached_blocks(&self) -> Vec<String> {
        self.cached
            .as_ref()
            .map(|loaded| loaded.prompt.blocks.clone())
            .unwrap_or_default()
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
        let redactor = self.redactor.clone();
        let check = tokio::task::spawn_blocking(move || {
            refresh_with(
                &config,
                previous.as_ref().map(|loaded| &loaded.fingerprint),
                redactor.as_ref(),
            )
        });
        Box::pin(
            check
                .into_actor(self)
                .map(|outcome, actor, _ctx| actor.settle(outcome)),
        )
    }
}

impl Handler<GetWatchdogStats> for WatchdogLoader {
    type Result = MessageResult<GetWatchdogStats>;

    fn handle(&mut self, _msg: GetWatchdogStats, _ctx: &mut Self::Context) -> Self::Result {
        MessageResult(self.stats)
    }
}
