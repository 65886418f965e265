//! Properties of the host-driving sequence over arbitrary branches (SPEC L2, L3).

use advisor::domain::transcript::TranscriptMessage;
use advisor::session::{BranchEntry, HostStep, SessionBranch, SessionDriver};
use proptest::prelude::*;
use serde_json::json;

/// A branch entry drawn from a small alphabet.
#[derive(Debug, Clone)]
enum Kind {
    User,
    Assistant { stop: &'static str, calls: usize },
    ToolResult,
    Custom,
    Compaction { back: usize },
    Reset,
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        3 => Just(Kind::User),
        5 => (prop::sample::select(vec!["stop", "toolUse", "length", "aborted", "error"]), 0..3usize)
            .prop_map(|(stop, calls)| Kind::Assistant { stop, calls }),
        4 => Just(Kind::ToolResult),
        1 => Just(Kind::Custom),
        1 => (0..6usize).prop_map(|back| Kind::Compaction { back }),
        1 => Just(Kind::Reset),
    ]
}

fn entry(index: usize, kind: &Kind) -> BranchEntry {
    let value = match kind {
        Kind::User => json!({"role":"user","content":format!("prompt {index}")}),
        Kind::Assistant { stop, calls } => {
            let content: Vec<_> = (0..*calls)
                .map(|c| json!({"type":"toolCall","id":format!("c{index}.{c}"),"name":"read","arguments":{}}))
                .collect();
            json!({"role":"assistant","content":content,"stopReason":stop})
        }
        Kind::ToolResult => {
            json!({"role":"toolResult","toolCallId":"c","toolName":"read","content":"ok"})
        }
        Kind::Custom => json!({"role":"custom","customType":"note","content":"n","display":true}),
        Kind::Compaction { back } => {
            return BranchEntry::Compaction {
                summary: format!("summary {index}"),
                first_kept: index.saturating_sub(*back),
                tokens_before: None,
            }
        }
        Kind::Reset => return BranchEntry::ResetBoundary,
    };
    BranchEntry::Message(std::sync::Arc::new(
        serde_json::from_value(value).expect("a message"),
    ))
}

proptest! {
    #[test]
    fn l2_driving_sequence_invariants(kinds in prop::collection::vec(kind(), 0..60)) {
        let entries: Vec<BranchEntry> = kinds.iter().enumerate().map(|(i, k)| entry(i, k)).collect();
        let reviewed = kinds
            .iter()
            .filter(|k| matches!(k, Kind::Assistant { stop, .. } if *stop != "aborted" && *stop != "error"))
            .count();
        let users = kinds.iter().filter(|k| matches!(k, Kind::User)).count();
        let compactions = kinds.iter().filter(|k| matches!(k, Kind::Compaction { .. })).count();
        let resets = kinds.iter().filter(|k| matches!(k, Kind::Reset)).count();

        let driver = SessionDriver::new(SessionBranch { entries, ..SessionBranch::default() });
        let transcript = driver.transcript();
        let mut running = false;
        let (mut turns, mut started, mut compacted) = (0, 0, 0);
        for step in driver {
            match step {
                HostStep::RunStarted => {
                    prop_assert!(!running, "a run starts only when idle");
                    running = true;
                    started += 1;
                }
                HostStep::RunEnded => {
                    prop_assert!(running, "a run ends only when running");
                    running = false;
                }
                HostStep::TurnEnded { turn, terminal } => {
                    prop_assert!(running, "turns happen inside a run");
                    turns += 1;
                    prop_assert_eq!(turn, turns);
                    // The transcript ends with the turn's assistant message or its results.
                    let last = transcript.get(transcript.len() - 1).expect("not empty");
                    match &*last {
                        TranscriptMessage::Assistant(a) => {
                            prop_assert!(!a.is_aborted_or_error());
                            prop_assert_eq!(terminal, !a.has_tool_calls());
                        }
                        TranscriptMessage::ToolResult(_) => {}
                        other => prop_assert!(false, "turn ended on {}", other.role()),
                    }
                }
                HostStep::Compacted => {
                    compacted += 1;
                    // A compaction leads with its summary; a reset boundary (R1)
                    // leaves nothing.
                    if let Some(first) = transcript.get(0) {
                        prop_assert!(matches!(&*first, TranscriptMessage::CompactionSummary(_)));
                    }
                }
            }
        }
        prop_assert!(!running, "the file ends idle");
        prop_assert_eq!(turns, reviewed);
        prop_assert_eq!(compacted, compactions + resets);
        prop_assert!(started >= users);
        if compactions + resets == 0 {
            prop_assert_eq!(transcript.len(), kinds.len());
        }
    }
}
