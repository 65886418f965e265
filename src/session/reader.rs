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
//! A line is parsed in full in one of two ways: by hand ([`super::direct`], the one fast
//! way: user, developer, assistant and tool-result messages and entries without fields of
//! their own, read from the line's bytes; on the second pass from after the leading keys),
//! which answers only where the general way would answer the same, and the general way
//! ([`super::entry`]: serde's derive and the transcript's own `Deserialize`), which decides
//! everything else and words every malformed-line report.
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
use super::entry::{Entry, EntryFields};
use super::hosts;
use super::input::{open_regular, spool, Line, Lines};
use super::skim::{leading, skim, Leading};
use super::tree::{report_cycle, skim_tree};
use super::{claude, codex};
use crate::domain::transcript::{BranchSummaryMessage, CustomMessage, TranscriptMessage};

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
pub(super) fn read_from<R: BufRead + Seek>(
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
type RawEntry<'a> = EntryFields<'a>;

/// The entry of a line read the general way; `None` without a `type`.
fn general(raw: RawEntry<'_>) -> Option<Entry<'_>> {
    raw.into_entry()
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
fn interpret(raw: Entry<'_>, diagnostics: &mut Diagnostics) -> Result<Option<Pending>, String> {
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

/// One entry line read the fast way, by hand ([`direct::entry`]); `None` when it is left
/// to the general way.
fn fast_entry<'a>(bytes: &'a [u8], scratch: &mut Scratch) -> Option<Entry<'a>> {
    direct::entry(bytes, scratch).map(|(entry, _)| entry)
}

/// Parses one line in full, the fast way when it can ([`fast_entry`]), else the
/// general way; records it as malformed on failure.
fn parse_entry<'a>(
    line: usize,
    bytes: &'a [u8],
    diagnostics: &mut Diagnostics,
    scratch: &mut Scratch,
) -> Option<Entry<'a>> {
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
    entry: Entry<'_>,
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
) -> Result<Option<Entry<'a>>, ()> {
    // By hand from after the leading keys when it can: the same answer as from the start.
    if let Some((entry, parent)) = direct::entry_after(bytes, lead, scratch) {
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
    let mut placer = Placer::new(path_lines);
    let wanted = std::mem::take(&mut placer.wanted);
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
                if leading(bytes).is_some_and(|lead| !skim_confirms(bytes, &lead)) {
                    return Ok(None);
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
        if let Some(entry) = read {
            placer.place(line, pos, entry, kept_targets, diagnostics);
        }
    }
    Ok(Some(placer.finish()))
}

/// Places the entries of the branch's lines, read in file order, at their positions on the
/// branch: straight into the branch when the branch runs in file order (the usual case),
/// else held until every line is read.
struct Placer {
    /// (line, position on the path), sorted by line for a single forward scan.
    wanted: Vec<(usize, usize)>,
    in_order: bool,
    /// Entries held by position, when the branch does not run in file order.
    parsed: Vec<Option<Pending>>,
    builder: BranchBuilder,
    /// Compactions placed in file order, resolved once every id on the branch is known.
    unresolved: Vec<(usize, String)>,
    /// The positions of the entries whose ids compactions name.
    ids: FxHashMap<String, usize>,
}

impl Placer {
    fn new(path_lines: &[usize]) -> Self {
        let mut wanted: Vec<(usize, usize)> = path_lines
            .iter()
            .enumerate()
            .map(|(pos, line)| (*line, pos))
            .collect();
        let in_order = wanted.windows(2).all(|w| w[0].0 < w[1].0);
        let mut parsed: Vec<Option<Pending>> = Vec::new();
        if !in_order {
            wanted.sort_unstable();
            parsed.resize_with(path_lines.len(), || None);
        }
        Placer {
            wanted,
            in_order,
            parsed,
            builder: BranchBuilder::with_capacity(if in_order { path_lines.len() } else { 0 }),
            unresolved: Vec::new(),
            ids: FxHashMap::default(),
        }
    }

    /// Interprets the entry of `line`, at `pos` on the branch, and places it.
    fn place(
        &mut self,
        line: usize,
        pos: usize,
        mut entry: Entry<'_>,
        kept_targets: &FxHashSet<Box<str>>,
        diagnostics: &mut Diagnostics,
    ) {
        if let Some(id) = entry.id.take() {
            if kept_targets.contains(&*id) {
                self.ids.insert(id.into_owned(), pos);
            }
        }
        match interpret(entry, diagnostics) {
            Ok(Some(mut pending)) if self.in_order => {
                if let Pending::Compaction { target, .. } = &mut pending {
                    if let KeptTarget::Id(id) = std::mem::replace(target, KeptTarget::Unknown) {
                        self.unresolved.push((self.builder.entries.len(), id));
                    }
                }
                self.builder.push(pos, pending, None);
            }
            Ok(Some(pending)) => {
                if let Some(slot) = self.parsed.get_mut(pos) {
                    *slot = Some(pending);
                }
            }
            Ok(None) => {}
            Err(reason) => diagnostics.malformed.push((line, reason)),
        }
    }

    /// The branch, compactions' first kept entries resolved.
    fn finish(mut self) -> Vec<BranchEntry> {
        if self.in_order {
            for (index, id) in std::mem::take(&mut self.unresolved) {
                self.builder.resolve(index, self.ids.get(&id).copied());
            }
            return self.builder.entries;
        }
        let count = self.parsed.iter().flatten().count();
        self.builder.entries.reserve_exact(count);
        for (pos, pending) in std::mem::take(&mut self.parsed).into_iter().enumerate() {
            let Some(pending) = pending else { continue };
            let target = match &pending {
                Pending::Compaction {
                    target: KeptTarget::Id(id),
                    ..
                } => self.ids.get(id).copied(),
                _ => None,
            };
            self.builder.push(pos, pending, target);
        }
        self.builder.entries
    }
}

#[cfg(test)]
mod tests;
