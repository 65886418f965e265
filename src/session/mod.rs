//! Session files (SPEC L1) and the host-driving sequence used by `advisor render` and
//! `advisor replay` (SPEC L2, L3).
//!
//! [`read_session`] streams a session file and returns its current branch; [`SessionDriver`]
//! walks that branch as a host would, yielding [`HostStep`]s over a shared transcript.
//!
//! # Formats read
//!
//! A session file is JSON lines. The first line is the header,
//! `{"type":"session","id":…,"timestamp":…,"cwd":…}`, with a `version` field from version 2
//! on (absent means version 1). oh-my-pi writes a fixed-width title slot line,
//! `{"type":"title","v":1,"title":…,"pad":"   …"}`, before the header; its title becomes
//! [`SessionHeader::title`]. Every other line is an entry with a `type`:
//!
//! - `message`: one transcript message under `message` (roles `user`, `developer`,
//!   `assistant`, `toolResult`, `bashExecution`, `pythonExecution`, `custom`,
//!   `branchSummary`, `compactionSummary`; unknown roles and block types are kept opaque).
//!   Version 2 called the `custom` role `hookMessage`; it is read as `custom`.
//! - `custom_message`: an extension's message that the model sees as a user message
//!   (`customType`, `content` as a string or text/image blocks, `display`, `details`); read as
//!   a [`TranscriptMessage::Custom`](crate::domain::transcript::TranscriptMessage::Custom).
//! - `branch_summary`: a summary of an abandoned branch (`summary`, `fromId`); read as a
//!   [`TranscriptMessage::BranchSummary`](crate::domain::transcript::TranscriptMessage::BranchSummary) (an
//!   empty summary is skipped, as pi does).
//! - `compaction`: `summary`, `tokensBefore`, and the first entry kept verbatim after it:
//!   `firstKeptEntryId` (versions 2–3) or `firstKeptEntryIndex` (version 1). The index counts
//!   the file's entries as pi loaded them — every line that parses as JSON, blank and broken
//!   lines left out — with the header as entry 0. (pi's 1→2 migration resolves it exactly
//!   so: `entries[firstKeptEntryIndex]` over a list that starts with the header.) In the
//!   recorded fixture the two indices land on user prompts, which confirms the reading.
//! - `reset_boundary` (oh-my-pi's `/clear`): the primary's context starts afresh, empty,
//!   after it; read as [`BranchEntry::ResetBoundary`], which the driver replays as a
//!   rewrite (R1) that empties the transcript, as oh-my-pi rebuilds its context.
//! - `model_change`, `thinking_level_change`, `custom` (extension state, not a message),
//!   `label`, `session_info`, oh-my-pi's `mode_change`, `ttsr_injection`, `model_usage`,
//!   `title_change`, … and any unknown type: skipped, counted per type in
//!   [`Diagnostics::skipped`].
//!
//! # Host transcripts
//!
//! A Claude Code transcript or a Codex CLI rollout is read too (SPEC L6–L8), told from its
//! first lines, into the same [`SessionBranch`]: see the `claude` and `codex` modules. The
//! header's [`SessionHeader::format`] says which format was read, and
//! [`ReadLimits::growing`] / [`ReadLimits::include_subagents`] apply to these formats only.
//! A host transcript that grows while it is read again and again (the hook hosts'
//! background process) is read through a [`HostTail`]: after the first read only the lines
//! appended since are parsed, with the same result as a whole read (SPEC H31).
//!
//! # Branches
//!
//! Version 1 entries carry no ids: the file is one linear chain. From version 2 on every
//! entry has an `id` (8 hex characters in pi) and a `parentId` (`null` for the root); the
//! entries form a tree and the current branch is the path from the last entry of the file
//! to the root. Version 3 only renamed the `hookMessage` role. Entries off that path are
//! counted in [`Diagnostics::off_branch`] and never parsed beyond their ids.
//!
//! When the parents on the way up from the last entry loop (`e3 → e4 → e3`), the loop is
//! reported in [`Diagnostics::malformed`] at its first line, naming all its lines, and the
//! current branch is that of the latest entry whose way up reaches a root. When no entry's
//! does (the loop spans the file), the branch is the way up from the last entry as far as
//! the first entry met twice, as oh-my-pi reads it.
//!
//! # Bad input
//!
//! A line that is not JSON, is truncated, has no `type` (or, from version 2, no `id`), or
//! whose fields have the wrong shape is recorded in [`Diagnostics::malformed`] with its
//! 1-based line number and skipped; reading goes on. A field the reader does not use is
//! skipped unread whatever it holds (`1e400`, a lone surrogate escape, a byte that is not
//! UTF-8), in the header as in an entry; the same value in a field it uses (a message's
//! text, a tool call's arguments) makes the line malformed. So is a line longer than
//! [`ReadLimits::max_line_bytes`] (64 MiB by default), which is read in chunks and
//! discarded up to the next newline, never buffered whole. A UTF-8 byte-order mark at the
//! start of the file is accepted. Only an unreadable file, a path that is not a regular
//! file (a directory, FIFO or device: checked before the open, which cannot block, and
//! again on the opened file), an empty file, or one without a header in its first lines is
//! an error ([`SessionError`]). Standard input (`-` on the command line) is spooled to an
//! unlinked temporary file first, since a tree is read in two passes.

mod advisor_file;
mod branch;
mod claude;
mod codex;
mod diagnostics;
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod differential;
mod direct;
mod driver;
mod entry;
mod hosts;
mod input;
mod reader;
mod skim;
mod tail;
mod tree;

pub use advisor_file::{advisor_file_path, AdvisorFilePathError, ADVISOR_FILE_NAME};
pub use branch::{BranchEntry, SessionBranch, SessionFormat, SessionHeader};
pub use diagnostics::{
    Diagnostics, ReadLimits, SessionError, DEFAULT_MAX_LINE_BYTES, DEFAULT_MAX_STDIN_BYTES,
};
pub use driver::{HostStep, SessionDriver};
pub use reader::{
    read_session, read_session_arg, read_session_from, read_session_from_with, read_session_stdin,
    read_session_with, NEWEST_VERSION, STDIN_NAME,
};
pub use tail::{read_host_tail, HostTail, TailRead};
