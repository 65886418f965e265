//! What the runtime is started with: [`RuntimeConfig`], the built-in advisor prompt and the
//! assembly of the base system prompt (G1).
//!
//! The host loads settings once and passes a `RuntimeConfig` to [`crate::AdvisorHandle`];
//! nothing here reads files or the environment.

use std::path::PathBuf;
use std::sync::Arc;

use crate::domain::transcript::Transcript;
use crate::feed::FeedCursor;
use crate::model::limit::CallCounts;
use crate::model::ModelClient;
use crate::redact::Redactor;
use crate::render::TranscriptView;
use crate::review::quarantine::OutputGuard;
use crate::roster::RosterSetup;
use crate::settings::AdvisorSettings;
use crate::shared::watchdog_cache::WatchdogCache;
use crate::shared::{compile_output_guard, SharedResources};
use crate::tools::ToolRegistry;
use crate::watchdog::{ContextFile, WatchdogConfig};

pub(crate) mod members;

pub use members::{turn_end_may_wait, MemberPlan, RosterDiff};

/// The built-in advisor system prompt (G1), a data file in `config/`.
pub const BUILTIN_PROMPT: &str = include_str!("../config/advisor-prompt.md");

/// Everything the runtime is started with; loaded once by the host and passed in.
pub struct RuntimeConfig {
    /// The primary session's id; the advisor's tool session is `<id>-advisor` (T1).
    pub primary_session_id: String,
    /// The workspace root the tools are confined to (T2), named in the prompt (G1).
    pub workspace_root: PathBuf,
    /// Settings (K1).
    pub settings: AdvisorSettings,
    /// The advisor model; `None` when no model is assigned (K2).
    pub model: Option<Arc<dyn ModelClient>>,
    /// The client for `advisor.contextPromotion` (built by the host from
    /// [`AdvisorSettings::context_promotion`]): when the context fills up and this model's
    /// window is larger, the advisor switches to it for the rest of the session (G5).
    pub promotion_model: Option<Arc<dyn ModelClient>>,
    /// The judge of the triage gate (SP9), built by the host from `modelRoles.judge` when
    /// `advisor.judgeGate` is on; `None`: every update is reviewed as cadence says.
    pub judge_model: Option<Arc<dyn ModelClient>>,
    /// The backup models of `retry.fallbackChains`, in order (built by the host from
    /// [`crate::settings::RetrySettings::chain_for`], only those it could build — a model
    /// without a key is left out): a failing review is retried on the first of them that
    /// is not cooling down (P6). Empty: no backup.
    pub fallback_models: Vec<Arc<dyn ModelClient>>,
    /// The workspace tools (normally [`ToolRegistry::workspace`]).
    pub tools: ToolRegistry,
    /// Watchdog discovery settings; `None` disables WATCHDOG.md files, and with them the
    /// project's instruction files (P8).
    pub watchdog: Option<WatchdogConfig>,
    /// The project's instruction files as the host has them (P8), replacing the discovery
    /// of `AGENTS.md`, `CLAUDE.md` and the rest from the working directory; `None`
    /// discovers them.
    pub context_files: Option<Arc<[ContextFile]>>,
    /// A replacement for the built-in prompt (`<agentDir>/system-prompts/advisor.md`, G1).
    pub system_prompt_override: Option<String>,
    /// The transcript as it stands when the advisor starts: the cursor is seeded at its end
    /// so a resumed session is not replayed (X4).
    pub initial_transcript: Option<Transcript>,
    /// Where the advisor's own transcript is kept, as an oh-my-pi session file (P9, G7):
    /// for a session file `<dir>/<name>.jsonl`, `<dir>/<name>/__advisor.jsonl`
    /// ([`crate::session::advisor_file_path`] derives and checks it). A file already there
    /// is appended to and its recorded usage starts the lifetime totals. `None` keeps no
    /// file.
    pub audit_path: Option<PathBuf>,
    /// Whether the syncBacklog wait (S1) holds while a retry is pending (F1): the waiter is
    /// released only when the backlog drains, is dropped (F2) or the advisor pauses (F3).
    /// Off in a live host, where S2 lets the primary go on at once; a replay turns it on so a
    /// transient error costs one retry, not the separation of the following turns.
    pub hold_wait_through_retries: bool,
    /// The roster of named advisors (§15), resolved by the host (`crate::roster::load`).
    /// `None`, or a roster without entries, runs today's single unnamed advisor (RO12).
    pub roster: Option<RosterSetup>,
    /// Where the router sends a copy of every `advise` call and its outcome (EV3: a host
    /// measuring the advisor); `None` sends nothing.
    pub advice_tap: Option<crate::delivery::AdviceTap>,
    /// The session's own model tried once more (CA23), while [`RuntimeConfig::model`] is
    /// `None` because the host named a model it could not build yet: called, quietly, when
    /// the host reports its model catalog changed. Builds a client only (no file read).
    pub late_model: Option<LateModel>,
    /// What the sessions of the process share (A6), set by
    /// [`crate::runtime::AdvisorRuntime::open`]; `None` builds everything for this session.
    shared: Option<Arc<SharedResources>>,
}

/// The session's own model built once more (CA23): `None` while it still cannot be.
pub type LateModel = Arc<dyn Fn() -> Option<Arc<dyn ModelClient>> + Send + Sync>;

impl RuntimeConfig {
    /// A configuration with default settings, the workspace tools and no watchdog.
    pub fn new(
        primary_session_id: impl Into<String>,
        workspace_root: impl Into<PathBuf>,
        model: Option<Arc<dyn ModelClient>>,
    ) -> Self {
        Self {
            primary_session_id: primary_session_id.into(),
            workspace_root: workspace_root.into(),
            settings: AdvisorSettings::default(),
            model,
            promotion_model: None,
            judge_model: None,
            fallback_models: Vec::new(),
            tools: ToolRegistry::workspace(),
            watchdog: None,
            context_files: None,
            system_prompt_override: None,
            initial_transcript: None,
            audit_path: None,
            hold_wait_through_retries: false,
            roster: None,
            advice_tap: None,
            late_model: None,
            shared: None,
        }
    }

    /// Whether a turn end can ever make the host wait: only when one may be held (S1's
    /// threshold, D5's catch-up under `reconfirm`, the session's or a roster entry's, RO15:
    /// `turn_end_may_wait`, asked of the plans the session starts with). A roster with
    /// entries, or one reloaded at turn ends (RO21), may have an entry under `reconfirm` at
    /// any turn end, so it counts as one. Settings are fixed for a session's life, so when
    /// this is false the handle hands the turn over without waiting for an answer: the
    /// primary never waits on the advisor's mailboxes. When it is true, the supervisor keeps
    /// a flag the handle reads at each turn end, by the same rule over the members it runs
    /// now (`Members::turn_end_may_wait`); only when it is set does the handle wait.
    pub fn turn_end_may_wait(&self) -> bool {
        let roster = self
            .roster
            .as_ref()
            .is_some_and(|setup| setup.reload.is_some() || !setup.roster.is_empty());
        roster || turn_end_may_wait(&self.settings, &self.member_plans())
    }

    /// The configuration of a subagent's own advisor (W7), or `None` when
    /// `advisor.subagents` is off (the default: only the main session has an advisor).
    ///
    /// The subagent's advisor shares the model, tools, settings and workspace root, gets
    /// its own tool session (`<subagent-id>-advisor`, T1), and reruns WATCHDOG.md discovery
    /// from the subagent's working directory. It starts with no transcript and no audit
    /// file; the host sets those if it wants them.
    pub fn for_subagent(
        &self,
        subagent_session_id: impl Into<String>,
        cwd: impl Into<PathBuf>,
    ) -> Option<Self> {
        if !self.settings.subagents {
            return None;
        }
        let cwd = cwd.into();
        Some(Self {
            primary_session_id: subagent_session_id.into(),
            workspace_root: self.workspace_root.clone(),
            settings: self.settings.clone(),
            model: self.model.clone(),
            promotion_model: self.promotion_model.clone(),
            judge_model: self.judge_model.clone(),
            fallback_models: self.fallback_models.clone(),
            tools: self.tools.clone(),
            watchdog: self.watchdog.as_ref().map(|w| w.with_cwd(cwd)),
            context_files: self.context_files.clone(),
            system_prompt_override: self.system_prompt_override.clone(),
            initial_transcript: None,
            audit_path: None,
            hold_wait_through_retries: self.hold_wait_through_retries,
            roster: self.roster.clone(),
            advice_tap: None,
            late_model: self.late_model.clone(),
            shared: self.shared.clone(),
        })
    }

    /// Whether the session runs without named advisors: no roster, or one without entries
    /// (RO12).
    pub fn roster_is_empty(&self) -> bool {
        self.roster.as_ref().is_none_or(|s| s.roster.is_empty())
    }

    /// The base system prompt: the built-in one (or the override) plus the workspace root.
    pub fn base_prompt(&self) -> String {
        base_prompt(
            self.system_prompt_override.as_deref(),
            &self.workspace_root.display().to_string(),
        )
    }
}

/// The base system prompt (G1): `override_prompt` when the user has one, else
/// [`BUILTIN_PROMPT`], followed by the line naming the workspace root.
pub fn base_prompt(override_prompt: Option<&str>, workspace_root: &str) -> String {
    let prompt = override_prompt.unwrap_or(BUILTIN_PROMPT).trim_end();
    format!("{prompt}\n\nThe workspace root is `{workspace_root}`; tool paths are relative to it.")
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

    /// Where the session's blocking file work runs: the process's file threads on a shared
    /// runtime (A6), else tokio's blocking pool.
    pub fn blocking(&self) -> crate::shared::file_pool::Blocking {
        self.shared
            .as_ref()
            .map(|s| s.blocking())
            .unwrap_or_default()
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

    /// `model` behind its provider's call limit when the session runs on a shared runtime
    /// (A6, RO24: every advisor's calls count), else as it is.
    pub fn limited(&self, model: Arc<dyn ModelClient>) -> Arc<dyn ModelClient> {
        match &self.shared {
            Some(shared) => shared.limited(model, self.settings.max_concurrent_reviews),
            None => model,
        }
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
        self.judge_model = self.judge_model.map(|m| shared.limited(m, fallback));
        // A6: a backup's calls count against its own provider's limit (P6).
        self.fallback_models = std::mem::take(&mut self.fallback_models)
            .into_iter()
            .map(|m| shared.limited(m, fallback))
            .collect();
        self.shared = Some(Arc::clone(shared));
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn g1_base_prompt_is_the_builtin_or_the_override_then_the_workspace_root() {
        let builtin = base_prompt(None, "/work/repo");
        assert!(builtin.starts_with(BUILTIN_PROMPT.trim_end()));
        assert!(builtin
            .ends_with("\n\nThe workspace root is `/work/repo`; tool paths are relative to it."));
        let custom = base_prompt(Some("Review like a hawk.\n\n"), "/w");
        assert_eq!(
            custom,
            "Review like a hawk.\n\nThe workspace root is `/w`; tool paths are relative to it."
        );
    }

    #[test]
    fn w7_subagent_config_exists_only_when_enabled_and_keeps_the_replay_flag() {
        let mut config = RuntimeConfig::new("main", "/w", None);
        assert!(config.for_subagent("sub", "/w/sub").is_none());
        config.settings.subagents = true;
        config.hold_wait_through_retries = true;
        let sub = config.for_subagent("sub", "/w/sub").expect("enabled");
        assert_eq!(sub.primary_session_id, "sub");
        assert!(sub.hold_wait_through_retries);
        assert!(sub.audit_path.is_none() && sub.initial_transcript.is_none());
    }
}
