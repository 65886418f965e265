//! The branch structure of a version 2/3 session file (SPEC L1): a first pass reads only
//! `type`, `id` and `parentId` of each line into a compact index (ids interned), the
//! current branch is the way up from the last entry, and parentId loops are reported with
//! their line numbers.

use std::borrow::Cow;
use std::io::{self, BufRead, Seek};

use rustc_hash::{FxHashMap, FxHashSet};
use serde::Deserialize;

use super::diagnostics::{describe_json_error, Diagnostics, NONE};
use super::input::{Line, Lines};
use super::skim::{leading, skim, Leading};

/// Records the parentId loop met on the way from the last entry: one malformed-line report
/// at the loop's first line, naming every line of the loop (the first ten of a long one).
pub(super) fn report_cycle(cycle: &Cycle, diagnostics: &mut Diagnostics) {
    let Some(&first) = cycle.lines.first() else {
        return;
    };
    const SHOWN: usize = 10;
    let mut chain: Vec<String> = cycle
        .lines
        .iter()
        .take(SHOWN)
        .map(|line| format!("line {line}"))
        .collect();
    if cycle.lines.len() > SHOWN {
        chain.push(format!("… ({} entries)", cycle.lines.len()));
    }
    chain.push(format!("line {first}"));
    tracing::debug!(lines = ?cycle.lines, "session entries form a parentId loop");
    let outcome = if cycle.spans_file {
        "no entry has a well-formed branch: read from the last entry up to the loop"
    } else {
        "the loop is skipped and the latest well-formed branch read"
    };
    diagnostics.malformed.push((
        first,
        format!("parentId loop: {}; {outcome}", chain.join(" → ")),
    ));
}

/// The first-pass view of one line: its type, id and parent, borrowed from the line.
#[derive(Deserialize)]
pub(super) struct Skim<'a> {
    #[serde(rename = "type", borrow, default)]
    pub(super) kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) id: Option<Cow<'a, str>>,
    #[serde(rename = "parentId", borrow, default)]
    pub(super) parent_id: Option<Cow<'a, str>>,
}

/// What the first pass reads of a compaction line besides: the entry it keeps from.
#[derive(Deserialize)]
struct KeptFrom<'a> {
    #[serde(rename = "firstKeptEntryId", borrow, default)]
    first_kept_entry_id: Option<Cow<'a, str>>,
}

/// The tree of a version 2/3 file, as compact as possible: ids interned to symbols, one
/// small node per entry.
#[derive(Default)]
pub(super) struct TreeIndex {
    /// The ids compactions name as their first kept entry: the only ids the second pass
    /// has to remember.
    kept_targets: FxHashSet<Box<str>>,
    /// Ids of up to 15 bytes (pi's are 8), inline: the bytes, zero-padded, then the length.
    short: FxHashMap<[u8; 16], u32>,
    /// Longer ids.
    symbols: FxHashMap<Box<[u8]>, u32>,
    /// Symbol → index of the (last) entry carrying that id, or `NONE`.
    owner: Vec<u32>,
    /// Per entry: its line number and its parent's symbol (`NONE` for a root).
    nodes: Vec<(usize, u32)>,
    /// The id of the entry added last and its symbol: an entry's parent is most often the
    /// entry before it, found so without a lookup.
    last: (Vec<u8>, u32),
    /// How many entries were read by their leading keys alone, the rest of their lines
    /// unchecked.
    pub(super) unchecked: usize,
}

impl TreeIndex {
    fn intern(&mut self, bytes: &[u8]) -> u32 {
        let next = u32::try_from(self.owner.len()).unwrap_or(NONE);
        let s = if bytes.len() < 16 {
            let mut key = [0u8; 16];
            key[..bytes.len()].copy_from_slice(bytes);
            key[15] = bytes.len() as u8;
            *self.short.entry(key).or_insert(next)
        } else {
            match self.symbols.get(bytes) {
                Some(&s) => s,
                None => {
                    self.symbols.insert(bytes.into(), next);
                    next
                }
            }
        };
        if s == next {
            self.owner.push(NONE);
        }
        s
    }

    /// Adds an entry: its id and parent as the line spells them (the bytes between the
    /// quotes, for strings without escapes; the read string otherwise).
    fn add(&mut self, line: usize, id: &[u8], parent: Option<&[u8]>) {
        let parent = match parent {
            None => NONE,
            Some(p) if !self.nodes.is_empty() && p == self.last.0 => self.last.1,
            Some(p) => self.intern(p),
        };
        let own = self.intern(id);
        self.last.0.clear();
        self.last.0.extend_from_slice(id);
        self.last.1 = own;
        let index = u32::try_from(self.nodes.len()).unwrap_or(NONE);
        if let Some(slot) = self.owner.get_mut(own as usize) {
            *slot = index;
        }
        self.nodes.push((line, parent));
    }

    /// The ids compactions of the file keep from (every one the second pass may look up,
    /// and perhaps more).
    pub(super) fn take_kept_targets(&mut self) -> FxHashSet<Box<str>> {
        std::mem::take(&mut self.kept_targets)
    }

    pub(super) fn entry_count(&self) -> usize {
        self.nodes.len()
    }

    /// The entry `node`'s parent points at, if it is in the file.
    fn parent_of(&self, node: usize) -> Option<usize> {
        let &(_, parent) = self.nodes.get(node)?;
        let next = *self.owner.get(parent as usize)?;
        (next != NONE).then_some(next as usize)
    }

    fn line_of(&self, node: usize) -> usize {
        self.nodes.get(node).map_or(0, |&(line, _)| line)
    }

    /// Follows parents from `start` and marks every entry walked as reaching a root
    /// (`Ok`) or a loop (`Err`, with the loop's entries when this walk closed it). Each
    /// entry is walked once over all calls sharing `state`.
    fn resolve(&self, start: usize, state: &mut [Reach]) -> Result<(), Option<Vec<usize>>> {
        let mut walk = Vec::new();
        let mut current = start;
        let outcome = loop {
            match state.get(current).copied().unwrap_or(Reach::Root) {
                Reach::Root => break Ok(()),
                Reach::Loop => break Err(None),
                Reach::Walking => {
                    let at = walk.iter().position(|&n| n == current).unwrap_or(0);
                    break Err(Some(walk[at..].to_vec()));
                }
                Reach::Unknown => {}
            }
            state[current] = Reach::Walking;
            walk.push(current);
            match self.parent_of(current) {
                Some(parent) => current = parent,
                None => break Ok(()),
            }
        };
        let mark = if outcome.is_ok() {
            Reach::Root
        } else {
            Reach::Loop
        };
        for node in walk {
            state[node] = mark;
        }
        outcome
    }

    /// Line numbers of the path from the root to `end`, in path order; a walk that meets
    /// an entry twice stops there.
    fn path_to(&self, end: usize) -> Vec<usize> {
        let mut seen = vec![false; self.nodes.len()];
        let mut path = Vec::new();
        let mut current = Some(end);
        while let Some(node) = current {
            match seen.get_mut(node) {
                Some(s) if !*s => *s = true,
                _ => break,
            }
            path.push(self.line_of(node));
            current = self.parent_of(node);
        }
        path.reverse();
        path
    }

    /// The current branch: the path from the last entry to the root. When parents loop on
    /// that way up, the loop is returned too, and the branch is the path of the latest entry
    /// whose way up is well formed — or, when there is none (the loop spans the file), the
    /// way up from the last entry as far as the first entry met twice.
    pub(super) fn current_branch(&self) -> BranchLines {
        let Some(last) = self.nodes.len().checked_sub(1) else {
            return BranchLines::default();
        };
        let mut state = vec![Reach::Unknown; self.nodes.len()];
        let cycle = match self.resolve(last, &mut state) {
            Ok(()) => {
                return BranchLines {
                    lines: self.path_to(last),
                    cycle: None,
                }
            }
            Err(cycle) => cycle.unwrap_or_default(),
        };
        let mut cycle: Vec<usize> = cycle.into_iter().map(|n| self.line_of(n)).collect();
        // Name the loop from its first line in the file, still following parents.
        if let Some(first) = cycle
            .iter()
            .enumerate()
            .min_by_key(|(_, l)| **l)
            .map(|(i, _)| i)
        {
            cycle.rotate_left(first);
        }
        let end = (0..last)
            .rev()
            .find(|&c| self.resolve(c, &mut state).is_ok());
        BranchLines {
            lines: self.path_to(end.unwrap_or(last)),
            cycle: Some(Cycle {
                lines: cycle,
                spans_file: end.is_none(),
            }),
        }
    }
}

/// How an entry's way up the tree ends, while [`TreeIndex::current_branch`] finds out.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Reach {
    Unknown,
    /// On the walk in progress.
    Walking,
    /// At a root (or a parent not in the file).
    Root,
    /// In a parentId loop, or at one.
    Loop,
}

/// The branch a tree's index chose.
#[derive(Default)]
pub(super) struct BranchLines {
    /// Line numbers from the root to the branch's last entry.
    pub(super) lines: Vec<usize>,
    /// The parentId loop met on the way up from the file's last entry.
    pub(super) cycle: Option<Cycle>,
}

/// A parentId loop.
pub(super) struct Cycle {
    /// Its entries' line numbers, from its first line in the file, each followed by its
    /// parent.
    lines: Vec<usize>,
    /// No entry of the file has a well-formed way up.
    spans_file: bool,
}

/// First pass over a version 2/3 file: ids and parents only.
///
/// With `leading_ok`, a line that starts the way pi writes an entry is taken at its word
/// ([`leading`]) without the rest of it being checked here; [`TreeIndex::unchecked`] counts
/// them, and the second pass has to check each (see [`super::reader`]).
pub(super) fn skim_tree<R: BufRead + Seek>(
    lines: &mut Lines<R>,
    diagnostics: &mut Diagnostics,
    leading_ok: bool,
) -> io::Result<TreeIndex> {
    let mut index = TreeIndex::default();
    while let Some((line, text)) = lines.next_line()? {
        let Line::Text(bytes) = text else {
            let reason = lines.too_long();
            diagnostics.malformed.push((line, reason));
            continue;
        };
        if leading_ok {
            if let Some(Leading { kind, id, parent }) = leading(bytes) {
                if kind == b"compaction" {
                    if let Ok(KeptFrom {
                        first_kept_entry_id: Some(target),
                    }) = serde_json::from_slice(bytes)
                    {
                        index.kept_targets.insert(target.into());
                    }
                }
                index.unchecked += 1;
                index.add(line, id, parent);
                continue;
            }
        }
        // A UTF-8 line is checked in one go (serde_json checks bytes string by string);
        // the answer, errors included, is the same. Most lines need no serde at all.
        let parsed = match std::str::from_utf8(bytes) {
            Ok(text) => match skim(text) {
                Some(s) => Ok(Skim {
                    kind: Some(Cow::Borrowed(s.kind)),
                    id: s.id.map(Cow::Borrowed),
                    parent_id: s.parent.map(Cow::Borrowed),
                }),
                None => serde_json::from_str::<Skim<'_>>(text),
            },
            Err(_) => serde_json::from_slice::<Skim<'_>>(bytes),
        };
        let skim = match parsed {
            Ok(s) => s,
            Err(e) => {
                diagnostics.malformed.push((line, describe_json_error(&e)));
                continue;
            }
        };
        if skim.kind.is_none() {
            diagnostics
                .malformed
                .push((line, "entry has no \"type\"".to_string()));
            continue;
        }
        if skim.kind.as_deref() == Some("compaction") {
            // A line the second pass cannot read either names no target.
            if let Ok(KeptFrom {
                first_kept_entry_id: Some(target),
            }) = serde_json::from_slice(bytes)
            {
                index.kept_targets.insert(target.into());
            }
        }
        match skim.id {
            Some(id) => index.add(
                line,
                id.as_bytes(),
                skim.parent_id.as_deref().map(str::as_bytes),
            ),
            None => diagnostics
                .malformed
                .push((line, "entry has no \"id\"".to_string())),
        }
    }
    Ok(index)
}
