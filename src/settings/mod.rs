//! Advisor settings (SPEC K1): loaded once by the embedding program or the CLI and passed
//! in; the library never reads the environment or settings files on its own.
//!
//! - [`AdvisorSettings`] holds the values with their documented defaults.
//! - [`SettingsLayer`] is what one `config.yml` says ([`SettingsLayer::parse`]), checked key
//!   by key; layers stack, the later one winning key by key.
//! - [`load_settings`] reads `<agentDir>/config.yml`, then `<cwd>/.omp/config.yml`, and the
//!   prompt override `<agentDir>/system-prompts/advisor.md` (G1). The caller passes the
//!   paths in; the function is blocking and belongs at the program's edge, never on an
//!   actor thread.
//! - [`SettingsEnv`] carries the environment variables the settings depend on, read by the
//!   program at its edge and handed over as values.

mod depth;
mod env;
mod gate;
mod load;
mod retry;
mod yaml;

pub(crate) use depth::too_deep;
pub use depth::MAX_YAML_DEPTH;
#[cfg(test)]
pub(crate) use env::lookup_from;
pub use env::{env_flag, SettingsEnv};
pub use gate::{
    GateFailMode, GateMode, GateSettings, DEFAULT_GATE_TIMEOUT, GATE_ALLOWED,
    GATE_FAIL_MODE_ALLOWED, GATE_TIMEOUT_MS_RANGE,
};
pub use load::{
    config_files, config_files_in, load_config_files, load_settings, load_settings_in,
    read_config_layers, read_prompt_override, read_settings_files, read_settings_files_in,
    settings_paths, ConfigLayers, LoadedSettings, SettingsFiles, CONFIG_FILE, MAX_SETTINGS_BYTES,
    PI_PROJECT_DIR, PROMPT_OVERRIDE_FILE,
};
pub use retry::{FallbackRevert, RetryLayer, RetrySettings, MAX_BACKUPS};
pub(crate) use yaml::{kind as yaml_kind, looks_like};
pub use yaml::{Decimal, SettingsLayer, SettingsWarning};

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::render::TranscriptView;

/// How concern and blocker notes reach the primary (D3, D4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DeliveryPolicy {
    /// The default (P1, compat with oh-my-pi 18.3): a review of work in progress keeps its
    /// nits and concerns back until the primary's turn ends, a blocker goes at once; after a
    /// terminal answer nits and concerns are visible cards, only a blocker wakes.
    #[default]
    Defer,
    /// Steer a running primary, wake an idle one (compat with oh-my-pi 16).
    Interrupt,
    /// Hold concerns and blockers until a later review reconfirms them (compat with
    /// pi-omplike-advisor).
    Reconfirm,
}

impl FromStr for DeliveryPolicy {
    type Err = SettingsError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "defer" => Ok(Self::Defer),
            "interrupt" => Ok(Self::Interrupt),
            "reconfirm" => Ok(Self::Reconfirm),
            _ => Err(SettingsError::Invalid {
                key: "advisor.policy",
                value: s.to_string(),
                allowed: "defer, interrupt, reconfirm",
            }),
        }
    }
}

/// `advisor.reviewMode` and a roster entry's `reviewMode` (CA1): which boundaries an
/// advisor's review cadence counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReviewMode {
    /// Every boundary is eligible, work-in-progress tool rounds included (the default).
    #[default]
    Turn,
    /// Only final boundaries are eligible; the deltas of a run's work-in-progress rounds
    /// are held and reviewed with its final boundary.
    AgentEnd,
}

impl fmt::Display for ReviewMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ReviewMode::Turn => "turn",
            ReviewMode::AgentEnd => "agent-end",
        })
    }
}

impl FromStr for ReviewMode {
    type Err = SettingsError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "turn" => Ok(Self::Turn),
            "agent-end" => Ok(Self::AgentEnd),
            _ => Err(SettingsError::Invalid {
                key: "advisor.reviewMode",
                value: s.to_string(),
                allowed: "turn, agent-end",
            }),
        }
    }
}

/// The largest `reviewInterval` (CA2, CA6): 2^53 − 1, the largest whole number a JSON
/// number carries exactly.
pub const MAX_REVIEW_INTERVAL: u64 = (1 << 53) - 1;

impl Serialize for ReviewMode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ReviewMode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

/// A review cadence in words (CA6, `advisor roster`): `turn · every update`,
/// `agent-end · every run`, `agent-end · every 3 eligible updates`.
pub fn describe_cadence(mode: ReviewMode, interval: u64) -> String {
    match interval {
        0 | 1 if mode == ReviewMode::Turn => format!("{mode} · every update"),
        0 | 1 => format!("{mode} · every run"),
        n => format!("{mode} · every {n} eligible updates"),
    }
}

/// The values `syncBacklog` takes, for messages.
pub const SYNC_BACKLOG_ALLOWED: &str = "off, 1, 3, 5, strict";

/// `advisor.syncBacklog` and a roster entry's `syncBacklog` (S1, CA9): how far the primary
/// waits for an advisor whose review was scheduled at a turn end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SyncBacklog {
    /// Never wait (the default).
    #[default]
    Off,
    /// Wait until the backlog is below this threshold (1, 3 or 5), at most the wait cap.
    Below(usize),
    /// Wait until the advisor has no queued or running review left, without a wall-clock
    /// cap (CA10); only what CA11 lists releases it earlier.
    Strict,
}

impl SyncBacklog {
    /// The threshold, when waiting is on (`strict`: 1).
    pub fn threshold(self) -> Option<usize> {
        match self {
            SyncBacklog::Off => None,
            SyncBacklog::Below(n) => Some(n),
            SyncBacklog::Strict => Some(1),
        }
    }

    /// Whether the wait has no wall-clock cap (CA10).
    pub fn is_strict(self) -> bool {
        self == SyncBacklog::Strict
    }
}

impl fmt::Display for SyncBacklog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SyncBacklog::Off => f.write_str("off"),
            SyncBacklog::Below(n) => write!(f, "{n}"),
            SyncBacklog::Strict => f.write_str("strict"),
        }
    }
}

impl FromStr for SyncBacklog {
    type Err = SettingsError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "off" | "false" => Ok(Self::Off),
            "1" => Ok(Self::Below(1)),
            "3" => Ok(Self::Below(3)),
            "5" => Ok(Self::Below(5)),
            "strict" => Ok(Self::Strict),
            _ => Err(SettingsError::Invalid {
                key: "advisor.syncBacklog",
                value: s.to_string(),
                allowed: SYNC_BACKLOG_ALLOWED,
            }),
        }
    }
}

impl Serialize for SyncBacklog {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for SyncBacklog {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = serde_json::Value::deserialize(d)?;
        let text = match &v {
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Number(n) => n.to_string(),
            serde_json::Value::Bool(false) => "off".to_string(),
            other => other.to_string(),
        };
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// A settings value that is not allowed, or a settings file that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingsError {
    /// A key has a value outside its allowed set.
    #[error("invalid value `{value}` for {key}: allowed values are {allowed}")]
    Invalid {
        /// The key's path.
        key: &'static str,
        /// The value found.
        value: String,
        /// The allowed values.
        allowed: &'static str,
    },
    /// A key of a settings file has a value outside its allowed set.
    #[error("invalid value `{value}` for {key} in {}: allowed values are {allowed}", file.display())]
    InvalidInFile {
        /// The file.
        file: PathBuf,
        /// The key's full path, e.g. `advisor.policy`.
        key: String,
        /// The value found, as written.
        value: String,
        /// The allowed values.
        allowed: String,
    },
    /// A settings file exists but cannot be read.
    #[error("cannot read {}: {message}", file.display())]
    Read {
        /// The file.
        file: PathBuf,
        /// Why.
        message: String,
    },
    /// A settings file is larger than the cap; nothing past the cap was read.
    #[error("{} is larger than the {limit} limit for settings files", file.display())]
    TooLarge {
        /// The file.
        file: PathBuf,
        /// The cap, for the message.
        limit: &'static str,
    },
    /// A settings file is not YAML, or not a mapping at its top level.
    #[error("{} is not a valid settings file: {message}", file.display())]
    NotYaml {
        /// The file.
        file: PathBuf,
        /// What the parser said.
        message: String,
    },
}

/// `advisor.toolBudget` when nothing sets it (SP1).
pub const DEFAULT_TOOL_BUDGET: u32 = 3;

/// The largest `advisor.toolBudget` (and roster `toolBudget`) allowed (SP1); the smallest
/// is 0.
pub const MAX_TOOL_BUDGET: u32 = 50;

/// The smallest `advisor.maxSpendRatio` (and roster `maxSpendRatio`) allowed (SP6).
pub const MIN_SPEND_RATIO: f64 = 0.01;

/// The largest `advisor.maxSpendRatio` (and roster `maxSpendRatio`) allowed (SP6).
pub const MAX_SPEND_RATIO: f64 = 10.0;

/// What a spend ceiling may be, as errors and warnings say it (SP6).
pub const SPEND_RATIO_ALLOWED: &str = "a number from 0.01 to 10";

/// What `advisor.judgeThreshold` may be, as errors say it (SP9).
pub const JUDGE_THRESHOLD_ALLOWED: &str = "a number from 0 to 1";

/// `advisor.judgeThreshold` when nothing sets it (SP9).
pub const DEFAULT_JUDGE_THRESHOLD: f64 = 0.2;

/// The `advisor:` block of the settings (K1) plus runtime knobs, with the documented
/// defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct AdvisorSettings {
    /// `advisor.enabled`.
    pub enabled: bool,
    /// `advisor.syncBacklog`: the catch-up of every advisor without its own (CA9).
    pub sync_backlog: SyncBacklog,
    /// `advisor.reviewMode` (CA1, CA5): the unnamed advisor's review mode.
    pub review_mode: ReviewMode,
    /// `advisor.reviewInterval` (CA2, CA5): the unnamed advisor's review interval, 1 or more.
    pub review_interval: u64,
    /// `advisor.subagents` (W7): each subagent session gets its own advisor.
    pub subagents: bool,
    /// `advisor.policy`.
    pub policy: DeliveryPolicy,
    /// `advisor.transcript`.
    pub transcript: TranscriptView,
    /// `advisor.immuneTurns` (D7).
    pub immune_turns: u32,
    /// `advisor.maxNotesPerUpdate` (D8): non-blocker notes per session update a review
    /// covers (a review of k coalesced updates may raise k times as many; default 4).
    pub max_notes_per_update: usize,
    /// The top-level `disabledProviders` (CA22): providers no advisor uses — a model of
    /// one is `no model`, a backup of one is skipped, and no key of one is read.
    pub disabled_providers: Vec<String>,
    /// Bound on tool rounds per review (G3).
    pub max_tool_rounds: usize,
    /// Bound on output tokens per model call (`advisor.maxOutputTokens`).
    pub max_output_tokens: u32,
    /// The syncBacklog wait cap (S1: 30 s).
    pub sync_wait_cap: Duration,
    /// Delay before retrying a failed review when the provider gave none (F1: 1 s).
    pub retry_delay: Duration,
    /// Consecutive failures that drop the backlog (F2: 3).
    pub max_consecutive_failures: u32,
    /// Context threshold in percent of the window (G5, `ADVISOR_COMPACT_AT`, clamped 50–95).
    pub compact_at_percent: u8,
    /// Absolute context threshold in tokens (`advisor.compaction.thresholdTokens`).
    pub compact_threshold_tokens: Option<u64>,
    /// `advisor.contextPromotion` (G5): the larger-window model role to promote to.
    pub context_promotion: Option<String>,
    /// `advisor.redactSecrets` (X5): replace credential-looking values before a delta
    /// leaves the process.
    pub redact_secrets: bool,
    /// `ADVISOR_NO_REVIEW`: make no model calls; delivery paths still work.
    pub no_review: bool,
    /// `advisor.maxNoteChars`: an `advise` note longer than this many characters is refused
    /// with a tool error and counted as dropped `tooLong` (D10).
    pub max_note_chars: usize,
    /// `advisor.requestTimeoutSecs`: the total limit of one model call, beside the idle
    /// timeout (M4); hitting it is a retryable failure (F1).
    pub request_timeout: Duration,
    /// `advisor.maxConcurrentReviews`: model calls in flight per provider across all
    /// sessions of the process (A6).
    pub max_concurrent_reviews: usize,
    /// `advisor.consult` (G8): whether the host may ask the advisor questions.
    pub consult: bool,
    /// The `retry:` block's backup-reviewer keys (P6).
    pub retry: RetrySettings,
    /// `advisor.evictStaleResults` (P4): before each review, replace the advisor's own
    /// stale read/search/find results by placeholders when that saves more than the
    /// prompt cache loses.
    pub evict_stale_results: bool,
    /// `advisor.toolBudget` (SP1): calls of workspace tools one review may make (0–50);
    /// a call past it is not run. `advise` is never counted.
    pub tool_budget: u32,
    /// `advisor.maxSpendRatio` (SP6): the advisor ÷ primary spend past which an advisor
    /// reviews only at the end of a run (twice it: paused); `None`: no ceiling.
    pub max_spend_ratio: Option<f64>,
    /// `advisor.judgeGate` (SP9): a judge model decides whether a WIP update is reviewed
    /// now or held for the next review.
    pub judge_gate: bool,
    /// `advisor.judgeThreshold` (SP9): the least probability of any judge question that
    /// sends a WIP update to review now.
    pub judge_threshold: f64,
    /// `modelRoles.judge` (SP9): the judge model's role; the gate is off without one.
    pub judge_role: Option<String>,
    /// `advisor.spendControls` (SP1–SP3): `false` turns the tool budget, the re-read
    /// answers and the bounded blocker lane off together, as before them, for measuring
    /// what they save; default on.
    pub spend_controls: bool,
    /// `advisor.gate`, `advisor.gateTimeoutMs`, `advisor.gateFailMode` (GT1–GT5): the
    /// action gate that reviews a risky tool call before it runs.
    pub gate: GateSettings,
    /// `advisor.hookTimeoutMs` (H9): how long `advisor hook` waits for the background
    /// process's answer, in milliseconds (50–600000, default 250).
    pub hook_timeout_ms: u64,
    /// `advisor.hookIdleMinutes` (H4): the background process of the hook hosts ends once
    /// no session has been open this long (0: never; default 10).
    pub hook_idle_minutes: u64,
}

impl Default for AdvisorSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            sync_backlog: SyncBacklog::Off,
            review_mode: ReviewMode::Turn,
            review_interval: 1,
            subagents: false,
            policy: DeliveryPolicy::Defer,
            transcript: TranscriptView::Expanded,
            immune_turns: 3,
            max_notes_per_update: 4,
            max_tool_rounds: 8,
            max_output_tokens: 4096,
            sync_wait_cap: Duration::from_secs(30),
            retry_delay: Duration::from_secs(1),
            max_consecutive_failures: 3,
            compact_at_percent: 80,
            compact_threshold_tokens: None,
            context_promotion: None,
            redact_secrets: true,
            no_review: false,
            max_note_chars: 2000,
            request_timeout: Duration::from_secs(300),
            max_concurrent_reviews: 16,
            consult: true,
            retry: RetrySettings::default(),
            evict_stale_results: true,
            tool_budget: DEFAULT_TOOL_BUDGET,
            disabled_providers: Vec::new(),
            max_spend_ratio: None,
            judge_gate: false,
            judge_threshold: DEFAULT_JUDGE_THRESHOLD,
            judge_role: None,
            spend_controls: true,
            gate: GateSettings::default(),
            hook_timeout_ms: DEFAULT_HOOK_TIMEOUT_MS,
            hook_idle_minutes: DEFAULT_HOOK_IDLE_MINUTES,
        }
    }
}

/// `advisor.hookTimeoutMs`'s default (H9).
pub const DEFAULT_HOOK_TIMEOUT_MS: u64 = 250;
/// `advisor.hookIdleMinutes`'s default (H4).
pub const DEFAULT_HOOK_IDLE_MINUTES: u64 = 10;

impl AdvisorSettings {
    /// Whether `disabledProviders` names `provider` (CA22; names compare ignoring ASCII
    /// case).
    pub fn provider_disabled(&self, provider: &str) -> bool {
        provider_listed(&self.disabled_providers, provider)
    }

    /// Applies `ADVISOR_COMPACT_AT` (G5): clamped to 50–95; junk or 0 gives 80.
    pub fn with_compact_at(mut self, raw: Option<&str>) -> Self {
        self.compact_at_percent = parse_compact_at(raw);
        self
    }

    /// Applies the environment (K1): `ADVISOR_COMPACT_AT` and `ADVISOR_NO_REVIEW`.
    pub fn with_env(self, env: &SettingsEnv) -> Self {
        let mut settings = self.with_compact_at(env.compact_at.as_deref());
        settings.no_review = settings.no_review || env.no_review;
        settings
    }
}

/// Whether `list` (a `disabledProviders` value, CA22) names `provider`, ignoring ASCII case.
pub fn provider_listed(list: &[String], provider: &str) -> bool {
    list.iter().any(|p| p.eq_ignore_ascii_case(provider.trim()))
}

/// Parses `ADVISOR_COMPACT_AT` (G5): clamped to 50–95; absent, junk or 0 gives 80.
pub(crate) fn parse_compact_at(raw: Option<&str>) -> u8 {
    match raw.and_then(|s| s.trim().parse::<u64>().ok()) {
        None | Some(0) => 80,
        Some(n) => n.clamp(50, 95) as u8,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ca1_review_mode_parses_its_two_values_only() {
        assert_eq!("turn".parse::<ReviewMode>().ok(), Some(ReviewMode::Turn));
        assert_eq!(
            "agent-end".parse::<ReviewMode>().ok(),
            Some(ReviewMode::AgentEnd)
        );
        assert_eq!(ReviewMode::AgentEnd.to_string(), "agent-end");
        let err = "every-step".parse::<ReviewMode>().unwrap_err().to_string();
        assert!(
            err.contains("advisor.reviewMode") && err.contains("turn, agent-end"),
            "{err}"
        );
    }

    #[test]
    fn s1_sync_backlog_parses_allowed_values_only() {
        assert_eq!("off".parse::<SyncBacklog>(), Ok(SyncBacklog::Off));
        assert_eq!("3".parse::<SyncBacklog>(), Ok(SyncBacklog::Below(3)));
        let err = "2".parse::<SyncBacklog>().unwrap_err().to_string();
        assert!(
            err.contains("advisor.syncBacklog") && err.contains("off, 1, 3, 5, strict"),
            "{err}"
        );
    }

    #[test]
    fn ca9_ca10_strict_is_a_sync_backlog_value_with_threshold_one() {
        assert_eq!("strict".parse::<SyncBacklog>(), Ok(SyncBacklog::Strict));
        assert_eq!(SyncBacklog::Strict.threshold(), Some(1));
        assert!(SyncBacklog::Strict.is_strict() && !SyncBacklog::Below(1).is_strict());
        assert_eq!(SyncBacklog::Strict.to_string(), "strict");
    }

    #[test]
    fn g5_compact_at_is_clamped_and_defaults() {
        assert_eq!(parse_compact_at(None), 80);
        assert_eq!(parse_compact_at(Some("junk")), 80);
        assert_eq!(parse_compact_at(Some("0")), 80);
        assert_eq!(parse_compact_at(Some("10")), 50);
        assert_eq!(parse_compact_at(Some("99")), 95);
        assert_eq!(parse_compact_at(Some("70")), 70);
    }
}
