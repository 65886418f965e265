//! Reading session files and driving them as a host would (SPEC L1, L2, L3), on small
//! hand-written fixtures and on the recorded pi sessions.

use crate::support::fixtures;
use fixtures::pi_fixture;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use advisor::domain::transcript::TranscriptMessage;
use advisor::session::{read_session, BranchEntry, HostStep, SessionBranch, SessionDriver};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/sessions")
        .join(name)
}

fn read(name: &str) -> SessionBranch {
    read_session(&fixture(name)).expect("fixture reads")
}

/// A one-word description of an entry: user text, role, or `compaction>N`.
fn describe(entry: &BranchEntry) -> String {
    match entry {
        BranchEntry::Message(m) => match m.as_ref() {
            TranscriptMessage::User(u) => format!("user:{}", u.content.joined_text("", false)),
            m => m.role().to_string(),
        },
        BranchEntry::Compaction { first_kept, .. } => format!("compaction>{first_kept}"),
        BranchEntry::ResetBoundary => "reset".to_string(),
    }
}

/// Steps as short codes with the transcript length at each: `S1`, `T1.4` (turn 1, length 4,
/// `!` when terminal), `C5`, `E4`.
fn drive(branch: SessionBranch) -> Vec<String> {
    let driver = SessionDriver::new(branch);
    let transcript = driver.transcript();
    driver
        .map(|step| {
            let len = transcript.len();
            match step {
                HostStep::RunStarted => format!("S{len}"),
                HostStep::RunEnded => format!("E{len}"),
                HostStep::Compacted => format!("C{len}"),
                HostStep::TurnEnded { turn, terminal } => {
                    format!("T{turn}.{len}{}", if terminal { "!" } else { "" })
                }
            }
        })
        .collect()
}

#[test]
fn l1_version1_file_reads_as_a_linear_chain_with_compaction_by_index() {
    let b = read("v1-linear.jsonl");
    assert_eq!(b.header.version, 1);
    assert_eq!(b.header.cwd.as_deref(), Some("/home/dev/parser"));
    let described: Vec<String> = b.entries.iter().map(describe).collect();
    assert_eq!(
        described,
        [
            "user:The parser crashes on empty input. Please fix the null check.",
            "assistant",
            "toolResult",
            "assistant",
            "user:Now add a regression test.",
            "assistant",
            "toolResult",
            "assistant",
            // firstKeptEntryIndex 6 counts the header as entry 0: the second prompt.
            "compaction>4",
            "user:Run the tests.",
            "assistant",
            "user:Sorry, run them again.",
            "assistant",
        ]
    );
    assert_eq!(b.diagnostics.skipped.get("thinking_level_change"), Some(&1));
    assert!(b.diagnostics.malformed.is_empty());
    assert_eq!(
        drive(b),
        [
            "S1", "T1.3", "T2.4!", "E4", "S5", "T3.7", "T4.8!",
            // summary + the four kept messages
            "C5", "E5", "S6", "E7", "S8", "T5.9!", "E9",
        ]
    );
}

#[test]
fn l1_version2_file_reads_hook_messages_and_compaction_by_id() {
    let b = read("v2-linear.jsonl");
    assert_eq!(b.header.version, 2);
    let described: Vec<String> = b.entries.iter().map(describe).collect();
    assert_eq!(
        described,
        [
            "user:Which files are in the content folder?",
            "assistant",
            "toolResult",
            "custom",
            "assistant",
            "compaction>3",
            "user:Thanks!",
            "assistant",
        ]
    );
    assert_eq!(b.diagnostics.skipped.get("label"), Some(&1));
    assert_eq!(
        drive(b),
        ["S1", "T1.3", "T2.5!", "C3", "E3", "S4", "T3.5!", "E5"]
    );
}

#[test]
fn l1_version3_branched_file_follows_the_side_branch_of_the_last_entry() {
    let b = read("v3-branched.jsonl");
    assert_eq!(b.header.version, 3);
    let described: Vec<String> = b.entries.iter().map(describe).collect();
    assert_eq!(
        described,
        [
            "user:Add logging to the request handler.",
            "assistant",
            "toolResult",
            "branchSummary",
            "custom",
            "user:Use the log crate.",
            "assistant",
        ]
    );
    assert_eq!(b.diagnostics.off_branch, 3);
    assert_eq!(b.diagnostics.skipped.get("custom"), Some(&1));
    assert_eq!(b.diagnostics.skipped.get("session_info"), Some(&1));
    match b.entries[4].message() {
        Some(TranscriptMessage::Custom(c)) => {
            assert_eq!(c.custom_type, "project-rules");
            assert_eq!(
                c.content.joined_text("", false),
                "This project logs with the log crate."
            );
            assert!(!c.display);
            assert_eq!(
                c.details
                    .as_ref()
                    .map(advisor::domain::transcript::RawJson::to_value),
                Some(serde_json::json!({"source":"RULES.md"}))
            );
        }
        other => panic!("expected the custom message, got {other:?}"),
    }
    match b.entries[3].message() {
        Some(TranscriptMessage::BranchSummary(s)) => {
            assert_eq!(s.from_id, "e0000006")
        }
        other => panic!("expected the branch summary, got {other:?}"),
    }
    assert_eq!(drive(b), ["S1", "T1.3", "E5", "S6", "T2.7!", "E7"]);
}

#[test]
fn l1_oh_my_pi_file_with_a_title_line() {
    let b = read("omp-title.jsonl");
    assert_eq!(b.header.version, 3);
    assert_eq!(b.header.title.as_deref(), Some("Fix the flaky CI test"));
    assert_eq!(b.header.id.as_deref(), Some("omp-7e41"));
    let skipped = BTreeMap::from(
        [
            ("mode_change", 1),
            ("model_change", 1),
            ("ttsr_injection", 1),
        ]
        .map(|(k, v)| (k.to_string(), v)),
    );
    assert_eq!(b.diagnostics.skipped, skipped);
    let described: Vec<String> = b.entries.iter().map(describe).collect();
    assert_eq!(
        described,
        [
            "user:tests/ci.rs fails one run in ten.",
            "assistant",
            "toolResult",
            "hologram",
            "assistant"
        ]
    );
    assert!(b.diagnostics.malformed.is_empty());
    // The opaque message closes the first turn like any non-tool-result message.
    assert_eq!(drive(b), ["S1", "T1.3", "T2.5!", "E5"]);
}

#[test]
fn l1_bad_lines_are_reported_with_line_numbers_and_the_rest_is_read() {
    let b = read("truncated.jsonl");
    let lines: Vec<usize> = b.diagnostics.malformed.iter().map(|(l, _)| *l).collect();
    assert_eq!(lines, [3, 4, 6]);
    assert!(
        b.diagnostics.malformed[2].1.starts_with("truncated JSON"),
        "{:?}",
        b.diagnostics.malformed
    );
    let described: Vec<String> = b.entries.iter().map(describe).collect();
    assert_eq!(described, ["user:hello", "assistant"]);
    assert_eq!(drive(b), ["S1", "T1.2!", "E2"]);
}

/// Counts of a driven session: (turn ends, terminal turn ends, runs started, runs ended,
/// transcript lengths right after each compaction, final transcript length).
fn tally(branch: SessionBranch) -> (usize, usize, usize, usize, Vec<usize>, usize) {
    let driver = SessionDriver::new(branch);
    let transcript = driver.transcript();
    let (mut turns, mut terminal, mut started, mut ended) = (0, 0, 0, 0);
    let mut compacted = Vec::new();
    for step in driver {
        match step {
            HostStep::TurnEnded { turn, terminal: t } => {
                turns += 1;
                assert_eq!(turn, turns, "turn numbers count from 1 without gaps");
                terminal += usize::from(t);
            }
            HostStep::RunStarted => started += 1,
            HostStep::RunEnded => ended += 1,
            HostStep::Compacted => compacted.push(transcript.len()),
        }
    }
    (turns, terminal, started, ended, compacted, transcript.len())
}

#[test]
fn l1_recorded_pi_session_with_two_compactions() {
    let Some(path) = pi_fixture("before-compaction.jsonl") else {
        return;
    };
    let b = read_session(&path).expect("fixture reads");
    assert_eq!(b.header.version, 1);
    assert!(b.diagnostics.malformed.is_empty());
    assert_eq!(b.diagnostics.skipped.get("model_change"), Some(&5));
    assert_eq!(b.diagnostics.skipped.get("thinking_level_change"), Some(&5));
    let assistants: Vec<_> = b
        .messages()
        .filter_map(|m| match m {
            TranscriptMessage::Assistant(a) => Some(a),
            _ => None,
        })
        .collect();
    assert_eq!(assistants.len(), 484);
    assert_eq!(
        assistants
            .iter()
            .filter(|a| a.is_aborted_or_error())
            .count(),
        19
    );
    assert_eq!(b.compactions(), 2);
    // Each compaction keeps from a user prompt, never from a tool result cut off its call.
    for entry in &b.entries {
        if let BranchEntry::Compaction { first_kept, .. } = entry {
            assert!(
                matches!(
                    b.entries[*first_kept].message(),
                    Some(TranscriptMessage::User(_))
                ),
                "first kept entry {first_kept} is {:?}",
                b.entries[*first_kept]
            );
        }
    }
    assert_eq!(tally(b), (465, 31, 55, 55, vec![67, 78], 446));
}

#[test]
fn l1_recorded_pi_session_without_compaction() {
    let Some(path) = pi_fixture("large-session.jsonl") else {
        return;
    };
    let b = read_session(&path).expect("fixture reads");
    assert!(b.diagnostics.malformed.is_empty());
    assert_eq!(
        b.diagnostics.skipped.get("thinking_level_change"),
        Some(&103)
    );
    assert_eq!(b.entries.len(), 914);
    assert_eq!(tally(b), (431, 65, 88, 88, vec![], 914));
}

#[test]
fn l1_reading_the_recorded_sessions_is_fast() {
    let Some(path) = pi_fixture("before-compaction.jsonl") else {
        return;
    };
    let start = std::time::Instant::now();
    let rounds = 5;
    for _ in 0..rounds {
        read_session(&path).expect("fixture reads");
    }
    let each = start.elapsed() / rounds;
    eprintln!("before-compaction.jsonl (2.4 MB): {each:?} per read");
    // Generous enough for an unoptimised build on a busy machine; release reads take a few ms.
    assert!(each.as_millis() < 2_000, "{each:?} per read");
}
