//! The Codex reader on crafted lines (SPEC L6).

use serde_json::{json, Value};

use crate::domain::transcript::{AssistantBlock, Content, TranscriptMessage};
use crate::session::hosts::testing::{read, read_with, roles};
use crate::session::{ReadLimits, SessionFormat};

fn line(kind: &str, payload: Value) -> Value {
    json!({"timestamp":"2026-12-05T13:11:05.490Z","type":kind,"payload":payload})
}

fn meta() -> Value {
    line(
        "session_meta",
        json!({"id":"t1","cwd":"/w","cli_version":"0.171.0",
        "timestamp":"2026-12-05T13:11:05.469Z","source":"exec","thread_source":"user"}),
    )
}

fn item(payload: Value) -> Value {
    line("response_item", payload)
}

fn msg(role: &str, text: &str) -> Value {
    let kind = if role == "assistant" {
        "output_text"
    } else {
        "input_text"
    };
    item(json!({"type":"message","role":role,"content":[{"type":kind,"text":text}]}))
}

fn call(id: &str, cmd: &str) -> Value {
    item(json!({"type":"function_call","name":"exec_command",
        "arguments":format!("{{\"cmd\": \"{cmd}\"}}"),"call_id":id}))
}

fn out(id: &str, text: &str) -> Value {
    item(json!({"type":"function_call_output","call_id":id,"output":text}))
}

fn usage(input: u64, cached: u64) -> Value {
    line(
        "token_usage_record",
        json!({"usage":{"input_tokens":input,"cached_input_tokens":cached,
        "output_tokens":20,"reasoning_output_tokens":0}}),
    )
}

#[test]
fn l6_l8_header_comes_from_session_meta() {
    let b = read(&[meta(), msg("user", "hi")]);
    assert_eq!(b.header.format, SessionFormat::Codex);
    assert_eq!(b.header.id.as_deref(), Some("t1"));
    assert_eq!(b.header.cwd.as_deref(), Some("/w"));
    assert_eq!(b.header.cli_version.as_deref(), Some("0.171.0"));
    assert_eq!(roles(&b), ["user"]);
}

#[test]
fn l6_l8_one_response_is_one_assistant_message_with_its_calls_and_usage() {
    let b = read(&[
        meta(),
        msg("user", "go"),
        item(
            json!({"type":"reasoning","summary":[{"type":"summary_text","text":"plan"}],"encrypted_content":"zz"}),
        ),
        msg("assistant", "Looking."),
        call("c1", "ls"),
        call("c2", "pwd"),
        usage(100, 40),
        out("c2", "/w"),
        out("c1", "a\nb"),
        line(
            "event_msg",
            json!({"type":"token_count","info":{"last_token_usage":{"input_tokens":999,"output_tokens":1}}}),
        ),
        msg("assistant", "Done."),
        usage(50, 0),
    ]);
    assert_eq!(
        roles(&b),
        ["user", "assistant", "toolResult", "toolResult", "assistant"]
    );
    let Some(TranscriptMessage::Assistant(first)) = b.entries[1].message() else {
        panic!()
    };
    assert_eq!(first.content.len(), 4);
    assert!(
        matches!(&first.content[0], AssistantBlock::Thinking { thinking } if thinking == "plan")
    );
    match &first.content[2] {
        AssistantBlock::ToolCall {
            id,
            name,
            arguments,
        } => {
            assert_eq!((id.as_str(), name.as_str()), ("c1", "exec_command"));
            assert_eq!(arguments.to_value(), json!({"cmd":"ls"}));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(first.stop_reason.as_deref(), Some("toolUse"));
    let u = first.usage.expect("SP5");
    assert_eq!(
        (u.input, u.cache_read, u.output),
        (60, 40, 20),
        "the token_count after it does not overwrite"
    );
    let Some(TranscriptMessage::ToolResult(r)) = b.entries[2].message() else {
        panic!()
    };
    assert_eq!(
        (r.tool_call_id.as_str(), r.tool_name.as_str()),
        ("c2", "exec_command")
    );
    let Some(TranscriptMessage::Assistant(last)) = b.entries[4].message() else {
        panic!()
    };
    assert_eq!(last.stop_reason.as_deref(), Some("stop"));
    assert_eq!(last.usage.map(|u| u.input), Some(50));
    assert_eq!(last.timestamp, Some(1_796_476_265_490));
}

#[test]
fn l6_l8_context_is_skipped_hook_text_kept_and_placed_after_the_outputs() {
    let b = read(&[
        meta(),
        msg(
            "developer",
            "<permissions instructions>\nsandbox</permissions instructions>",
        ),
        msg(
            "user",
            "<environment_context>\n<cwd>/w</cwd></environment_context>",
        ),
        msg("user", "go"),
        msg("developer", "ADVISOR-UPS-CTX: watching"),
        call("c1", "echo hi > a.txt"),
        msg(
            "developer",
            "<advisory severity=\"nit\">check it</advisory>",
        ),
        out("c1", "ok"),
        msg("assistant", "Done."),
        msg(
            "user",
            "<hook_prompt hook_run_id=\"stop:1\">verify a.txt</hook_prompt>",
        ),
        msg("assistant", "Verified."),
    ]);
    assert_eq!(
        roles(&b),
        [
            "user",
            "custom",
            "assistant",
            "toolResult",
            "custom",
            "assistant",
            "custom",
            "assistant"
        ]
    );
    assert_eq!(b.diagnostics.skipped.get("developer-context"), Some(&1));
    assert_eq!(b.diagnostics.skipped.get("user-context"), Some(&1));
    assert!(!b.entries[1].message().unwrap().is_advisor_message());
    assert!(b.entries[4].message().unwrap().is_advisor_message(), "X2");
    let Some(TranscriptMessage::Custom(stop)) = b.entries[6].message() else {
        panic!()
    };
    assert_eq!(stop.content, Content::Text("verify a.txt".into()));
}

#[test]
fn l6_l8_apply_patch_and_its_wrapped_output() {
    let b = read(&[
        meta(),
        msg("user", "patch"),
        item(
            json!({"type":"custom_tool_call","name":"apply_patch","input":"*** Begin Patch\n*** End Patch","call_id":"p1"}),
        ),
        item(json!({"type":"custom_tool_call_output","call_id":"p1",
            "output":"{\"output\":\"Failed\\n\",\"metadata\":{\"exit_code\":1}}"})),
    ]);
    let Some(TranscriptMessage::Assistant(a)) = b.entries[1].message() else {
        panic!()
    };
    match &a.content[0] {
        AssistantBlock::ToolCall {
            name, arguments, ..
        } => {
            assert_eq!(name, "apply_patch");
            assert_eq!(
                arguments.to_value()["input"],
                json!("*** Begin Patch\n*** End Patch")
            );
        }
        other => panic!("{other:?}"),
    }
    let Some(TranscriptMessage::ToolResult(r)) = b.entries[2].message() else {
        panic!()
    };
    assert!(r.is_error);
    assert_eq!(r.content, Content::Text("Failed\n".into()));
}

#[test]
fn l6_l8_r1_compacted_is_a_compaction() {
    let b = read(&[
        meta(),
        msg("user", "one"),
        msg("assistant", "ok"),
        line("compacted", json!({"message":"Summary."})),
        msg("user", "two"),
    ]);
    assert_eq!(
        roles(&b),
        ["user", "assistant", "compaction:Summary.", "user"]
    );
}

#[test]
fn l6_l8_a_subagent_rollout_is_read_only_when_asked() {
    let sub = line(
        "session_meta",
        json!({"id":"t2","source":{"subagent":"review"}}),
    );
    let lines = [sub, msg("user", "sub task"), msg("assistant", "sub done")];
    let b = read(&lines);
    assert!(b.entries.is_empty());
    assert_eq!(b.diagnostics.skipped.get("subagent"), Some(&2));
    let limits = ReadLimits {
        include_subagents: true,
        ..ReadLimits::default()
    };
    assert_eq!(
        roles(&read_with(&lines, "", &limits)),
        ["user", "assistant"]
    );
}

#[test]
fn l6_l8_unknown_types_skipped_bad_envelopes_reported_truncated_tail_per_growing() {
    let lines = [
        meta(),
        line("world_state", json!({"full":true})),
        line("future_thing", json!({})),
        item(json!({"type":"web_search_call","action":{}})),
        json!({"type":"response_item"}),
        item(json!({"type":"message","role":"user","content":7})),
        item(json!({"type":"function_call","name":"x"})),
        msg("user", "go"),
    ];
    let partial = r#"{"timestamp":"t","type":"response_item","payload":{"type":"mes"#;
    let b = read_with(&lines, partial, &ReadLimits::default());
    assert_eq!(roles(&b), ["user"]);
    assert_eq!(b.diagnostics.skipped.get("world_state"), Some(&1));
    assert_eq!(b.diagnostics.skipped.get("future_thing"), Some(&1));
    assert_eq!(
        b.diagnostics.skipped.get("response_item:web_search_call"),
        Some(&1)
    );
    let bad: Vec<usize> = b.diagnostics.malformed.iter().map(|(l, _)| *l).collect();
    assert_eq!(bad, [5, 6, 7, 9]);
    let growing = ReadLimits {
        growing: true,
        ..ReadLimits::default()
    };
    let b = read_with(&lines, partial, &growing);
    let bad: Vec<usize> = b.diagnostics.malformed.iter().map(|(l, _)| *l).collect();
    assert_eq!(bad, [5, 6, 7]);
}
