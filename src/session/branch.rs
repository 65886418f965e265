//! What reading a session file gives (SPEC L1, L6): its header, the entries of its current
//! branch and what was skipped, whichever format it was read from. The pi reader and the
//! host readers (Claude Code, Codex) all build these; none of them is reached back up.

use std::sync::Arc;

use super::diagnostics::Diagnostics;
use crate::domain::transcript::TranscriptMessage;

/// Which program wrote a session file (SPEC L1, L6): told from the file's first lines,
/// never from its name.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum SessionFormat {
    /// A pi or oh-my-pi session file (`{"type":"session",…}` header).
    #[default]
    Pi,
    /// A Claude Code transcript (`~/.claude/projects/<project>/<session>.jsonl`).
    ClaudeCode,
    /// A Codex CLI rollout (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`).
    Codex,
}

impl SessionFormat {
    /// The format's name as the command line and the hooks spell it: `pi`, `claude-code`,
    /// `codex`.
    pub fn name(self) -> &'static str {
        match self {
            SessionFormat::Pi => "pi",
            SessionFormat::ClaudeCode => "claude-code",
            SessionFormat::Codex => "codex",
        }
    }
}

/// The session header: the `{"type":"session",…}` line (plus oh-my-pi's title slot), or
/// what a Claude Code transcript or Codex rollout says about its session.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionHeader {
    /// Which program wrote the file.
    pub format: SessionFormat,
    /// The version of the program that wrote the file, when the file says (Claude Code's
    /// `version` field, Codex's `session_meta.cli_version`; pi files do not say).
    pub cli_version: Option<String>,
    /// Format version: the header's `version`, or 1 when absent (version 1 headers have none).
    /// Host formats (Claude Code, Codex) have none of their own and read as 1.
    pub version: u32,
    /// The session id.
    pub id: Option<String>,
    /// The working directory the session ran in.
    pub cwd: Option<String>,
    /// The title: oh-my-pi's leading title slot when present, else the header's `title`.
    pub title: Option<String>,
    /// The header's ISO timestamp.
    pub timestamp: Option<String>,
    /// The session this one was forked from (`parentSession`, or version 1's `branchedFrom`).
    pub parent_session: Option<String>,
}

/// One entry of the current branch that matters to the transcript.
#[derive(Debug, Clone, PartialEq)]
pub enum BranchEntry {
    /// A message the primary model sees: `message` entries as they are, `custom_message`
    /// entries as [`TranscriptMessage::Custom`], `branch_summary` entries as [`TranscriptMessage::BranchSummary`].
    /// Shared, so that the driver and the transcript take the message without copying it.
    Message(Arc<TranscriptMessage>),
    /// The primary's context was compacted here.
    Compaction {
        /// The summary that replaces the older messages.
        summary: String,
        /// Index (into [`SessionBranch::entries`]) of the first entry kept verbatim: the
        /// transcript after this compaction is the summary followed by the messages of
        /// `entries[first_kept..own index]`. Equal to the compaction's own index when nothing
        /// is kept (the first kept entry is unknown or not on the branch).
        first_kept: usize,
        /// The context size the primary reported before compacting, when recorded.
        tokens_before: Option<u64>,
    },
    /// oh-my-pi's `reset_boundary` (its `/clear`): the primary's context starts afresh
    /// after it, empty; the messages before it are no longer sent.
    ResetBoundary,
}

/// The current branch of a session file, from the root to the last entry.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionBranch {
    /// The header.
    pub header: SessionHeader,
    /// The branch's entries in order (entries that carry no message are left out and
    /// counted in [`Diagnostics::skipped`]).
    pub entries: Vec<BranchEntry>,
    /// Malformed lines, skipped entry types and abandoned entries.
    pub diagnostics: Diagnostics,
}

impl BranchEntry {
    /// The message, when the entry is one.
    pub fn message(&self) -> Option<&TranscriptMessage> {
        match self {
            BranchEntry::Message(m) => Some(m),
            BranchEntry::Compaction { .. } | BranchEntry::ResetBoundary => None,
        }
    }
}

impl SessionBranch {
    /// The messages of the branch, in order (compactions left out).
    pub fn messages(&self) -> impl Iterator<Item = &TranscriptMessage> {
        self.entries.iter().filter_map(BranchEntry::message)
    }

    /// Number of compaction entries on the branch.
    pub fn compactions(&self) -> usize {
        self.entries
            .iter()
            .filter(|e| matches!(e, BranchEntry::Compaction { .. }))
            .count()
    }
}
