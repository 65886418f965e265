//! WATCHDOG.md discovery and expansion (SPEC §8).
//!
//! The plain logic behind the `WatchdogLoader` actor and `advisor watchdog`:
//!
//! - [`WatchdogConfig`] says where to look; it is built from values the caller read from the
//!   environment ([`WatchdogConfig::from_env_values`]), so nothing here reads the process
//!   environment.
//! - [`candidates`] lists the files to consider in prompt order (W1, W2, W4).
//! - [`expand_imports`] replaces `@path` tokens by the files they name (W6).
//! - [`load`] reads everything and formats one block per file (W3, W5), together with a
//!   [`Fingerprint`] of what it looked at; [`refresh`] compares that fingerprint with the
//!   disk's metadata and rebuilds only when something changed (W8).
//!
//! All functions that touch the filesystem are blocking; actors call them from
//! `tokio::task::spawn_blocking`.
//!
//! Decisions where the rules leave room:
//! - A candidate that exists but is not a regular file (a directory named `WATCHDOG.md`)
//!   is skipped silently, like a missing one.
//! - A file that is not valid UTF-8 is unreadable: a top-level WATCHDOG file is skipped with
//!   a warning, an imported one leaves its `@path` text in place, also with a warning. No
//!   lossy decoding: replacement characters in a prompt help nobody.
//! - The walk includes the directory where it stops (the repository root, the home
//!   directory, or the filesystem root).
//! - A path reached twice (the agent directory inside the walked tree) yields one block, in
//!   its first position.

mod discovery;
mod fingerprint;
mod imports;
mod paths;
mod read;

use std::path::{Path, PathBuf};

pub use discovery::{candidates, walk_dirs, Candidate, CandidateKind};
pub use fingerprint::{stamp, Fingerprint, Stamp};
pub use imports::{expand_imports, Expansion, MAX_IMPORT_DEPTH};
pub use paths::{expand_tilde, normalize_lexically};
pub use read::{read_text, ReadError};

use crate::messages::watchdog::WatchdogPrompt;

/// The file name looked for at every level and in the agent directory.
pub const WATCHDOG_FILE: &str = "WATCHDOG.md";

/// The agent directory used when `PI_CODING_AGENT_DIR` is not set, relative to home.
pub const DEFAULT_AGENT_DIR: &str = ".omp/agent";

/// Where to look for WATCHDOG.md files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchdogConfig {
    /// The working directory the upward walk starts from; should be absolute.
    pub cwd: PathBuf,
    /// The user agent directory holding the user file, `None` when it cannot be known
    /// (neither `PI_CODING_AGENT_DIR` nor a home directory).
    pub agent_dir: Option<PathBuf>,
    /// The home directory: where the walk stops outside a repository, and what `~`
    /// means in imports.
    pub home: Option<PathBuf>,
}

impl WatchdogConfig {
    /// Builds a configuration from values the caller read from the environment:
    /// `pi_coding_agent_dir` is `PI_CODING_AGENT_DIR` (blank counts as unset; `~` expanded),
    /// defaulting to `~/.omp/agent`; `home` is the home directory.
    pub fn from_env_values(
        cwd: PathBuf,
        pi_coding_agent_dir: Option<String>,
        home: Option<PathBuf>,
    ) -> Self {
        let agent_dir = match pi_coding_agent_dir.as_deref().map(str::trim) {
            Some(dir) if !dir.is_empty() => expand_tilde(dir, home.as_deref()),
            _ => home.as_ref().map(|home| home.join(DEFAULT_AGENT_DIR)),
        };
        Self {
            cwd,
            agent_dir,
            home,
        }
    }

    /// The same user settings for another working directory: a subagent's advisor reruns
    /// discovery from the subagent's own working directory (W7).
    pub fn with_cwd(&self, cwd: impl Into<PathBuf>) -> Self {
        Self {
            cwd: cwd.into(),
            ..self.clone()
        }
    }

    /// The user file, `<agentDir>/WATCHDOG.md`, when the agent directory is known.
    pub fn user_file(&self) -> Option<PathBuf> {
        self.agent_dir.as_ref().map(|dir| dir.join(WATCHDOG_FILE))
    }
}

/// Wraps one file's expanded content into its prompt block (W5). The content is neither
/// trimmed nor escaped.
pub fn attention_block(content: &str) -> String {
    format!("Especially pay attention to:\n<attention>\n{content}\n</attention>")
}

/// The result of one full load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loaded {
    /// The blocks and the warnings of this load.
    pub prompt: WatchdogPrompt,
    /// What the load looked at, to tell later whether it is still current (W8).
    pub fingerprint: Fingerprint,
    /// How many files were read (WATCHDOG files and imports).
    pub files_read: usize,
}

/// Discovers, reads and expands every WATCHDOG file for `config`. Blocking.
pub fn load(config: &WatchdogConfig) -> Loaded {
    let found = candidates(config);
    let mut fingerprint = Fingerprint::default();
    let mut blocks = Vec::new();
    let mut warnings = Vec::new();
    let mut files_read = 0;
    for candidate in &found {
        fingerprint.push_candidate(&candidate.path);
        let text = match read_text(&candidate.path) {
            Ok(text) => text,
            Err(ReadError::Missing | ReadError::NotAFile) => continue,
            Err(err) => {
                warnings.push(unreadable_warning(&candidate.path, &err));
                continue;
            }
        };
        files_read += 1;
        let mut reader = |path: &Path| {
            fingerprint.push_import(path);
            let result = read_text(path);
            if result.is_ok() {
                files_read += 1;
            }
            result
        };
        let expansion = expand_imports(&text, &candidate.path, config.home.as_deref(), &mut reader);
        warnings.extend(expansion.warnings);
        blocks.push(attention_block(&expansion.text));
    }
    for warning in &warnings {
        tracing::warn!(target: "advisor::watchdog", "{warning}");
    }
    tracing::debug!(
        target: "advisor::watchdog",
        blocks = blocks.len(),
        files_read,
        "watchdog files loaded"
    );
    Loaded {
        prompt: WatchdogPrompt { blocks, warnings },
        fingerprint,
        files_read,
    }
}

/// The outcome of [`refresh`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refresh {
    /// Nothing changed since the previous load; nothing was read.
    Unchanged,
    /// Something changed (or there was no previous load): a fresh load.
    Rebuilt(Loaded),
}

/// Reloads only when `previous` no longer matches the disk's metadata (W8): a discovered or
/// imported file changed, appeared or disappeared, or the candidate list itself changed.
/// Blocking.
pub fn refresh(config: &WatchdogConfig, previous: Option<&Fingerprint>) -> Refresh {
    match previous {
        Some(fingerprint) if fingerprint.is_current(config) => Refresh::Unchanged,
        _ => Refresh::Rebuilt(load(config)),
    }
}

/// The warning for a file that exists but cannot be used.
fn unreadable_warning(path: &Path, err: &ReadError) -> String {
    format!("watchdog: skipped {}: {err}", path.display())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn w1_agent_dir_defaults_to_omp_agent_under_home() {
        let config = WatchdogConfig::from_env_values(
            PathBuf::from("/work"),
            None,
            Some(PathBuf::from("/home/u")),
        );
        assert_eq!(config.agent_dir, Some(PathBuf::from("/home/u/.omp/agent")));
        assert_eq!(
            config.user_file(),
            Some(PathBuf::from("/home/u/.omp/agent/WATCHDOG.md"))
        );
    }

    #[test]
    fn w1_pi_coding_agent_dir_expands_tilde() {
        let home = Some(PathBuf::from("/home/u"));
        let tilde =
            WatchdogConfig::from_env_values("/w".into(), Some("~/agents".into()), home.clone());
        assert_eq!(tilde.agent_dir, Some(PathBuf::from("/home/u/agents")));
        let bare = WatchdogConfig::from_env_values("/w".into(), Some("~".into()), home.clone());
        assert_eq!(bare.agent_dir, Some(PathBuf::from("/home/u")));
        let absolute =
            WatchdogConfig::from_env_values("/w".into(), Some("/opt/agent".into()), home);
        assert_eq!(absolute.agent_dir, Some(PathBuf::from("/opt/agent")));
    }

    #[test]
    fn w1_blank_pi_coding_agent_dir_counts_as_unset() {
        let config = WatchdogConfig::from_env_values(
            "/w".into(),
            Some("  ".into()),
            Some(PathBuf::from("/h")),
        );
        assert_eq!(config.agent_dir, Some(PathBuf::from("/h/.omp/agent")));
    }

    #[test]
    fn w1_no_home_and_no_variable_means_no_user_file() {
        let config = WatchdogConfig::from_env_values("/w".into(), None, None);
        assert_eq!(config.agent_dir, None);
        assert_eq!(config.user_file(), None);
        let tilde = WatchdogConfig::from_env_values("/w".into(), Some("~/a".into()), None);
        assert_eq!(tilde.agent_dir, None);
    }

    #[test]
    fn w7_with_cwd_keeps_user_settings() {
        let config =
            WatchdogConfig::from_env_values("/a".into(), Some("/agent".into()), Some("/h".into()));
        let sub = config.with_cwd("/a/sub");
        assert_eq!(sub.cwd, PathBuf::from("/a/sub"));
        assert_eq!(sub.agent_dir, config.agent_dir);
        assert_eq!(sub.home, config.home);
    }

    #[test]
    fn w5_block_wraps_content_untrimmed() {
        assert_eq!(
            attention_block("  keep <me> & spaces\n"),
            "Especially pay attention to:\n<attention>\n  keep <me> & spaces\n\n</attention>"
        );
        assert_eq!(
            attention_block(""),
            "Especially pay attention to:\n<attention>\n\n</attention>"
        );
    }
}
