//! WATCHDOG.md discovery and expansion (SPEC §8).
//!
//! The plain logic behind the `WatchdogLoader` actor and `advisor watchdog`:
//!
//! - [`WatchdogConfig`] says where to look; it is built from values the caller read from the
//!   environment ([`WatchdogConfig::from_env_values`]), so nothing here reads the process
//!   environment.
//! - `candidates` lists the files to consider in prompt order (W1, W2, W4).
//! - `expand_imports` replaces `@path` tokens by the files they name (W6).
//! - [`load`] reads everything and formats one block per file (W3, W5), together with a
//!   [`Fingerprint`] of what it looked at; [`refresh`] compares that fingerprint with the
//!   disk's metadata and rebuilds only when something changed (W8).
//!
//! All functions that touch the filesystem are blocking; actors call them from
//! `tokio::task::spawn_blocking`.
//!
//! Decisions where the rules leave room:
//! - A candidate that is a directory (named `WATCHDOG.md`) is skipped silently, like a
//!   missing one; a FIFO, a device or a socket is skipped with a warning, and an import of
//!   one stays literal with a warning. Such a file is never opened for a wait.
//! - A project file (found by the walk) that is a symlink leading out of its project root
//!   is skipped with a warning, like an import leading out (W6 security): a cloned
//!   repository's `WATCHDOG.md -> /proc/self/environ` is the same leak as an `@` import.
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
mod project;
mod read;

use std::path::{Path, PathBuf};

pub use fingerprint::{stamp, Fingerprint, Stamp};
pub use imports::MAX_IMPORT_DEPTH;
pub use project::{ContextFile, InstructionFiles, MAX_CONTEXT_FILE_BYTES, MAX_CONTEXT_TOTAL_BYTES};
pub use read::{MAX_FILE_BYTES, MAX_TOTAL_BYTES};

pub(crate) use discovery::{candidates, candidates_named, walk_dirs, Candidate, CandidateKind};
pub(crate) use imports::expand_imports_within;
pub(crate) use paths::{expand_tilde, normalize_lexically};
pub(crate) use project::{bound_context_files, format_project_context};
pub(crate) use read::{read_text, ReadError};

use crate::redact::Redactor;
use crate::regular_file::{clip, SHOWN_CHARS};

/// The file name looked for at every level and in the agent directory.
pub const WATCHDOG_FILE: &str = "WATCHDOG.md";

/// The agent directory used when `PI_CODING_AGENT_DIR` is not set, relative to home.
pub const DEFAULT_AGENT_DIR: &str = ".omp/agent";

/// The part of the system prompt after the built-in prompt: the project's instruction
/// files (P8), the watchdog blocks (W5) and the single-child-repository hint (P8).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WatchdogPrompt {
    /// One `Especially pay attention to:` block per file, in prompt order (W4, W5).
    pub blocks: Vec<String>,
    /// Warnings about unreadable files (W3), each reported once per change.
    pub warnings: Vec<String>,
    /// The `<project-context>` block, when the project has instruction files (P8).
    pub project_context: Option<String>,
    /// The attention block naming the one repository under a working directory that is
    /// outside git (P8).
    pub hint: Option<String>,
}

impl WatchdogPrompt {
    /// What goes into the system prompt after the built-in prompt, parts a blank line
    /// apart: the project context, the watchdog blocks, the hint (P8, W5).
    pub fn joined(&self) -> String {
        let parts: Vec<&str> = self
            .project_context
            .iter()
            .chain(&self.blocks)
            .chain(&self.hint)
            .map(String::as_str)
            .collect();
        parts.join("\n\n")
    }
}

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
    /// Which instruction files the agent reads (P8): oh-my-pi's unless the advisor watches
    /// a hook host.
    pub instructions: InstructionFiles,
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
            instructions: InstructionFiles::Pi,
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
pub(crate) fn attention_block(content: &str) -> String {
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

/// Discovers, reads and expands every WATCHDOG file for `config`, with secret redaction
/// (X5) on. Blocking.
pub fn load(config: &WatchdogConfig) -> Loaded {
    match Redactor::new() {
        Ok(redactor) => load_with(config, Some(&redactor)),
        Err(err) => {
            let mut loaded = load_with(config, None);
            loaded
                .prompt
                .warnings
                .push(format!("watchdog: blocks not redacted: {err}"));
            loaded
        }
    }
}

/// [`load`] with a given redactor (`None`: redaction off, `advisor.redactSecrets: false`).
///
/// Project files (those found by the walk) import only from inside their project root
/// (`project_root`); one that is itself a symlink leading out of its project is skipped
/// with a warning. Each file is used up to [`MAX_FILE_BYTES`], all of them up to
/// [`MAX_TOTAL_BYTES`]; what is cut is said in a warning. Blocking.
pub fn load_with(config: &WatchdogConfig, redactor: Option<&Redactor>) -> Loaded {
    let found = candidates(config);
    let confinement = Confinement::new(config);
    let mut fingerprint = Fingerprint::default();
    let mut blocks = Vec::new();
    let mut warnings = Vec::new();
    let mut budget = Budget::default();
    for candidate in &found {
        fingerprint.push_candidate(&candidate.path);
        if let Err(err) = confinement.check(candidate) {
            if !matches!(err, ReadError::Missing) {
                warnings.push(unreadable_warning(&candidate.path, &err));
            }
            continue;
        }
        let text = match budget.read(&candidate.path, &mut warnings) {
            Ok(text) => text,
            Err(ReadError::Missing | ReadError::NotAFile | ReadError::OverBudget) => continue,
            Err(err) => {
                warnings.push(unreadable_warning(&candidate.path, &err));
                continue;
            }
        };
        let mut seen = |path: &Path| fingerprint.push_import(path);
        let expanded = confinement.expand(&text, candidate, &mut budget, &mut seen, &mut warnings);
        let content = match redactor {
            Some(redactor) => redactor.redact(&expanded).into_owned(),
            None => expanded,
        };
        blocks.push(attention_block(&content));
    }
    if budget.cut {
        warnings.push(format!(
            "watchdog: the watchdog files pass {} in all; the rest is left out",
            size_text(MAX_TOTAL_BYTES)
        ));
    }
    let files = project::discover_context_files(config, &mut fingerprint, &mut warnings);
    let project_context = project::format_project_context(&files, redactor);
    let hint = project::child_repository_hint(config, &mut fingerprint);
    for warning in &warnings {
        tracing::warn!(target: "advisor::watchdog", "{warning}");
    }
    tracing::debug!(
        target: "advisor::watchdog",
        blocks = blocks.len(),
        files_read = budget.files,
        "watchdog files loaded"
    );
    Loaded {
        prompt: WatchdogPrompt {
            blocks,
            warnings,
            project_context,
            hint,
        },
        fingerprint,
        files_read: budget.files,
    }
}

/// Where the files of one load may come from and import from (W6 security): a project file
/// (one found by the walk) must live inside its project and imports only from there; the
/// user's own file may import from anywhere. Shared by WATCHDOG.md and the roster's
/// WATCHDOG.yml (§15).
pub(crate) struct Confinement {
    root: PathBuf,
    canonical_root: Option<PathBuf>,
    home: Option<PathBuf>,
}

impl Confinement {
    /// The confinement of the files discovered for `config`. Blocking (looks for `.git`
    /// and resolves the root's symlinks).
    pub(crate) fn new(config: &WatchdogConfig) -> Self {
        let root = project_root(&config.cwd, config.home.as_deref());
        let canonical_root = std::fs::canonicalize(&root).ok();
        Self {
            root,
            canonical_root,
            home: config.home.clone(),
        }
    }

    /// Whether `candidate` may be read: a project file that is a symlink leading out of its
    /// project is [`ReadError::LeadsOut`]; a missing one may answer [`ReadError::Missing`].
    /// The user file always passes. Blocking.
    pub(crate) fn check(&self, candidate: &Candidate) -> Result<(), ReadError> {
        if candidate.kind == CandidateKind::User {
            return Ok(());
        }
        check_inside_project(candidate, &self.root, self.canonical_root.as_deref())
    }

    /// Expands the `@` imports of `text`, the content of `candidate`, reading through
    /// `budget`; a project file's imports stay inside its project. `seen` is told every
    /// import path tried; warnings about imports left literal go to `warnings`. Blocking.
    pub(crate) fn expand(
        &self,
        text: &str,
        candidate: &Candidate,
        budget: &mut Budget,
        seen: &mut dyn FnMut(&Path),
        warnings: &mut Vec<String>,
    ) -> String {
        let project = candidate.kind != CandidateKind::User;
        let mut import_warnings = Vec::new();
        let mut reader = |path: &Path| {
            seen(path);
            let path = match (project, self.canonical_root.as_deref()) {
                (true, Some(inside)) => canonical_inside(path, inside)?,
                (true, None) => {
                    return Err(ReadError::Outside {
                        root: self.root.clone(),
                    })
                }
                (false, _) => path.to_path_buf(),
            };
            budget.read(&path, &mut import_warnings)
        };
        let scope = project.then_some(self.root.as_path());
        let expansion = expand_imports_within(
            text,
            &candidate.path,
            self.home.as_deref(),
            scope,
            &mut reader,
        );
        warnings.extend(import_warnings);
        warnings.extend(expansion.warnings);
        expansion.text
    }
}

/// The directory a project file's imports must stay in (W6 security): the git repository
/// root when the working directory is inside one, else the working directory itself.
/// Blocking (looks for `.git`).
pub(crate) fn project_root(cwd: &Path, home: Option<&Path>) -> PathBuf {
    let walked = walk_dirs(cwd, home);
    let start = walked.first().cloned().unwrap_or_else(|| cwd.to_path_buf());
    match walked.last() {
        Some(last) if last.join(".git").symlink_metadata().is_ok() => last.clone(),
        _ => start,
    }
}

/// What the files of one load may still use: the total cap, counted down.
pub(crate) struct Budget {
    left: usize,
    /// Whether something was left out or cut for the total cap.
    pub(crate) cut: bool,
    /// How many files were read.
    pub(crate) files: usize,
}

impl Default for Budget {
    fn default() -> Self {
        Self {
            left: MAX_TOTAL_BYTES,
            cut: false,
            files: 0,
        }
    }
}

impl Budget {
    /// Reads one file within the caps; a cut file adds a warning.
    pub(crate) fn read(
        &mut self,
        path: &Path,
        warnings: &mut Vec<String>,
    ) -> Result<String, ReadError> {
        if self.left == 0 {
            self.cut = true;
            return Err(ReadError::OverBudget);
        }
        let read = read_text(path, MAX_FILE_BYTES)?;
        self.files += 1;
        let mut text = read.content;
        if read.truncated {
            warnings.push(format!(
                "watchdog: {} is over {}; only its first {} are used",
                clip(&path.display().to_string(), SHOWN_CHARS),
                size_text(MAX_FILE_BYTES),
                size_text(MAX_FILE_BYTES),
            ));
        }
        if text.len() > self.left {
            let mut end = self.left;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            text.truncate(end);
            self.cut = true;
        }
        self.left -= text.len();
        Ok(text)
    }
}

/// A project candidate must really live in its project: its canonical path (symlinks
/// resolved) inside the canonical project root, or, for a file above the working
/// directory outside any repository, inside the directory where the walk found it.
fn check_inside_project(
    candidate: &Candidate,
    root: &Path,
    canonical_root: Option<&Path>,
) -> Result<(), ReadError> {
    let owner = match candidate.kind {
        CandidateKind::ProjectOmp => candidate.path.parent().and_then(Path::parent),
        _ => candidate.path.parent(),
    };
    let Some(owner) = owner else {
        return Ok(());
    };
    let within = if owner.starts_with(root) {
        canonical_root.map(Path::to_path_buf)
    } else {
        std::fs::canonicalize(owner).ok()
    };
    let Some(within) = within else {
        return Err(ReadError::Missing);
    };
    match canonical_inside(&candidate.path, &within) {
        Ok(_) => Ok(()),
        Err(ReadError::Outside { root }) => Err(ReadError::LeadsOut { root }),
        Err(err) => Err(err),
    }
}

/// The canonical form of `path` when it lies inside `root` (canonical already); a path
/// whose symlinks lead out is [`ReadError::Outside`].
fn canonical_inside(path: &Path, root: &Path) -> Result<PathBuf, ReadError> {
    let canonical = std::fs::canonicalize(path).map_err(|err| match err.kind() {
        std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory => ReadError::Missing,
        _ => ReadError::Io(err),
    })?;
    if canonical.starts_with(root) {
        Ok(canonical)
    } else {
        Err(ReadError::Outside {
            root: root.to_path_buf(),
        })
    }
}

/// A byte count as the caps are written: `256 KiB`, `1 MiB`.
pub(crate) fn size_text(bytes: usize) -> String {
    if bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{} KiB", bytes >> 10)
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

/// [`refresh`] with a given redactor (`None`: redaction off); see [`load_with`].
pub fn refresh_with(
    config: &WatchdogConfig,
    previous: Option<&Fingerprint>,
    redactor: Option<&Redactor>,
) -> Refresh {
    match previous {
        Some(fingerprint) if fingerprint.is_current(config) => Refresh::Unchanged,
        _ => Refresh::Rebuilt(load_with(config, redactor)),
    }
}

/// The warning for a file that exists but cannot be used.
fn unreadable_warning(path: &Path, err: &ReadError) -> String {
    format!(
        "watchdog: skipped {}: {err}",
        clip(&path.display().to_string(), SHOWN_CHARS)
    )
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
