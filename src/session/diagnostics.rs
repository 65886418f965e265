//! The bottom of session reading (SPEC L1): the caps a read runs under, how it fails, what
//! it skipped and why, and the wording of a bad line. The opening, the tree index and the
//! reader all build on these; none of them reaches back up.

use std::collections::BTreeMap;
use std::io;
use std::path::PathBuf;

/// Sentinel for "no symbol / no entry" in the compact tree index.
pub(super) const NONE: u32 = u32::MAX;

/// Default cap on one line of a session file (64 MiB); see [`ReadLimits::max_line_bytes`].
pub const DEFAULT_MAX_LINE_BYTES: usize = 64 << 20;

/// Default cap on what is read from standard input (4 GiB); see
/// [`ReadLimits::max_stdin_bytes`].
pub const DEFAULT_MAX_STDIN_BYTES: u64 = 4 << 30;

/// Size caps applied while a session is read, before anything is buffered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadLimits {
    /// A line longer than this many bytes (its line break not counted) is never buffered:
    /// it is read in chunks and discarded up to the next newline, and reported in
    /// [`Diagnostics::malformed`] with its line number.
    pub max_line_bytes: usize,
    /// Standard input longer than this is an error ([`SessionError::StdinTooLarge`]); it
    /// is spooled to an unlinked temporary file, lines longer than `max_line_bytes` cut
    /// short on the way.
    pub max_stdin_bytes: u64,
    /// The file may still be growing (a host is writing it while it is read, as the hook
    /// process re-reads a Claude Code transcript or Codex rollout at each hook event): a
    /// last line without its line break is taken as not yet written whole and skipped
    /// silently, not reported as malformed (SPEC L6). Host formats only; a pi session is
    /// read as always.
    pub growing: bool,
    /// Read a subagent's own transcript (a Claude Code `agent-*.jsonl` file whose lines are
    /// all `isSidechain: true`, a Codex rollout of a sub-agent thread) as a session. Off by
    /// default: such a file reads as empty, its entries counted in [`Diagnostics::skipped`]
    /// under `sidechain` / `subagent`. The user's `advisor.subagents` setting (W7) is what
    /// a host passes here. A subagent's lines are never merged into the main session's
    /// transcript either way (SPEC L6).
    pub include_subagents: bool,
}

impl Default for ReadLimits {
    fn default() -> Self {
        Self {
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            max_stdin_bytes: DEFAULT_MAX_STDIN_BYTES,
            growing: false,
            include_subagents: false,
        }
    }
}

/// Failure to read a session file at all. A bad line is never one of these: it is recorded
/// in [`Diagnostics::malformed`] and skipped.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The file could not be opened or read.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: io::Error,
    },
    /// The file holds no line at all (or only blank lines).
    #[error("{} is empty", path.display())]
    Empty {
        /// The file.
        path: PathBuf,
    },
    /// None of the first lines is a `{"type":"session",…}` header, nor a line of a Claude
    /// Code transcript or a Codex rollout.
    #[error("{} is not a session file (no session header in its first lines)", path.display())]
    NotASession {
        /// The file.
        path: PathBuf,
    },
    /// The path names a directory, a FIFO, a device or a socket: only regular files (and
    /// standard input, `-`) are read as sessions.
    #[error(
        "{} is not a regular file (sessions are read from regular files, or `-` for standard input)",
        path.display()
    )]
    NotAFile {
        /// The path.
        path: PathBuf,
    },
    /// Standard input held more than [`ReadLimits::max_stdin_bytes`].
    #[error("standard input holds more than {limit} bytes")]
    StdinTooLarge {
        /// The cap.
        limit: u64,
    },
}

/// What the reader skipped, and why.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Diagnostics {
    /// Lines that could not be used: 1-based line number and the reason (bad JSON, no
    /// `type`, a field of the wrong shape). Sorted by line number.
    pub malformed: Vec<(usize, String)>,
    /// Entries on the current branch that carry no message, by entry type (`model_change`,
    /// `label`, `custom`, unknown types…).
    pub skipped: BTreeMap<String, usize>,
    /// Entries not on the current branch (abandoned branches of a version 2/3 tree).
    pub off_branch: usize,
}

impl Diagnostics {
    /// Total number of skipped entries on the branch, all types together.
    pub fn skipped_total(&self) -> usize {
        self.skipped.values().sum()
    }

    pub(super) fn skip(&mut self, kind: &str) {
        match self.skipped.get_mut(kind) {
            Some(n) => *n += 1,
            None => {
                self.skipped.insert(kind.to_string(), 1);
            }
        }
    }
}

pub(super) fn describe_json_error(e: &serde_json::Error) -> String {
    match e.classify() {
        serde_json::error::Category::Eof => format!("truncated JSON (column {})", e.column()),
        serde_json::error::Category::Syntax | serde_json::error::Category::Io => {
            format!("invalid JSON: {e}")
        }
        serde_json::error::Category::Data => format!("unexpected entry shape: {e}"),
    }
}
