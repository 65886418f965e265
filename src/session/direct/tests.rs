//! The hand-written reader against the general way (SPEC L1).

use super::*;
use crate::session::differential::{check_line, Verdict};
use crate::session::skim::mutated;
use proptest::prelude::*;
use std::path::Path;

/// Whenever the hand-written way answers, the general way answers the same, and so does
/// the hand-written way from after the leading keys (where the line has them); returns
/// whether the hand-written way answered.
fn agrees(line: &str) -> bool {
    match check_line(line.as_bytes()) {
        Ok(verdict) => verdict != Verdict::GaveUp,
        Err(disagreement) => panic!("{line}\n{disagreement}"),
    }
}

const USER: &str = r#"{"type":"message","id":"a1","parentId":"a0","timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":[{"type":"text","text":"hi \"x\" \u00e9 \ud83d\ude00\n"},{"type":"image","data":"AAA","mimeType":"image/png"}],"timestamp":1}}"#;
const ASSISTANT: &str = r#"{"type":"message","id":"a2","parentId":"a1","message":{"role":"assistant","content":[{"type":"thinking","thinking":"t\tu","thinkingSignature":"s"},{"type":"text","text":"a"},{"type":"toolCall","id":"c1","name":"edit","arguments":{"path":"a","n":[1,2.5,-3e2,null,true],"o":{}}}],"api":"x","usage":{"input":3,"output":4,"cacheRead":5,"cacheWrite":6,"totalTokens":18,"cost":{"input":0.1,"total":0.30000000000000004}},"stopReason":"toolUse","timestamp":1767225600000}}"#;
const RESULT: &str = r#"{"type":"message","id":"a3","parentId":"a2","message":{"role":"toolResult","toolCallId":"c1","toolName":"edit","content":[{"type":"text","text":"ok"}],"details":{"diff":"-1 a\n+1 b"},"isError":false,"timestamp":3}}"#;

#[test]
fn l1_pi_lines_are_read_by_hand_as_the_general_way_reads_them() {
    for line in [USER, ASSISTANT, RESULT] {
        assert!(agrees(line), "not read by hand: {line}");
    }
    let (read, parent) = entry(ASSISTANT.as_bytes(), &mut Scratch::default()).expect("read");
    assert_eq!(parent.as_deref(), Some("a1"));
    let Some(TranscriptMessage::Assistant(a)) = read.message else {
        panic!("an assistant message");
    };
    assert_eq!(a.content.len(), 3);
    assert_eq!(a.usage.map(|u| (u.input, u.cache_write)), Some((3, 6)));
    assert_eq!(a.timestamp, Some(1_767_225_600_000));
}

#[test]
fn l1_shapes_read_by_hand_agree_with_the_general_way() {
    let answered = [
        r#"{"type":"message","id":"1","parentId":null,"message":{"role":"user","content":"plain"}}"#,
        r#" { "type" : "message" , "message" : { "role" : "developer" , "content" : null } } "#,
        r#"{"type":"message","message":{"role":"user"}}"#,
        r#"{"type":"message","message":{"role":"user","content":[]}}"#,
        r#"{"type":"message","message":{"role":"user","content":[{"type":"image","path":"/a.png","data":null}]}}"#,
        r#"{"type":"message","message":{"role":"user","content":"\u0041\b\f\r\/\\"}}"#,
        r#"{"type":"message","message":{"role":"assistant","content":[{"type":"redactedThinking","data":"x"},{"type":"toolCall","id":"c","name":"n","arguments":null},{"type":"toolCall","id":"c","name":"n"}],"stopReason":null}}"#,
        r#"{"type":"message","message":{"role":"assistant","content":[{"type":"toolCall","id":"c","name":"n","arguments":{"b":1,"a":"\u00e9"}}]}}"#,
        r#"{"type":"message","message":{"role":"assistant","usage":{"output":2,"cost":1}}}"#,
        r#"{"type":"message","message":{"role":"assistant","usage":{"input":2,"cost":-1.5}}}"#,
        r#"{"type":"message","message":{"role":"assistant","usage":{"input":1,"input":7,"cost":[1,{"total":2}],"cost":null}}}"#,
        r#"{"type":"message","message":{"role":"assistant","usage":{"cacheRead":1,"cost":{"total":null}}}}"#,
        r#"{"type":"message","message":{"role":"assistant","usage":null,"timestamp":null}}"#,
        r#"{"type":"message","message":{"role":"toolResult","toolCallId":"c","toolName":"t","isError":true,"details":null,"content":"x"}}"#,
        r#"{"type":"model_change","id":"m","parentId":"a","provider":"p","modelId":"x"}"#,
        r#"{"type":"label","x":{"y":[1,{"z":"\ud800"}]}}"#,
        r#"{"type":"message","message":{"role":"custom","customType":"x"}}"#,
        r#"{"type":"message","message":{"role":"custom","customType":"x","content":[{"type":"text","text":"a"}],"display":true,"details":{"k":[1]},"attribution":"agent"}}"#,
        r#"{"type":"message","message":{"role":"bashExecution","command":"ls","output":"a","exitCode":-2,"cancelled":false,"truncated":true,"excludeFromContext":true}}"#,
        r#"{"type":"message","message":{"role":"pythonExecution","code":"print(1)","exitCode":null}}"#,
        r#"{"type":"message","message":{"role":"branchSummary","summary":"s","fromId":"f"}}"#,
        r#"{"type":"message","message":{"role":"compactionSummary","summary":"s","tokensBefore":5}}"#,
        r#"{"type":"compaction","summary":"s","firstKeptEntryId":"a","tokensBefore":7,"firstKeptEntryIndex":null}"#,
        r#"{"type":"custom_message","customType":"x","content":"y","display":null,"details":null}"#,
        r#"{"type":"branch_summary","summary":"\u0041","fromId":"b","attribution":"agent"}"#,
    ];
    for line in answered {
        assert!(agrees(line), "not read by hand: {line}");
    }
}

#[test]
fn l1_shapes_read_by_hand_only_where_the_general_way_answers_alike() {
    // Left to the general way (which answers some of these, refuses others).
    let declined = [
        r#"{"type":null,"message":{"role":"user"}}"#,
        r#"{"type":"message","type":"message","message":{"role":"user"}}"#,
        r#"{"type":"message","parentId":"a","parentId":"b","message":{"role":"user"}}"#,
        r#"{"type":"message","parentId":1,"message":{"role":"user"}}"#,
        r#"{"typ\u0065":"message","message":{"role":"user"}}"#,
        r#"{"type":"message","message":null}"#,
        r#"{"type":"message","message":{"content":"x","role":"user"}}"#,
        r#"{"type":"message","message":{"role":"user","role":"user"}}"#,
        r#"{"type":"message","message":{"role":"user","content":"\ud800"}}"#,
        r#"{"type":"message","message":{"role":"user","content":"\udc00\ud800"}}"#,
        r#"{"type":"message","message":{"role":"user","content":"a	b"}}"#,
        r#"{"type":"message","message":{"role":"user","content":5}}"#,
        r#"{"type":"message","message":{"role":"user","content":[{"type":"thinking","thinking":"x"}]}}"#,
        r#"{"type":"message","message":{"role":"user","content":[{"type":"text"}]}}"#,
        r#"{"type":"message","message":{"role":"assistant","content":null}}"#,
        r#"{"type":"message","message":{"role":"assistant","content":[{"type":"toolCall","id":"c"}]}}"#,
        r#"{"type":"message","message":{"role":"assistant","content":[{"type":"image"}]}}"#,
        r#"{"type":"message","message":{"role":"assistant","timestamp":1.5}}"#,
        r#"{"type":"message","message":{"role":"assistant","timestamp":"1"}}"#,
        r#"{"type":"message","message":{"role":"assistant","usage":{"input":-1}}}"#,
        r#"{"type":"message","message":{"role":"assistant","usage":{"input":18446744073709551616}}}"#,
        r#"{"type":"message","message":{"role":"assistant","usage":{"input":1,"cost":"1"}}}"#,
        r#"{"type":"message","message":{"role":"assistant","usage":3}}"#,
        r#"{"type":"message","message":{"role":"toolResult","toolCallId":null}}"#,
        r#"{"type":"message","message":{"role":"toolResult","isError":null}}"#,
        r#"{"type":"message","message":{"role":"bashExecution","command":"a","code":"b"}}"#,
        r#"{"type":"message","message":{"role":"bashExecution","exitCode":1.5}}"#,
        r#"{"type":"message","message":{"role":"bashExecution","exitCode":-0}}"#,
        r#"{"type":"message","message":{"role":"bashExecution","exitCode":9223372036854775808}}"#,
        r#"{"type":"message","message":{"role":"custom","display":null}}"#,
        r#"{"type":"message","message":{"role":"branchSummary","summary":null}}"#,
        r#"{"type":"message","message":{"role":"hookMessage","customType":"x"}}"#,
        r#"{"type":"compaction","summary":5}"#,
        r#"{"type":"compaction","tokensBefore":-1}"#,
        r#"{"type":"compaction","firstKeptEntryIndex":1.0}"#,
        r#"{"type":"custom_message","display":"yes"}"#,
        r#"{"type":"custom_message","content":[{"type":"sparkle"}]}"#,
        r#"{"type":"message","message":{"role":"user"}} x"#,
        r#"{"type":"message","message":{"role":"user",}}"#,
        r#"["type"]"#,
    ];
    for line in declined {
        assert!(
            entry(line.as_bytes(), &mut Scratch::default()).is_none(),
            "read by hand: {line}"
        );
    }
}

#[test]
fn l1_recorded_message_lines_are_read_by_hand_as_the_general_way_reads_them() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut dirs = vec![root];
    let (mut by_hand, mut messages) = (0usize, 0usize);
    while let Some(dir) = dirs.pop() {
        for item in std::fs::read_dir(&dir).expect("fixtures").flatten() {
            let path = item.path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "jsonl") {
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("a fixture");
            for line in text.lines() {
                let common = [
                    r#""role":"user""#,
                    r#""role":"assistant""#,
                    r#""role":"toolResult""#,
                ];
                if common.iter().any(|role| line.contains(role)) {
                    messages += 1;
                }
                if agrees(line) {
                    by_hand += 1;
                }
            }
        }
    }
    // The recorded sessions' user, assistant and tool-result messages take the quick way
    // (a few lines name a role inside text and are no such messages).
    assert!(messages > 300, "{messages} messages");
    assert!(
        by_hand * 100 >= messages * 95,
        "{by_hand} of {messages} message lines read by hand"
    );
}

/// Pieces that are often valid members and sometimes subtly not.
fn member() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(r#""content":"x\n""#.to_string()),
        Just(r#""content":[{"type":"text","text":"t"}]"#.to_string()),
        Just(r#""content":[{"type":"toolCall","id":"i","name":"n","arguments":{}}]"#.to_string()),
        Just(r#""usage":{"input":1,"cost":0.5}"#.to_string()),
        Just(r#""timestamp":12"#.to_string()),
        Just(r#""stopReason":"stop""#.to_string()),
        Just(r#""toolCallId":"c""#.to_string()),
        Just(r#""isError":false"#.to_string()),
        Just(r#""details":{"a":[1]}"#.to_string()),
        "[ -~]{0,10}".prop_map(|s| format!(r#""content":{s}"#)),
        "[ -~]{0,10}".prop_map(|s| format!(r#""usage":{{"input":{s}}}"#)),
        "[ -~]{0,10}".prop_map(|s| format!(r#""timestamp":{s}"#)),
        "(\\\\[ -~]|\\\\u[0-9a-fA-FdD]{4}|[a-z\"0-9]){0,6}"
            .prop_map(|s| format!(r#""content":"{s}""#)),
        "[\"\\\\a-z0-9:,{}\\[\\] .eE+-]{0,12}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn l1_any_mutation_of_a_pi_line_reads_by_hand_as_the_general_way_reads_it(
        which in 0usize..3, at in 0usize..400, byte in 0u8..128, cut in proptest::bool::ANY
    ) {
        let base = [USER, ASSISTANT, RESULT][which];
        if let Some(line) = mutated(base, at, byte, cut) {
            agrees(&line);
        }
    }

    #[test]
    fn l1_messages_built_of_random_members_read_by_hand_as_the_general_way_reads_them(
        role in prop_oneof![Just("user"), Just("assistant"), Just("toolResult")],
        members in proptest::collection::vec(member(), 0..5),
    ) {
        let mut fields = vec![format!(r#""role":"{role}""#)];
        fields.extend(members);
        let line = format!(
            r#"{{"type":"message","id":"x","message":{{{}}}}}"#,
            fields.join(",")
        );
        agrees(&line);
    }
}
