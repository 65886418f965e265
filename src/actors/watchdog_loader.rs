//! The WatchdogLoader actor (SPEC §8): answers [`GetWatchdogPrompt`] with the watchdog
//! blocks, reloading only when the metadata fingerprint changed (W8).
//!
//! A thin shell over [`crate::watchdog`]: every filesystem access (the metadata check as
//! well as the reads) runs on tokio's blocking pool, never on the actor's thread. A
//! subagent's advisor gets its own loader built with the subagent's working directory
//! (W7, [`WatchdogConfig::with_cwd`]).
//!
//! A session has one loader for all its advisors (RO13, RO24): the blocks are the same for
//! each. Asks that come while a check runs share its answer, and the warnings of a load
//! go to the user once, unnamed ([`WatchdogLoader::with_notices`]).

use std::sync::Arc;

use actix::prelude::*;

use tokio::sync::oneshot;

use crate::messages::review::NoticeRaised;
use crate::messages::watchdog::{
    GetWatchdogPrompt, GetWatchdogStats, WatchdogPrompt, WatchdogStats,
};
use crate::redact::Redactor;
use crate::shared::file_pool::{Blocking, WorkLost};
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
    /// Where the warnings go (W3), unnamed; `None` puts them in the first answer.
    notices: Option<Recipient<NoticeRaised>>,
    /// The asks the check in flight answers; empty while none runs.
    waiting: Vec<oneshot::Sender<WatchdogPrompt>>,
    /// Where the checks run (A6).
    blocking: Blocking,
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
            notices: None,
            waiting: Vec::new(),
            blocking: Blocking::default(),
        }
    }

    /// Sends the warnings of each load to `notices` as lines about no advisor in
    /// particular (W3, RO13), instead of in the answer: every advisor of a session asks
    /// this one loader, and the user sees each warning once.
    pub fn with_notices(mut self, notices: Recipient<NoticeRaised>) -> Self {
        self.notices = Some(notices);
        self
    }

    /// Answers every waiting ask with `prompt`: its warnings go to the notices when there
    /// are some, else with the first answer only.
    fn answer(&mut self, mut prompt: WatchdogPrompt) {
        if let Some(notices) = &self.notices {
            for text in std::mem::take(&mut prompt.warnings) {
                notices.do_send(NoticeRaised {
                    text,
                    advisor: None,
                });
            }
        }
        for waiter in std::mem::take(&mut self.waiting) {
            let _ = waiter.send(prompt.clone());
            prompt.warnings.clear();
        }
    }

    /// Checks the files on the blocking pool (through the shared cache when there is one)
    /// and answers the asks waiting meanwhile.
    fn check(&mut self, ctx: &mut Context<Self>) {
        let config = Arc::clone(&self.config);
        let previous = self.cached.clone();
        let redactor = self.redactor();
        let blocking = self.blocking.clone();
        if let Some(cache) = self.shared.clone() {
            let check = async move {
                let work = move || cache.refresh(&config, previous.as_ref(), redactor.as_ref());
                blocking.run(work).await
            };
            ctx.spawn(check.into_actor(self).map(|outcome, actor, _ctx| {
                let prompt = actor.settle_shared(outcome);
                let prompt = actor.with_host_context(prompt);
                actor.answer(prompt);
            }));
            return;
        }
        let check = async move {
            let work = move || {
                refresh_with(
                    &config,
                    previous.as_ref().map(|loaded| &loaded.fingerprint),
                    redactor.as_ref(),
                )
            };
            blocking.run(work).await
        };
        ctx.spawn(check.into_actor(self).map(|outcome, actor, _ctx| {
            let prompt = actor.settle(outcome);
            let prompt = actor.with_host_context(prompt);
            actor.answer(prompt);
        }));
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

    /// Runs its checks on `blocking` (A6: the process's file threads).
    pub fn with_blocking(mut self, blocking: Blocking) -> Self {
        self.blocking = blocking;
        self
    }

    /// Takes its results from `cache`, shared with the other sessions of the process
    /// (A6), instead of loading on its own.
    pub fn with_cache(mut self, cache: Option<Arc<WatchdogCache>>) -> Self {
        self.shared = cache;
        self
    }

    /// Folds an answer of the shared cache into the actor's state (A6): a load read now
    /// counts as this loader's load; another session's current result is adopted unread.
    fn settle_shared(&mut self, outcome: Result<CachedRefresh, WorkLost>) -> WatchdogPrompt {
        match outcome {
            Ok(CachedRefresh::Loaded(loaded)) => {
                self.stats.loads += 1;
                self.stats.files_read += loaded.files_read as u64;
                let prompt = loaded.prompt.clone();
                self.cached = Some(loaded);
                prompt
            }
            Ok(CachedRefresh::Shared(loaded)) => {
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
    fn settle(&mut self, outcome: Result<Refresh, WorkLost>) -> WatchdogPrompt {
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

    fn handle(&mut self, _msg: GetWatchdogPrompt, ctx: &mut Self::Context) -> Self::Result {
        self.stats.requests += 1;
        let (answer, answered) = oneshot::channel();
        self.waiting.push(answer);
        if self.waiting.len() == 1 {
            // W8: none runs, so this ask starts a check; later asks join it.
            self.check(ctx);
        }
        Box::pin(async move { answered.await.unwrap_or_default() }.into_actor(self))
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
