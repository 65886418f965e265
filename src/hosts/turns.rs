//! From a host's transcript file to the turns handed to the advisor (SPEC H10): reading the
//! file under its checks, the messages the agent's model sees now, and which turns are
//! complete. Plain code; the background process calls it off its async threads.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::domain::transcript::{AssistantBlock, CompactionSummaryMessage, TranscriptMessage};
use crate::handle::TurnEndOptions;
use crate::session::{
    read_host_tail, read_session_with, BranchEntry, HostTail, ReadLimits, SessionBranch,
};

/// The largest transcript read: 256 MiB.
pub const MAX_TRANSCRIPT_BYTES: u64 = 256 << 20;

/// Why a transcript is not read.
#[derive(Debug, thiserror::Error)]
pub enum TranscriptError {
    /// The file does not exist (yet: Claude Code writes it at the first message).
    #[error("{} does not exist yet", .0.display())]
    Missing(PathBuf),
    /// The path is refused: outside the home and the session's directory, a symlink, not a
    /// regular file, or too large.
    #[error("refusing transcript {}: {reason}", path.display())]
    Refused {
        /// The path.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The reader failed.
    #[error("reading {}: {message}", path.display())]
    Read {
        /// The path.
        path: PathBuf,
        /// The reader's error.
        message: String,
    },
}

/// Reads the transcript at `path` when it is a regular file (not a symlink) inside `home`
/// or `cwd` and at most [`MAX_TRANSCRIPT_BYTES`] (H10). Blocking.
pub fn read_transcript(
    path: &Path,
    home: Option<&Path>,
    cwd: Option<&Path>,
    limits: &ReadLimits,
) -> Result<SessionBranch, TranscriptError> {
    let real = checked_path(path, home, cwd)?;
    read_session_with(&real, limits).map_err(|e| TranscriptError::Read {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}

/// The messages of the transcript at `path`, under the checks of [`read_transcript`], read
/// through `tail`: only what was appended since its last read of the same file when that
/// read can go on, else the whole file (H31). Blocking.
pub fn read_transcript_tail(
    path: &Path,
    home: Option<&Path>,
    cwd: Option<&Path>,
    limits: &ReadLimits,
    tail: &mut Option<HostTail>,
) -> Result<Vec<Arc<TranscriptMessage>>, TranscriptError> {
    let real = checked_path(path, home, cwd)?;
    let read_err = |e: crate::session::SessionError| TranscriptError::Read {
        path: path.to_path_buf(),
        message: e.to_string(),
    };
    let how = read_host_tail(&real, limits, tail).map_err(read_err)?;
    tracing::debug!(path = %real.display(), how = ?how, "hook session: transcript read");
    match tail {
        Some(tail) => {
            let (settled, pending) = tail.entries();
            Ok(current_messages_of(settled, &pending))
        }
        None => Ok(current_messages(
            &read_session_with(&real, limits).map_err(read_err)?,
        )),
    }
}

/// The real path of `path` when it is a regular file (not a symlink) inside `home` or
/// `cwd` and at most [`MAX_TRANSCRIPT_BYTES`] (H10).
fn checked_path(
    path: &Path,
    home: Option<&Path>,
    cwd: Option<&Path>,
) -> Result<PathBuf, TranscriptError> {
    let refused = |reason: &str| TranscriptError::Refused {
        path: path.to_path_buf(),
        reason: reason.to_string(),
    };
    let meta = match fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(TranscriptError::Missing(path.to_path_buf()))
        }
        Err(e) => return Err(refused(&e.to_string())),
    };
    if meta.file_type().is_symlink() {
        return Err(refused("a symlink"));
    }
    if !meta.is_file() {
        return Err(refused("not a regular file"));
    }
    if meta.len() > MAX_TRANSCRIPT_BYTES {
        return Err(refused("larger than 256 MiB"));
    }
    let real = fs::canonicalize(path).map_err(|e| refused(&e.to_string()))?;
    let inside = |root: Option<&Path>| {
        root.and_then(|r| fs::canonicalize(r).ok())
            .is_some_and(|r| real.starts_with(r))
    };
    if !inside(home) && !inside(cwd) {
        return Err(refused(
            "outside the home directory and the session's directory",
        ));
    }
    Ok(real)
}

/// The messages the agent's model sees at the end of `branch`: after the last compaction,
/// its summary and the kept messages; after a reset boundary (`/clear`), only what follows.
pub fn current_messages(branch: &SessionBranch) -> Vec<Arc<TranscriptMessage>> {
    current_messages_of(&branch.entries, &[])
}

/// [`current_messages`] of the entries `settled` followed by `pending` (which hold no
/// compaction): only the entries from the last compaction or reset on are looked at.
pub fn current_messages_of(
    settled: &[BranchEntry],
    pending: &[BranchEntry],
) -> Vec<Arc<TranscriptMessage>> {
    let cut = settled
        .iter()
        .rposition(|e| !matches!(e, BranchEntry::Message(_)));
    let mut messages: Vec<Arc<TranscriptMessage>> = Vec::new();
    let mut from = 0;
    if let Some(index) = cut {
        from = index + 1;
        if let BranchEntry::Compaction {
            summary,
            first_kept,
            ..
        } = &settled[index]
        {
            messages.push(Arc::new(TranscriptMessage::CompactionSummary(
                CompactionSummaryMessage {
                    summary: summary.clone(),
                },
            )));
            let kept = settled.get(*first_kept..index).unwrap_or_default();
            messages.extend(kept.iter().filter_map(message_of));
        }
    }
    let after = settled[from..].iter().chain(pending);
    messages.extend(after.filter_map(message_of));
    messages
}

/// The message of a message entry.
fn message_of(entry: &BranchEntry) -> Option<Arc<TranscriptMessage>> {
    match entry {
        BranchEntry::Message(m) => Some(Arc::clone(m)),
        _ => None,
    }
}

/// One turn end to hand over: the transcript's length at the turn's end, and what the host
/// says about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TurnCut {
    /// The number of messages up to and including the turn's last tool result.
    pub len: usize,
    /// `will_continue: Some(false)` for the final turn at `Stop`, else derived.
    pub options: TurnEndOptions,
}

/// The complete turns of `messages` that end after `from` messages (H10): an assistant
/// message and the tool results that follow it form a turn, complete when anything follows
/// them, when every tool call has its result, or when `at_stop` (then the last one is a
/// final boundary).
pub fn complete_turns(
    messages: &[Arc<TranscriptMessage>],
    from: usize,
    at_stop: bool,
) -> Vec<TurnCut> {
    let mut cuts = Vec::new();
    let mut i = 0;
    while i < messages.len() {
        let TranscriptMessage::Assistant(assistant) = &*messages[i] else {
            i += 1;
            continue;
        };
        let mut end = i + 1;
        let mut answered = HashSet::new();
        while let Some(TranscriptMessage::ToolResult(result)) = messages.get(end).map(|m| &**m) {
            answered.insert(result.tool_call_id.as_str());
            end += 1;
        }
        let calls: Vec<&str> = assistant
            .content
            .iter()
            .filter_map(|block| match block {
                AssistantBlock::ToolCall { id, .. } => Some(id.as_str()),
                _ => None,
            })
            .collect();
        let complete =
            end < messages.len() || at_stop || calls.iter().all(|id| answered.contains(id));
        if !complete {
            break;
        }
        if end > from {
            cuts.push(TurnCut {
                len: end,
                options: TurnEndOptions::default(),
            });
        }
        i = end;
    }
    if at_stop {
        if let Some(last) = cuts.last_mut().filter(|c| c.len == messages.len()) {
            last.options.will_continue = Some(false);
        }
    }
    cuts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::transcript::{AssistantMessage, Content, RawJson, ToolResultMessage};

    fn user(text: &str) -> Arc<TranscriptMessage> {
        Arc::new(TranscriptMessage::user(text))
    }

    fn assistant(calls: &[&str]) -> Arc<TranscriptMessage> {
        let mut content = vec![AssistantBlock::Text { text: "ok".into() }];
        content.extend(calls.iter().map(|id| AssistantBlock::ToolCall {
            id: id.to_string(),
            name: "bash".into(),
            arguments: RawJson::default(),
        }));
        Arc::new(TranscriptMessage::Assistant(AssistantMessage::new(
            content, None,
        )))
    }

    fn result(id: &str) -> Arc<TranscriptMessage> {
        Arc::new(TranscriptMessage::ToolResult(ToolResultMessage {
            tool_call_id: id.into(),
            tool_name: "bash".into(),
            content: Content::Text("done".into()),
            is_error: false,
            details: None,
        }))
    }

    #[test]
    fn h10_a_turn_whose_tool_result_is_not_written_yet_waits() {
        let m = vec![user("go"), assistant(&["a", "b"]), result("a")];
        assert!(complete_turns(&m, 0, false).is_empty());
        let m = vec![user("go"), assistant(&["a", "b"]), result("a"), result("b")];
        assert_eq!(
            complete_turns(&m, 0, false),
            vec![TurnCut {
                len: 4,
                options: TurnEndOptions::default()
            }]
        );
    }

    #[test]
    fn h10_turns_already_handed_over_are_not_cut_again() {
        let m = vec![
            user("go"),
            assistant(&["a"]),
            result("a"),
            assistant(&["b"]),
            result("b"),
            assistant(&[]),
        ];
        let lens = |from, stop| -> Vec<usize> {
            complete_turns(&m, from, stop)
                .iter()
                .map(|c| c.len)
                .collect()
        };
        assert_eq!(lens(0, false), vec![3, 5, 6]);
        assert_eq!(lens(3, false), vec![5, 6]);
        assert_eq!(lens(6, false), Vec::<usize>::new());
    }

    #[test]
    fn h10_at_stop_the_last_turn_is_a_final_boundary() {
        let m = vec![user("go"), assistant(&["a"]), result("a"), assistant(&[])];
        let cuts = complete_turns(&m, 0, true);
        assert_eq!(cuts.len(), 2);
        assert_eq!(cuts[0].options.will_continue, None);
        assert_eq!(cuts[1].options.will_continue, Some(false));
        // A tool call left without its result is complete at Stop too (an interrupted tool).
        let m = vec![user("go"), assistant(&["a"])];
        assert_eq!(complete_turns(&m, 0, true)[0].len, 2);
    }

    #[test]
    fn h31_the_messages_handed_over_equal_a_whole_reads_at_every_line() {
        let home = tempfile::tempdir().unwrap();
        let limits = ReadLimits {
            growing: true,
            ..ReadLimits::default()
        };
        for name in ["claude_transcript.jsonl", "codex_rollout.jsonl"] {
            let bytes = fs::read(
                Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("tests/fixtures/hosts")
                    .join(name),
            )
            .unwrap();
            let path = home.path().join(name);
            let mut tail = None;
            let mut file = fs::File::create(&path).unwrap();
            // Each line in two pieces: the second piece ends it.
            for line in bytes.split_inclusive(|b| *b == b'\n') {
                for piece in [&line[..line.len() / 2], &line[line.len() / 2..]] {
                    std::io::Write::write_all(&mut file, piece).unwrap();
                    let whole = read_transcript(&path, Some(home.path()), None, &limits)
                        .map(|b| current_messages(&b));
                    let tailed =
                        read_transcript_tail(&path, Some(home.path()), None, &limits, &mut tail);
                    match (whole, tailed) {
                        (Ok(whole), Ok(tailed)) => assert_eq!(whole, tailed, "{name}"),
                        (Err(_), Err(_)) => {}
                        (whole, tailed) => panic!("{name}: {whole:?} / {tailed:?}"),
                    }
                }
            }
            assert!(tail.is_some_and(|t| t.offset() == bytes.len() as u64));
        }
    }

    #[test]
    fn h10_a_transcript_outside_home_and_cwd_a_symlink_or_a_fifo_is_refused() {
        let home = tempfile::tempdir().unwrap();
        let other = tempfile::tempdir().unwrap();
        let limits = ReadLimits::default();
        let outside = other.path().join("t.jsonl");
        fs::write(&outside, "").unwrap();
        let err = read_transcript(&outside, Some(home.path()), None, &limits).unwrap_err();
        assert!(err.to_string().contains("outside"), "{err}");
        let link = home.path().join("link.jsonl");
        std::os::unix::fs::symlink("/etc/passwd", &link).unwrap();
        let err = read_transcript(&link, Some(home.path()), None, &limits).unwrap_err();
        assert!(err.to_string().contains("symlink"), "{err}");
        let fifo = home.path().join("fifo.jsonl");
        crate::regular_file::testing::mkfifo(&fifo);
        let err = read_transcript(&fifo, Some(home.path()), None, &limits).unwrap_err();
        assert!(err.to_string().contains("not a regular file"), "{err}");
        let missing = home.path().join("none.jsonl");
        assert!(matches!(
            read_transcript(&missing, Some(home.path()), None, &limits),
            Err(TranscriptError::Missing(_))
        ));
        // Inside the session's directory is fine even outside the home.
        let ok = read_transcript(&outside, Some(home.path()), Some(other.path()), &limits);
        assert!(
            !matches!(ok, Err(TranscriptError::Refused { .. })),
            "{ok:?}"
        );
    }
}
