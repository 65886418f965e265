//! The Claude Code reader on crafted lines (SPEC L6).

use serde_json::{json, Value};

use crate::domain::transcript::{AssistantBlock, Content, TranscriptMessage};
use crate::session::hosts::testing::{read, read_with, roles};
use crate::session::{BranchEntry, ReadLimits, SessionBranch, SessionFormat};

fn user(uuid: &str, parent: Option<&str>, content: Value) -> Value {
    json!({"type":"user","uuid":uuid,"parentUuid":parent,"sessionId":"s1",
           "timestamp":"2026-12-05T13:08:55.769Z","version":"2.1.332","cwd":"/w",
           "message":{"role":"user","content":content}})
}

fn assistant(uuid: &str, parent: &str, id: &str, blocks: Value, stop: Option<&str>) -> Value {
    json!({"type":"assistant","uuid":uuid,"parentUuid":parent,"sessionId":"s1",
           "timestamp":"2026-12-05T13:08:56.000Z",
           "message":{"id":id,"role":"assistant","content":blocks,"stop_reason":stop,
                      "usage":{"input_tokens":10,"output_tokens":5,
                               "cache_read_input_tokens":7,"cache_creation_input_tokens":3}}})
}

fn assistant_at(
    branch: &SessionBranch,
    index: usize,
) -> &crate::domain::transcript::AssistantMessage {
    match branch.entries[index].message() {
        Some(TranscriptMessage::Assistant(a)) => a,
        other => panic!("not an assistant message: {other:?}"),
    }
}

#[test]
fn l6_l7_header_says_claude_code_with_its_version_id_and_cwd() {
    let b = read(&[
        json!({"type":"queue-operation","operation":"enqueue","timestamp":"t0"}),
        user("u1", None, json!("hi")),
    ]);
    assert_eq!(b.header.format, SessionFormat::ClaudeCode);
    assert_eq!(b.header.cli_version.as_deref(), Some("2.1.332"));
    assert_eq!(b.header.id.as_deref(), Some("s1"));
    assert_eq!(b.header.cwd.as_deref(), Some("/w"));
    assert_eq!(b.header.timestamp.as_deref(), Some("t0"));
    assert_eq!(b.diagnostics.skipped.get("queue-operation"), Some(&1));
}

#[test]
fn l6_l7_split_assistant_lines_of_one_message_merge_into_one_turn() {
    let b = read(&[
        user("u1", None, json!("do it")),
        assistant(
            "a1",
            "u1",
            "msg_1",
            json!([{"type":"thinking","thinking":"hmm","signature":"x"}]),
            None,
        ),
        assistant(
            "a2",
            "a1",
            "msg_1",
            json!([{"type":"text","text":"Running."}]),
            None,
        ),
        assistant(
            "a3",
            "a2",
            "msg_1",
            json!([{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]),
            Some("tool_use"),
        ),
        user(
            "u2",
            Some("a3"),
            json!([{"type":"tool_result","tool_use_id":"t1","content":"a\nb","is_error":false}]),
        ),
        assistant(
            "a4",
            "u2",
            "msg_2",
            json!([{"type":"text","text":"Done."}]),
            Some("end_turn"),
        ),
    ]);
    assert_eq!(roles(&b), ["user", "assistant", "toolResult", "assistant"]);
    let first = assistant_at(&b, 1);
    assert_eq!(first.content.len(), 3);
    assert!(
        matches!(&first.content[0], AssistantBlock::Thinking { thinking } if thinking == "hmm")
    );
    assert!(
        matches!(&first.content[2], AssistantBlock::ToolCall { id, name, .. } if id == "t1" && name == "Bash")
    );
    assert_eq!(first.stop_reason.as_deref(), Some("toolUse"));
    let usage = first.usage.expect("SP5: usage carried");
    assert_eq!(
        (
            usage.input,
            usage.output,
            usage.cache_read,
            usage.cache_write
        ),
        (10, 5, 7, 3)
    );
    assert_eq!(first.timestamp, Some(1_796_476_136_000));
    assert_eq!(assistant_at(&b, 3).stop_reason.as_deref(), Some("stop"));
}

#[test]
fn l6_l7_tool_results_are_paired_with_their_calls_by_id() {
    let b = read(&[
        user("u1", None, json!("go")),
        assistant(
            "a1",
            "u1",
            "m1",
            json!([
            {"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"a"}},
            {"type":"tool_use","id":"t2","name":"Grep","input":{"pattern":"x"}}]),
            Some("tool_use"),
        ),
        user(
            "u2",
            Some("a1"),
            json!([
            {"type":"tool_result","tool_use_id":"t2","content":[{"type":"text","text":"hit"}]},
            {"type":"tool_result","tool_use_id":"t1","content":"boom","is_error":true},
            {"type":"tool_result","tool_use_id":"t9","content":"who?"}]),
        ),
    ]);
    let results: Vec<(String, String, bool)> = b
        .messages()
        .filter_map(|m| match m {
            TranscriptMessage::ToolResult(r) => {
                Some((r.tool_call_id.clone(), r.tool_name.clone(), r.is_error))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        results,
        [
            ("t2".into(), "Grep".into(), false),
            ("t1".into(), "Read".into(), true),
            ("t9".into(), String::new(), false)
        ]
    );
}

#[test]
fn l6_l7_sidechain_lines_are_skipped_and_counted_a_subagent_file_read_only_when_asked() {
    let mut side = user("s1", None, json!("subagent prompt"));
    side["isSidechain"] = json!(true);
    let mut side_reply = assistant(
        "s2",
        "s1",
        "m9",
        json!([{"type":"text","text":"sub"}]),
        Some("end_turn"),
    );
    side_reply["isSidechain"] = json!(true);
    let b = read(&[
        user("u1", None, json!("main")),
        side.clone(),
        side_reply.clone(),
    ]);
    assert_eq!(roles(&b), ["user"]);
    assert_eq!(b.diagnostics.skipped.get("sidechain"), Some(&2));

    let only_side = read(&[side.clone(), side_reply.clone()]);
    assert!(only_side.entries.is_empty());
    assert_eq!(only_side.diagnostics.skipped.get("sidechain"), Some(&2));
    let limits = ReadLimits {
        include_subagents: true,
        ..ReadLimits::default()
    };
    let included = read_with(&[side, side_reply], "", &limits);
    assert_eq!(roles(&included), ["user", "assistant"]);
}

#[test]
fn l6_l7_r1_compaction_boundary_and_summary_make_one_compaction_after_the_old_messages() {
    let b = read(&[
        user("u1", None, json!("old prompt")),
        assistant(
            "a1",
            "u1",
            "m1",
            json!([{"type":"text","text":"old reply"}]),
            Some("end_turn"),
        ),
        json!({"type":"system","subtype":"compact_boundary","uuid":"c1","parentUuid":null,
               "logicalParentUuid":"a1","compactMetadata":{"trigger":"auto","preTokens":1234}}),
        json!({"type":"user","uuid":"c2","parentUuid":"c1","isCompactSummary":true,
               "message":{"role":"user","content":"Summary of before."}}),
        user("u2", Some("c2"), json!("new prompt")),
    ]);
    assert_eq!(
        roles(&b),
        ["user", "assistant", "compaction:Summary of before.", "user"]
    );
    match &b.entries[2] {
        BranchEntry::Compaction {
            first_kept,
            tokens_before,
            ..
        } => {
            assert_eq!((*first_kept, *tokens_before), (2, Some(1234)));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn l6_l7_branch_is_the_way_up_from_the_last_line_a_rewound_prompt_is_off_branch() {
    let b = read(&[
        user("u1", None, json!("first")),
        assistant(
            "a1",
            "u1",
            "m1",
            json!([{"type":"text","text":"one"}]),
            Some("end_turn"),
        ),
        user("u2", Some("a1"), json!("abandoned")),
        user("u3", Some("a1"), json!("edited")),
    ]);
    let texts: Vec<String> = b
        .messages()
        .filter_map(|m| match m {
            TranscriptMessage::User(u) => Some(u.content.joined_text("", false)),
            _ => None,
        })
        .collect();
    assert_eq!(texts, ["first", "edited"]);
    assert_eq!(b.diagnostics.off_branch, 1);
}

#[test]
fn l6_l7_hook_text_becomes_a_hook_message_the_advisors_own_is_typed_advisor() {
    let stop = json!({"type":"user","uuid":"h1","parentUuid":"u1","isMeta":true,"hookText":true,
        "message":{"role":"user","content":"Stop hook feedback:\n<advisory severity=\"concern\">verify</advisory>"}});
    let ctx = json!({"type":"attachment","uuid":"h2","parentUuid":"h1",
        "attachment":{"type":"hook_additional_context","content":["lint: clean"],"hookEvent":"PostToolUse"}});
    let caveat = json!({"type":"user","uuid":"h3","parentUuid":"h2","isMeta":true,
        "message":{"role":"user","content":"Caveat: local commands below."}});
    let b = read(&[user("u1", None, json!("go")), stop, ctx, caveat]);
    assert_eq!(roles(&b), ["user", "custom", "custom"]);
    assert!(b.entries[1].message().unwrap().is_advisor_message(), "X2");
    let other = b.entries[2].message().unwrap();
    assert!(!other.is_advisor_message());
    match other {
        TranscriptMessage::Custom(c) => {
            assert_eq!(c.custom_type, "hook");
            assert_eq!(c.content, Content::Text("lint: clean".into()));
        }
        _ => unreachable!(),
    }
    assert_eq!(b.diagnostics.skipped.get("user:meta"), Some(&1));
}

#[test]
fn l6_l7_unknown_line_types_and_attachments_are_skipped_and_counted() {
    let b = read(&[
        user("u1", None, json!("go")),
        json!({"type":"hologram","uuid":"x1","parentUuid":"u1"}),
        json!({"type":"attachment","uuid":"x2","parentUuid":"x1","attachment":{"type":"date"}}),
        json!({"type":"system","uuid":"x3","parentUuid":"x2","subtype":"stop_hook_summary"}),
        json!({"type":"api-request-blob","hash":"h"}),
        json!({"type":"summary","summary":"Title here","leafUuid":"x3"}),
    ]);
    assert_eq!(roles(&b), ["user"]);
    let skipped = &b.diagnostics.skipped;
    assert_eq!(skipped.get("hologram"), Some(&1));
    assert_eq!(skipped.get("attachment:date"), Some(&1));
    assert_eq!(skipped.get("system:stop_hook_summary"), Some(&1));
    assert_eq!(skipped.get("api-request-blob"), Some(&1));
    assert_eq!(b.header.title.as_deref(), Some("Title here"));
    assert!(b.diagnostics.malformed.is_empty());
}

#[test]
fn l6_l7_truncated_last_line_is_reported_unless_the_file_may_still_grow() {
    let lines = [user("u1", None, json!("go"))];
    let partial = r#"{"type":"assistant","uuid":"a1","parentUuid":"u1","message":{"id":"m","con"#;
    let b = read_with(&lines, partial, &ReadLimits::default());
    assert_eq!(b.diagnostics.malformed.len(), 1);
    assert_eq!(b.diagnostics.malformed[0].0, 2);
    assert!(
        b.diagnostics.malformed[0].1.contains("truncated"),
        "{:?}",
        b.diagnostics.malformed
    );
    let growing = ReadLimits {
        growing: true,
        ..ReadLimits::default()
    };
    let b = read_with(&lines, partial, &growing);
    assert!(
        b.diagnostics.malformed.is_empty(),
        "{:?}",
        b.diagnostics.malformed
    );
    assert_eq!(roles(&b), ["user"]);
    // A broken line that is not the last is reported even in a growing file.
    let b = read_with(
        &lines,
        &format!("{partial}\n{}\n", user("u2", Some("u1"), json!("x"))),
        &growing,
    );
    assert_eq!(b.diagnostics.malformed.len(), 1);
}

#[test]
fn l6_l7_hostile_fields_are_reported_or_read_leniently_never_a_panic() {
    let huge = "x".repeat(1 << 20);
    let b = read(&[
        user("u1", None, json!(huge)),
        json!({"type":"user","uuid":"u2","parentUuid":"u1","message":"not an object"}),
        json!({"type":"assistant","uuid":"a1","parentUuid":"u1","message":{"content":42}}),
        json!({"type":"attachment","uuid":"x","parentUuid":"u1","attachment":"flat"}),
        json!({"type":"assistant","parentUuid":7,"message":{"id":[1],"content":[
            {"type":"tool_use","name":"NoId"},{"type":"text","text":5},"bare"],
            "usage":{"input_tokens":"many"},"stop_reason":{"a":1}}}),
        json!({"type":7}),
        json!(["not", "an", "object"]),
    ]);
    let lines: Vec<usize> = b.diagnostics.malformed.iter().map(|(l, _)| *l).collect();
    assert_eq!(lines, [2, 3, 6, 7]);
    // The assistant line without a usable parent follows the line before it; its blocks are
    // kept opaque.
    let last = b
        .messages()
        .filter(|m| m.role() == "assistant")
        .last()
        .expect("kept");
    let TranscriptMessage::Assistant(a) = last else {
        unreachable!()
    };
    assert_eq!(a.content.len(), 3);
    assert!(a
        .content
        .iter()
        .all(|c| matches!(c, AssistantBlock::Unknown(_))));
    // SP5: an implausible count is ignored on its own and counted, as in a pi file.
    let usage = a
        .usage
        .as_ref()
        .expect("a usage whose one field is ignored");
    assert_eq!((usage.input, usage.output, usage.ignored), (0, 0, 1));
}

#[test]
fn l6_l7_parents_that_loop_are_reported_and_the_branch_stops() {
    let b = read(&[
        user("u1", Some("u2"), json!("a")),
        user("u2", Some("u1"), json!("b")),
    ]);
    assert_eq!(roles(&b), ["user", "user"]);
    assert_eq!(b.diagnostics.malformed.len(), 1);
}
