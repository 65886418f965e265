//! Streaming reader for pi and oh-my-pi session files (SPEC L1).
//!
//! The reader never holds the whole file. Version 1 files are a linear chain, so one forward
//! pass parses every entry. Version 2 and 3 files form a tree: a first pass reads only `type`,
//! `id` and `parentId` of each line (the ids are interned into a compact index), the current
//! branch is found by walking from the last entry to the root, and a second pass parses in
//! full only the lines on that branch. Entries of abandoned branches are never deserialised.
//!
//! Every line has to be checked as JSON once: a line that is not is reported, and is no
//! entry of the tree. The first pass reads a line written the way pi writes entries (type,
//! id and parent first) by those leading keys alone, and leaves its check to the second
//! pass, which reads each line anyway — the full parse checks a line on the branch, a fast
//! grammar check ([`super::skim`]) one off it. Should a line turn out not to be what its
//! leading keys said, the file is read again with the first pass checking every line, so
//! the answer never depends on the shortcut.
//!
//! A line is parsed in full in up to three ways, each answering only where the next would
//! answer the same: by hand ([`super::direct`]: user, developer, assistant and tool-result
//! messages, read from the line's bytes; on the second pass from after the leading keys),
//! through serde's visitors into the transcript's types ([`super::lean`]: every other known
//! shape), and the general way (`RawEntry` and the transcript's own `Deserialize`), which
//! decides everything else and words every malformed-line report.
//!
//! See the [module documentation](super) for the formats themselves.

use std::io::{self, BufRead, BufReader, Seek};
use std::path::Path;
use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHashSet};
use serde::Deserialize;
use serde_json::Value;

use super::branch::{BranchEntry, SessionBranch, SessionFormat, SessionHeader};
use super::diagnostics::{describe_json_error, Diagnostics, ReadLimits, SessionError};
use super::direct::{self, Scratch};
use super::hosts;
use super::input::{open_regular, spool, Line, Lines};
use super::lean::{self, EntryFields, LeanEntry};
use super::skim::{leading, skim, Leading};
use super::tree::{report_cycle, skim_tree};
use super::{claude, codex};
use crate::domain::transcript::{
    BranchSummaryMessage, Content, CustomMessage, RawJson, TranscriptMessage,
};

/// How many non-blank lines may precede the `session` header (oh-my-pi's title slot, or
/// several of them in a file that was rewritten) before the file is declared not a session.
const HEADER_SEARCH_LINES: usize = 4;

/// The newest session format this reader knows; newer files are read as this version.
pub const NEWEST_VERSION: u32 = 3;

/// The name standard input goes by in errors and diagnostics.
pub const STDIN_NAME: &str = "standard input";

/// Reads the current branch of the session file at `path` (SPEC L1), with the default
/// [`ReadLimits`].
pub fn read_session(path: &Path) -> Result<SessionBranch, SessionError> {
    read_session_with(path, &ReadLimits::default())
}

/// Reads the current branch of the session file at `path` under `limits`. Only a regular
/// file is opened: the path is checked before the open, the open does not wait (a FIFO
/// put in its place meanwhile cannot block it), and the opened file is checked again.
pub fn read_session_with(path: &Path, limits: &ReadLimits) -> Result<SessionBranch, SessionError> {
    let file = open_regular(path)?;
    read_session_from_with(BufReader::with_capacity(1 << 16, file), path, limits)
}

/// Reads a session named on a command line: `-` is standard input
/// ([`read_session_stdin`]), anything else a regular file ([`read_session_with`]).
pub fn read_session_arg(arg: &Path, limits: &ReadLimits) -> Result<SessionBranch, SessionError> {
    if arg == Path::new("-") {
        read_session_stdin(limits)
    } else {
        read_session_with(arg, limits)
    }
}

/// Reads a session from standard input. A tree (version 2/3) is read in two passes, so
/// the input is first spooled to an unlinked temporary file (never to memory); lines
/// longer than [`ReadLimits::max_line_bytes`] are cut short on the way (and then reported
/// as too long), and more than [`ReadLimits::max_stdin_bytes`] in all is an error.
pub fn read_session_stdin(limits: &ReadLimits) -> Result<SessionBranch, SessionError> {
    let name = Path::new(STDIN_NAME);
    let spooled = spool(io::stdin().lock(), limits, name)?;
    read_session_from_with(BufReader::with_capacity(1 << 16, spooled), name, limits)
}

/// Reads the current branch from any seekable buffered source with the default
/// [`ReadLimits`]; `path` only names it in errors.
pub fn read_session_from<R: BufRead + Seek>(
    reader: R,
    path: &Path,
) -> Result<SessionBranch, SessionError> {
    read_session_from_with(reader, path, &ReadLimits::default())
}

/// Reads the current branch from any seekable buffered source under `limits`; `path` only
/// names it in errors. Version 2/3 files are read twice (a skim, then the branch), hence
/// `Seek`.
pub fn read_session_from_with<R: BufRead + Seek>(
    reader: R,
    path: &Path,
    limits: &ReadLimits,
) -> Result<SessionBranch, SessionError> {
    read_from(reader, path, limits, true)
}

/// [`read_session_from_with`]; `leading_ok` lets the first pass over a version 2/3 file
/// take lines at their leading keys ([`read_tree`]); without it every line is checked in
/// full there (what the answer must equal either way).
fn read_from<R: BufRead + Seek>(
    reader: R,
    path: &Path,
    limits: &ReadLimits,
    leading_ok: bool,
) -> Result<SessionBranch, SessionError> {
    let io_err = |source: io::Error| SessionError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut lines = Lines::new(reader, limits.max_line_bytes);
    let mut diagnostics = Diagnostics::default();
    let header = match read_header(&mut lines, path) {
        Ok(header) => header,
        Err(HeaderError::Io(source)) => return Err(io_err(source)),
        Err(HeaderError::Session(e)) => return Err(e),
        Err(HeaderError::Host(format)) => {
            lines.rewind(0).map_err(io_err)?;
            return read_host(format, &mut lines, path, limits).map_err(io_err);
        }
    };
    let header_line = lines.number;
    let entries = if header.version <= 1 {
        read_linear(&mut lines, &mut diagnostics).map_err(io_err)?
    } else {
        match read_tree(&mut lines, header_line, &mut diagnostics, leading_ok).map_err(io_err)? {
            Some(entries) => entries,
            None => {
                // A line the first pass took at its leading keys is not what they said:
                // everything recorded is dropped and the file read again, the first pass
                // checking every line in full.
                diagnostics = Diagnostics::default();
                lines.rewind(header_line).map_err(io_err)?;
                read_tree(&mut lines, header_line, &mut diagnostics, false)
                    .map_err(io_err)?
                    .unwrap_or_default()
            }
        }
    };
    diagnostics.malformed.sort_by_key(|(line, _)| *line);
    let branch = SessionBranch {
        header,
        entries,
        diagnostics,
    };
    tracing::debug!(
        path = %path.display(),
        version = branch.header.version,
        entries = branch.entries.len(),
        malformed = branch.diagnostics.malformed.len(),
        off_branch = branch.diagnostics.off_branch,
        "session read"
    );
    Ok(branch)
}

/// The host format of the file `lines` reads from its start (SPEC L6), `None` for a pi
/// session; the caller rewinds before reading it.
pub(super) fn host_format_of<R: BufRead + Seek>(
    lines: &mut Lines<R>,
    path: &Path,
) -> Result<Option<SessionFormat>, SessionError> {
    match read_header(lines, path) {
        Ok(_) => Ok(None),
        Err(HeaderError::Host(format)) => Ok(Some(format)),
        Err(HeaderError::Session(e)) => Err(e),
        Err(HeaderError::Io(source)) => Err(SessionError::Io {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Reads a host transcript from its first line (the reader was rewound there).
fn read_host<R: BufRead + Seek>(
    format: SessionFormat,
    lines: &mut Lines<R>,
    path: &Path,
    limits: &ReadLimits,
) -> io::Result<SessionBranch> {
    let mut branch = match format {
        SessionFormat::ClaudeCode => claude::read(lines, limits)?,
        SessionFormat::Codex | SessionFormat::Pi => codex::read(lines, limits)?,
    };
    branch.diagnostics.malformed.sort_by_key(|(line, _)| *line);
    tracing::debug!(
        path = %path.display(),
        format = branch.header.format.name(),
        cli_version = branch.header.cli_version.as_deref().unwrap_or("?"),
        entries = branch.entries.len(),
        malformed = branch.diagnostics.malformed.len(),
        off_branch = branch.diagnostics.off_branch,
        "host transcript read"
    );
    Ok(branch)
}

enum HeaderError {
    Io(io::Error),
    Session(SessionError),
    /// The first lines are a host's transcript, not a pi session (SPEC L6).
    Host(SessionFormat),
}

/// Reads up to the `session` header, accepting oh-my-pi title slot lines before it.
fn read_header<R: BufRead + Seek>(
    lines: &mut Lines<R>,
    path: &Path,
) -> Result<SessionHeader, HeaderError> {
    let mut title_slot: Option<String> = None;
    let mut seen = 0usize;
    while seen < HEADER_SEARCH_LINES {
        let Some((_, line)) = lines.next_line().map_err(HeaderError::Io)? else {
            break;
        };
        seen += 1;
        let Line::Text(bytes) = line else { break };
        let Ok(value) = serde_json::from_slice::<HeaderLine>(bytes) else {
            // A host's line whose fields do not fit a pi header still says what it is;
            // a host transcript whose first line is broken says it in the lines after.
            if let Some(format) = host_format(bytes) {
                return Err(HeaderError::Host(format));
            }
            if seen == 1 {
                if let Some(format) = hosts::detect_after(lines).map_err(HeaderError::Io)? {
                    return Err(HeaderError::Host(format));
                }
            }
            break;
        };
        match value.kind.as_deref() {
            Some("title") => {
                title_slot = value.title;
            }
            Some("session") => {
                let version = value
                    .version
                    .map_or(1, |v| u32::try_from(v).unwrap_or(u32::MAX));
                if version > NEWEST_VERSION {
                    tracing::warn!(
                        version,
                        "session format newer than {NEWEST_VERSION}; reading it as {NEWEST_VERSION}"
                    );
                }
                return Ok(SessionHeader {
                    format: SessionFormat::Pi,
                    cli_version: None,
                    version: version.clamp(1, NEWEST_VERSION),
                    id: value.id,
                    cwd: value.cwd,
                    title: title_slot.or(value.title),
                    timestamp: value.timestamp,
                    parent_session: value.parent_session.or(value.branched_from),
                });
            }
            _ => {
                if let Some(format) = host_format(bytes) {
                    return Err(HeaderError::Host(format));
                }
                break;
            }
        }
    }
    let path = path.to_path_buf();
    Err(HeaderError::Session(if seen == 0 {
        SessionError::Empty { path }
    } else {
        SessionError::NotASession { path }
    }))
}

/// The host format a line that is no pi header line belongs to (SPEC L6), read as a
/// general JSON value: only the first lines of a file that is not a pi session get here.
fn host_format(bytes: &[u8]) -> Option<SessionFormat> {
    let value = serde_json::from_slice::<Value>(bytes).ok()?;
    hosts::detect(&value)
}

/// The fields of a title slot or header line the reader uses. Every other field is skipped
/// unread (serde_json's `IgnoredAny`: a number past `f64`'s range, a lone surrogate escape or a
/// raw byte that is not UTF-8 in it never refuses the line); a used field of another type
/// than the reader takes reads as absent, as `Value::as_str` / `as_u64` read it; the last of
/// a key written twice wins, as in a `Value`.
#[derive(Default)]
struct HeaderLine {
    kind: Option<String>,
    version: Option<u64>,
    id: Option<String>,
    cwd: Option<String>,
    title: Option<String>,
    timestamp: Option<String>,
    parent_session: Option<String>,
    branched_from: Option<String>,
}

impl<'de> Deserialize<'de> for HeaderLine {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(HeaderVisitor)
    }
}

struct HeaderVisitor;

impl<'de> serde::de::Visitor<'de> for HeaderVisitor {
    type Value = HeaderLine;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<HeaderLine, A::Error> {
        let mut line = HeaderLine::default();
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            let slot = match &*key {
                "type" => &mut line.kind,
                "id" => &mut line.id,
                "cwd" => &mut line.cwd,
                "title" => &mut line.title,
                "timestamp" => &mut line.timestamp,
                "parentSession" => &mut line.parent_session,
                "branchedFrom" => &mut line.branched_from,
                "version" => {
                    line.version = map.next_value::<Value>()?.as_u64();
                    continue;
                }
                _ => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                    continue;
                }
            };
            *slot = map.next_value::<Value>()?.as_str().map(str::to_string);
        }
        Ok(line)
    }
}

/// One entry line read the general way: the transcript's own types, which decide what
/// any shape means.
type RawEntry<'a> = EntryFields<'a, TranscriptMessage, Content, RawJson>;

/// The entry of a line read the general way; `None` without a `type`.
fn general(raw: RawEntry<'_>) -> Option<LeanEntry<'_>> {
    raw.into_entry(|m| m, |c| c, |v| v)
}

/// Where a compaction's first kept entry is, before branch indices are known.
enum KeptTarget {
    /// Version 1: an index into the file's entries, the header being entry 0.
    Ordinal(usize),
    /// Versions 2–3: an entry id.
    Id(String),
    /// Not recorded.
    Unknown,
}

/// An entry parsed but not yet placed in the branch.
enum Pending {
    Message(Arc<TranscriptMessage>),
    ResetBoundary,
    Compaction {
        summary: String,
        target: KeptTarget,
        tokens_before: Option<u64>,
    },
}

/// Interprets one parsed entry line; `None` for entries that carry no message.
fn interpret(raw: LeanEntry<'_>, diagnostics: &mut Diagnostics) -> Result<Option<Pending>, String> {
    let kind = &*raw.kind;
    Ok(Some(match kind {
        "message" => {
            let message = raw
                .message
                .ok_or_else(|| "message entry without a message".to_string())?;
            Pending::Message(Arc::new(upgrade_hook_message(message)))
        }
        "custom_message" => Pending::Message(Arc::new(TranscriptMessage::Custom(CustomMessage {
            custom_type: raw.custom_type.unwrap_or_default(),
            content: raw.content.unwrap_or_default(),
            display: raw.display.unwrap_or(false),
            details: raw.details,
            attribution: raw.attribution,
        }))),
        "branch_summary" => match raw.summary {
            Some(summary) if !summary.is_empty() => Pending::Message(Arc::new(
                TranscriptMessage::BranchSummary(BranchSummaryMessage {
                    summary,
                    from_id: raw.from_id.unwrap_or_default(),
                }),
            )),
            _ => {
                diagnostics.skip("branch_summary");
                return Ok(None);
            }
        },
        "compaction" => Pending::Compaction {
            summary: raw.summary.unwrap_or_default(),
            target: match (raw.first_kept_entry_id, raw.first_kept_entry_index) {
                (Some(id), _) => KeptTarget::Id(id),
                (None, Some(index)) => usize::try_from(index)
                    .map(KeptTarget::Ordinal)
                    .unwrap_or(KeptTarget::Unknown),
                (None, None) => KeptTarget::Unknown,
            },
            tokens_before: raw.tokens_before,
        },
        "reset_boundary" => Pending::ResetBoundary,
        other => {
            diagnostics.skip(other);
            return Ok(None);
        }
    }))
}

/// Version 2 stored extension messages with the role `hookMessage`; version 3 renamed it
/// `custom` with the same fields.
fn upgrade_hook_message(message: TranscriptMessage) -> TranscriptMessage {
    match message {
        TranscriptMessage::Unknown { role, mut raw } if role == "hookMessage" => {
            if let Some(obj) = raw.as_object_mut() {
                obj.insert("role".into(), Value::String("custom".into()));
            }
            match TranscriptMessage::deserialize(&raw) {
                Ok(m) => m,
                Err(_) => TranscriptMessage::Unknown { role, raw },
            }
        }
        other => other,
    }
}

/// One entry line read the fast way: by hand where [`direct::entry`] can, else through
/// serde's visitors ([`lean::parse_entry`]); `None` when it is left to the general way.
fn fast_entry<'a>(bytes: &'a [u8], scratch: &mut Scratch) -> Option<LeanEntry<'a>> {
    match direct::entry(bytes, scratch) {
        Some((entry, _)) => Some(entry),
        None => lean::parse_entry(bytes),
    }
}

/// Parses one line in full, the fast way when it can ([`fast_entry`]), else the
/// general way; records it as malformed on failure.
fn parse_entry<'a>(
    line: usize,
    bytes: &'a [u8],
    diagnostics: &mut Diagnostics,
    scratch: &mut Scratch,
) -> Option<LeanEntry<'a>> {
    if let Some(entry) = fast_entry(bytes, scratch) {
        return Some(entry);
    }
    match serde_json::from_slice::<RawEntry>(bytes) {
        Ok(raw) => match general(raw) {
            Some(entry) => Some(entry),
            None => {
                diagnostics
                    .malformed
                    .push((line, "entry has no \"type\"".to_string()));
                None
            }
        },
        Err(e) => {
            diagnostics.malformed.push((line, describe_json_error(&e)));
            None
        }
    }
}

/// Places parsed entries (in branch order, each with an ascending key) into the branch,
/// resolving compactions' first kept entry.
struct BranchBuilder {
    entries: Vec<BranchEntry>,
    keys: Vec<usize>,
}

impl BranchBuilder {
    fn new() -> Self {
        Self::with_capacity(0)
    }

    fn with_capacity(entries: usize) -> Self {
        Self {
            entries: Vec::with_capacity(entries),
            keys: Vec::with_capacity(entries),
        }
    }

    /// Sets the first kept entry of the compaction at `index`, placed with no target, to
    /// the entry keyed `target_key` — as [`BranchBuilder::push`] would have with every
    /// entry after the compaction already placed, which does not change the outcome.
    fn resolve(&mut self, index: usize, target_key: Option<usize>) {
        let Some(&key) = self.keys.get(index) else {
            return;
        };
        if let (Some(t), Some(BranchEntry::Compaction { first_kept, .. })) =
            (target_key, self.entries.get_mut(index))
        {
            if t < key {
                *first_kept = self.keys.partition_point(|k| *k < t);
            }
        }
    }

    /// `target_key` is the key of the first kept entry, already resolved.
    fn push(&mut self, key: usize, pending: Pending, target_key: Option<usize>) {
        let own = self.entries.len();
        let entry = match pending {
            Pending::Message(m) => BranchEntry::Message(m),
            Pending::ResetBoundary => BranchEntry::ResetBoundary,
            Pending::Compaction {
                summary,
                tokens_before,
                ..
            } => {
                let first_kept = match target_key {
                    Some(t) if t < key => self.keys.partition_point(|k| *k < t),
                    _ => own,
                };
                BranchEntry::Compaction {
                    summary,
                    first_kept,
                    tokens_before,
                }
            }
        };
        self.entries.push(entry);
        self.keys.push(key);
    }
}

/// Version 1: every entry is on the branch, in file order.
fn read_linear<R: BufRead + Seek>(
    lines: &mut Lines<R>,
    diagnostics: &mut Diagnostics,
) -> io::Result<Vec<BranchEntry>> {
    let mut builder = BranchBuilder::new();
    // Version 1 compactions count entries as pi loaded them: every line that is valid JSON,
    // the header being entry 0.
    let mut ordinal = 0usize;
    let mut scratch = Scratch::default();
    while let Some((line, text)) = lines.next_line()? {
        let Line::Text(bytes) = text else {
            // Most likely a message with a huge body, which pi did load and count.
            ordinal += 1;
            let reason = lines.too_long();
            diagnostics.malformed.push((line, reason));
            continue;
        };
        // The fast way reads only lines the general way reads the same.
        if let Some(entry) = fast_entry(bytes, &mut scratch) {
            ordinal += 1;
            place_linear(&mut builder, ordinal, line, entry, diagnostics);
            continue;
        }
        let parsed = match serde_json::from_slice::<RawEntry>(bytes) {
            Ok(raw) => {
                ordinal += 1;
                Ok(raw)
            }
            Err(e)
                if e.is_data()
                    && serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_ok() =>
            {
                ordinal += 1;
                Err(e)
            }
            Err(e) => Err(e),
        };
        let raw = match parsed {
            Ok(raw) => raw,
            Err(e) => {
                diagnostics.malformed.push((line, describe_json_error(&e)));
                continue;
            }
        };
        let Some(entry) = general(raw) else {
            diagnostics
                .malformed
                .push((line, "entry has no \"type\"".to_string()));
            continue;
        };
        place_linear(&mut builder, ordinal, line, entry, diagnostics);
    }
    Ok(builder.entries)
}

/// Interprets a version 1 entry (its file ordinal known) and places it.
fn place_linear(
    builder: &mut BranchBuilder,
    ordinal: usize,
    line: usize,
    entry: LeanEntry<'_>,
    diagnostics: &mut Diagnostics,
) {
    match interpret(entry, diagnostics) {
        Ok(Some(pending)) => {
            let target = match &pending {
                Pending::Compaction {
                    target: KeptTarget::Ordinal(i),
                    ..
                } if *i > 0 => Some(*i),
                _ => None,
            };
            builder.push(ordinal, pending, target);
        }
        Ok(None) => {}
        Err(reason) => diagnostics.malformed.push((line, reason)),
    }
}

/// A version 2/3 file in two passes: the tree's ids and parents, then (after a rewind to
/// the line after the header) the lines on the current branch.
///
/// With `leading_ok`, the first pass takes the lines pi writes at their leading keys
/// ([`skim_tree`]); the second pass then checks every such line in full — the full parse
/// of a line on the branch, the first pass's own check ([`skim`]) of a line off it — and
/// answers `None` when one is not what its leading keys said (the caller reads the file
/// again without them). So the answer is always what a first pass checking every line
/// would give, and each line on the branch is still parsed only once.
fn read_tree<R: BufRead + Seek>(
    lines: &mut Lines<R>,
    header_line: usize,
    diagnostics: &mut Diagnostics,
    leading_ok: bool,
) -> io::Result<Option<Vec<BranchEntry>>> {
    let mut index = skim_tree(lines, diagnostics, leading_ok)?;
    let branch = index.current_branch();
    if let Some(cycle) = &branch.cycle {
        report_cycle(cycle, diagnostics);
    }
    diagnostics.off_branch = index.entry_count().saturating_sub(branch.lines.len());
    let kept_targets = index.take_kept_targets();
    let check = index.unchecked > 0;
    drop(index);
    lines.rewind(header_line)?;
    read_branch(lines, &branch.lines, &kept_targets, diagnostics, check)
}

/// Whether the line `lead` was read from is, read whole by the first pass's own check, the
/// entry `lead` says.
fn skim_confirms(bytes: &[u8], lead: &Leading<'_>) -> bool {
    std::str::from_utf8(bytes)
        .ok()
        .and_then(skim)
        .is_some_and(|whole| lead.is(whole.kind, whole.id, whole.parent))
}

/// The full parse of a branch line the first pass took at its leading keys `lead`; `Err`
/// when the line is not that entry.
fn confirmed_entry<'a>(
    line: usize,
    bytes: &'a [u8],
    lead: &Leading<'a>,
    diagnostics: &mut Diagnostics,
    scratch: &mut Scratch,
) -> Result<Option<LeanEntry<'a>>, ()> {
    // By hand from after the leading keys when it can: the same answer as from the start.
    let fast =
        direct::entry_after(bytes, lead, scratch).or_else(|| lean::parse_entry_with_parent(bytes));
    if let Some((entry, parent)) = fast {
        // A parse that succeeds read these keys once each, so they cannot differ from the
        // leading ones; compared all the same.
        let same = lead.is(&entry.kind, entry.id.as_deref(), parent.as_deref());
        return if same { Ok(Some(entry)) } else { Err(()) };
    }
    if !skim_confirms(bytes, lead) {
        return Err(());
    }
    Ok(parse_entry(line, bytes, diagnostics, scratch))
}

/// Second pass over a version 2/3 file: parses the lines on the branch.
///
/// Only the ids in `kept_targets` (those compactions name) are remembered on the way.
fn read_branch<R: BufRead + Seek>(
    lines: &mut Lines<R>,
    path_lines: &[usize],
    kept_targets: &FxHashSet<Box<str>>,
    diagnostics: &mut Diagnostics,
    check: bool,
) -> io::Result<Option<Vec<BranchEntry>>> {
    // (line, position on the path), sorted by line for a single forward scan. A branch
    // written in file order (the usual case) needs no reordering: its entries go straight
    // into the branch.
    let mut wanted: Vec<(usize, usize)> = path_lines
        .iter()
        .enumerate()
        .map(|(pos, line)| (*line, pos))
        .collect();
    let in_order = wanted.windows(2).all(|w| w[0].0 < w[1].0);
    if !in_order {
        wanted.sort_unstable();
    }
    let mut parsed: Vec<Option<Pending>> = Vec::new();
    if !in_order {
        parsed.resize_with(path_lines.len(), || None);
    }
    let mut builder = BranchBuilder::with_capacity(if in_order { path_lines.len() } else { 0 });
    // Compactions placed in file order, resolved once every id on the branch is known.
    let mut unresolved: Vec<(usize, String)> = Vec::new();
    let mut ids: FxHashMap<String, usize> = FxHashMap::default();
    let mut scratch = Scratch::default();
    let mut next = wanted.iter().peekable();
    loop {
        let want = next.peek().map(|&&(line, pos)| (line, pos));
        if want.is_none() && !check {
            break;
        }
        let Some((line, text)) = lines.next_line()? else {
            break;
        };
        let Some((want_line, pos)) = want.filter(|&(want_line, _)| line >= want_line) else {
            // Off the branch: only checked, when the first pass took it unchecked.
            if let (true, Line::Text(bytes)) = (check, text) {
                if let Some(lead) = leading(bytes) {
                    if !skim_confirms(bytes, &lead) {
                        return Ok(None);
                    }
                }
            }
            continue;
        };
        next.next();
        let (Line::Text(bytes), false) = (text, line > want_line) else {
            // The file changed between the passes; stop rather than misplace entries.
            tracing::warn!(line, "session file changed while it was read");
            break;
        };
        let read = match leading(bytes).filter(|_| check) {
            Some(lead) => match confirmed_entry(line, bytes, &lead, diagnostics, &mut scratch) {
                Ok(read) => read,
                Err(()) => return Ok(None),
            },
            None => parse_entry(line, bytes, diagnostics, &mut scratch),
        };
        let Some(mut entry) = read else {
            continue;
        };
        if let Some(id) = entry.id.take() {
            if kept_targets.contains(&*id) {
                ids.insert(id.into_owned(), pos);
            }
        }
        match interpret(entry, diagnostics) {
            Ok(Some(mut pending)) if in_order => {
                if let Pending::Compaction { target, .. } = &mut pending {
                    if let KeptTarget::Id(id) = std::mem::replace(target, KeptTarget::Unknown) {
                        unresolved.push((builder.entries.len(), id));
                    }
                }
                builder.push(pos, pending, None);
            }
            Ok(Some(pending)) => {
                if let Some(slot) = parsed.get_mut(pos) {
                    *slot = Some(pending);
                }
            }
            Ok(None) => {}
            Err(reason) => diagnostics.malformed.push((line, reason)),
        }
    }
    if in_order {
        for (index, id) in unresolved {
            builder.resolve(index, ids.get(&id).copied());
        }
        return Ok(Some(builder.entries));
    }
    builder
        .entries
        .reserve_exact(parsed.iter().flatten().count());
    for (pos, pending) in parsed.into_iter().enumerate() {
        let Some(pending) = pending else { continue };
        let target = match &pending {
            Pending::Compaction {
                target: KeptTarget::Id(id),
                ..
            } => ids.get(id).copied(),
            _ => None,
        };
        builder.push(pos, pending, target);
    }
    Ok(Some(builder.entries))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::io::{Cursor, Read, SeekFrom};

    fn read(lines: &[Value]) -> SessionBranch {
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        read_text(&text)
    }

    fn read_text(text: &str) -> SessionBranch {
        read_session_from(Cursor::new(text.as_bytes().to_vec()), Path::new("t.jsonl"))
            .expect("a session")
    }

    fn header(version: Option<u32>) -> Value {
        let mut h =
            json!({"type":"session","id":"s1","timestamp":"2025-01-01T00:00:00Z","cwd":"/w"});
        if let Some(v) = version {
            h["version"] = json!(v);
        }
        h
    }

    fn msg(id: Option<&str>, parent: Option<&str>, message: Value) -> Value {
        let mut e = json!({"type":"message","message":message});
        if let Some(id) = id {
            e["id"] = json!(id);
            e["parentId"] = json!(parent);
        }
        e
    }

    fn user(text: &str) -> Value {
        json!({"role":"user","content":text})
    }

    fn texts(branch: &SessionBranch) -> Vec<String> {
        branch
            .entries
            .iter()
            .map(|e| match e {
                BranchEntry::Message(m) => match m.as_ref() {
                    TranscriptMessage::User(u) => u.content.joined_text("", false),
                    m => m.role().to_string(),
                },
                BranchEntry::Compaction { first_kept, .. } => format!("compaction>{first_kept}"),
                BranchEntry::ResetBoundary => "reset".to_string(),
            })
            .collect()
    }

    fn read_capped(text: &[u8], max_line_bytes: usize) -> SessionBranch {
        let limits = ReadLimits {
            max_line_bytes,
            ..ReadLimits::default()
        };
        read_session_from_with(Cursor::new(text.to_vec()), Path::new("t.jsonl"), &limits)
            .expect("a session")
    }

    /// A reader that hands out at most `step` bytes per call, as a pipe does.
    struct Trickle<'a> {
        data: &'a [u8],
        step: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let n = self.data.len().min(self.step).min(out.len());
            out[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    #[test]
    fn l1_version1_is_a_linear_chain() {
        let b = read(&[
            header(None),
            msg(None, None, user("a")),
            json!({"type":"model_change","provider":"p","modelId":"m"}),
            msg(None, None, user("b")),
        ]);
        assert_eq!(b.header.version, 1);
        assert_eq!(b.header.id.as_deref(), Some("s1"));
        assert_eq!(texts(&b), ["a", "b"]);
        assert_eq!(b.diagnostics.skipped.get("model_change"), Some(&1));
        assert_eq!(b.diagnostics.off_branch, 0);
    }

    #[test]
    fn l1_version1_compaction_index_counts_the_header_as_entry_zero() {
        // Entries: 0 header, 1 "a", 2 thinking change, 3 "b", 4 "c", 5 compaction → keep from 3.
        let b = read(&[
            header(None),
            msg(None, None, user("a")),
            json!({"type":"thinking_level_change","thinkingLevel":"high"}),
            msg(None, None, user("b")),
            msg(None, None, user("c")),
            json!({"type":"compaction","summary":"s","firstKeptEntryIndex":3,"tokensBefore":9}),
            msg(None, None, user("d")),
        ]);
        assert_eq!(texts(&b), ["a", "b", "c", "compaction>1", "d"]);
        match &b.entries[3] {
            BranchEntry::Compaction {
                summary,
                tokens_before,
                ..
            } => {
                assert_eq!(summary, "s");
                assert_eq!(*tokens_before, Some(9));
            }
            other => panic!("not a compaction: {other:?}"),
        }
    }

    #[test]
    fn l1_version1_compaction_index_skips_blank_and_broken_lines_but_counts_typeless_json() {
        // Line 3 is broken (not counted), line 4 is JSON without a type (counted, as pi
        // counted every line JSON.parse accepted): entries 0 header, 1 "a", 2 typeless,
        // 3 "b", 4 compaction → keep from "b".
        let text = format!(
            "{}\n{}\n{{oops\n{}\n\n{}\n{}\n",
            header(None),
            msg(None, None, user("a")),
            json!({"note":"no type"}),
            msg(None, None, user("b")),
            json!({"type":"compaction","summary":"s","firstKeptEntryIndex":3}),
        );
        let b = read_text(&text);
        assert_eq!(texts(&b), ["a", "b", "compaction>1"]);
        let lines: Vec<usize> = b.diagnostics.malformed.iter().map(|(l, _)| *l).collect();
        assert_eq!(lines, [3, 4]);
    }

    #[test]
    fn l1_version1_compaction_pointing_at_the_header_keeps_nothing() {
        let b = read(&[
            header(None),
            msg(None, None, user("a")),
            json!({"type":"compaction","summary":"s","firstKeptEntryIndex":0}),
        ]);
        assert_eq!(texts(&b), ["a", "compaction>1"]);
    }

    #[test]
    fn l1_tree_branch_is_the_path_from_the_last_entry_to_the_root() {
        let b = read(&[
            header(Some(3)),
            msg(Some("r"), None, user("root")),
            msg(Some("x"), Some("r"), user("abandoned 1")),
            msg(Some("y"), Some("x"), user("abandoned 2")),
            msg(Some("z"), Some("r"), user("kept")),
            json!({"type":"label","id":"l","parentId":"z","targetId":"r","label":"start"}),
        ]);
        assert_eq!(texts(&b), ["root", "kept"]);
        assert_eq!(b.diagnostics.off_branch, 2);
        assert_eq!(b.diagnostics.skipped.get("label"), Some(&1));
    }

    #[test]
    fn l1_tree_compaction_by_id_resolves_to_a_branch_index() {
        let b = read(&[
            header(Some(2)),
            msg(Some("1"), None, user("a")),
            json!({"type":"model_change","id":"2","parentId":"1","provider":"p","modelId":"m"}),
            msg(Some("3"), Some("2"), user("b")),
            json!({"type":"compaction","id":"4","parentId":"3","summary":"s","firstKeptEntryId":"2"}),
            msg(Some("5"), Some("4"), user("c")),
        ]);
        // The kept entry is a model change (no message): keeping starts at the next entry.
        assert_eq!(texts(&b), ["a", "b", "compaction>1", "c"]);
    }

    #[test]
    fn l1_tree_compaction_kept_ids_are_matched_as_read_escapes_and_all() {
        // The second pass remembers only the ids compactions name (the ids the first pass collected); an id
        // written with an escape on either side is the same id.
        let text = format!(
            "{}\n{}\n{}\n{}\n{}\n{}\n",
            header(Some(3)),
            msg(Some("k1"), None, user("a")),
            r#"{"type":"message","id":"k\u0032","parentId":"k1","message":{"role":"user","content":"b"}}"#,
            msg(Some("k3"), Some("k2"), user("c")),
            r#"{"type":"compaction","id":"k4","parentId":"k3","summary":"s","firstKeptEntryId":"\u006b3"}"#,
            r#"{"type":"compaction","id":"k5","parentId":"k4","summary":"t","firstKeptEntryId":"k2"}"#,
        );
        let b = read_text(&text);
        assert_eq!(texts(&b), ["a", "b", "c", "compaction>2", "compaction>1"]);
    }

    #[test]
    fn l1_tree_compaction_whose_kept_entry_is_off_the_branch_keeps_nothing() {
        let b = read(&[
            header(Some(3)),
            msg(Some("1"), None, user("a")),
            msg(Some("2"), Some("1"), user("side")),
            json!({"type":"compaction","id":"3","parentId":"1","summary":"s","firstKeptEntryId":"2"}),
        ]);
        assert_eq!(texts(&b), ["a", "compaction>1"]);
    }

    #[test]
    fn l1_malformed_lines_are_reported_with_their_line_number_and_skipped() {
        let text = format!(
            "{}\n{}\nnot json at all\n{}\n{}\n{}\n",
            header(Some(3)),
            msg(Some("1"), None, user("a")),
            json!({"id":"2","parentId":"1"}),
            json!({"type":"message","parentId":"1","message":user("no id")}),
            msg(Some("3"), Some("1"), user("b")),
        );
        let b = read_text(&text);
        assert_eq!(texts(&b), ["a", "b"]);
        let m = &b.diagnostics.malformed;
        assert_eq!(m.len(), 3, "{m:?}");
        assert_eq!(m[0].0, 3);
        assert!(m[0].1.contains("invalid JSON"), "{}", m[0].1);
        assert_eq!(m[1], (4, "entry has no \"type\"".to_string()));
        assert_eq!(m[2], (5, "entry has no \"id\"".to_string()));
    }

    /// The odd values no `Value` holds: a number past `f64`'s range, a lone surrogate
    /// escape, a raw byte that is not UTF-8.
    const ODD_VALUES: [&[u8]; 3] = [b"1e400", b"\"\\ud800\"", b"\"a\xffb\""];

    #[test]
    fn l1_an_unknown_header_field_never_refuses_the_file() {
        for odd in ODD_VALUES {
            for version in [1u32, 3] {
                let mut text = br#"{"type":"title","v":1,"title":"T","x":"#.to_vec();
                text.extend_from_slice(odd);
                text.extend_from_slice(b"}\n");
                text.extend_from_slice(
                    format!(r#"{{"type":"session","version":{version},"id":"s","cwd":"/w","x":"#)
                        .as_bytes(),
                );
                text.extend_from_slice(odd);
                text.extend_from_slice(b"}\n");
                text.extend_from_slice(format!("{}\n", pi_user("a1", None, "hi")).as_bytes());
                let (fast, checked, _) = fast_and_checked(&text, &ReadLimits::default());
                let odd = String::from_utf8_lossy(odd);
                assert_eq!(texts(&fast), ["hi"], "{odd} v{version}");
                assert_eq!(fast.header.cwd.as_deref(), Some("/w"), "{odd}");
                assert_eq!(fast.header.title.as_deref(), Some("T"), "{odd}");
                assert!(fast.diagnostics.malformed.is_empty(), "{odd}");
                assert_eq!(texts(&checked), texts(&fast), "{odd}");
            }
        }
    }

    #[test]
    fn l1_an_unknown_field_never_refuses_an_entry_line() {
        for odd in ODD_VALUES {
            let mut lines = vec![format!("{}", header(Some(3))).into_bytes()];
            let mut user_line = pi_user("a1", None, "hi").into_bytes();
            user_line.pop();
            user_line.extend_from_slice(b",\"x\":");
            user_line.extend_from_slice(odd);
            user_line.push(b'}');
            lines.push(user_line);
            let mut skipped = br#"{"type":"model_change","id":"a2","parentId":"a1","x":"#.to_vec();
            skipped.extend_from_slice(odd);
            skipped.push(b'}');
            lines.push(skipped);
            lines.push(pi_user("a3", Some("a2"), "there").into_bytes());
            let text = lines.join(&b'\n');
            let (fast, checked, _) = fast_and_checked(&text, &ReadLimits::default());
            let odd = String::from_utf8_lossy(odd);
            assert_eq!(texts(&fast), ["hi", "there"], "{odd}");
            assert!(
                fast.diagnostics.malformed.is_empty(),
                "{odd}: {:?}",
                fast.diagnostics
            );
            assert_eq!(texts(&checked), texts(&fast), "{odd}");
        }
    }

    #[test]
    fn l1_a_used_field_no_value_holds_is_a_malformed_line_reported_by_number() {
        // Tool-call arguments are read as a value (the transcript's types hold them), so a
        // number past f64's range there makes the line unreadable: reported and skipped,
        // the lines around it read, in every way the reader reads a line.
        let call = r#"{"role":"assistant","content":[{"type":"toolCall","id":"c","name":"n","arguments":{"n":1e400}}],"stopReason":"toolUse"}"#;
        let text = lines_of(&[
            header(Some(3)).to_string(),
            pi_user("a1", None, "hi"),
            pi_line("message", "a2", Some("a1"), &format!(r#""message":{call}"#)),
            pi_user("a3", Some("a2"), "there"),
        ]);
        let (fast, checked, _) = fast_and_checked(&text, &ReadLimits::default());
        for branch in [&fast, &checked] {
            assert_eq!(texts(branch), ["hi", "there"]);
            let m = &branch.diagnostics.malformed;
            assert_eq!(m.len(), 1, "{m:?}");
            assert_eq!(m[0].0, 3, "{m:?}");
        }
    }

    #[test]
    fn l1_a_truncated_last_line_is_malformed() {
        let full = msg(Some("2"), Some("1"), user("cut off")).to_string();
        let text = format!(
            "{}\n{}\n{}",
            header(Some(3)),
            msg(Some("1"), None, user("a")),
            &full[..full.len() / 2]
        );
        let b = read_text(&text);
        assert_eq!(texts(&b), ["a"]);
        assert_eq!(b.diagnostics.malformed.len(), 1);
        assert_eq!(b.diagnostics.malformed[0].0, 3);
        assert!(b.diagnostics.malformed[0].1.starts_with("truncated JSON"));
    }

    #[test]
    fn l1_an_entry_of_the_wrong_shape_on_the_branch_is_malformed() {
        let b = read(&[
            header(Some(3)),
            msg(Some("1"), None, user("a")),
            json!({"type":"compaction","id":"2","parentId":"1","summary":42}),
            msg(Some("3"), Some("2"), json!("not an object")),
            msg(Some("4"), Some("3"), user("b")),
        ]);
        assert_eq!(texts(&b), ["a", "b"]);
        let lines: Vec<usize> = b.diagnostics.malformed.iter().map(|(l, _)| *l).collect();
        assert_eq!(lines, [3, 4]);
    }

    #[test]
    fn l1_every_recorded_line_the_fast_way_reads_it_reads_as_the_general_way_does() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        let mut files = Vec::new();
        let mut dirs = vec![root];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).expect("fixtures").flatten() {
                let path = entry.path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "jsonl") {
                    files.push(path);
                }
            }
        }
        assert!(files.len() >= 10, "{files:?}");
        let (mut fast, mut total) = (0usize, 0usize);
        let mut scratch = Scratch::default();
        for path in files {
            let text = std::fs::read_to_string(&path).expect("a fixture");
            for line in text.lines().filter(|l| !l.trim().is_empty()) {
                total += 1;
                let general = serde_json::from_str::<RawEntry>(line)
                    .ok()
                    .and_then(general);
                if let Some(entry) = fast_entry(line.as_bytes(), &mut scratch) {
                    fast += 1;
                    assert_eq!(Some(entry), general, "{}: {line}", path.display());
                }
            }
        }
        // Nearly every line is of a shape the fast way knows.
        assert!(
            fast * 100 >= total * 95,
            "{fast} of {total} lines read the fast way"
        );
    }

    #[test]
    fn l1_oh_my_pi_title_slot_precedes_the_header() {
        let b = read(&[
            json!({"type":"title","v":1,"title":"Fix flaky test","pad":"    "}),
            header(Some(3)),
            json!({"type":"mode_change","id":"1","parentId":null,"mode":"plan"}),
            json!({"type":"ttsr_injection","id":"2","parentId":"1","injectedRules":["r"]}),
            msg(Some("3"), Some("2"), user("go")),
        ]);
        assert_eq!(b.header.title.as_deref(), Some("Fix flaky test"));
        assert_eq!(texts(&b), ["go"]);
        assert_eq!(b.diagnostics.skipped.get("mode_change"), Some(&1));
        assert_eq!(b.diagnostics.skipped.get("ttsr_injection"), Some(&1));
    }

    #[test]
    fn l1_extension_entries_become_messages_or_are_skipped() {
        let b = read(&[
            header(Some(3)),
            json!({"type":"custom_message","id":"1","parentId":null,"customType":"note",
                   "content":[{"type":"text","text":"hi"}],"display":true,"details":{"k":1}}),
            json!({"type":"custom","id":"2","parentId":"1","customType":"state","data":{}}),
            json!({"type":"branch_summary","id":"3","parentId":"2","fromId":"9","summary":"tried X"}),
            json!({"type":"branch_summary","id":"4","parentId":"3","fromId":"9","summary":""}),
            json!({"type":"session_info","id":"5","parentId":"4","name":"work"}),
            json!({"type":"brand_new_kind","id":"6","parentId":"5"}),
        ]);
        assert_eq!(b.entries.len(), 2);
        match b.entries[0].message() {
            Some(TranscriptMessage::Custom(c)) => {
                assert_eq!(c.custom_type, "note");
                assert_eq!(c.content.joined_text("", false), "hi");
                assert!(c.display);
                assert_eq!(
                    c.details.as_ref().map(RawJson::to_value),
                    Some(json!({"k":1}))
                );
            }
            other => panic!("not a custom message: {other:?}"),
        }
        match b.entries[1].message() {
            Some(TranscriptMessage::BranchSummary(s)) => {
                assert_eq!(s.summary, "tried X");
                assert_eq!(s.from_id, "9");
            }
            other => panic!("not a branch summary: {other:?}"),
        }
        let skipped = std::collections::BTreeMap::from(
            [
                ("branch_summary", 1),
                ("brand_new_kind", 1),
                ("custom", 1),
                ("session_info", 1),
            ]
            .map(|(k, v)| (k.to_string(), v)),
        );
        assert_eq!(b.diagnostics.skipped, skipped);
    }

    #[test]
    fn l1_version2_hook_message_role_is_read_as_custom() {
        let b = read(&[
            header(Some(2)),
            msg(
                Some("1"),
                None,
                json!({"role":"hookMessage","customType":"reminder","content":"x","display":false}),
            ),
        ]);
        match b.entries[0].message() {
            Some(TranscriptMessage::Custom(c)) => {
                assert_eq!(c.custom_type, "reminder")
            }
            other => panic!("not custom: {other:?}"),
        }
    }

    #[test]
    fn l1_unknown_roles_are_kept_opaque() {
        let b = read(&[
            header(Some(3)),
            msg(Some("1"), None, json!({"role":"hologram","x":1})),
        ]);
        assert!(matches!(
            b.entries[0].message(),
            Some(TranscriptMessage::Unknown { role, .. }) if role == "hologram"
        ));
    }

    #[test]
    fn l1_a_parent_cycle_does_not_hang() {
        let b = read(&[
            header(Some(3)),
            msg(Some("a"), Some("b"), user("one")),
            msg(Some("b"), Some("a"), user("two")),
        ]);
        assert_eq!(texts(&b), ["one", "two"]);
    }

    #[test]
    fn l1_crlf_and_blank_lines_are_tolerated() {
        let text = format!(
            "\r\n{}\r\n\r\n{}\r\n",
            header(Some(3)),
            msg(Some("1"), None, user("a"))
        );
        let b = read_text(&text);
        assert_eq!(texts(&b), ["a"]);
        assert!(b.diagnostics.malformed.is_empty());
    }

    #[test]
    fn l1_empty_and_headerless_files_are_errors() {
        let err = |text: &str| {
            read_session_from(Cursor::new(text.as_bytes().to_vec()), Path::new("x.jsonl"))
                .expect_err("an error")
                .to_string()
        };
        assert_eq!(err(""), "x.jsonl is empty");
        assert_eq!(err("\n  \n"), "x.jsonl is empty");
        assert_eq!(
            err("{\"type\":\"message\"}\n"),
            "x.jsonl is not a session file (no session header in its first lines)"
        );
        assert_eq!(
            err("hello world\n"),
            "x.jsonl is not a session file (no session header in its first lines)"
        );
    }

    #[test]
    fn l1_missing_file_names_the_path() {
        let e = read_session(Path::new("/nonexistent/dir/s.jsonl")).expect_err("an error");
        assert!(e
            .to_string()
            .starts_with("cannot read /nonexistent/dir/s.jsonl: "));
    }

    #[test]
    fn l1_newer_versions_are_read_as_trees() {
        let b = read(&[
            header(Some(7)),
            msg(Some("1"), None, user("a")),
            msg(Some("2"), None, user("b")),
        ]);
        assert_eq!(b.header.version, NEWEST_VERSION);
        assert_eq!(texts(&b), ["b"]);
    }

    #[test]
    fn l1_a_line_over_the_cap_is_skipped_with_its_number_in_every_format() {
        let long = format!("\"{}\"", "x".repeat(5_000));
        for version in [None, Some(3)] {
            let (id1, id2, id3) = if version.is_some() {
                (Some("1"), Some("2"), Some("3"))
            } else {
                (None, None, None)
            };
            let big = msg(id2, id1, json!({"role":"user","content":long}));
            let text = format!(
                "{}\n{}\n{}\n{}\n",
                header(version),
                msg(id1, None, user("a")),
                big,
                msg(id3, id1, user("b")),
            );
            let b = read_capped(text.as_bytes(), 1024);
            assert_eq!(texts(&b), ["a", "b"], "version {version:?}");
            assert_eq!(
                b.diagnostics.malformed,
                [(
                    3,
                    "line longer than 1024 bytes, discarded unread".to_string()
                )],
                "version {version:?}"
            );
        }
    }

    #[test]
    fn l1_a_line_exactly_at_the_cap_is_read() {
        let line = msg(None, None, user(&format!("fits{}", " ".repeat(100)))).to_string();
        let text = format!("{}\n{line}\n", header(None));
        let b = read_capped(text.as_bytes(), line.len());
        assert_eq!(texts(&b), [format!("fits{}", " ".repeat(100))]);
        let b = read_capped(text.as_bytes(), line.len() - 1);
        assert!(texts(&b).is_empty());
        assert_eq!(b.diagnostics.malformed.len(), 1);
    }

    #[test]
    fn l1_an_endless_line_is_discarded_in_chunks_not_buffered() {
        // A source with no newline at all (`/dev/zero` through a pipe): the line buffer
        // never grows past the cap while the reader skips it.
        let header = format!("{}\n", header(None));
        let zeros = vec![0u8; 4 << 20];
        let source = Cursor::new([header.as_bytes(), &zeros].concat());
        let mut lines = Lines::new(BufReader::with_capacity(4096, source), 1000);
        assert!(matches!(lines.next_line(), Ok(Some((1, Line::Text(_))))));
        assert!(matches!(lines.next_line(), Ok(Some((2, Line::TooLong)))));
        assert!(
            lines.buffer_capacity() <= 4096,
            "{}",
            lines.buffer_capacity()
        );
        assert!(matches!(lines.next_line(), Ok(None)));
    }

    #[test]
    fn l1_a_header_over_the_cap_is_not_a_session() {
        let text = format!("{}\n", header(Some(3)));
        let limits = ReadLimits {
            max_line_bytes: 10,
            ..ReadLimits::default()
        };
        let err = read_session_from_with(Cursor::new(text.into_bytes()), Path::new("h"), &limits)
            .expect_err("an error");
        assert!(matches!(err, SessionError::NotASession { .. }), "{err}");
    }

    #[test]
    fn l1_stdin_spool_cuts_long_lines_and_keeps_the_rest() {
        let long = "y".repeat(300);
        let input = format!(
            "{}\n{}\n{long}\n{}",
            header(Some(3)),
            msg(Some("1"), None, user("a")),
            msg(Some("2"), Some("1"), user("b")),
        );
        let limits = ReadLimits {
            max_line_bytes: 200,
            ..ReadLimits::default()
        };
        let trickle = Trickle {
            data: input.as_bytes(),
            step: 7,
        };
        let mut file = spool(trickle, &limits, Path::new(STDIN_NAME)).expect("spooled");
        let mut spooled = String::new();
        file.read_to_string(&mut spooled).expect("readable");
        let lines: Vec<&str> = spooled.split('\n').collect();
        assert_eq!(lines.len(), 4);
        assert_eq!(lines[2].len(), 201, "cut one byte past the cap");
        assert_eq!(lines[3], msg(Some("2"), Some("1"), user("b")).to_string());
        file.seek(SeekFrom::Start(0)).expect("seekable");
        let b = read_session_from_with(BufReader::new(file), Path::new(STDIN_NAME), &limits)
            .expect("a session");
        assert_eq!(texts(&b), ["a", "b"]);
        assert_eq!(b.diagnostics.malformed.len(), 1);
        assert_eq!(b.diagnostics.malformed[0].0, 3);
    }

    #[test]
    fn l1_stdin_past_its_cap_is_an_error() {
        let limits = ReadLimits {
            max_line_bytes: 100,
            max_stdin_bytes: 1000,
            ..ReadLimits::default()
        };
        let endless = io::repeat(0);
        let err = spool(endless, &limits, Path::new(STDIN_NAME)).expect_err("an error");
        assert_eq!(err.to_string(), "standard input holds more than 1000 bytes");
    }

    #[test]
    fn l1_only_regular_files_are_opened() {
        let dir = std::env::temp_dir();
        let err = read_session(&dir).expect_err("a directory is refused");
        assert!(matches!(err, SessionError::NotAFile { .. }), "{err}");
        assert!(err.to_string().contains("is not a regular file"), "{err}");
        #[cfg(unix)]
        {
            let err = read_session(Path::new("/dev/zero")).expect_err("a device is refused");
            assert_eq!(
                err.to_string(),
                "/dev/zero is not a regular file (sessions are read from regular files, or `-` for standard input)"
            );
        }
    }

    #[test]
    fn l1_a_parent_loop_after_a_clean_branch_is_reported_and_the_clean_branch_read() {
        // Lines: 1 header, 2 e1, 3 e2 → e1, 4 e3 → e4, 5 e4 → e3.
        let b = read(&[
            header(Some(3)),
            msg(Some("e1"), None, user("one")),
            msg(Some("e2"), Some("e1"), user("two")),
            msg(Some("e3"), Some("e4"), user("looped a")),
            msg(Some("e4"), Some("e3"), user("looped b")),
        ]);
        assert_eq!(texts(&b), ["one", "two"]);
        assert_eq!(b.diagnostics.off_branch, 2);
        assert_eq!(
            b.diagnostics.malformed,
            [(
                4,
                "parentId loop: line 4 → line 5 → line 4; the loop is skipped and the latest \
                 well-formed branch read"
                    .to_string()
            )]
        );
    }

    #[test]
    fn l1_entries_hanging_below_a_loop_are_not_well_formed_either() {
        // e5's way up runs into the loop e3 ↔ e4: the branch falls back to e2's.
        let b = read(&[
            header(Some(3)),
            msg(Some("e1"), None, user("one")),
            msg(Some("e2"), Some("e1"), user("two")),
            msg(Some("e3"), Some("e4"), user("x")),
            msg(Some("e4"), Some("e3"), user("y")),
            msg(Some("e5"), Some("e4"), user("z")),
        ]);
        assert_eq!(texts(&b), ["one", "two"]);
        assert_eq!(b.diagnostics.malformed.len(), 1);
        assert!(b.diagnostics.malformed[0]
            .1
            .starts_with("parentId loop: line 4 → line 5 → line 4;"));
    }

    #[test]
    fn l1_a_byte_order_mark_opens_a_session_file() {
        let text = format!(
            "\u{feff}{}\n{}\n",
            header(Some(3)),
            msg(Some("1"), None, user("a"))
        );
        let b = read_text(&text);
        assert_eq!(b.header.version, 3);
        assert_eq!(texts(&b), ["a"]);
        assert!(b.diagnostics.malformed.is_empty());
        // Also before oh-my-pi's title slot, and in a version 1 file.
        let text = format!(
            "\u{feff}{}\n{}\n{}\n",
            json!({"type":"title","v":1,"title":"T","pad":" "}),
            header(None),
            msg(None, None, user("b"))
        );
        let b = read_text(&text);
        assert_eq!(b.header.title.as_deref(), Some("T"));
        assert_eq!(texts(&b), ["b"]);
    }

    #[test]
    fn r1_reset_boundary_is_an_entry_of_the_branch_not_a_skipped_type() {
        let b = read(&[
            header(Some(3)),
            msg(Some("1"), None, user("before")),
            json!({"type":"reset_boundary","id":"2","parentId":"1","timestamp":"t"}),
            msg(Some("3"), Some("2"), user("after")),
        ]);
        assert_eq!(texts(&b), ["before", "reset", "after"]);
        assert!(
            b.diagnostics.skipped.is_empty(),
            "{:?}",
            b.diagnostics.skipped
        );
        assert_eq!(b.messages().count(), 2);
    }

    /// A buffered source that counts its seeks: each pass after the first starts with one.
    struct CountedSeeks {
        inner: Cursor<Vec<u8>>,
        seeks: std::rc::Rc<std::cell::Cell<usize>>,
    }

    impl Read for CountedSeeks {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            self.inner.read(out)
        }
    }

    impl BufRead for CountedSeeks {
        fn fill_buf(&mut self) -> io::Result<&[u8]> {
            self.inner.fill_buf()
        }
        fn consume(&mut self, n: usize) {
            self.inner.consume(n)
        }
    }

    impl Seek for CountedSeeks {
        fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
            self.seeks.set(self.seeks.get() + 1);
            self.inner.seek(to)
        }
    }

    /// The file read as the reader reads it, and with every line checked in full by the
    /// first pass; how many times the first read rewound.
    fn fast_and_checked(
        text: impl AsRef<[u8]>,
        limits: &ReadLimits,
    ) -> (SessionBranch, SessionBranch, usize) {
        let text = text.as_ref();
        let seeks = std::rc::Rc::new(std::cell::Cell::new(0));
        let source = CountedSeeks {
            inner: Cursor::new(text.to_vec()),
            seeks: seeks.clone(),
        };
        let path = Path::new("t.jsonl");
        let fast = read_from(source, path, limits, true).expect("a session");
        let checked =
            read_from(Cursor::new(text.to_vec()), path, limits, false).expect("a session");
        (fast, checked, seeks.get())
    }

    fn lines_of(lines: &[String]) -> String {
        lines.iter().map(|l| format!("{l}\n")).collect()
    }

    /// An entry line as pi writes it: type, id and parent first.
    fn pi_line(kind: &str, id: &str, parent: Option<&str>, rest: &str) -> String {
        format!(
            r#"{{"type":"{kind}","id":"{id}","parentId":{},{rest}}}"#,
            json!(parent)
        )
    }

    fn pi_user(id: &str, parent: Option<&str>, text: &str) -> String {
        pi_line(
            "message",
            id,
            parent,
            &format!(r#""message":{}"#, user(text)),
        )
    }

    /// A branched file written the way pi writes it, with everything the first pass and the
    /// second have to record: malformed lines, a compaction by id, skipped entries.
    fn pi_tree() -> Vec<String> {
        vec![
            header(Some(3)).to_string(),
            pi_user("a", None, "one"),
            "{not json".to_string(),
            pi_user("b", Some("a"), "two"),
            pi_user("x", Some("b"), "abandoned"),
            pi_line("model_change", "c", Some("b"), r#""provider":"p""#),
            pi_line("message", "d", Some("c"), r#""message":5"#),
            pi_line(
                "compaction",
                "e",
                Some("d"),
                r#""summary":"s","firstKeptEntryId":"b","tokensBefore":3"#,
            ),
            json!({"type":"message","id":"f","parentId":"e","message":user("odd order")})
                .to_string(),
            pi_user("g", Some("f"), "three"),
        ]
    }

    #[test]
    fn l1_lines_taken_at_their_leading_keys_read_as_lines_checked_in_full() {
        let (fast, checked, seeks) = fast_and_checked(lines_of(&pi_tree()), &ReadLimits::default());
        assert_eq!(seeks, 1, "two passes, no third");
        assert_eq!(fast, checked);
        assert_eq!(
            texts(&fast),
            ["one", "two", "compaction>1", "odd order", "three"]
        );
        assert_eq!(fast.diagnostics.off_branch, 1);
        let lines: Vec<usize> = fast.diagnostics.malformed.iter().map(|(l, _)| *l).collect();
        assert_eq!(lines, [3, 7], "{:?}", fast.diagnostics.malformed);
    }

    #[test]
    fn l1_a_line_whose_leading_keys_mislead_is_read_again_checked_in_full() {
        let limits = ReadLimits::default();
        let misleading = [
            // The rest of the line is not JSON: on the branch, and off it.
            (pi_line("message", "h", Some("g"), r#""message":{"#), true),
            (pi_line("message", "h", Some("b"), r#""message":{"#), false),
            // A second id or parent further on.
            (
                pi_line(
                    "message",
                    "h",
                    Some("g"),
                    r#""id":"z","message":{"role":"user","content":"x"}"#,
                ),
                true,
            ),
            (pi_line("label", "h", Some("b"), r#""parentId":"a""#), false),
            // A type written twice.
            (
                pi_line("message", "h", Some("g"), r#""type":"label""#),
                true,
            ),
        ];
        // An id that is not UTF-8, on the branch and off it.
        for last in [true, false] {
            let mut text = lines_of(&pi_tree()).into_bytes();
            text.extend_from_slice(b"{\"type\":\"message\",\"id\":\"\xff\",\"parentId\":\"g\",\"message\":{\"role\":\"user\",\"content\":\"x\"}}\n");
            if !last {
                text.extend_from_slice(pi_user("i", Some("g"), "last").as_bytes());
            }
            let (fast, checked, seeks) = fast_and_checked(&text, &limits);
            assert_eq!(seeks, 3, "read again, in two passes");
            assert_eq!(fast, checked);
        }
        for (line, on_branch) in misleading {
            let mut lines = pi_tree();
            lines.push(line.clone());
            if !on_branch {
                lines.push(pi_user("i", Some("g"), "last"));
            }
            let (fast, checked, seeks) = fast_and_checked(lines_of(&lines), &limits);
            assert_eq!(seeks, 3, "{line}: read again, in two passes");
            assert_eq!(fast, checked, "{line}");
            assert!(!fast.diagnostics.malformed.is_empty());
        }
    }

    #[test]
    fn l1_every_recorded_tree_reads_the_same_taken_at_its_leading_keys() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        let mut trees = 0;
        for entry in walkdir::WalkDir::new(root).sort_by_file_name() {
            let entry = entry.expect("a readable tree");
            if entry.path().extension().and_then(|e| e.to_str()) != Some("jsonl") {
                continue;
            }
            let text = std::fs::read_to_string(entry.path()).expect("readable");
            let (fast, checked, _) =
                match read_session_from(Cursor::new(text.clone()), Path::new("f")) {
                    Ok(b) if b.header.version >= 2 => {
                        fast_and_checked(&text, &ReadLimits::default())
                    }
                    _ => continue,
                };
            assert_eq!(fast, checked, "{}", entry.path().display());
            trees += 1;
        }
        assert!(trees >= 10, "{trees} recorded trees");
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]
        /// Trees written the way pi writes them, with the odd misleading, broken or
        /// reordered line: taken at their leading keys, they read as checked in full.
        #[test]
        fn l1_leading_keys_never_change_what_is_read(
            steps in proptest::collection::vec((0u8..24, 0u8..8, 0u8..8), 0..24)
        ) {
            let mut lines = vec![header(Some(3)).to_string()];
            for (n, (kind, a, b)) in steps.into_iter().enumerate() {
                let id = if kind == 23 { format!("e{a}") } else { format!("e{n}") };
                let parent = match (n, b) {
                    (0, _) | (_, 0) => None,
                    (_, 1..=5) => Some(format!("e{}", n - 1)),
                    _ => Some(format!("e{a}")),
                };
                let p = parent.as_deref();
                let line = match kind {
                    16 => pi_line("compaction", &id, p, &format!(r#""summary":"s","firstKeptEntryId":"e{a}""#)),
                    17 => "[1,".to_string(),
                    18 => pi_line("message", &id, p, r#""message":{"#),
                    19 => pi_line("message", &id, p, &format!(r#""id":"e{a}","message":{{"role":"user","content":"d"}}"#)),
                    20 => pi_line("message", &id, p, &format!(r#""parentId":"e{a}","message":{{"role":"user","content":"d"}}"#)),
                    21 => pi_line("label", &id, p, r#""label":"\x""#),
                    22 => json!({"type":"message","id":id,"parentId":parent,"message":user("r")}).to_string(),
                    _ => pi_user(&id, p, &format!("t{n}")),
                };
                lines.push(line);
            }
            let (fast, checked, _) = fast_and_checked(lines_of(&lines), &ReadLimits::default());
            proptest::prop_assert_eq!(fast, checked);
        }
    }
}
